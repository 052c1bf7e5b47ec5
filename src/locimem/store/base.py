"""The contract every storage backend keeps: :class:`Store` (SQLite and PostgreSQL).

A backend stores three append-only logs per scope — commits, observations, events — and the
*materialised state* written in the same transaction as the records that changed it: one row
per object, tombstones, rejection keys, the room map, the prior map, its deltas and keyframe
evidence (:class:`RowChanges`), plus compaction's checkpoints. It never interprets records:
deciding and applying are the tracker's job, and replaying a stale cache is done above it
(:func:`locimem.tracker.load.replay_stale_cache`).

Everything the memory, its readers, the command line, the benchmarks and the pictures call on
a store is listed here; a backend that implements it is enough for :class:`ObjectMemory` to
work. ``tests/store/`` is the suite every backend must pass. Ids (object ids, record ``seq``,
commit ids) are unique within a scope: SQLite allocates them file-wide (shared by every scope
of one file), PostgreSQL per scope (so scopes write in parallel); records are stored exactly as
given (embeddings included) and read back equal.

Conventions: ``scope`` names one memory; ``until_commit`` bounds a read to the records of
commits up to and including that id (an ``as_of`` view); times are valid times in seconds
unless named ``recorded``.
"""

from __future__ import annotations

import math
import os
from collections.abc import Iterable, Iterator, Mapping, Sequence
from contextlib import AbstractContextManager
from typing import Any, Protocol
from urllib.parse import urlsplit, urlunsplit

from locimem.errors import IntegrityError, InvalidInput
from locimem.model import (
    AuditEntry,
    Commit,
    Event,
    ObjectState,
    Observation,
    ObservationMeta,
    Record,
    RejectionState,
    TombstoneState,
)
from locimem.model.rows import RowChanges

__all__ = ["LATE_S_KEY", "RecordReads", "RowChanges", "RowsRejected", "Store", "checked_late_s",
           "is_postgres_url", "meta_late_s", "redacted"]

def is_postgres_url(path: object) -> bool:
    """Whether ``path`` names a PostgreSQL store (``postgresql://…`` or ``postgres://…``)
    rather than a file — decided without importing the backend."""
    return isinstance(path, str) and path.startswith(("postgresql://", "postgres://"))


def redacted(url: str) -> str:
    """``url`` without its password, for messages."""
    parts = urlsplit(url)
    if parts.password is None:
        return url
    netloc = parts.netloc.replace(f":{parts.password}@", ":***@")
    return urlunsplit(parts._replace(netloc=netloc))


LATE_S_KEY = "late_s"


def meta_late_s(meta: Mapping[str, str]) -> float:
    """A store's late-scan tolerance from its ``meta`` (0 when it has none, or it is
    unreadable — ``validate`` reads it the same way)."""
    try:
        value = float(meta.get(LATE_S_KEY, "0"))
    except ValueError:
        return 0.0
    return value if math.isfinite(value) and value > 0 else 0.0


def checked_late_s(late_s: Any, current: float) -> float:
    """A new late-scan tolerance (seconds): finite, >= 0 and not below ``current``.

    >>> checked_late_s(5, 1.0)
    5.0
    >>> checked_late_s(0.5, 1.0)  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ...
    locimem.errors.InvalidInput: late_s=0.5 is below the store's late_s=1.0: ...
    """
    if isinstance(late_s, bool) or not isinstance(late_s, (int, float)) \
            or not math.isfinite(late_s) or late_s < 0:
        raise InvalidInput(f"late_s must be a finite number of seconds >= 0, got {late_s!r}")
    value = float(late_s)
    if value < current:
        raise InvalidInput(f"late_s={value} is below the store's late_s={current}: a store's "
                           f"late-scan tolerance is only raised (scans it holds may trail by "
                           f"up to {current} s)")
    return value


BulkTable = tuple[str, Sequence[str], Iterable[Sequence[Any]]]
"""One table of a bulk load: its name, the columns given, and the rows (consumed lazily)."""


class RowsRejected(IntegrityError):
    """A bulk load's row does not fit the store's schema (nothing of the load was written)."""

    def __init__(self, table: str, reason: str) -> None:
        super().__init__(f"a row of {table} does not fit the store ({reason})")
        self.table = table
        self.reason = reason


