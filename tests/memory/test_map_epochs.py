"""Map epochs: a second SLAM session, in a frame rotated and shifted from the first, joins the
memory without doubling it — aligned by the furniture, day-1 identities kept, moved things
not anchors of the fit — and an ambiguous layout stays provisional rather than align wrong."""

from __future__ import annotations

import math

import numpy as np
import pytest

from locimem import Camera, Detection, ObjectMemory
from locimem.config import TrackerConfig
from locimem.errors import InvalidInput
from locimem.frames import invert, transform_points, yaw_of, yaw_transform
from locimem.interchange.validate import validate_store
from tests import pg

FURNITURE = {
    "sofa": ((1.0, 4.0, 0.45), (2.0, 0.9, 0.9)),
    "table": ((3.0, 1.5, 0.4), (1.2, 0.8, 0.8)),
    "fridge": ((6.5, 0.5, 0.9), (0.7, 0.7, 1.8)),
    "bed": ((8.0, 4.5, 0.3), (2.0, 1.6, 0.6)),
    "desk": ((5.0, 5.5, 0.4), (1.4, 0.7, 0.8)),
    "shelf": ((0.3, 0.5, 1.0), (0.4, 1.2, 2.0)),
    "armchair": ((2.2, 5.2, 0.45), (0.9, 0.9, 0.9)),
}
ITEMS = {
    "mug": ((3.1, 1.6, 0.85), (0.1, 0.1, 0.12)),
    "book": ((5.2, 5.4, 0.82), (0.2, 0.15, 0.04)),
    "remote": ((1.2, 4.0, 0.95), (0.15, 0.05, 0.03)),
}
FRAME_B = yaw_transform(35.0, 2.0, -1.3)  # day 2's frame: B = T . A
SLOW = TrackerConfig(tau_s=3600.0)  # belief decays slowly: the test is about frames


def day(mem: ObjectMemory, world: dict, t0: float, frame: np.ndarray, epoch: str | None,
        seed: int, n: int = 60, noise_m: float = 0.01) -> None:
    """The robot sweeps the house along x, seeing what is within 2.5 m of it."""
    rng = np.random.default_rng(seed)
    for k in range(n):
        x = (k % 30) / 3.0
        dets = []
        for label, (center, size) in world.items():
            if abs(center[0] - x) < 2.5:
                seen = transform_points(frame, center) + rng.normal(0.0, noise_m, 3)
                dets.append(Detection(label.rstrip("0123456789"), 0.9, tuple(seen), size))
        mem.observe(t0 + k, dets, map_epoch=epoch)


def _by_label(mem) -> dict[str, list]:
    out: dict[str, list] = {}
    for obj in mem.objects():
        out.setdefault(obj.label, []).append(obj)
    return out


@pytest.mark.parametrize("seed", [0, 1, 2, 3, 4])
def test_a_rebooted_robot_in_a_new_frame_joins_the_memory(tmp_path, seed) -> None:
    world = {**FURNITURE, **ITEMS}
    path = tmp_path / "m.loci"
    with ObjectMemory.open(path, scope="home", config=SLOW) as mem:
        day(mem, world, 0.0, np.eye(4), None, seed)
        day1 = {o.label: o.id for o in mem.objects()}
        assert len(day1) == len(world)
        day(mem, world, 1000.0, FRAME_B, "day2", seed + 100)
        now = _by_label(mem)
        assert sorted(now) == sorted(world)  # no doubling, nothing lost
        assert {label: [o.id for o in objs] for label, objs in now.items()} == {
            label: [oid] for label, oid in day1.items()}  # the mug is still the mug
        for label, (center, _size) in world.items():
            assert math.dist(now[label][0].center, center) < 0.05, label
        (epoch,) = mem.map_epochs()
        assert (epoch.name, epoch.status, epoch.scope) == ("day2", "aligned", "home/epochs/day2")
        assert epoch.yaw_deg == pytest.approx(-35.0, abs=0.5)
        assert epoch.residual_m < 0.05 and epoch.inliers >= 4
        aligned = mem.events(kind=["MAP_ALIGNED"])
        assert len(aligned) == 1
        recalled = mem.recall("mug")
        assert recalled.found and recalled.object_id == day1["mug"]
        assert math.dist(recalled.center, ITEMS["mug"][0]) < 0.05
        assert mem.rebuild_from_log().snapshot() == mem._live._state.snapshot()
    assert not validate_store(path).violations
    with ObjectMemory.open(path, scope="home", config=SLOW) as again:  # the epoch persists
        again.observe(1100.0, [Detection("mug", 0.9, tuple(transform_points(
            FRAME_B, ITEMS["mug"][0])), ITEMS["mug"][1])], map_epoch="day2")
        assert math.dist(again.get(day1["mug"]).center, ITEMS["mug"][0]) < 0.05
        assert len(again.objects()) == len(world)


