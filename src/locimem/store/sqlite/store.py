"""The embedded backend: one SQLite file in WAL mode, one writer at a time.

``append`` writes a commit's records and the objects they changed in one transaction, so a
scan is either wholly on disk or not at all. Durable by default (``synchronous=FULL``: a scan
that returned survives power loss); ``durable=False`` keeps crash safety against a killed process
but may lose the last commits on power loss, and is several times faster on slow disks.
"""

from __future__ import annotations

import contextlib
import functools
import json
import os
import sqlite3
import time
import zlib
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from pathlib import Path
from typing import Any, TypeVar

from locimem.errors import (
    CorruptStore,
    InvalidInput,
    LocimemError,
    NotAStore,
    NotFound,
    ReadOnly,
    SchemaVersionError,
)
from locimem.model import (
    ObjectState,
    Observation,
    Record,
    RejectionState,
    TombstoneState,
)
from locimem.store.base import RowChanges, checked_late_s, meta_late_s
from locimem.store.sql import (
    LOAD_BATCH,
    Row,
    SqlReads,
)
from locimem.store.sqlite import backup as _backup
from locimem.store.sqlite import bulk, files
from locimem.store.sqlite import checkpointer as _checkpointer
from locimem.store.sqlite.codec import (
    COMMIT_COLUMNS,
    EVENT_COLUMNS,
    MAX_ID,
    OBJECT_COLUMNS,
    OBSERVATION_COLUMNS,
    UPSERT_OBJECT,
    encode_checkpoint,
    object_row,
    objects_from_rows,
    observation_from_row,
    record_rows,
    replay_order,
)
from locimem.store.sqlite.open_check import check_on_open, check_open_mode, corrupt
from locimem.store.sqlite.rows import KEYS, write_rows
from locimem.store.sqlite.schema import (
    FORMAT,
    MIGRATIONS,
    REBUILD_CACHE,
    SCHEMA_VERSION,
    store_version,
)

__all__ = ["MEMORY", "SQLiteStore", "log_queries"]

MEMORY = ":memory:"

# -- reading a damaged record ------------------------------------------------------------------
# What decoding a damaged row raises (a JSON column that is not JSON, text that is not UTF-8,
# an unknown event kind, a missing key, a value of the wrong type, a checkpoint that does not
# inflate, a page SQLite cannot read, SQL's json_extract over damaged text) ...
_UNREADABLE = (sqlite3.DatabaseError, KeyError, ValueError, TypeError, IndexError,
               AttributeError, OverflowError, zlib.error, RecursionError)
# ... except what is not the file's fault: a busy or locked database, a full disk, an I/O or
# permission error, an interrupt (as SQLite said them), and misuse of the connection
_NOT_THE_FILE = ("SQLITE_BUSY", "SQLITE_LOCKED", "SQLITE_FULL", "SQLITE_IOERR",
                 "SQLITE_READONLY", "SQLITE_INTERRUPT", "SQLITE_NOMEM", "SQLITE_CANTOPEN",
                 "SQLITE_PERM", "SQLITE_AUTH", "SQLITE_PROTOCOL")
_F = TypeVar("_F", bound=Callable[..., Any])
_T = TypeVar("_T")


def _damaged(store: SQLiteStore, exc: BaseException, scope: object = None
             ) -> CorruptStore | None:
    """The CorruptStore an error met while reading the record (of ``scope``, if one was
    asked for) stands for (None: not damage — a locimem error, a closed store, a busy or
    full database, a misused connection)."""
    if isinstance(exc, LocimemError) or store.conn is None:
        return None
    if isinstance(exc, (sqlite3.ProgrammingError, sqlite3.InterfaceError)):
        return None
    if isinstance(exc, sqlite3.DatabaseError) and str(
            getattr(exc, "sqlite_errorname", None) or "").startswith(_NOT_THE_FILE):
        return None
    of = f" of scope {scope!r}" if isinstance(scope, str) else ""
    return corrupt(store.path, f"a record{of} cannot be read ({type(exc).__name__}: "
                               f"{str(exc)[:200]})")


