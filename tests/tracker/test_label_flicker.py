"""Identity under a flickering detector: label votes, label changes, neighbours and drift."""

from __future__ import annotations

import math
import random

from locimem import EventKind, ObjectMemory
from tests.helpers import det

FLICKER = ("cup", "mug", "cup", "glass", "cup")  # repeated: mostly cup


def _kinds(memory: ObjectMemory, oid: int) -> list[str]:
    return [e.kind.value for e in memory.events(object_id=oid)]


def test_flickering_label_keeps_one_id_and_votes_cup(mem: ObjectMemory) -> None:
    rng = random.Random(7)
    given: dict[str, list[float]] = {"cup": [], "mug": [], "glass": []}
    ids = set()
    for i in range(30):
        label = FLICKER[i % len(FLICKER)]
        conf = round(rng.uniform(0.55, 0.95), 3)
        given[label].append(conf)
        noise = [rng.gauss(0.0, 0.01) for _ in range(3)]
        result = mem.observe(float(i), [det(label, 1.0 + noise[0], 2.0 + noise[1],
                                            0.8 + noise[2], conf=conf)])
        assert result.rejected == {}
        ids.update(result.assignments)
    assert ids == {1}
    (obj,) = mem.objects()
    assert obj.id == 1
    assert obj.label == "cup"
    assert obj.n_detections == 30
    assert [len(given[k]) for k in ("cup", "mug", "glass")] == [18, 6, 6]
    # masses are the confidences summed in the order they were given (exactly)
    expected = {label: sum(confs) for label, confs in given.items()}
    assert obj.label_votes == expected
    assert list(obj.label_votes) == sorted(expected, key=lambda k: (-expected[k], k))
    assert set(obj.label_votes) == {"cup", "mug", "glass"}
    # the voted label changed exactly when the running vote's leader changed
    lead, changes = None, []
    mass = {"cup": 0.0, "mug": 0.0, "glass": 0.0}
    seen = {"cup": 0, "mug": 0, "glass": 0}
    for i in range(30):
        label = FLICKER[i % len(FLICKER)]
        mass[label] += given[label][seen[label]]
        seen[label] += 1
        top = max(mass.values())
        if lead is None:
            lead = label
        elif mass[lead] != top:
            new = min(k for k, v in mass.items() if v == top)
            changes.append((float(i), lead, new))
            lead = new
    assert lead == "cup"
    got = [(e.t, e.data["from"], e.data["to"]) for e in mem.events(kind="LABEL_CHANGED")]
    assert got == changes
    assert mem.events(kind=["MOVED", "LOST", "REACQUIRED"]) == []
    assert [e.kind.value for e in mem.events(kind="APPEARED")] == ["APPEARED"]
    assert [e.t for e in mem.events(kind="PROMOTED")] == [5.0]


def test_flicker_with_a_steady_leader_never_changes_label(mem: ObjectMemory) -> None:
    for i in range(30):
        label = FLICKER[i % len(FLICKER)]
        conf = 0.8 if label == "cup" else 0.5
        result = mem.observe(float(i), [det(label, 1.0 + 0.002 * (i % 3), 2.0, conf=conf)])
        assert result.assignments == (1,)
        assert [e.kind for e in result.events if e.kind is EventKind.LABEL_CHANGED] == []
    obj = mem.get(1)
    assert obj.label == "cup"
    assert obj.label_votes == {"cup": sum([0.8] * 18), "glass": sum([0.5] * 6),
                               "mug": sum([0.5] * 6)}
    assert mem.events(kind="LABEL_CHANGED") == []
    assert _kinds(mem, 1) == ["APPEARED", "PROMOTED"]


def test_label_changes_once_when_cup_mass_first_exceeds_mug(mem: ObjectMemory) -> None:
    labels = ["mug"] * 3 + ["cup"] * 5
    changed_at = []
    for i, label in enumerate(labels):
        result = mem.observe(float(i), [det(label, 0.5, 0.5, conf=0.9)])
        assert result.assignments == (1,)
        changed_at += [e.t for e in result.events if e.kind is EventKind.LABEL_CHANGED]
        # while masses tie (after the third cup) the current label is kept
        assert mem.get(1).label == ("mug" if i < 6 else "cup")
    mug = 0.9 + 0.9 + 0.9
    cup4 = 0.9 + 0.9 + 0.9 + 0.9
    assert changed_at == [6.0]  # scan 6: cup 3.6 > mug 2.7; scan 5 was a tie (2.7 == 2.7)
    (event,) = mem.events(kind="LABEL_CHANGED")
    assert event.object_id == 1
    assert event.label == "cup"
    assert event.data == {"from": "mug", "to": "cup", "votes": {"cup": cup4, "mug": mug}}
    assert _kinds(mem, 1) == ["APPEARED", "PROMOTED", "LABEL_CHANGED"]
    assert [e.kind.value for e in mem.events(label="mug")] == ["APPEARED", "PROMOTED"]
    assert [e.kind.value for e in mem.events(label="cup")] == ["LABEL_CHANGED"]
    assert mem.get(1).label_votes == {"cup": cup4 + 0.9, "mug": mug}
    assert mem.snapshot() == mem.rebuild_from_log().snapshot()


