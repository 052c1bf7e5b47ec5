"""Cypher export against a real embedded Cypher engine (Kuzu): the furnished house loaded from
the script answers the questions the memory answers (the remote on the nightstand in the
bedroom, what is in the kitchen, on the table, which rooms connect, every relation with its
confidence and since); running the script again changes nothing; the script of a changed
memory brings the graph up to date (a forgotten object gone, a moved cup re-related, a level
change, a lost bed detached) and leaves other scopes alone; an injected label is data; the
NetworkX graph and the Cypher graph agree node for node and edge for edge. The Neo4j dialect,
which no engine here runs, is checked statement by statement on a small memory."""

from __future__ import annotations

import math
import re
import unicodedata
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

pytest.importorskip("kuzu")
pytest.importorskip("networkx")

import kuzu

from locimem import Detection, ObjectMemory, ObjectStatus
from locimem.cli import main
from locimem.errors import InvalidInput
from locimem.interchange.cypher import (
    DIALECTS,
    CypherExportReport,
    cypher_script,
    cypher_string,
    export_cypher,
)
from locimem.interchange.graph import to_networkx
from locimem.interchange.scene_graph import NODE_KINDS, object_uid, room_uid
from locimem.scene.rooms import Room
from tests.helpers import HOUSE, ID, ROOMS
from tests.scene.test_scene_graph import build_house, scan

SCOPE = "test"
REMOTE = len(HOUSE) + 1  # on the bedroom's nightstand
REMOTE_DET = Detection("remote", 0.9, (7.15, 0.9, 0.51), (0.15, 0.05, 0.02))
INJECTIONS = [  # labels that try to end the string, the statement or the script
    "x'}) DETACH DELETE n //",
    "it's a \\' quote",
    "back\\slash\\",
    "'; MATCH (n) DETACH DELETE n; //",
    'dbl"quote`tick',
    "\\u0027}) SET n.label = 'pwned",
    "café ☕ 杯子",
]


def house_scan() -> list[Detection]:
    return [*scan(), REMOTE_DET]


@pytest.fixture
def house(mem: ObjectMemory) -> ObjectMemory:
    """The furnished house (ids 1-16, four rooms, kitchen-hall-bedroom linked) and a remote
    on the nightstand (17), all confirmed."""
    build_house(mem)
    for t in range(8, 14):
        result = mem.observe(float(t), house_scan())
    assert result.assignments == tuple(range(1, REMOTE + 1))
    assert mem.get(REMOTE).status is ObjectStatus.CONFIRMED
    return mem


def connect(path: Path) -> Any:
    return kuzu.Connection(kuzu.Database(str(path)))


def run(conn: Any, query: str) -> list[list[Any]]:
    result = conn.execute(query)
    rows = []
    while result.has_next():
        rows.append(result.get_next())
    return rows


def load(conn: Any, script: str) -> None:
    """The whole script in one call, as a user would."""
    conn.execute(script)


def plain(value: Any) -> Any:
    """Kuzu's values as the scene graph's: structs and lists as tuples."""
    if isinstance(value, dict):
        return tuple(value[k] for k in ("x", "y", "z") if k in value)
    if isinstance(value, list):
        return tuple(plain(v) for v in value)
    return value


def graph_of(conn: Any) -> tuple[dict[str, tuple[str, dict]], dict[tuple, dict]]:
    """Every node (uid -> (label, properties)) and edge ((source, type, target) -> properties)
    in the database; null properties left out, as absent ones."""
    nodes = {}
    for kind in NODE_KINDS:
        for (props,) in run(conn, f"MATCH (n:{kind}) RETURN n"):
            out = {k: plain(v) for k, v in props.items() if not k.startswith("_")
                   and v is not None}
            uid = out.pop("uid")
            assert uid not in nodes
            nodes[uid] = (kind, out)
    edges = {}
    for a, rel, b, props in run(conn, "MATCH (a)-[r]->(b) RETURN a.uid, label(r), b.uid, r"):
        assert (a, rel, b) not in edges
        edges[(a, rel, b)] = {k: v for k, v in props.items() if not k.startswith("_")
                              and v is not None}
    return nodes, edges


def graph_of_networkx(mem: ObjectMemory) -> tuple[dict, dict]:
    g = to_networkx(mem)
    nodes = {uid: (a["kind"], {k: v for k, v in a.items() if k != "kind"})
             for uid, a in g.nodes(data=True)}
    edges = {(a, key, b): dict(d) for a, b, key, d in g.edges(keys=True, data=True)}
    return nodes, edges


