"""Spatial relations: the predicates, and the incremental index against a from-scratch run."""

from __future__ import annotations

import random

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from locimem.errors import InvalidInput, NotFound
from locimem.scene.relations import (
    Box,
    RelationChange,
    RelationConfig,
    RelationIndex,
    compute_relations,
    contains,
    in_,
    near,
    next_to,
    on,
    pair_relations,
    under,
)

CFG = RelationConfig()
TABLE = Box((0.0, 0.0, 0.375), (1.2, 0.8, 0.75), "furniture", "surface")


def item_on(box: Box, x: float, y: float, size=(0.08, 0.08, 0.1), lift: float = 0.0) -> Box:
    """An item standing on ``box``'s top at (x, y), ``lift`` metres above it."""
    return Box((x, y, box.top + lift + size[2] / 2), size)


# -- configuration -----------------------------------------------------------------------------

@pytest.mark.parametrize(("kwargs", "message"), [
    ({"on_gap_m": 0}, r"^on_gap_m = 0 is out of range: must be within \[0\.001, 10\] m$"),
    ({"near_m": float("nan")}, "^near_m must be a finite number, got nan$"),
    ({"near_m": 1e308}, r"^near_m = 1e\+308 is out of range: must be within \[0\.001, 100\] m$"),
    ({"in_min_fraction": 1.5},
     r"^in_min_fraction = 1\.5 is out of range: must be within \[1e-9, 1\]$"),
    ({"on_min_overlap": 0}, r"^on_min_overlap = 0 is out of range: must be within \[1e-9, 1\]$"),
    ({"report_delta": -0.1}, r"^report_delta = -0\.1 is out of range: must be within \[0, 1\]$"),
])
def test_config_validation(kwargs, message) -> None:
    with pytest.raises(InvalidInput, match=message):
        RelationConfig(**kwargs)


@pytest.mark.parametrize(("args", "message"), [
    (((0, 0, 0), (1, -1, 1)), "size must not be negative"),
    (((0, 0, float("inf")), (1, 1, 1)), r"center\[2\] must be a finite number, got inf"),
    (((0, 0, 0), (1, 1, 1), "shelf"), "level must be one of room, furniture, item, got 'shelf'"),
    (((0, 0, 0), (1, 1, 1), "item", "box"), "role must be 'surface', 'container' or None"),
])
def test_box_validation(args, message) -> None:
    with pytest.raises(InvalidInput, match=message):
        Box(*args)


# -- predicates --------------------------------------------------------------------------------

def test_on() -> None:
    cup = item_on(TABLE, 0.2, 0.1)
    assert on(cup, TABLE, CFG) == pytest.approx(1.0)
    assert on(TABLE, cup, CFG) == 0.0  # furniture is never on an item
    assert on(item_on(TABLE, 0.2, 0.1, lift=0.03), TABLE, CFG) == pytest.approx(0.82)
    assert on(item_on(TABLE, 0.2, 0.1, lift=-0.02), TABLE, CFG) == pytest.approx(0.92)
    assert on(item_on(TABLE, 0.2, 0.1, lift=0.2), TABLE, CFG) == 0.0  # hovering
    assert on(item_on(TABLE, 0.9, 0.1), TABLE, CFG) == 0.0  # beyond the edge
    half = item_on(TABLE, 0.6, 0.0, size=(0.2, 0.2, 0.1))  # half over the edge
    assert on(half, TABLE, CFG) == pytest.approx(0.5)
    floor_cup = Box((0.9, 0.0, 0.05), (0.08, 0.08, 0.1))
    assert on(floor_cup, TABLE, CFG) == 0.0


