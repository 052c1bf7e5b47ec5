"""``mem.query(text)`` end to end: each kind of question routed to its retriever and answered
with exact ids and text — what is on the kitchen table, cups near the sink, what changed since a
scan time or a clock time (Unix-like scan times), where my phone is, what is in the kitchen, how
to get from the bedroom to the kitchen, something to drink from, the five nearest chairs — and
each answer stays within the memory's scope."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from locimem import Detection, ObjectMemory
from locimem.language.router import IntentKind
from locimem.query.reader import resolve_time
from tests.helpers import HOUSE, ID, ROOMS

# name -> (label, centre, size); the order fixes the ids 1..16 (metres, map frame, z up)
# the neighbour's flat: a kitchen table with a cup and a phone at the same places, and chairs
FLAT = ("table", "cup", "phone", "sink", "cup2")
CHAIRS = [("chair", (1.2 * k, 8.0, 0.5), (0.5, 0.5, 1.0)) for k in range(1, 4)]


def detections(names, moved=None) -> list[Detection]:
    moved = moved or {}
    return [Detection(HOUSE[n][0], 0.9, moved.get(n, HOUSE[n][1]), HOUSE[n][2]) for n in names]


@pytest.fixture(scope="module")
def store(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """One file, two scopes: the house in "home" (t = 0..7), the neighbour's flat in "flat"
    (t = 0..9, the same labels at the same places, its own rooms and three chairs)."""
    path = tmp_path_factory.mktemp("router") / "shared.loci"
    with ObjectMemory.open(path, scope="home", durable=False) as mem:
        for t in range(8):
            assert mem.observe(float(t), detections(HOUSE)).assignments == tuple(range(1, 17))
        for name, polygon in ROOMS.items():
            mem.define_room(name, polygon)
        mem.connect_rooms("kitchen", "hall")
        mem.connect_rooms("hall", "bedroom")
    with ObjectMemory.open(path, scope="flat", durable=False) as mem:
        chairs = [Detection(label, 0.9, c, s) for label, c, s in CHAIRS]
        for t in range(10):
            mem.observe(float(t), detections(FLAT) + chairs)
        mem.define_room("kitchen", ROOMS["kitchen"])
        mem.define_room("bedroom", ROOMS["hall"])
        mem.connect_rooms("kitchen", "bedroom")
    return path


@pytest.fixture(scope="module")
def home(store: Path) -> Iterator[ObjectMemory]:
    with ObjectMemory.open(store, scope="home", read_only=True) as mem:
        yield mem


def ids(objs) -> list[int]:
    return [o.id for o in objs]


# -- each kind of question ----------------------------------------------------------------------

def test_whats_on_the_kitchen_table(home: ObjectMemory) -> None:
    r = home.query("what's on the kitchen table")
    assert (r.intent.kind, r.intent.relation, r.intent.anchor) == (IntentKind.RELATIONAL, "on",
                                                                   "kitchen table")
    assert r.anchor.id == ID["table"] and r.found
    assert ids(r.objects) == [ID["cup"], ID["plate"], ID["phone"]]  # not the vase beside it
    assert r.text == "On the kitchen table (#1): cup (#2), plate (#3), phone (#4)."
    # a room-qualified anchor and other relations
    assert ids(home.query("What is on top of the table?").objects) == [2, 3, 4]
    assert ids(home.query("what's under the kitchen table").objects) == [ID["shoes"]]
    assert ids(home.query("what is in the drawer").objects) == [ID["fork"]]
    assert ids(home.query("what's on the shelf").objects) == [ID["vase"]]


def test_cups_near_the_sink(home: ObjectMemory) -> None:
    r = home.query("cups near the sink")
    assert (r.intent.kind, r.intent.target, r.intent.relation) == (IntentKind.RELATIONAL, "cup",
                                                                   "near")
    assert r.anchor.id == ID["sink"]
    assert ids(r.objects) == [ID["cup2"]]  # not the cupboard, not the cup on the table
    assert r.text == "Near the sink (#8): cup (#9)."
    assert ids(home.query("what's near the sink").objects) == [ID["cup2"], ID["cupboard"]]
    r = home.query("plates near the sink")
    assert (r.objects, r.text, r.found) == ((), "Near the sink (#8): nothing that I know of.",
                                            True)


def test_where_is_my_phone(home: ObjectMemory) -> None:
    r = home.query("where is my phone")
    assert (r.intent.kind, r.intent.target) == (IntentKind.WHERE_IS, "phone")
    assert ids(r.objects) == [ID["phone"]]
    assert r.text == ("The phone (#4) is on the kitchen table (#1) in the kitchen; last seen "
                      "just now (t=7.0 s).")
    assert r.text == home.describe(ID["phone"])
    assert home.query("Where's the fork?").text == ("The fork (#12) is in the drawer (#11) in "
                                                    "the kitchen; last seen just now (t=7.0 s).")
    r = home.query("where are my keys")
    assert (r.found, r.objects, r.text) == (False, (), "I have no memory of anything called "
                                                       "'key'.")


def test_whats_in_the_kitchen(home: ObjectMemory) -> None:
    r = home.query("what's in the kitchen")
    assert (r.intent.kind, r.intent.room) == (IntentKind.ROOM, "kitchen")
    kitchen = [ID[n] for n in ("table", "cup", "plate", "phone", "shelf", "vase", "counter",
                               "sink", "cup2", "cupboard", "drawer", "fork", "shoes")]
    assert ids(r.objects) == kitchen
    assert r.text.startswith("In the kitchen: kitchen table (#1), cup (#2), plate (#3), ")
    assert ids(home.query("what is in the bedroom").objects) == [14, 15, 16]
    assert home.query("what's in the garage").text == "In the garage: nothing that I know of."
    assert ids(home.query("cups in the kitchen").objects) == [ID["cup"], ID["cup2"]]


def test_how_do_i_get_from_the_bedroom_to_the_kitchen(home: ObjectMemory) -> None:
    r = home.query("how do I get from the bedroom to the kitchen")
    assert (r.intent.kind, r.intent.start, r.intent.goal) == (IntentKind.PATH, "bedroom",
                                                              "kitchen")
    assert r.path == ("bedroom", "hall", "kitchen") and r.found
    assert r.text == "bedroom -> hall -> kitchen."
    assert home.query("what's the way to the bedroom from the kitchen").path == (
        "kitchen", "hall", "bedroom")
    r = home.query("how do I get from the kitchen to the garage")
    assert (r.found, r.path, r.text) == (False, None, "I know no way from the kitchen to the "
                                                      "garage.")


def test_find_something_to_drink_from(home: ObjectMemory) -> None:
    r = home.query("find something to drink from")
    assert r.intent.kind is IntentKind.FIND
    assert ids(r.objects) == [ID["cup"], ID["cup2"], ID["bottle"]]
    assert r.extra == {"scores": [0.5, 0.5, 0.45]}
    assert r.text == "Found: cup (#2), cup (#9), water bottle (#15)."
    assert ID["shoes"] not in ids(r.objects)
    r = home.query("find a unicorn")
    assert (r.found, r.objects, r.text) == (False, (), "I found nothing like that.")


def test_whats_on_the_vegetable_tray_never_anchors_on_a_table(mem: ObjectMemory) -> None:
    table = Detection("table", 0.9, (0.0, 0.0, 0.375), (1.0, 1.0, 0.75))
    cup = Detection("cup", 0.9, (0.2, 0.0, 0.8), (0.08, 0.08, 0.1))
    tray = Detection("tray", 0.9, (3.0, 0.0, 0.02), (0.5, 0.3, 0.04))
    carrot = Detection("carrot", 0.9, (3.1, 0.0, 0.055), (0.15, 0.03, 0.03))
    for t in range(6):
        mem.observe(float(t), [table, cup, tray, carrot])
    r = mem.query("what's on the vegetable tray")
    assert (r.intent.anchor, r.anchor.id, ids(r.objects)) == ("tray", 3, [4])
    assert r.text == "On the tray (#3): carrot (#4)."
    assert ids(mem.query("what's on the table").objects) == [2]
    assert mem.query("what's on the vegetable").found is False  # no such thing; not a table
    # with a "vegetable" object around, "vegetable tray" still anchors on the tray
    mem.observe(6.0, [table, cup, tray, carrot,
                      Detection("vegetable", 0.9, (6.0, 0.0, 0.5), (0.1, 0.1, 0.1))])
    r = mem.query("what's on the vegetable tray")
    assert (r.anchor.id, ids(r.objects)) == (3, [4])


def test_the_five_nearest_chairs(mem: ObjectMemory) -> None:
    scan = [Detection("sofa", 0.9, (0.0, 0.5, 0.5), (0.1, 0.1, 0.1))]  # 1: nearest, no chair
    scan += [Detection("chair", 0.9, (1.2 * k, 0.0, 0.5), (0.1, 0.1, 0.1)) for k in range(1, 8)]
    scan += [Detection("office chair", 0.9, (0.0, -3.0, 0.5), (0.1, 0.1, 0.1))]  # 9: 3.0 m
    for t in range(6):
        mem.observe(float(t), scan)
    here = (0.0, 0.0, 0.5)
    r = mem.query("the five nearest chairs", here=here)
    assert (r.intent.kind, r.intent.target, r.intent.n) == (IntentKind.NEAR_ME, "chair", 5)
    assert ids(r.objects) == [2, 3, 9, 4, 5]  # 1.2, 2.4, 3.0, 3.6, 4.8 m
    assert r.text == ("Near you: chair (#2), chair (#3), office chair (#9), chair (#4), "
                      "chair (#5).")
    assert ids(mem.query("the nearest chair", here=here).objects) == [2]
    assert ids(mem.query("closest sofa", here=[0.0, 0.0, 0.5]).objects) == [1]
    assert ids(mem.query("what is within 2 metres of me", here=here).objects) == [1, 2]
    assert ids(mem.query("the five nearest chairs", here=(12.0, 0.0, 0.5)).objects) == [
        8, 7, 6, 5, 4]
    r = mem.query("the five nearest chairs")  # without here=
    assert (r.found, r.objects) == (False, ())
    assert r.text == "Tell me where you are (here=(x, y, z)) to answer that."


# -- times --------------------------------------------------------------------------------------

MIDNIGHT = 1_699_920_000.0  # 2023-11-14 00:00:00 UTC
H = 3600.0


@pytest.fixture(scope="module")
def unix_day() -> Iterator[ObjectMemory]:
    """Scan times are Unix times: from 09:00 to 11:00 UTC every 20 s. The book moves half a
    metre at 10:15; a key appears at 10:30."""
    with ObjectMemory.open(":memory:", scope="day") as mem:
        t = MIDNIGHT + 9 * H
        for i in range(6):
            mem.observe(t + i, [det_at("cup", 1.0), det_at("book", 3.0)])
        t += 20.0
        while t <= MIDNIGHT + 11 * H:
            scan = [det_at("cup", 1.0), det_at("book", 3.0 if t < MIDNIGHT + 10.25 * H else 3.5)]
            if t >= MIDNIGHT + 10.5 * H:
                scan.append(det_at("key", 7.0))
            mem.observe(t, scan)
            t += 20.0
        yield mem


def det_at(label: str, x: float) -> Detection:
    return Detection(label, 0.9, (x, 0.0, 0.9), (0.1, 0.1, 0.1))


def test_resolve_time_semantics() -> None:
    now = MIDNIGHT + 11 * H
    assert resolve_time(36000.0, "clock", now) == MIDNIGHT + 10 * H
    assert resolve_time(43200.0, "clock", now) == MIDNIGHT - 12 * H  # noon: yesterday's
    assert resolve_time(39600.0, "clock", now) == now  # not after now: today
    assert resolve_time(36000.0, "clock", 120.0) == 36000.0  # not Unix-like: a raw scan time
    assert resolve_time(600.0, "ago", now) == now - 600.0
    assert resolve_time(12.5, "time", now) == 12.5


def test_what_changed_since_ten(unix_day: ObjectMemory) -> None:
    r = unix_day.query("what changed since 10:00")
    assert (r.intent.kind, r.intent.t, r.intent.t_kind) == (IntentKind.CHANGES_SINCE, 36000.0,
                                                            "clock")
    assert [(c.object_id, c.changes) for c in r.changes] == [(2, ("moved",)),
                                                             (3, ("appeared", "confirmed"))]
    assert [c.first_t for c in r.changes] == [MIDNIGHT + 10.25 * H, MIDNIGHT + 10.5 * H]
    assert r.text == "Since 2023-11-14T10:00:00Z: #2 book: moved; #3 key: appeared, confirmed."
    same = unix_day.query(f"what changed since t={MIDNIGHT + 10 * H:.0f}")
    assert same.intent.t_kind == "time" and same.changes == r.changes and same.text == r.text
    assert unix_day.query("what's new since 10:00").changes == r.changes


def test_clock_times_on_the_day_of_the_latest_scan(unix_day: ObjectMemory) -> None:
    nine = unix_day.query("what changed since 9:00")
    assert [(c.object_id, c.changes) for c in nine.changes] == [
        (1, ("appeared", "confirmed")), (2, ("appeared", "confirmed", "moved")),
        (3, ("appeared", "confirmed"))]
    assert [(c.object_id, c.changes) for c in
            unix_day.query("what changed since 10:20").changes] == [(3, ("appeared",
                                                                         "confirmed"))]
    assert unix_day.query("what changed since 10:40").changes == ()
    late = unix_day.query("what changed in the last 10 minutes")
    assert late.text == "Since 2023-11-14T10:50:00Z: nothing changed."
    # at half past nine, "since 10:00" is yesterday's ten o'clock: everything so far
    earlier = unix_day.as_of(MIDNIGHT + 9.5 * H).query("what changed since 10:00")
    assert earlier.text == ("Since 2023-11-13T10:00:00Z: #1 cup: appeared, confirmed; #2 book: "
                            "appeared, confirmed.")


def test_what_changed_since_a_scan_time(home: ObjectMemory) -> None:
    r = home.query("what changed since t=4")
    assert [(c.object_id, c.changes[0]) for c in r.changes][:3] == [
        (1, "confirmed"), (2, "confirmed"), (3, "confirmed")]
    assert "#2 cup: confirmed, now on #1 kitchen table, now next_to #3 plate" in r.text
    assert home.query("what changed since t=6").text == "Since t=6.0 s: nothing changed."
    # small scan times are not Unix times: "10:00" is 36000 s, after everything here
    assert home.query("what changed since 10:00").text == "Since t=36000.0 s: nothing changed."


# -- scope --------------------------------------------------------------------------------------

QUESTIONS = ("what's on the kitchen table", "cups near the sink", "what changed since t=0",
             "where is my phone", "what's in the kitchen", "find something to drink from",
             "the five nearest chairs", "what did I see last", "what's near the cup",
             "where is the water bottle", "what haven't I seen since t=100")


def _ids_in(result) -> set[int]:
    out = {o.id for o in result.objects} | {c.object_id for c in result.changes}
    if result.anchor is not None:
        out.add(result.anchor.id)
    return out


def test_every_question_stays_in_its_scope(store: Path) -> None:
    own: dict[str, set[int]] = {}
    answers: dict[str, dict[str, object]] = {}
    for scope in ("home", "flat"):
        with ObjectMemory.open(store, scope=scope, read_only=True) as mem:
            own[scope] = {o.id for o in mem.objects(status=None)}
            answers[scope] = {q: mem.query(q, here=(1.0, 1.0, 0.5)) for q in QUESTIONS}
            answers[scope]["path"] = mem.query("how do I get from the bedroom to the kitchen")
    assert own["home"] == set(range(1, 17))
    assert len(own["flat"]) == len(FLAT) + len(CHAIRS) and not own["home"] & own["flat"]
    for scope, other in (("home", "flat"), ("flat", "home")):
        for q, result in answers[scope].items():
            seen = _ids_in(result)
            assert seen <= own[scope], (scope, q)
            assert not seen & own[other], (scope, q)
            for i in own[other]:
                assert not any(f"#{i}{end}" in result.text for end in (") ", ", ", ")")), \
                    (scope, q)
    # the same question, each scope's own answer
    home_table = answers["home"]["what's on the kitchen table"]
    flat_table = answers["flat"]["what's on the kitchen table"]
    assert ids(home_table.objects) == [2, 3, 4]
    assert [o.label for o in flat_table.objects] == ["cup", "phone"]
    assert answers["home"]["path"].path == ("bedroom", "hall", "kitchen")
    assert answers["flat"]["path"].path == ("bedroom", "kitchen")
    assert answers["home"]["the five nearest chairs"].objects == ()
    assert [o.label for o in answers["flat"]["the five nearest chairs"].objects] == ["chair"] * 3
    assert answers["flat"]["where is the water bottle"].found is False


def test_forgotten_objects_are_never_answered(store: Path, tmp_path: Path) -> None:
    copy = tmp_path / "copy.loci"
    for suffix in ("", "-wal", "-shm"):  # the store is closed; copy whatever it left
        src = Path(str(store) + suffix)
        if src.exists():
            Path(str(copy) + suffix).write_bytes(src.read_bytes())
    with ObjectMemory.open(copy, scope="home", durable=False) as mem:
        mem.query("find something to drink from")  # the search index is built before
        mem.forget(ID["cup"], reason="test")
        for q in QUESTIONS:
            assert ID["cup"] not in _ids_in(mem.query(q, here=(1.0, 1.0, 0.5))), q
        assert ids(mem.query("what's on the kitchen table").objects) == [3, 4]
        assert ids(mem.query("find something to drink from").objects) == [9, 15]
        assert mem.query("where is my cup").objects == (mem.get(ID["cup2"]),)


def test_an_expired_anchor_is_not_asked_about(mem: ObjectMemory) -> None:
    table = Detection("table", 0.9, (0.0, 0.0, 0.375), (1.0, 1.0, 0.75))
    mem.observe(0.0, [table, Detection("tray", 0.9, (5.0, 5.0, 0.9), (0.4, 0.3, 0.04))])
    for t in range(1, 8):
        mem.observe(float(t), [table])
    assert mem.query("what's on the tray").anchor.id == 2  # builds the search index
    mem.observe(40.0, [table])  # the tray, seen once, expires
    assert [e.kind.value for e in mem.events(object_id=2)] == ["APPEARED", "EXPIRED"]
    r = mem.query("what's on the tray")
    assert (r.found, r.text) == (False, "I know of no tray.")
