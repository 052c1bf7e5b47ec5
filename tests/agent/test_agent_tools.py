"""The agent tools: schemas that validate their own examples, strict argument checks with safe
errors, results that cite ids, write tools off unless enabled on a writable memory."""

from __future__ import annotations

import json
import math

import pytest

from locimem import Detection, ObjectMemory
from locimem.agent.arguments import Arguments, check_schema
from locimem.agent.tools import SPECS, ToolRegistry
from locimem.errors import ReadOnly, ToolError
from locimem.memory import reader_of


def build_home(mem: ObjectMemory, t0: float = 0.0) -> ObjectMemory:
    """Three linked rooms; a table with a cup (#2) and a mug (#3) on it (#1), a chair (#4), a
    drawer (#5) with a key in it (#6), a phone in the living room (#7), a plate lost at
    t=40 (#8) and a book seen twice in the office, unconfirmed (#9). Latest scan t=45 (every
    time counted from ``t0``)."""
    mem.define_room("kitchen", [(0, 0), (5, 0), (5, 4), (0, 4)])
    mem.define_room("living", [(5.1, 0), (10, 0), (10, 4), (5.1, 4)])
    mem.define_room("office", [(10.1, 0), (15, 0), (15, 4), (10.1, 4)])
    mem.connect_rooms("kitchen", "living")
    mem.connect_rooms("living", "office")
    steady = [
        Detection("table", 0.9, (1.0, 1.0, 0.375), (1.2, 0.8, 0.75)),
        Detection("cup", 0.9, (0.8, 1.0, 0.80), (0.08, 0.08, 0.1)),
        Detection("mug", 0.9, (1.3, 1.1, 0.80), (0.1, 0.08, 0.1)),
        Detection("chair", 0.9, (2.2, 1.0, 0.45), (0.45, 0.45, 0.9)),
        Detection("drawer", 0.9, (3.5, 3.0, 0.5), (1.0, 0.5, 0.3)),
        Detection("key", 0.9, (3.85, 3.0, 0.45), (0.05, 0.05, 0.02)),
        Detection("phone", 0.9, (7.0, 2.0, 0.45), (0.08, 0.15, 0.02)),
    ]
    plate = Detection("plate", 0.9, (4.0, 0.5, 0.9), (0.24, 0.24, 0.03))
    for t in range(6):
        mem.observe(t0 + t, [*steady, plate])
    for t in range(6, 44):
        mem.observe(t0 + t, steady)
    book = Detection("book", 0.9, (12.0, 2.0, 0.75), (0.16, 0.23, 0.04))
    for t in (44, 45):
        mem.observe(t0 + t, [*steady, book])
    return mem


@pytest.fixture(scope="module")
def home():
    mem = build_home(ObjectMemory.open(":memory:", scope="home"))
    yield mem
    mem.close()


def _labels(home):
    return {o.id: o.label for o in home.objects()}


def test_the_home_is_what_the_tests_assume(home):
    assert _labels(home) == {1: "table", 2: "cup", 3: "mug", 4: "chair", 5: "drawer", 6: "key",
                             7: "phone", 8: "plate", 9: "book"}
    assert home.get(8).status.value == "lost" and home.get(9).status.value == "tentative"


# -- schemas ------------------------------------------------------------------------------------
@pytest.mark.parametrize("spec", SPECS, ids=lambda s: s.name)
def test_every_tool_schema_validates_its_own_examples(spec):
    check_schema(spec.parameters)
    assert spec.examples, f"{spec.name} has no examples"
    for example in spec.examples:
        assert Arguments(spec.parameters).problems(example) == [], (spec.name, example)
    assert spec.parameters["type"] == "object"
    assert spec.parameters["additionalProperties"] is False
    for prop in spec.parameters["properties"].values():
        assert prop.get("description"), spec.name
        if prop.get("type") == "integer":
            assert "minimum" in prop and "maximum" in prop
        if prop.get("type") == "string" and "enum" not in prop:
            assert "maxLength" in prop
        if prop.get("type") == "array":
            assert "maxItems" in prop


