"""Spatial questions — ``near``, ``nearest``, ``within`` — with exact results, including what
must stay out (the far object, the lost one, "vegetable" for "table"), their filters (label on
whole words, status, level, room), argument checking, and a property: every answer equals a
brute-force scan over ``objects()``."""

from __future__ import annotations

import functools
import math
from collections.abc import Iterator

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from locimem import ObjectMemory, ObjectStatus
from locimem.check import flush_subnormal
from locimem.errors import InvalidInput, NotFound
from tests.helpers import det

P = (0.0, 0.0, 0.5)  # where the questions are asked from

# label, centre (x, y, z) — the detection order fixes the ids 1..9
LAYOUT = (
    ("office chair", (1.0, 0.0, 0.5)),  # 1: d = 1.0
    ("chair", (0.0, 1.0, 0.5)),  # 2: d = 1.0 (ties with 1)
    ("kitchen table", (2.0, 0.0, 0.5)),  # 3: d = 2.0
    ("vegetable", (0.0, 2.0, 0.5)),  # 4: d = 2.0 (ties with 3)
    ("apple", (0.5, 0.0, 0.5)),  # 5: d = 0.5
    ("apple", (10.0, 10.0, 0.5)),  # 6: the far apple
    ("table lamp", (0.0, -3.0, 0.5)),  # 7: d = 3.0
    ("book", (-1.0, 0.0, 0.5)),  # 8: d = 1.0, lost
    ("bottle", (0.0, -1.5, 0.5)),  # 9: d = 1.5, tentative (seen once)
)
OFFICE_CHAIR, CHAIR, TABLE, VEGETABLE, APPLE, FAR_APPLE, LAMP, BOOK, BOTTLE = range(1, 10)


def _scan(*skip: str) -> list:
    return [det(label, *c) for label, c in LAYOUT if label not in skip]


@pytest.fixture(scope="module")
def world() -> Iterator[ObjectMemory]:
    mem = ObjectMemory.open(":memory:", scope="spatial")
    for t in range(6):  # six sightings each: promoted (the bottle is not there yet)
        mem.observe(float(t), _scan("bottle"))
    for t in (20.0, 40.0):  # the book is no longer seen: lost once unseen for 34.5 s
        mem.observe(t, _scan("bottle", "book"))
    last = mem.observe(41.0, _scan("book"))
    mem.define_room("west", [(-2, -4), (0.75, -4), (0.75, 4), (-2, 4)])
    mem.define_room("east", [(0.75, -4), (4, -4), (4, 4), (0.75, 4)])
    assert [(e.kind.value, e.object_id) for e in mem.events(kind="LOST")] == [("LOST", BOOK)]
    assert sorted(last.assignments) == [1, 2, 3, 4, 5, 6, 7, 9]
    try:
        yield mem
    finally:
        mem.close()


def ids(objs) -> list[int]:
    return [o.id for o in objs]


def test_the_world_is_as_built(world: ObjectMemory) -> None:
    status = {o.id: o.status for o in world.objects()}
    assert status == {**{i: ObjectStatus.CONFIRMED for i in (1, 2, 3, 4, 5, 6, 7)},
                      BOOK: ObjectStatus.LOST, BOTTLE: ObjectStatus.TENTATIVE}
    assert [o.center for o in world.objects()] == [c for _, c in LAYOUT]


# -- near ---------------------------------------------------------------------------------------

def test_near_is_exact_and_keeps_the_far_and_the_lost_out(world: ObjectMemory) -> None:
    assert ids(world.near(P, 1.0)) == [APPLE, OFFICE_CHAIR, CHAIR]  # nearest first, ties by id
    assert ids(world.near(P, 5.0)) == [APPLE, OFFICE_CHAIR, CHAIR, BOTTLE, TABLE, VEGETABLE, LAMP]
    assert FAR_APPLE not in ids(world.near(P, 14.0))  # the far apple is 14.15 m away
    assert ids(world.near(P, 15.0))[-1] == FAR_APPLE
    assert ids(world.near((10.0, 10.0, 0.5), 0.1)) == [FAR_APPLE]
    assert world.near((50.0, 50.0, 50.0), 3.0) == []


