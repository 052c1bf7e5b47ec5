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

import functools
import json
import sqlite3
import zlib
from collections.abc import Callable

from locimem.errors import NotAStore

FORMAT = "locimem"
SCHEMA_VERSION = 3

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


# Version 2: who said it (``source`` of an object, ``label_by`` of a person-set label), the
# long-term (prior) map and its deltas, keyframe evidence, and the store's creation time. The
# three new tables are materialised like ``objects``: from PRIOR, DELTA and KEYFRAME events.
_V2 = """
ALTER TABLE objects ADD COLUMN source TEXT NOT NULL DEFAULT 'tracker';
ALTER TABLE objects ADD COLUMN label_by TEXT;
CREATE TABLE prior_map (
    scope TEXT NOT NULL,
    id INTEGER NOT NULL,
    data TEXT NOT NULL,
    PRIMARY KEY (scope, id)
);
CREATE TABLE deltas (
    scope TEXT NOT NULL,
    id INTEGER NOT NULL,
    object_id INTEGER NOT NULL,
    status TEXT NOT NULL,
    data TEXT NOT NULL,
    PRIMARY KEY (scope, id)
);
CREATE TABLE keyframes (
    scope TEXT NOT NULL,
    object_id INTEGER NOT NULL,
    data TEXT NOT NULL,
    PRIMARY KEY (scope, object_id)
);
"""


# Version 3: belief as an existence filter. Each commit's ``miss_credits`` lists, aligned with
# ``missed``, the evidence of absence each missed object took (it now depends on the object's
# own probability of detection; a version-2 commit credited every missed object the one
# ``miss_credit``). Each object's ``belief`` holds what that probability is learned from (the
# scans in view in which it was seen, and the misses later proved to be misses) and the
# information of its position estimate — as JSON, NULL meaning "nothing learned yet".
_V3 = """
ALTER TABLE commits ADD COLUMN miss_credits TEXT;
ALTER TABLE objects ADD COLUMN belief TEXT;
"""


def _run(conn: sqlite3.Connection, script: str) -> None:
    for statement in script.split(";"):
        if statement.strip():
            conn.execute(statement)


def _create_v1(conn: sqlite3.Connection) -> None:
    _run(conn, _V1)


def _add_sources_prior_keyframes(conn: sqlite3.Connection) -> None:
    _run(conn, _V2)
    # a label a person pinned before version 2: who pinned it is in the CORRECTED event
    conn.execute(
        "UPDATE objects SET label_by = (SELECT json_extract(e.data, '$.actor') FROM events e "
        "WHERE e.scope = objects.scope AND e.object_id = objects.id AND e.kind = 'CORRECTED' "
        "AND json_extract(e.data, '$.field') = 'label' AND json_extract(e.data, '$.pin') "
        "ORDER BY e.seq DESC LIMIT 1) WHERE pinned_label IS NOT NULL")
    # ... and in the compaction checkpoints, so that replay agrees with the cache
    for scope, commit_id, blob in conn.execute(
            "SELECT scope, commit_id, state FROM checkpoints").fetchall():
        state = json.loads(zlib.decompress(blob))
        for obj in state["objects"].values():
            if obj.get("pinned_label") is not None and obj.get("label_by") is None:
                row = conn.execute(
                    "SELECT json_extract(data, '$.actor') FROM events WHERE scope = ? AND "
                    "object_id = ? AND kind = 'CORRECTED' AND commit_id <= ? AND "
                    "json_extract(data, '$.field') = 'label' AND json_extract(data, '$.pin') "
                    "ORDER BY seq DESC LIMIT 1", (scope, obj["id"], commit_id)).fetchone()
                obj["label_by"] = None if row is None else row[0]
        conn.execute("UPDATE checkpoints SET state = ? WHERE scope = ? AND commit_id = ?",
                     (zlib.compress(json.dumps(state, separators=(",", ":"),
                                               sort_keys=True).encode(), 6), scope, commit_id))
    # when the store began: its first commit's record time (a new store: now)
    conn.execute(
        "INSERT OR IGNORE INTO meta (key, value) SELECT 'created_at', "
        "CAST(coalesce((SELECT min(recorded_at) FROM commits), "
        "(julianday('now') - 2440587.5) * 86400.0) AS TEXT)")


REBUILD_CACHE = "rebuild_cache"  # meta key: the materialised state must be replayed anew


def _add_existence_belief(conn: sqlite3.Connection) -> None:
    _run(conn, _V3)
    # what the detection probability is learned from is a replay of the log; the memory
    # replays every scope on its first writable open and rewrites the cache (SQL cannot)
    # (a new store, created by running every migration, has nothing to replay)
    conn.execute("INSERT OR REPLACE INTO meta (key, value) SELECT ?, '1' "
                 "WHERE EXISTS (SELECT 1 FROM commits)", (REBUILD_CACHE,))


# Named migrations, in order: (name, schema version it produces, function). Each runs in one
# transaction and is recorded in the ``migrations`` table; a new store runs them all.
MIGRATIONS: list[tuple[str, int, Callable[[sqlite3.Connection], None]]] = [
    ("0001_initial", 1, _create_v1),
    ("0002_sources_prior_keyframes", 2, _add_sources_prior_keyframes),
    ("0003_existence_belief", 3, _add_existence_belief),
]