def _reads(method: _F) -> _F:
    """Mark a method that reads the record: damage met there (see :data:`_UNREADABLE`) is a
    :class:`~locimem.errors.CorruptStore` naming ``locimem validate``, wherever in the file
    it sits and whoever asked (opening, a rebuild, a query) — one boundary, not a ``try`` at
    every caller. An iterator it returns is guarded the same way while it is consumed."""
    @functools.wraps(method)
    def guarded(self: SQLiteStore, *args: Any, **kwargs: Any) -> Any:
        try:
            out = method(self, *args, **kwargs)
        except _UNREADABLE as exc:
            error = _damaged(self, exc, args[0] if args else kwargs.get("scope"))
            if error is None:
                raise
            raise error from exc
        if isinstance(out, Iterator):
            return _guarded_iter(self, out, args[0] if args else kwargs.get("scope"))
        return out
    return guarded  # type: ignore[return-value]


def _guarded_iter(store: SQLiteStore, records: Iterator[Any], scope: object
                  ) -> Iterator[Any]:
    try:
        yield from records  # delegated in C: no cost a record
    except _UNREADABLE as exc:
        error = _damaged(store, exc, scope)
        if error is None:
            raise
        raise error from exc


class SQLiteStore(SqlReads):
    """A locimem store in one SQLite file (or ``":memory:"`` for tests and scratch work).

    Implements :class:`~locimem.store.base.Store` (the reads SQL answers alike on both
    backends come from :class:`~locimem.store.sql.SqlReads`); besides it, ``conn`` (the connection),
    :meth:`atomic` (one write transaction on it), ``durable`` and ``backup_path`` (where the
    pre-migration copy went, if this open migrated the file) are SQLite's own.
    """

    late_s: float
    """How far a scan may trail another writer's (see the protocol): the file's ``late_s``
    (meta), 0 unless raised — one writer at a time, so by default a scan never trails."""
    _p = "?"
    _data_int = "json_extract(data, '$.{key}')"

    def __init__(self, path: str | os.PathLike[str], *, read_only: bool = False,
                 durable: bool = True, check: str = "quick",
                 late_s: float | None = None) -> None:
        check = check_open_mode(check)  # see locimem.store.sqlite.open_check
        self.path = str(path)
        self.read_only = read_only
        self.durable = durable
        self._lock_file: Any = None
        self._checkpointer: _checkpointer.Checkpointer | None = None
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
        self._identity_lock: int | None = None
        try:
            if not in_memory and not read_only:  # locks first: no second writer even looks
                self._take_writer_lock()
                if exists:
                    self._take_identity_lock()
            if exists:  # look before touching: a file that is not a store is left byte-identical
                probe = self._connect(read_only=True)
                try:
                    version = self._check_format(probe)
                    check_on_open(probe, self.path, check, version)
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
            if not in_memory and not read_only:  # the log is copied back beside the writer
                self.conn.execute("PRAGMA wal_autocheckpoint=0")
                page = self.conn.execute("PRAGMA page_size").fetchone()[0]
                self._checkpointer = _checkpointer.Checkpointer(self.path, int(page),
                                                                _checkpointer.WAL_PAGES)
            self.late_s = meta_late_s(self.meta())
            if late_s is not None and late_s != self.late_s:
                if read_only:
                    raise ReadOnly(f"late_s={late_s} asks to change the store's late_s="
                                   f"{self.late_s}: open it writable to raise it")
                self.raise_late_s(late_s)
        except OSError as exc:  # a path the lock or the file cannot be made at (/proc/x.loci)
            self.close()
            what = "open" if exists else "create"
            raise InvalidInput(f"cannot {what} a store at {self.path!r}: {exc.strerror or exc}"
                               f" ({exc.filename or self.path}); choose a path in a directory "
                               "you can write to") from None
        except BaseException:
            self.close()
            raise

    # -- a cache to replay (after a migration that cannot compute it in SQL) -----------------
    @_reads
    def cache_stale(self) -> bool:
        """Whether a migration left the materialised objects to be replayed from the log
        (see :func:`locimem.tracker.load.replay_stale_cache`)."""
        row = self.conn.execute("SELECT value FROM meta WHERE key = ?",
                                (REBUILD_CACHE,)).fetchone()
        return row is not None

    def rewrite_cache(self, objects: Mapping[str, Iterable[ObjectState]]) -> None:
        """Upsert each scope's replayed objects (scope -> objects) and clear
        :meth:`cache_stale`, in one transaction."""
        rows = [object_row(scope, o) for scope, states in objects.items() for o in states]
        with self.atomic() as conn:
            conn.executemany(UPSERT_OBJECT, rows)
            conn.execute("DELETE FROM meta WHERE key = ?", (REBUILD_CACHE,))

    # -- opening ------------------------------------------------------------------------------
    def _take_writer_lock(self) -> None:
        """The single-writer lock, ``STORE-writer`` beside the real file (see
        :mod:`locimem.store.sqlite.files`), with this process's pid in it."""
        self._lock_file = files.take_writer_lock(self.path, lambda holder: (
            f"{self.path!r} is already open for writing (pid {holder}); close that memory, "
            "or open this one with read_only=True"))
        files.stamp_pid(self._lock_file)

    def _take_identity_lock(self) -> None:
        """A second lock keyed by the file's identity (device and inode): hard links meet it."""
        self._identity_lock = files.take_identity_lock(self.path, (
            f"{self.path!r} is already open for writing under another name (a hard link "
            "to the same file); close that memory, or open this one with read_only=True"))

    def _release_writer_lock(self) -> None:
        files.release_identity_lock(getattr(self, "_identity_lock", None))
        self._identity_lock = None
        files.release_writer_lock(self._lock_file)
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
        self.backup_path = _backup.copy_before_migration(self.conn, self.path, version)
        for name, produces, migrate in MIGRATIONS:
            if produces <= version:
                continue
            with self.atomic():
                migrate(self.conn)
                self._record_migration(name, produces)

    def close(self) -> None:
        """Close the connection and release the locks. Safe to call twice."""
        checkpointer = getattr(self, "_checkpointer", None)
        if checkpointer is not None:  # first: the writer's close is then the last one
            checkpointer.close()
            self._checkpointer = None
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
        if self._checkpointer is not None:
            self._checkpointer.committed(conn)

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
        rows = record_rows(scope, records)
        with self.atomic() as conn:
            write_rows(conn, scope, rows, delta)

    def compact(self, scope: str, *, checkpoint_commit: int, checkpoint_t: float,
                state: dict[str, Any], delete_seqs: Sequence[int],
                records: Sequence[Record]) -> None:
        """In one transaction: store the state as it was after ``checkpoint_commit``, delete
        the thinned observations (all at or before it) and append the maintenance records."""
        rows = record_rows(scope, records)
        blob = encode_checkpoint(state)
        with self.atomic() as conn:
            conn.execute(
                "INSERT OR REPLACE INTO checkpoints (scope, commit_id, t, state) "
                "VALUES (?, ?, ?, ?)", (scope, checkpoint_commit, checkpoint_t, blob))
            conn.executemany("DELETE FROM observations WHERE seq = ? AND scope = ?",
                             [(seq, scope) for seq in delete_seqs])
            write_rows(conn, scope, rows, RowChanges())

    def size_bytes(self) -> int:
        """The file's bytes and its write-ahead log's (0 for ``:memory:``)."""
        if self.path == MEMORY:
            return 0
        return sum(os.path.getsize(p) for p in (self.path, self.path + "-wal")
                   if os.path.exists(p))

    def reclaim(self) -> None:
        """``VACUUM`` (the file is rewritten with live pages only, so it shrinks by what
        deleted rows left free), then a WAL checkpoint that truncates the log. Readers in
        other processes may hold it up (busy timeout)."""
        if self.read_only:
            raise ReadOnly("this store was opened read-only")
        self.conn.execute("VACUUM")
        self.conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")

    def backup(self, target: str | os.PathLike[str]) -> None:
        """Write a consistent copy of the whole store (every scope, one committed state) to a
        new store file at ``target`` (absent or empty): ``VACUUM INTO``, live pages only. Not
        inside a transaction."""
        _backup.vacuum_into(self.conn, target)

    def column_types(self, table: str) -> dict[str, tuple[str, bool]]:
        """``table``'s columns: name -> (declared SQLite type, NOT NULL)."""
        return bulk.column_types(self.conn, table)

    def bulk_load(self, tables: Iterable[tuple[str, Sequence[str], Iterable[Sequence[Any]]]],
                  *, meta: Mapping[str, str] | None = None) -> None:
        """Insert rows as stored — each table as (name, columns, rows), the rows in this
        backend's encoding (:mod:`locimem.store.sqlite.codec`) and consumed lazily — and the
        ``meta`` entries, in one transaction; nothing is derived or checked beyond the schema.
        A row the schema refuses raises :class:`~locimem.store.base.RowsRejected` (nothing
        written)."""
        with self.atomic() as conn:
            bulk.insert_tables(conn, tables, meta or {})

    @contextlib.contextmanager
    def write_turn(self, scope: str) -> Iterator[None]:
        """A writer's turn at ``scope``: nothing to take — the file has one writer (the
        writer lock), so no other commit can land between catching up and appending."""
        if self.read_only:
            raise ReadOnly("this store was opened read-only")
        yield

    @_reads
    def rows(self, table: str, scope: str, columns: Sequence[str]
             ) -> Iterator[tuple[Any, ...]]:
        """The rows of ``table`` in ``scope`` (``columns``), as stored, by key."""
        key = KEYS.get(table)
        if key is None:
            raise InvalidInput(f"unknown table {table!r}")
        yield from self.conn.execute(
            f"SELECT {', '.join(columns)} FROM {table} WHERE scope = ? ORDER BY {key}",
            (scope,))

    @_reads
    def meta(self) -> dict[str, str]:
        return dict(self.conn.execute("SELECT key, value FROM meta").fetchall())

    @_reads
    def counters(self, scope: str | None = None) -> tuple[int, int, int]:
        """(next object id, next record seq, next commit id), across every scope in the file
        (whatever ``scope``): ids never collide between scopes sharing a file."""
        one = self.conn.execute
        # the largest id an APPEARED event gave, scope by scope: each a probe of events_object
        # from its top, not a pass over every event
        max_oid = max((one("SELECT max(object_id) FROM events WHERE scope = ? AND "
                           "kind = 'APPEARED'", (held,)).fetchone()[0] or 0
                       for held in _distinct_scopes(self.conn, "events")), default=0)
        max_obs = one("SELECT max(seq) FROM observations").fetchone()[0]
        max_ev = one("SELECT max(seq) FROM events").fetchone()[0]
        max_commit = one("SELECT max(id) FROM commits").fetchone()[0]
        return ((max_oid or 0) + 1, max(max_obs or 0, max_ev or 0) + 1, (max_commit or 0) + 1)

    def raise_late_s(self, late_s: float) -> None:
        value = checked_late_s(late_s, self.late_s)
        with self.atomic() as conn:
            conn.execute("INSERT OR REPLACE INTO meta (key, value) VALUES ('late_s', ?)",
                         (repr(value),))
        self.late_s = value

    @_reads
    def load_objects(self, scope: str) -> list[ObjectState]:
        """The materialised objects of ``scope`` (the cache written with each commit), read
        :data:`~locimem.store.sql.LOAD_BATCH` rows at a time."""
        cursor = self.conn.execute(
            f"SELECT {OBJECT_COLUMNS} FROM objects WHERE scope = ? ORDER BY id", (scope,))
        out: list[ObjectState] = []
        while batch := cursor.fetchmany(LOAD_BATCH):
            out += objects_from_rows(batch)
        return out

    @_reads
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

    @_reads
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

    @_reads
    def load_tombstones(self, scope: str) -> dict[int, TombstoneState]:
        rows = self.conn.execute(
            "SELECT id, data FROM tombstones WHERE scope = ? ORDER BY id", (scope,))
        return {oid: TombstoneState.from_dict(json.loads(data)) for oid, data in rows}

    @_reads
    def load_rooms(self, scope: str) -> dict[str, Any] | None:
        row = self.conn.execute("SELECT rooms FROM scene WHERE scope = ?", (scope,)).fetchone()
        return None if row is None else json.loads(row[0])

    @_reads
    def load_json_rows(self, table: str, scope: str) -> dict[int, Any]:
        """The materialised ``prior_map``, ``deltas`` or ``keyframes`` of ``scope``: id -> data."""
        key = {"prior_map": "id", "deltas": "id", "keyframes": "object_id"}[table]
        rows = self.conn.execute(
            f"SELECT {key}, data FROM {table} WHERE scope = ? ORDER BY {key}", (scope,))
        return {k: json.loads(data) for k, data in rows}

    @_reads
    def load_rejections(self, scope: str) -> dict[str, RejectionState]:
        rows = self.conn.execute(
            "SELECT key, reason, count, first_seq, last_seq, last_t FROM rejection_keys "
            "WHERE scope = ? ORDER BY key", (scope,))
        return {row[0]: RejectionState(*row[1:]) for row in rows}

    @_reads
    def iter_log(self, scope: str, *, after_commit: int = 0,
                 until_commit: int | None = None) -> Iterator[Record]:
        """Every record of ``scope`` in replay order (each commit, then its records by seq),
        from after commit ``after_commit`` up to and including ``until_commit``."""
        conn = self.conn
        return replay_order(*(conn.execute(sql, bound) for sql, bound in
                              log_queries(conn, scope, after_commit, until_commit)))

    # -- reading the record -------------------------------------------------------------------
    @_reads
    def _read(self, scope: str | None, query: str, args: Sequence[Any],
              decode: Callable[[Row], _T]) -> list[_T]:
        return [decode(row) for row in self.conn.execute(query, args)]

    def _observation(self, row: Row) -> Observation:
        return observation_from_row(row)

    @_reads
    def scopes(self) -> list[str]:
        # the distinct scopes in order, one index probe each (a skip scan of commits_scope),
        # not a walk over every commit
        return _distinct_scopes(self.conn, "commits")