def loaded(mem: ObjectMemory, path: Path) -> Any:
    conn = connect(path)
    load(conn, cypher_script(mem, dialect="kuzu"))
    return conn


def uid(name: str) -> str:
    return object_uid(SCOPE, ID[name])


def ids(rows: list[list[Any]]) -> list[int]:
    return sorted(r[0] for r in rows)


# -- the questions --------------------------------------------------------------------------

def test_the_remote_is_on_the_nightstand_in_the_bedroom(house, tmp_path) -> None:
    conn = loaded(house, tmp_path / "db")
    # the query; Kuzu reserves ON, so it is quoted (Neo4j takes it either way)
    rows = run(conn, "MATCH (i:Item {label:'remote'})-[:`ON`]->(f)<-[:CONTAINS]-(r:Room) "
                     "RETURN i, f, r")
    assert [(i["uid"], f["uid"], r["uid"]) for i, f, r in rows] == [
        (object_uid(SCOPE, REMOTE), uid("nightstand"), room_uid(SCOPE, "bedroom"))]
    i, f, r = rows[0]
    assert (i["label"], i["level"], f["label"], f["level"], r["name"]) == (
        "remote", "item", "nightstand", "furniture", "bedroom")
    # the memory says the same
    assert [(x.relation, x.object) for x in house.relations(REMOTE) if x.subject == REMOTE
            and x.relation == "on"] == [("on", ID["nightstand"])]
    assert house.room_of(ID["nightstand"]) == "bedroom"
    assert house.query("where is the remote").text.startswith(
        f"The remote (#{REMOTE}) is on the nightstand (#{ID['nightstand']}) in the bedroom")


def test_what_is_in_each_room(house, tmp_path) -> None:
    conn = loaded(house, tmp_path / "db")
    for room in ROOMS:
        rows = run(conn, f"MATCH (r:Room {{name: '{room}'}})-[:CONTAINS]->(o) RETURN o.id")
        assert ids(rows) == [o.id for o in house.room_contents(room)]
    kitchen = run(conn, "MATCH (:Room {name: 'kitchen'})-[:CONTAINS]->(o) RETURN o.id")
    assert ids(kitchen) == [o.id for o in house.query("what's in the kitchen").objects] == \
        list(range(1, 14))
    assert run(conn, "MATCH (:Room {name: 'garage'})-[:CONTAINS]->(o) RETURN o.id") == []


def test_what_is_on_under_and_in_the_furniture(house, tmp_path) -> None:
    conn = loaded(house, tmp_path / "db")

    def ask(rel: str, label: str) -> list[int]:
        return ids(run(conn, f"MATCH (i)-[:`{rel}`]->(f {{label: '{label}'}}) RETURN i.id"))

    assert ask("ON", "kitchen table") == [ID["cup"], ID["plate"], ID["phone"]] == \
        sorted(o.id for o in house.query("what's on the kitchen table").objects)
    assert ask("UNDER", "kitchen table") == [ID["shoes"]] == \
        [o.id for o in house.query("what's under the kitchen table").objects]
    assert ask("IN", "drawer") == [ID["fork"]] == \
        [o.id for o in house.query("what is in the drawer").objects]
    assert ask("ON", "shelf") == [ID["vase"]]  # the vase is on the shelf, not the table
    contained = run(conn, "MATCH (:Furniture {label: 'drawer'})-[:CONTAINS]->(o) RETURN o.id")
    assert ids(contained) == [ID["fork"]]


def test_which_rooms_connect(house, tmp_path) -> None:
    conn = loaded(house, tmp_path / "db")
    rows = run(conn, "MATCH (a:Room)-[:CONNECTS_TO]-(b:Room) RETURN a.name, b.name")
    assert sorted(map(tuple, rows)) == sorted((r.name, c) for r in house.rooms()
                                              for c in r.connected) == [
        ("bedroom", "hall"), ("hall", "bedroom"), ("hall", "kitchen"), ("kitchen", "hall")]
    # stored once a pair
    assert run(conn, "MATCH (a)-[:CONNECTS_TO]->(b) RETURN a.name, b.name") == [
        ["bedroom", "hall"], ["hall", "kitchen"]]
    two_doors = run(conn, "MATCH (:Room {name: 'kitchen'})-[:CONNECTS_TO]-(:Room)"
                          "-[:CONNECTS_TO]-(b:Room) WHERE b.name <> 'kitchen' RETURN b.name")
    assert two_doors == [["bedroom"]] and house.path_rooms("kitchen", "bedroom") == [
        "kitchen", "hall", "bedroom"]