def test_in_and_contains() -> None:
    drawer = Box((0, 0, 0.5), (0.5, 0.4, 0.15), "furniture", "container")
    fork = Box((0.1, 0.0, 0.44), (0.2, 0.03, 0.02))
    assert in_(fork, drawer, CFG) == pytest.approx(1.0)
    assert contains(drawer, fork, CFG) == pytest.approx(1.0)
    assert in_(drawer, fork, CFG) == 0.0
    partly_out = Box((0.2, 0.0, 0.5), (0.2, 0.1, 0.1))  # 75 % inside
    assert in_(partly_out, drawer, CFG) == pytest.approx(0.75)
    mostly_out = Box((0.3, 0.0, 0.5), (0.2, 0.1, 0.1))  # 25 % inside
    assert in_(mostly_out, drawer, CFG) == 0.0
    twin = Box(drawer.center, drawer.size, "furniture")  # a duplicate is not inside
    assert in_(twin, drawer, CFG) == 0.0
    # a table is a surface: what is inside its box is under it, not in it
    shoe = Box((0.1, 0.0, 0.05), (0.3, 0.1, 0.1))
    assert in_(shoe, TABLE, CFG) == 0.0
    assert under(shoe, TABLE, CFG) == pytest.approx(1.0)
    unknown = Box(TABLE.center, TABLE.size, "furniture")  # role unknown: both readings
    assert in_(shoe, unknown, CFG) == pytest.approx(1.0)
    assert under(shoe, unknown, CFG) == 0.0


def test_under() -> None:
    wall_shelf = Box((0, 0, 1.5), (1.0, 0.3, 0.04), "furniture", "surface")
    box = Box((0, 0, 0.15), (0.4, 0.3, 0.3))  # 1.03 m below: too far
    assert under(box, wall_shelf, CFG) == 0.0
    box = Box((0, 0, 0.9), (0.4, 0.3, 0.3))  # 0.43 m below the shelf
    assert under(box, wall_shelf, CFG) == pytest.approx(1 - 0.5 * 0.43, abs=1e-9)
    cup = item_on(TABLE, 0.0, 0.0)
    assert under(cup, TABLE, CFG) == 0.0  # on it, not under it
    assert under(TABLE, cup, CFG) == 0.0  # the cup's footprint covers little of the table
    drawer = Box((0, 0, 0.5), (0.5, 0.4, 0.15), "furniture", "container")
    fork = Box((0.1, 0.0, 0.44), (0.2, 0.03, 0.02))
    assert under(fork, drawer, CFG) == 0.0  # in a container is not under it


def test_next_to_and_near() -> None:
    chair_a = Box((0, 0, 0.45), (0.5, 0.5, 0.9), "furniture")
    chair_b = Box((0.6, 0, 0.45), (0.5, 0.5, 0.9), "furniture")  # 0.1 m gap
    chair_c = Box((1.0, 0, 0.45), (0.5, 0.5, 0.9), "furniture")  # 0.5 m gap
    assert next_to(chair_a, chair_b, CFG) == pytest.approx(1 - 0.5 * 0.1 / 0.3)
    assert next_to(chair_b, chair_a, CFG) == next_to(chair_a, chair_b, CFG)
    assert next_to(chair_a, chair_c, CFG) == 0.0
    cup = item_on(TABLE, 0.5, 0.0)
    floor_box = Box((0.75, 0.0, 0.1), (0.2, 0.2, 0.2))
    assert next_to(cup, floor_box, CFG) == 0.0  # different support levels
    assert next_to(item_on(TABLE, 0, 0), TABLE, CFG) == 0.0  # on it, not beside it
    assert near(chair_a, chair_b, CFG) == pytest.approx(0.4)
    assert near(chair_a, Box((0.9, 0, 0.45), (0.1, 0.1, 0.1)), CFG) == pytest.approx(0.1)
    assert near(chair_a, Box((1.1, 0, 0.45), (0.1, 0.1, 0.1)), CFG) == 0.0
    kitchen = Box((0, 0, 1.25), (5, 4, 2.5), "room")
    assert near(chair_a, kitchen, CFG) == 0.0 and next_to(chair_a, kitchen, CFG) == 0.0


# -- the index ---------------------------------------------------------------------------------

