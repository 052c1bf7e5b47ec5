"""Every read of a memory, over one state: the live memory and its as-of views share this.

A reader sees one scope, up to one commit. Objects that are forgotten *now* (they have a
tombstone) are hidden from every read path, including as-of views of times before the forget;
the audit trail still says who forgot what, when and why.
"""

from __future__ import annotations

import copy
import heapq
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from locimem.check import (
    check_coordinate_domain,
    check_distance_domain,
    check_int,
    check_label,
    check_object_id,
    check_time,
)
from locimem.config import TrackerConfig
from locimem.errors import InvalidInput, NotFound, StoreClosed
from locimem.evidence.keyframes import Keyframe
from locimem.index.vectors import VectorIndex
from locimem.model import (
    AuditEntry,
    Event,
    EventKind,
    ObjectState,
    ObjectStatus,
    Observation,
    RecallResult,
    RejectionKey,
    Tombstone,
    TrackedObject,
)
from locimem.query.encoder import Encoder
from locimem.query.hedge import hedged_sentence, place_text, sanitize
from locimem.query.recall import label_matches, name_words
from locimem.query.recall import recall as _recall
from locimem.query.semantic import SemanticIndex
from locimem.query.temporal import ObjectChanges, group_changes
from locimem.query.views import status_of, view
from locimem.scene.levels import OBJECT_LEVELS, level_of
from locimem.scene.relations import RELATIONS
from locimem.scene.rooms import RoomMap
from locimem.store.base import Store
from locimem.tracker.apply import apply
from locimem.tracker.deltas import DELTA_KINDS, DELTA_STATUSES
from locimem.tracker.state import MemoryState

if TYPE_CHECKING:
    from locimem.query.ask import QueryResult

if TYPE_CHECKING:
    from locimem.query.ask import QueryResult

COMMIT_KINDS = ("scan", "correction", "forget", "maintenance", "scene", "prior", "review",
                "consolidate")
LIVE_STATUSES = ("confirmed", "tentative", "doubted")