def test_near_radius_is_inclusive(world: ObjectMemory) -> None:
    assert ids(world.near(P, 0.5)) == [APPLE]
    assert ids(world.near(P, 0.4999999)) == []
    assert ids(world.near(P, 1.5)) == [APPLE, OFFICE_CHAIR, CHAIR, BOTTLE]
    assert ids(world.near(P, 1.4999999)) == [APPLE, OFFICE_CHAIR, CHAIR]


def test_near_returns_views_with_their_distances_in_order(world: ObjectMemory) -> None:
    found = world.near(P, 3.0)
    d = [math.dist(o.center, P) for o in found]
    assert d == sorted(d)
    assert d == [0.5, 1.0, 1.0, 1.5, 2.0, 2.0, 3.0]
    assert [o.label for o in found] == ["apple", "office chair", "chair", "bottle",
                                        "kitchen table", "vegetable", "table lamp"]


# -- nearest ------------------------------------------------------------------------------------

def test_nearest_order_and_ties(world: ObjectMemory) -> None:
    assert ids(world.nearest(P)) == [APPLE]  # k defaults to 1
    assert ids(world.nearest(P, 2)) == [APPLE, OFFICE_CHAIR]  # the tie at 1.0 goes to the lower id
    assert ids(world.nearest(P, 3)) == [APPLE, OFFICE_CHAIR, CHAIR]
    assert ids(world.nearest(P, 5)) == [APPLE, OFFICE_CHAIR, CHAIR, BOTTLE, TABLE]
    # more than there are: every object that is not lost, the far apple last
    assert ids(world.nearest(P, 100)) == [APPLE, OFFICE_CHAIR, CHAIR, BOTTLE, TABLE, VEGETABLE,
                                          LAMP, FAR_APPLE]
    assert ids(world.nearest((10.0, 10.0, 0.5), 1)) == [FAR_APPLE]
    assert ids(world.nearest((9.0, 9.0, 0.5), 2)) == [FAR_APPLE, TABLE]


def test_nearest_with_filters(world: ObjectMemory) -> None:
    assert ids(world.nearest(P, 1, label="chair")) == [OFFICE_CHAIR]
    assert ids(world.nearest(P, 5, label="apple")) == [APPLE, FAR_APPLE]
    assert ids(world.nearest(P, 5, label="book")) == []  # the only book is lost
    assert ids(world.nearest(P, 5, label="book", status="lost")) == [BOOK]
    assert ids(world.nearest((8.0, 8.0, 0.5), 1, level="item")) == [FAR_APPLE]
    assert ids(world.nearest(P, 3, room="east")) == [OFFICE_CHAIR, TABLE]


# -- within -------------------------------------------------------------------------------------

def test_within_edges_are_inclusive(world: ObjectMemory) -> None:
    # apple (0.5, 0), office chair (1, 0) and chair (0, 1) all lie on the box's faces
    assert ids(world.within((0.0, 0.0, 0.5), (1.0, 1.0, 0.5))) == [OFFICE_CHAIR, CHAIR, APPLE]
    assert ids(world.within((0.0, 0.0, 0.0), (0.999, 0.999, 1.0))) == [APPLE]
    assert ids(world.within((0.001, 0.0, 0.5), (0.999, 1.0, 0.5))) == [APPLE]
    assert ids(world.within((0.0, 0.0, 0.5001), (1.0, 1.0, 1.0))) == []  # above them all
    assert ids(world.within((1.0, 0.0, 0.5), (1.0, 0.0, 0.5))) == [OFFICE_CHAIR]  # a point box


def test_within_is_by_id_and_keeps_the_far_out(world: ObjectMemory) -> None:
    assert ids(world.within((-5, -5, -5), (5, 5, 5))) == [1, 2, 3, 4, 5, 7, 9]
    assert ids(world.within((-5, -5, -5), (5, 5, 5), status=None)) == [1, 2, 3, 4, 5, 7, 8, 9]
    assert ids(world.within((-100, -100, -100), (100, 100, 100))) == [1, 2, 3, 4, 5, 6, 7, 9]


# -- filters ------------------------------------------------------------------------------------