def kitchen_scene() -> tuple[RelationIndex, dict[str, int]]:
    """A table, a shelf right beside it at the same height, three items on the table and one
    on the shelf; a counter across the room."""
    ix = RelationIndex()
    ids = {"table": 1, "shelf": 2, "counter": 3, "cup": 10, "plate": 11, "book": 12,
           "vase": 13}
    ix.update(1, TABLE.center, TABLE.size, "furniture", "surface")
    ix.update(2, (0.85, 0.0, 0.375), (0.4, 0.4, 0.75), "furniture", "surface")
    ix.update(3, (4.0, 0.0, 0.45), (2.0, 0.6, 0.9), "furniture", "surface")
    ix.update(10, (0.3, 0.1, 0.80), (0.08, 0.08, 0.1))
    ix.update(11, (-0.2, 0.0, 0.76), (0.25, 0.25, 0.02))
    ix.update(12, (0.0, -0.25, 0.77), (0.2, 0.15, 0.04))
    ix.update(13, (0.85, 0.05, 0.85), (0.1, 0.1, 0.2))  # on the shelf, 25 cm from the table
    return ix, ids


def test_exactly_the_three_items_on_the_table() -> None:
    ix, ids = kitchen_scene()
    on_table = [i for _, i in ix.subjects("on", ids["table"])]
    assert on_table == [ids["cup"], ids["plate"], ids["book"]]
    assert ids["vase"] not in on_table
    assert [i for _, i in ix.subjects("on", ids["shelf"])] == [ids["vase"]]
    assert ix.subjects("on", ids["counter"]) == []
    assert [i for _, i in ix.objects(ids["cup"], "on")] == [ids["table"]]
    assert [i for _, i in ix.subjects("next_to", ids["table"])] == [ids["shelf"]]
    assert ix.all() == compute_relations({k: ix.box(k) for k in ids.values()})


def test_a_moved_cup_changes_support_once() -> None:
    ix, ids = kitchen_scene()
    changes = ix.update(ids["cup"], (4.2, 0.1, 0.95), (0.08, 0.08, 0.1), t=100.0)
    on_changes = [c for c in changes if c.relation == "on"]
    assert on_changes == [
        RelationChange("removed", ids["cup"], "on", ids["table"], pytest.approx(1.0)),
        RelationChange("added", ids["cup"], "on", ids["counter"], pytest.approx(1.0)),
    ]
    assert all(ids["cup"] in (c.subject, c.object) for c in changes)
    assert [i for _, i in ix.subjects("on", ids["table"])] == [ids["plate"], ids["book"]]
    rel = [r for r in ix.relations_of(ids["cup"]) if r.relation == "on"]
    assert [(r.object, r.since) for r in rel] == [(ids["counter"], 100.0)]
    # the same place again: nothing to report
    assert ix.update(ids["cup"], (4.2, 0.1, 0.95), (0.08, 0.08, 0.1), t=101.0) == []


def test_small_confidence_moves_are_stored_but_not_reported() -> None:
    ix = RelationIndex()
    ix.update(1, TABLE.center, TABLE.size, "furniture", "surface")
    ix.update(2, (0.2, 0.1, 0.80), (0.08, 0.08, 0.1), t=1.0)
    changes = ix.update(2, (0.2, 0.1, 0.81), (0.08, 0.08, 0.1), t=2.0)  # 1 cm up
    assert [c for c in changes if c.relation == "on"] == []
    assert ix.objects(2, "on") == [(pytest.approx(0.98), 1)]
    changes = ix.update(2, (0.2, 0.1, 0.84), (0.08, 0.08, 0.1), t=3.0)  # 4 cm up: reported
    assert [c for c in changes if c.relation == "on"] == [
        RelationChange("changed", 2, "on", 1, pytest.approx(0.68), pytest.approx(0.98))]
    assert [r.since for r in ix.relations_of(2) if r.relation == "on"] == [1.0]


