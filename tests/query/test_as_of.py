"""As-of queries: the memory as it was at a valid (world) time, or as the store knew it at a
record (wall-clock) time — old places after moves, old labels before relabels, LOST only
after it happened, and a read-only view whose record stops at that point."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from locimem import EventKind, ObjectMemory, ObjectStatus, TrackerConfig
from locimem.errors import InvalidInput, NotFound, StoreClosed
from locimem.query.reader import MemoryReader
from tests.helpers import det

CONFIG = TrackerConfig(promote_after=2)
A, B, C = (1.0, 1.0, 0.9), (1.6, 1.0, 0.9), (3.0, 1.0, 0.9)


class FakeClock:
    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        return self.now


# (valid time, record time, action): a cup seen at A, MOVED by the tracker to B, moved by a
# person to C, relabelled a vase, then LOST at t=50 (unseen since t=10, lost after ~34.5 s)
STEPS: list[tuple[float, float, Callable[[ObjectMemory], Any]]] = [
    (0.0, 100.0, lambda m: m.observe(0.0, [det("cup", *A, conf=0.5)])),
    (1.0, 110.0, lambda m: m.observe(1.0, [det("cup", *A, conf=0.5)])),
    (2.0, 120.0, lambda m: m.observe(2.0, [det("cup", *A, conf=0.5), det("book", 5, 5)])),
    (10.0, 200.0, lambda m: m.observe(10.0, [det("cup", *B, conf=0.5), det("book", 5, 5)])),
    (20.0, 300.0, lambda m: m.move(1, C, actor="carol", reason="drawer", t=20.0)),
    (30.0, 400.0, lambda m: m.relabel(1, "vase", actor="alice", t=30.0)),
    (40.0, 500.0, lambda m: m.observe(40.0, [det("book", 5, 5)])),
    (50.0, 600.0, lambda m: m.observe(50.0, [det("book", 5, 5)])),
]


def _run(memory: ObjectMemory, clock: FakeClock, steps: list[Any]) -> None:
    for _, recorded, action in steps:
        clock.now = recorded
        action(memory)


@pytest.fixture
def story(store_path: Path) -> Iterator[ObjectMemory]:
    clock = FakeClock()
    memory = ObjectMemory.open(store_path, scope="h", config=CONFIG, clock=clock)
    _run(memory, clock, STEPS)
    try:
        yield memory
    finally:
        memory.close()


def test_the_story_is_what_the_tests_assume(story: ObjectMemory) -> None:
    assert [(e.t, e.kind, e.object_id) for e in story.events()] == [
        (0.0, EventKind.APPEARED, 1), (1.0, EventKind.PROMOTED, 1),
        (2.0, EventKind.APPEARED, 2), (10.0, EventKind.MOVED, 1),
        (10.0, EventKind.PROMOTED, 2), (20.0, EventKind.CORRECTED, 1),
        (30.0, EventKind.CORRECTED, 1), (50.0, EventKind.LOST, 1)]
    cup = story.get(1)
    assert (cup.label, cup.center, cup.status, cup.lost_at) == ("vase", C, ObjectStatus.LOST,
                                                                50.0)


def test_as_of_returns_the_old_place_after_a_tracker_move(story: ObjectMemory) -> None:
    for t in (0.0, 2.0, 9.999):
        assert story.as_of(t).get(1).center == A, t
        assert story.as_of(t).snapshot()["objects"][1]["place"] == list(A)
    for t in (10.0, 15.0, 19.999):
        assert story.as_of(t).get(1).center == B, t
        assert story.as_of(t).snapshot()["objects"][1]["place"] == list(B)


def test_as_of_returns_the_old_place_after_a_move_correction(story: ObjectMemory) -> None:
    assert story.as_of(19.999).get(1).center == B
    for t in (20.0, 25.0, 50.0, 1e9):
        assert story.as_of(t).get(1).center == C, t
    assert story.get(1).center == C


def test_as_of_returns_the_old_label_before_a_relabel(story: ObjectMemory) -> None:
    before, after = story.as_of(29.999).get(1), story.as_of(30.0).get(1)
    assert (before.label, before.corrected_label) == ("cup", None)
    assert (after.label, after.corrected_label) == ("vase", "vase")
    assert before.label_votes == after.label_votes == {"cup": 2.0}
    assert story.as_of(29.999).recall("vase").found is False
    assert story.as_of(29.999).recall("cup").object_id == 1
    assert story.as_of(30.0).recall("vase").object_id == 1


def test_lost_only_after_the_lost_time(story: ObjectMemory) -> None:
    for t in (10.0, 40.0, 49.999):
        obj = story.as_of(t).get(1)
        assert obj.status is not ObjectStatus.LOST, t
        assert obj.lost_at is None
    assert story.as_of(10.0).get(1).status is ObjectStatus.CONFIRMED
    assert story.as_of(40.0).get(1).status is ObjectStatus.TENTATIVE
    for t in (50.0, 1e6):
        obj = story.as_of(t).get(1)
        assert (obj.status, obj.lost_at) == (ObjectStatus.LOST, 50.0)
    assert [o.id for o in story.as_of(49.999).objects(status="lost")] == []
    assert [o.id for o in story.as_of(50.0).objects(status="lost")] == [1]


def test_view_time_is_the_last_commit_at_or_before_t(story: ObjectMemory) -> None:
    assert story.as_of(-1.0).now is None
    assert story.as_of(0.0).now == 0.0
    assert story.as_of(9.0).now == 2.0
    assert story.as_of(1e9).now == 50.0
    empty = story.as_of(-1.0)
    assert empty.objects() == [] and empty.events() == [] and empty.audit() == []
    with pytest.raises(NotFound):
        empty.get(1)


@pytest.mark.parametrize("t", [-1.0, 0.0, 1.0, 2.0, 9.0, 10.0, 20.0, 29.0, 30.0, 45.0, 50.0])
def test_events_and_history_in_a_view_stop_at_t(story: ObjectMemory, t: float) -> None:
    view = story.as_of(t)
    assert view.events() == [e for e in story.events() if e.t <= t]
    assert view.events(object_id=1) == [e for e in story.events(object_id=1) if e.t <= t]
    assert view.events(kind="CORRECTED") == [e for e in story.events(kind="CORRECTED")
                                             if e.t <= t]
    if t >= 0.0:
        assert view.history(1) == [r for r in story.history(1) if r.t <= t]
    else:
        with pytest.raises(NotFound):
            view.history(1)
    assert view.audit() == [a for a in story.audit() if a.t <= t]


@pytest.mark.parametrize("k", range(1, len(STEPS) + 1))
def test_as_of_equals_a_memory_that_only_saw_that_much(story: ObjectMemory, tmp_path: Path,
                                                       k: int) -> None:
    clock = FakeClock()
    with ObjectMemory.open(tmp_path / f"prefix{k}.loci", scope="h", config=CONFIG,
                           clock=clock) as prefix:
        _run(prefix, clock, STEPS[:k])
        t, recorded, _ = STEPS[k - 1]
        expected = prefix.snapshot()
        assert story.as_of(t).snapshot() == expected
        assert story.as_of(recorded=recorded).snapshot() == expected
        assert story.as_of(recorded=recorded + 9.0).snapshot() == expected
        assert story.as_of(t).objects() == prefix.objects()
        assert story.as_of(recorded=recorded).events() == prefix.events()


def test_as_of_recorded_answers_what_the_store_knew(story: ObjectMemory) -> None:
    assert story.as_of(recorded=99.0).objects() == []
    assert story.as_of(recorded=99.0).now is None
    assert story.as_of(recorded=299.0).get(1).center == B
    assert story.as_of(recorded=300.0).get(1).center == C
    assert story.as_of(recorded=399.0).get(1).label == "cup"
    assert story.as_of(recorded=400.0).get(1).label == "vase"
    assert story.as_of(recorded=599.0).get(1).status is not ObjectStatus.LOST
    assert story.as_of(recorded=600.0).get(1).status is ObjectStatus.LOST
    assert [e.kind for e in story.as_of(recorded=350.0).events(object_id=1)] == [
        EventKind.APPEARED, EventKind.PROMOTED, EventKind.MOVED, EventKind.CORRECTED]


@pytest.mark.parametrize(("args", "kwargs", "message"), [
    ((), {}, r"^as_of\(\) needs exactly one of t \(valid time\) or recorded=$"),
    ((1.0,), {"recorded": 100.0}, r"^as_of\(\) needs exactly one of t"),
    ((float("nan"),), {}, r"^t must be a finite number"),
    (("10",), {}, r"^t must be a finite number"),
    ((), {"recorded": float("inf")}, r"^recorded must be a finite number"),
])
def test_as_of_needs_exactly_one_valid_time(story: ObjectMemory, args: tuple[Any, ...],
                                            kwargs: dict[str, Any], message: str) -> None:
    with pytest.raises(InvalidInput, match=message):
        story.as_of(*args, **kwargs)


def test_the_view_is_read_only(story: ObjectMemory) -> None:
    view = story.as_of(10.0)
    assert isinstance(view, MemoryReader)
    assert not isinstance(view, ObjectMemory)
    for name in ("observe", "relabel", "move", "set_attributes", "forget", "compact"):
        with pytest.raises(AttributeError):
            getattr(view, name)
    before = story.snapshot()
    view.objects()
    view.history(1)
    assert story.snapshot() == before


def test_a_view_does_not_change_when_the_memory_does(story: ObjectMemory) -> None:
    view = story.as_of(10.0)
    seen = (view.snapshot(), view.events(), view.history(1), view.audit())
    story.observe(60.0, [det("vase", *C)])
    story.relabel(1, "jug", t=61.0)
    story.move(2, (6.0, 6.0, 0.9), t=62.0)
    assert view.get(1).center == B
    assert view.get(2).center == (5.0, 5.0, 0.9)
    assert (view.snapshot(), view.events(), view.history(1), view.audit()) == seen
    assert view.get(1).label == "cup"


def test_a_view_taken_before_a_forget_hides_the_object_once_it_is_forgotten(
        story: ObjectMemory) -> None:
    view = story.as_of(10.0)
    assert view.get(2).label == "book"
    story.forget(2, reason="privacy", t=60.0)
    assert view.events(object_id=2) == []  # the record-backed path hides it at once ...
    with pytest.raises(NotFound):  # ... the state-backed paths should too
        view.get(2)
    assert [o.id for o in view.objects()] == [1]
    assert view.recall("book").found is False
    with pytest.raises(NotFound):
        view.history(2)


def test_a_view_of_a_closed_memory_raises_store_closed(store_path: Path) -> None:
    memory = ObjectMemory.open(store_path, scope="h")
    memory.observe(0.0, [det("cup", *A)])
    view = memory.as_of(0.0)
    memory.close()
    for read in (view.events, view.objects, view.audit, view.snapshot, view.rejected,
                 lambda: view.get(1), lambda: view.history(1), lambda: view.recall("cup")):
        with pytest.raises(StoreClosed):
            read()