class MemoryReader:
    """Read-only questions over one state of one scope (see :class:`ObjectMemory`)."""

    _store: Store | None
    _scope: str
    _config: TrackerConfig
    _state: MemoryState
    _until_commit: int | None = None  # as-of views read the record only up to here
    _owner: MemoryReader | None = None  # as-of views: the live memory they look back from
    _encoder: Encoder | None = None
    _vector_index: Callable[[int], VectorIndex] | None = None
    _semantic_index: SemanticIndex | None = None  # built on first use

    def __init__(self, store: Store, scope: str, config: TrackerConfig, state: MemoryState,
                 until_commit: int | None = None, owner: MemoryReader | None = None) -> None:
        self._store = store
        self._scope = scope
        self._config = config
        self._state = state
        self._until_commit = until_commit
        self._owner = owner
        if owner is not None:
            self._encoder, self._vector_index = owner._encoder, owner._vector_index

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
        if self._owner is not None:  # a view lives as long as the memory it came from
            return self._owner.store
        if self._store is None:
            raise StoreClosed("this memory is closed; open it again with ObjectMemory.open()")
        return self._store

    def snapshot(self) -> dict[str, Any]:
        """A plain, comparable picture of the state (indexes excluded). An as-of view leaves
        out what has been forgotten since, like every other read."""
        self.store  # noqa: B018 - raises if closed
        snap = self._state.snapshot()
        if self._owner is not None:
            hidden = self._hidden()
            snap["objects"] = {k: v for k, v in snap["objects"].items() if k not in hidden}
        return snap

    # -- objects ------------------------------------------------------------------------------
    def _visible(self) -> Iterable[ObjectState]:
        hidden = self._hidden()
        objects = self._state.objects
        return (objects[oid] for oid in sorted(objects) if oid not in hidden)

    def _hidden(self) -> dict[int, Any]:
        """Ids to hide: whatever is forgotten *now*, in the live memory."""
        if self._owner is not None:
            return self._owner._hidden()
        return self._state.tombstones

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
        oid = check_object_id(object_id, "object_id")
        obj = self._state.objects.get(oid)
        if obj is None or oid in self._hidden():
            if obj is None and oid not in self._hidden():
                merged = self.store.merged_into(self._scope, oid, until_commit=self._until_commit)
                if merged is not None and merged in self._state.objects:
                    raise NotFound(f"object {oid} was merged into #{merged} (a duplicate of "
                                   f"it); use id {merged}")
            raise NotFound(f"no object {oid} in scope {self._scope!r}")
        return obj

    def recall(self, name: str) -> RecallResult:
        """What the memory knows about ``name`` ("cup", "the red mug"): the best matching
        object, its status, last place and time, and a one-line answer."""
        self.store  # noqa: B018
        if not isinstance(name, str):
            raise InvalidInput(f"name must be a string, got {type(name).__name__}")
        return _recall(name, list(self._visible()), self._state.now, self._config)

    # -- space ---------------------------------------------------------------------------------
    def _filter(self, label: str | None, status: Any, level: str | None = None,
                room: str | None = None) -> Callable[[ObjectState], bool]:
        """A predicate for the spatial and temporal queries' common filters."""
        wanted = _check_statuses(status) if status is not None else None
        if level is not None and level not in OBJECT_LEVELS:
            raise InvalidInput(f"level must be one of {', '.join(OBJECT_LEVELS)}, got {level!r}")
        if room is not None:
            room = self._room(room)
        words = None
        if label is not None:
            if not isinstance(label, str):
                raise InvalidInput(f"label must be a string, got {type(label).__name__}")
            words = name_words(label)
            if not words:
                raise InvalidInput(f"label must name something, got {label!r}")
        hidden = self._hidden()
        now, config = self._state.now or 0.0, self._config

        def accept(obj: ObjectState) -> bool:
            if obj.id in hidden:
                return False
            if words is not None and not label_matches_folded(words, obj.label):
                return False
            if wanted is not None and status_of(obj, now, config) not in wanted:
                return False
            if level is not None and level_of(obj) != level:
                return False
            return room is None or self._room_of(obj) == room

        return accept

    def near(self, point: Any, radius: float, *, label: str | None = None,
             status: Any = LIVE_STATUSES, level: str | None = None,
             room: str | None = None) -> list[TrackedObject]:
        """Objects whose centre is within ``radius`` metres of ``point`` (x, y, z; map frame),
        nearest first. ``label`` matches whole words ("chair" finds "office chair", "table"
        never "vegetable"); ``status`` defaults to every status but lost; ``level`` is
        ``furniture`` or ``item``; ``room`` a defined room's name."""
        p = check_coordinate_domain(point, "point")
        r = check_distance_domain(radius, "radius")
        accept = self._filter(label, status, level, room)
        objects = self._state.objects
        return [self._view(objects[oid]) for _, oid in self._state.grid.near(p, r)
                if accept(objects[oid])]

    def nearest(self, point: Any, k: int = 1, *, label: str | None = None,
                status: Any = LIVE_STATUSES, level: str | None = None,
                room: str | None = None) -> list[TrackedObject]:
        """The ``k`` objects nearest to ``point`` (filters as in :meth:`near`), nearest first."""
        p = check_coordinate_domain(point, "point")
        k = check_int(k, "k", lo=1, hi=10_000)
        accept = self._filter(label, status, level, room)
        objects = self._state.objects
        hits = self._state.grid.nearest(p, k, accept=lambda oid: accept(objects[oid]))
        return [self._view(objects[oid]) for _, oid in hits]

    def within(self, box_min: Any, box_max: Any, *, label: str | None = None,
               status: Any = LIVE_STATUSES, level: str | None = None,
               room: str | None = None) -> list[TrackedObject]:
        """Objects whose centre lies in the axis-aligned box [box_min, box_max] (map frame,
        inclusive), by id."""
        lo = check_coordinate_domain(box_min, "box_min")
        hi = check_coordinate_domain(box_max, "box_max")
        if any(a > b for a, b in zip(lo, hi, strict=True)):
            raise InvalidInput(f"box_min {lo} must not exceed box_max {hi} on any axis")
        accept = self._filter(label, status, level, room)
        objects = self._state.objects
        return [self._view(objects[oid]) for oid in self._state.grid.within_box(lo, hi)
                if accept(objects[oid])]

    # -- time ----------------------------------------------------------------------------------
    def recent(self, n: int = 10, *, label: str | None = None,
               status: Any = None) -> list[TrackedObject]:
        """The ``n`` most recently seen objects, newest first (ties by id)."""
        n = check_int(n, "n", lo=1, hi=10_000)
        accept = self._filter(label, status)
        objs = heapq.nsmallest(n, (o for o in self._state.objects.values() if accept(o)),
                               key=lambda o: (-o.last_seen, o.id))
        return [self._view(o) for o in objs]

    def stale(self, before: float, *, label: str | None = None,
              status: Any = LIVE_STATUSES) -> list[TrackedObject]:
        """Objects not seen since before time ``before`` (and, by default, not lost): what
        the robot should look at again. Oldest sighting first."""
        t = check_time(before, "before")
        accept = self._filter(label, status)
        objs = sorted((o for o in self._state.objects.values()
                       if o.last_seen < t and accept(o)), key=lambda o: (o.last_seen, o.id))
        return [self._view(o) for o in objs]

    def last_seen(self, label: str) -> TrackedObject | None:
        """The most recently seen object answering to ``label`` (any status), or None."""
        found = self.recent(1, label=label)
        return found[0] if found else None

    def changes_since(self, t: float) -> list[ObjectChanges]:
        """What changed since valid time ``t``, grouped by object: appeared, moved, relabelled,
        lost, reacquired, corrected (and relation changes), in order of first change."""
        since = check_time(t, "t")
        return group_changes(self.events(since=since))

    def where_was(self, label_or_id: str | int, t: float) -> RecallResult:
        """Where something was at valid time ``t``: an object id, or a name as in
        :meth:`recall`, answered from the memory as it was then."""
        view_then = self._reader_at(check_time(t, "t"))
        if isinstance(label_or_id, str):
            return view_then.recall(label_or_id)
        oid = check_object_id(label_or_id, "label_or_id")
        try:
            obj = view_then._object(oid)
        except NotFound:
            return RecallResult(query=str(oid), found=False,
                                text=f"I knew of no object #{oid} at t={t}.")
        return _recall_object(obj, view_then)

    def _reader_at(self, t: float) -> MemoryReader:
        return self.as_of(t)

    # -- the past ------------------------------------------------------------------------------
    def _load_state(self, *, from_log: bool, until_commit: int | None = None) -> MemoryState:
        """Build a state: from the materialised cache, or by replaying the record (from the
        newest checkpoint at or before ``until_commit``) — inside one read transaction, so
        the state is one that was committed, never a mix of two (another process may be
        writing)."""
        with self.store.snapshot_read():
            return self._read_state(from_log=from_log, until_commit=until_commit)

    def _read_state(self, *, from_log: bool, until_commit: int | None) -> MemoryState:
        store, scope = self.store, self._scope
        lost_after = self._config.lost_after_s
        cell = self._config.drift_radius_m
        relations = self._config.relations
        state = MemoryState(grid_cell_m=cell, relations=relations)
        if from_log:
            checkpoint = store.latest_checkpoint(scope, until_commit)
            after = 0
            if checkpoint is not None:
                after, snapshot = checkpoint
                state = MemoryState.from_snapshot(snapshot, cell, relations)
            for record in store.iter_log(scope, after_commit=after, until_commit=until_commit):
                apply(state, record, lost_after)
        else:
            for obj in store.load_objects(scope):
                state.objects[obj.id] = obj
                if obj.feature is not None and state.feature_dim is None:
                    state.feature_dim = int(obj.feature.shape[0])
            state.tombstones = store.load_tombstones(scope)
            state.rejections = store.load_rejections(scope)
            rooms = store.load_rooms(scope)
            if rooms is not None:
                state.scene.rooms = RoomMap.from_dict(rooms)
            state.now = store.last_commit_time(scope)
            state.prior = store.load_json_rows("prior_map", scope)
            state.deltas = store.load_json_rows("deltas", scope)
            state.keyframes = store.load_json_rows("keyframes", scope)
        if state.feature_dim is None:  # a forgotten object's embedding still fixes the width
            for tomb in state.tombstones.values():
                if tomb.obj.feature is not None:
                    state.feature_dim = int(tomb.obj.feature.shape[0])
                    break
        if state.feature_dim is None and not from_log:  # ... and so do expired ones'
            state.feature_dim = store.feature_dim(scope)
        # ids and sequence numbers are file-wide, so scopes sharing a file never collide
        state.next_object_id, state.next_seq, state.next_commit = store.counters()
        state.rebuild_indexes(lost_after)
        return state

    def as_of(self, t: float | None = None, *, recorded: float | None = None) -> MemoryReader:
        """The memory as it was: a read-only view of the state at valid (world) time ``t`` —
        after every commit with time <= t — or, with ``recorded``, of what the store held at
        record (wall-clock) time ``recorded``. Every read method works on the view; it reads the
        record only up to that point. Objects forgotten since stay hidden.

        >>> from locimem import Detection, ObjectMemory
        >>> with ObjectMemory.open() as mem:
        ...     _ = mem.observe(0.0, [Detection("cup", 0.9, (0.4, 0.1, 0.9), (0.1, 0.1, 0.1))])
        ...     _ = mem.observe(5.0, [Detection("cup", 0.9, (1.0, 0.5, 0.9), (0.1, 0.1, 0.1))])
        ...     [round(x, 1) for x in mem.as_of(1.0).get(1).center]
        [0.4, 0.1, 0.9]
        """
        if (t is None) == (recorded is None):
            raise InvalidInput("as_of() needs exactly one of t (valid time) or recorded=")
        if t is not None:
            until = self.store.last_commit_at(self._scope, t=check_time(t, "t"))
        else:
            until = self.store.last_commit_at(self._scope,
                                              recorded=check_time(recorded, "recorded"))
        until = until or 0
        if self._until_commit is not None:
            until = min(until, self._until_commit)
        state = self._load_state(from_log=True, until_commit=until)
        return MemoryReader(self.store, self._scope, self._config, state, until_commit=until,
                            owner=self._owner or self)

    # -- the scene graph -----------------------------------------------------------------------
    def rooms(self) -> list[RoomInfo]:
        """The defined rooms (name, floor polygon, z range, linked rooms), by name."""
        self.store  # noqa: B018
        rooms = self._state.scene.rooms
        return [RoomInfo(r.name, r.polygon, r.z_range, tuple(rooms.neighbors(r.name)))
                for r in rooms.rooms()]

    def path_rooms(self, a: str, b: str) -> list[str] | None:
        """Rooms from ``a`` to ``b`` through linked rooms (fewest doors; ties alphabetical),
        or None when no path exists."""
        rooms = self._state.scene.rooms
        for name in (a, b):
            self._room(name)
        return rooms.path(a, b)

    def _room(self, name: Any) -> str:
        if not isinstance(name, str):
            raise InvalidInput(f"room must be a string, got {type(name).__name__}")
        name = check_label(name, "room name")  # rooms are named like labels: lower-case
        if name not in self._state.scene.rooms.names():
            known = ", ".join(self._state.scene.rooms.names()) or "none defined"
            raise NotFound(f"no room {name!r} (rooms: {known})")
        return name

    def _room_of(self, obj: ObjectState) -> str | None:
        rooms = self._state.scene.rooms
        if not rooms.names():
            return None
        hit = rooms.assign(obj.center, obj.size)
        return None if hit is None else hit.room

    def room_of(self, object_id: int) -> str | None:
        """The room holding most of the object's footprint (None outside every room)."""
        return self._room_of(self._object(object_id))

    def level_of(self, object_id: int) -> str:
        """``furniture`` or ``item`` (a ``level`` attribute overrides what the label says)."""
        return level_of(self._object(object_id))

    def room_contents(self, room: str, *, label: str | None = None,
                      status: Any = LIVE_STATUSES) -> list[TrackedObject]:
        """Objects whose footprint lies mostly in ``room``, by id."""
        name = self._room(room)
        r = self._state.scene.rooms.get(name)
        xs = [p[0] for p in r.polygon]
        ys = [p[1] for p in r.polygon]
        z0, z1 = r.z_range if r.z_range is not None else (-1e9, 1e9)
        accept = self._filter(label, status)
        objects = self._state.objects
        return [self._view(objects[oid]) for oid in self._state.grid.within_box(
                    (min(xs), min(ys), z0), (max(xs), max(ys), z1))
                if accept(objects[oid]) and self._room_of(objects[oid]) == name]

    def relations(self, object_id: int) -> list[RelationInfo]:
        """Every relation the object is part of: on, under, in, contains, next_to, near
        (only published, present objects take part), strongest first."""
        obj = self._object(object_id)
        index = self._state.scene.relations
        if obj.id not in index:
            return []
        hidden = self._hidden()
        objects = self._state.objects

        def since(r: Any) -> float:  # it holds since both settled where they are
            return max(objects[r.subject].place_t, objects[r.object].place_t)

        out = [RelationInfo(r.subject, r.relation, r.object, r.confidence, since(r))
               for r in index.relations_of(obj.id)
               if r.subject not in hidden and r.object not in hidden]
        return sorted(out, key=lambda r: (-r.confidence, r.subject, r.relation, r.object))

    def related(self, object_id: int, relation: str = "on") -> list[TrackedObject]:
        """What stands in ``relation`` to the object: ``related(table, "on")`` is what is on
        the table; ``related(drawer, "in")`` what is in the drawer. Strongest first."""
        obj = self._object(object_id)
        if relation not in RELATIONS:
            raise InvalidInput(f"relation must be one of {', '.join(RELATIONS)}, "
                               f"got {relation!r}")
        index = self._state.scene.relations
        if obj.id not in index:
            return []
        hidden = self._hidden()
        objects = self._state.objects
        return [self._view(objects[oid]) for _, oid in index.subjects(relation, obj.id)
                if oid not in hidden and oid in objects]

    def anchors(self) -> list[TrackedObject]:
        """Landmarks marked ``anchor=True`` with :meth:`ObjectMemory.set_attributes`."""
        return [self._view(o) for o in self._visible() if o.attributes.get("anchor") is True]

    # -- the prior map, its deltas and keyframe evidence --------------------------------------
    def prior_map(self) -> dict[int, dict[str, Any]]:
        """The prior (long-term) map: object id -> entry (``label``, ``center``, ``size``,
        ``orientation``, ``attributes``, ``confidence``, ``source``, ``prior_id``); empty until
        :meth:`ObjectMemory.load_prior`. Copies: changing them changes nothing."""
        hidden = self._hidden()
        return {oid: copy.deepcopy(e) for oid, e in sorted(self._state.prior.items())
                if oid not in hidden}

    def deltas(self, status: str | Iterable[str] | None = None, *, kind: str | None = None
               ) -> list[dict[str, Any]]:
        """Differences between live evidence and the prior map, oldest first: each a dict
        with ``id``, ``kind`` (moved, removed, added, geometry), ``status`` (pending,
        confirmed, rejected, applied), ``object`` (the prior object; ``live``: the identity
        the evidence came to, when the tracker gave it a new one), ``label``, ``prior`` and
        ``observed`` boxes, ``evidence`` (``n`` sightings or misses, ``first_t``, ``last_t``,
        ``keyframes``: the seqs of the frames kept for it — see :meth:`keyframes`)
        and ``history`` (each status, by whom, why). Copies."""
        wanted = _check_choice(status, DELTA_STATUSES, "status")
        kinds = _check_choice(kind, DELTA_KINDS, "kind")
        hidden = self._hidden()
        return [copy.deepcopy(d) for _, d in sorted(self._state.deltas.items())
                if (wanted is None or d["status"] in wanted) and (kinds is None or d["kind"]
                                                                   in kinds)
                and d["object"] not in hidden and d.get("live") not in hidden]

    def delta(self, delta_id: int) -> dict[str, Any]:
        """One delta by id (NotFound if there is none)."""
        return copy.deepcopy(self._delta_of(delta_id))

    def _delta_of(self, delta_id: int) -> dict[str, Any]:
        if isinstance(delta_id, bool) or not isinstance(delta_id, int):
            raise InvalidInput(f"delta id must be an integer, got {delta_id!r}")
        delta = self._state.deltas.get(delta_id)
        if delta is None:
            raise NotFound(f"no delta {delta_id} in scope {self._scope!r}")
        return delta

    def keyframes(self, object_id: int) -> list[Keyframe]:
        """The frames kept as evidence that the object was seen (at most
        ``TrackerConfig.keyframes_kept``), in the order they were kept."""
        obj = self._object(object_id)
        return [Keyframe.from_dict(k) for k in self._state.keyframes.get(obj.id, ())]

    def archived_keyframes(self, object_id: int) -> list[Keyframe]:
        """The frames that were kept for the object and later replaced by better ones, oldest
        first (read from the log's KEYFRAME events: nothing is dropped)."""
        obj = self._object(object_id)
        return [Keyframe.from_dict(ev.data["archived"]) for ev in self.store.events(
            self._scope, kind=[EventKind.KEYFRAME.value], object_id=obj.id,
            until_commit=self._until_commit) if ev.data.get("archived") is not None]

    def describe(self, object_id: int) -> str:
        """One honest line: label (and color), what it is on or in, its room, when it was last
        seen — worded by its trust state ("is on the table" only when confirmed)."""
        obj = self._object(object_id)
        now = self._state.now or 0.0
        status = status_of(obj, now, self._config)
        where = []
        support = [r for r in self.relations(obj.id)
                   if r.subject == obj.id and r.relation in ("on", "in", "under")]
        if support:
            r = support[0]
            other = self._state.objects[r.object]
            where.append(f"{r.relation} the {sanitize(other.label)} (#{other.id})")
        room = self._room_of(obj)
        if room is not None:
            where.append(f"in the {sanitize(room)}")
        if not where:
            where.append(f"at {place_text(obj.center)}")
        color = obj.attributes.get("color")
        named = obj if not isinstance(color, str) else _relabelled(obj, f"{color} {obj.label}")
        return hedged_sentence(named, status, now, where=" ".join(where))

    # -- search ---------------------------------------------------------------------------------
    def _semantic(self) -> SemanticIndex:
        if self._semantic_index is None:
            index = SemanticIndex(self._encoder, self._vector_index)
            index.set_many((o.id, o.label) for o in self._visible())
            self._semantic_index = index
        return self._semantic_index

    def find(self, text: str, top_k: int = 10, *, status: Any = LIVE_STATUSES
             ) -> list[FindResult]:
        """Objects matching a description: whole-word label matches ("table" never finds
        "vegetable"), a built-in synonym and category table ("something to drink from" finds
        cups, mugs, glasses and bottles), and — when the memory has an encoder — embedding
        similarity of labels ("beaker" finds a mug). Best first; ties favour confirmed and
        recently seen objects."""
        if not isinstance(text, str) or not text.strip():
            raise InvalidInput("find() needs a non-empty text")
        if len(text) > 500:
            raise InvalidInput(f"text must be at most 500 characters, got {len(text)}")
        k = check_int(top_k, "top_k", lo=1, hi=1000)
        accept = self._filter(None, status)
        objects = self._state.objects
        now, config = self._state.now or 0.0, self._config
        rank_of = {s: i for i, s in enumerate(ObjectStatus)}

        def rank(oid: int) -> tuple:
            obj = objects[oid]
            return (rank_of[status_of(obj, now, config)], -obj.last_seen, oid)

        hits = self._semantic().search(text, k, lambda oid: oid in objects and
                                       accept(objects[oid]), rank)
        return [FindResult(self._view(objects[m.object_id]), m.score, m.how) for m in hits]

    def query(self, text: str, *, here: Any = None) -> QueryResult:
        """Answer a short question by routing it to the right retriever: "what's on the kitchen
        table", "cups near the sink", "what changed since 10:00", "where is my phone", "what's
        in the kitchen", "how do I get from the bedroom to the kitchen", "the five nearest
        chairs" (with ``here=(x, y, z)``). Anchors match whole words of the memory's labels and
        room names. Returns the objects (or changes, or path) and a one-line answer."""
        from locimem.query.ask import answer_query

        self.store  # noqa: B018
        return answer_query(self, text, here)

    # -- the record ---------------------------------------------------------------------------
    def history(self, object_id: int) -> list[Observation | Event]:
        """The object's evidence, lifecycle events and corrections, in record order."""
        obj = self._object(object_id)
        return self.store.history(self._scope, obj.id, until_commit=self._until_commit,
                                  merged_from=obj.merged_from)

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
            object_id=None if object_id is None else check_object_id(object_id, "object_id"),
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
            actor=actor,
            object_id=None if object_id is None else check_object_id(object_id, "object_id"),
            kinds=kinds,
            recorded_since=None if recorded_since is None else check_time(recorded_since,
                                                                           "recorded_since"),
            recorded_until=None if recorded_until is None else check_time(recorded_until,
                                                                           "recorded_until"),
            limit=None if limit is None else check_int(limit, "limit", lo=1),
            until_commit=self._until_commit,
        )


