"""Rooms: polygon validation, point and footprint lookup, connectivity and paths."""

from __future__ import annotations

import json

import numpy as np
import pytest

from locimem.errors import InvalidInput, NotFound
from locimem.scene.rooms import Room, RoomAssignment, RoomMap, polygon_area

SQUARE = [(0, 0), (4, 0), (4, 4), (0, 4)]
# an L: the notch (2..4, 2..4) is outside
L_SHAPE = [(0, 0), (4, 0), (4, 2), (2, 2), (2, 4), (0, 4)]


def test_room_is_normalised() -> None:
    r = Room("  Living   Room ", [(0, 4), (4, 4), (4, 0), (0, 0), (0, 4)])  # CW, closed
    assert r.name == "living room"
    assert r.polygon == ((0.0, 0.0), (4.0, 0.0), (4.0, 4.0), (0.0, 4.0))  # CCW, open
    assert r.area_m2 == pytest.approx(16.0)
    assert polygon_area(r.polygon) > 0
    assert r.bbox == (0.0, 0.0, 4.0, 4.0)
    assert Room("hall", np.array(SQUARE, dtype=float)).area_m2 == pytest.approx(16.0)


@pytest.mark.parametrize(("polygon", "z_range", "message"), [
    ([(0, 0), (1, 0)], None, "at least 3 distinct vertices, got 2"),
    ([(0, 0), (1, 0), (0, 0)], None, "at least 3 distinct vertices, got 2"),
    ([(0, 0), (1, 0), (float("nan"), 1)], None, r"polygon of room 'kitchen'\[2\]\.x must be a "
                                                r"finite number, got nan"),
    ([(0, 0), (1, 0), (1, 1), (1, 1), (0, 1)], None, "repeats vertex 2"),
    ([(0, 0), (1, 0), (2, 0)], None, "must enclose a positive area, got 0 m²"),
    ([(0, 0), (2, 2), (2, 0), (0, 2)], None, "must be a simple polygon: edge 0 .* crosses or "
                                             "touches edge 2"),
    # a spike that folds back along its own edge
    ([(0, 0), (4, 0), (4, 4), (4, 2), (4, 6), (0, 4)], None, "must be a simple polygon"),
    # a figure eight touching itself at one vertex
    ([(0, 0), (2, 0), (1, 1), (2, 2), (0, 2), (1, 1)], None, "must be a simple polygon"),
    ([(0, 0), (1, 0), (1, 1)], (2.5, 0.0), "z_min < z_max, got \\(2.5, 0.0\\)"),
    ([(0, 0), (1, 0), (1, 1)], (0.0,), r"must be a \(z_min, z_max\) pair"),
    ("square", None, "must be a sequence of \\(x, y\\) vertices, got str"),
    ([(0, 0), (1, 0), (1, 1, 1)], None, r"\[2\] must be an \(x, y\) pair"),
    (np.zeros((4, 3)), None, r"\(n, 2\) array .* got shape \(4, 3\)"),
])
def test_bad_polygons_are_refused(polygon, z_range, message) -> None:
    with pytest.raises(InvalidInput, match=message):
        Room("kitchen", polygon, z_range)


def test_bad_name_is_refused() -> None:
    with pytest.raises(InvalidInput, match="room name must not be empty"):
        Room("   ", SQUARE)


def test_point_in_concave_room() -> None:
    r = Room("l", L_SHAPE)
    assert r.contains((1, 1)) and r.contains((3, 1)) and r.contains((1, 3))
    assert not r.contains((3, 3))  # the notch
    assert not r.contains((5, 1)) and not r.contains((-0.01, 1))
    assert r.contains((0, 0)) and r.contains((2, 3)) and r.contains((3, 2))  # boundary
    stacked = Room("upstairs", SQUARE, (3.0, 6.0))
    assert stacked.contains((1, 1)) and stacked.contains((1, 1, 4.0))
    assert not stacked.contains((1, 1, 1.0))


def test_footprint_fraction() -> None:
    r = Room("l", L_SHAPE)
    assert r.footprint_fraction((1, 1, 0), (1, 1, 1)) == pytest.approx(1.0)
    # a 2 x 2 footprint centred on the inner corner: three quarters inside the L
    assert r.footprint_fraction((2, 2, 0), (2, 2, 1)) == pytest.approx(0.75)
    assert r.footprint_fraction((3, 3, 0), (0.5, 0.5, 1)) == 0.0
    assert r.footprint_fraction((10, 10, 0), (1, 1, 1)) == 0.0
    assert r.footprint_fraction((1, 1, 0), (0, 0, 0)) == 1.0  # no area: the centre decides
    assert r.footprint_fraction((3, 3, 0), (0, 0, 0)) == 0.0


