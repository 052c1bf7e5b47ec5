"""The live state of a memory: plain data, changed only by :func:`locimem.tracker.apply.apply`.

``MemoryState`` holds the objects and the store-wide counters. Its spatial grid and its loss
queue are *indexes*: derived from the objects, rebuilt on open (when first needed), never
written to disk.
"""

from __future__ import annotations

import bisect
import heapq
import math
from typing import Any

from locimem.evidence.keyframes import Keyframe
from locimem.gcpause import gc_paused
from locimem.index.features import FeatureMatrix
from locimem.index.grid import SpatialGrid
from locimem.model import MapEpoch, ObjectState, RejectionState, TombstoneState
from locimem.model.prior import Delta, PriorEntry
from locimem.scene.relations import RelationConfig
from locimem.scene.rooms import RoomMap
from locimem.scene.state import SceneState


class MemoryState:
    """All objects of one scope, the time of the latest scan, and store-wide counters."""

    def __init__(self, grid_cell_m: float = 1.0, relations: RelationConfig | None = None,
                 approximate_above: int | None = None) -> None:
        self.objects: dict[int, ObjectState] = {}
        self.now: float | None = None  # t of the latest commit; None before the first
        self.next_object_id = 1
        self.next_seq = 1
        self.next_commit = 1
        self.feature_dim: int | None = None
        self.tombstones: dict[int, TombstoneState] = {}
        self.rejections: dict[str, RejectionState] = {}
        self._grid_cell_m = grid_cell_m
        self._approximate_above = approximate_above
        # the lost_after_s of indexes rebuild_indexes left to build on first need, or None;
        # and whether there are such (a plain flag: apply reads it every record)
        self._index_pending: float | None = None
        self.indexes_pending = False
        self.grid = SpatialGrid(grid_cell_m)
        # mean embeddings, for re-finding by appearance (exact, or approximate above this size)
        self.features = FeatureMatrix(approximate_above)
        self.tomb_grid = SpatialGrid(grid_cell_m)
        self.scene = SceneState(relations)
        # the long-term (prior) map: object id -> entry; its deltas: delta id -> delta; and
        # keyframe evidence: object id -> kept frames. Plain JSON data, set by PRIOR, DELTA
        # and KEYFRAME events (each event carries the new value whole).
        self.prior: dict[int, PriorEntry] = {}
        self.deltas: dict[int, Delta] = {}
        self.keyframes: dict[int, tuple[Keyframe, ...]] = {}
        # deltas by (kind, evidence identity) and by ("object", prior object): delta ids
        self.delta_index: dict[tuple[Any, int], list[int]] = {}
        # objects by voted label (an index, like the grid): label -> ids, and id -> label;
        # per label, the promoted ids missed since their last sighting or lost as (last seen,
        # id), and (first seen, id), in order (with the key each id is filed under)
        self._by_label: dict[str, set[int]] = {}
        self._label_of: dict[int, str] = {}
        self._absent: dict[str, list[tuple[float, int]]] = {}
        self._absent_key: dict[int, tuple[float, int]] = {}
        self._born: dict[str, list[tuple[float, int]]] = {}
        self._born_key: dict[int, tuple[float, int]] = {}
        # whether the commit being applied came with a camera (set by apply at each commit)
        self.epochs: dict[str, MapEpoch] = {}  # the map epochs (MAP_EPOCH, MAP_ALIGNED)
        self.camera_commit = False
        # loss queue: (deadline, id) for objects not lost whose belief is time-only (last seen
        # without a camera); stale entries are refreshed lazily
        self._loss_queue: list[tuple[float, int]] = []
        # a replay defers the indexes: built once at the end (rebuild_indexes), not per record
        # (read, never set, outside this class: defer_indexes and rebuild_indexes set it)
        self.indexes_deferred = False

    # -- indexes -----------------------------------------------------------------------------
    def __getattr__(self, name: str) -> Any:
        # only called for an attribute not set: an index rebuild_indexes left to build
        if name in _LAZY and self.__dict__.get("_index_pending") is not None:
            self.ensure_indexes()
            return self.__dict__[name]
        raise AttributeError(f"{type(self).__name__!r} object has no attribute {name!r}")

    def defer_indexes(self) -> None:
        """Stop maintaining the indexes (the grids but the tombstones', embeddings, labels,
        loss queue, relations) until :meth:`rebuild_indexes` builds them from the objects: a
        replay applies every record, then indexes once. ``apply`` only ever writes them, so
        the objects come out the same."""
        self.indexes_deferred = True
        self.scene.deferred = True

    def schedule_loss(self, obj: ObjectState, lost_after_s: float) -> None:
        if self.indexes_deferred:
            return
        if not obj.seen_camera:
            heapq.heappush(self._loss_queue, (obj.last_seen + lost_after_s, obj.id))

    def place_object(self, obj: ObjectState) -> None:
        """Index an object's position (and embedding, and label) after it changed."""
        if self.indexes_deferred:
            return
        self.grid.set(obj.id, obj.center)
        if obj.feature is not None:
            self.features.set(obj.id, obj.feature)
        self.index_label(obj)

    def unplace_object(self, object_id: int) -> None:
        if self.indexes_deferred:
            return
        self.grid.remove(object_id)
        self.features.remove(object_id)
        label = self._label_of.pop(object_id, None)
        if label is not None:
            self._unfile(object_id, label)

    def index_label(self, obj: ObjectState) -> None:
        """File the object under its voted label (after it appeared, was sighted, or its label
        or absence changed)."""
        if self.indexes_deferred:
            return
        oid, label = obj.id, obj.label
        old = self._label_of.get(oid)
        if old != label:
            if old is not None:
                self._unfile(oid, old)
            self._label_of[oid] = label
            self._by_label.setdefault(label, set()).add(oid)
        key = (obj.first_seen, oid)
        if self._born_key.get(oid) != key:  # new here, or first seen earlier (a merge)
            if old == label:
                self._born[label].remove(self._born_key[oid])
            bisect.insort(self._born.setdefault(label, []), key)
            self._born_key[oid] = key
        self.note_absence(obj)

    def note_absence(self, obj: ObjectState) -> None:
        """Keep the object among its label's absent ones while it is promoted and missed or
        lost, filed under its last sighting (see :meth:`absent_with_label`)."""
        if self.indexes_deferred:
            return
        oid = obj.id
        key = self._absent_key.get(oid)
        if obj.promoted and (obj.lost or obj.n_missed):
            if key is None or key[0] != obj.last_seen:
                if key is not None:
                    self._unfile_absent(oid, obj.label)
                key = self._absent_key[oid] = (obj.last_seen, oid)
                bisect.insort(self._absent.setdefault(obj.label, []), key)
        elif key is not None:
            self._unfile_absent(oid, obj.label)

    def _unfile_absent(self, oid: int, label: str) -> None:
        key = self._absent_key.pop(oid, None)
        if key is not None:
            keys = self._absent[label]
            del keys[bisect.bisect_left(keys, key)]

    def _unfile(self, oid: int, label: str) -> None:
        self._by_label[label].discard(oid)
        self._unfile_absent(oid, label)
        self._born[label].remove(self._born_key.pop(oid))

    def with_label(self, label: str) -> set[int]:
        """Ids of the objects whose voted label is ``label`` (a view: do not change it)."""
        return self._by_label.get(label, set())

    def absent_with_label(self, label: str, seen_before: float = math.inf) -> list[int]:
        """Ids of the promoted objects with voted label ``label`` that looks have missed since
        their last sighting, or that are lost (the candidates for a move nobody watched), in
        the order of their last sighting — those last seen before ``seen_before`` at least
        (an object's key is its last sighting when it was filed, and sightings only move
        later: a few seen since may come too; check ``last_seen``)."""
        keys = self._absent.get(label)
        if not keys:
            return []
        return [oid for _, oid in keys[:bisect.bisect_left(keys, (seen_before,))]]

    def first_seen_after(self, label: str, t: float) -> list[int]:
        """Ids of the objects with voted label ``label`` first seen after ``t``, oldest
        first."""
        born = self._born.get(label, [])
        return [oid for _, oid in born[bisect.bisect_right(born, (t, float("inf"))):]]

    def rebuild_indexes(self, lost_after_s: float) -> None:
        """Index the objects afresh (on open, and at the end of a replay) — on first need:
        the grids, embedding matrix, label index, delta index and loss queue when one of them
        is first read, or before ``apply`` applies the next record (:meth:`ensure_indexes`),
        so they are built from the objects as they are now, exactly as building them now
        would; the relations when first needed (see :meth:`SceneState.rebuild_lazily`). An
        open that asks nothing of them never builds them."""
        self.indexes_deferred = False
        for name in _LAZY:
            self.__dict__.pop(name, None)
        self._index_pending = lost_after_s
        self.indexes_pending = True
        self.scene.rebuild_lazily(self.objects.values())

    def ensure_indexes(self) -> None:
        """Build the indexes :meth:`rebuild_indexes` left to build, if it did (``apply``
        calls it before changing anything)."""
        lost_after_s = self._index_pending
        if lost_after_s is None:
            return
        with gc_paused():  # it makes objects by the thousand and frees none
            self._build_indexes(lost_after_s)
        self._index_pending = None
        self.indexes_pending = False

    def _build_indexes(self, lost_after_s: float) -> None:
        """Every index but the relations, from the objects (as ``place_object`` of each
        object in id order, then the tombstones, deltas and loss queue, would leave them)."""
        objects = self.objects
        placed = [objects[oid] for oid in sorted(objects)]  # as place_object of each, in order
        cell_m = self._grid_cell_m
        self.grid = SpatialGrid.built(cell_m, [(o.id, o.center) for o in placed])
        self.features = FeatureMatrix.built(
            [(o.id, o.feature) for o in placed if o.feature is not None],
            self._approximate_above)
        self._label_of = {o.id: o.label for o in placed}
        by_label: dict[str, set[int]] = {}
        for o in placed:
            ids = by_label.get(o.label)
            if ids is None:
                by_label[o.label] = {o.id}
            else:
                ids.add(o.id)
        self._by_label = by_label
        absent: dict[str, list[tuple[float, int]]] = {}
        absent_key: dict[int, tuple[float, int]] = {}
        born: dict[str, list[tuple[float, int]]] = {}
        born_key: dict[int, tuple[float, int]] = {}
        for o in placed:
            key = born_key[o.id] = (o.first_seen, o.id)
            born.setdefault(o.label, []).append(key)
            if o.promoted and (o.lost or o.n_missed):
                key = absent_key[o.id] = (o.last_seen, o.id)
                absent.setdefault(o.label, []).append(key)
        for keys in (*born.values(), *absent.values()):
            keys.sort()
        self._absent, self._absent_key = absent, absent_key
        self._born, self._born_key = born, born_key
        self.tomb_grid = SpatialGrid.built(
            cell_m, [(oid, tomb.obj.center) for oid, tomb in self.tombstones.items()])
        self.delta_index = {}
        for delta in self.deltas.values():
            self.index_delta(delta)
        self._loss_queue = [
            (o.last_seen + lost_after_s, o.id) for o in self.objects.values()
            if not o.lost and not o.seen_camera
        ]
        heapq.heapify(self._loss_queue)

    def index_delta(self, delta: Delta) -> None:
        """File a delta in ``delta_index`` (once; its keys never change)."""
        for key in delta_keys(delta):
            ids = self.delta_index.setdefault(key, [])
            if delta.id not in ids[-1:]:
                ids.append(delta.id)

    def due_for_loss(self, t: float, lost_after_s: float) -> list[int]:
        """Ids of objects (not lost, time-only belief) unseen for more than ``lost_after_s`` at
        time ``t``, in ascending order. Only touches queue entries that are due, and leaves the
        queue valid whatever the caller then does (due ids are dropped once they are marked
        lost; objects last seen with a camera are dropped: their loss is decided from the
        absence credited to them, not from time)."""
        queue = self._loss_queue
        due: list[int] = []
        requeue: list[tuple[float, int]] = []
        while queue and queue[0][0] < t:
            _, oid = heapq.heappop(queue)
            obj = self.objects.get(oid)
            if obj is None or obj.lost or obj.seen_camera:
                continue
            deadline = obj.last_seen + lost_after_s
            if deadline < t:
                due.append(oid)
            requeue.append((deadline, oid))
        for entry in requeue:
            heapq.heappush(queue, entry)
        return sorted(set(due))

    def snapshot(self) -> dict[str, Any]:
        """A plain, comparable picture of the whole state (indexes excluded)."""
        return {
            "now": self.now,
            "feature_dim": self.feature_dim,
            "objects": {oid: o.to_dict() for oid, o in sorted(self.objects.items())},
            "tombstones": {oid: t.to_dict() for oid, t in sorted(self.tombstones.items())},
            "rejections": {k: r.to_dict() for k, r in sorted(self.rejections.items())},
            "rooms": self.scene.rooms.to_dict(),
            "prior": {oid: e.to_dict() for oid, e in sorted(self.prior.items())},
            "deltas": {did: d.to_dict() for did, d in sorted(self.deltas.items())},
            "keyframes": {oid: [k.to_dict() for k in kept]
                          for oid, kept in sorted(self.keyframes.items())},
            # (only a scope that has map epochs has the key: older checkpoints read alike)
            **({"epochs": {n: e.to_dict() for n, e in sorted(self.epochs.items())}}
               if self.epochs else {}),
        }

    def relations_snapshot(self) -> dict[str, float]:
        """Every relation ("subject relation object" -> confidence), for comparisons."""
        return {f"{s} {r} {o}": c for (s, r, o), c in sorted(self.scene.relations.all().items())}

    @classmethod
    def from_snapshot(cls, data: dict[str, Any], grid_cell_m: float,
                      relations: RelationConfig | None = None,
                      approximate_above: int | None = None) -> MemoryState:
        """Inverse of :meth:`snapshot` (keys may have become strings in JSON)."""
        state = cls(grid_cell_m, relations, approximate_above)
        state.now = data["now"]
        state.feature_dim = data["feature_dim"]
        state.objects = {int(k): ObjectState.from_dict(v) for k, v in data["objects"].items()}
        state.tombstones = {int(k): TombstoneState.from_dict(v)
                            for k, v in data["tombstones"].items()}
        state.rejections = {k: RejectionState(**v) for k, v in data["rejections"].items()}
        state.scene.rooms = RoomMap.from_dict(data["rooms"])
        # absent from version-1 checkpoints
        state.prior = {int(k): PriorEntry.from_dict(v) for k, v in data.get("prior", {}).items()}
        state.deltas = {int(k): Delta.from_dict(v) for k, v in data.get("deltas", {}).items()}
        state.keyframes = {int(k): keyframes_of(v) for k, v in data.get("keyframes", {}).items()}
        state.epochs = {n: MapEpoch.from_dict(e) for n, e in data.get("epochs", {}).items()}
        return state


_LAZY = frozenset({"grid", "features", "tomb_grid", "delta_index", "_by_label", "_label_of",
                   "_absent", "_absent_key", "_born", "_born_key", "_loss_queue"})
"""The indexes :meth:`MemoryState.rebuild_indexes` leaves to build on first need."""


def delta_keys(delta: Delta) -> tuple[tuple[Any, int], ...]:
    """The keys ``MemoryState.delta_index`` files a delta under: (kind, the identity its
    evidence comes from) and ("object", the prior object it is about)."""
    return ((delta.kind, delta.evidence_id), ("object", delta.object))


def keyframes_of(kept: list[dict[str, Any]]) -> tuple[Keyframe, ...]:
    """The frames a KEYFRAME event (or a stored row) keeps, from their JSON form. They were
    checked when they were made, so they are read without checking again (replay is hot)."""
    return tuple(Keyframe.trusted(k) for k in kept)