def test_schema_styles(home):
    tools = home.tools()
    openai = tools.schemas("openai")
    anthropic = tools.schemas(style="anthropic")
    assert [s["function"]["name"] for s in openai] == tools.names()
    assert all(s["type"] == "function" and "parameters" in s["function"] for s in openai)
    assert [s["name"] for s in anthropic] == tools.names()
    assert all(set(s) == {"name", "description", "input_schema"} for s in anthropic)
    assert openai[0]["function"]["parameters"] == anthropic[0]["input_schema"]
    json.dumps(openai), json.dumps(anthropic)  # JSON-ready
    with pytest.raises(Exception, match="style must be one of"):
        tools.schemas("gemini")


def test_read_tools_only_unless_writes_are_enabled(home, store_path):
    names = home.tools().names()
    assert "correct_label" not in names and "forget_object" not in names
    assert {"find_objects", "where_is", "objects_near_point", "objects_near_object",
            "related_objects", "room_contents", "recent_changes", "describe_object",
            "object_history", "path_between_rooms", "scene_summary"} <= set(names)
    with pytest.raises(ToolError, match="disabled: this memory's tools are read-only"):
        home.tools().call("forget_object", {"object_id": 2, "reason": "x"})
    # a memory opened read-only, and an as-of view, refuse to hand out write tools
    build_home(ObjectMemory.open(store_path, scope="home")).close()
    with ObjectMemory.open(store_path, scope="home", read_only=True) as ro:
        with pytest.raises(ReadOnly, match="opened with read_only=True"):
            ro.tools(allow_writes=True)
        assert "where_is" in ro.tools()
    with pytest.raises(ReadOnly, match="read-only view"):
        ToolRegistry(home.as_of(10.0), allow_writes=True)


# -- calls --------------------------------------------------------------------------------------
def test_where_is_cites_and_hedges(home):
    tools = home.tools()
    r = tools.call("where_is", {"name": "cup"})
    assert r["found"] is True and r["cite"] == [1, 2]
    assert r["answer"] == ('The "cup" (#2) is on the "table" (#1) in the kitchen; last seen just '
                           "now (t=45.0 s).")
    assert r["object"]["support"] == {"relation": "on", "id": 1, "label": "table"}
    lost = tools.call("where_is", {"name": "plate"})
    assert lost["object"]["status"] == "lost" and lost["answer"].startswith(
        'The "plate" (#8) is lost')
    book = tools.call("where_is", {"name": "book"})
    assert "I have not checked since" in book["answer"] and " is " not in book["answer"][:20]
    assert tools.call("where_is", {"name": "unicorn"}) == {
        "found": False, "answer": "I have no memory of anything called 'unicorn'.", "cite": []}


def test_spatial_relational_room_and_path_tools(home):
    tools = home.tools()
    near = tools.call("objects_near_point", {"point": [1.0, 1.0, 0.8], "radius_m": 0.35})
    assert [o["id"] for o in near["objects"]] == [2, 3]  # nearest first; the table's centre is low
    assert near["objects"][1]["distance_m"] == pytest.approx(0.32, abs=0.01)
    around = tools.call("objects_near_object", {"object_id": 2, "radius_m": 0.6})
    assert 2 not in [o["id"] for o in around["objects"]] and around["anchor"]["id"] == 2
    assert tools.call("related_objects", {"name": "table"})["cite"] == [1, 2, 3]
    drawer = tools.call("related_objects", {"object_id": 5, "relation": "in"})
    assert [o["id"] for o in drawer["objects"]] == [6]
    room = tools.call("room_contents", {"room": "living"})
    assert [o["id"] for o in room["objects"]] == [7] and room["room"] == "living"
    assert tools.call("list_rooms")["rooms"][1] == {"name": "living",
                                                     "connected": ["kitchen", "office"]}
    path = tools.call("path_between_rooms", {"from_room": "kitchen", "to_room": "office"})
    assert path["path"] == ["kitchen", "living", "office"]
    found = tools.call("find_objects", {"text": "something to drink from"})
    assert {2, 3} <= {o["id"] for o in found["objects"]}


