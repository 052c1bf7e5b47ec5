"""Store integrity: every consistency rule locimem can state about a store, checked in SQL on
a SQLite file (:func:`~locimem.integrity.sqlite.check_sqlite`) — the checker and its scopes
(:mod:`~locimem.integrity.checker`), the file-level and log rules
(:mod:`~locimem.integrity.rules_log`) and the state rules
(:mod:`~locimem.integrity.rules_state`). It knows no file format: validating a server store
or an exported directory, which copy or import into a scratch file first, is
:mod:`locimem.interchange.validate`'s (where the rules are documented).
"""
