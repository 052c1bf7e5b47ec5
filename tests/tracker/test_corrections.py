"""Corrections: relabel keeps the label mass it overrules, move re-places an object without a
phantom, set_attributes validates, and every correction is one CORRECTED event in the record —
or, when refused, writes nothing at all."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from locimem import EventKind, ObjectMemory, TrackerConfig
from locimem.errors import InvalidInput, NotFound
from locimem.model import Event, Observation
from tests.helpers import det

TABLES = ("commits", "observations", "events", "objects", "tombstones", "rejection_keys",
          "checkpoints")


def _all_rows(memory: ObjectMemory) -> dict[str, list[tuple[Any, ...]]]:
    """Every row of every table of the file (all scopes), for "nothing was written" checks."""
    conn = memory._live.store.conn
    return {t: conn.execute(f"SELECT * FROM {t} ORDER BY 1, 2").fetchall() for t in TABLES}


def _replays(memory: ObjectMemory) -> None:
    assert memory.snapshot() == memory.rebuild_from_log().snapshot()


def _cup_seen_three_times(memory: ObjectMemory) -> int:
    """A cup seen at t=0, 1, 2 with confidences 0.5, 0.25, 0.75 (label mass exactly 1.5)."""
    ids = set()
    for t, conf in ((0.0, 0.5), (1.0, 0.25), (2.0, 0.75)):
        ids.update(memory.observe(t, [det("cup", 1.0, 1.0, conf=conf)]).assignments)
    assert ids == {1}
    assert memory.get(1).label_votes == {"cup": 1.5}
    return 1


# -- relabel ----------------------------------------------------------------------------------
def test_relabel_keeps_the_detector_mass_and_pins_the_label(mem: ObjectMemory) -> None:
    oid = _cup_seen_three_times(mem)
    ev = mem.relabel(oid, "  Vase ", actor="alice", reason="it is a vase", t=3.0)

    assert isinstance(ev, Event)
    assert (ev.kind, ev.object_id, ev.t, ev.label) == (EventKind.CORRECTED, oid, 3.0, "vase")
    assert ev.data == {"field": "label", "from": "cup", "to": "vase", "pin": True, "mass": None,
                       "label_after": "vase", "actor": "alice", "reason": "it is a vase"}
    obj = mem.get(oid)
    assert obj.label == "vase"
    assert obj.corrected_label == "vase"
    assert obj.label_votes == {"cup": 1.5}  # the mass it overrules is kept, nothing added
    assert obj.n_detections == 3
    assert mem.now == 3.0
    assert mem.events(kind="CORRECTED") == [ev]

    # later detections of the old label add their mass but never overturn the person's label
    for i in range(8):
        result = mem.observe(4.0 + i, [det("cup", 1.0, 1.0, conf=0.75)])
        assert result.assignments == (oid,)
        assert all(e.kind is not EventKind.LABEL_CHANGED for e in result.events)
    result = mem.observe(12.0, [det("mug", 1.0, 1.0, conf=1.0)])
    assert result.assignments == (oid,)
    obj = mem.get(oid)
    assert obj.label == "vase"
    assert obj.label_votes == {"cup": 7.5, "mug": 1.0}  # 1.5 + 8 * 0.75, then the mug
    assert mem.events(kind="LABEL_CHANGED") == []
    assert [e.kind for e in mem.events()] == [EventKind.APPEARED, EventKind.CORRECTED,
                                             EventKind.PROMOTED]
    assert mem.recall("vase").object_id == oid
    _replays(mem)


def test_relabel_is_one_correction_in_the_audit(mem: ObjectMemory) -> None:
    oid = _cup_seen_three_times(mem)
    ev = mem.relabel(oid, "vase", actor="alice", reason="it is a vase", t=3.5)
    entries = mem.audit(kind="correction")
    assert len(entries) == 1
    entry = entries[0]
    assert (entry.kind, entry.actor, entry.reason, entry.t) == (
        "correction", "alice", "it is a vase", 3.5)
    assert entry.events == (ev,)
    assert [e.kind for e in mem.events(object_id=oid)] == [EventKind.APPEARED,
                                                           EventKind.CORRECTED]


@pytest.mark.parametrize("weight", [1.0, 0.5])
def test_weighted_human_label_is_evidence_and_the_vote_decides(weight: float) -> None:
    config = TrackerConfig(human_label_weight=weight)
    with ObjectMemory.open(":memory:", scope="w", config=config) as memory:
        oid = _cup_seen_three_times(memory)
        # one correction is not enough to outvote 1.5 of cup
        first = memory.relabel(oid, "vase", actor="alice", t=3.0)
        assert first.data == {"field": "label", "from": "cup", "to": "vase", "pin": False,
                              "mass": weight, "label_after": "cup", "actor": "alice",
                              "reason": None}
        assert first.label == "cup"
        obj = memory.get(oid)
        assert (obj.label, obj.corrected_label) == ("cup", None)
        assert obj.label_votes == {"cup": 1.5, "vase": weight}

        # more corrections until the human mass wins (exact sums of the weight)
        n = 1
        while n * weight <= 1.5:
            n += 1
            ev = memory.relabel(oid, "vase", actor="bob", t=3.0 + n)
        assert ev.data["label_after"] == "vase"
        obj = memory.get(oid)
        assert obj.label == "vase"
        assert obj.label_votes == {"vase": n * weight, "cup": 1.5}
        assert [e.data["label_after"] for e in memory.events(kind="CORRECTED")] == (
            ["cup"] * (n - 1) + ["vase"])

        # the detector keeps voting: cup takes the label back once its mass is strictly larger
        t = 10.0
        while obj.label_votes["cup"] + 0.25 <= n * weight:
            result = memory.observe(t, [det("cup", 1.0, 1.0, conf=0.25)])
            assert result.assignments == (oid,)
            assert all(e.kind is not EventKind.LABEL_CHANGED for e in result.events)
            obj = memory.get(oid)
            assert obj.label == "vase"  # a tie keeps the current label
            t += 1.0
        result = memory.observe(t, [det("cup", 1.0, 1.0, conf=0.25)])
        changed = [e for e in result.events if e.kind is EventKind.LABEL_CHANGED]
        assert len(changed) == 1
        assert changed[0].data == {"from": "vase", "to": "cup",
                                   "votes": {"cup": n * weight + 0.25, "vase": n * weight}}
        assert memory.get(oid).label == "cup"
        _replays(memory)


# -- move -------------------------------------------------------------------------------------
def test_move_sets_centre_and_place_with_no_phantom(store_path: Path) -> None:
    old, new = (1.0, 1.0, 0.9), (3.0, 1.0, 0.9)
    with ObjectMemory.open(store_path, scope="m") as memory:
        oid = _cup_seen_three_times(memory)
        assert memory.observe(2.5, [det("book", 5.0, 5.0)]).assignments == (2,)
        obj_before = memory.get(oid)
        ev = memory.move(oid, [3, 1, 0.9], actor="carol", reason="in the drawer now", t=4.0)
        assert (ev.kind, ev.object_id, ev.t, ev.label) == (EventKind.CORRECTED, oid, 4.0, "cup")
        assert ev.data == {"field": "center", "from": list(old), "to": list(new),
                           "distance_m": 2.0, "actor": "carol", "reason": "in the drawer now",
                           "size": list(obj_before.size)}
        obj = memory.get(oid)
        assert obj.center == new
        assert obj.label_votes == {"cup": 1.5}
        assert obj.n_detections == 3
        assert memory.snapshot()["objects"][oid]["place"] == list(new)
        assert [(o.id, o.center) for o in memory.objects()] == [(oid, new), (2, (5.0, 5.0, 0.9))]
        snap = memory.snapshot()
        _replays(memory)

    with ObjectMemory.open(store_path, scope="m") as memory:
        assert memory.snapshot() == snap
        # nothing is left at the old place: something else seen there is a new object ...
        result = memory.observe(5.0, [det("plate", *old)])
        assert result.assignments == (3,)
        assert [e.kind for e in result.events] == [EventKind.APPEARED]
        # ... and a sighting at the new place is the same cup, with no MOVED event
        result = memory.observe(6.0, [det("cup", 3.05, 1.0)])
        assert result.assignments == (oid,)
        assert result.events == ()
        near_old = [o.id for o in memory.objects() if o.distance_to(old) <= 1.0]
        assert near_old == [3]
        assert memory.get(oid).n_detections == 4
        _replays(memory)


# -- attributes -------------------------------------------------------------------------------
def test_set_attributes_sets_and_removes(mem: ObjectMemory) -> None:
    oid = _cup_seen_three_times(mem)
    first = mem.set_attributes(oid, {"color": " red ", "mobile": True, "weight_kg": 0.25,
                                     "count": 3}, actor="alice", t=3.0)
    assert first.data == {"field": "attributes",
                          "set": {"color": "red", "count": 3, "mobile": True, "weight_kg": 0.25},
                          "removed": [], "before": {"color": None, "count": None,
                                                    "mobile": None, "weight_kg": None},
                          "actor": "alice", "reason": None}
    assert mem.get(oid).attributes == {"color": "red", "mobile": True, "weight_kg": 0.25,
                                       "count": 3}
    second = mem.set_attributes(oid, {"color": "blue"}, remove=["mobile", "never_set"],
                                reason="repainted", t=4.0)
    assert second.data == {"field": "attributes", "set": {"color": "blue"},
                           "removed": ["mobile", "never_set"],
                           "before": {"color": "red", "mobile": True, "never_set": None},
                           "actor": "operator", "reason": "repainted"}
    assert mem.get(oid).attributes == {"color": "blue", "weight_kg": 0.25, "count": 3}
    third = mem.set_attributes(oid, remove=("count",), t=4.0)
    assert third.data["set"] == {} and third.data["removed"] == ["count"]
    assert mem.get(oid).attributes == {"color": "blue", "weight_kg": 0.25}
    # 32 keys is the limit, and it is allowed
    mem.set_attributes(oid, {f"k{i}": i for i in range(32)}, t=5.0)
    assert len(mem.get(oid).attributes) == 34
    assert [e.data["field"] for e in mem.events(kind="CORRECTED")] == ["attributes"] * 4
    _replays(mem)


BAD_ATTRIBUTES: list[tuple[dict[str, Any], str]] = [
    ({"values": ["color", "red"]}, r"^attributes must be a dict"),
    ({"values": "red"}, r"^attributes must be a dict"),
    ({"values": {"color": ["red"]}}, r"must be a string, number or boolean"),
    ({"values": {"color": None}}, r"must be a string, number or boolean"),
    ({"values": {"color": {"r": 1}}}, r"must be a string, number or boolean"),
    ({"values": {"color": b"red"}}, r"must be a string, number or boolean"),
    ({"values": {"w": float("nan")}}, r"must be a finite number"),
    ({"values": {"w": float("inf")}}, r"must be a finite number"),
    ({"values": {"": "x"}}, r"attribute name must not be empty"),
    ({"values": {1: "x"}}, r"attribute name must be a string"),
    ({"values": {"k" * 65: "x"}}, r"attribute name must be at most 64 characters"),
    ({"values": {"c": "x" * 201}}, r"at most 200 characters"),
    ({"values": {"c": "a\x00b"}}, r"control characters"),
    ({"values": {f"k{i}": i for i in range(33)}}, r"^at most 32 attributes at a time, got 33$"),
    ({}, r"needs values to set or names to remove"),
    ({"values": {}, "remove": []}, r"needs values to set or names to remove"),
    ({"remove": "color"}, r"^remove must be a list of attribute names$"),
    ({"remove": 5}, r"^remove must be a list of attribute names$"),
    ({"remove": [""]}, r"attribute name must not be empty"),
    ({"values": {"c": "x"}, "actor": ""}, r"actor must not be empty"),
    ({"values": {"c": "x"}, "reason": "r" * 1001}, r"reason must be at most 1000 characters"),
]


@pytest.mark.parametrize(("kwargs", "message"), BAD_ATTRIBUTES,
                         ids=[f"bad{i}" for i in range(len(BAD_ATTRIBUTES))])
def test_set_attributes_rejects_bad_input_and_writes_nothing(
        mem: ObjectMemory, kwargs: dict[str, Any], message: str) -> None:
    oid = _cup_seen_three_times(mem)
    mem.set_attributes(oid, {"color": "red"}, t=2.0)
    before, snap = _all_rows(mem), mem.snapshot()
    with pytest.raises(InvalidInput, match=message):
        mem.set_attributes(oid, **kwargs)
    assert _all_rows(mem) == before
    assert mem.snapshot() == snap
    assert mem.get(oid).attributes == {"color": "red"}


# -- history ----------------------------------------------------------------------------------
def test_history_lists_evidence_and_corrections_in_seq_order(mem: ObjectMemory) -> None:
    oid = _cup_seen_three_times(mem)
    mem.relabel(oid, "vase", t=3.0)
    mem.observe(4.0, [det("cup", 1.0, 1.0)])
    mem.move(oid, (2.0, 2.0, 0.9), t=5.0)
    mem.set_attributes(oid, {"color": "red"}, t=5.0)
    mem.observe(6.0, [det("cup", 2.0, 2.0), det("book", 4.0, 4.0)])
    story = mem.history(oid)
    assert [r.seq for r in story] == sorted(r.seq for r in story)
    assert len({r.seq for r in story}) == len(story)
    shape = [(type(r).__name__, r.kind.value if isinstance(r, Event) else r.tier, r.t)
             for r in story]
    assert shape == [
        ("Event", "APPEARED", 0.0), ("Observation", "new", 0.0),
        ("Observation", "tight", 1.0), ("Observation", "tight", 2.0),
        ("Event", "CORRECTED", 3.0), ("Observation", "tight", 4.0),
        ("Event", "CORRECTED", 5.0), ("Event", "CORRECTED", 5.0),
        ("Observation", "tight", 6.0),
    ]
    corrected = [r.data["field"] for r in story
                 if isinstance(r, Event) and r.kind is EventKind.CORRECTED]
    assert corrected == ["label", "center", "attributes"]
    assert all(r.object_id == oid for r in story)
    assert not any(isinstance(r, Observation) and r.label == "book" for r in story)


# -- refused corrections write nothing --------------------------------------------------------
MUTATORS: dict[str, Callable[..., Any]] = {
    "relabel": lambda m, oid, **kw: m.relabel(oid, "vase", **kw),
    "move": lambda m, oid, **kw: m.move(oid, (2.0, 2.0, 0.9), **kw),
    "set_attributes": lambda m, oid, **kw: m.set_attributes(oid, {"color": "red"}, **kw),
    "forget": lambda m, oid, **kw: m.forget(oid, **kw),
}


@pytest.mark.parametrize("name", list(MUTATORS))
def test_correction_before_the_latest_scan_is_refused(mem: ObjectMemory, name: str) -> None:
    oid = _cup_seen_three_times(mem)
    before, snap = _all_rows(mem), mem.snapshot()
    with pytest.raises(InvalidInput, match=r"^t=1\.5 is before the latest commit \(t=2\.0\)"):
        MUTATORS[name](mem, oid, t=1.5)
    for bad in (float("nan"), float("inf"), "3"):
        with pytest.raises(InvalidInput, match=r"^t must be a finite number"):
            MUTATORS[name](mem, oid, t=bad)
    assert _all_rows(mem) == before
    assert mem.snapshot() == snap
    # at the latest time (the default) it is accepted: exactly one commit and one event
    ev = MUTATORS[name](mem, oid)
    assert ev.t == 2.0
    after = _all_rows(mem)
    assert len(after["commits"]) == len(before["commits"]) + 1
    assert len(after["events"]) == len(before["events"]) + 1
    assert after["observations"] == before["observations"]


@pytest.mark.parametrize("name", list(MUTATORS))
def test_correction_of_an_unknown_id_is_not_found(mem: ObjectMemory, name: str) -> None:
    _cup_seen_three_times(mem)
    before, snap = _all_rows(mem), mem.snapshot()
    for oid in (2, 0, -1, 10**12):
        with pytest.raises(NotFound, match=rf"^no object {oid} in scope 'test'$"):
            MUTATORS[name](mem, oid, t=5.0)
    for oid in ("1", 1.0, True, None):
        with pytest.raises(InvalidInput, match=r"^object_id must be an integer"):
            MUTATORS[name](mem, oid, t=5.0)
    assert _all_rows(mem) == before
    assert mem.snapshot() == snap
    assert mem.now == 2.0


@pytest.mark.parametrize("name", list(MUTATORS))
def test_correction_of_a_forgotten_id_is_not_found(mem: ObjectMemory, name: str) -> None:
    oid = _cup_seen_three_times(mem)
    mem.forget(oid, t=3.0)
    before = _all_rows(mem)
    with pytest.raises(NotFound, match=r"^no object 1 in scope 'test'$"):
        MUTATORS[name](mem, oid, t=4.0)
    assert _all_rows(mem) == before


def test_bad_label_centre_actor_reason_write_nothing(mem: ObjectMemory) -> None:
    oid = _cup_seen_three_times(mem)
    before = _all_rows(mem)
    cases: list[tuple[Callable[[], Any], str]] = [
        (lambda: mem.relabel(oid, ""), r"^label must not be empty$"),
        (lambda: mem.relabel(oid, 5), r"^label must be a string"),  # type: ignore[arg-type]
        (lambda: mem.relabel(oid, "vase", actor=""), r"^actor must not be empty$"),
        (lambda: mem.relabel(oid, "vase", actor="a" * 101), r"^actor must be at most 100"),
        (lambda: mem.relabel(oid, "vase", reason="x\x07"), r"control characters"),
        (lambda: mem.move(oid, (1.0, 2.0)), r"^center must have 3 numbers, got 2$"),
        (lambda: mem.move(oid, (1.0, float("nan"), 0.0)), r"^center\[1\] must be a finite"),
        (lambda: mem.forget(oid, actor=None), r"^actor must be a string"),  # type: ignore
    ]
    for call, message in cases:
        with pytest.raises(InvalidInput, match=message):
            call()
    assert _all_rows(mem) == before


def test_a_correction_in_the_future_advances_time(mem: ObjectMemory) -> None:
    oid = _cup_seen_three_times(mem)
    mem.relabel(oid, "vase", t=10.0)
    assert mem.now == 10.0
    before = _all_rows(mem)
    with pytest.raises(InvalidInput, match=r"^t=9\.0 is before the latest scan \(t=10\.0\)"):
        mem.observe(9.0, [det("cup", 1.0, 1.0)])
    assert _all_rows(mem) == before
    assert mem.observe(10.0, [det("cup", 1.0, 1.0)]).assignments == (oid,)
    _replays(mem)
