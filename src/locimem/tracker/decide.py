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
from dataclasses import dataclass

import numpy as np

from locimem.config import TrackerConfig
from locimem.model import Camera, Commit, Detection, Event, EventKind, Observation
from locimem.tracker.apply import Record, update_object
from locimem.tracker.state import MemoryState, ObjectState

TIERS = ("track", "tight", "drift", "reacquire")
REJECT_LOW_CONFIDENCE = "below_min_confidence"


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
    records: list[Record] = [commit]
    seq = state.next_seq
    objects = state.objects

    # 1. Belief: objects unseen for longer than the lost line are LOST at this scan.
    lost_now: set[int] = set()
    for oid in state.due_for_loss(t, config.lost_after_s):
        obj = objects[oid]
        conf = obj.confidence(t, config.tau_s)
        records.append(
            Event(seq, commit.id, t, EventKind.LOST, oid, obj.label,
                  {"last_seen": obj.last_seen, "confidence": conf})
        )
        seq += 1
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
    for i, det in enumerate(detections):
        if i in rejected:
            records.append(_observation(seq, commit.id, t, i, det, None, None, 1.0, rejected[i]))
            seq += 1
            assignments.append(None)
            continue
        hit = match.get(i)
        if hit is None:  # a new identity
            oid = next_oid
            next_oid += 1
            records.append(
                Event(seq, commit.id, t, EventKind.APPEARED, oid, det.label,
                      {"label": det.label, "center": list(det.center), "size": list(det.size)})
            )
            seq += 1
            obs = _observation(seq, commit.id, t, i, det, oid, "new", 1.0, None)
            seq += 1
            records.append(obs)
            if config.promote_after <= 1:
                records.append(Event(seq, commit.id, t, EventKind.PROMOTED, oid, det.label,
                                     {"n_detections": 1}))
                seq += 1
            assignments.append(oid)
            continue

        oid, tier, dist = hit
        obj = objects[oid]
        if obj.lost or oid in lost_now:
            gap = t - obj.last_seen
            records.append(
                Event(seq, commit.id, t, EventKind.REACQUIRED, oid, obj.label,
                      {"lost_at": obj.lost_at if obj.lost else t, "gap_s": gap})
            )
            seq += 1
        weight = 1.0 if dist > config.tight_radius_m else max(
            config.position_alpha, 1.0 / (obj.n_detections + 1)
        )
        obs = _observation(seq, commit.id, t, i, det, oid, tier, weight, None)
        seq += 1
        records.append(obs)
        after = obj.copy()
        update_object(after, obs)
        if not after.promoted and after.n_detections >= config.promote_after:
            records.append(Event(seq, commit.id, t, EventKind.PROMOTED, oid, after.label,
                                 {"n_detections": after.n_detections}))
            seq += 1
        voted = after.voted_label()
        if voted != after.label:
            records.append(Event(seq, commit.id, t, EventKind.LABEL_CHANGED, oid, voted,
                                 {"from": after.label, "to": voted,
                                  "votes": dict(sorted(after.label_mass.items()))}))
            seq += 1
        moved = math.dist(after.center, after.place)
        if moved > config.tight_radius_m:
            records.append(Event(seq, commit.id, t, EventKind.MOVED, oid, voted,
                                 {"from": list(after.place), "to": list(after.center),
                                  "distance_m": moved}))
            seq += 1
        assignments.append(oid)
    return Decision(records, tuple(assignments), rejected)


def _observation(
    seq: int, commit: int, t: float, index: int, det: Detection, oid: int | None,
    tier: str | None, weight: float, rejected: str | None,
) -> Observation:
    return Observation(
        seq=seq, commit=commit, t=t, index=index, label=det.label, confidence=det.confidence,
        center=det.center, size=det.size, object_id=oid, tier=tier, weight=weight,
        rejected=rejected, track_id=det.track_id, orientation=det.orientation,
        feature=det.feature,
    )


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
