"""The prior (long-term) map as records: loading one, and applying confirmed deltas to it.

Pure decisions like the tracker's own: the state in, the events of one commit out (as
``(kind, object id, label, data)`` items, written by the commit step).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import replace
from typing import Any

from locimem.check import (
    check_attributes,
    check_coordinate_domain,
    check_label,
    check_quaternion,
    check_size_domain,
    check_unit_interval,
)
from locimem.errors import InvalidInput
from locimem.model import EventKind
from locimem.model.prior import Delta, PriorEntry
from locimem.tracker.commit import Derived
from locimem.tracker.state import MemoryState

__all__ = ["check_prior_entry", "consolidation", "prior_events"]


def check_prior_entry(i: int, entry: Any, scene: str) -> PriorEntry:
    """One prior-map entry as a caller gives it (a dict), validated."""
    if not isinstance(entry, dict):
        raise InvalidInput(f"prior entry {i} must be a dict with label, center and size")
    unknown = sorted(set(entry) - {"label", "center", "size", "orientation", "attributes",
                                   "confidence", "id"})
    if unknown:
        raise InvalidInput(f"prior entry {i} has unknown field(s): {', '.join(unknown)}")
    orientation = entry.get("orientation")
    prior_id = entry.get("id")
    if prior_id is not None and not isinstance(prior_id, (str, int)):
        raise InvalidInput(f"prior entry {i}: id must be a string or an integer")
    return PriorEntry(
        label=check_label(entry.get("label")),
        center=check_coordinate_domain(entry.get("center"), f"prior entry {i} center"),
        size=check_size_domain(entry.get("size"), f"prior entry {i} size"),
        orientation=None if orientation is None else check_quaternion(
            orientation, f"prior entry {i} orientation"),
        attributes=check_attributes(entry.get("attributes") or {}),
        confidence=check_unit_interval(entry.get("confidence", 1.0),
                                       f"prior entry {i} confidence"),
        source=f"prior:{scene}",
        prior_id=prior_id,
    )

def prior_events(state: MemoryState, entries: Sequence[PriorEntry]
                 ) -> tuple[list[int], list[Derived]]:
    """The ids the checked ``entries`` get, and the events that load them: each becomes a
    confirmed object (APPEARED, PROMOTED) with its PRIOR entry."""
    ids = [state.next_object_id + offset for offset in range(len(entries))]
    items: list[Derived] = []
    for oid, entry in zip(ids, entries, strict=True):
        data = entry.to_dict()
        label = entry.label
        items += [
            (EventKind.APPEARED, oid, label, {
                "label": label, "center": data["center"], "size": data["size"],
                "source": entry.source, "prior": True,
                "attributes": data["attributes"], "orientation": data["orientation"]}),
            (EventKind.PROMOTED, oid, label, {"to": data["center"], "size": data["size"]}),
            (EventKind.PRIOR, oid, label, {"entry": data}),
        ]
    return ids, items


def consolidation(state: MemoryState, actor: str, reason: str | None
                  ) -> tuple[list[Delta], list[Derived]]:
    """Every confirmed delta applied to the prior map: the deltas as they become
    ``applied``, and the events of the one commit that applies them (PRIOR updates, DELTA
    status changes, and a MERGED where a move was seen as a new identity)."""
    t = float(state.now or 0.0)
    items: list[Derived] = []
    applied = []
    entries: dict[int, PriorEntry | None] = {}  # the map as this commit changes it
    for did in sorted(state.deltas):
        delta = state.deltas[did]
        if delta.status != "confirmed":
            continue
        items += _consolidation(state, delta, entries)
        done = delta.reviewed("applied", t, actor, reason)
        items.append((EventKind.DELTA, done.object, done.label, done.to_dict()))
        applied.append(done)
    return applied, items


def _consolidation(state: MemoryState, delta: Delta,
                   entries: dict[int, PriorEntry | None]) -> list[Derived]:
    """The PRIOR events that apply one confirmed delta to the prior map; ``entries``
    holds the entries earlier deltas of the same commit changed (and is updated)."""
    oid, kind, label = delta.object, delta.kind, delta.label
    entry = entries[oid] if oid in entries else state.prior.get(oid)
    if kind == "removed" or (entry is None and kind != "added"):
        entries[oid] = None
        return [(EventKind.PRIOR, oid, label, {"removed": True, "delta": delta.id})]
    observed = delta.observed
    assert observed is not None  # moved, added and geometry deltas carry what was seen
    if kind == "added":
        obj = state.objects.get(oid)
        new = PriorEntry(label=label, center=observed.center, size=observed.size,
                         orientation=None,
                         attributes=dict(obj.attributes) if obj is not None else {},
                         confidence=1.0, source=obj.source if obj is not None else "tracker",
                         prior_id=None)
        entries[oid] = new
        return [(EventKind.PRIOR, oid, label, {"entry": new.to_dict(), "delta": delta.id})]
    assert entry is not None
    if kind == "moved":
        new = replace(entry, center=observed.center)
    else:
        new = replace(entry, size=observed.size)
    entries[oid] = new
    update = (EventKind.PRIOR, oid, label, {"entry": new.to_dict(), "delta": delta.id})
    live, obj = delta.live, state.objects.get(oid)
    young = state.objects.get(live) if live is not None else None
    if young is None or obj is None:
        return [update]
    # the move was seen as a new identity: the prior object absorbs it (MERGED), so the
    # map keeps its id and no ghost stays behind at the old place
    return [(EventKind.MERGED, oid, young.label, {
        "absorbed": live, "center": list(young.center), "size": list(young.size),
        "to": list(young.place),
        "label_mass": dict(sorted(young.label_mass.items())),
        "n_detections": obj.n_detections + young.n_detections, "label": young.label,
        "distance_m": math.dist(obj.center, young.center), "delta": delta.id}), update]
