"""The indexes of a :class:`~locimem.tracker.state.MemoryState`: what it derives from its
data to answer the tracker's questions fast — where objects are, their embeddings, who bears
a label (and, per label, who is absent and who was first seen when), the tombstones' places,
the deltas by key, and when time-only beliefs come due. Never written to disk: rebuilt from
the objects on open (:meth:`StateIndexes.built`), kept in step by the state's upkeep calls.
"""

from __future__ import annotations

import bisect
import heapq
import math
from collections.abc import Mapping
from typing import Any

from locimem.index.features import FeatureMatrix
from locimem.index.grid import SpatialGrid
from locimem.model import ObjectState, TombstoneState
from locimem.model.prior import Delta

__all__ = ["StateIndexes", "delta_keys"]


class StateIndexes:
    """One scope's indexes (see the module)."""

    def __init__(self, grid_cell_m: float = 1.0, approximate_above: int | None = None
                 ) -> None:
        self.grid = SpatialGrid(grid_cell_m)
        # mean embeddings, for re-finding by appearance (exact, or approximate above this size)
        self.features = FeatureMatrix(approximate_above)
        self.tomb_grid = SpatialGrid(grid_cell_m)
        # deltas by (kind, evidence identity) and by ("object", prior object): delta ids
        self.delta_index: dict[tuple[Any, int], list[int]] = {}
        # objects by voted label: label -> ids, and id -> label; per label, the promoted ids
        # missed since their last sighting or lost as (last seen, id), and (first seen, id),
        # in order (with the key each id is filed under)
        self._by_label: dict[str, set[int]] = {}
        self._label_of: dict[int, str] = {}
        self._absent: dict[str, list[tuple[float, int]]] = {}
        self._absent_key: dict[int, tuple[float, int]] = {}
        self._born: dict[str, list[tuple[float, int]]] = {}
        self._born_key: dict[int, tuple[float, int]] = {}
        # loss queue: (deadline, id) for objects not lost whose belief is time-only (last seen
        # without a camera); stale entries are refreshed lazily
        self._loss_queue: list[tuple[float, int]] = []

    @classmethod
    def built(cls, objects: Mapping[int, ObjectState], tombstones: Mapping[int, TombstoneState],
              deltas: Mapping[int, Delta], lost_after_s: float, grid_cell_m: float,
              approximate_above: int | None) -> StateIndexes:
        """Every index, from the data (as :meth:`place` of each object in id order, then the
        tombstones, deltas and loss queue, would leave them)."""
        ix = cls.__new__(cls)
        placed = [objects[oid] for oid in sorted(objects)]  # as place of each, in order
        ix.grid = SpatialGrid.built(grid_cell_m, [(o.id, o.center) for o in placed])
        ix.features = FeatureMatrix.built(
            [(o.id, o.feature) for o in placed if o.feature is not None], approximate_above)
        ix._label_of = {o.id: o.label for o in placed}
        by_label: dict[str, set[int]] = {}
        for o in placed:
            ids = by_label.get(o.label)
            if ids is None:
                by_label[o.label] = {o.id}
            else:
                ids.add(o.id)
        ix._by_label = by_label
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
        ix._absent, ix._absent_key = absent, absent_key
        ix._born, ix._born_key = born, born_key
        ix.tomb_grid = SpatialGrid.built(
            grid_cell_m, [(oid, tomb.obj.center) for oid, tomb in tombstones.items()])
        ix.delta_index = {}
        for delta in deltas.values():
            ix.index_delta(delta)
        ix._loss_queue = [(o.last_seen + lost_after_s, o.id) for o in objects.values()
                          if not o.lost and not o.seen_camera]
        heapq.heapify(ix._loss_queue)
        return ix

    # -- upkeep (the state calls these as its data changes) -----------------------------------
    def schedule_loss(self, obj: ObjectState, lost_after_s: float) -> None:
        if not obj.seen_camera:
            heapq.heappush(self._loss_queue, (obj.last_seen + lost_after_s, obj.id))

    def place(self, obj: ObjectState) -> None:
        """Index an object's position (and embedding, and label) after it changed."""
        self.grid.set(obj.id, obj.center)
        if obj.feature is not None:
            self.features.set(obj.id, obj.feature)
        self.index_label(obj)

    def unplace(self, object_id: int) -> None:
        self.grid.remove(object_id)
        self.features.remove(object_id)
        label = self._label_of.pop(object_id, None)
        if label is not None:
            self._unfile(object_id, label)

    def index_label(self, obj: ObjectState) -> None:
        """File the object under its voted label (after it appeared, was sighted, or its label
        or absence changed)."""
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

    def index_delta(self, delta: Delta) -> None:
        """File a delta in ``delta_index`` once (its keys never change: a delta's later
        events, changing its status, find it filed)."""
        for key in delta_keys(delta):
            ids = self.delta_index.setdefault(key, [])
            if delta.id not in ids:
                ids.append(delta.id)

    # -- questions ----------------------------------------------------------------------------
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

    def due_for_loss(self, objects: Mapping[int, ObjectState], t: float, lost_after_s: float,
                     limit: int | None = None) -> list[int]:
        """Ids of ``objects`` (not lost, time-only belief) unseen for more than
        ``lost_after_s`` at time ``t``, in ascending order — at most ``limit`` of them, the
        longest overdue (the others stay queued for the next call). Only touches queue
        entries that are due, and leaves the queue valid whatever the caller then does (due
        ids are dropped once they are marked lost; objects last seen with a camera are
        dropped: their loss is decided from the absence credited to them, not from time)."""
        queue = self._loss_queue
        due: set[int] = set()
        requeue: list[tuple[float, int]] = []
        room = len(objects) + 1 if limit is None else limit
        while queue and queue[0][0] < t and len(due) < room:
            _, oid = heapq.heappop(queue)
            obj = objects.get(oid)
            if obj is None or obj.lost or obj.seen_camera:
                continue
            deadline = obj.last_seen + lost_after_s
            if deadline < t:
                due.add(oid)
            requeue.append((deadline, oid))
        for entry in requeue:
            heapq.heappush(queue, entry)
        return sorted(due)


def delta_keys(delta: Delta) -> tuple[tuple[Any, int], ...]:
    """The keys ``StateIndexes.delta_index`` files a delta under: (kind, the identity its
    evidence comes from) and ("object", the prior object it is about)."""
    return ((delta.kind, delta.evidence_id), ("object", delta.object))
