"""The query router: short phrases to intents, anchors on whole words, times and numbers."""

from __future__ import annotations

import pytest

from locimem.errors import InvalidInput
from locimem.language.router import (
    Intent,
    IntentKind,
    Vocabulary,
    parse,
    parse_duration,
    parse_time,
)

LABELS = ["kitchen table", "table", "cup", "mug", "sink", "drawer", "phone", "chair", "tray",
          "shelf", "counter", "bed", "sofa", "remote", "key"]
ROOMS = ["kitchen", "living room", "bedroom", "hallway"]
K = IntentKind


def fields(intent: Intent) -> dict:
    """The fields that are set, without the original text."""
    return {k: getattr(intent, k) for k in intent.__slots__
            if k != "text" and getattr(intent, k) not in (None, False)}


@pytest.mark.parametrize(("question", "expected"), [
    ("what's on the kitchen table",
     {"kind": K.RELATIONAL, "relation": "on", "anchor": "kitchen table", "anchor_known": True}),
    ("What’s on the table?",
     {"kind": K.RELATIONAL, "relation": "on", "anchor": "table", "anchor_known": True}),
    ("cups near the sink",
     {"kind": K.RELATIONAL, "target": "cup", "target_known": True, "relation": "near",
      "anchor": "sink", "anchor_known": True}),
    ("what is in the drawer",
     {"kind": K.RELATIONAL, "relation": "in", "anchor": "drawer", "anchor_known": True}),
    ("what is under the bed",
     {"kind": K.RELATIONAL, "relation": "under", "anchor": "bed", "anchor_known": True}),
    ("whats next to the sofa",
     {"kind": K.RELATIONAL, "relation": "next_to", "anchor": "sofa", "anchor_known": True}),
    ("what is on top of the counter",
     {"kind": K.RELATIONAL, "relation": "on", "anchor": "counter", "anchor_known": True}),
    ("what's on the table in the kitchen",
     {"kind": K.RELATIONAL, "relation": "on", "anchor": "table", "anchor_known": True,
      "room": "kitchen"}),
    ("find the mugs on the shelf",
     {"kind": K.RELATIONAL, "target": "mug", "target_known": True, "relation": "on",
      "anchor": "shelf", "anchor_known": True}),
    ("what is near the fridge",  # not in the vocabulary: kept, and marked unknown
     {"kind": K.RELATIONAL, "relation": "near", "anchor": "fridge"}),
    ("what's in the kitchen",
     {"kind": K.ROOM, "anchor": "kitchen", "anchor_known": True, "anchor_is_room": True,
      "room": "kitchen"}),
    ("cups in the living room",
     {"kind": K.ROOM, "target": "cup", "target_known": True, "anchor": "living room",
      "anchor_known": True, "anchor_is_room": True, "room": "living room"}),
    ("where is my phone", {"kind": K.WHERE_IS, "target": "phone", "target_known": True}),
    ("where did I leave my keys", {"kind": K.WHERE_IS, "target": "key", "target_known": True}),
    ("which room is the remote in",
     {"kind": K.WHERE_IS, "target": "remote", "target_known": True}),
    ("where was the cup at 10:30",
     {"kind": K.WHERE_IS, "target": "cup", "target_known": True, "t": 37800.0,
      "t_kind": "clock"}),
    ("find my phone", {"kind": K.WHERE_IS, "target": "phone", "target_known": True}),
    ("find something to drink from", {"kind": K.FIND, "target": "something to drink from"}),
    ("mugs", {"kind": K.FIND, "target": "mug", "target_known": True}),
    ("umbrellas", {"kind": K.FIND, "target": "umbrella"}),
    ("what did I see last", {"kind": K.RECENT}),
    ("recent", {"kind": K.RECENT}),
    ("show me the 3 most recent things", {"kind": K.RECENT, "n": 3}),
    ("what changed since 10:00", {"kind": K.CHANGES_SINCE, "t": 36000.0, "t_kind": "clock"}),
    ("what changed since 7 pm", {"kind": K.CHANGES_SINCE, "t": 68400.0, "t_kind": "clock"}),
    ("anything new since t=120", {"kind": K.CHANGES_SINCE, "t": 120.0, "t_kind": "time"}),
    ("what changed in the last 5 minutes",
     {"kind": K.CHANGES_SINCE, "t": 300.0, "t_kind": "ago"}),
    ("what changed", {"kind": K.CHANGES_SINCE}),
    ("what moved today", {"kind": K.CHANGES_SINCE, "relation": "moved"}),
    ("what changed in the kitchen", {"kind": K.CHANGES_SINCE, "room": "kitchen"}),
    ("what moved in the bedroom since 7 pm",
     {"kind": K.CHANGES_SINCE, "relation": "moved", "room": "bedroom", "t": 68400.0,
      "t_kind": "clock"}),
    ("what haven't I seen for a day", {"kind": K.STALE, "t": 86400.0, "t_kind": "ago"}),
    ("what has not been seen since noon", {"kind": K.STALE, "t": 43200.0, "t_kind": "clock"}),
    ("how do I get from the bedroom to the kitchen",
     {"kind": K.PATH, "start": "bedroom", "goal": "kitchen"}),
    ("how do I get to the kitchen from the hallway",
     {"kind": K.PATH, "start": "hallway", "goal": "kitchen"}),
    ("the five nearest chairs",
     {"kind": K.NEAR_ME, "target": "chair", "target_known": True, "n": 5}),
    ("closest chair", {"kind": K.NEAR_ME, "target": "chair", "target_known": True, "n": 1}),
    ("what is within a metre of me", {"kind": K.NEAR_ME, "radius_m": 1.0}),
    ("cups within 50 cm of me",
     {"kind": K.NEAR_ME, "target": "cup", "target_known": True, "radius_m": 0.5}),
    # inverse relations: what the named thing is on, in, under, next to
    ("what is the cup on", {"kind": K.INVERSE, "target": "cup", "target_known": True,
                            "relation": "on"}),
    ("What's the mug sitting on?", {"kind": K.INVERSE, "target": "mug", "target_known": True,
                                    "relation": "on"}),
    ("what are the keys lying on top of",
     {"kind": K.INVERSE, "target": "key", "target_known": True, "relation": "on"}),
    ("what does the remote rest on",
     {"kind": K.INVERSE, "target": "remote", "target_known": True, "relation": "on"}),
    ("what is the phone in", {"kind": K.INVERSE, "target": "phone", "target_known": True,
                              "relation": "in"}),
    ("what's the cup inside of", {"kind": K.INVERSE, "target": "cup", "target_known": True,
                                  "relation": "in"}),
    ("what is the remote under",
     {"kind": K.INVERSE, "target": "remote", "target_known": True, "relation": "under"}),
    ("what is the chair next to",
     {"kind": K.INVERSE, "target": "chair", "target_known": True, "relation": "next_to"}),
    ("which shelf is the cup on",
     {"kind": K.INVERSE, "target": "cup", "target_known": True, "relation": "on",
      "anchor": "shelf", "anchor_known": True}),
    ("which table is the mug in the kitchen on",
     {"kind": K.INVERSE, "target": "mug", "target_known": True, "relation": "on",
      "anchor": "table", "anchor_known": True, "room": "kitchen"}),
    ("what is the umbrella on", {"kind": K.INVERSE, "target": "umbrella", "relation": "on"}),
    # ... and the phrasings they must not take
    ("what is under the remote",
     {"kind": K.RELATIONAL, "relation": "under", "anchor": "remote", "anchor_known": True}),
    ("what is on the cup",
     {"kind": K.RELATIONAL, "relation": "on", "anchor": "cup", "anchor_known": True}),
    ("what is the cup", {"kind": K.FIND, "target": "cup", "target_known": True}),
    ("which room is the cup in",
     {"kind": K.WHERE_IS, "target": "cup", "target_known": True}),
    ("what is the kitchen in", {"kind": K.FIND, "target": "kitchen", "target_known": True}),
])
def test_routes(question: str, expected: dict) -> None:
    intent = parse(question, LABELS, ROOMS)
    assert intent.text == question
    assert fields(intent) == expected


