"""``ObjectMemory``: the thin facade that composes the tracker, the store and the queries.

Every mutation goes the same way: the tracker *decides* records, :func:`apply` changes the live
state with them, and the store appends them — with the objects they touched — in one
transaction. Opening a store rebuilds the state before any new scan is accepted.
"""

from __future__ import annotations

import os
import time
from collections.abc import Callable, Iterable, Sequence
from typing import Any

from locimem.check import check_int, check_label, check_scope, check_time
from locimem.config import TrackerConfig
from locimem.errors import InvalidInput, NotFound, ReadOnly, StoreClosed
from locimem.model import (
    Camera,
    Detection,
    Event,
    EventKind,
    ObjectStatus,
    Observation,
    RecallResult,
    ScanResult,
    TrackedObject,
)
from locimem.query.recall import recall as _recall
from locimem.query.views import view
from locimem.store.base import Store
from locimem.store.sqlite import MEMORY, SQLiteStore
from locimem.tracker.apply import Record, apply
from locimem.tracker.decide import decide
from locimem.tracker.state import MemoryState

__all__ = ["ObjectMemory"]


class ObjectMemory:
    """A persistent object memory for one scope of one store.

    Open it with :meth:`open`; use it as a context manager so it is always closed::

        with ObjectMemory.open("home.loci", scope="home") as mem:
            result = mem.observe(t=12.0, detections=[...])

    Not thread-safe: call it from one thread (or guard it with a lock).
    """

    def __init__(self, store: Store, scope: str, config: TrackerConfig,
                 clock: Callable[[], float]) -> None:
        self._store: Store | None = store
        self._scope = scope
        self._config = config
        self._clock = clock
        self._state = self._load_state(from_log=False)

    # -- lifecycle ----------------------------------------------------------------------------
    @classmethod
    def open(
        cls,
        path: str | os.PathLike[str] = MEMORY,
        *,
        scope: str = "default",
        config: TrackerConfig | None = None,
        read_only: bool = False,
        durable: bool = True,
        clock: Callable[[], float] = time.time,
    ) -> ObjectMemory:
        """Open (or create) the store at ``path`` and rebuild the memory of ``scope``.

        Args:
            path: a store file (created if missing), or ``":memory:"`` for a scratch memory.
            scope: whose memory this is; a memory reads and writes only its own scope.
            config: tracker thresholds (defaults from the published design).
            read_only: open without the writer lock; every mutator raises :class:`ReadOnly`.
            durable: fsync every scan (survives power loss); False survives a killed process
                but may lose the last scans on power loss.
            clock: wall clock for *record time* only (audit); beliefs use scan times.

        Raises:
            StoreLocked: another process has the store open for writing.
            NotAStore: the file is not a locimem store.
            SchemaVersionError: the store is from a newer locimem.
        """
        scope = check_scope(scope)
        if config is None:
            config = TrackerConfig()
        elif not isinstance(config, TrackerConfig):
            raise InvalidInput(f"config must be a TrackerConfig, got {type(config).__name__}")
        store = SQLiteStore(path, read_only=read_only, durable=durable)
        try:
            return cls(store, scope, config, clock)
        except BaseException:
            store.close()
            raise

    def close(self) -> None:
        """Close the store and release the writer lock. Safe to call twice."""
        if self._store is not None:
            self._store.close()
            self._store = None

    def __enter__(self) -> ObjectMemory:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def __repr__(self) -> str:
        where = "closed" if self._store is None else self._store.path
        return f"ObjectMemory({where!r}, scope={self._scope!r})"

    @property
    def scope(self) -> str:
        return self._scope

    @property
    def config(self) -> TrackerConfig:
        return self._config

    @property
    def now(self) -> float | None:
        """Time of the latest scan in this scope (None before the first)."""
        return self._state.now

    @property
    def read_only(self) -> bool:
        return self.store.read_only

    @property
    def store(self) -> Store:
        if self._store is None:
            raise StoreClosed("this memory is closed; open it again with ObjectMemory.open()")
        return self._store

    def _load_state(self, *, from_log: bool) -> MemoryState:
        store = self.store
        lost_after = self._config.lost_after_s
        state = MemoryState(grid_cell_m=self._config.drift_radius_m)
        if from_log:
            for record in store.iter_log(self._scope):
                apply(state, record, lost_after)
        else:
            for obj in store.load_objects(self._scope):
                state.objects[obj.id] = obj
                if obj.feature is not None and state.feature_dim is None:
                    state.feature_dim = int(obj.feature.shape[0])
            state.now = store.last_commit_time(self._scope)
        # ids and sequence numbers are file-wide, so scopes sharing a file never collide
        state.next_object_id, state.next_seq, state.next_commit = store.counters()
        state.rebuild_indexes(lost_after)
        return state

    def rebuild_from_log(self) -> MemoryState:
        """Replay this scope's whole record into a fresh state (the materialised cache is not
        read). The live memory is unchanged; compare ``snapshot()`` of both to check the cache."""
        return self._load_state(from_log=True)

    def snapshot(self) -> dict[str, Any]:
        """A plain, comparable picture of the live state."""
        self.store  # noqa: B018 - raises if closed
        return self._state.snapshot()

    # -- writing ------------------------------------------------------------------------------
    def _commit(self, records: Sequence[Record]) -> None:
        """Apply records to the live state and append them, with the objects they touched, in
        one transaction. If the append fails the state is reloaded from the store."""
        state = self._state
        lost_after = self._config.lost_after_s
        for record in records:
            apply(state, record, lost_after)
        touched = {r.object_id for r in records
                   if isinstance(r, (Observation, Event)) and r.object_id is not None}
        try:
            self.store.append(self._scope, records,
                              [state.objects[oid] for oid in sorted(touched)])
        except BaseException:
            self._state = self._load_state(from_log=False)
            raise

    def observe(self, t: float, detections: Iterable[Detection] = (),
                camera: Camera | None = None) -> ScanResult:
        """Ingest one scan: what perception saw at time ``t`` (seconds).

        Scans must come in time order (equal times are allowed). A scan with no detections
        still advances time, which is how belief in unseen objects decays. The whole scan is
        validated first and committed atomically: a rejected scan writes nothing.

        Returns:
            ScanResult with the object id given to each detection (None where the detection
            was rejected — see ``rejected`` for the reason) and the events the scan produced.
        """
        if self.store.read_only:
            raise ReadOnly("observe() needs a writable memory; this one was opened read-only")
        t = check_time(t)
        dets = self._check_scan(t, detections, camera)
        decision = decide(self._state, self._config, t, dets, camera,
                          recorded_at=float(self._clock()))
        self._commit(decision.records)
        events = tuple(r for r in decision.records if isinstance(r, Event))
        return ScanResult(commit=decision.records[0].id, t=t,  # type: ignore[union-attr]
                          assignments=decision.assignments, events=events,
                          rejected=decision.rejected)

    def _check_scan(self, t: float, detections: Iterable[Detection],
                    camera: Camera | None) -> list[Detection]:
        now = self._state.now
        if now is not None and t < now:
            raise InvalidInput(
                f"t={t} is before the latest scan (t={now}); scans must not go back in time"
            )
        if camera is not None and not isinstance(camera, Camera):
            raise InvalidInput(f"camera must be a Camera or None, got {type(camera).__name__}")
        if isinstance(detections, (str, bytes, Detection)) or not hasattr(detections, "__iter__"):
            raise InvalidInput(
                f"detections must be a list of Detection, got {type(detections).__name__}"
            )
        dets = list(detections)
        dim = self._state.feature_dim
        for i, det in enumerate(dets):
            if not isinstance(det, Detection):
                raise InvalidInput(
                    f"detections[{i}] must be a Detection, got {type(det).__name__}"
                )
            if det.feature is not None:
                width = int(det.feature.shape[0])
                if dim is None:
                    dim = width
                elif width != dim:
                    raise InvalidInput(
                        f"detections[{i}].feature has width {width}, but this memory's "
                        f"embeddings have width {dim}"
                    )
        return dets

    # -- reading ------------------------------------------------------------------------------
    def _view(self, obj: Any) -> TrackedObject:
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
        for oid in sorted(self._state.objects):
            obj = self._state.objects[oid]
            if label is not None and obj.label != label:
                continue
            v = self._view(obj)
            if wanted is None or v.status in wanted:
                out.append(v)
        return out

    def get(self, object_id: int) -> TrackedObject:
        """One object by id. Raises :class:`NotFound` for an unknown id."""
        self.store  # noqa: B018
        oid = check_int(object_id, "object_id")
        obj = self._state.objects.get(oid)
        if obj is None:
            raise NotFound(f"no object {oid} in scope {self._scope!r}")
        return self._view(obj)

    def history(self, object_id: int) -> list[Observation | Event]:
        """The object's evidence and lifecycle events, in record order."""
        self.get(object_id)
        return self.store.history(self._scope, int(object_id))

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
        the time, valid-time window [since, until], object and count."""
        kinds = _check_kinds(kind)
        return self.store.events(
            self._scope,
            kind=kinds,
            label=None if label is None else check_label(label, "label"),
            since=None if since is None else check_time(since, "since"),
            until=None if until is None else check_time(until, "until"),
            object_id=None if object_id is None else check_int(object_id, "object_id"),
            limit=None if limit is None else check_int(limit, "limit", lo=1),
        )

    def rejected(self, limit: int | None = None) -> list[Observation]:
        """Detections the tracker rejected, each with its reason, oldest first."""
        return self.store.observations(
            self._scope, rejected=True,
            limit=None if limit is None else check_int(limit, "limit", lo=1),
        )

    def recall(self, name: str) -> RecallResult:
        """What the memory knows about ``name`` ("cup", "the red mug"): the best matching
        object, its status, last place and time, and a one-line answer."""
        self.store  # noqa: B018
        if not isinstance(name, str):
            raise InvalidInput(f"name must be a string, got {type(name).__name__}")
        return _recall(name, self._state.objects.values(), self._state.now, self._config)


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