def test_every_relation_of_the_memory_and_nothing_else(house, tmp_path) -> None:
    _, edges = graph_of(loaded(house, tmp_path / "db"))
    expected = {}
    for obj in house.objects():
        for r in house.relations(obj.id):
            expected[(object_uid(SCOPE, r.subject), r.relation.upper(),
                      object_uid(SCOPE, r.object))] = {"confidence": r.confidence,
                                                       "since": r.since}
        room = house.room_of(obj.id)
        if room is not None:
            expected[(room_uid(SCOPE, room), "CONTAINS", object_uid(SCOPE, obj.id))] = None
    for a, b in (("bedroom", "hall"), ("hall", "kitchen")):
        expected[(room_uid(SCOPE, a), "CONNECTS_TO", room_uid(SCOPE, b))] = {}
    assert set(edges) == set(expected)
    for key, props in expected.items():
        if props is None:  # a room's share of the footprint; no since
            assert set(edges[key]) == {"confidence"} and 0.5 <= edges[key]["confidence"] <= 1
        else:
            assert edges[key] == props
    near = [k for k in edges if k[1] in ("NEAR", "NEXT_TO")]  # symmetric: once, smaller id first
    assert near and all(int(a.rsplit(":", 1)[1]) < int(b.rsplit(":", 1)[1]) for a, _, b in near)


def test_nodes_carry_the_memory_s_view(house, tmp_path) -> None:
    house.set_attributes(ID["cup"], {"color": "red"})
    turned = (math.cos(0.3), 0.0, 0.0, math.sin(0.3))
    nodes, _ = graph_of(loaded(house, tmp_path / "db"))
    assert sorted(nodes) == sorted([room_uid(SCOPE, r) for r in ROOMS]
                                   + [object_uid(SCOPE, i) for i in range(1, REMOTE + 1)])
    for obj in house.objects():
        kind, props = nodes[object_uid(SCOPE, obj.id)]
        half = [s / 2 for s in obj.size]
        assert kind == {"item": "Item", "furniture": "Furniture"}[house.level_of(obj.id)]
        assert props == {
            "scope": SCOPE, "id": obj.id, "label": obj.label, "level": house.level_of(obj.id),
            "pose": obj.center, "size": obj.size,
            "box_min": tuple(c - h for c, h in zip(obj.center, half, strict=True)),
            "box_max": tuple(c + h for c, h in zip(obj.center, half, strict=True)),
            "status": "confirmed", "confidence": obj.confidence, "first_seen": obj.first_seen,
            "last_seen": obj.last_seen, "source": "tracker",
            "attributes": '{"color": "red"}' if obj.id == ID["cup"] else "{}",
        }
    kind, kitchen = nodes[room_uid(SCOPE, "kitchen")]
    assert (kind, kitchen) == ("Room", {"scope": SCOPE, "name": "kitchen", "level": "room",
                                        "polygon": ((0.0, 0.0), (4.0, 0.0), (4.0, 4.0),
                                                    (0.0, 4.0))})
    # an orientation and a z range, when there are
    house.observe(14.0, [*house_scan(), Detection("mug", 0.9, (20, 20, 0.5), (0.1, 0.1, 0.1),
                                                  orientation=turned)])
    house.define_room("loft", [(19, 19), (21, 19), (21, 21), (19, 21)], (0.0, 2.5))
    script = cypher_script(house, dialect="kuzu", include_tentative=True)
    nodes, edges = graph_of(loaded_script(script, tmp_path / "db2"))
    mug = nodes[object_uid(SCOPE, REMOTE + 1)]
    assert mug[1]["quat_wxyz"] == turned and mug[1]["status"] == "tentative"
    assert nodes[room_uid(SCOPE, "loft")][1]["z_min"] == 0.0
    assert nodes[room_uid(SCOPE, "loft")][1]["z_max"] == 2.5
    assert (room_uid(SCOPE, "loft"), "CONTAINS", object_uid(SCOPE, REMOTE + 1)) in edges


def loaded_script(script: str, path: Path) -> Any:
    conn = connect(path)
    load(conn, script)
    return conn


# -- idempotency and updates ----------------------------------------------------------------