def test_anchor_matches_whole_words_only() -> None:
    labels = ["table", "tray", "cup"]
    intent = parse("what's on the vegetable tray", labels)
    assert (intent.anchor, intent.anchor_known) == ("tray", True)
    intent = parse("what's on the vegetable", labels)
    assert (intent.anchor, intent.anchor_known) == ("vegetable", False)  # not "table"
    intent = parse("what is in the cupboard", labels)
    assert (intent.anchor, intent.anchor_known) == ("cupboard", False)  # not "cup"


def test_longest_anchor_wins() -> None:
    intent = parse("what is on the kitchen table", ["table", "kitchen table", "kitchen"])
    assert intent.anchor == "kitchen table"
    # without the compound label, the head noun is the anchor and the room qualifies it
    intent = parse("what is on the kitchen table", ["table"], ["kitchen"])
    assert (intent.anchor, intent.room) == ("table", "kitchen")


def test_vocabulary_can_be_reused() -> None:
    vocab = Vocabulary(LABELS, ROOMS)
    assert vocab.matches(("the", "kitchen", "table")) == [(1, 3, "kitchen table", False)]
    assert vocab.matches(("the", "kitchen", "table"), rooms=True) == [(1, 2, "kitchen", True)]
    assert parse("where is the sofa", vocabulary=vocab).target == "sofa"


@pytest.mark.parametrize(("text", "expected"), [
    ("10:00", (36000.0, "clock")), ("9:30:15", (34215.0, "clock")),
    ("12:15 am", (900.0, "clock")), ("12 pm", (43200.0, "clock")), ("7am", (25200.0, "clock")),
    ("midnight", (0.0, "clock")), ("t = 12.5", (12.5, "time")), ("120", (120.0, "time")),
    ("5 minutes ago", (300.0, "ago")), ("the last hour", (3600.0, "ago")),
    ("half an hour", (1800.0, "ago")), ("two days", (172800.0, "ago")),
    ("25:00", None), ("nothing", None),
])
def test_parse_time(text: str, expected) -> None:
    assert parse_time(text) == expected


def test_parse_duration() -> None:
    assert parse_duration("for 3 hrs") == 10800.0
    assert parse_duration("a week") == 604800.0
    assert parse_duration("soon") is None


@pytest.mark.parametrize(("question", "message"), [
    (None, "question must be a string, got NoneType"),
    ("x" * 501, "question must be at most 500 characters, got 501"),
    ("  ?? ", "question must not be empty"),
])
def test_bad_questions(question, message) -> None:
    with pytest.raises(InvalidInput, match=message):
        parse(question, LABELS, ROOMS)
