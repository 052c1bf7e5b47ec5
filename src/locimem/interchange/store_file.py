"""The store file at either end of an interchange, opened read-only and identified (a locimem
store, of a schema version this locimem reads) before export or import trusts it."""

from __future__ import annotations

import sqlite3
from pathlib import Path

from locimem.errors import CorruptStore, NotAStore, SchemaVersionError
from locimem.store.sqlite.open_check import check_schema, corrupt
from locimem.store.sqlite.schema import SCHEMA_VERSION, store_version


def _read_only(path: Path) -> sqlite3.Connection:
    try:
        conn = sqlite3.connect(path.resolve().as_uri() + "?mode=ro", uri=True,
                               isolation_level=None)
        conn.execute("PRAGMA busy_timeout=5000")
    except sqlite3.Error as exc:
        raise NotAStore(f"{str(path)!r} is not a locimem store ({exc})") from None
    return conn


def _store_version(conn: sqlite3.Connection, path: Path) -> int:
    """The store's schema version, once it is known to be a locimem store of a version this
    locimem reads whose schema holds nothing else (:func:`check_schema`: CorruptStore)."""
    version = store_version(conn, repr(str(path)))
    if version > SCHEMA_VERSION:
        raise SchemaVersionError(f"{str(path)!r} has schema version {version}, newer than this "
                                 f"locimem understands ({SCHEMA_VERSION}); upgrade locimem")
    try:
        check_schema(conn, str(path), version, CorruptStore)
    except sqlite3.DatabaseError as exc:
        raise corrupt(str(path), f"SQLite cannot read its schema ({exc})") from None
    return version