@pytest.mark.parametrize(("label", "expected"), [
    ("chair", [OFFICE_CHAIR, CHAIR]),  # "chair" finds "office chair"
    ("chairs", [OFFICE_CHAIR, CHAIR]),  # a plural finds the singular
    ("office chair", [OFFICE_CHAIR]),
    ("Office  Chair", [OFFICE_CHAIR]),  # case and spacing do not matter
    ("the chair", [OFFICE_CHAIR, CHAIR]),  # a leading article is dropped
    ("table", [TABLE, LAMP]),  # whole words: never "vegetable"
    ("tables", [TABLE, LAMP]),
    ("vegetable", [VEGETABLE]),
    ("veg", []),  # no prefixes
    ("able", []),  # no substrings
    ("apple", [APPLE, FAR_APPLE]),
    ("books", []),  # the only book is lost (see the status filter)
    ("lamp table", []),  # the words in order
    ("sofa", []),
])
def test_label_filter_matches_whole_words(world: ObjectMemory, label: str, expected) -> None:
    assert ids(world.within((-100, -100, -100), (100, 100, 100), label=label)) == expected
    by_distance = sorted(expected, key=lambda i: (math.dist(LAYOUT[i - 1][1], P), i))
    assert ids(world.near(P, 100.0, label=label)) == by_distance
    assert ids(world.nearest(P, 10, label=label)) == by_distance


def test_status_filter(world: ObjectMemory) -> None:
    assert ids(world.near(P, 1.0, status="lost")) == [BOOK]
    assert ids(world.near(P, 1.0, status=ObjectStatus.LOST)) == [BOOK]
    assert ids(world.near(P, 1.0, status=None)) == [APPLE, OFFICE_CHAIR, CHAIR, BOOK]
    assert ids(world.near(P, 1.5, status=["confirmed", "lost"])) == [APPLE, OFFICE_CHAIR, CHAIR,
                                                                     BOOK]
    assert ids(world.near(P, 2.0, status="tentative")) == [BOTTLE]
    assert ids(world.near(P, 2.0, status="CONFIRMED")) == [APPLE, OFFICE_CHAIR, CHAIR, TABLE,
                                                           VEGETABLE]
    assert ids(world.nearest(P, 1, status="lost")) == [BOOK]
    assert ids(world.nearest(P, 3, label="books", status="lost")) == [BOOK]
    assert ids(world.within((-2, -2, 0), (2, 2, 1), status="lost")) == [BOOK]
    assert world.near(P, 100.0, status="doubted") == []


def test_level_filter(world: ObjectMemory) -> None:
    assert ids(world.near(P, 2.0, level="furniture")) == [OFFICE_CHAIR, CHAIR, TABLE]
    assert ids(world.near(P, 2.0, level="item")) == [APPLE, BOTTLE, VEGETABLE]
    assert ids(world.within((-100, -100, -100), (100, 100, 100), level="furniture")) == [
        OFFICE_CHAIR, CHAIR, TABLE, LAMP]
    assert ids(world.nearest(P, 100, level="item", status=None)) == [APPLE, BOOK, BOTTLE,
                                                                      VEGETABLE, FAR_APPLE]


def test_cups_mugs_vases_and_bowls_are_items(mem: ObjectMemory) -> None:
    scan = [det("cup", 0.0, 0.0, 0.5), det("mug", 1.0, 0.0, 0.5), det("vase", 2.0, 0.0, 0.5),
            det("bowl", 3.0, 0.0, 0.5), det("kitchen table", 4.0, 0.0, 0.5)]
    mem.observe(0.0, scan)
    assert [mem.level_of(i) for i in (1, 2, 3, 4, 5)] == ["item"] * 4 + ["furniture"]
    assert ids(mem.near(P, 3.5, level="item")) == [1, 2, 3, 4]


