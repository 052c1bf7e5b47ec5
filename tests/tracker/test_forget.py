"""Forgetting: the object leaves every read path (live and as-of), the audit trail and the
tombstone say who forgot it and why, and the same thing seen again is suppressed — or, when
configured, revived under its old id with its old evidence back."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from locimem import Detection, EventKind, ObjectMemory, ObjectStatus, TrackerConfig
from locimem.errors import NotFound
from locimem.model import Event, Observation, Tombstone
from locimem.query.reader import MemoryReader
from tests.helpers import det

CONFIG = TrackerConfig(promote_after=2)
CUP_AT = (1.0, 1.0, 0.9)
BOOK_AT = (3.0, 3.0, 0.9)
CUP_FEATURE = np.array([1.0, 0.0, 0.0, 0.0])
LIKE_CUP = np.array([0.95, 0.05, 0.0, 0.0])  # cosine ~0.999 with the cup's embedding
UNLIKE_CUP = np.array([0.0, 1.0, 0.0, 0.0])  # cosine 0


def _setup(memory: ObjectMemory) -> None:
    """Cup #1 (seen as cup, then as mug; with an embedding) and book #2, both confirmed; the
    cup is then forgotten at t=2 by bob for privacy."""
    r0 = memory.observe(0.0, [det("cup", *CUP_AT, conf=0.5, feature=CUP_FEATURE),
                              det("book", *BOOK_AT)])
    r1 = memory.observe(1.0, [det("mug", *CUP_AT, conf=0.25), det("book", *BOOK_AT)])
    assert r0.assignments == r1.assignments == (1, 2)
    assert [o.id for o in memory.tracked()] == [1, 2]
    assert memory.get(1).label_votes == {"cup": 0.5, "mug": 0.25}
    ev = memory.forget(1, actor="bob", reason="privacy", t=2.0)
    assert (ev.kind, ev.object_id, ev.t, ev.label) == (EventKind.FORGOTTEN, 1, 2.0, "cup")
    assert ev.data == {"center": list(CUP_AT), "labels": ["cup", "mug"], "actor": "bob",
                       "reason": "privacy"}


@pytest.fixture
def forgot(store_path: Path) -> Iterator[ObjectMemory]:
    memory = ObjectMemory.open(store_path, scope="f", config=CONFIG)
    _setup(memory)
    try:
        yield memory
    finally:
        memory.close()


def _assert_absent(reader: MemoryReader, oid: int = 1) -> None:
    """The object is on no read path of ``reader`` (a live memory or an as-of view).
    (``snapshot()`` is a raw debugging picture: a view's may still hold it, see the report.)"""
    with pytest.raises(NotFound, match=rf"^no object {oid} in scope 'f'$"):
        reader.get(oid)
    with pytest.raises(NotFound, match=rf"^no object {oid} in scope 'f'$"):
        reader.history(oid)
    assert oid not in [o.id for o in reader.objects()]
    for status in ObjectStatus:
        assert oid not in [o.id for o in reader.objects(status=status)]
    assert reader.objects(status="forgotten") == []
    assert oid not in [o.id for o in reader.objects(label="cup")]
    assert oid not in [o.id for o in reader.tracked()]
    for name in ("cup", "the cup", "mug", "cups"):
        found = reader.recall(name)
        assert not found.found, found
        assert found.object_id is None and found.others == ()
    assert [e for e in reader.events() if e.object_id == oid] == []
    for kwargs in ({"object_id": oid}, {"kind": "APPEARED"}, {"label": "cup"},
                   {"kind": ["FORGOTTEN", "SUPPRESSED", "REVIVED"]},
                   {"since": -1e9, "until": 1e9}, {"limit": 1000}):
        assert [e for e in reader.events(**kwargs) if e.object_id == oid] == [], kwargs
    assert reader.events(object_id=oid) == []
    assert reader.events(label="cup") == []


def test_forgotten_object_is_absent_from_every_live_read_path(forgot: ObjectMemory) -> None:
    _assert_absent(forgot)
    assert list(forgot.snapshot()["objects"]) == [2]
    assert list(forgot.snapshot()["tombstones"]) == [1]
    assert [o.id for o in forgot.objects()] == [2]
    assert [o.id for o in forgot.tracked()] == [2]
    assert [(e.kind, e.object_id) for e in forgot.events()] == [
        (EventKind.APPEARED, 2), (EventKind.PROMOTED, 2)]
    assert forgot.recall("book").object_id == 2


def test_forgotten_object_is_absent_after_reopening(forgot: ObjectMemory,
                                                    store_path: Path) -> None:
    snap = forgot.snapshot()
    forgot.close()
    with ObjectMemory.open(store_path, scope="f", config=CONFIG) as again:
        assert again.snapshot() == snap
        _assert_absent(again)
    with ObjectMemory.open(store_path, scope="f", read_only=True) as reader:
        _assert_absent(reader)


def test_as_of_views_from_before_the_forget_hide_it_too(forgot: ObjectMemory) -> None:
    for t in (0.0, 1.0, 1.5, 2.0, 100.0):
        view = forgot.as_of(t)
        _assert_absent(view)
        assert [o.id for o in view.objects()] == [2]
    clock_now = forgot.audit()[-1].recorded_at
    _assert_absent(forgot.as_of(recorded=clock_now))
    _assert_absent(forgot.as_of(recorded=clock_now - 1e-6))


def test_audit_and_tombstones_say_who_forgot_what(forgot: ObjectMemory) -> None:
    forgets = forgot.audit(kind="forget")
    assert len(forgets) == 1
    entry = forgets[0]
    assert (entry.kind, entry.actor, entry.reason, entry.t) == ("forget", "bob", "privacy", 2.0)
    assert [(e.kind, e.object_id) for e in entry.events] == [(EventKind.FORGOTTEN, 1)]
    assert [(a.kind, a.t) for a in forgot.audit(object_id=1)] == [
        ("scan", 0.0), ("scan", 1.0), ("forget", 2.0)]
    assert [e.kind for a in forgot.audit(object_id=1) for e in a.events] == [
        EventKind.APPEARED, EventKind.PROMOTED, EventKind.FORGOTTEN]
    assert forgot.tombstones() == [Tombstone(
        object_id=1, label="cup", labels=("cup", "mug"), center=CUP_AT, size=(0.1, 0.1, 0.1),
        forgotten_at=2.0, reason="privacy", actor="bob", suppressed=0, last_suppressed=None)]
    assert forgot.as_of(1.0).tombstones() == []
    assert forgot.as_of(2.0).tombstones() == forgot.tombstones()


def test_forget_without_a_reason_is_still_recorded(mem: ObjectMemory) -> None:
    mem.observe(0.0, [det("cup", *CUP_AT)])
    ev = mem.forget(1)
    assert ev.data == {"center": list(CUP_AT), "labels": ["cup"], "actor": "operator",
                       "reason": None}
    (entry,) = mem.audit(kind="forget")
    assert (entry.actor, entry.reason, entry.t) == ("operator", None, 0.0)
    assert [t.object_id for t in mem.tombstones()] == [1]


# -- the same thing again ---------------------------------------------------------------------
def _suppressed_once(result: Any, det_: Any, with_event: bool) -> None:
    assert result.assignments == (None,)
    assert result.rejected == {0: "forgotten"}
    # the book (#2) may be LOST meanwhile; nothing else happens in these scans
    assert {(e.kind, e.object_id) for e in result.events if e.object_id != 1} <= {
        (EventKind.LOST, 2)}
    mine = tuple(e for e in result.events if e.object_id == 1)
    if with_event:
        (ev,) = mine
        assert (ev.kind, ev.object_id, ev.label) == (EventKind.SUPPRESSED, 1, "cup")
        assert ev.data == {"forgotten_at": 2.0, "label": det_.label,
                           "center": list(det_.center)}
    else:
        assert mine == ()


def test_the_same_thing_seen_again_is_suppressed(forgot: ObjectMemory,
                                                 store_path: Path) -> None:
    sightings = [
        (3.0, det("cup", 1.05, 1.0), True),  # same place and label: SUPPRESSED
        (4.0, det("mug", 1.0, 1.1), False),  # another label it was seen under, within 60 s
        (5.0, det("glass", 1.0, 0.95, feature=LIKE_CUP), False),  # similar embedding
        (60.0, det("cup", 1.3, 1.0), False),  # 55 s after the last suppression
        (121.0, det("cup", 1.0, 1.0), True),  # > 60 s since the last: a new SUPPRESSED
        (121.5, det("cup", 1.0, 1.0), False),
    ]
    for t, d, with_event in sightings:
        result = forgot.observe(t, [d])
        _suppressed_once(result, d, with_event)

    assert [o.id for o in forgot.objects()] == [2]  # no new identity for any of them
    suppressed = forgot.rejected(key="tomb:1")
    assert [(o.t, o.label, o.rejected, o.object_id) for o in suppressed] == [
        (t, d.label, "forgotten", None) for t, d, _ in sightings]
    assert forgot.rejected(reason="forgotten") == suppressed
    assert forgot.rejected(key="tomb:2") == []
    assert forgot.rejections() == []  # counted on the tombstone, not as a rejection key
    (tomb,) = forgot.tombstones()
    assert (tomb.suppressed, tomb.last_suppressed) == (6, 121.5)
    # SUPPRESSED events are kept from the events() read path with the object ...
    assert forgot.events(kind="SUPPRESSED") == []
    # ... but the audit trail has exactly the two
    supp = [e for a in forgot.audit() for e in a.events if e.kind is EventKind.SUPPRESSED]
    assert [e.t for e in supp] == [3.0, 121.0]
    _assert_absent(forgot)

    snap = forgot.snapshot()
    assert snap == forgot.rebuild_from_log().snapshot()
    forgot.close()
    with ObjectMemory.open(store_path, scope="f", config=CONFIG) as again:
        assert again.snapshot() == snap
        assert again.rebuild_from_log().snapshot() == snap
        # suppression resumes where it left off after a reopen: no new event within 60 s
        _suppressed_once(again.observe(122.0, [det("cup", *CUP_AT)]), None, False)
        assert again.tombstones()[0].suppressed == 7


def test_several_sightings_in_one_scan_share_one_event(forgot: ObjectMemory) -> None:
    d1, d2 = det("cup", 1.0, 1.0), det("mug", 1.1, 1.0)
    result = forgot.observe(3.0, [d1, d2])
    assert result.assignments == (None, None)
    assert result.rejected == {0: "forgotten", 1: "forgotten"}
    assert [e.kind for e in result.events] == [EventKind.SUPPRESSED]
    assert forgot.tombstones()[0].suppressed == 2


def test_something_different_at_the_same_place_is_a_new_object(forgot: ObjectMemory) -> None:
    result = forgot.observe(3.0, [det("plate", *CUP_AT)])
    assert result.assignments == (3,)
    assert result.rejected == {}
    assert [(e.kind, e.object_id) for e in result.events] == [(EventKind.APPEARED, 3)]
    assert forgot.tombstones()[0].suppressed == 0
    assert forgot.rejected() == []
    assert forgot.get(3).label == "plate"


def test_another_label_with_an_unlike_embedding_is_a_new_object(forgot: ObjectMemory) -> None:
    result = forgot.observe(3.0, [det("glass", *CUP_AT, feature=UNLIKE_CUP)])
    assert result.assignments == (3,)
    assert [e.kind for e in result.events] == [EventKind.APPEARED]
    assert forgot.tombstones()[0].suppressed == 0


def test_same_label_beyond_the_drift_radius_is_a_new_object(forgot: ObjectMemory) -> None:
    far = (CUP_AT[0] + 1.01, CUP_AT[1], CUP_AT[2])  # just outside drift_radius_m = 1.0
    result = forgot.observe(3.0, [det("cup", *far)])
    assert result.assignments == (3,)
    assert [(e.kind, e.object_id) for e in result.events] == [(EventKind.APPEARED, 3)]
    assert forgot.tombstones()[0].suppressed == 0
    # just inside is suppressed
    near = (CUP_AT[0], CUP_AT[1] - 0.99, CUP_AT[2])
    assert forgot.observe(4.0, [det("cup", *near)]).rejected == {0: "forgotten"}


def test_forgetting_is_not_reversed_by_a_later_same_id(forgot: ObjectMemory) -> None:
    """New identities never reuse the forgotten id."""
    result = forgot.observe(3.0, [det("lamp", 8.0, 8.0)])
    assert result.assignments == (3,)


# -- revival ----------------------------------------------------------------------------------
def test_revive_after_three_sightings_restores_the_same_id(store_path: Path) -> None:
    config = TrackerConfig(promote_after=2, revive_after=3)
    with ObjectMemory.open(store_path, scope="f", config=config) as memory:
        _setup(memory)
        before_forget = memory.as_of(1.0).snapshot()["tombstones"]
        assert before_forget == {}
        r3 = memory.observe(3.0, [det("cup", 1.0, 1.0, conf=0.5)])
        r4 = memory.observe(4.0, [det("mug", 1.0, 1.0, conf=0.5)])
        assert (r3.assignments, r4.assignments) == ((None,), (None,))
        assert [e.kind for e in r3.events] == [EventKind.SUPPRESSED]
        assert r4.events == ()
        _assert_absent(memory)

        r5 = memory.observe(5.0, [det("cup", 1.0, 1.0, conf=0.5)])
        assert r5.assignments == (1,)
        assert r5.rejected == {}
        assert [(e.kind, e.object_id) for e in r5.events] == [(EventKind.REVIVED, 1)]
        assert r5.events[0].data == {"suppressed": 2, "forgotten_at": 2.0}
        assert memory.tombstones() == []

        obj = memory.get(1)  # readable again, with its old evidence plus the reviving one
        assert obj.label == "cup"
        assert obj.label_votes == {"cup": 1.0, "mug": 0.25}
        assert obj.n_detections == 3
        assert obj.first_seen == 0.0 and obj.last_seen == 5.0
        assert [o.id for o in memory.objects()] == [1, 2]
        assert memory.recall("cup").object_id == 1
        story = memory.history(1)
        assert [(type(r).__name__, r.kind.value if isinstance(r, Event) else r.tier, r.t)
                for r in story] == [
            ("Event", "APPEARED", 0.0), ("Observation", "new", 0.0),
            ("Observation", "tight", 1.0), ("Event", "PROMOTED", 1.0),
            ("Event", "FORGOTTEN", 2.0), ("Event", "SUPPRESSED", 3.0), ("Event", "REVIVED", 5.0),
            ("Observation", "revive", 5.0)]
        assert [e.kind for e in memory.events(object_id=1)] == [
            EventKind.APPEARED, EventKind.PROMOTED, EventKind.FORGOTTEN, EventKind.SUPPRESSED,
            EventKind.REVIVED]
        # the suppressed sightings stay findable as rejected evidence
        assert [o.t for o in memory.rejected(key="tomb:1")] == [3.0, 4.0]
        assert all(isinstance(o, Observation) for o in memory.rejected(key="tomb:1"))
        # the as-of view of before the forget shows it again, now that it is back
        assert memory.as_of(1.0).get(1).label_votes == {"cup": 0.5, "mug": 0.25}
        # ... and the view of while it was forgotten does not have it
        with pytest.raises(NotFound):
            memory.as_of(4.0).get(1)
        assert [t.object_id for t in memory.as_of(4.0).tombstones()] == [1]
        # a further sighting is an ordinary match
        r6 = memory.observe(6.0, [det("cup", 1.0, 1.0)])
        assert r6.assignments == (1,) and r6.events == ()
        snap = memory.snapshot()
        assert memory.rebuild_from_log().snapshot() == snap
    with ObjectMemory.open(store_path, scope="f", config=config) as again:
        assert again.snapshot() == snap
        assert again.rebuild_from_log().snapshot() == snap
        assert again.get(1).n_detections == 4


def test_forget_revive_forget_again(store_path: Path) -> None:
    config = TrackerConfig(promote_after=2, revive_after=1)
    with ObjectMemory.open(store_path, scope="f", config=config) as memory:
        _setup(memory)
        r = memory.observe(3.0, [det("cup", *CUP_AT)])  # revive_after=1: revived at once
        assert r.assignments == (1,)
        assert [e.kind for e in r.events] == [EventKind.REVIVED]
        memory.forget(1, actor="carol", reason="again", t=4.0)
        (tomb,) = memory.tombstones()
        assert (tomb.actor, tomb.reason, tomb.forgotten_at, tomb.suppressed) == (
            "carol", "again", 4.0, 0)
        _assert_absent(memory)
        assert [a.actor for a in memory.audit(kind="forget")] == ["bob", "carol"]
        snap = memory.snapshot()
        assert memory.rebuild_from_log().snapshot() == snap
    with ObjectMemory.open(store_path, scope="f", config=config) as again:
        assert again.snapshot() == snap
        _assert_absent(again)


def test_replay_equality_after_forget_suppress_and_revive(store_path: Path) -> None:
    """The same story, checked after every step: live == replayed log == reopened store."""
    config = TrackerConfig(promote_after=2, revive_after=4)
    steps: list[Any] = [
        lambda m: m.observe(0.0, [det("cup", *CUP_AT, feature=CUP_FEATURE),
                                  det("book", *BOOK_AT), det("dust", 2, 2, conf=0.01)]),
        lambda m: m.observe(1.0, [det("cup", *CUP_AT), det("book", *BOOK_AT)]),
        lambda m: m.forget(1, reason="privacy", t=1.5),
        lambda m: m.forget(2, reason="clutter", t=1.5),
        lambda m: m.observe(2.0, [det("cup", *CUP_AT), det("book", *BOOK_AT)]),
        lambda m: m.observe(3.0, [det("glass", *CUP_AT, feature=LIKE_CUP)]),
        lambda m: m.observe(80.0, [det("cup", *CUP_AT), det("dust", 2, 2, conf=0.01)]),
        lambda m: m.observe(81.0, [det("cup", *CUP_AT), det("book", *BOOK_AT)]),
        lambda m: m.relabel(1, "vase", t=82.0),
        lambda m: m.observe(83.0, [det("vase", *CUP_AT)]),
    ]
    snaps = []
    for step in steps:
        with ObjectMemory.open(store_path, scope="f", config=config) as memory:
            step(memory)
            snap = memory.snapshot()
            assert memory.rebuild_from_log().snapshot() == snap
            snaps.append(snap)
        with ObjectMemory.open(store_path, scope="f", config=config) as again:
            assert again.snapshot() == snap
    final = snaps[-1]
    assert sorted(final["objects"]) == [1]
    assert sorted(final["tombstones"]) == [2]
    assert final["tombstones"][2]["suppressed"] == 2
    assert final["objects"][1]["label"] == "vase"


# -- the spatial, relation and search read paths ------------------------------------------------
TABLE = Detection("table", 0.9, (0.6, 0.4, 0.375), (1.2, 0.8, 0.75))
CUP_ON_TABLE = Detection("cup", 0.9, (0.5, 0.4, 0.8), (0.08, 0.08, 0.1))
ALL = ["confirmed", "tentative", "doubted", "lost"]


def _absent_from_space_and_search(reader: MemoryReader, oid: int, at: tuple[float, ...]) -> None:
    def ids(objs: list[Any]) -> list[int]:
        return [o.id for o in objs]

    assert oid not in ids(reader.near(at, 10.0, status=ALL))
    assert oid not in ids(reader.near(at, 10.0, label="cup", status=ALL))
    assert oid not in ids(reader.nearest(at, 10, status=ALL))
    assert oid not in ids(reader.within((-10, -10, -10), (10, 10, 10), status=ALL))
    assert oid not in ids(reader.recent(100))
    assert oid not in ids(reader.stale(1e9, status=ALL))
    assert reader.last_seen("cup") is None
    assert oid not in [c.object_id for c in reader.changes_since(-1e9)]
    assert oid not in [f.object.id for f in reader.find("cup", status=ALL)]
    assert oid not in [f.object.id for f in reader.find("something to drink from", status=ALL)]
    assert oid not in ids(reader.anchors())
    for when in (0.0, 1.0, 1e9):
        assert reader.where_was(oid, when).found is False
        assert reader.where_was("cup", when).found is False
    for call in (reader.describe, reader.relations, lambda i: reader.related(i, "on")):
        with pytest.raises(NotFound):
            call(oid)
    for other in ids(reader.objects()):
        assert all(oid not in (r.subject, r.object) for r in reader.relations(other))
        for relation in ("on", "in", "under", "near", "next_to", "contains"):
            assert oid not in ids(reader.related(other, relation))
        assert "cup" not in reader.describe(other)


def test_forgotten_object_leaves_spatial_relation_and_search_paths(store_path: Path) -> None:
    with ObjectMemory.open(store_path, scope="f", config=CONFIG) as memory:
        for t in (0.0, 1.0):
            assert memory.observe(t, [TABLE, CUP_ON_TABLE]).assignments == (1, 2)
        assert next((r.subject, r.relation, r.object) for r in memory.relations(2)) == (
            2, "on", 1)
        assert [o.id for o in memory.related(1, "on")] == [2]
        assert "on the table (#1)" in memory.describe(2)
        before = memory.as_of(1.0)  # a view taken before the forget
        memory.set_attributes(2, {"anchor": True}, t=1.5)
        memory.forget(2, reason="privacy", t=2.0)
        for reader in (memory, before, memory.as_of(1.0), memory.as_of(1.5),
                       memory.as_of(2.0)):
            _assert_absent(reader, 2)
            _absent_from_space_and_search(reader, 2, CUP_ON_TABLE.center)
        assert 2 not in memory.snapshot()["objects"]
    with ObjectMemory.open(store_path, scope="f", config=CONFIG, read_only=True) as again:
        _absent_from_space_and_search(again, 2, CUP_ON_TABLE.center)