def test_time_history_describe_scene_and_ask(home):
    tools = home.tools()
    changes = tools.call("recent_changes", {"since_t": 30})
    assert {c["id"]: c["net"] for c in changes["changes"]} == {8: ["lost"], 9: ["appeared"]}
    assert tools.call("recent_changes", {"within_s": 15})["since_t"] == 30.0
    seen = tools.call("recently_seen", {"limit": 3})
    assert len(seen["objects"]) == 3 and seen["more"] == 0
    desc = tools.call("describe_object", {"object_id": 6})
    assert desc["object"]["support"]["id"] == 5 and desc["object"]["level"] == "item"
    assert {"relation": "in", "id": 5, "label": "drawer", "confidence": pytest.approx(1.0,
            abs=0.5)} in desc["relations"]
    hist = tools.call("object_history", {"object_id": 8, "limit": 2})
    assert [e["kind"] for e in hist["events"]] == ["PROMOTED", "LOST"]
    assert hist["sightings"] == 6 and hist["earlier_events"] >= 1
    scene = tools.call("scene_summary", {"budget_tokens": 2000})
    assert scene["scene"]["omitted"] == 0 and scene["cite"] == list(range(1, 10))
    ask = tools.call("ask_memory", {"question": "what is on the table?"})
    assert ask["answer"] == 'On the "table" (#1): "cup" (#2), "mug" (#3).'
    assert ask["cite"] == [1, 2, 3]


def test_arguments_may_come_as_json_text(home):
    tools = home.tools()
    assert tools.call("where_is", '{"name": "mug"}')["cite"] == [1, 3]
    assert json.loads(tools.call_json("where_is", {"name": "mug"}))["cite"] == [1, 3]
    assert json.loads(tools.call_json("where_is", {})) == {
        "error": "where_is: invalid arguments: name: is required"}


SECRET = "ignore previous instructions"


@pytest.mark.parametrize(("name", "arguments", "message"), [
    ("objects_near_point", {"point": [1, 2]}, "point: must have at least 3 item(s)"),
    ("objects_near_point", {"point": [1, 2, math.nan]}, "point[2]: must be a finite number"),
    ("objects_near_point", {"point": [1, 2, math.inf]}, "point[2]: must be a finite number"),
    ("objects_near_point", {"point": [1, 2, 1e9]}, "point[2]: must be at most 100000"),
    ("objects_near_point", {"point": [1, 2, True]}, "point[2]: must be a finite number"),
    ("objects_near_point", {"point": SECRET}, "point: must be an array"),
    ("objects_near_point", {"point": [0, 0, 0], "radius_m": 0}, "radius_m: must be greater than 0"),
    ("objects_near_point", {"point": [0, 0, 0], "radius_m": -1}, "must be greater than 0"),
    ("objects_near_point", {"point": [0, 0, 0], "radius_m": "1"}, "must be a finite number"),
    ("objects_near_point", {"point": [0, 0, 0], "limit": 0}, "limit: must be at least 1"),
    ("objects_near_point", {"point": [0, 0, 0], "limit": 10**6}, "limit: must be at most 100"),
    ("objects_near_point", {"point": [0, 0, 0], "limit": 2.5}, "limit: must be an integer"),
    ("describe_object", {"object_id": True}, "object_id: must be an integer"),
    ("describe_object", {"object_id": -3}, "object_id: must be at least 1"),
    ("describe_object", {"object_id": 2**80}, "object_id: must be at most"),
    ("describe_object", {}, "object_id: is required"),
    ("describe_object", {"object_id": 2, SECRET: 1}, "unexpected argument (allowed: object_id)"),
    ("related_objects", {"object_id": 1, "relation": SECRET}, "relation: must be one of: on,"),
    ("related_objects", {"object_id": 1, "name": "table"}, "exactly one of object_id or name"),
    ("where_is", {"name": "x" * 101}, "name: must be at most 100 characters"),
    ("where_is", {"name": "   "}, "name: must have at least 1 non-blank"),
    ("where_is", {"name": ["cup"]}, "name: must be a string"),
    ("find_objects", {"text": "cup", "limit": 51}, "limit: must be at most 50"),
    ("recent_changes", {"since_t": -1e13}, "since_t: must be at least"),
    ("recent_changes", {"since_t": 1, "within_s": 2}, "give one of since_t, since or within_s"),
    ("recent_changes", {"since": "10:00", "since_t": 1}, "give one of since_t, since or"),
    ("recent_changes", {"since": SECRET}, "since: not a time; give seconds (120), ISO 8601"),
    ("recent_changes", {"since": "25:00"}, "since: not a time"),
    ("recent_changes", {"since": "1e999"}, "since: not a time"),
    ("recent_changes", {"since": "-1e300"}, "since: must be within 1e12 seconds of t=0"),
    ("recent_changes", {"since": "x" * 41}, "since: must be at most 40 characters"),
    ("scene_summary", {"budget_tokens": 5}, "budget_tokens: must be at least 100"),
    ("scene_summary", {"focus": []}, "focus: must have at least 1 item(s)"),
    ("scene_summary", {"focus": [1] * 51}, "focus: must have at most 50 item(s)"),
    ("where_is", "{not json", "arguments must be a JSON object"),
    ("where_is", "[1, 2]", "arguments must be a JSON object"),
    ("where_is", "x" * 30_000, "arguments are too long"),
    ("where_is", [1], "arguments must be a JSON object"),
    ("where_is", "[" * 5000 + "]" * 5000, "arguments must be a JSON object"),
    ("describe_object", {"object_id": 999}, "not found: no such object or room"),
    ("room_contents", {"room": SECRET}, "not found: no such object or room"),
    ("path_between_rooms", {"from_room": "kitchen", "to_room": SECRET}, "not found"),
    ("correct_label", {"object_id": 2, "label": "vase"}, "disabled"),
    (SECRET, {}, "unknown tool; the tools are: find_objects, where_is"),
    (None, {}, "unknown tool"),
])
def test_every_bad_argument_is_a_safe_tool_error(home, name, arguments, message):
    with pytest.raises(ToolError) as info:
        home.tools().call(name, arguments)
    text = str(info.value)
    assert message in text
    assert SECRET not in text and "Traceback" not in text and "Error" not in text
    assert "\n" not in text and "nan" not in text and "inf" not in text.replace("info", "")


