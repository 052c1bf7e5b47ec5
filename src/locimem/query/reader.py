"""Every read of a memory, over one state: the live memory and its as-of views share this.

A reader sees one scope, up to one commit. Objects that are forgotten *now* (they have a
tombstone) are hidden from every read path, including as-of views of times before the forget;
the audit trail still says who forgot what, when and why.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import Any

from locimem.check import check_int, check_label, check_time
from locimem.config import TrackerConfig
from locimem.errors import InvalidInput, NotFound, StoreClosed
from locimem.model import (
    AuditEntry,
    Event,
    EventKind,
    ObjectStatus,
    Observation,
    RecallResult,
    RejectionKey,
    Tombstone,
    TrackedObject,
)
from locimem.query.recall import recall as _recall
from locimem.query.views import view
from locimem.store.base import Store
from locimem.tracker.state import MemoryState, ObjectState


class MemoryReader:
    """Read-only questions over one state of one scope (see :class:`ObjectMemory`)."""

    _store: Store | None
    _scope: str
    _config: TrackerConfig
    _state: MemoryState
    _until_commit: int | None = None  # as-of views read the record only up to here
    _forgotten: frozenset[int] | None = None  # as-of views: ids forgotten by now

    def __init__(self, store: Store, scope: str, config: TrackerConfig, state: MemoryState,
                 until_commit: int | None = None, forgotten: frozenset[int] = frozenset()
                 ) -> None:
        self._store = store
        self._scope = scope
        self._config = config
        self._state = state
        self._until_commit = until_commit
        self._forgotten = forgotten

    @property
    def scope(self) -> str:
        return self._scope

    @property
    def config(self) -> TrackerConfig:
        return self._config

    @property
    def now(self) -> float | None:
        """Time of the latest scan this reader sees (None before the first)."""
        return self._state.now

    @property
    def store(self) -> Store:
        if self._store is None:
            raise StoreClosed("this memory is closed; open it again with ObjectMemory.open()")
        return self._store

    def snapshot(self) -> dict[str, Any]:
        """A plain, comparable picture of the state (indexes excluded)."""
        self.store  # noqa: B018 - raises if closed
        return self._state.snapshot()

    # -- objects ------------------------------------------------------------------------------
    def _visible(self) -> Iterable[ObjectState]:
        hidden = self._hidden()
        objects = self._state.objects
        return (objects[oid] for oid in sorted(objects) if oid not in hidden)

    def _hidden(self) -> frozenset[int] | dict[int, Any]:
        if self._forgotten is None:
            return self._state.tombstones  # the live state: its tombstones are current
        return self._forgotten

    def _view(self, obj: ObjectState) -> TrackedObject:
        return view(obj, self._state.now or 0.0, self._config)

    def tracked(self) -> list[TrackedObject]:
        """The published objects: promoted and confident (``status == confirmed``), by id."""
        return self.objects(status=ObjectStatus.CONFIRMED)

    def objects(self, status: ObjectStatus | str | Iterable[ObjectStatus | str] | None = None,
                label: str | None = None) -> list[TrackedObject]:
        """Every remembered object (optionally of some statuses and/or a voted label), by id."""
        self.store  # noqa: B018 - raises if closed
        wanted = _check_statuses(status)
        if label is not None:
            label = check_label(label, "label")
        out = []
        for obj in self._visible():
            if label is not None and obj.label != label:
                continue
            v = self._view(obj)
            if wanted is None or v.status in wanted:
                out.append(v)
        return out

    def get(self, object_id: int) -> TrackedObject:
        """One object by id. Raises :class:`NotFound` for an unknown or forgotten id."""
        return self._view(self._object(object_id))

    def _object(self, object_id: int) -> ObjectState:
        self.store  # noqa: B018
        oid = check_int(object_id, "object_id")
        obj = self._state.objects.get(oid)
        if obj is None or oid in self._hidden():
            raise NotFound(f"no object {oid} in scope {self._scope!r}")
        return obj

    def recall(self, name: str) -> RecallResult:
        """What the memory knows about ``name`` ("cup", "the red mug"): the best matching
        object, its status, last place and time, and a one-line answer."""
        self.store  # noqa: B018
        if not isinstance(name, str):
            raise InvalidInput(f"name must be a string, got {type(name).__name__}")
        return _recall(name, list(self._visible()), self._state.now, self._config)

    # -- the record ---------------------------------------------------------------------------
    def history(self, object_id: int) -> list[Observation | Event]:
        """The object's evidence, lifecycle events and corrections, in record order."""
        oid = self._object(object_id).id
        return self.store.history(self._scope, oid, until_commit=self._until_commit)

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
        objects are left out (``audit`` shows that they were forgotten)."""
        return self.store.events(
            self._scope,
            kind=_check_kinds(kind),
            label=None if label is None else check_label(label, "label"),
            since=None if since is None else check_time(since, "since"),
            until=None if until is None else check_time(until, "until"),
            object_id=None if object_id is None else check_int(object_id, "object_id"),
            limit=None if limit is None else check_int(limit, "limit", lo=1),
            until_commit=self._until_commit,
            exclude_forgotten=True,
        )

    def rejected(self, reason: str | None = None, key: str | None = None,
                 limit: int | None = None) -> list[Observation]:
        """Detections the tracker rejected (each with its reason and key), oldest first."""
        for name, value in (("reason", reason), ("key", key)):
            if value is not None and not isinstance(value, str):
                raise InvalidInput(f"{name} must be a string, got {type(value).__name__}")
        return self.store.observations(
            self._scope, rejected=True, reason=reason, key=key,
            limit=None if limit is None else check_int(limit, "limit", lo=1),
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
        return self.store.audit(
            self._scope,
            since=None if since is None else check_time(since, "since"),
            until=None if until is None else check_time(until, "until"),
            actor=actor, object_id=None if object_id is None else check_int(object_id, "object_id"),
            kinds=kinds,
            recorded_since=None if recorded_since is None else check_time(recorded_since,
                                                                           "recorded_since"),
            recorded_until=None if recorded_until is None else check_time(recorded_until,
                                                                           "recorded_until"),
            limit=None if limit is None else check_int(limit, "limit", lo=1),
            until_commit=self._until_commit,
        )


COMMIT_KINDS = ("scan", "correction", "forget", "maintenance")


def _check_enums(value: Any, enum: type[Any], name: str, normalise: Callable[[str], str]
                 ) -> list[Any] | None:
    """None, one member or name, or an iterable of them -> a list of members."""
    if value is None:
        return None
    items = [value] if isinstance(value, str) else value
    valid = ", ".join(m.value for m in enum)
    if not hasattr(items, "__iter__"):
        raise InvalidInput(f"{name} must be one of {valid}; got {value!r}")
    out = []
    for item in items:
        if not isinstance(item, str):
            raise InvalidInput(f"{name} must be one of {valid}; got {item!r}")
        try:
            out.append(enum(normalise(item)))
        except ValueError:
            raise InvalidInput(f"{name} must be one of {valid}; got {item!r}") from None
    return out


def _check_statuses(status: Any) -> set[ObjectStatus] | None:
    found = _check_enums(status, ObjectStatus, "status", str.lower)
    return None if found is None else set(found)


def _check_kinds(kind: Any) -> list[str] | None:
    found = _check_enums(kind, EventKind, "kind", str.upper)
    return None if found is None else [k.value for k in found]