class RecordReads(Protocol):
    """The reads of the record every SQL backend answers with the same queries (one
    implementation: :class:`locimem.store.sql.SqlReads`): commits, events and observations
    by their filters, the audit, the ids and counts the memory catches up by."""

    def head(self, scope: str) -> int:
        """The id of ``scope``'s latest commit (0: none): a writer or reader that knows
        commits up to it is current."""

    def count(self, table: str, scope: str) -> int:
        """Rows of ``table`` (``commits``, ``observations``, ``events`` or ``objects``) in
        ``scope``; :class:`~locimem.errors.InvalidInput` for another table."""

    def commits(self, scope: str) -> list[Commit]:
        """Every commit of ``scope``, by id."""

    def latest_scan(self, scope: str, source: str) -> tuple[float, int] | None:
        """The latest valid time of ``scope``'s scans from ``source`` (their commits' actor)
        and how many of its scans the scope holds at that time; None: none from it."""

    def last_commit_time(self, scope: str) -> float | None:
        """The latest valid time of the scope's commits (None: no commit) — its last
        commit's, unless a late scan of a fleet committed after a later one."""

    def last_commit_at(self, scope: str, *, t: float | None = None,
                       recorded: float | None = None) -> int | None:
        """The id of the last commit with valid time <= ``t`` (or, without ``t``, record
        time <= ``recorded``); None if there is none."""

    def events(self, scope: str, *, kind: Sequence[str] | None = None,
               label: str | None = None, object_id: int | None = None,
               since: float | None = None, until: float | None = None,
               limit: int | None = None, newest_first: bool = False,
               until_commit: int | None = None, exclude_forgotten: bool = False,
               after_seq: int | None = None, before_seq: int | None = None
               ) -> list[Event]:
        """Events matching every filter given (``kind``: any of these kinds; ``since`` /
        ``until``: valid time, inclusive; ``after_seq`` / ``before_seq``: a page's cursor,
        exclusive), by ``seq`` (descending with ``newest_first``), at most ``limit``.
        ``exclude_forgotten``: none about — or, for ``RELATION``, naming — an object with a
        tombstone."""

    def observations(self, scope: str, *, object_id: int | None = None,
                     rejected: bool | None = None, reason: str | None = None,
                     key: str | None = None, limit: int | None = None,
                     until_commit: int | None = None, after_seq: int | None = None
                     ) -> list[Observation]:
        """Observations matching every filter given (``rejected``: only rejected / only
        accepted; ``reason``: rejected for this reason; ``key``: this rejection key;
        ``after_seq``: a page's cursor, exclusive), by ``seq``, at most ``limit``."""

    def merged_into(self, scope: str, object_id: int, *, until_commit: int | None = None
                    ) -> int | None:
        """The id that absorbed ``object_id`` in its latest ``MERGED`` event, if any."""

    def audit(self, scope: str, *, since: float | None = None, until: float | None = None,
              actor: str | None = None, object_id: int | None = None,
              kinds: Sequence[str] | None = None, recorded_since: float | None = None,
              recorded_until: float | None = None, limit: int | None = None,
              until_commit: int | None = None, after_commit: int | None = None
              ) -> list[AuditEntry]:
        """Commits that changed something — every commit not a scan, and scans with events —
        with their events (only those about ``object_id``, when given), oldest first;
        ``after_commit``: a page's cursor, exclusive."""

    def observation_meta(self, scope: str, after_commit: int, until_commit: int
                         ) -> list[ObservationMeta]:
        """Seq, commit, time, object and key of the observations in a commit range, by
        ``seq`` (what compaction's retention decides on)."""

    def change_commits(self, scope: str, after_commit: int, until_commit: int,
                       kinds: Sequence[str]) -> set[tuple[int, int]]:
        """(object id, commit id) of every event of one of ``kinds`` in a commit range."""

    def latest_checkpoint(self, scope: str, until_commit: int | None = None
                          ) -> tuple[int, dict[str, Any]] | None:
        """(commit id, state) of the newest checkpoint at or before ``until_commit``."""



