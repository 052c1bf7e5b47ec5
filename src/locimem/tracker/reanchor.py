"""Pose corrections as records: the objects seen while the robot's poses were wrong move with
the correction (``REANCHORED``), and the duplicates the wrong poses made are merged.

A SLAM system that closes a loop corrects the poses of a stretch of the past. Every
observation made in that stretch was placed with its scan's camera pose, so its corrected
position is ``T · x`` for the stretch's correction ``T`` (a rigid transform of the map frame).
An object's centre is a running weighted mean of its sightings (:func:`~locimem.tracker.apply.
update_object`); replaying that mean over its sightings, once as recorded and once corrected,
gives how far the correction moves it, which is added to the centre it has now (so what
happened to it since — a person's move, a merge — is kept). The log is never rewritten: the
REANCHORED events carry the new positions, and ``as_of`` a time before the correction still
reads what was believed then.
"""

from __future__ import annotations

import bisect
import math
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

from locimem.config import TrackerConfig
from locimem.model import EventKind, ObjectState, Observation, Record
from locimem.tracker.associate import _cosine, iou_3d
from locimem.tracker.duplicates import merged_vote
from locimem.tracker.governance import _writer
from locimem.tracker.state import MemoryState

Vec3 = tuple[float, float, float]
Stretch = tuple[float, float, np.ndarray]  # (t_from, t_to, 4x4 rigid transform)

_NO_SHIFT_M = 1e-9  # a correction that moves an object less than this leaves it alone


class Stretches:
    """Corrections sorted by start, not overlapping: the transform in force at a time."""

    def __init__(self, corrections: Sequence[Stretch]) -> None:
        self._items = sorted(corrections, key=lambda c: c[0])
        self._starts = [c[0] for c in self._items]

    def at(self, t: float) -> np.ndarray | None:
        i = bisect.bisect_right(self._starts, t) - 1
        if i < 0:
            return None
        t_from, t_to, transform = self._items[i]
        return transform if t_from <= t <= t_to else None

    @property
    def span(self) -> tuple[float, float]:
        return self._items[0][0], max(c[1] for c in self._items)


def reanchored_center(chain: Sequence[Observation], stretches: Stretches
                      ) -> tuple[Vec3, int, float] | None:
    """How far the correction moves the running mean of ``chain`` (one object's accepted
    sightings, by seq), how many of them it re-anchors, and the first one's time; None if it
    re-anchors none."""
    recorded = corrected = None
    n, first = 0, math.inf
    for obs in chain:
        w = obs.weight
        if w == 0.0:  # held: it did not move the estimate
            continue
        x = np.asarray(obs.center, dtype=float)
        transform = stretches.at(obs.t)
        if transform is None:
            y = x
        else:
            y = transform[:3, :3] @ x + transform[:3, 3]
            n += 1
            first = min(first, obs.t)
        if recorded is None or w >= 1.0:  # a first sighting or a jump starts afresh
            recorded, corrected = x, y
        else:
            recorded = recorded + w * (x - recorded)
            corrected = corrected + w * (y - corrected)
    if n == 0 or recorded is None:
        return None
    shift = corrected - recorded
    return (float(shift[0]), float(shift[1]), float(shift[2])), n, first


def decide_reanchor(state: MemoryState, config: TrackerConfig, stretches: Stretches,
                    chains: Mapping[int, Sequence[Observation]], t: float, actor: str,
                    reason: str | None, recorded_at: float) -> list[Record]:
    """A correction commit: a REANCHORED event for every object of ``chains`` (object id ->
    its accepted sightings, its absorbed identities' included) that the correction moves,
    then a MERGED event for every pair of same-label identities that now overlap, were never
    seen together and one of which moved (the duplicates the wrong poses made)."""
    out = _writer(state, "correction", t, actor, reason, recorded_at)
    after: dict[int, ObjectState] = {}
    for oid in sorted(chains):
        obj = state.objects[oid]
        found = reanchored_center(chains[oid], stretches)
        if found is None:
            continue
        shift, n, first = found
        if math.hypot(*shift) < _NO_SHIFT_M:
            continue
        moved = obj.copy()
        moved.center = _plus(obj.center, shift)
        # the settled place moves too when the re-anchored sightings settled it
        if obj.place_t >= first:
            moved.place = _plus(obj.place, shift)
        out.event(EventKind.REANCHORED, oid, obj.label, {
            "from": list(obj.center), "to": list(moved.center), "place": list(moved.place),
            "shift_m": math.hypot(*shift), "n_reanchored": n, "actor": actor,
            "reason": reason,
        })
        after[oid] = moved
    _merge_duplicates(out, state, config, after, stretches.span[0], actor, reason)
    return out.records


def _merge_duplicates(out: Any, state: MemoryState, config: TrackerConfig,
                      after: dict[int, ObjectState], since: float, actor: str,
                      reason: str | None) -> None:
    """Same-label identities the correction brought onto each other (boxes overlapping by
    ``merge_min_iou``, centres within ``tight_radius_m``, never seen in one scan, embeddings
    not telling them apart) are one thing: MERGED into the older, as the tracker merges. The
    other may be lost if it was lost since the corrected span began (minus the reacquire
    window): its sightings went to the duplicate the wrong poses made."""
    lost_since = since - config.reacquire_window_s
    live = [after.get(oid, obj) for oid, obj in sorted(state.objects.items())]
    gone: set[int] = set()
    for a in [after[oid] for oid in sorted(after)]:
        if a.id in gone or a.lost:
            continue
        for b in live:
            if b.id == a.id or b.id in gone or b.label != a.label:
                continue
            if b.lost and (b.lost_at is None or b.lost_at < lost_since):
                continue  # lost before the drift: another thing's place now
            if b.id in a.together or a.id in b.together:
                continue
            if math.dist(a.center, b.center) > config.tight_radius_m:
                continue
            if iou_3d(a.center, a.size, b.center, b.size) < config.merge_min_iou:
                continue
            cos = _cosine(a.feature, b.feature)
            if cos is not None and cos < config.feature_match_min:
                continue
            older, younger = sorted((a, b), key=lambda o: (o.first_seen, o.id))
            newer = max((a, b), key=lambda o: (o.last_seen, o.id))  # the one seen last
            mass, label = merged_vote(older, younger)
            out.event(EventKind.MERGED, older.id, label, {
                "absorbed": younger.id, "center": list(newer.center),
                "size": list(newer.size), "label_mass": dict(sorted(mass.items())),
                "n_detections": older.n_detections + younger.n_detections, "label": label,
                "distance_m": math.dist(a.center, b.center), "actor": actor, "reason": reason,
            })
            gone.add(younger.id)
            break  # (a third identity of the same thing waits for the next correction)


def _plus(a: Vec3, b: Vec3) -> Vec3:
    return (a[0] + b[0], a[1] + b[1], a[2] + b[2])
