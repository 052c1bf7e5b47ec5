"""Events and audit entries as lines a person reads (and as their JSON records)."""

from __future__ import annotations

import json
from typing import Any

from locimem.cli.common import place, rounded, time_text
from locimem.language.hedge import sanitize
from locimem.model import AuditEntry, Event, EventKind


def format_event(ev: Event) -> str:
    """One readable line for an event."""
    d = ev.data
    head = f"{ev.kind.value:<13} #{ev.object_id} {sanitize(ev.label)}"
    if ev.kind is EventKind.RELATION:
        verb = "now" if d["added"] else "no longer"
        return f"{head} {verb} {d['relation']} #{d['object']} {sanitize(d['object_label'])}"
    if ev.kind is EventKind.ROOM_DEFINED:
        return f"{ev.kind.value:<13} {sanitize(d['name'])}"
    if ev.kind is EventKind.ROOM_REMOVED:
        return f"{ev.kind.value:<13} {sanitize(d['name'])}"
    if ev.kind is EventKind.ROOMS_CONNECTED:
        return f"{ev.kind.value:<13} {sanitize(d['a'])} <-> {sanitize(d['b'])}"
    if ev.kind is EventKind.APPEARED:
        if "split_from" in d:
            return f"{head} at {place(d['center'])}, split from #{d['split_from']}"
        return f"{head} at {place(d['center'])}"
    if ev.kind is EventKind.PROMOTED:
        if d.get("by"):  # a person vouched for it (a split)
            return f"{head} on {sanitize(d['by'])}'s word: now published"
        if "n_detections" not in d:  # a prior-map entry is published as it is loaded
            return f"{head} from the prior map: now published"
        return f"{head} after {d['n_detections']} detections: now published"
    if ev.kind is EventKind.PRIOR:
        if d.get("removed"):
            return f"{head}: removed from the prior map"
        return f"{head}: prior map entry at {place(d['entry']['center'])}"
    if ev.kind is EventKind.DELTA:
        return (f"{head}: {d['kind']} vs the prior map, {d['status']} (delta {d['id']}, "
                f"evidence {d['evidence']['n']})")
    if ev.kind is EventKind.KEYFRAME:
        frame = d["kept"][-1]
        archived = "" if d.get("archived") is None else \
            f", replacing the frame of {time_text(d['archived']['t'])} (archived)"
        return (f"{head}: frame of {time_text(frame['t'])} kept as evidence (score "
                f"{frame['score']:.2f}){archived}")
    if ev.kind is EventKind.LABEL_CHANGED:
        return f"{head}: vote moved from {sanitize(d['from'])!r} to {sanitize(d['to'])!r}"
    if ev.kind is EventKind.SETTLED:
        return f"{head} at {place(d['to'])} after {d['n_detections']} detections"
    if ev.kind is EventKind.MOVED:
        return f"{head} {place(d['from'])} -> {place(d['to'])} ({d['distance_m']:.2f} m)"
    if ev.kind is EventKind.REANCHORED:
        return (f"{head} {place(d['from'])} -> {place(d['to'])} ({d['shift_m']:.2f} m, "
                f"{d['n_reanchored']} sightings re-anchored by a pose correction)")
    if ev.kind is EventKind.LOST:
        return (f"{head}: unseen since {time_text(d['last_seen'])} (confidence "
                f"{d['confidence']:.2f})")
    if ev.kind is EventKind.REACQUIRED:
        return f"{head}: seen again after {d['gap_s']:.1f} s"
    if ev.kind is EventKind.MERGED:
        return (f"{head}: absorbed #{d['absorbed']} ({d.get('distance_m', 0.0):.2f} m away), "
                f"now {d['n_detections']} detections")
    if ev.kind is EventKind.SPLIT:
        return f"{head}: split, the other one is #{d['into']} at {place(d['center'])}"
    if ev.kind is EventKind.CORRECTED:
        return f"{head}: {_correction(d)}"
    if ev.kind is EventKind.FORGOTTEN:
        return f"{head} at {place(d['center'])}"
    return f"{head} {json.dumps(rounded(_without(d, 'actor', 'reason')), sort_keys=True)}"


def _correction(d: dict[str, Any]) -> str:
    field = d.get("field")
    if field == "label":
        pinned = " (pinned)" if d.get("pin") else ""
        if d["from"] == d["to"]:
            return f"label {sanitize(d['to'])!r}{pinned}"
        return f"label {sanitize(d['from'])!r} -> {sanitize(d['to'])!r}{pinned}"
    if field == "center":
        return f"moved {place(d['from'])} -> {place(d['to'])} ({d['distance_m']:.2f} m)"
    if field == "attributes":
        parts = [f"{k}={v!r}" for k, v in d.get("set", {}).items()]
        parts += [f"-{k}" for k in d.get("removed", [])]
        return "attributes " + ", ".join(parts)
    return json.dumps(rounded(_without(d, "actor", "reason")), sort_keys=True)


def _without(d: dict[str, Any], *keys: str) -> dict[str, Any]:
    return {k: v for k, v in d.items() if k not in keys}


def event_doc(ev: Event) -> dict[str, Any]:
    """An event's JSON Lines record."""
    return {"seq": ev.seq, "commit": ev.commit, "t": ev.t, "kind": ev.kind.value,
            "object_id": ev.object_id, "label": ev.label, "data": ev.data}


def audit_doc(e: AuditEntry) -> dict[str, Any]:
    """An audit entry's JSON Lines record, numbers rounded (4 decimals; times to the ms)."""
    return {"commit": e.commit, "kind": e.kind, "actor": e.actor, "reason": e.reason,
            "t": round(e.t, 3), "recorded_at": round(e.recorded_at, 3),
            "events": [{"kind": ev.kind.value, "object_id": ev.object_id, "label": ev.label,
                        "data": rounded(ev.data)} for ev in e.events]}


def audit_lines(e: AuditEntry) -> list[str]:
    why = f" ({sanitize(e.reason)})" if e.reason else ""
    head = f"{time_text(e.t):>24}  {e.kind:<11} by {sanitize(e.actor)}{why}"
    return [head, *(f"{'':>26}{format_event(ev)}" for ev in e.events)]
