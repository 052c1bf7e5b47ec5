"""The embedded backend: one SQLite file in WAL mode, one writer at a time.

``append`` writes a commit's records and the objects they changed in one transaction, so a
scan is either wholly on disk or not at all. Durable by default (``synchronous=FULL``: a scan
that returned survives power loss); ``durable=False`` keeps crash safety against a killed process
but may lose the last commits on power loss, and is several times faster on slow disks.
"""

from __future__ import annotations

import contextlib
import heapq
import json
import math
import os
import sqlite3
import time
import zlib
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from locimem.errors import NotAStore, NotFound, ReadOnly, SchemaVersionError, StoreLocked
from locimem.model import (
    AuditEntry,
    Commit,
    Event,
    EventKind,
    ObjectState,
    Observation,
    ObservationMeta,
    Record,
    RejectionState,
    TombstoneState,
)
from locimem.store.base import RowChanges
from locimem.store.open_check import check_on_open, check_open_mode
from locimem.store.schema import (
    FORMAT,
    MIGRATIONS,
    REBUILD_CACHE,
    SCHEMA_VERSION,
    store_version,
)

try:  # POSIX advisory locks; elsewhere the single-writer rule is not enforced
    import fcntl
except ImportError:  # pragma: no cover - Windows
    fcntl = None  # type: ignore[assignment]

MEMORY = ":memory:"

_OBS_COLUMNS = (
    "seq, commit_id, scope, t, idx, object_id, label, confidence, cx, cy, cz, sx, sy, sz, "
    "weight, tier, rejected, track_id, orientation, feature, key"
)
_EVENT_COLUMNS = "seq, commit_id, scope, t, kind, object_id, label, data"
_COMMIT_COLUMNS = ("id, scope, kind, t, recorded_at, actor, reason, n_detections, camera, missed, "
                   "miss_credit, together, miss_credits")
_MAX_ID = 2**62
_INSERT_OBS = f"INSERT INTO observations ({_OBS_COLUMNS}) VALUES ({', '.join('?' * 21)})"
_INSERT_EVENT = f"INSERT INTO events ({_EVENT_COLUMNS}) VALUES ({', '.join('?' * 8)})"
_INSERT_COMMIT = f"INSERT INTO commits ({_COMMIT_COLUMNS}) VALUES ({', '.join('?' * 13)})"


_encode = json.JSONEncoder(separators=(",", ":"), sort_keys=True, allow_nan=False).encode
_encode_fast = json.JSONEncoder(separators=(",", ":"), allow_nan=False).encode


def _dumps(value: Any) -> str:
    return _encode(value)