@dataclass(frozen=True, slots=True)
class RoomInfo:
    """A room: its floor polygon (x, y; metres, map frame), z range, and linked rooms."""

    name: str
    polygon: tuple[tuple[float, float], ...]
    z_range: tuple[float, float] | None
    connected: tuple[str, ...]


@dataclass(frozen=True, slots=True)
class RelationInfo:
    """``subject relation object`` ("#4 on #2") with its confidence in (0, 1], holding
    ``since`` (the time the later of the two settled where it is; the RELATION events in the
    record date each change). ``source``: relations are derived by locimem from the two
    objects' boxes (``"geometry"``); who reported each object is in its own ``source``."""

    subject: int
    relation: str
    object: int
    confidence: float
    since: float
    source: str = "geometry"


@dataclass(frozen=True, slots=True)
class FindResult:
    """An object :meth:`MemoryReader.find` found, its score and how (text or embedding)."""

    object: TrackedObject
    score: float
    how: str


def _relabelled(obj: ObjectState, label: str) -> ObjectState:
    out = obj.copy()
    out.label = label
    return out


def label_matches_folded(words: tuple[str, ...], label: str) -> bool:
    """Whole-word match, also trying the singular of a plural last word ("chairs")."""
    if label_matches(words, label):
        return True
    last = words[-1]
    return len(last) > 2 and last.endswith("s") and label_matches((*words[:-1], last[:-1]),
                                                                  label)


def _recall_object(obj: ObjectState, reader: MemoryReader) -> RecallResult:
    now = reader.now or 0.0
    status = status_of(obj, now, reader.config)
    return RecallResult(
        query=str(obj.id), found=True, text=hedged_sentence(obj, status, now),
        object_id=obj.id, label=obj.label, status=status, center=obj.center,
        last_seen=obj.last_seen,
        confidence=obj.confidence(now, reader.config.tau_s, reader.config.tau_unseen_s),
        lost_at=obj.lost_at,
    )


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


def _check_choice(value: Any, allowed: tuple[str, ...], name: str) -> set[str] | None:
    """None, one of ``allowed``, or several of them, as a set (None: no filter)."""
    if value is None:
        return None
    values = [value] if isinstance(value, str) else value
    if not hasattr(values, "__iter__"):
        raise InvalidInput(f"{name} must be one of {', '.join(allowed)} (or a list of them)")
    out = set()
    for v in values:
        if v not in allowed:
            raise InvalidInput(f"unknown {name} {v!r}; use one of {', '.join(allowed)}")
        out.add(v)
    return out
