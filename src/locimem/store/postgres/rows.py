"""Rows into PostgreSQL: a commit's records and the state rows it changed
(:func:`write_rows`), and stored observations and objects decoded back into the interchange
encoding (features are ``float[]`` on the server, bytes in SQLite's rows)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np
import psycopg

from locimem.model import Observation
from locimem.store.base import RowChanges
from locimem.store.postgres.codec import to_pg
from locimem.store.sqlite.codec import (
    COMMIT_COLUMNS,
    EVENT_COLUMNS,
    OBJECT_COLUMNS,
    OBSERVATION_COLUMNS,
    encode_json,
    object_row,
    observation_from_row,
    state_rows,
)

__all__ = ["KEYS", "OBJ", "UPSERT_OBJECT", "object_from_pg", "observation_from_pg",
           "set_meta", "stored_columns", "write_rows"]

_OBS = tuple(OBSERVATION_COLUMNS.split(", "))
OBJ = tuple(OBJECT_COLUMNS.split(", "))
_INSERT = {
    name: f"INSERT INTO {name} ({cols}) VALUES ({', '.join(['%s'] * len(cols.split(', ')))})"
    for name, cols in (("commits", COMMIT_COLUMNS), ("observations", OBSERVATION_COLUMNS),
                       ("events", EVENT_COLUMNS))
}
UPSERT_OBJECT = (
    f"INSERT INTO objects ({OBJECT_COLUMNS}) VALUES ({', '.join(['%s'] * len(OBJ))}) "
    "ON CONFLICT (scope, id) DO UPDATE SET "
    + ", ".join(f"{c} = excluded.{c}" for c in OBJ[2:])
)
KEYS = {"commits": "id", "observations": "seq", "events": "seq", "objects": "id",
         "tombstones": "id", "rejection_keys": "key", "scene": "scope",
         "checkpoints": "commit_id", "prior_map": "id", "deltas": "id",
         "keyframes": "object_id"}
_OBS_FEATURE = _OBS.index("feature")
_OBJ_FEATURE = OBJ.index("feature")


def observation_from_pg(row: Sequence[Any]) -> Observation:
    feature = row[_OBS_FEATURE]
    if feature is not None:
        row = (*row[:_OBS_FEATURE], np.asarray(feature, dtype=np.float32).tobytes(),
               *row[_OBS_FEATURE + 1:])
    return observation_from_row(row)


def object_from_pg(row: Sequence[Any]) -> Sequence[Any]:
    feature = row[_OBJ_FEATURE]
    if feature is None:
        return row
    return (*row[:_OBJ_FEATURE], np.asarray(feature, dtype=np.float64).tobytes(),
            *row[_OBJ_FEATURE + 1:])


def write_rows(conn: psycopg.Connection[Any], scope: str, commits: list, observations: list,
               events: list, delta: RowChanges) -> None:
    """Insert one commit's rows (``record_rows``) and write the state rows ``delta``
    changed, inside the caller's transaction."""
    with conn.cursor() as cur:
        cur.executemany(_INSERT["commits"], commits)
        if observations:
            cur.executemany(_INSERT["observations"],
                            to_pg("observations", _OBS, observations))
        if events:
            cur.executemany(_INSERT["events"], events)
        if delta.objects:
            cur.executemany(UPSERT_OBJECT, to_pg(
                "objects", OBJ, [object_row(scope, o) for o in delta.objects]))
        if delta.missed:
            cur.executemany("UPDATE objects SET n_missed = %s, absence_s = %s "
                            "WHERE scope = %s AND id = %s",
                            [(o.n_missed, o.absence_s, scope, o.id) for o in delta.missed])
        if delta.removed_objects:
            cur.execute("DELETE FROM objects WHERE scope = %s AND id = ANY(%s)",
                        (scope, list(delta.removed_objects)))
        side = state_rows(scope, delta)
        if side["tombstones"]:
            cur.executemany(
                "INSERT INTO tombstones (id, scope, forgotten_at, data) "
                "VALUES (%s, %s, %s, %s) ON CONFLICT (scope, id) DO UPDATE SET "
                "forgotten_at = excluded.forgotten_at, data = excluded.data",
                side["tombstones"])
        if delta.removed_tombstones:
            cur.execute("DELETE FROM tombstones WHERE scope = %s AND id = ANY(%s)",
                        (scope, list(delta.removed_tombstones)))
        if delta.rooms is not None:
            cur.execute("INSERT INTO scene (scope, rooms) VALUES (%s, %s) ON CONFLICT "
                        "(scope) DO UPDATE SET rooms = excluded.rooms",
                        (scope, encode_json(delta.rooms)))
        gone = [oid for oid, entry in delta.prior.items() if entry is None]
        if gone:
            cur.execute("DELETE FROM prior_map WHERE scope = %s AND id = ANY(%s)",
                        (scope, gone))
        kept = [(scope, oid, encode_json(e)) for oid, e in delta.prior.items()
                if e is not None]
        if kept:
            cur.executemany("INSERT INTO prior_map (scope, id, data) VALUES (%s, %s, %s) "
                            "ON CONFLICT (scope, id) DO UPDATE SET data = excluded.data",
                            kept)
        if side["deltas"]:
            cur.executemany(
                "INSERT INTO deltas (scope, id, object_id, status, data) VALUES "
                "(%s, %s, %s, %s, %s) ON CONFLICT (scope, id) DO UPDATE SET "
                "object_id = excluded.object_id, status = excluded.status, "
                "data = excluded.data", side["deltas"])
        if side["keyframes"]:
            cur.executemany(
                "INSERT INTO keyframes (scope, object_id, data) VALUES (%s, %s, %s) "
                "ON CONFLICT (scope, object_id) DO UPDATE SET data = excluded.data",
                side["keyframes"])
        if side["rejection_keys"]:
            cur.executemany(
                "INSERT INTO rejection_keys (scope, key, reason, count, first_seq, "
                "last_seq, last_t) VALUES (%s, %s, %s, %s, %s, %s, %s) ON CONFLICT "
                "(scope, key) DO UPDATE SET reason = excluded.reason, count = "
                "excluded.count, first_seq = excluded.first_seq, last_seq = "
                "excluded.last_seq, last_t = excluded.last_t", side["rejection_keys"])


def set_meta(conn: psycopg.Connection[Any], key: str, value: str) -> None:
    """Set one ``meta`` entry."""
    conn.execute("INSERT INTO meta (key, value) VALUES (%s, %s) ON CONFLICT (key) DO UPDATE "
                 "SET value = excluded.value", (key, value))


def stored_columns(conn: psycopg.Connection[Any], table: str) -> list[str]:
    """The columns ``table`` stores (generated ones aside), in order."""
    return [r[0] for r in conn.execute(
        "SELECT column_name FROM information_schema.columns WHERE table_schema = "
        "current_schema() AND table_name = %s AND is_generated = 'NEVER' "
        "ORDER BY ordinal_position", (table,))]