def test_running_the_script_twice_changes_nothing(house, tmp_path) -> None:
    script = cypher_script(house, dialect="kuzu")
    conn = loaded_script(script, tmp_path / "db")
    first = graph_of(conn)
    load(conn, script)
    assert graph_of(conn) == first
    assert (len(first[0]), len(first[1])) == (len(ROOMS) + REMOTE, len(to_networkx(house).edges))
    assert cypher_script(house, dialect="kuzu") == script  # the same memory, the same script


def test_a_later_script_brings_the_graph_up_to_date(house, tmp_path) -> None:
    conn = connect(tmp_path / "db")
    with ObjectMemory.open(":memory:", scope="other") as other:  # another home, same database
        for t in range(6):
            other.observe(float(t), [Detection("cup", 0.9, (1.2, 1.4, 0.8), (0.08, 0.08, 0.1))])
        other.define_room("kitchen", ROOMS["kitchen"])
        load(conn, cypher_script(other, dialect="kuzu"))
        other_graph = graph_of_networkx(other)
    load(conn, cypher_script(house, dialect="kuzu"))
    assert (uid("cup"), "ON", uid("table")) in graph_of(conn)[1]

    house.forget(ID["phone"], reason="private")
    house.move(ID["cup"], (1.2, 2.4, 0.95), reason="now on the counter")
    house.set_attributes(ID["shoes"], {"level": "furniture"})  # an Item no more
    house.observe(60.0, [*scan("bed", cup=(1.2, 2.4, 0.95)), REMOTE_DET])  # the bed is lost
    assert house.get(ID["bed"]).status is ObjectStatus.LOST
    load(conn, cypher_script(house, dialect="kuzu"))

    nodes, edges = graph_of(conn)
    expected_nodes, expected_edges = graph_of_networkx(house)
    theirs = {k: v for k, v in nodes.items() if k.startswith("other:")}
    ours = {k: v for k, v in nodes.items() if not k.startswith("other:")}
    assert ours == expected_nodes and theirs == other_graph[0]
    assert edges == {**expected_edges, **other_graph[1]}
    # and, in particular
    assert uid("phone") not in nodes
    assert run(conn, "MATCH (n) WHERE n.label = 'phone' RETURN n.uid") == []
    assert (uid("cup"), "ON", uid("counter")) in edges
    assert (uid("cup"), "ON", uid("table")) not in edges
    assert nodes[uid("shoes")][0] == "Furniture"
    assert run(conn, f"MATCH (n:Item {{uid: '{uid('shoes')}'}}) RETURN n.uid") == []
    assert nodes[uid("bed")][1]["status"] == "lost"
    assert [k for k in edges if uid("bed") in (k[0], k[2])] == []
    # a fresh database gets the same graph from the new script alone
    fresh = graph_of(loaded(house, tmp_path / "fresh"))
    assert fresh == (ours, expected_edges)


def test_a_forgotten_label_leaves_no_trace_in_the_script(house) -> None:
    house.forget(ID["phone"], reason="private")
    for dialect in ("neo4j", "kuzu"):
        assert "phone" not in cypher_script(house, dialect=dialect)


# -- strings are data -----------------------------------------------------------------------

@pytest.mark.parametrize(("text", "literal"), [
    ("cup", "'cup'"),
    ("it's", "'it\\'s'"),
    ("a\\b", "'a\\\\b'"),
    ("a\\", "'a\\\\'"),
    ("\\'", "'\\\\\\''"),
    ("x'}) DETACH DELETE n //", "'x\\'}) DETACH DELETE n //'"),
    ("line\nbreak\r\x00\u2028end", "'line\ufffdbreak\ufffd\ufffd\ufffdend'"),
    ("café ☕", "'café ☕'"),
])
def test_cypher_strings_escape_backslash_and_quote_only(text, literal) -> None:
    assert cypher_string(text) == literal


def test_a_cypher_string_reads_back_as_its_text_in_kuzu(tmp_path) -> None:
    conn = connect(tmp_path / "db")
    texts = [*INJECTIONS, "a\\", "\\\\'\\", "tab\there", "\U0001f600 emoji"]
    for text in texts:
        (value,) = run(conn, f"RETURN {cypher_string(text)} AS s")[0]
        assert value == text.replace("\t", "\ufffd")


