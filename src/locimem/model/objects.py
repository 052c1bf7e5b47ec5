"""What the memory believes, one object at a time: plain data that the store persists and the
tracker changes (through :func:`locimem.tracker.apply.apply` only).

These sit at the bottom of the package with the records (:mod:`locimem.model.values`), so the
store, the tracker, the scene graph and the queries all share them without importing each other.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from locimem.model.values import Commit, Event, Observation, Quat, Vec3

Held = tuple[float, float, float, float, float, float, float, str, float, int]
HELD_MAX = 8  # held sightings kept per object (the oldest is dropped first)
# The empty ``together`` every object starts with: one shared (immutable) value, not a set per
# object. ``held``, ``together`` and ``merged_from`` are immutable (tuples, frozensets) and
# replaced whole when they change, and most objects keep them empty: a memory of 100,000
# objects then holds some 300,000 fewer containers for the cyclic garbage collector to walk
# (docs/architecture.md, "Performance").
NO_IDS: frozenset[int] = frozenset()


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
    held: tuple[Held, ...] = ()
    together: frozenset[int] = NO_IDS  # ids seen beside it in one scan
    merged_from: tuple[int, ...] = ()  # identities merged into this one
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
    # the place a move told by its looks alone took it from (its old place was never seen
    # empty): seen there again, it was not the thing that appeared elsewhere (None otherwise)
    moved_from: Vec3 | None = None

    def copy(self) -> ObjectState:
        return ObjectState(
            self.id, self.label, self.center, self.size, self.place, self.first_seen,
            self.last_seen, dict(self.label_mass), self.n_detections, self.promoted, self.lost,
            self.lost_at, self.track_id, self.orientation, self.feature, self.n_features,
            self.pinned_label, dict(self.attributes), self.n_missed, self.place_size,
            self.place_t, self.seen_camera, self.absence_s,
            self.held, self.together, self.merged_from,  # immutable: shared
            self.source, self.label_by, self.n_looked_seen, self.n_looked_missed,
            self.pos_info, self.moved_from,
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
            "moved_from": None if self.moved_from is None else list(self.moved_from),
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
            held=tuple(tuple(h) for h in d.get("held", ())),
            together=frozenset(d["together"]) if d.get("together") else NO_IDS,
            merged_from=tuple(d.get("merged_from", ())),
            source=d.get("source", "tracker"), label_by=d.get("label_by"),
            n_looked_seen=d.get("n_looked_seen", 0), n_looked_missed=d.get("n_looked_missed", 0),
            pos_info=d.get("pos_info", 0.0),
            moved_from=None if d.get("moved_from") is None else tuple(d["moved_from"]),
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


@dataclass(frozen=True, slots=True)
class ObservationMeta:
    """Where one stored observation sits: what compaction's retention policy decides on."""

    seq: int
    commit: int
    t: float
    object_id: int | None
    key: str | None


Record = Commit | Observation | Event  # one entry of the append-only record


def commit_of(records: Sequence[Record]) -> Commit:
    """A commit's own record: the first of its records (a TypeError if it is not)."""
    head = records[0]
    if type(head) is not Commit:
        raise TypeError(f"a commit's records start with its Commit, not {type(head).__name__}")
    return head
