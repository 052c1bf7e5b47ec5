"""The tracker: given the state and one scan, decide which records to write.

``decide`` is pure with respect to the memory: it reads the state (and refreshes its derived
indexes), and returns records; it changes no object. The caller applies the records with
:func:`locimem.tracker.apply.apply` and appends them to the store in one transaction.

Order inside a scan: the commit, then LOST for every object unseen for too long, then each
detection in input order — ``[APPEARED | REACQUIRED]``, its observation, then any of
``PROMOTED``, ``LABEL_CHANGED``, ``MOVED`` it caused.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, replace
from typing import Any

import numpy as np

from locimem.config import TrackerConfig
from locimem.geometry import Visibility, visibility
from locimem.model import Camera, Commit, Detection, Event, EventKind, Observation
from locimem.tracker.apply import TOMB_KEY, Record, update_object
from locimem.tracker.state import MemoryState, ObjectState

TIERS = ("track", "tight", "drift", "reacquire")
REJECT_LOW_CONFIDENCE = "below_min_confidence"
REJECT_FORGOTTEN = "forgotten"  # a tombstone recognised it: suppressed


@dataclass(frozen=True, slots=True)
class Decision:
    records: list[Record]
    assignments: tuple[int | None, ...]
    rejected: dict[int, str]


def decide(
    state: MemoryState,
    config: TrackerConfig,
    t: float,
    detections: Sequence[Detection],
    camera: Camera | None = None,
    *,
    recorded_at: float,
    actor: str = "tracker",
) -> Decision:
    """Turn one scan into records. ``t`` must be >= ``state.now`` (checked by the caller)."""
    commit = Commit(
        id=state.next_commit,
        kind="scan",
        t=t,
        recorded_at=recorded_at,
        actor=actor,
        reason=None,
        n_detections=len(detections),
        camera=camera.to_dict() if camera is not None else None,
    )
    out = RecordWriter(commit, state.next_seq)
    objects = state.objects

    # 1. Belief: objects unseen for longer than the lost line are LOST at this scan.
    lost_now: set[int] = set()
    for oid in state.due_for_loss(t, config.lost_after_s):
        obj = objects[oid]
        out.event(EventKind.LOST, oid, obj.label,
                  {"last_seen": obj.last_seen, "confidence": obj.confidence(t, config.tau_s)})
        lost_now.add(oid)

    # 2. Association: tiers in order, greedy by distance inside each tier, one to one.
    rejected: dict[int, str] = {}
    live: list[int] = []
    for i, det in enumerate(detections):
        if det.confidence < config.min_detection_confidence:
            rejected[i] = REJECT_LOW_CONFIDENCE
        else:
            live.append(i)
    match = _associate(state, config, t, detections, live, lost_now)

    # 3. Records, detection by detection in input order.
    assignments: list[int | None] = []
    next_oid = state.next_object_id
    suppressed: dict[int, int] = {}  # tombstone id -> sightings it kept out in this scan
    revived: set[int] = set()
    for i, det in enumerate(detections):
        if i in rejected:
            out.observation(i, det, None, None, 1.0, rejected[i],
                            key=rejection_key(det, config.tight_radius_m))
            assignments.append(None)
            continue
        hit = match.get(i)
        if hit is not None:
            oid, tier, dist = hit
            obj = objects[oid]
            if obj.lost or oid in lost_now:
                out.event(EventKind.REACQUIRED, oid, obj.label,
                          {"lost_at": obj.lost_at if obj.lost else t, "gap_s": t - obj.last_seen})
            weight = 1.0 if dist > config.tight_radius_m else max(
                config.position_alpha, 1.0 / (obj.n_detections + 1)
            )
            _sighting(out, config, obj, out.observation(i, det, oid, tier, weight, None))
            assignments.append(oid)
            continue

        tomb_id = _tombstone_match(state, config, det, revived)
        if tomb_id is not None:
            tomb = state.tombstones[tomb_id]
            kept_out = tomb.suppressed + suppressed.get(tomb_id, 0)
            if config.revive_after is not None and kept_out + 1 >= config.revive_after:
                out.event(EventKind.REVIVED, tomb_id, tomb.obj.label,
                          {"suppressed": kept_out, "forgotten_at": tomb.forgotten_at})
                revived.add(tomb_id)
                _sighting(out, config, tomb.obj,
                          out.observation(i, det, tomb_id, "revive", 1.0, None))
                assignments.append(tomb_id)
                continue
            last = tomb.last_suppressed
            if tomb_id not in suppressed and (last is None or t - last > config.reacquire_window_s):
                out.event(EventKind.SUPPRESSED, tomb_id, tomb.obj.label,
                          {"forgotten_at": tomb.forgotten_at, "label": det.label,
                           "center": list(det.center)})
            suppressed[tomb_id] = suppressed.get(tomb_id, 0) + 1
            rejected[i] = REJECT_FORGOTTEN
            out.observation(i, det, None, None, 1.0, REJECT_FORGOTTEN, key=f"{TOMB_KEY}{tomb_id}")
            assignments.append(None)
            continue

        oid = next_oid  # a new identity
        next_oid += 1
        out.event(EventKind.APPEARED, oid, det.label,
                  {"label": det.label, "center": list(det.center), "size": list(det.size)})
        out.observation(i, det, oid, "new", 1.0, None)
        if config.promote_after <= 1:
            out.event(EventKind.PROMOTED, oid, det.label, {"n_detections": 1})
        assignments.append(oid)

    # 4. Looked and absent: objects the camera should have seen this scan but did not.
    if camera is not None:
        seen = {oid for oid in assignments if oid is not None}
        missed = missed_objects(state, camera, seen | lost_now)
        if missed:
            out.records[0] = replace(commit, missed=missed)
    return Decision(out.records, tuple(assignments), rejected)


def missed_objects(state: MemoryState, camera: Camera, exclude: set[int]) -> tuple[int, ...]:
    """Ids of live objects within the camera's range whose centre was in view and not occluded
    (per the depth image, when given), leaving out ``exclude``. Occluded and no-depth objects
    are neutral: neither seen nor missed."""
    candidates = [
        oid for _, oid in state.grid.near(camera.position, camera.range_m)
        if oid not in exclude and not state.objects[oid].lost
    ]
    if not candidates:
        return ()
    objects = state.objects
    centers = np.array([objects[oid].center for oid in candidates], dtype=np.float64)
    margins = np.array([0.1 + 0.5 * max(objects[oid].size) for oid in candidates])
    states = visibility(camera, centers, margins)
    return tuple(sorted(oid for oid, v in zip(candidates, states, strict=True)
                        if v == Visibility.VISIBLE))


class RecordWriter:
    """Builds one commit's records, numbering them from ``next_seq``."""

    def __init__(self, commit: Commit, next_seq: int) -> None:
        self.commit = commit
        self.records: list[Record] = [commit]
        self.seq = next_seq

    def event(self, kind: EventKind, oid: int, label: str, data: dict[str, Any]) -> Event:
        ev = Event(self.seq, self.commit.id, self.commit.t, kind, oid, label, data)
        self.seq += 1
        self.records.append(ev)
        return ev

    def observation(self, index: int, det: Detection, oid: int | None, tier: str | None,
                    weight: float, rejected: str | None, key: str | None = None) -> Observation:
        obs = Observation(
            seq=self.seq, commit=self.commit.id, t=self.commit.t, index=index, label=det.label,
            confidence=det.confidence, center=det.center, size=det.size, object_id=oid,
            tier=tier, weight=weight, rejected=rejected, track_id=det.track_id,
            orientation=det.orientation, feature=det.feature, key=key,
        )
        self.seq += 1
        self.records.append(obs)
        return obs


