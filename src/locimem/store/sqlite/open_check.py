"""The cheap check a store file gets when it is opened: :func:`check_on_open`.

``ObjectMemory.open(path, check=...)`` (and :class:`~locimem.store.sqlite.SQLiteStore`) run
one of :data:`OPEN_CHECKS` on an existing file before anything else reads it. Whatever the
check, the schema is compared with the one locimem creates (one read of ``sqlite_master``,
against :func:`~locimem.store.sqlite.schema.expected_schema` of the file's version: name, type
and SQL, whitespace aside): a trigger, a view, another table or index, or a changed one is
refused, naming it — a trigger deleting the observations a scan inserts would otherwise lose
data while every call "succeeded".

``"quick"`` (the default)
    The header check below; then, on files up to :data:`QUICK_CHECK_MAX_BYTES`, SQLite's
    ``PRAGMA quick_check`` (every b-tree page and record walked, indexes not compared with
    their tables: linear in the file — 212 ms for a 24 MB store of 100k observations, 2.2 s
    for 165 MB / 1M observations, measured on a shared 2-core machine under load, where the
    open itself took about 4 s). Larger files get the header and schema checks only; run
    ``locimem validate`` on them now and then.
``"header"``
    The 100-byte SQLite header (magic, page size, and — when SQLite keeps it and no
    write-ahead log is pending — the page count, which a truncated file no longer matches)
    and the schema. Constant cost.
``"off"``
    The schema comparison only: for callers that have just checked the file themselves.

A damaged file raises :class:`~locimem.errors.CorruptStore`, which names ``locimem validate``
(it lists every problem, rule by rule). The check only reads.
"""

from __future__ import annotations

import os
import sqlite3
from typing import Any

from locimem.errors import CorruptStore, InvalidInput, damaged_store
from locimem.store.sqlite.schema import foreign_schema_hint, read_schema, schema_differences

__all__ = ["OPEN_CHECKS", "QUICK_CHECK_MAX_BYTES", "check_on_open", "check_open_mode",
           "check_schema", "corrupt"]

OPEN_CHECKS = ("quick", "header", "off")
QUICK_CHECK_MAX_BYTES = 64 << 20
"""Files up to this size (64 MiB, about 250k observations) get ``PRAGMA quick_check`` at open;
larger ones the header and schema checks only."""
_MAGIC = b"SQLite format 3\x00"


def check_open_mode(check: Any) -> str:
    """One of :data:`OPEN_CHECKS`."""
    if check not in OPEN_CHECKS:
        raise InvalidInput(f"check must be one of {', '.join(OPEN_CHECKS)}, got {check!r}")
    return str(check)


corrupt = damaged_store
"""The error for a damaged store: what is wrong, and where to look next."""


def check_on_open(conn: sqlite3.Connection, path: str, check: str, version: int) -> None:
    """Run the ``check`` (see the module) on the store file at ``path`` (schema ``version``),
    open on ``conn``.

    Raises:
        CorruptStore: the file is damaged, or its schema is not locimem's.
    """
    if check != "off":
        _check_header(path)
    try:
        check_schema(conn, path, version)
        if check == "quick" and os.path.getsize(path) <= QUICK_CHECK_MAX_BYTES:
            rows = [r[0] for r in conn.execute("PRAGMA quick_check(3)")]
            if rows != ["ok"]:
                first = " ".join(str(rows[0]).split())
                raise corrupt(path, f"SQLite's quick_check says {first[:200]}")
    except sqlite3.DatabaseError as exc:
        raise corrupt(path, f"SQLite cannot read it ({exc})") from None


def check_schema(conn: sqlite3.Connection, path: str, version: int,
                 error: type[Exception] = CorruptStore, hint: str | None = None) -> None:
    """Raise ``error`` naming the first object of the file's schema that is not locimem's
    (:func:`~locimem.store.sqlite.schema.schema_differences`; one read of ``sqlite_master``),
    and saying what to do (``hint``, default: drop it, or restore; validate lists them all).
    SQLite errors pass (the caller knows where it is)."""
    differences = schema_differences(read_schema(conn), version)
    if differences:
        more = f" (and {len(differences) - 1} more)" if len(differences) > 1 else ""
        raise error(f"{path!r} cannot be used: {differences[0]}{more}; "
                    f"{foreign_schema_hint(path) if hint is None else hint}")


def _check_header(path: str) -> None:
    with open(path, "rb") as f:
        head = f.read(100)
        size = os.fstat(f.fileno()).st_size
    if len(head) < 100 or not head.startswith(_MAGIC):
        raise corrupt(path, "its SQLite header is missing or damaged")
    page = int.from_bytes(head[16:18], "big")
    page = 65536 if page == 1 else page
    if page < 512 or page & (page - 1):
        raise corrupt(path, f"its SQLite header names an impossible page size {page}")
    try:
        wal_bytes = os.path.getsize(f"{path}-wal")
    except OSError:
        wal_bytes = 0
    if wal_bytes:  # a writer may be checkpointing: the file's length is in flux
        return
    if size % page:
        raise corrupt(path, f"it is {size:,} bytes, not a whole number of {page}-byte pages "
                            "(truncated or extended)")
    pages = int.from_bytes(head[28:32], "big")
    if pages and head[24:28] == head[92:96] and size < pages * page:
        raise corrupt(path, f"it is {size:,} bytes, its header says {pages * page:,} "
                            f"({pages} pages of {page}): it was truncated")
