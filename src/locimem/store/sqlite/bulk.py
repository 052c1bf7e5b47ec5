"""Bulk loading: rows that are already in the store's encoding (an import, a restored copy)
go straight into their tables, inside the caller's transaction — no records to decode, no state
to derive. What the rows mean is checked by the caller (``locimem.interchange``); SQLite checks
only its schema (types it cannot store, NOT NULL, unique keys)."""

from __future__ import annotations

import sqlite3
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from locimem.store.base import RowsRejected

__all__ = ["column_types", "insert_tables"]


def column_types(conn: sqlite3.Connection, table: str) -> dict[str, tuple[str, bool]]:
    """``table``'s columns: name -> (declared type, upper case; NOT NULL)."""
    return {row[1]: (str(row[2]).upper(), bool(row[3]))
            for row in conn.execute(f"PRAGMA table_info({table})")}


def insert_tables(conn: sqlite3.Connection,
                  tables: Iterable[tuple[str, Sequence[str], Iterable[Sequence[Any]]]],
                  meta: Mapping[str, str]) -> None:
    """Insert the ``meta`` entries (replacing), then each table's rows, in order (inside the
    caller's transaction). A row SQLite refuses raises :class:`RowsRejected`.

    A table that is empty is loaded without its secondary indexes, which are built again
    (the same definitions) once its rows are in: one sort of the rows, not an index update a
    row. Unique indexes are kept (a duplicate is refused at its row)."""
    for key, value in meta.items():
        conn.execute("INSERT OR REPLACE INTO meta (key, value) VALUES (?, ?)", (key, value))
    for name, columns, rows in tables:
        sql = (f"INSERT INTO {name} ({', '.join(columns)}) "
               f"VALUES ({', '.join('?' * len(columns))})")
        deferred = _deferrable_indexes(conn, name)
        try:
            for index, _ in deferred:
                conn.execute(f'DROP INDEX "{index}"')
            conn.executemany(sql, rows)
            for _, definition in deferred:
                conn.execute(definition)
        except sqlite3.Error as exc:
            raise RowsRejected(name, str(exc)) from None


def _deferrable_indexes(conn: sqlite3.Connection, table: str) -> list[tuple[str, str]]:
    """(name, definition) of ``table``'s secondary indexes when the table is empty (none
    otherwise: building an index again over rows already there can cost more than keeping it
    up to date), leaving out unique ones."""
    if conn.execute(f"SELECT 1 FROM {table} LIMIT 1").fetchone() is not None:
        return []
    found = conn.execute("SELECT name, sql FROM sqlite_master WHERE type = 'index' AND "
                         "tbl_name = ? AND sql IS NOT NULL ORDER BY name", (table,)).fetchall()
    return [(name, sql) for name, sql in found
            if not sql.lstrip().upper().startswith("CREATE UNIQUE")]
