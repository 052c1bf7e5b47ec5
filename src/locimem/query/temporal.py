"""Questions about time: what changed, what is stale, where something was."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field

from locimem.model import Event, EventKind

# how each event kind reads in a change summary
CHANGE_WORDS = {
    EventKind.APPEARED: "appeared",
    EventKind.MOVED: "moved",
    EventKind.LABEL_CHANGED: "relabelled",
    EventKind.LOST: "lost",
    EventKind.REACQUIRED: "reacquired",
    EventKind.CORRECTED: "corrected",
    EventKind.REVIVED: "revived",
    EventKind.PROMOTED: "confirmed",
}


@dataclass(frozen=True, slots=True)
class ObjectChanges:
    """What happened to one object since a time, in order (``changes`` are words such as
    "appeared", "moved", "relabelled", "lost"; ``events`` the events themselves)."""

    object_id: int
    label: str
    changes: tuple[str, ...]
    events: tuple[Event, ...] = field(default=(), compare=False)
    first_t: float = 0.0
    last_t: float = 0.0

    def text(self) -> str:
        words = list(dict.fromkeys(self.changes))  # first occurrence order, no repeats
        return f"#{self.object_id} {self.label}: {', '.join(words)}"


def without_moves_before(events: list[Event], t: float) -> list[Event]:
    """``events`` (since ``t``) without the moves nobody watched that had happened before
    ``t`` — a relocated ``MOVED`` whose thing was already seen at its new place then
    (``seen_there_since < t``) — and the other events of that object in the same commit
    (the ``MERGED`` that told it, the relations it changed)."""
    early = {(ev.commit, ev.object_id) for ev in events
             if ev.kind is EventKind.MOVED and ev.data.get("relocated")
             and ev.data.get("seen_there_since", t) < t}
    if not early:
        return events
    return [ev for ev in events if (ev.commit, ev.object_id) not in early]


def group_changes(events: Iterable[Event]) -> list[ObjectChanges]:
    """Group events by object (ordered by each object's first change). Relation changes are
    folded in as "now on the counter" / "no longer on the table"."""
    grouped: dict[int, list[Event]] = {}
    for ev in events:
        if ev.object_id == 0:  # maintenance
            continue
        if ev.kind in CHANGE_WORDS or ev.kind in (EventKind.RELATION, EventKind.DELTA,
                                                   EventKind.PRIOR):
            grouped.setdefault(ev.object_id, []).append(ev)
    out = []
    for oid, evs in grouped.items():
        words = []
        for ev in evs:
            d = ev.data
            if ev.kind is EventKind.RELATION:
                words.append(f"{'now' if d['added'] else 'no longer'} {d['relation']} "
                             f"#{d['object']} {d.get('object_label', '')}".rstrip())
            elif ev.kind is EventKind.DELTA:  # a difference from the prior map
                words.append(f"{d['kind']} vs the prior map: {d['status']} (delta {d['id']})")
            elif ev.kind is EventKind.PRIOR:
                words.append("removed from the prior map" if d.get("removed")
                             else "prior map updated")
            else:
                words.append(CHANGE_WORDS[ev.kind])
        out.append(ObjectChanges(oid, evs[-1].label, tuple(words), tuple(evs), evs[0].t,
                                 evs[-1].t))
    return out