class Store(RecordReads, Protocol):
    """A locimem store: :class:`RecordReads`, and what each backend does its own way —
    its writes, streaming the log, the materialised rows. Writes raise
    :class:`~locimem.errors.ReadOnly` when ``read_only``."""

    path: str
    """Where the store lives (a file path, ``":memory:"``, a URL): for messages and names."""
    read_only: bool
    """Opened without the writer lock: every write raises ``ReadOnly``."""
    late_s: float
    """How far (seconds) a scan may trail the latest commit *another writer* landed in its
    scope and still be accepted (its records keep its own time): the store's ``late_s``
    (meta), shared by every writer and by ``validate``. Default 0 for a SQLite file (one
    writer at a time), 1 s for a PostgreSQL schema; raised by :meth:`raise_late_s`."""

    # -- lifecycle ----------------------------------------------------------------------------
    def close(self) -> None:
        """Release the connection and the writer lock. Safe to call twice."""

    def snapshot_read(self) -> AbstractContextManager[None]:
        """One read transaction: every read inside sees one committed state, however many
        commits another process lands meanwhile (inside a write, it joins it)."""

    # -- writing ------------------------------------------------------------------------------
    def append(self, scope: str, records: Sequence[Record], delta: RowChanges) -> None:
        """Write one commit's records (a :class:`Commit`, then its observations and events)
        and the materialised rows they changed, atomically: on any failure nothing is
        written."""

    def compact(self, scope: str, *, checkpoint_commit: int, checkpoint_t: float,
                state: dict[str, Any], delete_seqs: Sequence[int],
                records: Sequence[Record]) -> None:
        """The checkpointed append, atomically: store ``state`` (JSON-able) as the checkpoint
        after ``checkpoint_commit`` (at valid time ``checkpoint_t``), delete the observations
        ``delete_seqs`` (all at or before it), and append ``records`` (the maintenance
        commit)."""

    def size_bytes(self) -> int:
        """The bytes the store occupies now (a file with its write-ahead log; a schema's
        tables and indexes)."""

    def reclaim(self) -> None:
        """Give the space deleted rows left behind back (after a compaction): the file shrinks,
        or the server may reuse the space. Not inside a transaction; may take a while."""

    def bulk_load(self, tables: Iterable[BulkTable], *,
                  meta: Mapping[str, str] | None = None) -> None:
        """Insert stored rows as they are (an import: each table's name, columns and rows in
        this backend's encoding) and the ``meta`` entries, in one transaction. A row the
        schema refuses raises :class:`RowsRejected`; an exception from the rows' iterator
        passes through. Nothing is written unless everything is."""

    def column_types(self, table: str) -> dict[str, tuple[str, bool]]:
        """The columns of a stored table, as a bulk load fills them: name -> (declared type,
        NOT NULL)."""

    def backup(self, target: str | os.PathLike[str]) -> None:
        """Write a consistent copy of the whole store (every scope, one committed state) to a
        new store at ``target``; it opens as a store with the same rows."""

    def cache_stale(self) -> bool:
        """Whether the materialised objects must be replayed from the log (a migration could
        not compute them)."""

    def rewrite_cache(self, objects: Mapping[str, Iterable[ObjectState]]) -> None:
        """Upsert each scope's replayed objects (scope -> objects) and clear
        :meth:`cache_stale`, in one transaction."""

    def write_turn(self, scope: str) -> AbstractContextManager[None]:
        """One writer's turn at ``scope``: hold the scope's write lock for one transaction,
        so that catching up on the log, deciding and appending see no other writer's commit
        land in between; every append inside joins it and commits when the block ends
        (nothing, if it raises). Reentrant. SQLite: a no-op (its file has one writer)."""

    def rows(self, table: str, scope: str, columns: Sequence[str]
             ) -> Iterator[tuple[Any, ...]]:
        """The rows of a scoped table in ``scope`` — ``columns``, in the *interchange
        encoding* (SQLite's rows: JSON as text, embeddings as raw bytes) that
        :meth:`bulk_load` takes — by key; read them inside :meth:`snapshot_read` for one
        committed state."""

    def meta(self) -> dict[str, str]:
        """The store's ``meta`` entries (``format``, ``schema_version``, ``created_at``)."""

    # -- ids, scopes, counts --------------------------------------------------------------------
    def counters(self, scope: str | None = None) -> tuple[int, int, int]:
        """(next object id, next seq, next commit id) for a new commit of ``scope``: above
        every id the store could clash with — SQLite's ids are file-wide, so every scope's;
        PostgreSQL's are unique per scope, so the scope's own. Without ``scope``: above every
        scope's, on any backend."""

    def scopes(self) -> list[str]:
        """Every scope with at least one commit, sorted."""

    # -- the log ------------------------------------------------------------------------------
    def raise_late_s(self, late_s: float) -> None:
        """Set the store's ``late_s`` to ``late_s`` seconds (finite, at least the current
        value: every scan already stored stays within it), in one transaction."""

    def iter_log(self, scope: str, *, after_commit: int = 0,
                 until_commit: int | None = None) -> Iterator[Record]:
        """The records of the commits after ``after_commit`` up to ``until_commit`` in replay
        order: each commit, then its observations and events by ``seq``."""

    def feature_dim(self, scope: str) -> int | None:
        """The embedding width of the scope's accepted observations (else the newest
        checkpoint's), None if there is none."""

    def logged_feature_dim(self, scope: str) -> int | None:
        """The embedding width of any observation of the scope, accepted or rejected."""

    # -- the materialised state ---------------------------------------------------------------
    def load_objects(self, scope: str) -> list[ObjectState]:
        """The materialised objects, by id."""

    def load_tombstones(self, scope: str) -> dict[int, TombstoneState]:
        """The forgotten objects' tombstones: id -> tombstone."""

    def load_rejections(self, scope: str) -> dict[str, RejectionState]:
        """The rejection keys: key -> counts."""

    def load_rooms(self, scope: str) -> dict[str, Any] | None:
        """The scope's room map as last written (None: never written)."""

    def load_json_rows(self, table: str, scope: str) -> dict[int, Any]:
        """The ``prior_map``, ``deltas`` or ``keyframes`` rows: id -> value."""
