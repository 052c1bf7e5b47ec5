"""The SQLite store's row writes: a commit's record rows and state changes, applied inside
the caller's transaction, and each table's key column."""

from __future__ import annotations

import sqlite3

from locimem.model.rows import RowChanges
from locimem.store.sqlite.codec import (
    INSERT_COMMIT,
    INSERT_EVENT,
    INSERT_OBSERVATION,
    UPDATE_MISSED,
    UPSERT_OBJECT,
    encode_json,
    object_row,
    state_rows,
)

__all__ = ["KEYS", "write_rows"]

# the key column of each table (the order ``rows`` reads a table in)
KEYS = {"commits": "id", "observations": "seq", "events": "seq", "objects": "id",
         "tombstones": "id", "rejection_keys": "key", "scene": "scope",
         "checkpoints": "commit_id", "prior_map": "id", "deltas": "id",
         "keyframes": "object_id"}


def write_rows(conn: sqlite3.Connection, scope: str, rows: tuple[list, list, list],
           delta: RowChanges) -> None:
    """Insert record rows and apply a state delta, inside the caller's transaction."""
    commits, observations, events = rows
    conn.executemany(INSERT_COMMIT, commits)
    if observations:
        conn.executemany(INSERT_OBSERVATION, observations)
    if events:
        conn.executemany(INSERT_EVENT, events)
    if delta.objects:
        conn.executemany(UPSERT_OBJECT, [object_row(scope, o) for o in delta.objects])
    if delta.missed:
        conn.executemany(UPDATE_MISSED, [(o.n_missed, o.absence_s, o.id) for o in delta.missed])
    if delta.removed_objects:
        conn.executemany("DELETE FROM objects WHERE id = ?",
                         [(i,) for i in delta.removed_objects])
    side = state_rows(scope, delta)
    if side["tombstones"]:
        conn.executemany(
            "INSERT OR REPLACE INTO tombstones (id, scope, forgotten_at, data) VALUES (?, ?, ?, ?)",
            side["tombstones"])
    if delta.removed_tombstones:
        conn.executemany("DELETE FROM tombstones WHERE id = ?",
                         [(i,) for i in delta.removed_tombstones])
    if delta.rooms is not None:
        conn.execute("INSERT OR REPLACE INTO scene (scope, rooms) VALUES (?, ?)",
                     (scope, encode_json(delta.rooms)))
    for oid, entry in delta.prior.items():
        if entry is None:
            conn.execute("DELETE FROM prior_map WHERE scope = ? AND id = ?", (scope, oid))
        else:
            conn.execute("INSERT OR REPLACE INTO prior_map (scope, id, data) VALUES (?, ?, ?)",
                         (scope, oid, encode_json(entry)))
    if side["deltas"]:
        conn.executemany(
            "INSERT OR REPLACE INTO deltas (scope, id, object_id, status, data) "
            "VALUES (?, ?, ?, ?, ?)", side["deltas"])
    if side["keyframes"]:
        conn.executemany(
            "INSERT OR REPLACE INTO keyframes (scope, object_id, data) VALUES (?, ?, ?)",
            side["keyframes"])
    if side["rejection_keys"]:
        conn.executemany(
            "INSERT OR REPLACE INTO rejection_keys (scope, key, reason, count, first_seq, "
            "last_seq, last_t) VALUES (?, ?, ?, ?, ?, ?, ?)", side["rejection_keys"])