def test_two_close_objects_in_the_same_scans_stay_two(mem: ObjectMemory) -> None:
    rng = random.Random(3)
    a, b = (1.0, 1.0, 0.8), (1.08, 1.0, 0.8)  # 8 cm apart: inside the 0.2 m tight radius
    assert math.dist(a, b) < mem.config.tight_radius_m
    first = mem.observe(0.0, [det("cup", *a), det("cup", *b)])
    assert first.assignments == (1, 2)
    for i in range(1, 100):
        shown = [(0, a), (1, b)]
        rng.shuffle(shown)  # input order must not matter
        dets = [det("cup", *(c + rng.gauss(0.0, 0.004) for c in p)) for _, p in shown]
        result = mem.observe(i * 0.5, dets)
        got = {which: oid for (which, _), oid in zip(shown, result.assignments, strict=True)}
        assert got == {0: 1, 1: 2}, f"scan {i}"
    objs = mem.objects()
    assert [o.id for o in objs] == [1, 2]
    assert [o.n_detections for o in objs] == [100, 100]
    assert math.dist(objs[0].center, a) < 0.02
    assert math.dist(objs[1].center, b) < 0.02
    assert mem.events(kind=["MOVED", "LABEL_CHANGED", "LOST", "REACQUIRED"]) == []
    assert [(e.kind.value, e.object_id) for e in mem.events() if e.kind.value != "RELATION"] == [
        ("APPEARED", 1), ("APPEARED", 2), ("PROMOTED", 1), ("PROMOTED", 2)]
    # the two cups are recorded as standing next to each other, once
    assert [(e.object_id, e.data["relation"], e.data["object"], e.data["added"])
            for e in mem.events(kind="RELATION")] == [(1, "next_to", 2, True)]


def test_same_label_jump_within_drift_radius_is_a_move(mem: ObjectMemory) -> None:
    for i in range(3):
        assert mem.observe(float(i), [det("cup", 0.0, 0.0)]).assignments == (1,)
    result = mem.observe(3.0, [det("cup", 0.7, 0.0)])
    assert result.assignments == (1,)
    (moved,) = result.events
    assert moved.kind is EventKind.MOVED
    assert moved.object_id == 1
    assert moved.data == {"from": [0.0, 0.0, 0.9], "to": [0.7, 0.0, 0.9],
                          "distance_m": math.dist((0.7, 0.0, 0.9), (0.0, 0.0, 0.9)),
                          "size": [0.1, 0.1, 0.1]}
    obj = mem.get(1)
    assert obj.center == (0.7, 0.0, 0.9)  # a jump beyond the tight radius is taken whole
    assert obj.n_detections == 4
    assert [o.id for o in mem.objects()] == [1]
    last = mem.history(1)[-2]  # the jump's observation, just before its MOVED event
    assert (last.tier, last.weight, last.center) == ("drift", 1.0, (0.7, 0.0, 0.9))
    assert _kinds(mem, 1) == ["APPEARED", "MOVED"]
    # settled at the new place: seeing it there again is no further move
    assert mem.observe(4.0, [det("cup", 0.71, 0.0)]).events == ()
    assert mem.snapshot() == mem.rebuild_from_log().snapshot()


def test_other_label_at_drift_distance_is_a_new_object(mem: ObjectMemory) -> None:
    for i in range(3):
        mem.observe(float(i), [det("cup", 0.0, 0.0)])
    result = mem.observe(3.0, [det("book", 0.7, 0.0)])
    assert result.assignments == (2,)
    assert [(e.kind, e.object_id) for e in result.events] == [(EventKind.APPEARED, 2)]
    cup, book = mem.objects()
    assert (cup.id, cup.label, cup.center, cup.n_detections) == (1, "cup", (0.0, 0.0, 0.9), 3)
    assert (book.id, book.label, book.center, book.n_detections) == (2, "book", (0.7, 0.0, 0.9), 1)
    assert mem.events(kind="MOVED") == []
    assert cup.label_votes == {"cup": 0.9 + 0.9 + 0.9}
    assert book.label_votes == {"book": 0.9}