def test_contains_is_the_inverse_of_in() -> None:
    ix = RelationIndex()
    ix.update(5, (0, 0, 0.5), (0.5, 0.4, 0.15), "furniture", "container")  # drawer
    ix.update(6, (0.1, 0.0, 0.44), (0.2, 0.03, 0.02))  # fork
    ix.update(7, (-0.1, 0.05, 0.45), (0.15, 0.04, 0.03))  # spoon
    assert [i for _, i in ix.subjects("in", 5)] == [6, 7]
    assert [i for _, i in ix.objects(5, "contains")] == [6, 7]
    assert [i for _, i in ix.subjects("contains", 6)] == [5]
    assert [(r.subject, r.relation, r.object) for r in ix.relations_of(5)
            if r.relation in ("in", "contains")] == [(5, "contains", 6), (5, "contains", 7),
                                                      (6, "in", 5), (7, "in", 5)]
    assert ("5", "contains") not in {(str(k[0]), k[1]) for k in ix.all()}  # derived only


def test_remove_and_errors() -> None:
    ix, ids = kitchen_scene()
    changes = ix.remove(ids["table"])
    assert {(c.kind, c.relation) for c in changes if c.relation == "on"} == {("removed", "on")}
    assert all(ids["table"] in (c.subject, c.object) for c in changes)
    assert ids["table"] not in ix and len(ix) == 6
    assert [r for r in ix.relations_of(ids["cup"]) if r.relation == "on"] == []
    for call in (lambda: ix.remove(1), lambda: ix.box(1), lambda: ix.subjects("on", 1),
                 lambda: ix.objects(1, "near"), lambda: ix.relations_of(1)):
        with pytest.raises(NotFound, match="object 1 is not in the relation index"):
            call()
    with pytest.raises(InvalidInput, match="relation must be one of on, under, in, contains, "
                                           "next_to, near, got 'atop'"):
        ix.subjects("atop", 2)
    with pytest.raises(InvalidInput, match="object_id must be >= 0, got -3"):
        ix.update(-3, (0, 0, 0), (1, 1, 1))
    with pytest.raises(InvalidInput, match="size must not be negative"):
        ix.update(3, (0, 0, 0), (1, -1, 1))
    assert ix.box(3).center == (4.0, 0.0, 0.45)  # the failed update changed nothing
    ix.update(20, (0, 0, 1.5), (8, 8, 3), "room")  # rooms take no part
    assert ix.relations_of(20) == []


def test_an_update_touches_only_nearby_objects() -> None:
    ix = RelationIndex()
    oid = 0
    for gx in range(30):  # 30 x 30 tables, 3 m apart, each with two items: 2700 objects
        for gy in range(30):
            x, y = 3.0 * gx, 3.0 * gy
            ix.update(oid, (x, y, 0.375), (1.2, 0.8, 0.75), "furniture", "surface")
            ix.update(oid + 1, (x + 0.2, y, 0.80), (0.08, 0.08, 0.1))
            ix.update(oid + 2, (x - 0.2, y, 0.76), (0.2, 0.2, 0.02))
            oid += 3
    assert len(ix) == 2700
    cup = 3 * (15 * 30 + 15) + 1  # the cup on table (15, 15) at (45, 45)
    changes = ix.update(cup, (45.3, 45.1, 0.80), (0.08, 0.08, 0.1))
    assert ix.last_candidates == 2  # its table and the plate beside it
    assert [(c.kind, c.subject, c.relation, c.object) for c in changes] == [
        ("removed", cup, "next_to", cup + 1), ("changed", cup, "near", cup + 1)]
    changes = ix.update(cup, (48.0, 45.0, 0.80), (0.08, 0.08, 0.1))  # onto the next table
    assert ix.last_candidates == 3  # that table, its cup and its plate
    assert [(c.kind, c.subject, c.relation, c.object) for c in changes if c.relation == "on"] \
        == [("removed", cup, "on", cup - 1), ("added", cup, "on", 3 * (16 * 30 + 15))]


# -- the incremental index equals a from-scratch computation -----------------------------------

