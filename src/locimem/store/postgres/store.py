"""The server backend: one PostgreSQL schema, many writers, one write lock per scope.

Every write is one transaction that first takes the scope's *advisory transaction lock*
(``pg_advisory_xact_lock``, keyed by the schema and the scope; released by the server at
commit, rollback or a dropped connection), so writers of one scope take turns and writers of
different scopes run in parallel. Ids are unique per scope (every key includes the scope).
A memory holds the lock for a whole scan — catch up, decide, append, commit — through
:meth:`PostgresStore.write_turn`.

``durable=False`` sets ``synchronous_commit = off`` for this connection (a commit may be lost
on a server crash, never half-written).
"""

from __future__ import annotations

import contextlib
import itertools
import json
import os
import time
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from typing import Any, TypeVar

import psycopg
from psycopg import sql
from psycopg.pq import TransactionStatus

from locimem.errors import (
    ConnectionLost,
    InvalidInput,
    NotAStore,
    NotFound,
    ReadOnly,
    SchemaVersionError,
    WriteConflict,
)
from locimem.model import (
    ObjectState,
    Observation,
    Record,
    RejectionState,
    TombstoneState,
)
from locimem.store.base import (
    RowChanges,
    RowsRejected,
    checked_late_s,
    is_postgres_url,
    meta_late_s,
    redacted,
)
from locimem.store.postgres.codec import from_pg, to_pg, to_pg_converter
from locimem.store.postgres.rows import (
    KEYS,
    OBJ,
    UPSERT_OBJECT,
    object_from_pg,
    observation_from_pg,
    set_meta,
    stored_columns,
    write_rows,
)
from locimem.store.postgres.schema import (
    EXTENSIONS,
    FORMAT,
    MIGRATIONS,
    SCHEMA_VERSION,
    TABLES,
)
from locimem.store.postgres.url import DEFAULT_SCHEMA, parse_url, url_late_s, with_schema
from locimem.store.sql import (
    LOAD_BATCH,
    Row,
    SqlReads,
)
from locimem.store.sqlite.codec import (
    COMMIT_COLUMNS,
    EVENT_COLUMNS,
    MAX_ID,
    OBJECT_COLUMNS,
    OBSERVATION_COLUMNS,
    encode_checkpoint,
    object_row,
    objects_from_rows,
    record_rows,
    replay_order,
)

__all__ = ["DEFAULT_SCHEMA", "LATE_S", "PostgresStore", "is_postgres_url", "parse_url", "redacted",
           "url_late_s", "with_schema"]

LATE_S = 1.0
"""A new schema's late-scan tolerance (seconds): robots' clocks and delivery disagree a little."""
_REBUILD_CACHE = "rebuild_cache"
_SCOPED = frozenset(TABLES)
_T = TypeVar("_T")
LOG_PAGE = 2000  # rows a server-side cursor (iter_log, load_objects) fetches a trip
_CURSORS = itertools.count(1)  # names of server-side cursors, unique per process