def test_room_filter(world: ObjectMemory) -> None:
    assert ids(world.near(P, 3.0, room="west")) == [APPLE, CHAIR, BOTTLE, VEGETABLE, LAMP]
    assert ids(world.near(P, 3.0, room="east")) == [OFFICE_CHAIR, TABLE]
    assert ids(world.within((-100, -100, -100), (100, 100, 100), room="east")) == [
        OFFICE_CHAIR, TABLE]
    assert ids(world.nearest((10.0, 10.0, 0.5), 2, room="west")) == [VEGETABLE, CHAIR]
    assert FAR_APPLE not in ids(world.near(P, 100.0, room="west") + world.near(P, 100.0,
                                                                             room="east"))
    assert world.room_of(FAR_APPLE) is None
    # filters combine
    assert ids(world.near(P, 3.0, room="west", level="furniture")) == [CHAIR, LAMP]
    assert ids(world.near(P, 3.0, room="west", label="chair", status=None)) == [CHAIR]
    assert ids(world.near(P, 3.0, room="west", level="item", status=None)) == [APPLE, BOOK, BOTTLE,
                                                                               VEGETABLE]


# -- bad arguments ------------------------------------------------------------------------------

@pytest.mark.parametrize(("call", "error", "message"), [
    (lambda m: m.near((math.nan, 0, 0), 1.0), InvalidInput,
     r"^point\[0\] must be a finite number, got nan$"),
    (lambda m: m.near((0, math.inf, 0), 1.0), InvalidInput,
     r"^point\[1\] must be a finite number, got inf$"),
    (lambda m: m.near((0, 0), 1.0), InvalidInput, r"^point must have 3 numbers, got 2$"),
    (lambda m: m.near("here", 1.0), InvalidInput, r"^point must be a sequence of 3 numbers"),
    (lambda m: m.near(P, -1.0), InvalidInput, r"^radius must be > 0, got -1.0$"),
    (lambda m: m.near(P, 0.0), InvalidInput, r"^radius must be > 0, got 0.0$"),
    (lambda m: m.near(P, math.nan), InvalidInput, r"^radius must be a finite number, got nan$"),
    (lambda m: m.near(P, "1"), InvalidInput, r"^radius must be a finite number, got '1'$"),
    (lambda m: m.nearest(P, 0), InvalidInput, r"^k must be >= 1, got 0$"),
    (lambda m: m.nearest(P, -3), InvalidInput, r"^k must be >= 1, got -3$"),
    (lambda m: m.nearest(P, 2.5), InvalidInput, r"^k must be an integer, got 2.5$"),
    (lambda m: m.nearest(P, True), InvalidInput, r"^k must be an integer, got True$"),
    (lambda m: m.nearest((0, 0, math.nan), 1), InvalidInput,
     r"^point\[2\] must be a finite number, got nan$"),
    (lambda m: m.within((1, 0, 0), (0, 1, 1)), InvalidInput,
     r"^box_min \(1.0, 0.0, 0.0\) must not exceed box_max \(0.0, 1.0, 1.0\) on any axis$"),
    (lambda m: m.within((0, 0, 2), (1, 1, 1)), InvalidInput, r"must not exceed box_max"),
    (lambda m: m.within((0, 0, 0), (1, 1, math.nan)), InvalidInput,
     r"^box_max\[2\] must be a finite number, got nan$"),
    (lambda m: m.near(P, 1.0, room="attic"), NotFound,
     r"^no room 'attic' \(rooms: east, west\)$"),
    (lambda m: m.nearest(P, 1, room="attic"), NotFound, r"^no room 'attic'"),
    (lambda m: m.within((0, 0, 0), (1, 1, 1), room="attic"), NotFound, r"^no room 'attic'"),
    (lambda m: m.near(P, 1.0, room=3), InvalidInput, r"^room must be a string, got int$"),
    (lambda m: m.near(P, 1.0, status="gone"), InvalidInput,
     r"^status must be one of confirmed, tentative, doubted, lost, forgotten; got 'gone'$"),
    (lambda m: m.near(P, 1.0, level="room"), InvalidInput,
     r"^level must be one of furniture, item, got 'room'$"),
    (lambda m: m.near(P, 1.0, label=""), InvalidInput, r"^label must name something, got ''$"),
    (lambda m: m.near(P, 1.0, label="the"), InvalidInput,
     r"^label must name something, got 'the'$"),
    (lambda m: m.near(P, 1.0, label=7), InvalidInput, r"^label must be a string, got int$"),
])
def test_bad_arguments_are_refused(world: ObjectMemory, call, error, message) -> None:
    with pytest.raises(error, match=message):
        call(world)


