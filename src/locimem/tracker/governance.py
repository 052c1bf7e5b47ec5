"""Corrections and forgetting as records: pure decisions, written through the same path as scans.

A correction never erases evidence: a relabel keeps the label mass it overrules (and either
pins the person's label or adds it as weighted evidence), a move keeps the trail of sightings,
forgetting keeps the whole object inside a tombstone, a merge keeps both histories under one
id, and a split starts a new identity beside the old one without taking evidence from it.
Each is undone by a later correction (a merge by a split, a split by a merge), never by
rewriting the record.
"""

from __future__ import annotations

import math
from typing import Any

from locimem.config import TrackerConfig
from locimem.model import Commit, EventKind, ObjectState, Record
from locimem.tracker.duplicates import merged_vote  # the tracker's own vote
from locimem.tracker.state import MemoryState
from locimem.tracker.writer import RecordWriter

Vec3 = tuple[float, float, float]


def _writer(state: MemoryState, kind: str, t: float, actor: str, reason: str | None,
            recorded_at: float) -> RecordWriter:
    commit = Commit(id=state.next_commit, kind=kind, t=t, recorded_at=recorded_at, actor=actor,
                    reason=reason, n_detections=0)
    return RecordWriter(commit, state.next_seq)


def decide_relabel(state: MemoryState, config: TrackerConfig, obj: ObjectState, label: str,
                   t: float, actor: str, reason: str | None, recorded_at: float) -> list[Record]:
    """A person says the object is a ``label``. With ``human_label_weight`` None the label is
    pinned (the detector's later votes are kept but do not overturn it); otherwise that much
    mass is added to ``label`` and the vote decides."""
    out = _writer(state, "correction", t, actor, reason, recorded_at)
    pin = config.human_label_weight is None
    mass = None if pin else config.human_label_weight
    after = obj.copy()
    if mass:
        after.label_mass[label] = after.label_mass.get(label, 0.0) + mass
    if pin:
        after.pinned_label = label
    out.event(EventKind.CORRECTED, obj.id, after.voted_label(), {
        "field": "label", "from": obj.label, "to": label, "pin": pin, "mass": mass,
        "label_after": after.voted_label(), "actor": actor, "reason": reason,
    })
    return out.records


def decide_move(state: MemoryState, config: TrackerConfig, obj: ObjectState, center: Vec3,
                t: float, actor: str, reason: str | None, recorded_at: float) -> list[Record]:
    """A person says the object is now at ``center``: its centre and settled place move there."""
    out = _writer(state, "correction", t, actor, reason, recorded_at)
    out.event(EventKind.CORRECTED, obj.id, obj.label, {
        "field": "center", "from": list(obj.center), "to": list(center), "size": list(obj.size),
        "distance_m": math.dist(obj.center, center), "actor": actor, "reason": reason,
    })
    return out.records


def decide_attributes(state: MemoryState, obj: ObjectState, values: dict[str, Any],
                      removed: list[str], t: float, actor: str, reason: str | None,
                      recorded_at: float) -> list[Record]:
    """Set (and remove) attributes such as color, state, mobile, fragile."""
    out = _writer(state, "correction", t, actor, reason, recorded_at)
    before = {k: obj.attributes.get(k) for k in [*values, *removed]}
    out.event(EventKind.CORRECTED, obj.id, obj.label, {
        "field": "attributes", "set": dict(sorted(values.items())), "removed": sorted(removed),
        "before": dict(sorted(before.items())), "actor": actor, "reason": reason,
    })
    return out.records


def decide_forget(state: MemoryState, obj: ObjectState, t: float, actor: str,
                  reason: str | None, recorded_at: float) -> list[Record]:
    """Remove the object from every read path, leaving a tombstone that recognises it."""
    out = _writer(state, "forget", t, actor, reason, recorded_at)
    out.event(EventKind.FORGOTTEN, obj.id, obj.label, {
        "center": list(obj.center), "labels": sorted({obj.label, *obj.label_mass}),
        "actor": actor, "reason": reason,
    })
    return out.records


def decide_merge(state: MemoryState, keep: ObjectState, absorbed: ObjectState, t: float,
                 actor: str, reason: str | None, recorded_at: float) -> list[Record]:
    """A person says ``keep`` and ``absorbed`` are one thing: ``absorbed`` is MERGED into
    ``keep``, exactly as the tracker merges a duplicate — ``keep`` keeps its id, takes the
    summed label mass and counts (a pinned label from either side wins), lists the absorbed id
    in ``merged_from`` (so ``history()`` shows both) and stands where the one seen last was.
    The event also carries ``actor`` and ``reason``; the commit is a correction."""
    out = _writer(state, "correction", t, actor, reason, recorded_at)
    mass, label = merged_vote(keep, absorbed)
    newer = absorbed if absorbed.last_seen > keep.last_seen else keep
    data: dict[str, Any] = {
        "absorbed": absorbed.id, "center": list(newer.center), "size": list(newer.size),
        "label_mass": dict(sorted(mass.items())),
        "n_detections": keep.n_detections + absorbed.n_detections, "label": label,
        "distance_m": math.dist(keep.center, absorbed.center), "actor": actor,
        "reason": reason,
    }
    if newer is absorbed:  # it settles where the absorbed identity was seen last
        data["to"] = list(absorbed.place)
    out.event(EventKind.MERGED, keep.id, label, data)
    return out.records


def decide_split(state: MemoryState, obj: ObjectState, new_id: int, label: str, center: Vec3,
                 size: Vec3, t: float, actor: str, reason: str | None,
                 recorded_at: float) -> list[Record]:
    """A person says ``obj`` is two things, the other a ``label`` at ``center``: a SPLIT of
    ``obj`` and a new identity ``new_id`` (APPEARED with ``split_from``), published at once
    (PROMOTED: a person vouches for it) under the person's pinned label (CORRECTED). It holds
    no detector evidence (no label mass, no detections): its belief starts at ``t`` and decays
    like any object's until perception sees it. The two are recorded as seen together, so the
    tracker never merges them back; a person can (``decide_merge``)."""
    out = _writer(state, "correction", t, actor, reason, recorded_at)
    out.event(EventKind.SPLIT, obj.id, obj.label, {
        "into": new_id, "n_held": 0, "center": list(center), "actor": actor,
        "reason": reason,
    })
    out.event(EventKind.APPEARED, new_id, label, {
        "label": label, "center": list(center), "size": list(size), "split_from": obj.id,
        "label_mass": {}, "n_detections": 0, "first_seen": t, "source": f"person:{actor}",
        "attributes": {}, "actor": actor, "reason": reason,
    })
    out.event(EventKind.PROMOTED, new_id, label, {"to": list(center), "size": list(size),
                                                 "by": actor})
    out.event(EventKind.CORRECTED, new_id, label, {
        "field": "label", "from": label, "to": label, "pin": True, "mass": None,
        "label_after": label, "actor": actor, "reason": reason,
    })
    return out.records
