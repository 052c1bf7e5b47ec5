"""Events as lines a person reads: one table entry per event kind (:data:`TEXTS`).

Each entry words the kind's data up to three times — the full line the command line prints
(:func:`event_line`: ``locimem events``, ``audit``, ``observe``), the short one of a map's
or timeline's event list (:func:`short_line`: the browser map, Rerun), and the phrase a
language model reads in an object's history (:func:`event_phrase`: the agent's ``history``
tool; the object is named beside it). A kind without a short wording shows its head alone
there; one without a phrase, its name in lower case. Every string from perception is
sanitised, and a kind new to :class:`~locimem.model.EventKind` must come with its entry (a
test checks the table is whole).

>>> from locimem.model import OBJECTLESS_KINDS, Event, EventKind
>>> ev = Event(seq=7, commit=3, t=12.0, kind=EventKind.MOVED, object_id=4, label="cup",
...            data={"from": [1.0, 1.0, 0.9], "to": [1.5, 1.0, 0.9], "distance_m": 0.5})
>>> event_line(ev)
'MOVED         #4 cup (1.00, 1.00, 0.90) -> (1.50, 1.00, 0.90) (0.50 m)'
>>> short_line(ev)
'MOVED #4 cup (1.00, 1.00, 0.90) -> (1.50, 1.00, 0.90) (0.50 m)'
>>> event_phrase(ev)
'moved 0.50 m to (1.50, 1.00, 0.90)'
"""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from locimem.jsontext import rounded
from locimem.language.hedge import clean, sanitize, when
from locimem.language.hedge import place_text as place
from locimem.model import OBJECTLESS_KINDS, Event, EventKind
from locimem.times import time_text

__all__ = ["TEXTS", "EventText", "event_line", "event_phrase", "short_line"]

Words = Callable[[str, dict[str, Any]], str]
"""(the line's head, the event's data) -> the line."""
Phrase = Callable[[dict[str, Any]], str]
"""(the event's data) -> what happened to the object, as a phrase a model reads."""


@dataclass(frozen=True, slots=True)
class EventText:
    """How one event kind reads: ``line`` for the command line, ``short`` (None: the head
    alone) for a map's or timeline's list, ``phrase`` (None: the kind's name) for a
    model. The head names the object, but for the kinds about none
    (:data:`~locimem.model.OBJECTLESS_KINDS`); a phrase names nobody, and every string in
    it is :func:`~locimem.language.hedge.clean`."""

    line: Words
    short: Words | None = None
    phrase: Phrase | None = None


def _data(head: str, d: dict[str, Any]) -> str:
    """The kinds with nothing to word: the data as JSON, without who and why (the audit
    says those)."""
    rest = {k: v for k, v in d.items() if k not in ("actor", "reason")}
    return f"{head} {json.dumps(rounded(rest), sort_keys=True)}"


def _appeared(head: str, d: dict[str, Any]) -> str:
    if "split_from" in d:
        return f"{head} at {place(d['center'])}, split from #{d['split_from']}"
    return f"{head} at {place(d['center'])}"


def _promoted(head: str, d: dict[str, Any]) -> str:
    if d.get("by"):  # a person vouched for it (a split)
        return f"{head} on {sanitize(d['by'])}'s word: now published"
    if "n_detections" not in d:  # a prior-map entry is published as it is loaded
        return f"{head} from the prior map: now published"
    return f"{head} after {d['n_detections']} detections: now published"


def _prior(head: str, d: dict[str, Any]) -> str:
    if d.get("removed"):
        return f"{head}: removed from the prior map"
    return f"{head}: prior map entry at {place(d['entry']['center'])}"


def _keyframe(head: str, d: dict[str, Any]) -> str:
    frame = d["kept"][-1]
    archived = "" if d.get("archived") is None else \
        f", replacing the frame of {time_text(d['archived']['t'])} (archived)"
    return (f"{head}: frame of {time_text(frame['t'])} kept as evidence (score "
            f"{frame['score']:.2f}){archived}")


def _corrected(head: str, d: dict[str, Any]) -> str:
    field = d.get("field")
    if field == "label":
        pinned = " (pinned)" if d.get("pin") else ""
        if d["from"] == d["to"]:
            return f"{head}: label {sanitize(d['to'])!r}{pinned}"
        return f"{head}: label {sanitize(d['from'])!r} -> {sanitize(d['to'])!r}{pinned}"
    if field == "center":
        return (f"{head}: moved {place(d['from'])} -> {place(d['to'])} "
                f"({d['distance_m']:.2f} m)")
    if field == "attributes":
        parts = [f"{k}={v!r}" for k, v in d.get("set", {}).items()]
        parts += [f"-{k}" for k in d.get("removed", [])]
        return f"{head}: attributes " + ", ".join(parts)
    return _data(f"{head}:", d)


def _moved(head: str, d: dict[str, Any]) -> str:
    return f"{head} {place(d['from'])} -> {place(d['to'])} ({d['distance_m']:.2f} m)"


def _reacquired(head: str, d: dict[str, Any]) -> str:
    return f"{head}: seen again after {d['gap_s']:.1f} s"


def _room(head: str, d: dict[str, Any]) -> str:
    return f"{head} {sanitize(d['name'])}"


def _rooms_connected(head: str, d: dict[str, Any]) -> str:
    return f"{head} {sanitize(d['a'])} <-> {sanitize(d['b'])}"


def _at_center(head: str, d: dict[str, Any]) -> str:
    return f"{head} at {place(d['center'])}"


def _seen_at(kind: str) -> Phrase:
    return lambda d: f"{kind} at {place(d['center'])}"


