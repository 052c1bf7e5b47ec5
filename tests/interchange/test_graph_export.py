"""NetworkX and GraphML export: the furnished house as a MultiDiGraph keyed by uid, with the
Cypher export's properties and edges keyed by relationship type; GraphML written through
networkx and read back with every attribute (points split into _x/_y/_z, lists as JSON); the
command line; and the error that names the extra when networkx is missing."""

from __future__ import annotations

import json
import sys

import pytest

pytest.importorskip("networkx")

import networkx as nx

from locimem import Detection, ObjectMemory
from locimem.cli import main
from locimem.errors import InvalidInput
from locimem.interchange.graph import (
    GraphExportReport,
    NetworkxUnavailable,
    export_graphml,
    to_networkx,
)
from locimem.interchange.scene_graph import object_uid, room_uid
from tests.helpers import HOUSE, ID, ROOMS
from tests.scene.test_scene_graph import build_house


@pytest.fixture
def house(mem: ObjectMemory) -> ObjectMemory:
    build_house(mem)
    return mem


def oid(name: str) -> str:
    return object_uid("test", ID[name])


def test_a_multidigraph_of_rooms_and_objects_keyed_by_uid(house) -> None:
    g = to_networkx(house)
    assert isinstance(g, nx.MultiDiGraph)
    assert g.graph == {"scope": "test", "now": 7.0, "frame": "map", "map_epoch": None}
    assert list(g.nodes) == [room_uid("test", r) for r in sorted(ROOMS)] + [
        object_uid("test", i) for i in range(1, len(HOUSE) + 1)]
    cup = house.get(ID["cup"])
    assert g.nodes[oid("cup")] == {
        "kind": "Item", "scope": "test", "id": cup.id, "label": "cup", "level": "item",
        "pose": cup.center, "size": cup.size,
        "box_min": tuple(c - s / 2 for c, s in zip(cup.center, cup.size, strict=True)),
        "box_max": tuple(c + s / 2 for c, s in zip(cup.center, cup.size, strict=True)),
        "status": "confirmed", "confidence": cup.confidence, "first_seen": 0.0,
        "last_seen": 7.0, "source": "tracker", "attributes": "{}"}
    assert g.nodes[room_uid("test", "hall")] == {
        "kind": "Room", "scope": "test", "name": "hall", "level": "room",
        "polygon": ((4.0, 0.0), (6.0, 0.0), (6.0, 4.0), (4.0, 4.0))}
    assert g.nodes[oid("table")]["kind"] == "Furniture"


def test_edges_are_keyed_by_relationship_type(house) -> None:
    g = to_networkx(house)
    on_table = sorted(g.nodes[a]["label"] for a, _, k in g.in_edges(oid("table"), keys=True)
                      if k == "ON")
    assert on_table == sorted(o.label for o in house.related(ID["table"], "on")) == [
        "cup", "phone", "plate"]
    (on,) = [r for r in house.relations(ID["cup"]) if r.relation == "on"]
    assert g.edges[oid("cup"), oid("table"), "ON"] == {"confidence": on.confidence,
                                                      "since": on.since}
    assert set(g[oid("fork")][oid("drawer")]) == {"IN"}
    assert set(g[oid("drawer")][oid("fork")]) >= {"CONTAINS"}
    kitchen = room_uid("test", "kitchen")
    assert sorted(g.nodes[b]["id"] for _, b, k in g.out_edges(kitchen, keys=True)
                  if k == "CONTAINS") == [o.id for o in house.room_contents("kitchen")]
    assert sorted((a, b) for a, b, k in g.edges(keys=True) if k == "CONNECTS_TO") == [
        (room_uid("test", "bedroom"), room_uid("test", "hall")),
        (room_uid("test", "hall"), kitchen)]
    assert {k for *_, k in g.edges(keys=True)} == {"CONTAINS", "ON", "IN", "UNDER", "NEXT_TO",
                                                   "NEAR", "CONNECTS_TO"}