class PostgresStore(SqlReads):
    """A locimem store in one schema of a PostgreSQL database.

    Implements :class:`~locimem.store.base.Store` (the reads SQL answers alike on both
    backends come from :class:`~locimem.store.sql.SqlReads`). Besides it: ``schema``,
    :meth:`rows` and :meth:`objects_in_box` (a spatial query served by the GiST index on the
    boxes).
    """

    late_s: float
    """How far (seconds) a scan may trail the latest commit another writer landed in its
    scope: the store's ``late_s`` (meta), set when it was created (default :data:`LATE_S`;
    ``late_s=`` or the URL's ``?late_s=`` choose another, and raise an existing store's) so
    every writer of the fleet — and ``validate`` — agrees on it."""
    _p = "%s"
    _data_int = "(data::jsonb ->> '{key}')::bigint"

    def __init__(self, url: str, *, read_only: bool = False, durable: bool = True,
                 late_s: float | None = None) -> None:
        self._conninfo, self.schema = parse_url(url)
        self.url = url
        self.path = redacted(url)
        self.read_only = read_only
        self.durable = durable
        self._conn: psycopg.Connection[Any] | None = None
        self._closed = False
        try:
            conn = self._connection()
            wanted = late_s if late_s is not None else url_late_s(url)
            if read_only:
                self._check_schema(conn)
            else:
                self._create_or_check(conn, LATE_S if wanted is None else
                                      checked_late_s(wanted, 0.0))
            self.late_s = meta_late_s(self.meta())
            if wanted is not None and wanted != self.late_s:
                if read_only:
                    raise ReadOnly(f"late_s={wanted} asks to change the store's late_s="
                                   f"{self.late_s}: open it writable to raise it")
                self.raise_late_s(wanted)
        except BaseException:
            self.close()
            raise

    # -- connecting ---------------------------------------------------------------------------
    def _connection(self) -> psycopg.Connection[Any]:
        """The open connection, (re)connecting if there is none (a dropped one is closed)."""
        if self._closed:
            raise ConnectionLost(f"{self.path!r} is closed")
        conn = self._conn
        if conn is not None and not conn.closed:
            return conn
        try:
            conn = psycopg.connect(self._conninfo, autocommit=True)
            conn.execute(sql.SQL("SET search_path TO {}, public").format(
                sql.Identifier(self.schema)))
            if not self.durable:
                conn.execute("SET synchronous_commit TO off")
            if self.read_only:
                conn.execute("SET default_transaction_read_only TO on")
        except psycopg.OperationalError as exc:
            raise ConnectionLost(f"cannot connect to {self.path!r}: {exc}") from None
        self._conn = conn
        return conn

    def _lost(self, exc: BaseException) -> ConnectionLost:
        """Forget a connection that dropped; the next call reconnects."""
        conn, self._conn = self._conn, None
        if conn is not None:
            with contextlib.suppress(Exception):
                conn.close()
        return ConnectionLost(f"the connection to {self.path!r} was lost "
                              f"({str(exc).strip() or type(exc).__name__}); nothing of the "
                              "interrupted call was written")

    def _execute(self, query: Any, args: Sequence[Any] | None = None) -> psycopg.Cursor[Any]:
        try:
            return self._connection().execute(query, args)
        except psycopg.OperationalError as exc:
            raise self._lost(exc) from None

    def _aggregate(self, query: Any, args: Sequence[Any] | None = None) -> Any:
        """The one row of an aggregate query (``SELECT max(…)``, ``count(*)``): always there."""
        row = self._execute(query, args).fetchone()
        assert row is not None, "an aggregate query returns one row"
        return row

    def _in_transaction(self) -> bool:
        conn = self._conn
        return conn is not None and not conn.closed and \
            conn.info.transaction_status != TransactionStatus.IDLE

    def _check_schema(self, conn: psycopg.Connection[Any]) -> int:
        found = conn.execute(
            "SELECT 1 FROM information_schema.tables WHERE table_schema = %s AND "
            "table_name = 'meta'", (self.schema,)).fetchone()
        if found is None:
            exists = conn.execute("SELECT 1 FROM information_schema.schemata WHERE "
                                  "schema_name = %s", (self.schema,)).fetchone()
            if exists is None:
                raise NotFound(f"no store at {self.path!r} (schema {self.schema!r} does not "
                               "exist)")
            tables = conn.execute("SELECT 1 FROM information_schema.tables WHERE "
                                  "table_schema = %s LIMIT 1", (self.schema,)).fetchone()
            if tables is None:
                raise NotFound(f"no store at {self.path!r} (schema {self.schema!r} is empty)")
            raise NotAStore(f"schema {self.schema!r} of {self.path!r} is not a locimem store")
        meta = dict(conn.execute("SELECT key, value FROM meta").fetchall())
        if meta.get("format") != FORMAT:
            raise NotAStore(f"schema {self.schema!r} of {self.path!r} is not a locimem store")
        try:
            version = int(meta.get("schema_version", ""))
        except ValueError:
            version = 0
        if version < 1:
            raise NotAStore(f"schema {self.schema!r} of {self.path!r} has an unreadable schema "
                            f"version {meta.get('schema_version')!r}")
        if version > SCHEMA_VERSION:
            raise SchemaVersionError(
                f"{self.path!r} (schema {self.schema!r}) has schema version {version}, newer "
                f"than this locimem understands ({SCHEMA_VERSION}); upgrade locimem")
        return version

    def _create_or_check(self, conn: psycopg.Connection[Any], late_s: float) -> None:
        """Create the schema (extensions, tables, ``meta``) if it is not there, or bring an
        older one up to date — one transaction per step, under a lock that makes two writers
        opening a new store at once create it once."""
        try:
            with conn.transaction():
                conn.execute("SELECT pg_advisory_xact_lock(hashtext('locimem:create'), "
                             "hashtext(%s))", (self.schema,))
                for name in EXTENSIONS:
                    conn.execute(sql.SQL("CREATE EXTENSION IF NOT EXISTS {} SCHEMA public")
                                 .format(sql.Identifier(name)))
                conn.execute(sql.SQL("CREATE SCHEMA IF NOT EXISTS {}").format(
                    sql.Identifier(self.schema)))
                has_meta = conn.execute(
                    "SELECT 1 FROM information_schema.tables WHERE table_schema = %s AND "
                    "table_name = 'meta'", (self.schema,)).fetchone()
                if has_meta is None:
                    tables = conn.execute("SELECT 1 FROM information_schema.tables WHERE "
                                          "table_schema = %s LIMIT 1", (self.schema,)).fetchone()
                    if tables is not None:
                        raise NotAStore(f"schema {self.schema!r} of {self.path!r} holds tables "
                                        "but is not a locimem store")
                    version = 0
                else:
                    version = self._check_schema(conn)
                for name, produces, migrate in MIGRATIONS:
                    if produces > version:
                        migrate(conn)
                        conn.execute("INSERT INTO migrations (name, version, applied_at) "
                                     "VALUES (%s, %s, %s)", (name, produces, time.time()))
                        set_meta(conn, "schema_version", str(produces))
                if version == 0:
                    set_meta(conn, "format", FORMAT)
                    set_meta(conn, "created_at", repr(time.time()))
                    set_meta(conn, "late_s", repr(float(late_s)))
        except psycopg.OperationalError as exc:
            raise self._lost(exc) from None

    def close(self) -> None:
        """Close the connection (the server releases any lock it held). Safe to call twice."""
        self._closed = True
        conn, self._conn = self._conn, None
        if conn is not None:
            with contextlib.suppress(Exception):
                conn.close()

    # -- transactions ---------------------------------------------------------------------------
    @contextlib.contextmanager
    def _write(self, scope: str | None) -> Iterator[psycopg.Connection[Any]]:
        """One write transaction holding ``scope``'s write lock (joined, when a write turn or
        a read is already open on this connection)."""
        if self.read_only:
            raise ReadOnly("this store was opened read-only")
        if self._in_transaction():
            conn = self._connection()
            if scope is not None:
                self._lock(conn, scope)  # taken already in a turn: a no-op
            yield conn
            return
        conn = self._connection()
        try:
            with conn.transaction():
                if scope is not None:
                    self._lock(conn, scope)
                yield conn
        except psycopg.OperationalError as exc:
            raise self._lost(exc) from None
        except psycopg.errors.UniqueViolation as exc:
            raise WriteConflict(
                f"another writer committed to {self.path!r} with the same ids "
                f"({exc.diag.message_detail or exc}); nothing was written") from None
        except psycopg.DataError as exc:  # a value the server cannot hold (the boundary
            # checks keep them out: see locimem.check)
            raise InvalidInput(f"{self.path!r} refused a value of this write "
                               f"({str(exc).strip().splitlines()[0]}); nothing was "
                               "written") from None

    def _lock(self, conn: psycopg.Connection[Any], scope: str) -> None:
        conn.execute("SELECT pg_advisory_xact_lock(hashtext(%s), hashtext(%s))",
                     (self.schema, scope))

    @contextlib.contextmanager
    def write_turn(self, scope: str) -> Iterator[None]:
        """Hold ``scope``'s write lock for one transaction: everything written inside commits
        together when the block ends (rolled back if it raises). Another writer of the scope
        waits at its own turn; readers are never blocked. Reentrant (an inner turn joins)."""
        with self._write(scope):
            yield

    @contextlib.contextmanager
    def snapshot_read(self) -> Iterator[None]:
        """One ``REPEATABLE READ`` transaction: every read inside sees one committed state.
        Inside a transaction already (a write turn, an outer read), it joins it."""
        if self._in_transaction():
            yield
            return
        conn = self._connection()
        try:
            with conn.transaction():
                conn.execute("SET TRANSACTION ISOLATION LEVEL REPEATABLE READ")
                yield
        except psycopg.OperationalError as exc:
            raise self._lost(exc) from None

    # -- writing ------------------------------------------------------------------------------
    def append(self, scope: str, records: Sequence[Record], delta: RowChanges) -> None:
        """Append one commit's records and write the state they changed, in one transaction
        holding the scope's write lock."""
        commits, observations, events = record_rows(scope, records)
        with self._write(scope) as conn:
            write_rows(conn, scope, commits, observations, events, delta)

    def compact(self, scope: str, *, checkpoint_commit: int, checkpoint_t: float,
                state: dict[str, Any], delete_seqs: Sequence[int],
                records: Sequence[Record]) -> None:
        commits, observations, events = record_rows(scope, records)
        blob = encode_checkpoint(state)
        with self._write(scope) as conn:
            conn.execute(
                "INSERT INTO checkpoints (scope, commit_id, t, state) VALUES (%s, %s, %s, %s) "
                "ON CONFLICT (scope, commit_id) DO UPDATE SET t = excluded.t, "
                "state = excluded.state", (scope, checkpoint_commit, checkpoint_t, blob))
            if delete_seqs:
                conn.execute("DELETE FROM observations WHERE scope = %s AND seq = ANY(%s)",
                             (scope, list(delete_seqs)))
            write_rows(conn, scope, commits, observations, events, RowChanges())

    def size_bytes(self) -> int:
        """The bytes of this store's schema: every table with its indexes and TOAST."""
        row = self._aggregate(
            "SELECT COALESCE(SUM(pg_total_relation_size(c.oid)), 0) FROM pg_class c "
            "JOIN pg_namespace n ON n.oid = c.relnamespace "
            "WHERE n.nspname = %s AND c.relkind = 'r'", (self.schema,))
        return int(row[0])

    def reclaim(self) -> None:
        """``VACUUM`` each of the schema's tables: the space deleted rows held becomes
        reusable by the server (the files keep their size; ``VACUUM FULL`` would shrink them
        but locks every table while it rewrites it, so it is left to the operator)."""
        if self.read_only:
            raise ReadOnly("this store was opened read-only")
        conn = self._connection()
        for table in TABLES:
            conn.execute(sql.SQL("VACUUM {}.{}").format(sql.Identifier(self.schema),
                                                         sql.Identifier(table)))

    def backup(self, target: str | os.PathLike[str]) -> None:
        """Copy the whole store (every scope, one committed state) into a new schema:
        ``target`` is a store URL (or a bare schema name, in this database) whose schema does
        not exist yet. For backups of record, use ``pg_dump --schema`` (docs/architecture.md,
        "Fleet on PostgreSQL")."""
        target = str(target)
        url = target if is_postgres_url(target) else with_schema(self.url, target)
        _, schema = parse_url(url)
        if schema == self.schema:
            raise InvalidInput(f"backup target {target!r} is this store's own schema")
        copy = PostgresStore(url)
        try:
            with copy._write(None) as dst:
                if dst.execute("SELECT 1 FROM commits LIMIT 1").fetchone() is not None:
                    raise InvalidInput(f"{copy.path!r} holds a store; a backup never overwrites")
                dst.execute("DELETE FROM meta")
                with self.snapshot_read():
                    meta = self._execute("SELECT key, value FROM meta").fetchall()
                    dst.cursor().executemany("INSERT INTO meta (key, value) VALUES (%s, %s)",
                                             meta)
                    for table in TABLES:
                        columns = stored_columns(self._connection(), table)
                        names = sql.SQL(", ").join(map(sql.Identifier, columns))
                        out = sql.SQL("COPY {} ({}) TO STDOUT (FORMAT binary)").format(
                            sql.Identifier(table), names)
                        into = sql.SQL("COPY {} ({}) FROM STDIN (FORMAT binary)").format(
                            sql.Identifier(table), names)
                        with self._connection().cursor().copy(out) as src, \
                                dst.cursor().copy(into) as sink:
                            for block in src:
                                sink.write(block)
        finally:
            copy.close()

    def column_types(self, table: str) -> dict[str, tuple[str, bool]]:
        rows = self._execute(
            "SELECT column_name, upper(data_type), is_nullable = 'NO' FROM "
            "information_schema.columns WHERE table_schema = %s AND table_name = %s AND "
            "is_generated = 'NEVER' ORDER BY ordinal_position", (self.schema, table))
        return {name: (kind, notnull) for name, kind, notnull in rows}

    def bulk_load(self, tables: Iterable[tuple[str, Sequence[str], Iterable[Sequence[Any]]]],
                  *, meta: Mapping[str, str] | None = None) -> None:
        """Insert rows in the interchange encoding (SQLite's rows; see
        :mod:`locimem.store.postgres.codec`) with ``COPY``, and the ``meta`` entries, in one
        transaction. A row the schema refuses raises :class:`RowsRejected`."""
        with self._write(None) as conn:
            for key, value in (meta or {}).items():
                set_meta(conn, key, value)
            for name, columns, rows in tables:
                if name not in _SCOPED:
                    raise RowsRejected(name, "not a table of the store")
                convert = to_pg_converter(name, columns)
                copy = sql.SQL("COPY {} ({}) FROM STDIN").format(
                    sql.Identifier(name), sql.SQL(", ").join(map(sql.Identifier, columns)))
                try:
                    with conn.cursor() as cur:
                        cur.execute("SAVEPOINT bulk")
                        with cur.copy(copy) as sink:
                            for row in rows:
                                sink.write_row(row if convert is None else convert(row))
                        cur.execute("RELEASE SAVEPOINT bulk")
                except psycopg.OperationalError as exc:
                    raise self._lost(exc) from None
                except (psycopg.DataError, psycopg.IntegrityError,
                        psycopg.ProgrammingError) as exc:
                    raise RowsRejected(name, str(exc).strip().splitlines()[0]) from None

    def rows(self, table: str, scope: str, columns: Sequence[str]) -> Iterator[tuple[Any, ...]]:
        """The rows of ``table`` in ``scope`` (``columns``, interchange encoding) by key."""
        if table not in _SCOPED:
            raise ValueError(f"unknown table {table!r}")
        key = KEYS[table]
        query = sql.SQL("SELECT {} FROM {} WHERE scope = %s ORDER BY {}").format(
            sql.SQL(", ").join(map(sql.Identifier, columns)), sql.Identifier(table),
            sql.Identifier(key))
        convert = from_pg(table, columns)
        for row in self._execute(query, (scope,)):
            yield row if convert is None else convert(row)

    def meta(self) -> dict[str, str]:
        """The store's ``meta`` entries (format, schema version, creation time)."""
        return dict(self._execute("SELECT key, value FROM meta").fetchall())

    def cache_stale(self) -> bool:
        row = self._execute("SELECT 1 FROM meta WHERE key = %s", (_REBUILD_CACHE,)).fetchone()
        return row is not None

    def rewrite_cache(self, objects: Mapping[str, Iterable[ObjectState]]) -> None:
        rows = [object_row(scope, o) for scope, states in objects.items() for o in states]
        with self._write(None) as conn:
            for scope in sorted(objects):
                self._lock(conn, scope)
            conn.cursor().executemany(UPSERT_OBJECT, to_pg("objects", OBJ, rows))
            conn.execute("DELETE FROM meta WHERE key = %s", (_REBUILD_CACHE,))

    # -- ids, scopes, counts --------------------------------------------------------------------
    def counters(self, scope: str | None = None) -> tuple[int, int, int]:
        """(next object id, next seq, next commit id) of ``scope`` — ids are unique per scope
        here — or, without a scope, above every scope's."""
        where, args = ("WHERE scope = %s", (scope,)) if scope is not None else ("", ())
        and_ = "AND" if scope is not None else "WHERE"
        row = self._aggregate(
            f"SELECT (SELECT max(object_id) FROM events {where} {and_} kind = 'APPEARED'), "
            f"(SELECT max(seq) FROM observations {where}), (SELECT max(seq) FROM events {where}),"
            f" (SELECT max(id) FROM commits {where})", args * 4)
        max_oid, max_obs, max_ev, max_commit = row
        return ((max_oid or 0) + 1, max(max_obs or 0, max_ev or 0) + 1, (max_commit or 0) + 1)

    def scopes(self) -> list[str]:
        return [r[0] for r in self._execute(
            "SELECT DISTINCT scope FROM commits ORDER BY 1")]

    def _read(self, scope: str | None, query: str, args: Sequence[Any],
              decode: Callable[[Row], _T]) -> list[_T]:
        try:
            return [decode(row) for row in self._execute(query, args)]
        except psycopg.OperationalError as exc:  # (while the rows came)
            raise self._lost(exc) from None

    def _observation(self, row: Row) -> Observation:
        return observation_from_pg(row)

    # -- the log ------------------------------------------------------------------------------
    def raise_late_s(self, late_s: float) -> None:
        value = checked_late_s(late_s, self.late_s)
        with self._write(None) as conn:
            set_meta(conn, "late_s", repr(value))
        self.late_s = value

    def iter_log(self, scope: str, *, after_commit: int = 0,
                 until_commit: int | None = None) -> Iterator[Record]:
        """Every record of ``scope`` in replay order, streamed: three server-side cursors
        (commits, observations, events) read :data:`LOG_PAGE` rows a round trip inside one
        read snapshot, so a long log never sits in memory at once."""
        bound = (scope, after_commit, MAX_ID if until_commit is None else until_commit)
        queries = (
            f"SELECT {COMMIT_COLUMNS} FROM commits WHERE scope = %s AND id > %s AND id <= %s "
            "ORDER BY id",
            f"SELECT {OBSERVATION_COLUMNS} FROM observations WHERE scope = %s AND "
            "commit_id > %s AND commit_id <= %s ORDER BY seq",
            f"SELECT {EVENT_COLUMNS} FROM events WHERE scope = %s AND commit_id > %s AND "
            "commit_id <= %s ORDER BY seq",
        )
        try:
            with self.snapshot_read():
                conn = self._connection()
                cursors = [conn.cursor(name=f"locimem_log_{next(_CURSORS)}") for _ in queries]
                try:
                    for cursor, query in zip(cursors, queries, strict=True):
                        cursor.itersize = LOG_PAGE
                        cursor.execute(query, bound)
                    yield from replay_order(*cursors, observation=observation_from_pg)
                finally:
                    for cursor in cursors:
                        cursor.close()
        except psycopg.OperationalError as exc:
            raise self._lost(exc) from None

    def feature_dim(self, scope: str) -> int | None:
        row = self._execute(
            "SELECT cardinality(feature) FROM observations WHERE scope = %s AND feature IS NOT "
            "NULL AND object_id IS NOT NULL LIMIT 1", (scope,)).fetchone()
        if row is not None:
            return row[0]
        checkpoint = self.latest_checkpoint(scope)
        return None if checkpoint is None else checkpoint[1].get("feature_dim")

    def logged_feature_dim(self, scope: str) -> int | None:
        width = self.feature_dim(scope)
        if width is not None:
            return width
        row = self._execute("SELECT cardinality(feature) FROM observations WHERE scope = %s "
                            "AND feature IS NOT NULL LIMIT 1", (scope,)).fetchone()
        return None if row is None else row[0]

    # -- the materialised state ---------------------------------------------------------------
    def load_objects(self, scope: str) -> list[ObjectState]:
        """A scope's objects in id order, through a server-side cursor inside one read
        snapshot: the rows come :data:`LOG_PAGE` a round trip and are decoded
        :data:`~locimem.store.sql.LOAD_BATCH` at a time, so a large scope never sits in
        memory twice (all its rows, then its objects)."""
        out: list[ObjectState] = []
        try:
            with self.snapshot_read():
                cursor = self._connection().cursor(name=f"locimem_objects_{next(_CURSORS)}")
                try:
                    cursor.execute(f"SELECT {OBJECT_COLUMNS} FROM objects WHERE scope = %s "
                                   "ORDER BY id", (scope,))
                    while rows := cursor.fetchmany(LOG_PAGE):
                        for k in range(0, len(rows), LOAD_BATCH):
                            out += objects_from_rows([object_from_pg(r)
                                                      for r in rows[k:k + LOAD_BATCH]])
                finally:
                    cursor.close()
        except psycopg.OperationalError as exc:
            raise self._lost(exc) from None
        return out

    def load_tombstones(self, scope: str) -> dict[int, TombstoneState]:
        rows = self._execute("SELECT id, data FROM tombstones WHERE scope = %s ORDER BY id",
                             (scope,))
        return {oid: TombstoneState.from_dict(json.loads(data)) for oid, data in rows}

    def load_rejections(self, scope: str) -> dict[str, RejectionState]:
        rows = self._execute(
            "SELECT key, reason, count, first_seq, last_seq, last_t FROM rejection_keys "
            "WHERE scope = %s ORDER BY key", (scope,))
        return {row[0]: RejectionState(*row[1:]) for row in rows}

    def load_rooms(self, scope: str) -> dict[str, Any] | None:
        row = self._execute("SELECT rooms FROM scene WHERE scope = %s", (scope,)).fetchone()
        return None if row is None else json.loads(row[0])

    def load_json_rows(self, table: str, scope: str) -> dict[int, Any]:
        key = {"prior_map": "id", "deltas": "id", "keyframes": "object_id"}[table]
        rows = self._execute(f"SELECT {key}, data FROM {table} WHERE scope = %s ORDER BY {key}",
                             (scope,))
        return {k: json.loads(data) for k, data in rows}

    def objects_in_box(self, scope: str, low: Sequence[float], high: Sequence[float]
                       ) -> list[int]:
        """Ids of the materialised objects whose box overlaps the axis-aligned box
        ``low``–``high`` (x, y, z; metres, map frame), by id — through the GiST index."""
        rows = self._execute(
            "SELECT id FROM objects WHERE scope = %s AND box && cube(%s::float8[], "
            "%s::float8[]) ORDER BY id", (scope, [float(v) for v in low],
                                          [float(v) for v in high]))
        return [r[0] for r in rows]
