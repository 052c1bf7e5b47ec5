"""Corrections and forgetting as records: pure decisions, written through the same path as scans.

A correction never erases evidence: a relabel keeps the label mass it overrules (and either
pins the person's label or adds it as weighted evidence), a move keeps the trail of sightings,
and forgetting keeps the whole object inside a tombstone.
"""

from __future__ import annotations

import math
from typing import Any

from locimem.config import TrackerConfig
from locimem.model import Commit, EventKind, ObjectState, Record
from locimem.tracker.decide import RecordWriter
from locimem.tracker.state import MemoryState

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
