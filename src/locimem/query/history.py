"""Time and the record: what changed, where things were, the memory as of a time, and
the audit trail.
"""

from __future__ import annotations

import heapq
import itertools
from collections.abc import Callable, Iterable, Iterator
from typing import Any

from locimem.check import (
    MAX_ID,
    check_int,
    check_label,
    check_object_id,
    check_time,
)
from locimem.errors import InvalidInput
from locimem.model import (
    AuditEntry,
    Event,
    EventKind,
    Observation,
    RejectionKey,
    Tombstone,
)
from locimem.query.base import (
    COMMIT_KINDS,
    ReaderBase,
    check_kinds,
)
from locimem.query.temporal import ObjectChanges, group_changes, without_moves_before

PAGE = 1000  # records a streaming read asks the store for at a time


class HistoryQueries(ReaderBase):
    """Questions about the past and the record."""

    def changes_since(self, t: float) -> list[ObjectChanges]:
        """What changed since valid time ``t``, grouped by object: appeared, moved, relabelled,
        lost, reacquired, corrected (and relation changes), in order of first change. A move
        nobody watched is told when its old place is found empty, but it had happened by the
        time the thing was first seen at its new place (``seen_there_since``): one seen there
        before ``t`` did not change since ``t``, so that commit's events about it (the merge,
        the move, its relations) are left out."""
        since = check_time(t, "t")
        return group_changes(without_moves_before(self.events(since=since), since))

    # -- the record ---------------------------------------------------------------------------
    def history(self, object_id: int) -> list[Observation | Event]:
        """The object's evidence, lifecycle events and corrections, in record order (and
        those of the identities merged into it). :meth:`iter_history` streams them."""
        return list(self.iter_history(object_id))

    def iter_history(self, object_id: int, *, page: int = PAGE) -> Iterator[Observation | Event]:
        """:meth:`history`, read from the store ``page`` records at a time: a long-watched
        object's hundred thousand sightings never sit in memory at once."""
        obj = self._object(object_id)
        page = check_int(page, "page", lo=1)
        scope, until = self._scope, self._until_commit

        def observations(oid: int) -> Callable[[int | None], list[Any]]:
            return lambda after: self.store.observations(
                scope, object_id=oid, until_commit=until, after_seq=after, limit=page)

        def events(oid: int) -> Callable[[int | None], list[Any]]:
            return lambda after: self.store.events(
                scope, object_id=oid, until_commit=until, after_seq=after, limit=page)

        streams: list[Iterator[Any]] = []
        for oid in (obj.id, *obj.merged_from):
            streams.append(_pages(observations(oid)))
            streams.append(_pages(events(oid)))
        return heapq.merge(*streams, key=lambda r: r.seq)

    def events(
        self,
        kind: EventKind | str | Iterable[EventKind | str] | None = None,
        label: str | None = None,
        since: float | None = None,
        until: float | None = None,
        object_id: int | None = None,
        limit: int | None = None,
    ) -> list[Event]:
        """Lifecycle events, oldest first, filtered by kind(s), the object's voted label at
        the time, valid-time window [since, until], object and count. Events of forgotten
        objects are left out (``audit`` shows that they were forgotten). :meth:`iter_events`
        streams them."""
        return list(self.iter_events(kind, label, since, until, object_id, limit))

    def iter_events(
        self,
        kind: EventKind | str | Iterable[EventKind | str] | None = None,
        label: str | None = None,
        since: float | None = None,
        until: float | None = None,
        object_id: int | None = None,
        limit: int | None = None,
        *,
        page: int = PAGE,
    ) -> Iterator[Event]:
        """:meth:`events`, read from the store ``page`` events at a time (checked before the
        first is read)."""
        scope = self._scope
        filters: dict[str, Any] = {
            "kind": check_kinds(kind),
            "label": None if label is None else check_label(label, "label"),
            "since": None if since is None else check_time(since, "since"),
            "until": None if until is None else check_time(until, "until"),
            "object_id": None if object_id is None else check_object_id(object_id, "object_id"),
            "until_commit": self._until_commit,
            "exclude_forgotten": True,
        }
        limit = None if limit is None else check_int(limit, "limit", lo=1, hi=MAX_ID)
        page = check_int(page, "page", lo=1)
        events = _pages(lambda after: self.store.events(scope, after_seq=after, limit=page,
                                                        **filters))
        return events if limit is None else itertools.islice(events, limit)

    def rejected(self, reason: str | None = None, key: str | None = None,
                 limit: int | None = None) -> list[Observation]:
        """Detections the tracker rejected (each with its reason and key), oldest first."""
        for name, value in (("reason", reason), ("key", key)):
            if value is not None and not isinstance(value, str):
                raise InvalidInput(f"{name} must be a string, got {type(value).__name__}")
        return self.store.observations(
            self._scope, rejected=True, reason=reason, key=key,
            limit=None if limit is None else check_int(limit, "limit", lo=1, hi=MAX_ID),
            until_commit=self._until_commit,
        )

    def rejections(self) -> list[RejectionKey]:
        """Rejected evidence grouped by key (label and 0.2 m cell), most repeated first."""
        self.store  # noqa: B018
        out = [RejectionKey(k, r.reason, r.count, r.first_seq, r.last_seq, r.last_t)
               for k, r in self._state.rejections.items()]
        return sorted(out, key=lambda r: (-r.count, r.key))

    def tombstones(self) -> list[Tombstone]:
        """What was forgotten, and how often it has been kept out since."""
        self.store  # noqa: B018
        return [
            Tombstone(object_id=oid, label=tomb.obj.label, labels=tuple(sorted(tomb.labels())),
                      center=tomb.obj.center, size=tomb.obj.size,
                      forgotten_at=tomb.forgotten_at, reason=tomb.reason, actor=tomb.actor,
                      suppressed=tomb.suppressed, last_suppressed=tomb.last_suppressed)
            for oid, tomb in sorted(self._state.tombstones.items())
        ]

    def audit(self, since: float | None = None, until: float | None = None,
              actor: str | None = None, object_id: int | None = None,
              kind: str | Iterable[str] | None = None,
              recorded_since: float | None = None, recorded_until: float | None = None,
              limit: int | None = None) -> list[AuditEntry]:
        """Every mutation — scans that changed something, corrections, forgetting,
        maintenance — with actor, reason, valid time and record time, oldest first.
        :meth:`iter_audit` streams them.

        ``since``/``until`` bound valid (world) time; ``recorded_since``/``recorded_until``
        bound record time. ``kind`` is the commit kind: scan, correction, forget, maintenance.
        """
        return list(self.iter_audit(since, until, actor, object_id, kind, recorded_since,
                                    recorded_until, limit))

    def iter_audit(self, since: float | None = None, until: float | None = None,
                   actor: str | None = None, object_id: int | None = None,
                   kind: str | Iterable[str] | None = None,
                   recorded_since: float | None = None, recorded_until: float | None = None,
                   limit: int | None = None, *, page: int = PAGE) -> Iterator[AuditEntry]:
        """:meth:`audit`, read from the store ``page`` commits at a time (checked before the
        first is read).

        ``since``/``until`` bound valid (world) time; ``recorded_since``/``recorded_until``
        bound record time. ``kind`` is the commit kind: scan, correction, forget, maintenance.
        """
        kinds = None
        if kind is not None:
            kinds = [kind] if isinstance(kind, str) else list(kind)
            bad = [k for k in kinds if k not in COMMIT_KINDS]
            if bad:
                raise InvalidInput(f"kind must be one of {', '.join(COMMIT_KINDS)}; got {bad[0]!r}")
        if actor is not None and not isinstance(actor, str):
            raise InvalidInput(f"actor must be a string, got {type(actor).__name__}")
        scope = self._scope
        filters: dict[str, Any] = {
            "since": None if since is None else check_time(since, "since"),
            "until": None if until is None else check_time(until, "until"),
            "actor": actor,
            "object_id": None if object_id is None else check_object_id(object_id, "object_id"),
            "kinds": kinds,
            "recorded_since": None if recorded_since is None else check_time(
                recorded_since, "recorded_since"),
            "recorded_until": None if recorded_until is None else check_time(
                recorded_until, "recorded_until"),
            "until_commit": self._until_commit,
        }
        limit = None if limit is None else check_int(limit, "limit", lo=1, hi=MAX_ID)
        page = check_int(page, "page", lo=1)
        entries = _pages(lambda after: self.store.audit(scope, after_commit=after, limit=page,
                                                        **filters), key="commit")
        return entries if limit is None else itertools.islice(entries, limit)


def _pages(read: Callable[[int | None], list[Any]], key: str = "seq") -> Iterator[Any]:
    """Every item of a paged read: ``read(after)`` gives the next page after the cursor (the
    last item's ``key``; None for the first page), an empty page ends it. Each page is its
    own query, so a stream never holds a read open while the caller works."""
    after = None
    while True:
        items = read(after)
        if not items:
            return
        yield from items
        after = getattr(items[-1], key)