@pytest.fixture(scope="module")
def kuzu_in_memory() -> Any:
    return kuzu.Connection(kuzu.Database(":memory:"))


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(text=st.text(max_size=40))
def test_any_text_reads_back_from_its_literal(kuzu_in_memory, text) -> None:
    """Whatever the text, its literal is one Cypher string that reads back as the text (unsafe
    characters as U+FFFD), and the statement goes on after it: nothing leaks out."""
    conn = kuzu_in_memory
    literal = cypher_string(text)
    assert "\n" not in literal and "\r" not in literal
    expected = "".join("\ufffd" if unicodedata.category(c) in ("Cc", "Cs", "Zl", "Zp") else c
                       for c in text)
    assert run(conn, f"RETURN {literal} AS s, 'after' AS t") == [[expected, "after"]]


def test_an_injected_label_changes_nothing_but_its_own_node(house, tmp_path) -> None:
    conn = loaded(house, tmp_path / "db")
    before = graph_of(conn)
    t = 14.0
    bad = [Detection(label, 0.9, (20.0 + 2 * i, 20.0, 0.5), (0.1, 0.1, 0.1))
           for i, label in enumerate(INJECTIONS)]
    for _ in range(6):
        result = house.observe(t, [*house_scan(), *bad])
        t += 1.0
    new_ids = result.assignments[-len(INJECTIONS):]
    assert [house.get(i).label for i in new_ids] == [x.lower() for x in INJECTIONS]
    house.define_room("x'}) detach delete n //", [(19, 19), (40, 19), (40, 21), (19, 21)])
    load(conn, cypher_script(house, dialect="kuzu"))

    nodes, edges = graph_of(conn)
    assert (nodes, edges) == graph_of_networkx(house)
    for i, label in zip(new_ids, INJECTIONS, strict=True):
        assert nodes[object_uid(SCOPE, i)][1]["label"] == label.lower()
    # everything that was there is still there, as it was but for the time-dependent fields
    for key, (kind, props) in before[0].items():
        assert nodes[key][0] == kind
        assert {k: v for k, v in nodes[key][1].items() if k not in ("confidence", "last_seen")} \
            == {k: v for k, v in props.items() if k not in ("confidence", "last_seen")}
    assert set(before[1]) <= set(edges)
    added = set(edges) - set(before[1])
    new_uids = {object_uid(SCOPE, i) for i in new_ids} | {room_uid(SCOPE, "x'}) detach delete "
                                                                     "n //")}
    assert added and all(a in new_uids or b in new_uids for a, _, b in added)
    assert len(nodes) == len(before[0]) + len(new_uids)


# -- NetworkX and Cypher agree ---------------------------------------------------------------

def test_networkx_and_cypher_agree_node_for_node_and_edge_for_edge(house, tmp_path) -> None:
    house.set_attributes(ID["vase"], {"color": "blue", "anchor": True})
    assert graph_of(loaded(house, tmp_path / "db")) == graph_of_networkx(house)


def test_an_as_of_view_exports_the_past(house, tmp_path) -> None:
    then = house.as_of(7.0)  # before the remote
    nodes, edges = graph_of(loaded(then, tmp_path / "db"))
    assert object_uid(SCOPE, REMOTE) not in nodes and len(nodes) == len(ROOMS) + len(HOUSE)
    assert (nodes, edges) == graph_of_networkx(then)
    assert cypher_script(then).splitlines()[0].endswith(
        "memory time 7.0 s. Dialect: neo4j. Idempotent: running it again changes nothing.")


# -- the Neo4j dialect, statement by statement ------------------------------------------------