def test_a_memory_without_rooms_names_none_in_the_error(mem: ObjectMemory) -> None:
    mem.observe(0.0, [det("cup", 0.0, 0.0)])
    with pytest.raises(NotFound, match=r"^no room 'kitchen' \(rooms: none defined\)$"):
        mem.near(P, 1.0, room="kitchen")
    assert mem.near(P, 0.3) == [] and ids(mem.near(P, 0.4)) == [1]


def test_an_empty_memory_answers_empty(mem: ObjectMemory) -> None:
    assert mem.near(P, 10.0) == []
    assert mem.nearest(P, 3) == []
    assert mem.within((-1, -1, -1), (1, 1, 1)) == []


# -- the index follows the memory ---------------------------------------------------------------

def test_the_index_follows_moves_and_forgetting(mem: ObjectMemory) -> None:
    for t in range(6):
        mem.observe(float(t), [det("cup", 0.0, 0.0, 0.5), det("book", 3.0, 0.0, 0.5)])
    assert ids(mem.near(P, 0.1)) == [1]
    mem.move(1, (2.0, 2.0, 0.5), reason="put away")
    assert mem.near(P, 1.0) == []
    assert ids(mem.near((2.0, 2.0, 0.5), 0.01)) == [1]
    assert ids(mem.nearest(P, 2)) == [1, 2]  # both now sqrt(8) and 3 m away
    mem.forget(2, reason="not ours")
    assert ids(mem.nearest(P, 5)) == [1]
    assert mem.near((3.0, 0.0, 0.5), 1.0) == []
    assert mem.near((3.0, 0.0, 0.5), 1.0, status=None) == []  # forgotten is no status at all
    assert ids(mem.within((-5, -5, -5), (5, 5, 5))) == [1]


# -- property: every answer equals brute force over objects() ---------------------------------

# labels with their level, and which label filters find them (as a plain table)
PROP_LABELS = {"office chair": "furniture", "chair": "furniture", "kitchen table": "furniture",
               "vegetable": "item", "table lamp": "furniture", "apple": "item",
               "green apple": "item"}
FILTER_FINDS = {
    "chair": {"office chair", "chair"}, "chairs": {"office chair", "chair"},
    "table": {"kitchen table", "table lamp"}, "vegetable": {"vegetable"},
    "books": {"book"}, "apples": {"apple", "green apple"}, "lamp": {"table lamp"},
    "bottle": {"bottle"}, "office chair": {"office chair"},
}
PROP_COUNTS: dict[str, int] = {}
STATUS_FILTERS = {
    "default": ({"confirmed", "tentative", "doubted"}, "__default__"),
    "any": (None, None),
    "lost": ({"lost"}, "lost"),
    "live": ({"confirmed", "tentative"}, ("confirmed", "tentative")),
}


@functools.lru_cache(maxsize=1)
def _prop_world() -> ObjectMemory:
    """~170 objects on a half-metre lattice: confirmed, lost ("book") and tentative ("bottle")."""
    names = sorted(PROP_LABELS)
    cells = [(x * 0.5, y * 0.5, z * 0.5) for x in range(-6, 7) for y in range(-6, 7)
             for z in range(3)]
    cells = [c for c in cells if round(2 * (c[0] + c[1] + c[2])) % 3 == 0]  # >= 0.7 m apart
    live, lost, new = [], [], []
    for k, c in enumerate(cells):
        if k % 9 == 4:
            lost.append(det("book", *c))
        elif k % 9 == 7:
            new.append(det("bottle", *c))
        else:
            live.append(det(names[k % len(names)], *c))
    mem = ObjectMemory.open(":memory:", scope="prop")
    PROP_COUNTS.update(confirmed=len(live), lost=len(lost), tentative=len(new))
    for t in range(6):
        mem.observe(float(t), live + lost)
    mem.observe(20.0, live)
    mem.observe(40.0, live)
    mem.observe(41.0, live + new)
    # rooms split at x = 0.25 (between lattice points), |y| <= 2.25; the rest is in no room
    mem.define_room("west", [(-4, -2.25), (0.25, -2.25), (0.25, 2.25), (-4, 2.25)])
    mem.define_room("east", [(0.25, -2.25), (4, -2.25), (4, 2.25), (0.25, 2.25)])
    return mem


