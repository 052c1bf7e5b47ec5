"""Duplicates: which identities of one scan are one thing, and the records that say so.

After a scan's detections are recorded, :func:`neighbours` finds, around each sighted object,
the pairs seen together (two things) and the live objects not sighted (possible duplicates);
:func:`merges` merges the duplicates into the older identity (or, when they look different,
records the one that has taken the other's place); :func:`relocate` writes a move nobody
watched (:mod:`~locimem.tracker.relocate` finds them). :func:`merged_vote` is the label two
identities becoming one vote, shared with the corrections and the map's re-anchoring.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

from locimem.config import TrackerConfig
from locimem.model import Detection, EventKind, ObjectState
from locimem.tracker.associate import _Associator, _cosine, iou_3d
from locimem.tracker.state import MemoryState
from locimem.tracker.writer import RecordWriter


def merged_vote(survivor: ObjectState, absorbed: ObjectState) -> tuple[dict[str, float], str]:
    """The summed label mass of two identities becoming one, and the label it votes (a
    person's pinned label, from either side, wins)."""
    mass = dict(survivor.label_mass)
    for lab, m in absorbed.label_mass.items():
        mass[lab] = mass.get(lab, 0.0) + m
    probe = survivor.copy()
    probe.label_mass = mass
    probe.pinned_label = survivor.pinned_label or absorbed.pinned_label
    return mass, probe.voted_label()


def neighbours(state: MemoryState, config: TrackerConfig, detections: Sequence[Detection],
               index: dict[int, int], after: dict[int, ObjectState], assoc: _Associator
               ) -> tuple[tuple[tuple[int, int], ...], dict[int, list[int]]]:
    """For the objects sighted in this scan (``index``: id -> detection), within twice the
    tight radius of their detection: the pairs both sighted (two things, never to be merged,
    left out when already known), and per sighted object the live ones not sighted (possible
    duplicates). Looked up in the detections' neighbour lists (drift radius, nearest first)."""
    radius = 2 * config.tight_radius_m
    objects = state.objects
    pairs = set()
    close: dict[int, list[int]] = {}
    near = assoc.near
    for oid, i in index.items():
        for d, other in near.get(i, ()):
            if d > radius:
                break
            if other == oid:
                continue
            if other in index:
                pairs.add((oid, other) if oid < other else (other, oid))
            elif other not in after:
                close.setdefault(oid, []).append(other)
    fresh = [oid for oid in index if oid not in objects]  # created in this scan
    for oid in fresh:
        here = detections[index[oid]].center
        for other, j in index.items():
            if other != oid and math.dist(here, detections[j].center) <= radius:
                pairs.add((oid, other) if oid < other else (other, oid))
    together = tuple(sorted(p for p in pairs
                            if not (p[0] in objects and p[1] in objects[p[0]].together)))
    return together, close


def merges(out: RecordWriter, state: MemoryState, config: TrackerConfig,
            after: dict[int, ObjectState], dead: set[int], close: dict[int, list[int]]
            ) -> dict[int, int]:
    """Two identities whose boxes overlap and that were never seen together in one scan cannot
    both be right. Looking alike (or no embeddings) with the same voted label, they are one
    thing: MERGED into the older. Looking different (embeddings), the one sighted in this scan
    (promoted) has taken the other's place: that one is LOST (EXPIRED if never promoted).
    Returns absorbed id -> survivor id."""
    objects = state.objects
    merged: dict[int, int] = {}
    touched: set[int] = set()  # merged this scan, either side
    for oid in sorted(close):
        if oid not in objects or oid in dead or oid in touched:
            continue
        a = after[oid]
        if a.lost:
            continue
        for other_id in close[oid]:
            if math.dist(a.center, objects[other_id].center) > config.tight_radius_m:
                continue
            if other_id in dead or other_id in touched:
                continue
            b = objects[other_id]
            if other_id in a.together or oid in b.together:
                continue
            if b.lost and (b.lost_at is None
                           or out.commit.t - b.lost_at > config.reacquire_window_s):
                continue  # lost long ago: its place is another thing's now
            if iou_3d(a.center, a.size, b.center, b.size) < config.merge_min_iou:
                continue
            cos = _cosine(a.feature, b.feature)
            if cos is not None and cos < config.feature_match_min:
                # another thing now stands where b was: b was taken away (replaced)
                if a.promoted and not b.lost:
                    conf = b.confidence(out.commit.t, config.tau_s, config.tau_unseen_s)
                    if b.promoted:
                        out.event(EventKind.LOST, b.id, b.label,
                                  {"last_seen": b.last_seen, "confidence": conf,
                                   "replaced_by": a.id})
                    else:
                        out.event(EventKind.EXPIRED, b.id, b.label,
                                  {"last_seen": b.last_seen, "n_detections": b.n_detections,
                                   "confidence": conf, "replaced_by": a.id})
                    dead.add(b.id)
                continue
            if b.label != a.label:
                continue
            older, younger = sorted((a, b), key=lambda o: (o.first_seen, o.id))
            newer = a  # the one seen in this scan gives the place
            mass, label = merged_vote(older, younger)
            out.event(EventKind.MERGED, older.id, label, {
                "absorbed": younger.id, "center": list(newer.center), "size": list(newer.size),
                "label_mass": dict(sorted(mass.items())),
                "n_detections": older.n_detections + younger.n_detections,
                "label": label, "distance_m": math.dist(a.center, b.center),
            })
            merged[younger.id] = older.id
            touched.update((oid, other_id))
            break
    return merged


def relocate(out: RecordWriter, state: MemoryState, after: dict[int, ObjectState],
              old_id: int, new_id: int, by_looks: bool) -> None:
    """``old_id`` moved where ``new_id`` is: it absorbs the new identity (MERGED, taking its
    place) and the move is recorded (MOVED from its old place, with ``seen_there_since``: the
    new identity's first sighting, by when the move had happened — this scan only tells
    it; and ``by_looks`` when its old place was not found empty)."""
    old = after.get(old_id) or state.objects[old_id]
    new = after.get(new_id) or state.objects[new_id]
    mass, label = merged_vote(old, new)
    distance = math.dist(old.place, new.center)
    out.event(EventKind.MERGED, old_id, label, {
        "absorbed": new_id, "center": list(new.center), "size": list(new.size),
        "label_mass": dict(sorted(mass.items())),
        "n_detections": old.n_detections + new.n_detections, "label": label,
        "distance_m": distance, "to": list(new.center), "relocated": True})
    out.event(EventKind.MOVED, old_id, label, {
        "from": list(old.place), "to": list(new.center), "distance_m": distance,
        "size": list(new.size), "relocated": True, "seen_there_since": new.first_seen,
        **({"by_looks": True} if by_looks else {})})