def test_the_neo4j_script_of_a_small_memory(mem, tmp_path) -> None:
    for t in range(6):
        mem.observe(float(t), [Detection("kitchen table", 0.9, (1.5, 1.5, 0.375),
                                         (1.2, 0.8, 0.75)),
                               Detection("cup", 0.9, (1.2, 1.4, 0.8), (0.08, 0.08, 0.1))])
    mem.define_room("kitchen", [(0, 0), (4, 0), (4, 4), (0, 4)])
    mem.define_room("hall", [(4, 0), (6, 0), (6, 4), (4, 4)], (0.0, 3.0))
    mem.connect_rooms("kitchen", "hall")
    table, cup = mem.get(1), mem.get(2)
    (on,) = [r for r in mem.relations(2) if r.relation == "on"]
    report = export_cypher(mem, tmp_path / "scene.cypher")
    lines = (tmp_path / "scene.cypher").read_text(encoding="utf-8").splitlines()
    k, h, o1, o2 = "'test:room:kitchen'", "'test:room:hall'", "'test:object:1'", "'test:object:2'"
    assert lines.pop(1) == ("// positions in the memory's frame \"map\": pose, box_min, "
                            "box_max, polygon (metres, z up)")  # (no map epoch named)
    assert lines[:9] == [
        "// locimem scene graph of scope 'test': 2 objects, 2 rooms, 5 relationships; memory "
        "time 5.0 s. Dialect: neo4j. Idempotent: running it again changes nothing.",
        "// schema: one node per uid",
        "CREATE CONSTRAINT locimem_room_uid IF NOT EXISTS FOR (n:Room) REQUIRE n.uid IS UNIQUE;",
        "CREATE CONSTRAINT locimem_furniture_uid IF NOT EXISTS FOR (n:Furniture) "
        "REQUIRE n.uid IS UNIQUE;",
        "CREATE CONSTRAINT locimem_item_uid IF NOT EXISTS FOR (n:Item) REQUIRE n.uid IS UNIQUE;",
        "// what left the memory, and relations that no longer hold",
        f"MATCH (n:Room) WHERE n.scope = 'test' AND NOT n.uid IN [{h}, {k}] DETACH DELETE n;",
        f"MATCH (n:Furniture) WHERE n.scope = 'test' AND NOT n.uid IN [{o1}] DETACH DELETE n;",
        f"MATCH (n:Item) WHERE n.scope = 'test' AND NOT n.uid IN [{o2}] DETACH DELETE n;",
    ]
    assert lines[9:16] == [
        f"MATCH (a)-[r:`CONTAINS`]->(b) WHERE a.scope = 'test' AND NOT [a.uid, b.uid] IN "
        f"[[{k}, {o1}], [{k}, {o2}]] DELETE r;",
        f"MATCH (a)-[r:`ON`]->(b) WHERE a.scope = 'test' AND NOT [a.uid, b.uid] IN [[{o2}, {o1}]] "
        f"DELETE r;",
        "MATCH (a)-[r:`IN`]->(b) WHERE a.scope = 'test' DELETE r;",
        "MATCH (a)-[r:`UNDER`]->(b) WHERE a.scope = 'test' DELETE r;",
        "MATCH (a)-[r:`NEXT_TO`]->(b) WHERE a.scope = 'test' DELETE r;",
        f"MATCH (a)-[r:`NEAR`]->(b) WHERE a.scope = 'test' AND NOT [a.uid, b.uid] IN "
        f"[[{o1}, {o2}]] DELETE r;",
        f"MATCH (a)-[r:`CONNECTS_TO`]->(b) WHERE a.scope = 'test' AND NOT [a.uid, b.uid] IN "
        f"[[{h}, {k}]] DELETE r;",
    ]
    (near,) = [r for r in mem.relations(2) if r.relation == "near"]
    kitchen = Room("kitchen", [(0, 0), (4, 0), (4, 4), (0, 4)])

    def share(obj: Any) -> float:  # of the footprint in the kitchen: 1 but for rounding
        value = kitchen.footprint_fraction(obj.center, obj.size)
        assert value == pytest.approx(1.0, abs=1e-12)
        return value

    assert lines[16:] == [
        "// nodes",
        f"MERGE (n:Room {{uid: {h}}}) SET n.scope = 'test', n.name = 'hall', n.level = 'room', "
        "n.polygon = [point({x: 4.0, y: 0.0}), point({x: 6.0, y: 0.0}), point({x: 6.0, y: 4.0}), "
        "point({x: 4.0, y: 4.0})], n.z_min = 0.0, n.z_max = 3.0;",
        f"MERGE (n:Room {{uid: {k}}}) SET n.scope = 'test', n.name = 'kitchen', "
        "n.level = 'room', n.polygon = [point({x: 0.0, y: 0.0}), point({x: 4.0, y: 0.0}), "
        "point({x: 4.0, y: 4.0}), point({x: 0.0, y: 4.0})], n.z_min = null, n.z_max = null;",
        f"MERGE (n:Furniture {{uid: {o1}}}) SET n.scope = 'test', n.id = 1, "
        "n.label = 'kitchen table', n.level = 'furniture', "
        "n.pose = point({x: 1.5, y: 1.5, z: 0.375}), "
        "n.box_min = point({x: 0.9, y: 1.1, z: 0.0}), "
        "n.box_max = point({x: 2.1, y: 1.9, z: 0.75}), n.size = [1.2, 0.8, 0.75], "
        f"n.quat_wxyz = null, n.status = 'confirmed', n.confidence = {table.confidence!r}, "
        "n.first_seen = 0.0, n.last_seen = 5.0, n.source = 'tracker', n.attributes = '{}';",
        f"MERGE (n:Item {{uid: {o2}}}) SET n.scope = 'test', n.id = 2, n.label = 'cup', "
        "n.level = 'item', n.pose = point({x: 1.2, y: 1.4, z: 0.8}), "
        f"n.box_min = point({{x: {1.2 - 0.04!r}, y: {1.4 - 0.04!r}, z: {0.8 - 0.05!r}}}), "
        f"n.box_max = point({{x: {1.2 + 0.04!r}, y: {1.4 + 0.04!r}, z: {0.8 + 0.05!r}}}), "
        f"n.size = [0.08, 0.08, 0.1], n.quat_wxyz = null, n.status = 'confirmed', "
        f"n.confidence = {cup.confidence!r}, n.first_seen = 0.0, n.last_seen = 5.0, "
        "n.source = 'tracker', n.attributes = '{}';",
        "// relationships",
        f"MATCH (a:Room {{uid: {k}}}), (b:Furniture {{uid: {o1}}}) MERGE (a)-[r:`CONTAINS`]->(b) "
        f"SET r.confidence = {share(table)!r}, r.since = null;",
        f"MATCH (a:Room {{uid: {k}}}), (b:Item {{uid: {o2}}}) MERGE (a)-[r:`CONTAINS`]->(b) "
        f"SET r.confidence = {share(cup)!r}, r.since = null;",
        f"MATCH (a:Item {{uid: {o2}}}), (b:Furniture {{uid: {o1}}}) MERGE (a)-[r:`ON`]->(b) "
        f"SET r.confidence = {on.confidence!r}, r.since = {on.since!r};",
        f"MATCH (a:Furniture {{uid: {o1}}}), (b:Item {{uid: {o2}}}) MERGE (a)-[r:`NEAR`]->(b) "
        f"SET r.confidence = {near.confidence!r}, r.since = {near.since!r};",
        f"MATCH (a:Room {{uid: {h}}}), (b:Room {{uid: {k}}}) MERGE (a)-[r:`CONNECTS_TO`]->(b);",
    ]
    assert report == CypherExportReport(tmp_path / "scene.cypher", "neo4j", 2, 2, 5,
                                        len([x for x in lines if not x.startswith("//")]))