def test_graphml_reads_back_with_every_attribute(house, tmp_path) -> None:
    house.set_attributes(ID["cup"], {"color": "red"})
    g = to_networkx(house)
    report = export_graphml(house, tmp_path / "scene.graphml")
    assert report == GraphExportReport(tmp_path / "scene.graphml", g.number_of_nodes(),
                                       g.number_of_edges())
    back = nx.read_graphml(tmp_path / "scene.graphml", force_multigraph=True)
    assert isinstance(back, nx.MultiDiGraph)
    assert (back.graph["scope"], back.graph["now"], back.graph["frame"]) == ("test", 7.0, "map")
    assert "map_epoch" not in back.graph  # None: GraphML has no null
    assert list(back.nodes) == list(g.nodes)
    cup, kitchen = back.nodes[oid("cup")], back.nodes[room_uid("test", "kitchen")]
    view = g.nodes[oid("cup")]
    assert cup == {
        "kind": "Item", "scope": "test", "id": view["id"], "label": "cup", "level": "item",
        **{f"{p}_{a}": v for p in ("pose", "box_min", "box_max")
           for a, v in zip("xyz", view[p], strict=True)},
        "size": json.dumps(list(view["size"])), "status": "confirmed",
        "confidence": view["confidence"], "first_seen": 0.0, "last_seen": 7.0,
        "source": "tracker", "attributes": '{"color": "red"}'}
    assert json.loads(kitchen["polygon"]) == [[0.0, 0.0], [4.0, 0.0], [4.0, 4.0], [0.0, 4.0]]
    edges = {(a, b, k): d for a, b, k, d in back.edges(keys=True, data=True)}
    assert set(edges) == set(g.edges(keys=True))
    for (a, b, k), d in edges.items():
        assert d == {"type": k, **g.edges[a, b, k]}


def test_the_command_line_writes_graphml(tmp_path, capsys) -> None:
    store = tmp_path / "house.loci"
    with ObjectMemory.open(store, scope="home") as mem:
        build_house(mem)
        g = to_networkx(mem)
    target = tmp_path / "scene.graphml"
    assert main(["export", str(store), str(target), "--scope", "home"]) == 0
    assert capsys.readouterr().out == (f"wrote {target}: {g.number_of_nodes()} nodes, "
                                       f"{g.number_of_edges()} edges (GraphML)\n")
    assert list(nx.read_graphml(target).nodes) == list(g.nodes)


@pytest.mark.parametrize(("path", "message"), [
    ("scene.gml", r"^path must end in \.graphml, got '.*scene\.gml'$"),
    ("nowhere/scene.graphml", r"^the directory '.*nowhere' does not exist$"),
])
def test_bad_paths_are_refused_and_nothing_is_written(house, tmp_path, path, message) -> None:
    with pytest.raises(InvalidInput, match=message):
        export_graphml(house, tmp_path / path)
    assert list(tmp_path.iterdir()) == []


def test_only_a_memory_is_exported() -> None:
    with pytest.raises(InvalidInput, match=r"^memory must be an ObjectMemory \(a MemoryReader\), "
                                           r"got str$"):
        to_networkx("home.loci")


def test_without_networkx_the_error_says_what_to_install(house, tmp_path, monkeypatch) -> None:
    monkeypatch.setitem(sys.modules, "networkx", None)  # as if networkx were not installed
    with pytest.raises(NetworkxUnavailable, match=r'^graph export needs networkx: '
                                                  r'pip install "locimem\[graph\]"$') as info:
        export_graphml(house, tmp_path / "scene.graphml")
    assert isinstance(info.value, ImportError)
    with pytest.raises(NetworkxUnavailable):
        to_networkx(house)
    assert list(tmp_path.iterdir()) == []


def test_the_graph_names_the_memory_s_map_epoch(tmp_path) -> None:
    with ObjectMemory.open(tmp_path / "m.loci", scope="home") as mem:
        for t in range(6):
            mem.observe(float(t), [Detection("kitchen table", 0.9, (1.5, 1.5, 0.375),
                                             (1.2, 0.8, 0.75))], map_epoch="2026-12-01-boot")
        g = to_networkx(mem)
        export_graphml(mem, tmp_path / "scene.graphml")
    assert g.graph == {"scope": "home", "now": 5.0, "frame": "map",
                       "map_epoch": "2026-12-01-boot"}
    back = nx.read_graphml(tmp_path / "scene.graphml", force_multigraph=True)
    assert (back.graph["frame"], back.graph["map_epoch"]) == ("map", "2026-12-01-boot")
