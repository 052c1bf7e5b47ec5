"""Storage: the contract every backend keeps (:mod:`locimem.store.base`) and its backends —
SQLite (:mod:`locimem.store.sqlite`: embedded, one file) is the default.

Nothing here imports the tracker, the scene, the queries, the agent layer, interchange or the
memory: records and object states (:mod:`locimem.model`) are all a backend knows.
"""

from __future__ import annotations

import os

from locimem.store.base import Store, is_postgres_url

__all__ = ["Store", "is_postgres_url", "open_store"]


def open_store(path: str | os.PathLike[str], *, read_only: bool = False, durable: bool = True,
               check: str = "quick", late_s: float | None = None) -> Store:
    """The store at ``path``: a SQLite file (created when writable and missing), or a
    ``postgresql://`` URL (the ``postgres`` extra). ``check`` applies to SQLite files (see
    :mod:`locimem.store.sqlite.open_check`); ``late_s`` sets a new store's late-scan
    tolerance and raises an existing one's (:attr:`Store.late_s`)."""
    if is_postgres_url(path):
        from locimem.store.postgres import PostgresStore

        return PostgresStore(str(path), read_only=read_only, durable=durable, late_s=late_s)
    from locimem.store.sqlite import SQLiteStore

    return SQLiteStore(path, read_only=read_only, durable=durable, check=check,
                       late_s=late_s)