LEVEL_ROLE = st.sampled_from([("item", None), ("item", "container"), ("furniture", "surface"),
                              ("furniture", "container"), ("furniture", None), ("room", None)])
COORD = st.floats(-1.5, 1.5).map(lambda v: round(v, 2))
HEIGHT = st.floats(0.0, 1.2).map(lambda v: round(v, 2))
SIZE = st.floats(0.0, 1.2).map(lambda v: round(v, 2))
OP = st.tuples(st.integers(0, 11), st.booleans(), COORD, COORD, HEIGHT, SIZE, SIZE, SIZE,
               LEVEL_ROLE)


BOX = st.tuples(COORD, COORD, HEIGHT, SIZE, SIZE, SIZE, LEVEL_ROLE).map(
    lambda v: Box((v[0], v[1], v[2] + v[5] / 2), v[3:6], *v[6]))


@settings(max_examples=300, deadline=None)
@given(BOX, BOX, st.sampled_from([CFG, RelationConfig(on_min_overlap=1e-9,
                                                      under_min_overlap=1e-9,
                                                      in_min_fraction=1e-9)]))
def test_pair_relations_are_the_predicates(a: Box, b: Box, config: RelationConfig) -> None:
    """Every predicate, both ways, as pair_relations reports them (it skips the directed
    ones for footprints apart: boxes touching, flat and on a 1 cm grid test that edge)."""
    expected = {}
    for name, pred in (("on", on), ("under", under), ("in", in_)):
        for (i, x), (j, y) in (((1, a), (2, b)), ((2, b), (1, a))):
            if (c := pred(x, y, config)) > 0.0:
                expected[(i, name, j)] = c
    for name, pred in (("next_to", next_to), ("near", near)):
        if (c := pred(a, b, config)) > 0.0:
            expected[(1, name, 2)] = c
    assert pair_relations(1, a, 2, b, config) == expected


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(OP, min_size=1, max_size=40))
def test_incremental_equals_from_scratch(ops) -> None:
    ix = RelationIndex(cell_m=0.5)
    boxes: dict[int, Box] = {}
    applied: dict[tuple[int, str, int], float] = {}
    for oid, drop, x, y, z, sx, sy, sz, (level, role) in ops:
        if drop and oid in boxes:
            changes = ix.remove(oid)
            del boxes[oid]
        else:
            changes = ix.update(oid, (x, y, z + sz / 2), (sx, sy, sz), level, role)
            boxes[oid] = Box((x, y, z + sz / 2), (sx, sy, sz), level, role)
        for c in changes:  # replaying the reported changes rebuilds the set of relations
            key = (c.subject, c.relation, c.object)
            if c.kind == "removed":
                del applied[key]
            else:
                applied[key] = c.confidence
        expected = compute_relations(boxes)
        assert ix.all() == expected
        assert applied.keys() == expected.keys()
    for (s, r, o), conf in expected.items():
        assert (conf, s) in ix.subjects(r, o)
        assert (conf, o) in ix.objects(s, r)
        if r in ("next_to", "near"):
            assert (conf, o) in ix.subjects(r, s)


def test_random_walk_against_from_scratch() -> None:
    rng = random.Random(7)
    ix = RelationIndex()
    boxes: dict[int, Box] = {}
    for step in range(400):
        oid = rng.randrange(60)
        if oid in boxes and rng.random() < 0.15:
            ix.remove(oid)
            del boxes[oid]
            continue
        level, role = rng.choice([("item", None), ("furniture", "surface"),
                                  ("furniture", "container")])
        size = (rng.uniform(0.05, 1.5), rng.uniform(0.05, 1.0), rng.uniform(0.02, 0.9))
        center = (rng.uniform(0, 6), rng.uniform(0, 6), rng.choice([0, 0.75, 0.9]) + size[2] / 2)
        ix.update(oid, center, size, level, role, t=float(step))
        boxes[oid] = Box(center, size, level, role)
    assert ix.all() == compute_relations(boxes)
