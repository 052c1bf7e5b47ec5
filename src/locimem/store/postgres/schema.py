"""The PostgreSQL schema, versioned like SQLite's, with named migrations recorded in the schema.

The tables are SQLite's (:mod:`locimem.store.sqlite.schema`, version 3) with three
differences: every key includes the scope (ids are unique per scope, so scopes write in
parallel), embeddings are arrays (``real[]`` for observations, ``double precision[]`` for
objects), and each object's box is a ``cube`` with a GiST index over (scope, box) for spatial
queries in SQL. JSON columns stay text in the canonical encoding, so a row reads back as it
was written and exports are byte-identical whichever backend they came from.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

FORMAT = "locimem"
SCHEMA_VERSION = 1
"""The PostgreSQL schema's own version (it holds what SQLite's version 3 holds)."""

EXTENSIONS = ("cube", "btree_gist")

_V1 = """
CREATE TABLE meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE migrations (name TEXT PRIMARY KEY, version INTEGER NOT NULL,
                         applied_at DOUBLE PRECISION NOT NULL);
CREATE TABLE commits (
    scope TEXT NOT NULL,
    id BIGINT NOT NULL,
    kind TEXT NOT NULL,
    t DOUBLE PRECISION NOT NULL,
    recorded_at DOUBLE PRECISION NOT NULL,
    actor TEXT NOT NULL,
    reason TEXT,
    n_detections INTEGER NOT NULL,
    camera TEXT,
    missed TEXT,
    miss_credit DOUBLE PRECISION,
    together TEXT,
    miss_credits TEXT,
    PRIMARY KEY (scope, id)
);
CREATE INDEX commits_t ON commits (scope, t);
CREATE TABLE observations (
    scope TEXT NOT NULL,
    seq BIGINT NOT NULL,
    commit_id BIGINT NOT NULL,
    t DOUBLE PRECISION NOT NULL,
    idx INTEGER NOT NULL,
    object_id BIGINT,
    label TEXT NOT NULL,
    confidence DOUBLE PRECISION NOT NULL,
    cx DOUBLE PRECISION NOT NULL, cy DOUBLE PRECISION NOT NULL, cz DOUBLE PRECISION NOT NULL,
    sx DOUBLE PRECISION NOT NULL, sy DOUBLE PRECISION NOT NULL, sz DOUBLE PRECISION NOT NULL,
    weight DOUBLE PRECISION NOT NULL,
    tier TEXT,
    rejected TEXT,
    track_id TEXT,
    orientation TEXT,
    feature REAL[],
    key TEXT,
    PRIMARY KEY (scope, seq),
    FOREIGN KEY (scope, commit_id) REFERENCES commits (scope, id),
    CHECK ((object_id IS NULL) = (rejected IS NOT NULL))
);
CREATE INDEX observations_object ON observations (scope, object_id, seq);
CREATE INDEX observations_commit ON observations (scope, commit_id);
CREATE INDEX observations_key ON observations (scope, key) WHERE key IS NOT NULL;
CREATE INDEX observations_feature ON observations (scope)
    WHERE feature IS NOT NULL AND object_id IS NOT NULL;
