"""The memory over its store: scopes sharing one file, rejections and history (the backend
contract is ``tests/store/``; SQLite's own behaviour ``tests/store/test_sqlite_specific.py``)."""

from __future__ import annotations

from pathlib import Path

import pytest

from locimem import EventKind, ObjectMemory
from locimem.errors import NotFound, ScopeError
from locimem.model import Event, Observation
from tests.helpers import det
from tests.store.scans import fill_two_scopes


def test_scopes_sharing_a_file_never_see_each_other(store_path: Path) -> None:
    ids = fill_two_scopes(store_path)
    assert ids == {"a": [1, 2, 5], "b": [3, 4]}  # file-wide ids: no collision
    with ObjectMemory.open(store_path, scope="home/kitchen", read_only=True) as a, \
            ObjectMemory.open(store_path, scope="office", read_only=True) as b:
        assert [(o.id, o.label) for o in a.objects()] == [(1, "cup"), (2, "cup"), (5, "plate")]
        assert [(o.id, o.label) for o in b.objects()] == [(3, "book"), (4, "book")]
        assert a.now == 7.0 and b.now == 100.0
        assert {e.object_id for e in a.events()} == {1, 2, 5}
        assert {e.object_id for e in b.events()} == {3, 4}
        assert [e.kind for e in b.events(kind="LOST")] == [EventKind.LOST, EventKind.LOST]
        assert a.events(kind="LOST") == []  # b's clock never reaches a
        assert a.events(label="book") == [] and b.events(label="cup") == []
        for oid in (3, 4):
            with pytest.raises(NotFound, match=rf"^no object {oid} in scope 'home/kitchen'$"):
                a.history(oid)
            with pytest.raises(NotFound):
                a.get(oid)
        for oid in (1, 2, 5):
            with pytest.raises(NotFound, match=rf"^no object {oid} in scope 'office'$"):
                b.history(oid)
        assert {r.object_id for r in a.history(1)} == {1}
        assert a.recall("book").found is False
        assert a.recall("book").object_id is None
        assert b.recall("cup").found is False
        assert b.recall("plate").found is False
        assert (a.recall("cup").object_id, a.recall("cup").others) == (1, (2,))
        book = b.recall("book")
        assert (book.object_id, book.status.value, book.others) == (3, "lost", (4,))
        assert a.rejected() == []
        assert [(o.label, o.rejected) for o in b.rejected()] == [("pen", "below_min_confidence")]
        assert a._live.store.scopes() == ["home/kitchen", "office"]
        assert a._live.store.count("objects", "home/kitchen") == 3
        assert b._live.store.count("objects", "office") == 2
        # both rebuild from their own slice of the log
        assert a.rebuild_from_log().snapshot() == a.snapshot()
        assert b.rebuild_from_log().snapshot() == b.snapshot()
    with pytest.raises(ScopeError, match="holds no scope 'nobody'; its scopes: "
                                         "'home/kitchen', 'office'"):
        ObjectMemory.open(store_path, scope="nobody", read_only=True)  # a reader of nothing
    with ObjectMemory.open(store_path, scope="nobody") as empty:  # a writer starts it
        assert empty.objects() == [] and empty.events() == [] and empty.now is None
        assert empty.recall("cup").found is False


def test_rejected_detections_are_recorded_with_their_reason(mem: ObjectMemory) -> None:
    result = mem.observe(0.0, [det("cup", 0.0, 0.0), det("ghost", 1.0, 0.0, conf=0.01),
                               det("mug", 2.0, 0.0, conf=0.05), det("fog", 3.0, 0.0, conf=0.0)])
    # 0.05 is the line, and it is kept — but below new_object_min_confidence (0.5) a detection
    # may only refresh an object, never create one: with nothing there, it is rejected too
    assert result.assignments == (1, None, None, None)
    assert result.rejected == {1: "below_min_confidence", 2: "below_new_object_confidence",
                               3: "below_min_confidence"}
    assert [(e.kind, e.object_id) for e in result.events] == [(EventKind.APPEARED, 1)]
    rejected = mem.rejected()
    assert [(o.index, o.label, o.confidence, o.rejected, o.object_id, o.tier, o.commit)
            for o in rejected] == [
        (1, "ghost", 0.01, "below_min_confidence", None, None, result.commit),
        (2, "mug", 0.05, "below_new_object_confidence", None, None, result.commit),
        (3, "fog", 0.0, "below_min_confidence", None, None, result.commit),
    ]
    assert rejected[0].center == (1.0, 0.0, 0.9)
    assert [o.label for o in mem.rejected(limit=1)] == ["ghost"]
    assert [o.label for o in mem.objects()] == ["cup"]
    assert "ghost" not in {e.label for e in mem.events()}
    assert mem.recall("ghost").found is False
    # a rejection is evidence of nothing: it never enters any object's history
    assert all(r.object_id == 1 for r in mem.history(1))
    assert mem._live.store.count("observations", "test") == 4


def test_history_is_in_seq_order_and_starts_with_appeared(store_path: Path) -> None:
    with ObjectMemory.open(store_path, scope="h") as memory:
        for i in range(3):
            memory.observe(float(i), [det("mug", 0.0, 0.0), det("book", 3.0, 0.0)])
        for i in range(3, 9):
            memory.observe(float(i), [det("cup", 0.0, 0.0), det("book", 3.0, 0.0)])
        memory.observe(9.0, [det("cup", 0.6, 0.0)])  # drift: MOVED
        memory.observe(60.0, [])  # LOST
        memory.observe(70.0, [det("cup", 0.6, 0.05)])  # REACQUIRED
        history = memory.history(1)
        other = memory.history(2)
    seqs = [r.seq for r in history]
    assert seqs == sorted(seqs) and len(set(seqs)) == len(seqs)
    first = history[0]
    assert isinstance(first, Event) and first.kind is EventKind.APPEARED
    assert first.data == {"label": "mug", "center": [0.0, 0.0, 0.9], "size": [0.1, 0.1, 0.1]}
    assert all(r.object_id == 1 for r in history)
    assert not {r.seq for r in other} & set(seqs)
    story = [r.kind.value if isinstance(r, Event) else f"obs:{r.tier}" for r in history]
    assert story == (
        ["APPEARED", "obs:new"] + ["obs:tight"] * 2  # t 0-2: mug
        + ["obs:tight"] * 2 + ["obs:tight", "PROMOTED"]  # t 3-5: cup; 6th sighting; 2.7 = 2.7
        + ["obs:tight", "LABEL_CHANGED"] + ["obs:tight"] * 2  # t 6: cup 3.6 > mug 2.7
        + ["obs:drift", "MOVED"] + ["LOST"] + ["REACQUIRED", "obs:reacquire"]
    )
    assert [type(r) for r in history].count(Observation) == 11
    assert [(r.t, r.label) for r in history if isinstance(r, Event)] == [
        (0.0, "mug"), (5.0, "mug"), (6.0, "cup"), (9.0, "cup"), (60.0, "cup"), (70.0, "cup")]
