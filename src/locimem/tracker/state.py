"""The live state of a memory: plain data, changed only by :func:`locimem.tracker.apply.apply`.

``MemoryState`` holds the objects and the store-wide counters. Its spatial grid and its loss
queue are *indexes*: derived from the objects, rebuilt on open, never written to disk.
"""

from __future__ import annotations

import heapq
import math
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from locimem.index.features import FeatureMatrix
from locimem.index.grid import SpatialGrid
from locimem.scene.relations import RelationConfig
from locimem.scene.rooms import RoomMap
from locimem.scene.state import SceneState

Vec3 = tuple[float, float, float]
Quat = tuple[float, float, float, float]
Held = tuple[float, float, float, float, float, float, float, str, float, int]
HELD_MAX = 8  # held sightings kept per object (the oldest is dropped first)


@dataclass(slots=True)
class ObjectState:
    """Everything the memory believes about one object (before reading it at a time)."""

    id: int
    label: str  # the voted label, set by APPEARED / LABEL_CHANGED events
    center: Vec3  # smoothed position, metres, map frame
    size: Vec3
    place: Vec3  # the settled place: where it APPEARED or last MOVED to
    first_seen: float
    last_seen: float
    label_mass: dict[str, float] = field(default_factory=dict)
    n_detections: int = 0
    promoted: bool = False
    lost: bool = False
    lost_at: float | None = None
    track_id: str | None = None
    orientation: Quat | None = None
    feature: np.ndarray | None = None  # unit-norm mean embedding (float64)
    n_features: int = 0
    pinned_label: str | None = None  # a person's correction, which the vote does not overturn
    attributes: dict[str, Any] = field(default_factory=dict)
    n_missed: int = 0  # scans since the last sighting in which the camera looked and missed it
    place_size: Vec3 = (0.0, 0.0, 0.0)  # the size it had when it settled at ``place``
    place_t: float = 0.0  # when it settled there
    # Belief (see docs/architecture.md, "Belief"): was the last sighting in a scan with a
    # camera (visibility-aware model) or without (time-only model); and the seconds of
    # looked-and-absent time credited to it since (the commits' ``missed`` lists).
    seen_camera: bool = False
    absence_s: float = 0.0
    # Sightings held back from the position (weight 0): (t, x, y, z, sx, sy, sz, label,
    # confidence, n_detections when held), oldest first, at most ``HELD_MAX``.
    held: list[Held] = field(default_factory=list)
    together: set[int] = field(default_factory=set)  # ids seen beside it in one scan
    merged_from: list[int] = field(default_factory=list)  # identities merged into this one
    source: str = "tracker"  # who first reported it: the actor of the commit it APPEARED in
    label_by: str | None = None  # the person who pinned ``pinned_label``
    # What its probability of detection is learned from: sightings in scans with a camera, and
    # looks that missed it and were later proved misses (it was seen again). The misses since
    # the last sighting (``n_missed``) are the hypothesis under test, so they are left out.
    n_looked_seen: int = 0
    n_looked_missed: int = 0
    # what the position estimate is worth, in sightings at the reference noise (Kalman
    # information; 0: kept by a store from before version 3)
    pos_info: float = 0.0

    def copy(self) -> ObjectState:
        return ObjectState(
            self.id, self.label, self.center, self.size, self.place, self.first_seen,
            self.last_seen, dict(self.label_mass), self.n_detections, self.promoted, self.lost,
            self.lost_at, self.track_id, self.orientation, self.feature, self.n_features,
            self.pinned_label, dict(self.attributes), self.n_missed, self.place_size,
            self.place_t, self.seen_camera, self.absence_s,
            list(self.held) if self.held else [],
            set(self.together) if self.together else set(),
            list(self.merged_from) if self.merged_from else [],
            self.source, self.label_by, self.n_looked_seen, self.n_looked_missed,
            self.pos_info,
        )

    def voted_label(self) -> str:
        """The pinned (corrected) label if a person set one; else the argmax of the accumulated
        label mass. Ties keep the current label, else go to the alphabetically first, so the
        vote never depends on the order masses were stored in."""
        if self.pinned_label is not None:
            return self.pinned_label
        if not self.label_mass:
            return self.label
        top = max(self.label_mass.values())
        if self.label_mass.get(self.label) == top:
            return self.label
        return min(label for label, mass in self.label_mass.items() if mass == top)

    def absence(self, now: float) -> float:
        """Seconds of evidence of absence since the last sighting: all of the time since
        (time-only model, last seen without a camera), or the looked-and-absent time credited
        by the commits' ``missed`` lists (visibility-aware model)."""
        if not self.seen_camera:
            return max(0.0, now - self.last_seen)
        return self.absence_s

    def confidence(self, now: float, tau_s: float, tau_unseen_s: float = math.inf) -> float:
        """Belief that the object is still there (docs/architecture.md, "Belief"):
        ``exp(-A / tau_s - U / tau_unseen_s)`` with ``A`` the absence (:meth:`absence`) and
        ``U`` the rest of the time since the last sighting (out of view, occluded, unknown)."""
        elapsed = max(0.0, now - self.last_seen)
        absent = self.absence(now)
        unseen = max(0.0, elapsed - absent)
        if unseen and tau_unseen_s != math.inf:
            return math.exp(-absent / tau_s - unseen / tau_unseen_s)
        return math.exp(-absent / tau_s)

    def to_dict(self) -> dict[str, Any]:
        """A plain, comparable form (features as lists) — used by tests and exports."""
        return {
            "id": self.id,
            "label": self.label,
            "center": list(self.center),
            "size": list(self.size),
            "place": list(self.place),
            "first_seen": self.first_seen,
            "last_seen": self.last_seen,
            "label_mass": dict(sorted(self.label_mass.items())),
            "n_detections": self.n_detections,
            "promoted": self.promoted,
            "lost": self.lost,
            "lost_at": self.lost_at,
            "track_id": self.track_id,
            "orientation": list(self.orientation) if self.orientation else None,
            "feature": None if self.feature is None else self.feature.tolist(),
            "n_features": self.n_features,
            "pinned_label": self.pinned_label,
            "attributes": dict(sorted(self.attributes.items())),
            "n_missed": self.n_missed,
            "place_size": list(self.place_size),
            "place_t": self.place_t,
            "seen_camera": self.seen_camera,
            "absence_s": self.absence_s,
            "held": [list(h) for h in self.held],
            "together": sorted(self.together),
            "merged_from": list(self.merged_from),
            "source": self.source,
            "label_by": self.label_by,
            "n_looked_seen": self.n_looked_seen,
            "n_looked_missed": self.n_looked_missed,
            "pos_info": self.pos_info,
        }

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> ObjectState:
        """Inverse of :meth:`to_dict`."""
        return cls(
            id=d["id"], label=d["label"], center=tuple(d["center"]), size=tuple(d["size"]),
            place=tuple(d["place"]), first_seen=d["first_seen"], last_seen=d["last_seen"],
            label_mass=dict(d["label_mass"]), n_detections=d["n_detections"],
            promoted=d["promoted"], lost=d["lost"], lost_at=d["lost_at"], track_id=d["track_id"],
            orientation=None if d["orientation"] is None else tuple(d["orientation"]),
            feature=None if d["feature"] is None else np.asarray(d["feature"], dtype=np.float64),
            n_features=d["n_features"], pinned_label=d.get("pinned_label"),
            attributes=dict(d.get("attributes", {})), n_missed=d.get("n_missed", 0),
            place_size=tuple(d["place_size"]), place_t=d["place_t"],
            seen_camera=d.get("seen_camera", False), absence_s=d.get("absence_s", 0.0),
            held=[tuple(h) for h in d.get("held", [])],  # type: ignore[misc]
            together=set(d.get("together", [])), merged_from=list(d.get("merged_from", [])),
            source=d.get("source", "tracker"), label_by=d.get("label_by"),
            n_looked_seen=d.get("n_looked_seen", 0), n_looked_missed=d.get("n_looked_missed", 0),
            pos_info=d.get("pos_info", 0.0),
        )