def _expected_room(center) -> str | None:
    x, y, _ = center
    if abs(y) > 2.25:
        return None
    return "west" if x < 0.25 else "east"


def _level(label: str) -> str:
    return PROP_LABELS.get(label, "item")


def _brute(mem: ObjectMemory, label, status_key, level, room) -> list:
    wanted, _ = STATUS_FILTERS[status_key]
    out = []
    for o in mem.objects():
        if wanted is not None and o.status.value not in wanted:
            continue
        if label is not None and o.label not in FILTER_FINDS[label]:
            continue
        if level is not None and _level(o.label) != level:
            continue
        if room is not None and _expected_room(o.center) != room:
            continue
        out.append(o)
    return out


def _kwargs(label, status_key, level, room) -> dict:
    kw: dict = {"label": label, "level": level, "room": room}
    _, arg = STATUS_FILTERS[status_key]
    if arg != "__default__":
        kw["status"] = arg
    return kw


def test_the_property_world_has_every_status() -> None:
    mem = _prop_world()
    counts: dict[str, int] = {}
    for o in mem.objects():
        counts[o.status.value] = counts.get(o.status.value, 0) + 1
    assert counts == PROP_COUNTS
    assert min(PROP_COUNTS.values()) >= 15
    assert len({o.center[2] for o in mem.objects()}) == 3


coord = st.one_of(st.sampled_from([i * 0.25 for i in range(-16, 17)]),
                  st.floats(-4.0, 4.0, allow_nan=False))
points = st.tuples(coord, coord, st.sampled_from([0.0, 0.5, 1.0, 0.25, -0.5, 1.5]))
filters = st.tuples(st.one_of(st.none(), st.sampled_from(sorted(FILTER_FINDS))),
                    st.sampled_from(sorted(STATUS_FILTERS)),
                    st.sampled_from([None, "furniture", "item"]),
                    st.sampled_from([None, "west", "east"]))


@settings(max_examples=150, deadline=None)
@given(p=points, radius=st.one_of(st.sampled_from([0.5, 1.0, 1.5, 2.0, 0.25 * math.sqrt(2)]),
                                  st.floats(0.01, 6.0)), f=filters)
def test_near_equals_brute_force(p, radius, f) -> None:
    mem = _prop_world()
    expected = sorted((math.dist(o.center, p), o.id) for o in _brute(mem, *f)
                      if math.dist(o.center, p) <= radius)
    got = mem.near(p, radius, **_kwargs(*f))
    assert [(math.dist(o.center, p), o.id) for o in got] == expected


@settings(max_examples=150, deadline=None)
@given(p=points, k=st.one_of(st.integers(1, 12), st.integers(1, 250)), f=filters)
def test_nearest_equals_brute_force(p, k, f) -> None:
    mem = _prop_world()
    expected = sorted((math.dist(o.center, p), o.id) for o in _brute(mem, *f))[:k]
    got = mem.nearest(p, k, **_kwargs(*f))
    assert [(math.dist(o.center, p), o.id) for o in got] == expected


@settings(max_examples=150, deadline=None)
@given(a=points, b=points, f=filters)
def test_within_equals_brute_force(a, b, f) -> None:
    mem = _prop_world()
    # the boundary flushes a subnormal coordinate to 0.0 (locimem.check.MIN_NORMAL): so does
    # the brute force, or a corner at -1e-308 would leave out an object at 0
    lo = tuple(flush_subnormal(min(x, y)) for x, y in zip(a, b, strict=True))
    hi = tuple(flush_subnormal(max(x, y)) for x, y in zip(a, b, strict=True))
    expected = [o.id for o in _brute(mem, *f)
                if all(lo[i] <= o.center[i] <= hi[i] for i in range(3))]
    assert [o.id for o in mem.within(lo, hi, **_kwargs(*f))] == expected