def _sighting(out: RecordWriter, config: TrackerConfig, obj: ObjectState,
              obs: Observation) -> None:
    """Events an accepted observation causes: PROMOTED, LABEL_CHANGED, MOVED."""
    after = obj.copy()
    update_object(after, obs)
    oid = obj.id
    if not after.promoted and after.n_detections >= config.promote_after:
        out.event(EventKind.PROMOTED, oid, after.label, {"n_detections": after.n_detections})
    voted = after.voted_label()
    if voted != after.label:
        out.event(EventKind.LABEL_CHANGED, oid, voted,
                  {"from": after.label, "to": voted,
                   "votes": dict(sorted(after.label_mass.items()))})
    moved = math.dist(after.center, after.place)
    if moved > config.tight_radius_m:
        out.event(EventKind.MOVED, oid, voted,
                  {"from": list(after.place), "to": list(after.center), "distance_m": moved,
                   "size": list(after.size)})


def rejection_key(det: Detection, cell_m: float) -> str:
    """``label@i,j,k``: the label and the ``cell_m`` cube the detection fell in, so a repeat
    of the same rejected sighting is recognised."""
    c = det.center
    return (f"{det.label}@{math.floor(c[0] / cell_m)},{math.floor(c[1] / cell_m)},"
            f"{math.floor(c[2] / cell_m)}")