@dataclass(slots=True)
class TombstoneState:
    """A forgotten object, kept whole so it can be recognised (and, if allowed, revived)."""

    obj: ObjectState
    forgotten_at: float
    actor: str
    reason: str | None
    suppressed: int = 0
    last_suppressed: float | None = None

    def labels(self) -> set[str]:
        return {self.obj.label, *self.obj.label_mass}

    def to_dict(self) -> dict[str, Any]:
        return {
            "object": self.obj.to_dict(),
            "forgotten_at": self.forgotten_at,
            "actor": self.actor,
            "reason": self.reason,
            "suppressed": self.suppressed,
            "last_suppressed": self.last_suppressed,
        }

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> TombstoneState:
        return cls(ObjectState.from_dict(d["object"]), d["forgotten_at"], d["actor"],
                   d["reason"], d["suppressed"], d["last_suppressed"])


@dataclass(slots=True)
class RejectionState:
    """Rejected detections that share a key (label and place cell)."""

    reason: str
    count: int
    first_seq: int
    last_seq: int
    last_t: float

    def to_dict(self) -> dict[str, Any]:
        return {"reason": self.reason, "count": self.count, "first_seq": self.first_seq,
                "last_seq": self.last_seq, "last_t": self.last_t}


class MemoryState:
    """All objects of one scope, the time of the latest scan, and store-wide counters."""

    def __init__(self, grid_cell_m: float = 1.0, relations: RelationConfig | None = None
                 ) -> None:
        self.objects: dict[int, ObjectState] = {}
        self.now: float | None = None  # t of the latest commit; None before the first
        self.next_object_id = 1
        self.next_seq = 1
        self.next_commit = 1
        self.feature_dim: int | None = None
        self.tombstones: dict[int, TombstoneState] = {}
        self.rejections: dict[str, RejectionState] = {}
        self.grid = SpatialGrid(grid_cell_m)
        self.features = FeatureMatrix()  # mean embeddings, for re-finding by appearance
        self.tomb_grid = SpatialGrid(grid_cell_m)
        self.scene = SceneState(relations)
        # the long-term (prior) map: object id -> entry; its deltas: delta id -> delta; and
        # keyframe evidence: object id -> kept frames. Plain JSON data, set by PRIOR, DELTA
        # and KEYFRAME events (each event carries the new value whole).
        self.prior: dict[int, dict[str, Any]] = {}
        self.deltas: dict[int, dict[str, Any]] = {}
        self.keyframes: dict[int, list[dict[str, Any]]] = {}
        # deltas by (kind, evidence identity) and by ("object", prior object): delta ids
        self.delta_index: dict[tuple[Any, int], list[int]] = {}
        # objects by voted label (an index, like the grid): label -> ids, and id -> label
        self._by_label: dict[str, set[int]] = {}
        self._label_of: dict[int, str] = {}
        # whether the commit being applied came with a camera (set by apply at each commit)
        self.camera_commit = False
        # loss queue: (deadline, id) for objects not lost whose belief is time-only (last seen
        # without a camera); stale entries are refreshed lazily
        self._loss_queue: list[tuple[float, int]] = []

    # -- indexes -----------------------------------------------------------------------------
    def schedule_loss(self, obj: ObjectState, lost_after_s: float) -> None:
        if not obj.seen_camera:
            heapq.heappush(self._loss_queue, (obj.last_seen + lost_after_s, obj.id))

    def place_object(self, obj: ObjectState) -> None:
        """Index an object's position (and embedding, and label) after it changed."""
        self.grid.set(obj.id, obj.center)
        if obj.feature is not None:
            self.features.set(obj.id, obj.feature)
        self.index_label(obj)

    def unplace_object(self, object_id: int) -> None:
        self.grid.remove(object_id)
        self.features.remove(object_id)
        label = self._label_of.pop(object_id, None)
        if label is not None:
            self._by_label[label].discard(object_id)

    def index_label(self, obj: ObjectState) -> None:
        """File the object under its voted label (after it appeared or its label changed)."""
        old = self._label_of.get(obj.id)
        if old == obj.label:
            return
        if old is not None:
            self._by_label[old].discard(obj.id)
        self._label_of[obj.id] = obj.label
        self._by_label.setdefault(obj.label, set()).add(obj.id)

    def with_label(self, label: str) -> set[int]:
        """Ids of the objects whose voted label is ``label`` (a view: do not change it)."""
        return self._by_label.get(label, set())

    def rebuild_indexes(self, lost_after_s: float) -> None:
        self.grid = SpatialGrid(self.grid.cell_m)
        self.features = FeatureMatrix()
        self._by_label, self._label_of = {}, {}
        for oid in sorted(self.objects):
            self.place_object(self.objects[oid])
        self.tomb_grid = SpatialGrid(self.grid.cell_m)
        for oid, tomb in self.tombstones.items():
            self.tomb_grid.set(oid, tomb.obj.center)
        self.scene.rebuild(self.objects.values())
        self.delta_index = {}
        for delta in self.deltas.values():
            self.index_delta(delta)
        self._loss_queue = [
            (o.last_seen + lost_after_s, o.id) for o in self.objects.values()
            if not o.lost and not o.seen_camera
        ]
        heapq.heapify(self._loss_queue)

    def index_delta(self, delta: dict[str, Any]) -> None:
        """File a delta in ``delta_index`` (once; its keys never change)."""
        for key in delta_keys(delta):
            ids = self.delta_index.setdefault(key, [])
            if delta["id"] not in ids[-1:]:
                ids.append(delta["id"])

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
            "prior": {oid: e for oid, e in sorted(self.prior.items())},
            "deltas": {did: d for did, d in sorted(self.deltas.items())},
            "keyframes": {oid: k for oid, k in sorted(self.keyframes.items())},
        }

    def relations_snapshot(self) -> dict[str, float]:
        """Every relation ("subject relation object" -> confidence), for comparisons."""
        return {f"{s} {r} {o}": c for (s, r, o), c in sorted(self.scene.relations.all().items())}

    @classmethod
    def from_snapshot(cls, data: dict[str, Any], grid_cell_m: float,
                      relations: RelationConfig | None = None) -> MemoryState:
        """Inverse of :meth:`snapshot` (keys may have become strings in JSON)."""
        state = cls(grid_cell_m, relations)
        state.now = data["now"]
        state.feature_dim = data["feature_dim"]
        state.objects = {int(k): ObjectState.from_dict(v) for k, v in data["objects"].items()}
        state.tombstones = {int(k): TombstoneState.from_dict(v)
                            for k, v in data["tombstones"].items()}
        state.rejections = {k: RejectionState(**v) for k, v in data["rejections"].items()}
        state.scene.rooms = RoomMap.from_dict(data["rooms"])
        for name in ("prior", "deltas", "keyframes"):  # absent from version-1 checkpoints
            getattr(state, name).update({int(k): v for k, v in data.get(name, {}).items()})
        return state


def delta_keys(delta: dict[str, Any]) -> tuple[tuple[Any, int], ...]:
    """The keys ``MemoryState.delta_index`` files a delta under: (kind, the identity its
    evidence comes from) and ("object", the prior object it is about)."""
    return ((delta["kind"], delta.get("live", delta["object"])), ("object", delta["object"]))
