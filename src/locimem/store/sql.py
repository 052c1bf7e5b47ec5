"""SQL the backends share: WHERE clauses built from the filters given, the audit query, and
the reads of the record both backends answer with it (:class:`SqlReads`).

SQLite and PostgreSQL differ in their parameter placeholder (``?`` and ``%s``); everything
here takes it as ``p`` and writes ``{p}`` where a value goes, so one text serves both.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from contextlib import AbstractContextManager
from typing import Any, ClassVar, TypeVar

from locimem.errors import InvalidInput
from locimem.model import AuditEntry, Commit, Event, Observation, ObservationMeta
from locimem.store.sqlite.codec import (
    COMMIT_COLUMNS,
    EVENT_COLUMNS,
    MAX_ID,
    OBSERVATION_COLUMNS,
    commit_from_row,
    decode_checkpoint,
    event_from_row,
)

__all__ = ["LATEST_SCAN", "LOAD_BATCH", "SqlReads", "audit_entries", "audit_query",
           "conditions", "events_query", "observations_query"]

LOAD_BATCH = 256
"""Object rows decoded at a time on open: every row decoded at once would double the process's
memory while they last and leave it fragmented after (resident per object held, SQLite, all
rows at once -> 256 at a time: 2.1 -> 1.5 KB at 1k, 2.5 -> 1.7 KB at 10k)."""


LATEST_SCAN = (
    "SELECT t, count(*) FROM commits WHERE scope = {p} AND kind = 'scan' AND actor = {p} AND "
    "t = (SELECT max(t) FROM commits WHERE scope = {p} AND kind = 'scan' AND actor = {p}) "
    "GROUP BY t")
"""A source's latest scan time in a scope and its scans at that time (``Store.latest_scan``;
arguments: scope, source, scope, source)."""


def conditions(p: str, scope: str, *pairs: tuple[str, Any]) -> tuple[list[str], list[Any]]:
    """WHERE clauses for one scope plus every ``(clause, value)`` whose value is not None
    (``{p}`` in a clause stands for the placeholder)."""
    where, args = [f"scope = {p}"], [scope]
    for clause, value in pairs:
        if value is not None:
            where.append(clause.format(p=p))
            args.append(value)
    return where, args


def events_query(p: str, scope: str, columns: str, relation_object: str, *,
                 kind: Sequence[str] | None, label: str | None, object_id: int | None,
                 since: float | None, until: float | None, limit: int | None,
                 newest_first: bool, until_commit: int | None, exclude_forgotten: bool,
                 after_seq: int | None, before_seq: int | None) -> tuple[str, list[Any]]:
    """The events of a scope with the filters given, by seq: (query, arguments).
    ``relation_object`` is the backend's SQL for a RELATION event's ``data.object`` as an
    integer (the one place the two dialects differ)."""
    where, args = conditions(
        p, scope, ("label = {p}", label),
        ("object_id = {p}", object_id), ("t >= {p}", since), ("t <= {p}", until),
        ("commit_id <= {p}", until_commit), ("seq > {p}", after_seq),
        ("seq < {p}", before_seq))
    if kind:
        where.append(f"kind IN ({', '.join([p] * len(kind))})")
        args.extend(kind)
    if exclude_forgotten:  # neither about a forgotten object, nor naming one
        where.append(f"object_id NOT IN (SELECT id FROM tombstones WHERE scope = {p})")
        where.append(f"NOT (kind = 'RELATION' AND {relation_object} IN "
                     f"(SELECT id FROM tombstones WHERE scope = {p}))")
        args.extend((scope, scope))
    query = (f"SELECT {columns} FROM events WHERE {' AND '.join(where)} "
             f"ORDER BY seq {'DESC' if newest_first else 'ASC'}")
    if limit is not None:
        query += f" LIMIT {p}"
        args.append(limit)
    return query, args


def observations_query(p: str, scope: str, columns: str, *, object_id: int | None,
                       rejected: bool | None, reason: str | None, key: str | None,
                       limit: int | None, until_commit: int | None, after_seq: int | None
                       ) -> tuple[str, list[Any]]:
    """The observations of a scope with the filters given, by seq: (query, arguments)."""
    where, args = conditions(
        p, scope, ("object_id = {p}", object_id),
        ("rejected = {p}", reason), ("key = {p}", key), ("commit_id <= {p}", until_commit),
        ("seq > {p}", after_seq))
    if rejected is not None:
        where.append("rejected IS NOT NULL" if rejected else "rejected IS NULL")
    query = f"SELECT {columns} FROM observations WHERE {' AND '.join(where)} ORDER BY seq"
    if limit is not None:
        query += f" LIMIT {p}"
        args.append(limit)
    return query, args


def audit_query(p: str, scope: str, commit_columns: str, *, since: float | None,
                until: float | None, actor: str | None, object_id: int | None,
                kinds: Sequence[str] | None, recorded_since: float | None,
                recorded_until: float | None, limit: int | None, until_commit: int | None,
                after_commit: int | None) -> tuple[str, list[Any]]:
    """The commits an audit lists — every commit not a scan, and scans with events — with the
    filters given, oldest first: (query, arguments)."""
    where, args = conditions(
        p, scope, ("c.t >= {p}", since), ("c.t <= {p}", until), ("c.actor = {p}", actor),
        ("c.recorded_at >= {p}", recorded_since), ("c.recorded_at <= {p}", recorded_until),
        ("c.id <= {p}", until_commit), ("c.id > {p}", after_commit),
        ("EXISTS (SELECT 1 FROM events e WHERE e.scope = c.scope AND e.commit_id = c.id "
         "AND e.object_id = {p})", object_id))
    where[0] = f"c.scope = {p}"
    where.append("(c.kind != 'scan' OR EXISTS (SELECT 1 FROM events e WHERE "
                 "e.scope = c.scope AND e.commit_id = c.id))")
    if kinds:
        where.append(f"c.kind IN ({', '.join([p] * len(kinds))})")
        args.extend(kinds)
    columns = ", ".join("c." + c for c in commit_columns.split(", "))
    query = f"SELECT {columns} FROM commits c WHERE {' AND '.join(where)} ORDER BY c.id"
    if limit is not None:
        query += f" LIMIT {p}"
        args.append(limit)
    return query, args


def audit_entries(commits: Sequence[Commit], events: Iterable[Event],
                  object_id: int | None) -> list[AuditEntry]:
    """The audit entries of ``commits``, each with its ``events`` (by seq; only those about
    ``object_id`` when given). ``events`` may hold events of other commits: they are
    skipped, so a backend can read the commits' whole id range in one query."""
    by_commit: dict[int, list[Event]] = {c.id: [] for c in commits}
    for ev in events:
        if ev.commit in by_commit and (object_id is None or ev.object_id == object_id):
            by_commit[ev.commit].append(ev)
    return [AuditEntry(commit=c.id, kind=c.kind, actor=c.actor, reason=c.reason, t=c.t,
                       recorded_at=c.recorded_at, events=tuple(by_commit[c.id]))
            for c in commits]