def store_version(conn: sqlite3.Connection, where: str,
                  error: type[Exception] | None = None, hint: str = "",
                  damaged_hint: str = "") -> int:
    """The schema version of the locimem store open on ``conn`` — after checking it is one.

    Raises ``error`` (default :class:`~locimem.errors.NotAStore`), naming ``where``, for a
    file that is not SQLite, not a locimem store, damaged, or of an unreadable version
    (``hint`` is appended to the "not a store" message, ``damaged_hint`` to the "damaged"
    one). Whether the version is too new is the
    caller's call: a snapshot copies any version, opening refuses a newer one.
    """
    error = error or NotAStore
    try:
        rows = dict(conn.execute("SELECT key, value FROM meta").fetchall())
    except sqlite3.DatabaseError as exc:
        if getattr(exc, "sqlite_errorname", None) == "SQLITE_CORRUPT":
            raise error(f"{where} is damaged ({exc}); `PRAGMA integrity_check` on it says "
                        f"where{damaged_hint}") from None
        raise error(f"{where} is not a locimem store ({exc}){hint}") from None
    except UnicodeDecodeError as exc:  # a damaged text (the module decodes it)
        raise error(f"{where} is damaged (its meta table holds text that is not UTF-8: "
                    f"{exc}); `PRAGMA integrity_check` on it says where{damaged_hint}") from None
    if rows.get("format") != FORMAT:
        raise error(f"{where} is a SQLite file but not a locimem store")
    try:
        version = int(rows.get("schema_version", ""))
    except ValueError:
        version = 0
    if version < 1:
        raise error(f"{where} has an unreadable schema version "
                    f"{rows.get('schema_version')!r}; it is damaged or not a locimem store")
    return version


# -- the schema a store may hold ---------------------------------------------------------------
SQLITE_OWN_TABLES = ("sqlite_sequence", "sqlite_stat1", "sqlite_stat2", "sqlite_stat3",
                     "sqlite_stat4")
"""Tables SQLite makes by itself (AUTOINCREMENT's counters, ``ANALYZE``'s statistics): a
store may hold them; they change no row locimem reads."""

SchemaObjects = dict[tuple[str, str], str | None]
"""``sqlite_master`` as (type, name) -> its SQL with whitespace runs made one space (None for
the indexes SQLite makes for a key: ``sqlite_autoindex_*``)."""


def schema_objects(rows: list[tuple[str, str, str | None]]) -> SchemaObjects:
    """``(type, name, sql)`` rows of ``sqlite_master`` as :data:`SchemaObjects`."""
    return {(kind, name): None if sql is None else " ".join(sql.split())
            for kind, name, sql in rows}


@functools.cache
def expected_schema(version: int) -> SchemaObjects:
    """What the migrations up to ``version`` create, read from a scratch in-memory database
    (a few milliseconds, once per version and process)."""
    conn = sqlite3.connect(":memory:")
    try:
        for _, produces, migrate in MIGRATIONS:
            if produces <= version:
                migrate(conn)
        return schema_objects(conn.execute("SELECT type, name, sql FROM sqlite_master")
                              .fetchall())
    finally:
        conn.close()


def schema_differences(have: SchemaObjects, version: int) -> list[str]:
    """How ``have`` (a store's ``sqlite_master``) differs from the locimem schema of
    ``version``: each object it holds that the schema does not ("trigger 'x' is not part of
    the locimem schema"), each one whose definition differs, then each one missing. Empty
    when it is the schema exactly (SQLite's own :data:`SQLITE_OWN_TABLES` aside).

    A trigger, a view, another table or index, a changed index (a partial one, another
    collation) or table (another CHECK, default or column) changes what locimem's statements
    do — a trigger can delete the rows a commit inserts, or fail every commit — so a store
    must hold the schema and nothing else."""
    want = expected_schema(version)
    out: list[str] = []
    for (kind, name), sql in sorted(have.items()):
        if (kind, name) not in want:
            if kind == "table" and name in SQLITE_OWN_TABLES:
                continue
            out.append(f"{kind} {name!r} is not part of the locimem schema")
        elif want[(kind, name)] != sql:
            out.append(f"{kind} {name!r} is not the one the locimem schema creates "
                       f"({str(sql)[:200]})")
    out += [f"{kind} {name!r} of the locimem schema is missing"
            for kind, name in sorted(set(want) - set(have))]
    return out


def read_schema(conn: sqlite3.Connection) -> SchemaObjects:
    """The ``sqlite_master`` of the database open on ``conn``: one read. A row that is not
    text (a damaged page) raises ``sqlite3.DatabaseError``, as SQLite's own damage does."""
    rows = conn.execute("SELECT type, name, sql FROM sqlite_master").fetchall()
    if any(type(k) is not str or type(n) is not str or not (s is None or type(s) is str)
           for k, n, s in rows):
        raise sqlite3.DatabaseError("its schema table sqlite_master holds a value that is "
                                    "not text")
    return schema_objects(rows)


def foreign_schema_hint(where: str) -> str:
    """What to do about a store whose schema was altered (for an error's message)."""
    return (f"locimem does not use a store whose schema was altered (a trigger or index "
            f"there changes what its statements do); if you added it yourself, drop it with "
            f"sqlite3, else restore an earlier snapshot or an export; `locimem validate "
            f"{where}` lists every difference")
