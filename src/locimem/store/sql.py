"""SQL the backends share: WHERE clauses built from the filters given, and the audit query.

SQLite and PostgreSQL differ in their parameter placeholder (``?`` and ``%s``); everything
here takes it as ``p`` and writes ``{p}`` where a value goes, so one text serves both.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Any

from locimem.model import AuditEntry, Commit, Event

__all__ = ["LATEST_SCAN", "LOAD_BATCH", "audit_entries", "audit_query", "conditions",
           "events_query", "observations_query"]

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
