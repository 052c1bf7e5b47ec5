"""The store file at either end of an interchange, opened read-only and identified (a locimem
store, of a schema version this locimem reads) before export or import trusts it."""

from __future__ import annotations

import sqlite3
from pathlib import Path

from locimem.errors import NotAStore, SchemaVersionError
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
    version = store_version(conn, repr(str(path)))
    if version > SCHEMA_VERSION:
        raise SchemaVersionError(f"{str(path)!r} has schema version {version}, newer than this "
                                 f"locimem understands ({SCHEMA_VERSION}); upgrade locimem")
    return version