@pytest.fixture
def flat() -> RoomMap:
    """Four rooms in a row along x (each 4 m wide), a hallway along their north side."""
    m = RoomMap()
    for i, name in enumerate(["bedroom", "bathroom", "kitchen", "living room"]):
        m.define(name, [(4 * i, 0), (4 * i + 4, 0), (4 * i + 4, 4), (4 * i, 4)])
    m.define("hallway", [(0, 4), (16, 4), (16, 6), (0, 6)])
    return m


def test_lookup_and_assignment(flat: RoomMap) -> None:
    assert flat.room_at((1, 1)) == "bedroom"
    assert flat.room_at((13, 2, 0.5)) == "living room"
    assert flat.room_at((8, 5)) == "hallway"
    assert flat.room_at((20, 1)) is None
    assert flat.rooms_at((4, 2)) == ["bathroom", "bedroom"]  # on the shared wall
    # a table 70 % in the kitchen, 30 % in the bathroom
    a = flat.assign((8.4, 2.0, 0.4), (2.0, 1.0, 0.8))
    assert a == RoomAssignment("kitchen", pytest.approx(0.7))
    assert flat.footprint_fractions((8.4, 2.0, 0.4), (2.0, 1.0, 0.8)) == {
        "bathroom": pytest.approx(0.3), "kitchen": pytest.approx(0.7)}
    # a rug straddling three rooms, none holding half of it
    assert flat.assign((8.0, 3.8, 0.0), (2.0, 2.0, 0.01)) is None
    assert flat.assign((8.0, 3.8, 0.0), (2.0, 2.0, 0.01), min_fraction=0.2) == \
        RoomAssignment("hallway", pytest.approx(0.4))
    assert flat.assign((30, 30, 0), (1, 1, 1)) is None
    with pytest.raises(InvalidInput, match=r"point must be \(x, y\) or \(x, y, z\)"):
        flat.room_at((1,))
    with pytest.raises(InvalidInput, match=r"point\[1\] must be a finite number, got nan"):
        flat.room_at((1, float("nan")))
    with pytest.raises(InvalidInput, match="size must not be negative"):
        flat.assign((1, 1, 0), (1, -1, 1))


def test_lookup_does_not_scan_every_room(monkeypatch: pytest.MonkeyPatch) -> None:
    m = RoomMap(cell_m=4.0)
    for i in range(40):
        for j in range(40):
            m.define(f"r{i}-{j}", [(4 * i, 4 * j), (4 * i + 4, 4 * j), (4 * i + 4, 4 * j + 4),
                                   (4 * i, 4 * j + 4)])
    calls = []
    original = Room.contains

    def counting(self: Room, point) -> bool:
        calls.append(self.name)
        return original(self, point)

    monkeypatch.setattr(Room, "contains", counting)
    assert m.room_at((81.0, 122.5)) == "r20-30"
    assert len(calls) <= 4
    calls.clear()
    assert m.room_at((-5.0, -5.0)) is None
    assert calls == []


def test_names_are_unique_and_lookups_normalised(flat: RoomMap) -> None:
    with pytest.raises(InvalidInput, match="a room named 'kitchen' already exists"):
        flat.define("Kitchen", SQUARE)
    assert flat.get("KITCHEN").name == "kitchen"
    assert "Living Room" in flat and "garage" not in flat and 3 not in flat
    with pytest.raises(NotFound, match="no room named 'garage'"):
        flat.get("garage")
    with pytest.raises(InvalidInput, match="expected a Room, got dict"):
        flat.add({"name": "x"})
    assert flat.names() == ["bathroom", "bedroom", "hallway", "kitchen", "living room"]