class SQLiteStore:
    """A locimem store in one SQLite file (or ``":memory:"`` for tests and scratch work)."""

    def __init__(self, path: str | os.PathLike[str], *, read_only: bool = False,
                 durable: bool = True, check: str = "quick") -> None:
        check = check_open_mode(check)  # see locimem.store.open_check
        self.path = str(path)
        self.read_only = read_only
        self.durable = durable
        self._lock_file: Any = None
        self.conn: sqlite3.Connection = None  # type: ignore[assignment]
        in_memory = self.path == MEMORY
        if in_memory and read_only:
            raise NotFound("an in-memory store cannot be opened read-only: nothing is there")
        exists = not in_memory and Path(self.path).exists() and Path(self.path).stat().st_size > 0
        if read_only and not exists:
            raise NotFound(f"no store at {self.path!r}")
        if not in_memory and not exists and not Path(self.path).resolve().parent.is_dir():
            raise NotFound(f"cannot create a store at {self.path!r}: its directory does not "
                           "exist (create it first)")
        version = SCHEMA_VERSION
        self.backup_path: str | None = None  # where the pre-migration copy went, if any
        self._identity_lock: Any = None
        try:
            if not in_memory and not read_only:  # locks first: no second writer even looks
                self._take_writer_lock()
                if exists:
                    self._take_identity_lock()
            if exists:  # look before touching: a file that is not a store is left byte-identical
                probe = self._connect(read_only=True)
                try:
                    version = self._check_format(probe)
                    check_on_open(probe, self.path, check)
                finally:
                    probe.close()
                if version < SCHEMA_VERSION and read_only:
                    raise SchemaVersionError(
                        f"{self.path!r} has schema version {version} (this locimem writes "
                        f"{SCHEMA_VERSION}); open it once writable to migrate it — a backup "
                        "is taken first")
            self.conn = self._connect(read_only=read_only)
            if not in_memory and not read_only and not exists:  # the file exists by now
                self._take_identity_lock()
            if not exists:
                self._create()
            elif version < SCHEMA_VERSION:
                self._migrate(version)
            if exists and not read_only and self.cache_stale():  # a migration left it to do
                self._replay_cache()
        except BaseException:
            self.close()
            raise

    # -- a cache to replay (after a migration that cannot compute it in SQL) -----------------
    def cache_stale(self) -> bool:
        """Whether a migration left the materialised objects to be replayed from the log."""
        row = self.conn.execute("SELECT value FROM meta WHERE key = ?",
                                (REBUILD_CACHE,)).fetchone()
        return row is not None

    def _replay_cache(self) -> None:
        """Replay every scope's log (from its newest checkpoint) and rewrite its materialised
        objects, then clear :meth:`cache_stale` — in one transaction. Only ``apply`` runs: the
        records carry every decision."""
        from locimem.tracker.apply import apply
        from locimem.tracker.state import MemoryState

        rows = []
        for scope in self.scopes():
            state = MemoryState()
            after = 0
            checkpoint = self.latest_checkpoint(scope)
            if checkpoint is not None:
                after, snapshot = checkpoint
                state = MemoryState.from_snapshot(snapshot, state.grid.cell_m)
            for record in self.iter_log(scope, after_commit=after):
                apply(state, record, math.inf)
            rows += [_object_row(scope, o) for o in state.objects.values()]
        with self.atomic() as conn:
            conn.executemany(_UPSERT_OBJECT, rows)
            conn.execute("DELETE FROM meta WHERE key = ?", (REBUILD_CACHE,))

    # -- opening ------------------------------------------------------------------------------
    def _take_writer_lock(self) -> None:
        """The single-writer lock, ``STORE-writer`` beside the real file (symlinks resolved,
        so every name that leads to the file through links meets the same lock)."""
        if fcntl is None:  # pragma: no cover
            return
        lock_path = writer_lock_path(self.path)
        handle = open(lock_path, "a+")  # noqa: SIM115 - held for the store's lifetime
        try:
            fcntl.flock(handle.fileno(), fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError:
            handle.seek(0)
            holder = handle.read().strip() or "unknown"
            handle.close()
            raise StoreLocked(
                f"{self.path!r} is already open for writing (pid {holder}); close that memory, "
                "or open this one with read_only=True"
            ) from None
        handle.seek(0)
        handle.truncate()
        handle.write(str(os.getpid()))
        handle.flush()
        self._lock_file = handle

    def _take_identity_lock(self) -> None:
        """A second lock keyed by the file's identity (device and inode), in
        :func:`identity_lock_dir`: hard links (other names of the same file, which no path
        resolution can tell) meet it too."""
        if fcntl is None:  # pragma: no cover
            return
        st = os.stat(self.path)
        lock_dir = identity_lock_dir()
        lock_path = os.path.join(lock_dir, f"{st.st_dev}-{st.st_ino}.lock")
        try:
            os.makedirs(lock_dir, exist_ok=True)
            with contextlib.suppress(OSError):  # shared by every user: sticky, like /tmp
                os.chmod(lock_dir, 0o1777)
            fd = os.open(lock_path, os.O_RDWR | os.O_CREAT, 0o666)
        except PermissionError:
            try:
                fd = os.open(lock_path, os.O_RDONLY)  # flock needs no write access
            except OSError:
                return  # no lock directory we may use: the path lock still holds
        except OSError:
            return
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError:
            os.close(fd)
            raise StoreLocked(
                f"{self.path!r} is already open for writing under another name (a hard link "
                "to the same file); close that memory, or open this one with read_only=True"
            ) from None
        self._identity_lock = fd

    def _release_writer_lock(self) -> None:
        fd = getattr(self, "_identity_lock", None)
        if fd is not None:
            with contextlib.suppress(OSError):
                fcntl.flock(fd, fcntl.LOCK_UN)
            os.close(fd)
            self._identity_lock = None
        if self._lock_file is not None:
            with contextlib.suppress(OSError):
                fcntl.flock(self._lock_file.fileno(), fcntl.LOCK_UN)
            self._lock_file.close()
            self._lock_file = None

    def _connect(self, *, read_only: bool) -> sqlite3.Connection:
        try:
            if read_only:
                uri = Path(self.path).resolve().as_uri() + "?mode=ro"
                conn = sqlite3.connect(uri, uri=True, isolation_level=None,
                                       check_same_thread=False)
            else:
                conn = sqlite3.connect(self.path, isolation_level=None, check_same_thread=False)
                conn.execute("PRAGMA journal_mode=WAL")
                conn.execute(f"PRAGMA synchronous={'FULL' if self.durable else 'NORMAL'}")
            conn.execute("PRAGMA busy_timeout=5000")
        except sqlite3.DatabaseError as exc:
            raise NotAStore(f"{self.path!r} is not a locimem store ({exc})") from None
        return conn

    def _check_format(self, conn: sqlite3.Connection) -> int:
        version = store_version(conn, repr(self.path), hint="; pass a new path to create one")
        if version > SCHEMA_VERSION:
            raise SchemaVersionError(
                f"{self.path!r} has schema version {version}, newer than this locimem "
                f"understands ({SCHEMA_VERSION}); upgrade locimem to open it"
            )
        return version

    def _create(self) -> None:
        with self.atomic():
            for name, version, migrate in MIGRATIONS:
                migrate(self.conn)
                self._record_migration(name, version)
            self.conn.execute("INSERT OR REPLACE INTO meta (key, value) VALUES ('format', ?)",
                              (FORMAT,))

    def _record_migration(self, name: str, version: int) -> None:
        self.conn.execute("INSERT INTO migrations (name, version, applied_at) VALUES (?, ?, ?)",
                          (name, version, time.time()))
        self.conn.execute(
            "INSERT OR REPLACE INTO meta (key, value) VALUES ('schema_version', ?)",
            (str(version),))

    def _migrate(self, version: int) -> None:
        """Bring an older store up to :data:`SCHEMA_VERSION`: first a consistent copy of the
        file (``STORE.backup-v<old>``; kept), then each pending migration in its own
        transaction, recorded in ``migrations``. A failed migration rolls back; the store
        stays at the last version that completed, and the backup is kept."""
        backup = f"{self.path}.backup-v{version}"
        n = 1
        while Path(backup).exists():  # an earlier attempt's backup is never overwritten
            n += 1
            backup = f"{self.path}.backup-v{version}-{n}"
        with contextlib.closing(sqlite3.connect(backup)) as target:
            self.conn.backup(target)
        self.backup_path = backup
        for name, produces, migrate in MIGRATIONS:
            if produces <= version:
                continue
            with self.atomic():
                migrate(self.conn)
                self._record_migration(name, produces)

    def close(self) -> None:
        conn = getattr(self, "conn", None)
        if conn is not None:
            conn.close()
            self.conn = None  # type: ignore[assignment]
        self._release_writer_lock()

    # -- writing ------------------------------------------------------------------------------
    @contextlib.contextmanager
    def atomic(self) -> Iterator[sqlite3.Connection]:
        """One transaction: everything inside lands together or not at all."""
        if self.read_only:
            raise ReadOnly("this store was opened read-only")
        conn = self.conn
        conn.execute("BEGIN IMMEDIATE")
        try:
            yield conn
        except BaseException:
            conn.execute("ROLLBACK")
            raise
        conn.execute("COMMIT")

    @contextlib.contextmanager
    def snapshot_read(self) -> Iterator[None]:
        """One read transaction: every query inside sees the same committed state (WAL gives
        each reader a snapshot), however many commits another process lands meanwhile. Inside
        a transaction already (a write, or an outer read), it simply joins it."""
        conn = self.conn
        if conn.in_transaction:
            yield
            return
        conn.execute("BEGIN")  # deferred: the first SELECT fixes the snapshot
        try:
            yield
        finally:
            if conn.in_transaction:
                conn.execute("COMMIT")  # read-only: nothing to write, only the snapshot ends

    def append(self, scope: str, records: Sequence[Record], delta: RowChanges) -> None:
        """Append one commit's records and write the state they changed, atomically."""
        rows = _record_rows(scope, records)
        with self.atomic() as conn:
            _write(conn, scope, rows, delta)

    def compact(self, scope: str, *, checkpoint_commit: int, checkpoint_t: float,
                state: dict[str, Any], delete_seqs: Sequence[int],
                records: Sequence[Record]) -> None:
        """In one transaction: store the state as it was after ``checkpoint_commit``, delete
        the thinned observations (all at or before it) and append the maintenance records."""
        rows = _record_rows(scope, records)
        blob = zlib.compress(_dumps(state).encode(), 6)
        with self.atomic() as conn:
            conn.execute(
                "INSERT OR REPLACE INTO checkpoints (scope, commit_id, t, state) "
                "VALUES (?, ?, ?, ?)", (scope, checkpoint_commit, checkpoint_t, blob))
            conn.executemany("DELETE FROM observations WHERE seq = ? AND scope = ?",
                             [(seq, scope) for seq in delete_seqs])
            _write(conn, scope, rows, RowChanges())

    def latest_checkpoint(self, scope: str, until_commit: int | None = None
                          ) -> tuple[int, dict[str, Any]] | None:
        """(commit id, state snapshot) of the newest checkpoint at or before ``until_commit``."""
        row = self.conn.execute(
            "SELECT commit_id, state FROM checkpoints WHERE scope = ? AND commit_id <= ? "
            "ORDER BY commit_id DESC LIMIT 1",
            (scope, _MAX_ID if until_commit is None else until_commit)).fetchone()
        if row is None:
            return None
        return row[0], json.loads(zlib.decompress(row[1]))

    def observation_meta(self, scope: str, after_commit: int, until_commit: int
                         ) -> list[ObservationMeta]:
        """Seq, commit, time, object and key of the observations in a commit range."""
        rows = self.conn.execute(
            "SELECT seq, commit_id, t, object_id, key FROM observations WHERE scope = ? AND "
            "commit_id > ? AND commit_id <= ? ORDER BY seq", (scope, after_commit, until_commit))
        return [ObservationMeta(*row) for row in rows]

    def change_commits(self, scope: str, after_commit: int, until_commit: int,
                       kinds: Sequence[str]) -> set[tuple[int, int]]:
        """(object id, commit id) pairs with an event of one of ``kinds`` in a commit range."""
        rows = self.conn.execute(
            f"SELECT object_id, commit_id FROM events WHERE scope = ? AND commit_id > ? AND "
            f"commit_id <= ? AND kind IN ({', '.join('?' * len(kinds))})",
            (scope, after_commit, until_commit, *kinds))
        return {(a, b) for a, b in rows}

    def counters(self) -> tuple[int, int, int]:
        """(next object id, next record seq, next commit id), across every scope in the file:
        ids never collide between scopes sharing a file."""
        one = self.conn.execute
        max_oid = one("SELECT max(object_id) FROM events WHERE kind = 'APPEARED'").fetchone()[0]
        max_obs = one("SELECT max(seq) FROM observations").fetchone()[0]
        max_ev = one("SELECT max(seq) FROM events").fetchone()[0]
        max_commit = one("SELECT max(id) FROM commits").fetchone()[0]
        return ((max_oid or 0) + 1, max(max_obs or 0, max_ev or 0) + 1, (max_commit or 0) + 1)

    def last_commit_time(self, scope: str) -> float | None:
        row = self.conn.execute(
            "SELECT t FROM commits WHERE scope = ? ORDER BY id DESC LIMIT 1", (scope,)
        ).fetchone()
        return None if row is None else row[0]

    def load_objects(self, scope: str) -> list[ObjectState]:
        """The materialised objects of ``scope`` (the cache written with each commit)."""
        rows = self.conn.execute(
            f"SELECT {_OBJECT_COLUMNS} FROM objects WHERE scope = ? ORDER BY id", (scope,)
        )
        return [_object_from_row(row) for row in rows]

    def feature_dim(self, scope: str) -> int | None:
        """The embedding width of the scope's accepted observations (None if none has one),
        for a state whose objects no longer hold an embedding (expired, merged)."""
        row = self.conn.execute(
            "SELECT length(feature) FROM observations INDEXED BY observations_feature "
            "WHERE scope = ? AND feature IS NOT NULL AND object_id IS NOT NULL LIMIT 1",
            (scope,)).fetchone()
        if row is not None:
            return row[0] // 4  # float32
        checkpoint = self.latest_checkpoint(scope) if self.conn.execute(
            "SELECT 1 FROM checkpoints WHERE scope = ? LIMIT 1", (scope,)).fetchone() else None
        return None if checkpoint is None else checkpoint[1].get("feature_dim")

    def logged_feature_dim(self, scope: str) -> int | None:
        """The embedding width of the scope's observations, accepted or rejected (None if no
        observation has one). Accepted ones are found through their index; rejected ones may
        take a scan of the log."""
        width = self.feature_dim(scope)
        if width is not None:
            return width
        row = self.conn.execute(
            "SELECT length(feature) FROM observations WHERE scope = ? AND feature IS NOT NULL "
            "LIMIT 1", (scope,)).fetchone()
        return None if row is None else row[0] // 4  # float32

    def load_tombstones(self, scope: str) -> dict[int, TombstoneState]:
        rows = self.conn.execute(
            "SELECT id, data FROM tombstones WHERE scope = ? ORDER BY id", (scope,))
        return {oid: TombstoneState.from_dict(json.loads(data)) for oid, data in rows}

    def load_rooms(self, scope: str) -> dict[str, Any] | None:
        row = self.conn.execute("SELECT rooms FROM scene WHERE scope = ?", (scope,)).fetchone()
        return None if row is None else json.loads(row[0])

    def load_json_rows(self, table: str, scope: str) -> dict[int, Any]:
        """The materialised ``prior_map``, ``deltas`` or ``keyframes`` of ``scope``: id -> data."""
        key = {"prior_map": "id", "deltas": "id", "keyframes": "object_id"}[table]
        rows = self.conn.execute(
            f"SELECT {key}, data FROM {table} WHERE scope = ? ORDER BY {key}", (scope,))
        return {k: json.loads(data) for k, data in rows}

    def load_rejections(self, scope: str) -> dict[str, RejectionState]:
        rows = self.conn.execute(
            "SELECT key, reason, count, first_seq, last_seq, last_t FROM rejection_keys "
            "WHERE scope = ? ORDER BY key", (scope,))
        return {row[0]: RejectionState(*row[1:]) for row in rows}

    def iter_log(self, scope: str, *, after_commit: int = 0,
                 until_commit: int | None = None) -> Iterator[Record]:
        """Every record of ``scope`` in replay order (each commit, then its records by seq),
        from after commit ``after_commit`` up to and including ``until_commit``."""
        conn = self.conn
        bound = (scope, after_commit, until_commit if until_commit is not None else _MAX_ID)
        commits = (
            ((row[0], 0, 0), _commit_from_row(row))
            for row in conn.execute(
                f"SELECT {_COMMIT_COLUMNS} FROM commits WHERE scope = ? AND id > ? AND id <= ? "
                "ORDER BY id", bound,
            )
        )
        observations = (
            ((row[1], 1, row[0]), _observation_from_row(row))
            for row in conn.execute(
                f"SELECT {_OBS_COLUMNS} FROM observations WHERE scope = ? AND commit_id > ? "
                "AND commit_id <= ? ORDER BY seq", bound,
            )
        )
        events = (
            ((row[1], 1, row[0]), _event_from_row(row))
            for row in conn.execute(
                f"SELECT {_EVENT_COLUMNS} FROM events WHERE scope = ? AND commit_id > ? "
                "AND commit_id <= ? ORDER BY seq", bound,
            )
        )
        for _, record in heapq.merge(commits, observations, events, key=lambda kv: kv[0]):
            yield record

    # -- reading the record -------------------------------------------------------------------
    def last_commit_at(self, scope: str, *, t: float | None = None,
                       recorded: float | None = None) -> int | None:
        """The id of the last commit with valid time <= ``t`` (or record time <= ``recorded``);
        None if there is none."""
        column, bound = ("t", t) if t is not None else ("recorded_at", recorded)
        row = self.conn.execute(
            f"SELECT max(id) FROM commits WHERE scope = ? AND {column} <= ?", (scope, bound)
        ).fetchone()
        return row[0]

    def events(
        self, scope: str, *, kind: Sequence[str] | None = None, label: str | None = None,
        object_id: int | None = None, since: float | None = None, until: float | None = None,
        limit: int | None = None, newest_first: bool = False, until_commit: int | None = None,
        exclude_forgotten: bool = False,
    ) -> list[Event]:
        where, args = _conditions(scope, ("label = ?", label), ("object_id = ?", object_id),
                                  ("t >= ?", since), ("t <= ?", until),
                                  ("commit_id <= ?", until_commit))
        if kind:
            where.append(f"kind IN ({', '.join('?' * len(kind))})")
            args.extend(kind)
        if exclude_forgotten:  # neither about a forgotten object, nor naming one
            where.append("object_id NOT IN (SELECT id FROM tombstones WHERE scope = ?)")
            where.append("NOT (kind = 'RELATION' AND json_extract(data, '$.object') IN "
                         "(SELECT id FROM tombstones WHERE scope = ?))")
            args.extend((scope, scope))
        sql = (f"SELECT {_EVENT_COLUMNS} FROM events WHERE {' AND '.join(where)} "
               f"ORDER BY seq {'DESC' if newest_first else 'ASC'}")
        if limit is not None:
            sql += " LIMIT ?"
            args.append(limit)
        return [_event_from_row(row) for row in self.conn.execute(sql, args)]

    def observations(self, scope: str, *, object_id: int | None = None,
                     rejected: bool | None = None, reason: str | None = None,
                     key: str | None = None, limit: int | None = None,
                     until_commit: int | None = None) -> list[Observation]:
        where, args = _conditions(scope, ("object_id = ?", object_id), ("rejected = ?", reason),
                                  ("key = ?", key), ("commit_id <= ?", until_commit))
        if rejected is not None:
            where.append("rejected IS NOT NULL" if rejected else "rejected IS NULL")
        sql = f"SELECT {_OBS_COLUMNS} FROM observations WHERE {' AND '.join(where)} ORDER BY seq"
        if limit is not None:
            sql += " LIMIT ?"
            args.append(limit)
        return [_observation_from_row(row) for row in self.conn.execute(sql, args)]

    def merged_into(self, scope: str, object_id: int, *, until_commit: int | None = None
                    ) -> int | None:
        """The id that absorbed ``object_id`` in its latest MERGED event, if any."""
        row = self.conn.execute(
            "SELECT object_id FROM events WHERE scope = ? AND kind = 'MERGED' AND "
            "json_extract(data, '$.absorbed') = ? AND commit_id <= ? ORDER BY seq DESC LIMIT 1",
            (scope, object_id, _MAX_ID if until_commit is None else until_commit)).fetchone()
        return None if row is None else row[0]

    def history(self, scope: str, object_id: int, *, until_commit: int | None = None,
                merged_from: Sequence[int] = ()) -> list[Observation | Event]:
        """Evidence and events of one object — and of the identities merged into it
        (``merged_from``) — in record order."""
        merged: list[Observation | Event] = []
        for oid in (object_id, *merged_from):
            merged += self.observations(scope, object_id=oid, until_commit=until_commit)
            merged += self.events(scope, object_id=oid, until_commit=until_commit)
        merged.sort(key=lambda r: r.seq)
        return merged

    def audit(self, scope: str, *, since: float | None = None, until: float | None = None,
              actor: str | None = None, object_id: int | None = None,
              kinds: Sequence[str] | None = None, recorded_since: float | None = None,
              recorded_until: float | None = None, limit: int | None = None,
              until_commit: int | None = None) -> list[AuditEntry]:
        """Commits that changed something (every non-scan commit, and scans with events),
        with their events, oldest first."""
        where = ["c.scope = ?", "(c.kind != 'scan' OR EXISTS "
                 "(SELECT 1 FROM events e WHERE e.commit_id = c.id))"]
        args: list[Any] = [scope]
        for clause, value in (("c.t >= ?", since), ("c.t <= ?", until),
                              ("c.actor = ?", actor), ("c.recorded_at >= ?", recorded_since),
                              ("c.recorded_at <= ?", recorded_until),
                              ("c.id <= ?", until_commit)):
            if value is not None:
                where.append(clause)
                args.append(value)
        if kinds:
            where.append(f"c.kind IN ({', '.join('?' * len(kinds))})")
            args.extend(kinds)
        if object_id is not None:
            where.append("EXISTS (SELECT 1 FROM events e WHERE e.commit_id = c.id "
                         "AND e.object_id = ?)")
            args.append(object_id)
        sql = (f"SELECT {', '.join('c.' + c for c in _COMMIT_COLUMNS.split(', '))} "
               f"FROM commits c WHERE {' AND '.join(where)} ORDER BY c.id")
        if limit is not None:
            sql += " LIMIT ?"
            args.append(limit)
        commits = [_commit_from_row(row) for row in self.conn.execute(sql, args)]
        entries = []
        for c in commits:
            events = tuple(
                _event_from_row(row) for row in self.conn.execute(
                    f"SELECT {_EVENT_COLUMNS} FROM events WHERE commit_id = ? ORDER BY seq",
                    (c.id,))
                if object_id is None or row[5] == object_id
            )
            entries.append(AuditEntry(commit=c.id, kind=c.kind, actor=c.actor, reason=c.reason,
                                      t=c.t, recorded_at=c.recorded_at, events=events))
        return entries

    def commits(self, scope: str) -> list[Commit]:
        return [
            _commit_from_row(row)
            for row in self.conn.execute(
                f"SELECT {_COMMIT_COLUMNS} FROM commits WHERE scope = ? ORDER BY id", (scope,)
            )
        ]

    def count(self, table: str, scope: str) -> int:
        if table not in ("commits", "observations", "events", "objects"):
            raise ValueError(f"unknown table {table!r}")
        return self.conn.execute(
            f"SELECT count(*) FROM {table} WHERE scope = ?", (scope,)
        ).fetchone()[0]

    def scopes(self) -> list[str]:
        return [r[0] for r in self.conn.execute("SELECT DISTINCT scope FROM commits ORDER BY 1")]


def writer_lock_path(path: str | os.PathLike[str]) -> str:
    """The single-writer lock file of the store at ``path``: ``STORE-writer`` beside the
    file that ``path`` resolves to (through any symlinks)."""
    return os.path.realpath(path) + "-writer"


def identity_lock_dir() -> str:
    """Where the file-identity locks live: ``$LOCIMEM_LOCK_DIR``, else ``locimem-locks`` in
    the system's temporary directory. Every process that may write a store must see the same
    directory (one machine; a store on a network share is not locked across machines)."""
    import tempfile

    return os.environ.get("LOCIMEM_LOCK_DIR") or os.path.join(tempfile.gettempdir(),
                                                              "locimem-locks")


def _conditions(scope: str, *pairs: tuple[str, Any]) -> tuple[list[str], list[Any]]:
    """WHERE clauses for one scope plus every (clause, value) whose value is not None."""
    where, args = ["scope = ?"], [scope]
    for clause, value in pairs:
        if value is not None:
            where.append(clause)
            args.append(value)
    return where, args


def _record_rows(scope: str, records: Sequence[Record]) -> tuple[list, list, list]:
    commits, observations, events = [], [], []
    for r in records:
        if isinstance(r, Observation):
            observations.append(_observation_row(scope, r))
        elif isinstance(r, Event):
            events.append((r.seq, r.commit, scope, r.t, r.kind.value, r.object_id, r.label,
                           _dumps(r.data)))
        else:
            commits.append((r.id, scope, r.kind, r.t, r.recorded_at, r.actor, r.reason,
                            r.n_detections, None if r.camera is None else _dumps(r.camera),
                            _dumps(list(r.missed)) if r.missed else None,
                            None,
                            _dumps([list(p) for p in r.together]) if r.together else None,
                            _encode_fast(list(r.miss_credits)) if r.missed else None))
    return commits, observations, events


def _write(conn: sqlite3.Connection, scope: str, rows: tuple[list, list, list],
           delta: RowChanges) -> None:
    """Insert record rows and apply a state delta, inside the caller's transaction."""
    commits, observations, events = rows
    conn.executemany(_INSERT_COMMIT, commits)
    if observations:
        conn.executemany(_INSERT_OBS, observations)
    if events:
        conn.executemany(_INSERT_EVENT, events)
    if delta.objects:
        conn.executemany(_UPSERT_OBJECT, [_object_row(scope, o) for o in delta.objects])
    if delta.removed_objects:
        conn.executemany("DELETE FROM objects WHERE id = ?",
                         [(i,) for i in delta.removed_objects])
    if delta.tombstones:
        conn.executemany(
            "INSERT OR REPLACE INTO tombstones (id, scope, forgotten_at, data) VALUES (?, ?, ?, ?)",
            [(i, scope, tomb.forgotten_at, _dumps(tomb.to_dict()))
             for i, tomb in delta.tombstones.items()],
        )
    if delta.removed_tombstones:
        conn.executemany("DELETE FROM tombstones WHERE id = ?",
                         [(i,) for i in delta.removed_tombstones])
    if delta.rooms is not None:
        conn.execute("INSERT OR REPLACE INTO scene (scope, rooms) VALUES (?, ?)",
                     (scope, _dumps(delta.rooms)))
    for oid, entry in delta.prior.items():
        if entry is None:
            conn.execute("DELETE FROM prior_map WHERE scope = ? AND id = ?", (scope, oid))
        else:
            conn.execute("INSERT OR REPLACE INTO prior_map (scope, id, data) VALUES (?, ?, ?)",
                         (scope, oid, _dumps(entry)))
    if delta.deltas:
        conn.executemany(
            "INSERT OR REPLACE INTO deltas (scope, id, object_id, status, data) "
            "VALUES (?, ?, ?, ?, ?)",
            [(scope, did, d["object"], d["status"], _dumps(d)) for did, d in delta.deltas.items()])
    if delta.keyframes:
        conn.executemany(
            "INSERT OR REPLACE INTO keyframes (scope, object_id, data) VALUES (?, ?, ?)",
            [(scope, oid, _dumps(kept)) for oid, kept in delta.keyframes.items()])
    if delta.rejections:
        conn.executemany(
            "INSERT OR REPLACE INTO rejection_keys (scope, key, reason, count, first_seq, "
            "last_seq, last_t) VALUES (?, ?, ?, ?, ?, ?, ?)",
            [(scope, key, r.reason, r.count, r.first_seq, r.last_seq, r.last_t)
             for key, r in delta.rejections.items()],
        )


# -- row codecs ------------------------------------------------------------------------------
def _observation_row(scope: str, o: Observation) -> tuple[Any, ...]:
    return (
        o.seq, o.commit, scope, o.t, o.index, o.object_id, o.label, o.confidence,
        *o.center, *o.size, o.weight, o.tier, o.rejected, o.track_id,
        None if o.orientation is None else _dumps(list(o.orientation)),
        None if o.feature is None else o.feature.astype(np.float32).tobytes(),
        o.key,
    )


def _observation_from_row(row: Sequence[Any]) -> Observation:
    feature = None
    if row[19] is not None:
        feature = np.frombuffer(row[19], dtype=np.float32)
    return Observation(
        seq=row[0], commit=row[1], t=row[3], index=row[4], object_id=row[5], label=row[6],
        confidence=row[7], center=(row[8], row[9], row[10]), size=(row[11], row[12], row[13]),
        weight=row[14], tier=row[15], rejected=row[16], track_id=row[17],
        orientation=None if row[18] is None else tuple(json.loads(row[18])),
        feature=feature, key=row[20],
    )


def _event_from_row(row: Sequence[Any]) -> Event:
    return Event(seq=row[0], commit=row[1], t=row[3], kind=EventKind(row[4]), object_id=row[5],
                 label=row[6], data=json.loads(row[7]))


def _commit_from_row(row: Sequence[Any]) -> Commit:
    missed = () if row[9] is None else tuple(json.loads(row[9]))
    if row[12] is not None:
        credits = tuple(json.loads(row[12]))
    else:  # a version-2 commit: one credit for every missed object
        credits = (0.0 if row[10] is None else row[10],) * len(missed)
    return Commit(id=row[0], kind=row[2], t=row[3], recorded_at=row[4], actor=row[5],
                  reason=row[6], n_detections=row[7],
                  camera=None if row[8] is None else json.loads(row[8]),
                  missed=missed, miss_credits=credits,
                  together=() if row[11] is None else tuple(
                      (a, b) for a, b in json.loads(row[11])))


_OBJECT_COLUMNS = (
    "id, scope, label, cx, cy, cz, sx, sy, sz, px, py, pz, first_seen, last_seen, "
    "n_detections, promoted, lost, lost_at, track_id, orientation, label_mass, feature, "
    "n_features, pinned_label, attributes, n_missed, place_sx, place_sy, place_sz, place_t, "
    "seen_camera, absence_s, held, together, merged_from, source, label_by, belief"
)


_UPSERT_OBJECT = (
    f"INSERT INTO objects ({_OBJECT_COLUMNS}) VALUES ({', '.join('?' * 38)}) "
    "ON CONFLICT (id) DO UPDATE SET "
    + ", ".join(f"{c} = excluded.{c}" for c in _OBJECT_COLUMNS.split(", ")[1:])
)


def _object_row(scope: str, o: ObjectState) -> tuple[Any, ...]:
    return (
        o.id, scope, o.label, *o.center, *o.size, *o.place, o.first_seen, o.last_seen,
        o.n_detections, o.promoted, o.lost, o.lost_at, o.track_id,
        None if o.orientation is None else _dumps(list(o.orientation)),
        _encode_fast(o.label_mass),
        None if o.feature is None else o.feature.astype(np.float64).tobytes(),
        o.n_features, o.pinned_label, _dumps(o.attributes), o.n_missed, *o.place_size,
        o.place_t, o.seen_camera, o.absence_s,
        _encode_fast(o.held) if o.held else None,
        _encode_fast(sorted(o.together)) if o.together else None,
        _encode_fast(o.merged_from) if o.merged_from else None,
        o.source, o.label_by, _belief_json(o),
    )


def _belief_json(o: ObjectState) -> str | None:
    if not (o.n_looked_seen or o.n_looked_missed or o.pos_info):
        return None
    return _dumps({"info": o.pos_info, "looked": o.n_looked_seen,
                   "unseen": o.n_looked_missed})


def _object_from_row(row: Sequence[Any]) -> ObjectState:
    return ObjectState(
        id=row[0], label=row[2], center=(row[3], row[4], row[5]), size=(row[6], row[7], row[8]),
        place=(row[9], row[10], row[11]), first_seen=row[12], last_seen=row[13],
        n_detections=row[14], promoted=bool(row[15]), lost=bool(row[16]), lost_at=row[17],
        track_id=row[18], orientation=None if row[19] is None else tuple(json.loads(row[19])),
        label_mass=json.loads(row[20]),
        feature=None if row[21] is None else np.frombuffer(row[21], dtype=np.float64).copy(),
        n_features=row[22], pinned_label=row[23], attributes=json.loads(row[24]),
        n_missed=row[25], place_size=(row[26], row[27], row[28]), place_t=row[29],
        seen_camera=bool(row[30]), absence_s=row[31],
        held=[] if row[32] is None else [tuple(h) for h in json.loads(row[32])],
        together=set() if row[33] is None else set(json.loads(row[33])),
        merged_from=[] if row[34] is None else json.loads(row[34]),
        source=row[35], label_by=row[36],
        **({} if row[37] is None else _belief_fields(json.loads(row[37]))),
    )


def _belief_fields(belief: dict[str, Any]) -> dict[str, Any]:
    return {"n_looked_seen": belief["looked"], "n_looked_missed": belief["unseen"],
            "pos_info": belief["info"]}
