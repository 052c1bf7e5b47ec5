"""The event text table: one entry per event kind, the command line's and the map's lines."""

from __future__ import annotations

import pytest

from locimem.language.events import TEXTS, event_line, event_phrase, short_line
from locimem.model import Event, EventKind


def _ev(kind: EventKind, data: dict, *, oid: int = 4, label: str = "cup") -> Event:
    return Event(seq=1, commit=1, t=3.0, kind=kind, object_id=oid, label=label, data=data)


def test_every_kind_has_one_entry() -> None:
    assert set(TEXTS) == set(EventKind)


@pytest.mark.parametrize("kind, data, line, short", [
    (EventKind.APPEARED, {"center": [1, 2, 0.5]}, "APPEARED      #4 cup at (1.00, 2.00, 0.50)",
     "APPEARED #4 cup at (1.00, 2.00, 0.50)"),
    (EventKind.APPEARED, {"center": [1, 2, 0.5], "split_from": 2},
     "APPEARED      #4 cup at (1.00, 2.00, 0.50), split from #2",
     "APPEARED #4 cup at (1.00, 2.00, 0.50)"),
    (EventKind.LOST, {"last_seen": 9.0, "confidence": 0.125},
     "LOST          #4 cup: unseen since t=9.00 s (confidence 0.12)",
     "LOST #4 cup: unseen since t=9.0 s"),
    (EventKind.PROMOTED, {"n_detections": 3},
     "PROMOTED      #4 cup after 3 detections: now published", "PROMOTED #4 cup"),
    (EventKind.CORRECTED, {"field": "label", "from": "mug", "to": "cup", "pin": True},
     "CORRECTED     #4 cup: label 'mug' -> 'cup' (pinned)", "CORRECTED #4 cup: label corrected"),
    (EventKind.ROOMS_CONNECTED, {"a": "kitchen", "b": "hall"},
     "ROOMS_CONNECTED kitchen <-> hall", "ROOMS_CONNECTED kitchen <-> hall"),
    (EventKind.EXPIRED, {"actor": "tracker", "why": 0.30000000000000004},
     'EXPIRED       #4 cup {"why": 0.3}', "EXPIRED #4 cup"),
])
def test_the_lines_of_a_kind(kind: EventKind, data: dict, line: str, short: str) -> None:
    ev = _ev(kind, data)
    assert (event_line(ev), short_line(ev)) == (line, short)


def test_a_short_line_without_the_data_it_needs_is_the_head_alone() -> None:
    assert short_line(_ev(EventKind.LOST, {})) == "LOST #4 cup"
    assert short_line(_ev(EventKind.MOVED, {"from": [0, 0, 0]})) == "MOVED #4 cup"
    with pytest.raises(KeyError):  # the command line reads what the record must hold
        event_line(_ev(EventKind.MOVED, {"from": [0, 0, 0]}))


def test_perception_text_is_sanitised() -> None:
    ev = _ev(EventKind.FORGOTTEN, {"center": [0, 0, 0]}, label="cup\x1b[2J\nrm -rf")
    assert "\x1b" not in event_line(ev) and "\n" not in short_line(ev)


@pytest.mark.parametrize("kind, data, phrase", [
    (EventKind.APPEARED, {"center": [1, 2, 0.5]}, "appeared at (1.00, 2.00, 0.50)"),
    (EventKind.REACQUIRED, {"center": [1, 2, 0.5], "gap_s": 4.0},
     "reacquired at (1.00, 2.00, 0.50)"),
    (EventKind.MOVED, {"from": [0, 0, 0], "to": [0.5, 0, 0], "distance_m": 0.5},
     "moved 0.50 m to (0.50, 0.00, 0.00)"),
    (EventKind.REANCHORED, {"from": [0, 0, 0], "to": [0, 0.25, 0], "shift_m": 0.25,
                            "n_reanchored": 3},
     "re-anchored 0.25 m to (0.00, 0.25, 0.00) by a pose correction"),
    (EventKind.SETTLED, {"to": [1, 1, 1], "n_detections": 6},
     "its place settled at (1.00, 1.00, 1.00) after 6 sightings"),
    (EventKind.LABEL_CHANGED, {"from": "mug", "to": "cup\u202e"},
     "label vote changed from 'mug' to 'cup'"),
    (EventKind.CORRECTED, {"field": "label", "from": "mug", "to": "cup"}, "label corrected"),
    (EventKind.CORRECTED, {}, "something corrected"),
    (EventKind.RELATION, {"relation": "on", "object": 7, "added": False},
     "no longer on #7"),
    (EventKind.LOST, {"last_seen": 5.0}, "lost (last seen t=5.0 s)"),
    (EventKind.DELTA, {"kind": "moved", "status": "pending", "id": 3},
     "moved compared with the prior map: pending (delta 3)"),
    (EventKind.PRIOR, {"removed": True}, "removed from the prior map"),
    (EventKind.PRIOR, {"entry": {}}, "prior map updated"),
    (EventKind.KEYFRAME, {"kept": []}, "a frame that saw it was kept as evidence"),
    (EventKind.PROMOTED, {"n_detections": 3}, "promoted"),  # no phrase: the kind's name
    (EventKind.APPEARED, {}, "appeared"),  # the data lacks what the phrase needs
    (EventKind.MOVED, {"to": [0, 0, 0], "distance_m": "far"}, "moved"),
])
def test_the_phrase_a_model_reads(kind: EventKind, data: dict, phrase: str) -> None:
    assert event_phrase(_ev(kind, data)) == phrase