def test_paths_by_door_count(flat: RoomMap) -> None:
    for name in ["bedroom", "bathroom", "kitchen", "living room"]:
        flat.connect(name, "hallway")
    assert flat.path("bedroom", "kitchen") == ["bedroom", "hallway", "kitchen"]
    flat.connect("bedroom", "bathroom")
    flat.connect("bathroom", "kitchen")
    # two paths of two doors: the alphabetically first sequence wins
    assert flat.path("bedroom", "kitchen") == ["bedroom", "bathroom", "kitchen"]
    assert flat.path("kitchen", "bedroom") == ["kitchen", "bathroom", "bedroom"]
    assert flat.path("kitchen", "kitchen") == ["kitchen"]
    flat.connect("bedroom", "kitchen")  # a direct door is shorter
    assert flat.path("bedroom", "kitchen") == ["bedroom", "kitchen"]
    flat.connect("bedroom", "kitchen")  # idempotent
    assert flat.neighbors("bedroom") == ["bathroom", "hallway", "kitchen"]
    flat.disconnect("living room", "hallway")
    assert flat.path("living room", "bedroom") is None
    flat.remove("hallway")
    assert flat.neighbors("kitchen") == ["bathroom", "bedroom"]
    assert ("hallway", "kitchen") not in flat.connections()
    with pytest.raises(InvalidInput, match="cannot connect room 'kitchen' to itself"):
        flat.connect("kitchen", "Kitchen")
    with pytest.raises(NotFound, match="no room named 'garage'"):
        flat.path("kitchen", "garage")


def test_adjacency_from_shared_walls(flat: RoomMap) -> None:
    assert flat.adjacent("bedroom") == [("bathroom", pytest.approx(4.0)),
                                        ("hallway", pytest.approx(4.0))]
    # the bedroom and the kitchen do not touch; the living room only meets the bathroom's
    # neighbour
    assert [n for n, _ in flat.adjacent("kitchen")] == ["bathroom", "hallway", "living room"]
    new = flat.connect_adjacent()
    assert new == [("bathroom", "bedroom"), ("bathroom", "hallway"), ("bathroom", "kitchen"),
                   ("bedroom", "hallway"), ("hallway", "kitchen"), ("hallway", "living room"),
                   ("kitchen", "living room")]
    assert flat.connect_adjacent() == []
    assert flat.path("bedroom", "living room") == ["bedroom", "hallway", "living room"]


def test_adjacency_needs_a_real_wall_and_the_same_floor() -> None:
    m = RoomMap(min_shared_m=0.5)
    m.define("a", [(0, 0), (2, 0), (2, 2), (0, 2)], z_range=(0.0, 3.0))
    m.define("corner", [(2, 2), (4, 2), (4, 4), (2, 4)])  # touches a at one point only
    m.define("sliver", [(2, 0), (4, 0), (4, 0.3), (2, 0.3)])  # shares 0.3 m of wall with a
    m.define("upstairs", [(2, -2), (4, -2), (4, 2), (2, 2)], z_range=(3.0, 6.0))
    m.define("beyond wall", [(2.15, 0.5), (4, 0.5), (4, 1.9), (2.15, 1.9)])  # 15 cm wall
    assert m.adjacent("a") == []
    thick = RoomMap(m.rooms(), wall_tolerance_m=0.2)
    assert thick.adjacent("a") == [("beyond wall", pytest.approx(1.4))]


def test_auto_connect_on_add() -> None:
    m = RoomMap(auto_connect=True)
    m.define("a", [(0, 0), (2, 0), (2, 2), (0, 2)])
    m.define("b", [(2, 0), (4, 0), (4, 2), (2, 2)])
    m.define("c", [(10, 0), (12, 0), (12, 2), (10, 2)])
    assert m.connections() == [("a", "b")]
    assert m.path("a", "c") is None


def test_round_trip_through_json(flat: RoomMap) -> None:
    flat.connect("bedroom", "hallway")
    flat.define("attic", SQUARE, z_range=(5.0, 7.5))
    data = json.loads(json.dumps(flat.to_dict()))
    again = RoomMap.from_dict(data)
    assert again.rooms() == flat.rooms()
    assert again.connections() == [("bedroom", "hallway")]
    assert again.get("attic").z_range == (5.0, 7.5)
    with pytest.raises(InvalidInput, match=r"unknown room fields \['colour'\]"):
        Room.from_dict({"name": "x", "polygon": SQUARE, "colour": "red"})
    with pytest.raises(InvalidInput, match="a room needs a 'polygon' field"):
        Room.from_dict({"name": "x"})
    with pytest.raises(InvalidInput, match='a mapping with a "rooms" list'):
        RoomMap.from_dict({"rooms": "none"})
    with pytest.raises(InvalidInput, match=r"connections\[0\] must be a pair"):
        RoomMap.from_dict({"rooms": [], "connections": ["a"]})
