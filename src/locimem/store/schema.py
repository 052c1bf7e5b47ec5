"""The SQLite schema, versioned, with named migrations recorded in the file.

The log tables (``commits``, ``observations``, ``events``) are append-only and are the source of
truth (compaction may thin old observations, leaving a checkpoint that keeps replay
exact).
``objects``, ``tombstones`` and ``rejection_keys`` are a materialised cache of the live state,
written in the same transaction as the records that changed it. ``seq`` is one sequence
shared by observations and events, so the two streams interleave into one total order for
replay.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Callable

FORMAT = "locimem"
SCHEMA_VERSION = 1

_V1 = """
CREATE TABLE meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE migrations (name TEXT PRIMARY KEY, version INTEGER NOT NULL, applied_at REAL NOT NULL);
CREATE TABLE commits (
    id INTEGER PRIMARY KEY,
    scope TEXT NOT NULL,
    kind TEXT NOT NULL,
    t REAL NOT NULL,
    recorded_at REAL NOT NULL,
    actor TEXT NOT NULL,
    reason TEXT,
    n_detections INTEGER NOT NULL,
    camera TEXT,
    missed TEXT,
    miss_credit REAL,
    together TEXT
);
CREATE INDEX commits_scope ON commits (scope, id);
CREATE TABLE observations (
    seq INTEGER PRIMARY KEY,
    commit_id INTEGER NOT NULL REFERENCES commits (id),
    scope TEXT NOT NULL,
    t REAL NOT NULL,
    idx INTEGER NOT NULL,
    object_id INTEGER,
    label TEXT NOT NULL,
    confidence REAL NOT NULL,
    cx REAL NOT NULL, cy REAL NOT NULL, cz REAL NOT NULL,
    sx REAL NOT NULL, sy REAL NOT NULL, sz REAL NOT NULL,
    weight REAL NOT NULL,
    tier TEXT,
    rejected TEXT,
    track_id TEXT,
    orientation TEXT,
    feature BLOB,
    key TEXT,
    CHECK ((object_id IS NULL) = (rejected IS NOT NULL))
);
CREATE INDEX observations_object ON observations (scope, object_id, seq);
CREATE INDEX observations_commit ON observations (commit_id);
CREATE TABLE events (
    seq INTEGER PRIMARY KEY,
    commit_id INTEGER NOT NULL REFERENCES commits (id),
    scope TEXT NOT NULL,
    t REAL NOT NULL,
    kind TEXT NOT NULL,
    object_id INTEGER NOT NULL,
    label TEXT NOT NULL,
    data TEXT NOT NULL
);
CREATE INDEX events_object ON events (scope, object_id, seq);
CREATE INDEX events_kind ON events (scope, kind, seq);
CREATE INDEX events_label ON events (scope, label, seq);
CREATE INDEX events_commit ON events (commit_id);
CREATE TABLE objects (
    id INTEGER PRIMARY KEY,
    scope TEXT NOT NULL,
    label TEXT NOT NULL,
    cx REAL NOT NULL, cy REAL NOT NULL, cz REAL NOT NULL,
    sx REAL NOT NULL, sy REAL NOT NULL, sz REAL NOT NULL,
    px REAL NOT NULL, py REAL NOT NULL, pz REAL NOT NULL,
    first_seen REAL NOT NULL,
    last_seen REAL NOT NULL,
    n_detections INTEGER NOT NULL,
    promoted INTEGER NOT NULL,
    lost INTEGER NOT NULL,
    lost_at REAL,
    track_id TEXT,
    orientation TEXT,
    label_mass TEXT NOT NULL,
    feature BLOB,
    n_features INTEGER NOT NULL,
    pinned_label TEXT,
    attributes TEXT NOT NULL,
    n_missed INTEGER NOT NULL,
    place_sx REAL NOT NULL, place_sy REAL NOT NULL, place_sz REAL NOT NULL,
    place_t REAL NOT NULL,
    seen_camera INTEGER NOT NULL,
    absence_s REAL NOT NULL,
    held TEXT,
    together TEXT,
    merged_from TEXT
);
CREATE INDEX objects_scope ON objects (scope, id);
CREATE TABLE tombstones (
    id INTEGER PRIMARY KEY,
    scope TEXT NOT NULL,
    forgotten_at REAL NOT NULL,
    data TEXT NOT NULL
);
CREATE INDEX tombstones_scope ON tombstones (scope, id);
CREATE TABLE rejection_keys (
    scope TEXT NOT NULL,
    key TEXT NOT NULL,
    reason TEXT NOT NULL,
    count INTEGER NOT NULL,
    first_seq INTEGER NOT NULL,
    last_seq INTEGER NOT NULL,
    last_t REAL NOT NULL,
    PRIMARY KEY (scope, key)
);
CREATE INDEX observations_key ON observations (scope, key) WHERE key IS NOT NULL;
CREATE INDEX observations_feature ON observations (scope)
    WHERE feature IS NOT NULL AND object_id IS NOT NULL;
CREATE TABLE scene (scope TEXT PRIMARY KEY, rooms TEXT NOT NULL);
CREATE TABLE checkpoints (
    scope TEXT NOT NULL,
    commit_id INTEGER NOT NULL,
    t REAL NOT NULL,
    state BLOB NOT NULL,
    PRIMARY KEY (scope, commit_id)
);
"""


def _create_v1(conn: sqlite3.Connection) -> None:
    for statement in _V1.split(";"):
        if statement.strip():
            conn.execute(statement)


# Named migrations, in order: (name, schema version it produces, function). Each runs in one
# transaction and is recorded in the ``migrations`` table.
MIGRATIONS: list[tuple[str, int, Callable[[sqlite3.Connection], None]]] = [
    ("0001_initial", 1, _create_v1),
]