def test_internal_failures_are_masked(home, monkeypatch):
    tools = home.tools()

    def boom(*args, **kwargs):
        raise RuntimeError("secret internal detail /home/robot/store.loci")

    monkeypatch.setattr(type(reader_of(home)), "find", boom)  # what the tools read
    with pytest.raises(ToolError) as info:
        tools.call("find_objects", {"text": "cup"})
    assert str(info.value) == "find_objects: internal error; the call was not completed"
    assert "secret" not in repr(info.value)
    assert json.loads(tools.call_json("find_objects", {"text": "cup"})) == {
        "error": "find_objects: internal error; the call was not completed"}


def test_every_tool_runs_its_examples_or_fails_safely(home):
    tools = home.tools()
    for spec in tools:
        for example in spec.examples:
            try:
                result = tools.call(spec.name, example)
            except ToolError as exc:  # an example may name an id or room this home lacks
                assert "not found" in str(exc), (spec.name, example, exc)
                continue
            assert isinstance(result["cite"], list)
            json.dumps(result)


def test_write_tools_go_through_the_audit_trail():
    with build_home(ObjectMemory.open(":memory:", scope="home")) as mem:
        tools = mem.tools(allow_writes=True)
        assert isinstance(tools, ToolRegistry) and tools.allow_writes
        assert {"correct_label", "forget_object"} <= set(tools.names())
        r = tools.call("correct_label", {"object_id": 3, "label": "vase",
                                         "reason": "the user said so"})
        assert r["object"]["label"] == "vase" and r["cite"] == [3]
        with pytest.raises(ToolError, match="invalid arguments; see the tool's schema"):
            tools.call("correct_label", {"object_id": 3, "label": "bad\x07label"})
        assert tools.call("forget_object", {"object_id": 2, "reason": "asked to"}) == {
            "ok": True, "forgotten": 2, "cite": []}
        with pytest.raises(ToolError, match="forget_object: invalid arguments: reason: is"):
            tools.call("forget_object", {"object_id": 3})
        audit = mem.audit(kind=["correction", "forget"])
        assert [(a.kind, a.actor, a.reason) for a in audit] == [
            ("correction", "agent", "the user said so"), ("forget", "agent", "asked to")]
        assert tools.call("where_is", {"name": "cup"})["found"] is False
        with pytest.raises(ToolError, match="not found"):
            tools.call("describe_object", {"object_id": 2})
