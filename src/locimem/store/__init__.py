"""Storage: the contract every backend keeps (:mod:`locimem.store.base`) and its backends —
SQLite (:mod:`locimem.store.sqlite`: embedded, one file) is the default.

Nothing here imports the tracker, the scene, the queries, the agent layer, interchange or the
memory: records and object states (:mod:`locimem.model`) are all a backend knows.
"""