def _distinct_scopes(conn: sqlite3.Connection, table: str) -> list[str]:
    """The distinct scopes of ``table`` (``commits`` or ``events``, each indexed by scope
    first), in order: one index probe a scope (a skip scan), not a walk over every row."""
    return [r[0] for r in conn.execute(
        f"WITH RECURSIVE s(scope) AS (SELECT min(scope) FROM {table} UNION ALL "
        f"SELECT (SELECT min(scope) FROM {table} WHERE scope > s.scope) FROM s "
        "WHERE s.scope IS NOT NULL) SELECT scope FROM s WHERE scope IS NOT NULL")]


def log_queries(conn: sqlite3.Connection, scope: str, after_commit: int = 0,
                until_commit: int | None = None) -> list[tuple[str, tuple[Any, ...]]]:
    """The (statement, parameters) that read the commits, observations and events of
    ``scope`` after ``after_commit`` up to ``until_commit``, each in replay order.

    The observations and events are read by the plan that suits how much of the log is
    asked for: most of it (a rebuild from the start) by one pass over the table in ``seq``
    order (its rowid: no sort), filtering as it goes; a tail (catching up, a replay from a
    late checkpoint) by the ``commit_id`` index, sorted. The planner, left alone, took the
    ``scope`` index for both — a lookup and a sort of every row of the scope, however few
    were asked for. (``+column`` keeps a column out of the planner's choice of index; the
    rows and their order are the same whichever plan reads them.)"""
    until = until_commit if until_commit is not None else MAX_ID
    bound = (scope, after_commit, until)
    last = conn.execute("SELECT max(id) FROM commits").fetchone()[0] or 0
    most = 2 * (min(until, last) - after_commit) >= last
    commit = "+commit_id" if most else "commit_id"
    return [
        (f"SELECT {COMMIT_COLUMNS} FROM commits WHERE scope = ? AND id > ? AND id <= ? "
         "ORDER BY id", bound),
        (f"SELECT {OBSERVATION_COLUMNS} FROM observations WHERE +scope = ? "
         f"AND {commit} > ? AND {commit} <= ? ORDER BY seq", bound),
        (f"SELECT {EVENT_COLUMNS} FROM events WHERE +scope = ? "
         f"AND {commit} > ? AND {commit} <= ? ORDER BY seq", bound),
    ]
