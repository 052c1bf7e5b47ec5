"""Times the agent layer hands a model or a person (the contract of :mod:`locimem.times`):
beside each time in seconds its ISO 8601 form when it looks like Unix time, ISO instead of
seconds in prompt text, and nothing added for a store on a simulation's clock; a time to
read (``recent_changes``' ``since``) taken as seconds, ISO 8601 or a clock time."""

from __future__ import annotations

import json

import pytest

from locimem import ObjectMemory
from tests.agent.test_agent_tools import build_home

T0 = 1764600000.0  # 2025-12-01T14:40:00Z: the home's scans on the Unix clock


@pytest.fixture(scope="module")
def unix_home():
    mem = build_home(ObjectMemory.open(":memory:", scope="home"), t0=T0)
    yield mem
    mem.close()


@pytest.fixture(scope="module")
def sim_home():
    mem = build_home(ObjectMemory.open(":memory:", scope="home"))
    yield mem
    mem.close()


def _keys(value) -> set[str]:
    if isinstance(value, dict):
        return set(value) | {k for v in value.values() for k in _keys(v)}
    if isinstance(value, list):
        return {k for v in value for k in _keys(v)}
    return set()


def test_object_facts_carry_iso_beside_the_seconds(unix_home):
    tools = unix_home.tools()
    plate = tools.call("describe_object", {"object_id": 8})
    assert plate["answer"] == (
        'The "plate" (#8) is lost: last seen 40 s ago (2025-12-01T14:40:05Z) in the kitchen '
        "and not seen since; I gave it up at 2025-12-01T14:40:40Z."
    )
    assert {k: v for k, v in plate["object"].items() if "_t" in k or "_iso" in k} == {
        "last_seen_t": T0 + 5,
        "last_seen_iso": "2025-12-01T14:40:05Z",
        "lost_at_t": T0 + 40,
        "lost_at_iso": "2025-12-01T14:40:40Z",
        "first_seen_t": T0,
        "first_seen_iso": "2025-12-01T14:40:00Z",
    }
    assert list(plate["object"])[6:9] == ["last_seen_t", "last_seen_iso", "last_seen"]
    seen = tools.call("recently_seen", {"limit": 1})["objects"][0]
    assert (seen["last_seen_t"], seen["last_seen_iso"]) == (T0 + 45, "2025-12-01T14:40:45Z")


def test_history_events_and_sightings(unix_home):
    hist = unix_home.tools().call("object_history", {"object_id": 8, "limit": 2})
    assert hist["events"] == [
        {"t": T0 + 5, "iso": "2025-12-01T14:40:05Z", "kind": "PROMOTED", "summary": "promoted"},
        {
            "t": T0 + 40,
            "iso": "2025-12-01T14:40:40Z",
            "kind": "LOST",
            "summary": "lost (last seen 2025-12-01T14:40:05Z)",
        },
    ]
    assert (hist["first_sighting_t"], hist["first_sighting_iso"]) == (T0, "2025-12-01T14:40:00Z")
    assert (hist["last_sighting_t"], hist["last_sighting_iso"]) == (T0 + 5, "2025-12-01T14:40:05Z")


@pytest.mark.parametrize(
    "since",
    ["14:40:30", "2025-12-01T14:40:30Z", "2025-12-01T15:40:30+01:00", "1764600030", 1764600030],
)
def test_recent_changes_since_seconds_iso_or_a_clock_time(unix_home, since):
    arguments = {"since": since} if isinstance(since, str) else {"since_t": since}
    r = unix_home.tools().call("recent_changes", arguments)
    assert {k: r[k] for k in ("since_t", "since_iso", "now_t", "now_iso")} == {
        "since_t": T0 + 30,
        "since_iso": "2025-12-01T14:40:30Z",
        "now_t": T0 + 45,
        "now_iso": "2025-12-01T14:40:45Z",
    }
    assert r["changes"] == [
        {
            "id": 8,
            "label": "plate",
            "changes": ["lost"],
            "first_t": T0 + 40,
            "first_iso": "2025-12-01T14:40:40Z",
            "last_t": T0 + 40,
            "last_iso": "2025-12-01T14:40:40Z",
            "net": ["lost"],
        },
        {
            "id": 9,
            "label": "book",
            "changes": ["appeared"],
            "first_t": T0 + 44,
            "first_iso": "2025-12-01T14:40:44Z",
            "last_t": T0 + 44,
            "last_iso": "2025-12-01T14:40:44Z",
            "net": ["appeared"],
        },
    ]


def test_a_clock_time_on_a_simulation_clock_counts_from_zero(sim_home):
    r = sim_home.tools().call("recent_changes", {"since": "00:00:30"})
    assert (r["since_t"], r["count"]) == (30.0, 2) and "since_iso" not in r


def test_prompt_text_shows_iso_instead_of_unix_seconds(unix_home):
    scene = unix_home.scene_prompt(budget_tokens=300)
    assert (
        scene.splitlines()[2] == "2025-12-01T14:40:45Z; 9 objects; rooms: kitchen, living, office"
    )
    assert "1764600" not in scene
    doc = json.loads(unix_home.scene_prompt(format="json"))
    assert (doc["t"], doc["iso"]) == (T0 + 45, "2025-12-01T14:40:45Z")
    assert list(doc)[:4] == ["untrusted_data", "t", "iso", "objects_total"]
    changed = unix_home.answer("what changed since 14:40:30")
    assert changed.text == 'Since 2025-12-01T14:40:30Z: "plate" (#8) lost; "book" (#9) appeared.'
    assert "changes since 2025-12-01T14:40:30Z:\n" in changed.prompt.user
    cup = unix_home.answer("where is the cup")
    assert (
        '  #2 "cup" confirmed (0.80, 1.00, 0.80) room "kitchen" seen just now '
        "(2025-12-01T14:40:45Z)\n"
    ) in cup.prompt.user
    for prompt in (changed.prompt.user, cup.prompt.user):
        assert "1764600" not in prompt


def test_a_simulation_clock_keeps_seconds_and_adds_nothing(sim_home):
    tools = sim_home.tools()
    results = [
        tools.call("describe_object", {"object_id": 8}),
        tools.call("object_history", {"object_id": 8}),
        tools.call("recent_changes", {"since_t": 30}),
        tools.call("ask_memory", {"question": "what changed since t=30"}),
        tools.call("scene_summary", {}),
    ]
    assert not any("iso" in k for k in _keys(results))
    assert results[1]["events"][-1]["summary"] == "lost (last seen t=5.0 s)"
    assert results[3]["answer"] == 'Since t=30.0 s: "plate" (#8) lost; "book" (#9) appeared.'
    assert sim_home.scene_prompt().splitlines()[2] == (
        "t=45.0 s; 9 objects; rooms: kitchen, living, office"
    )
    assert "iso" not in json.loads(sim_home.scene_prompt(format="json"))
    cup = sim_home.answer("where is the cup").prompt.user
    assert ' room "kitchen" seen just now (t=45.0)\n' in cup