def test_the_script_names_the_memory_s_map_epoch(tmp_path) -> None:
    """Scans that named their SLAM session: the script says whose frame its positions are in
    (the base epoch's; a later one aligned into it is not)."""
    table = Detection("kitchen table", 0.9, (1.5, 1.5, 0.375), (1.2, 0.8, 0.75))
    with ObjectMemory.open(tmp_path / "m.loci", scope="home") as mem:
        for t in range(6):
            mem.observe(float(t), [table], map_epoch="2026-12-01-boot")
        mem.align_epoch("2026-12-02-boot", ((1.0, 0.0, 0.0), (1.0, 0.0, 0.0, 0.0)))
        mem.observe(6.0, [Detection("kitchen table", 0.9, (0.5, 1.5, 0.375),
                                    (1.2, 0.8, 0.75))], map_epoch="2026-12-02-boot")
        for dialect in DIALECTS:
            lines = cypher_script(mem, dialect=dialect).splitlines()
            assert lines[1] == ("// positions in the memory's frame \"map\" (map epoch "
                                "2026-12-01-boot): pose, box_min, box_max, polygon (metres, z up)")
            assert sum("2026-12-0" in x for x in lines) == 1  # only there
            (node,) = [x for x in lines if x.startswith("MERGE (n:Furniture")]
            assert "n.pose = " + ("point({x: 1.5, y: 1.5, z: 0.375})" if dialect == "neo4j"
                                  else "{x: 1.5, y: 1.5, z: 0.375}") in node


