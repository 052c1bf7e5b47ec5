"""The story the pictures draw: one frame per time something happened, each exactly the
memory as ``as_of`` answers for that time."""

from __future__ import annotations

from pathlib import Path

import pytest

from locimem import ObjectMemory
from locimem.errors import InvalidInput, NotFound
from locimem.model import EventKind, ObjectStatus
from locimem.sim.scenarios import build
from locimem.viz.story import (
    STORY_KINDS,
    check_scope_has_story,
    event_text,
    iter_story,
    status_rgb,
    yaw_of,
)
from tests.helpers import CUP_ON_COUNTER, HOUSE, ID, ROOMS, house_day


def assert_matches_as_of(mem: ObjectMemory, frames: list) -> None:
    """Every frame is what as_of(t) says: objects, rooms, rooms of objects and events."""
    for frame in frames:
        then = mem.as_of(frame.t)
        assert list(frame.objects) == then.objects()
        assert list(frame.rooms) == then.rooms()
        assert frame.room_of == {o.id: then.room_of(o.id) for o in then.objects()}
        expected = [e for e in then.events(since=frame.t, until=frame.t)
                    if e.kind in STORY_KINDS]
        assert list(frame.events) == expected


@pytest.fixture(scope="module")
def house(house_day_store: Path) -> Path:
    return house_day_store


def test_house_day_frames_are_the_event_times_and_now(house: Path) -> None:
    with ObjectMemory.open(house, scope="home", read_only=True) as mem:
        frames = list(iter_story(mem))
        assert [f.t for f in frames] == [0.0, 5.0, 10.0, 15.0, 20.0, 44.0, 50.0]
        kinds = [sorted({e.kind.value for e in f.events}) for f in frames]
        assert kinds == [["APPEARED", "ROOMS_CONNECTED", "ROOM_DEFINED"], ["PROMOTED"],
                         ["MOVED"], ["APPEARED"], ["PROMOTED"], ["LOST"], []]
        assert_matches_as_of(mem, frames)
        first, moved, keys_seen, lost, now = (frames[i] for i in (0, 2, 3, 5, 6))
        assert [r.name for r in first.rooms] == sorted(ROOMS)
        assert len(first.objects) == len(HOUSE)
        assert [o.id for o in now.objects] == list(range(1, len(HOUSE) + 2))  # + the keys
        cup, phone = ID["cup"], ID["phone"]
        by_id = {o.id: o for o in moved.objects}
        assert by_id[cup].center == CUP_ON_COUNTER
        assert [e.object_id for e in moved.events] == [cup]
        assert event_text(moved.events[0]) == \
            "MOVED #2 cup (1.20, 1.40, 0.80) -> (1.20, 2.20, 0.95) (0.81 m)"
        assert [o.label for o in keys_seen.objects if o.id not in by_id] == ["keys"]
        assert keys_seen.room_of[len(HOUSE) + 1] == "hall"
        assert {o.id: o.status for o in lost.objects}[phone] is ObjectStatus.LOST
        assert [event_text(e) for e in lost.events] == ["LOST #4 phone: unseen since t=9.0 s"]
        assert now.events == ()


def test_story_of_an_as_of_view_ends_at_its_time(house: Path) -> None:
    with ObjectMemory.open(house, scope="home", read_only=True) as mem:
        view = mem.as_of(12.0)
        frames = list(iter_story(view))
        assert [f.t for f in frames] == [0.0, 5.0, 10.0, 12.0]
        assert frames[-1].events == ()
        assert list(frames[-1].objects) == view.objects()


def test_forgotten_objects_are_left_out_of_every_frame(tmp_path: Path) -> None:
    with ObjectMemory.open(tmp_path / "f.loci", scope="home") as mem:
        house_day(mem, until=12)
        mem.forget(ID["cup"], actor="alice", reason="not ours")
        frames = list(iter_story(mem))
        assert frames  # the cup's MOVED frame has nothing else: it is gone
        assert [f.t for f in frames] == [0.0, 5.0, 12.0]
        for f in frames:
            assert ID["cup"] not in {o.id for o in f.objects}
            assert ID["cup"] not in {e.object_id for e in f.events}
        assert_matches_as_of(mem, frames)


def test_a_compacted_store_replays_from_its_checkpoint(tmp_path: Path) -> None:
    with ObjectMemory.open(tmp_path / "c.loci", scope="home") as mem:
        house_day(mem, until=30)
        report = mem.compact(older_than_s=12.0, trail_s=5.0)
        assert report.horizon_commit is not None and report.removed > 0
        assert mem._live.store.latest_checkpoint("home") is not None
        frames = list(iter_story(mem))
        assert [f.t for f in frames] == [0.0, 5.0, 10.0, 15.0, 20.0, 30.0]
        assert "COMPACTED" not in {e.kind.value for f in frames for e in f.events}
        assert_matches_as_of(mem, frames)  # frames after the horizon start from the checkpoint


def test_a_simulated_day_of_moves_across_rooms(tmp_path: Path) -> None:
    scenario = build("moves_across_rooms")  # (the browser test draws kitchen_day: a loss too)
    with ObjectMemory.open(tmp_path / "day.loci", scope="home") as mem:
        for room in scenario.world.rooms:
            (x0, y0), (x1, y1) = room.min_xy, room.max_xy
            mem.define_room(room.name, [(x0, y0), (x1, y0), (x1, y1), (x0, y1)])
        for frame in scenario.frames:
            mem.observe(frame.t, list(frame.detections), frame.camera)
        frames = list(iter_story(mem))
        moved = {e.object_id for f in frames for e in f.events if e.kind is EventKind.MOVED}
        assert len(moved) >= 3
        rooms_of = {oid: {f.room_of[oid] for f in frames if oid in f.room_of} for oid in moved}
        assert sum(len(r) > 1 for r in rooms_of.values()) >= 2  # carried to another room
        assert frames[-1].t == mem.now
        assert_matches_as_of(mem, frames)


def test_empty_scope_and_bad_input(tmp_path: Path, house: Path) -> None:
    with ObjectMemory.open(house, scope="elsewhere") as mem:  # read-only: a ScopeError
        assert list(iter_story(mem)) == []
        with pytest.raises(NotFound, match=r"scope 'elsewhere' has no records to draw "
                                           r"\(scopes in this store: 'home'\)"):
            check_scope_has_story(mem)
    with pytest.raises(InvalidInput, match="memory must be an ObjectMemory"):
        list(iter_story("home.loci"))  # type: ignore[arg-type]


def test_colours_and_yaw() -> None:
    assert status_rgb(ObjectStatus.CONFIRMED, 1.0) == (54, 217, 54)
    assert status_rgb(ObjectStatus.CONFIRMED, 0.5) == (217, 217, 54)
    assert status_rgb(ObjectStatus.CONFIRMED, 0.0) == (217, 54, 54)
    assert status_rgb(ObjectStatus.TENTATIVE, 1.0) == (141, 217, 141)
    assert status_rgb(ObjectStatus.DOUBTED, 0.9) == (235, 130, 30)
    assert status_rgb(ObjectStatus.LOST, 0.9) == (150, 150, 150)
    assert yaw_of(None) == 0.0
    assert yaw_of((0.7071067811865476, 0.0, 0.0, 0.7071067811865476)) == pytest.approx(
        1.5707963267948966)