def _tombstone_match(state: MemoryState, config: TrackerConfig, det: Detection,
                     skip: set[int]) -> int | None:
    """The nearest tombstone the detection looks like: within the drift radius, and with one
    of its labels or (both having embeddings) a similar embedding."""
    if not state.tombstones:
        return None
    for _, tid in state.tomb_grid.near(det.center, config.drift_radius_m):
        if tid in skip:
            continue
        tomb = state.tombstones[tid]
        if det.label in tomb.labels():
            return tid
        cos = _cosine(tomb.obj.feature, det.feature)
        if cos is not None and cos >= config.feature_match_min:
            return tid
    return None


def _cosine(a: np.ndarray | None, b: np.ndarray | None) -> float | None:
    if a is None or b is None or a.shape[0] != b.shape[0]:
        return None
    return float(np.dot(a, b) / (np.linalg.norm(a) * np.linalg.norm(b)))


def _associate(
    state: MemoryState,
    config: TrackerConfig,
    t: float,
    detections: Sequence[Detection],
    live: list[int],
    lost_now: set[int],
) -> dict[int, tuple[int, str, float]]:
    """detection index -> (object id, tier, distance) for every matched detection."""
    objects = state.objects
    grid = state.grid
    tight, drift = config.tight_radius_m, config.drift_radius_m

    def is_lost(obj: ObjectState) -> bool:
        return obj.lost or obj.id in lost_now

    def reacquirable(obj: ObjectState, det: Detection) -> bool:
        lost_at = obj.lost_at if obj.lost and obj.lost_at is not None else t
        age = t - lost_at
        if age <= config.reacquire_window_s:
            return True
        cos = _cosine(obj.feature, det.feature)
        return (
            cos is not None
            and cos >= config.feature_match_min
            and age <= config.feature_reacquire_window_s
        )

    pairs: dict[str, list[tuple[float, int, int]]] = {tier: [] for tier in TIERS}
    for i in live:
        det = detections[i]
        for d, oid in grid.near(det.center, drift):
            obj = objects[oid]
            lost = is_lost(obj)
            if det.track_id is not None and det.track_id == obj.track_id and (
                not lost or reacquirable(obj, det)
            ):
                pairs["track"].append((d, i, oid))
            if not lost:
                if d <= tight:
                    pairs["tight"].append((d, i, oid))
                elif obj.label == det.label:
                    pairs["drift"].append((d, i, oid))
            elif (d <= tight or obj.label == det.label) and reacquirable(obj, det):
                pairs["reacquire"].append((d, i, oid))

    match: dict[int, tuple[int, str, float]] = {}
    taken: set[int] = set()
    for tier in TIERS:
        for d, i, oid in sorted(pairs[tier]):
            if i in match or oid in taken:
                continue
            match[i] = (oid, tier, d)
            taken.add(oid)
    return match