def test_the_dialects_differ_only_in_schema_and_points(house) -> None:
    neo4j = cypher_script(house).splitlines()
    kuzu_lines = cypher_script(house, dialect="kuzu").splitlines()
    neo4j_data = [x for x in neo4j if not x.startswith(("//", "CREATE "))]
    kuzu_data = [x for x in kuzu_lines if not x.startswith(("//", "CREATE "))]
    # Kuzu: the schema, then the data in one transaction
    assert kuzu_data[0] == "BEGIN TRANSACTION;" and kuzu_data[-1] == "COMMIT;"
    assert [x for x in kuzu_lines if x.startswith("CREATE ")] == kuzu_lines[3:13]
    assert kuzu_lines[13] == "BEGIN TRANSACTION;"
    assert kuzu_lines[1] == neo4j[1] == ("// positions in the memory's frame \"map\": pose, "
                                         "box_min, box_max, polygon (metres, z up)")
    kuzu_data = kuzu_data[1:-1]
    assert len(neo4j_data) == len(kuzu_data)
    for a, b in zip(neo4j_data, kuzu_data, strict=True):
        assert re.sub(r"point\((\{[^}]*\})\)", r"\1", a).replace("null", "NULL") == b
    assert next(x for x in kuzu_lines if x.startswith("CREATE NODE TABLE")).startswith(
        "CREATE NODE TABLE IF NOT EXISTS Room(uid STRING PRIMARY KEY, scope STRING, ")


# -- the file and its errors ------------------------------------------------------------------

@pytest.mark.parametrize(("path", "message"), [
    ("scene.cql", r"^path must end in \.cypher, got '.*scene\.cql'$"),
    ("nowhere/scene.cypher", r"^the directory '.*nowhere' does not exist$"),
])
def test_bad_paths_are_refused_and_nothing_is_written(house, tmp_path, path, message) -> None:
    with pytest.raises(InvalidInput, match=message):
        export_cypher(house, tmp_path / path)
    assert list(tmp_path.iterdir()) == []


def test_a_directory_is_not_overwritten(house, tmp_path) -> None:
    (tmp_path / "taken.cypher").mkdir()
    with pytest.raises(InvalidInput, match=r"^'.*taken\.cypher' is a directory$"):
        export_cypher(house, tmp_path / "taken.cypher")
    assert [p.name for p in tmp_path.iterdir()] == ["taken.cypher"]


@pytest.mark.parametrize(("kwargs", "message"), [
    ({"dialect": "memgraph"}, r"^dialect must be one of neo4j, kuzu, got 'memgraph'$"),
    ({"include_tentative": 1}, r"^include_tentative must be a bool, got int$"),
])
def test_bad_options_are_refused_and_nothing_is_written(house, tmp_path, kwargs,
                                                        message) -> None:
    with pytest.raises(InvalidInput, match=message):
        export_cypher(house, tmp_path / "scene.cypher", **kwargs)
    assert list(tmp_path.iterdir()) == []


def test_only_a_memory_is_exported(tmp_path) -> None:
    with pytest.raises(InvalidInput, match=r"^memory must be an ObjectMemory \(a MemoryReader\), "
                                           r"got dict$"):
        export_cypher({}, tmp_path / "x.cypher")
    assert list(tmp_path.iterdir()) == []


def statements(path: Path) -> list[str]:
    return [x for x in path.read_text(encoding="utf-8").splitlines() if not x.startswith("//")]


def test_the_command_line_writes_a_script_kuzu_loads(tmp_path, capsys) -> None:
    store = tmp_path / "house.loci"
    with ObjectMemory.open(store, scope="home") as mem:
        build_house(mem)
    target = tmp_path / "scene.cypher"
    assert main(["export", str(store), str(target), "--scope", "home", "--dialect", "kuzu"]) == 0
    out = capsys.readouterr().out
    with ObjectMemory.open(store, scope="home", read_only=True) as mem:
        n_edges = len(to_networkx(mem).edges)
        expected = graph_of_networkx(mem)
    assert out == (f"wrote {target}: 4 rooms, 16 objects, {n_edges} relationships in "
                   f"{len(statements(target))} statements (Cypher, kuzu; "
                   f"idempotent)\n")
    conn = connect(tmp_path / "db")
    load(conn, target.read_text(encoding="utf-8"))
    assert graph_of(conn) == expected
    assert main(["export", str(store), str(tmp_path / "n.cypher"), "--scope", "home"]) == 0
    assert "(Cypher, neo4j; idempotent)" in capsys.readouterr().out
    assert "point({x: " in (tmp_path / "n.cypher").read_text(encoding="utf-8")
    with pytest.raises(SystemExit):
        main(["export", str(store), str(tmp_path / "x.cypher"), "--dialect", "memgraph"])
    assert "invalid choice: 'memgraph'" in capsys.readouterr().err
    assert not (tmp_path / "x.cypher").exists()