def test_what_moved_overnight_is_not_an_anchor_of_the_fit(tmp_path) -> None:
    world = {**FURNITURE, **ITEMS}
    moved = {"armchair": ((3.5, 4.0, 0.45), (0.9, 0.9, 0.9)),
             "mug": ((6.0, 0.8, 0.9), (0.1, 0.1, 0.12))}
    with ObjectMemory.open(tmp_path / "m.loci", scope="home", config=SLOW) as mem:
        day(mem, world, 0.0, np.eye(4), None, 7)
        ids = {o.label: o.id for o in mem.objects()}
        day(mem, {**world, **moved}, 1000.0, FRAME_B, "day2", 8)
        (aligned,) = mem.events(kind=["MAP_ALIGNED"])
        assert ids["armchair"] not in {old for _new, old in aligned.data["inliers"]}
        assert mem.map_epochs()[0].residual_m < 0.02
        now = _by_label(mem)
        for label, (center, _size) in world.items():  # what stayed: same id, same place
            if label not in moved:
                assert [o.id for o in now[label]] == [ids[label]]
                assert math.dist(now[label][0].center, center) < 0.05, label
        # what moved is seen at its new place (without a camera nothing saw the old place
        # empty, so the scans cannot tell a move from a second one: a new identity there)
        for label, (center, _size) in moved.items():
            assert min(math.dist(o.center, center) for o in now[label]) < 0.05, label


def test_two_identical_rooms_stay_provisional(tmp_path) -> None:
    room = {k: FURNITURE[k] for k in ("sofa", "table", "shelf", "armchair")}
    twin = {f"{k}2": ((c[0] + 12.0, c[1], c[2]), s) for k, (c, s) in room.items()}
    with ObjectMemory.open(tmp_path / "m.loci", scope="home", config=SLOW) as mem:
        for k in range(40):  # day 1: both rooms
            shift = 0.0 if k < 20 else 12.0
            mem.observe(float(k), [Detection(label, 0.9, (c[0] + shift, c[1], c[2]), s)
                                   for label, (c, s) in room.items()])
        before = {o.id: o.center for o in mem.objects()}
        assert len(before) == 2 * len(room) and twin
        # day 2: one of the rooms, in a new frame: which one cannot be told
        for k in range(30):
            mem.observe(1000.0 + k, [Detection(label, 0.9,
                                               tuple(transform_points(FRAME_B, c)), s)
                                     for label, (c, s) in room.items()], map_epoch="day2")
        (epoch,) = mem.map_epochs()
        assert epoch.status == "provisional" and epoch.transform is None
        assert epoch.why.startswith("ambiguous: another transform")
        assert not mem.events(kind=["MAP_ALIGNED"])
        assert {o.id: o.center for o in mem.objects()} == before  # nothing touched
        # ... until an operator says which room it was
        given = mem.align_epoch("day2", invert(FRAME_B), actor="alice", reason="room A")
        assert given.data["status"] == "given"
        assert {o.id: o.center for o in mem.objects()}.keys() == before.keys()
        for label, (center, _size) in room.items():
            (obj,) = [o for o in mem.objects() if o.label == label and o.center[0] < 6]
            assert math.dist(obj.center, center) < 0.02
        assert [e.status for e in mem.map_epochs()] == ["given"]
        assert mem.audit(actor="alice")[0].reason == "room A"


def test_a_transform_given_before_the_first_scan_is_used_on_the_way_in(tmp_path) -> None:
    world = {**FURNITURE, **ITEMS}
    with ObjectMemory.open(tmp_path / "m.loci", scope="home", config=SLOW) as mem:
        day(mem, world, 0.0, np.eye(4), "day1", 1)  # a named first epoch: the base
        mem.align_epoch("day2", (list(invert(FRAME_B)[:3, 3]),
                                 [math.cos(math.radians(-17.5)), 0.0, 0.0,
                                  math.sin(math.radians(-17.5))]),
                        reason="from the map server")
        day(mem, world, 1000.0, FRAME_B, "day2", 2, n=10)
        assert [(e.name, e.status) for e in mem.map_epochs()] == [("day1", "base"),
                                                                  ("day2", "given")]
        assert mem._live.store.scopes() == ["home"]  # no provisional scope was needed
        assert len(mem.objects()) == len(world)
        with pytest.raises(InvalidInput, match="is the memory's own frame"):
            mem.align_epoch("day1", np.eye(4))


@pytest.mark.parametrize("name", ["", "a/b", "x" * 41, "día 2", 7])
def test_a_bad_epoch_name_is_refused_and_writes_nothing(tmp_path, name) -> None:
    with ObjectMemory.open(tmp_path / "m.loci") as mem:
        mem.observe(0.0, [Detection("cup", 0.9, (1.0, 1.0, 0.9), (0.1, 0.1, 0.1))])
        head = mem._live.store.head(mem.scope)
        with pytest.raises(InvalidInput, match="map_epoch"):
            mem.observe(1.0, [], map_epoch=name)
        assert mem._live.store.head(mem.scope) == head and mem._live.store.scopes() == ["default"]