def _delta_phrase(d: dict[str, Any]) -> str:
    return (f"{clean(d['kind'], 16)} compared with the prior map: {clean(d['status'], 16)} "
            f"(delta {int(d['id'])})")


TEXTS: dict[EventKind, EventText] = {
    EventKind.APPEARED: EventText(_appeared, _at_center, _seen_at("appeared")),
    EventKind.PROMOTED: EventText(_promoted),
    EventKind.LABEL_CHANGED: EventText(
        lambda h, d: f"{h}: vote moved from {sanitize(d['from'])!r} to {sanitize(d['to'])!r}",
        lambda h, d: f"{h}: label {sanitize(str(d['from']))!r} -> {sanitize(str(d['to']))!r}",
        lambda d: f"label vote changed from {clean(d['from'], 40)!r} to {clean(d['to'], 40)!r}"),
    EventKind.MOVED: EventText(
        _moved, _moved, lambda d: f"moved {float(d['distance_m']):.2f} m to {place(d['to'])}"),
    EventKind.LOST: EventText(
        lambda h, d: (f"{h}: unseen since {time_text(d['last_seen'])} (confidence "
                      f"{d['confidence']:.2f})"),
        lambda h, d: f"{h}: unseen since {time_text(d['last_seen'], ms=False, digits=1)}",
        lambda d: f"lost (last seen {when(float(d['last_seen']))})"),
    EventKind.REACQUIRED: EventText(_reacquired, _reacquired, _seen_at("reacquired")),
    EventKind.CORRECTED: EventText(
        _corrected, lambda h, d: f"{h}: {sanitize(str(d['field']))} corrected",
        lambda d: f"{clean(d.get('field', 'something'), 20)} corrected"),
    EventKind.FORGOTTEN: EventText(_at_center),
    EventKind.SUPPRESSED: EventText(_data),
    EventKind.REVIVED: EventText(_data),
    EventKind.COMPACTED: EventText(_data),
    EventKind.RELATION: EventText(
        lambda h, d: (f"{h} {'now' if d['added'] else 'no longer'} {d['relation']} "
                      f"#{d['object']} {sanitize(d['object_label'])}"),
        phrase=lambda d: (f"{'now' if d.get('added') else 'no longer'} "
                          f"{clean(d['relation'], 16)} #{int(d['object'])}")),
    EventKind.ROOM_DEFINED: EventText(_room, _room),
    EventKind.ROOMS_CONNECTED: EventText(_rooms_connected, _rooms_connected),
    EventKind.ROOM_REMOVED: EventText(_room, _room),
    EventKind.EXPIRED: EventText(_data),
    EventKind.MERGED: EventText(
        lambda h, d: (f"{h}: absorbed #{d['absorbed']} ({d.get('distance_m', 0.0):.2f} m "
                      f"away), now {d['n_detections']} detections")),
    EventKind.SPLIT: EventText(
        lambda h, d: f"{h}: split, the other one is #{d['into']} at {place(d['center'])}"),
    EventKind.PRIOR: EventText(_prior, phrase=lambda d: (
        "removed from the prior map" if d.get("removed") else "prior map updated")),
    EventKind.DELTA: EventText(
        lambda h, d: (f"{h}: {d['kind']} vs the prior map, {d['status']} (delta {d['id']}, "
                      f"evidence {d['evidence']['n']})"), phrase=_delta_phrase),
    EventKind.KEYFRAME: EventText(
        _keyframe, phrase=lambda d: "a frame that saw it was kept as evidence"),
    EventKind.SETTLED: EventText(
        lambda h, d: f"{h} at {place(d['to'])} after {d['n_detections']} detections",
        phrase=lambda d: (f"its place settled at {place(d['to'])} after "
                          f"{int(d['n_detections'])} sightings")),
    EventKind.REANCHORED: EventText(
        lambda h, d: (f"{h} {place(d['from'])} -> {place(d['to'])} ({d['shift_m']:.2f} m, "
                      f"{d['n_reanchored']} sightings re-anchored by a pose correction)"),
        lambda h, d: f"{h} {place(d['from'])} -> {place(d['to'])} (pose correction)",
        lambda d: (f"re-anchored {float(d['shift_m']):.2f} m to {place(d['to'])} by a pose "
                   "correction")),
    EventKind.MAP_EPOCH: EventText(_data),
    EventKind.MAP_ALIGNED: EventText(_data),
}


def event_line(ev: Event) -> str:
    """The full line of an event, as the command line prints it (the kind padded to a
    column)."""
    text = TEXTS[ev.kind]
    head = f"{ev.kind.value:<13}"
    if ev.kind not in OBJECTLESS_KINDS:
        head += f" #{ev.object_id} {sanitize(ev.label)}"
    return text.line(head, ev.data)


def short_line(ev: Event) -> str:
    """The short line of an event, for a map's or timeline's list: the kind's short wording,
    or its head alone (also when the data lacks what the wording needs)."""
    text = TEXTS[ev.kind]
    head = ev.kind.value if ev.kind in OBJECTLESS_KINDS else \
        f"{ev.kind.value} #{ev.object_id} {sanitize(ev.label)}"
    if text.short is None:
        return head
    try:
        return text.short(head, ev.data)
    except (KeyError, TypeError, ValueError, IndexError):
        return head


def event_phrase(ev: Event) -> str:
    """What an event did to its object, as a phrase a model reads (the object is named
    beside it): the kind's phrase, or its name in lower case (also when the data lacks what
    the phrase needs)."""
    phrase = TEXTS[ev.kind].phrase
    if phrase is not None:
        try:
            return phrase(ev.data or {})
        except (KeyError, TypeError, ValueError):
            pass
    return ev.kind.value.lower()