Row = Sequence[Any]
_T = TypeVar("_T")
_COUNTED = ("commits", "observations", "events", "objects")


def _row(row: Row) -> Row:
    return row


class SqlReads:
    """The reads of the record both SQL backends answer with the same SQL: a backend says
    its placeholder (:attr:`_p`), how it reads an integer out of an event's JSON ``data``
    (:attr:`_data_int`), how it runs one query (:meth:`_read`: the rows decoded, every
    error of the database or of a damaged row turned into the backend's own) and how it
    decodes an observation row (embeddings differ). The rest of
    :class:`~locimem.store.base.Store` — writes, streaming the log, the materialised
    rows — is each backend's."""

    _p: ClassVar[str]
    _data_int: ClassVar[str]  # "{key}" stands for the field's name

    def _read(self, scope: str | None, query: str, args: Sequence[Any],
              decode: Callable[[Row], _T]) -> list[_T]:
        raise NotImplementedError

    def _observation(self, row: Row) -> Observation:
        raise NotImplementedError

    def snapshot_read(self) -> AbstractContextManager[None]:
        raise NotImplementedError

    def _value(self, scope: str, query: str, args: Sequence[Any]) -> Any:
        """The first column of an aggregate query's one row."""
        return self._read(scope, query, args, _row)[0][0]

    def head(self, scope: str) -> int:
        """The id of ``scope``'s latest commit (0: none)."""
        return self._value(scope, f"SELECT max(id) FROM commits WHERE scope = {self._p}",
                           (scope,)) or 0

    def count(self, table: str, scope: str) -> int:
        if table not in _COUNTED:
            raise InvalidInput(f"unknown table {table!r} (one of {', '.join(_COUNTED)})")
        return self._value(scope, f"SELECT count(*) FROM {table} WHERE scope = {self._p}",
                           (scope,))

    def commits(self, scope: str) -> list[Commit]:
        return self._read(scope, f"SELECT {COMMIT_COLUMNS} FROM commits WHERE scope = "
                                 f"{self._p} ORDER BY id", (scope,), commit_from_row)

    def latest_scan(self, scope: str, source: str) -> tuple[float, int] | None:
        rows = self._read(scope, LATEST_SCAN.format(p=self._p), (scope, source, scope, source),
                          _row)
        return (float(rows[0][0]), int(rows[0][1])) if rows else None

    def last_commit_time(self, scope: str) -> float | None:
        """The latest valid time of the scope's commits (a late scan, within the store's
        ``late_s``, may commit after a later one: the memory's clock is the latest)."""
        return self._value(scope, f"SELECT max(t) FROM commits WHERE scope = {self._p}",
                           (scope,))

    def last_commit_at(self, scope: str, *, t: float | None = None,
                       recorded: float | None = None) -> int | None:
        """The id of the last commit with valid time <= ``t`` (or record time <=
        ``recorded``); None if there is none."""
        column, bound = ("t", t) if t is not None else ("recorded_at", recorded)
        p = self._p
        return self._value(scope, f"SELECT max(id) FROM commits WHERE scope = {p} AND "
                                  f"{column} <= {p}", (scope, bound))

    def events(self, scope: str, *, kind: Sequence[str] | None = None,
               label: str | None = None, object_id: int | None = None,
               since: float | None = None, until: float | None = None,
               limit: int | None = None, newest_first: bool = False,
               until_commit: int | None = None, exclude_forgotten: bool = False,
               after_seq: int | None = None, before_seq: int | None = None) -> list[Event]:
        query, args = events_query(
            self._p, scope, EVENT_COLUMNS, self._data_int.format(key="object"), kind=kind,
            label=label, object_id=object_id, since=since, until=until, limit=limit,
            newest_first=newest_first, until_commit=until_commit,
            exclude_forgotten=exclude_forgotten, after_seq=after_seq, before_seq=before_seq)
        return self._read(scope, query, args, event_from_row)

    def observations(self, scope: str, *, object_id: int | None = None,
                     rejected: bool | None = None, reason: str | None = None,
                     key: str | None = None, limit: int | None = None,
                     until_commit: int | None = None, after_seq: int | None = None
                     ) -> list[Observation]:
        query, args = observations_query(
            self._p, scope, OBSERVATION_COLUMNS, object_id=object_id, rejected=rejected,
            reason=reason, key=key, limit=limit, until_commit=until_commit,
            after_seq=after_seq)
        return self._read(scope, query, args, self._observation)

    def merged_into(self, scope: str, object_id: int, *, until_commit: int | None = None
                    ) -> int | None:
        """The id that absorbed ``object_id`` in its latest MERGED event, if any."""
        p = self._p
        rows = self._read(
            scope, f"SELECT object_id FROM events WHERE scope = {p} AND kind = 'MERGED' AND "
                   f"{self._data_int.format(key='absorbed')} = {p} AND commit_id <= {p} "
                   "ORDER BY seq DESC LIMIT 1",
            (scope, object_id, MAX_ID if until_commit is None else until_commit), _row)
        return rows[0][0] if rows else None

    def audit(self, scope: str, *, since: float | None = None, until: float | None = None,
              actor: str | None = None, object_id: int | None = None,
              kinds: Sequence[str] | None = None, recorded_since: float | None = None,
              recorded_until: float | None = None, limit: int | None = None,
              until_commit: int | None = None, after_commit: int | None = None
              ) -> list[AuditEntry]:
        """Commits that changed something (every non-scan commit, and scans with events),
        with their events, oldest first — read in one snapshot."""
        p = self._p
        query, args = audit_query(
            p, scope, COMMIT_COLUMNS, since=since, until=until, actor=actor,
            object_id=object_id, kinds=kinds, recorded_since=recorded_since,
            recorded_until=recorded_until, limit=limit, until_commit=until_commit,
            after_commit=after_commit)
        with self.snapshot_read():
            commits = self._read(scope, query, args, commit_from_row)
            if not commits:
                return []
            events = self._read(
                scope, f"SELECT {EVENT_COLUMNS} FROM events WHERE scope = {p} AND "
                       f"commit_id >= {p} AND commit_id <= {p} ORDER BY seq",
                (scope, commits[0].id, commits[-1].id), event_from_row)
        return audit_entries(commits, events, object_id)

    def observation_meta(self, scope: str, after_commit: int, until_commit: int
                         ) -> list[ObservationMeta]:
        """Seq, commit, time, object and key of the observations in a commit range."""
        p = self._p
        return self._read(
            scope, f"SELECT seq, commit_id, t, object_id, key FROM observations WHERE scope = "
                   f"{p} AND commit_id > {p} AND commit_id <= {p} ORDER BY seq",
            (scope, after_commit, until_commit), _observation_meta)

    def change_commits(self, scope: str, after_commit: int, until_commit: int,
                       kinds: Sequence[str]) -> set[tuple[int, int]]:
        """(object id, commit id) pairs with an event of one of ``kinds`` in a commit range."""
        p = self._p
        rows = self._read(
            scope, f"SELECT object_id, commit_id FROM events WHERE scope = {p} AND "
                   f"commit_id > {p} AND commit_id <= {p} AND kind IN "
                   f"({', '.join([p] * len(kinds))})",
            (scope, after_commit, until_commit, *kinds), _row)
        return {(a, b) for a, b in rows}

    def latest_checkpoint(self, scope: str, until_commit: int | None = None
                          ) -> tuple[int, dict[str, Any]] | None:
        """(commit id, state snapshot) of the newest checkpoint at or before
        ``until_commit``."""
        p = self._p
        rows = self._read(
            scope, f"SELECT commit_id, state FROM checkpoints WHERE scope = {p} AND "
                   f"commit_id <= {p} ORDER BY commit_id DESC LIMIT 1",
            (scope, MAX_ID if until_commit is None else until_commit), _checkpoint)
        return rows[0] if rows else None


def _observation_meta(row: Row) -> ObservationMeta:
    return ObservationMeta(*row)


def _checkpoint(row: Row) -> tuple[int, dict[str, Any]]:
    return row[0], decode_checkpoint(row[1])