CREATE TABLE events (
    scope TEXT NOT NULL,
    seq BIGINT NOT NULL,
    commit_id BIGINT NOT NULL,
    t DOUBLE PRECISION NOT NULL,
    kind TEXT NOT NULL,
    object_id BIGINT NOT NULL,
    label TEXT NOT NULL,
    data TEXT NOT NULL,
    PRIMARY KEY (scope, seq),
    FOREIGN KEY (scope, commit_id) REFERENCES commits (scope, id)
);
CREATE INDEX events_object ON events (scope, object_id, seq);
CREATE INDEX events_kind ON events (scope, kind, seq);
CREATE INDEX events_label ON events (scope, label, seq);
CREATE INDEX events_commit ON events (scope, commit_id);
CREATE INDEX events_appeared ON events (scope, object_id) WHERE kind = 'APPEARED';
CREATE TABLE objects (
    scope TEXT NOT NULL,
    id BIGINT NOT NULL,
    label TEXT NOT NULL,
    cx DOUBLE PRECISION NOT NULL, cy DOUBLE PRECISION NOT NULL, cz DOUBLE PRECISION NOT NULL,
    sx DOUBLE PRECISION NOT NULL, sy DOUBLE PRECISION NOT NULL, sz DOUBLE PRECISION NOT NULL,
    px DOUBLE PRECISION NOT NULL, py DOUBLE PRECISION NOT NULL, pz DOUBLE PRECISION NOT NULL,
    first_seen DOUBLE PRECISION NOT NULL,
    last_seen DOUBLE PRECISION NOT NULL,
    n_detections INTEGER NOT NULL,
    promoted INTEGER NOT NULL,
    lost INTEGER NOT NULL,
    lost_at DOUBLE PRECISION,
    track_id TEXT,
    orientation TEXT,
    label_mass TEXT NOT NULL,
    feature DOUBLE PRECISION[],
    n_features INTEGER NOT NULL,
    pinned_label TEXT,
    attributes TEXT NOT NULL,
    n_missed INTEGER NOT NULL,
    place_sx DOUBLE PRECISION NOT NULL, place_sy DOUBLE PRECISION NOT NULL,
    place_sz DOUBLE PRECISION NOT NULL,
    place_t DOUBLE PRECISION NOT NULL,
    seen_camera INTEGER NOT NULL,
    absence_s DOUBLE PRECISION NOT NULL,
    held TEXT,
    together TEXT,
    merged_from TEXT,
    source TEXT NOT NULL DEFAULT 'tracker',
    label_by TEXT,
    belief TEXT,
    box CUBE GENERATED ALWAYS AS (cube(
        ARRAY[cx - sx / 2, cy - sy / 2, cz - sz / 2],
        ARRAY[cx + sx / 2, cy + sy / 2, cz + sz / 2])) STORED,
    PRIMARY KEY (scope, id)
);
CREATE INDEX objects_box ON objects USING gist (scope, box);
CREATE TABLE tombstones (
    scope TEXT NOT NULL,
    id BIGINT NOT NULL,
    forgotten_at DOUBLE PRECISION NOT NULL,
    data TEXT NOT NULL,
    PRIMARY KEY (scope, id)
);
CREATE TABLE rejection_keys (
    scope TEXT NOT NULL,
    key TEXT NOT NULL,
    reason TEXT NOT NULL,
    count INTEGER NOT NULL,
    first_seq BIGINT NOT NULL,
    last_seq BIGINT NOT NULL,
    last_t DOUBLE PRECISION NOT NULL,
    PRIMARY KEY (scope, key)
);
CREATE TABLE scene (scope TEXT PRIMARY KEY, rooms TEXT NOT NULL);
CREATE TABLE checkpoints (
    scope TEXT NOT NULL,
    commit_id BIGINT NOT NULL,
    t DOUBLE PRECISION NOT NULL,
    state BYTEA NOT NULL,
    PRIMARY KEY (scope, commit_id)
);
CREATE TABLE prior_map (
    scope TEXT NOT NULL,
    id BIGINT NOT NULL,
    data TEXT NOT NULL,
    PRIMARY KEY (scope, id)
);
CREATE TABLE deltas (
    scope TEXT NOT NULL,
    id BIGINT NOT NULL,
    object_id BIGINT NOT NULL,
    status TEXT NOT NULL,
    data TEXT NOT NULL,
    PRIMARY KEY (scope, id)
);
CREATE TABLE keyframes (
    scope TEXT NOT NULL,
    object_id BIGINT NOT NULL,
    data TEXT NOT NULL,
    PRIMARY KEY (scope, object_id)
)
"""

TABLES = ("commits", "observations", "events", "objects", "tombstones", "rejection_keys",
          "scene", "checkpoints", "prior_map", "deltas", "keyframes")
"""Every scoped table, in an order that satisfies the foreign keys when filled."""


def _create_v1(conn: Any) -> None:
    for statement in _V1.split(";"):
        if statement.strip():
            conn.execute(statement)


# Named migrations, in order: (name, schema version it produces, function). Each runs in one
# transaction and is recorded in ``migrations``; a new schema runs them all.
MIGRATIONS: list[tuple[str, int, Callable[[Any], None]]] = [
    ("0001_initial", 1, _create_v1),
]
