"""Checking a SQLite store by every rule (:func:`check_sqlite`): an open store on its own
connection, or a file opened read-only. A server store is checked through a scratch SQLite
copy of each scope (:func:`locimem.interchange.store_check.validate_store`); the rules are
documented in :mod:`locimem.interchange.validate`.
"""

from __future__ import annotations

import os
import sqlite3
from collections.abc import Callable
from pathlib import Path

from locimem.errors import NotFound
from locimem.integrity import rules_log, rules_state
from locimem.integrity.checker import Checker, ValidationReport, Violation
from locimem.progress import Progress
from locimem.store.sqlite import SQLiteStore

__all__ = ["CHECKS", "check_sqlite"]

# each rule's check: rules_log holds the file-level and log rules, rules_state the state rules
CHECKS: dict[str, Callable[..., None]] = {
    check.__name__: check for check in (*rules_log.CHECKS, *rules_state.CHECKS)}


def check_sqlite(store: SQLiteStore | str | os.PathLike[str], *, scope: str | None = None,
                 quick: bool = False, progress: Progress | None = None) -> ValidationReport:
    """Check every rule on a SQLite ``store``: an open one, on its own connection, or a path,
    opened read-only. Every scope in the file, or only ``scope``. ``quick`` runs SQLite's
    ``quick_check`` instead of the full ``integrity_check``.

    Raises:
        NotFound: there is no file at the path, the store is closed, or there is no
            ``scope`` in it.
    """
    if isinstance(store, SQLiteStore):
        if store.conn is None:
            raise NotFound(f"the store {store.path!r} is closed")
        return Checker(store.path, store.conn, lambda: store, scope, quick, CHECKS, progress).run()
    path = Path(store)
    if not path.is_file():
        raise NotFound(f"no store at {str(path)!r}")
    try:
        conn = sqlite3.connect(path.resolve().as_uri() + "?mode=ro", uri=True,
                               isolation_level=None)
    except sqlite3.Error as exc:
        return ValidationReport(str(path), [Violation("sqlite_integrity", (), str(exc))],
                                ("sqlite_integrity",))
    opened: list[SQLiteStore] = []

    def open_store() -> SQLiteStore:  # (after sqlite_integrity passed: the open's own
        # quick_check would only repeat it)
        opened.append(SQLiteStore(path, read_only=True, check="header"))
        return opened[-1]

    try:
        return Checker(str(path), conn, open_store, scope, quick, CHECKS, progress).run()
    finally:
        for s in opened:
            s.close()
        conn.close()