@pg.needs_postgres
def test_a_new_epoch_aligns_on_postgresql() -> None:
    world = {**FURNITURE, **ITEMS}
    with ObjectMemory.open(pg.new_url("epochs"), scope="home", config=SLOW) as mem:
        day(mem, world, 0.0, np.eye(4), None, 3)
        ids = {o.label: o.id for o in mem.objects()}
        day(mem, world, 1000.0, FRAME_B, "day2", 4)
        assert {o.label: o.id for o in mem.objects()} == ids
        assert [e.status for e in mem.map_epochs()] == ["aligned"]
        for label, (center, _size) in world.items():
            assert math.dist(mem.get(ids[label]).center, center) < 0.05, label
        assert mem.rebuild_from_log().snapshot() == mem._live._state.snapshot()


OVERHEAD = (5.0, 3.0, 7.0)  # a camera above the house, looking straight down
DOWN = (math.cos(math.pi / 4), 0.0, math.sin(math.pi / 4), 0.0)  # body x forward -> -z


def watched_day(mem: ObjectMemory, world: dict, t0: float, frame: np.ndarray,
                epoch: str | None, seed: int, n: int = 40) -> None:
    """Every object seen in every scan, by a camera that sees the whole house: a place
    found empty counts against what was remembered there."""
    rng = np.random.default_rng(seed)
    yaw = math.radians(yaw_of(frame)) / 2
    turn = (math.cos(yaw), 0.0, 0.0, math.sin(yaw))
    w1, x1, y1, z1 = turn
    w2, x2, y2, z2 = DOWN
    quat = (w1 * w2 - x1 * x2 - y1 * y2 - z1 * z2, w1 * x2 + x1 * w2 + y1 * z2 - z1 * y2,
            w1 * y2 - x1 * z2 + y1 * w2 + z1 * x2, w1 * z2 + x1 * y2 - y1 * x2 + z1 * w2)
    camera = Camera(tuple(transform_points(frame, OVERHEAD)), quat, fov_deg=130.0,
                    range_m=12.0, vfov_deg=130.0)
    for k in range(n):
        dets = [Detection(label, 0.9, tuple(transform_points(frame, c)
                                            + rng.normal(0.0, 0.01, 3)), s)
                for label, (c, s) in world.items()]
        mem.observe(t0 + k, dets, camera, map_epoch=epoch)


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_what_moved_overnight_is_moved_when_a_camera_saw_its_old_place(tmp_path, seed):
    world = {**FURNITURE, **ITEMS}
    moved = {"armchair": ((3.5, 3.6, 0.45), (0.9, 0.9, 0.9)),
             "mug": ((6.0, 0.8, 0.9), (0.1, 0.1, 0.12))}
    with ObjectMemory.open(tmp_path / "m.loci", scope="home", config=SLOW) as mem:
        watched_day(mem, world, 0.0, np.eye(4), None, seed)
        ids = {o.label: o.id for o in mem.objects()}
        watched_day(mem, {**world, **moved}, 1000.0, FRAME_B, "day2", seed + 10)
        (aligned,) = mem.events(kind=["MAP_ALIGNED"])
        assert ids["armchair"] not in {old for _new, old in aligned.data["inliers"]}
        now = _by_label(mem)
        assert {label: [o.id for o in objs] for label, objs in now.items()} == {
            label: [oid] for label, oid in ids.items()}  # one of each, day-1 ids
        for label, (center, _size) in {**world, **moved}.items():
            assert math.dist(now[label][0].center, center) < 0.05, label
        moves = {e.object_id: e for e in mem.events(kind=["MOVED"], since=1000.0)}
        assert sorted(moves) == sorted(ids[label] for label in moved)
        for label, (center, _size) in moved.items():
            assert math.dist(moves[ids[label]].data["to"], center) < 0.05


def test_rooms_defined_first_are_in_the_first_epochs_frame(tmp_path) -> None:
    """A floor plan defined before the first scan is in the memory's frame, and the first
    named epoch is that frame (not a provisional one with nothing to align to)."""
    with ObjectMemory.open(tmp_path / "m.loci", scope="home", config=SLOW) as mem:
        mem.define_room("kitchen", [(0, 0), (10, 0), (10, 6), (0, 6)])
        day(mem, FURNITURE, 0.0, np.eye(4), "day1", 5)
        assert [(e.name, e.status) for e in mem.map_epochs()] == [("day1", "base")]
        assert mem._live.store.scopes() == ["home"]
        assert len(mem.objects()) == len(FURNITURE)
