"""Map frames that move, from ROS 2 recordings: a ``map -> odom`` jump (a loop closure or a
relocalisation) corrects what was seen before it, once; a second recording from a rebooted
robot, in a map frame of its own, is aligned to the first by its furniture."""

from __future__ import annotations

import json
import math
import subprocess
import sys

import pytest

pytest.importorskip("rosbags")

from locimem import ObjectMemory
from locimem.errors import InvalidInput
from locimem.ingest import ingest
from locimem.ingest.frames import Transform
from locimem.ingest.ros import BagOptions
from locimem.ingest.synth import MAP_ODOM, synth_run, write_bag

SOURCE = "ros:/detections"
# a bowl seen only before the jump, a cup throughout, a mug only after it
OBJECTS = [("bowl", (3.0, 0.6, 0.8), 0, 13), ("cup", (3.2, -0.3, 0.8), 0, 29),
           ("mug", (3.6, 0.2, 0.75), 16, 29)]
TRUTH = {label: center for label, center, *_ in OBJECTS}
T0 = 1_700_000_000.25
JUMP_T = T0 + 29.0  # between scans 14 (t0 + 28 s) and 15 (t0 + 30 s)
# SLAM's map frame before the loop closure: 0.4 m and 4 degrees off
ERROR = Transform((0.4, -0.25, 0.0), (math.cos(math.radians(2)), 0, 0,
                                       math.sin(math.radians(2))))


def believed(ts: float) -> Transform:
    """``map -> odom`` as SLAM publishes it: off by ERROR until the jump, right after."""
    return ERROR.compose(MAP_ODOM) if ts < JUMP_T else MAP_ODOM


def _bag(tmp_path, name="run", n=30, **kw):
    return write_bag(tmp_path / name, synth_run(n, objects=OBJECTS, t0_s=T0),
                     detection_frame="base_link", map_odom=believed, **kw)


def _placed(mem):
    return {o.label: o.center for o in mem.objects()}


def test_a_map_odom_jump_corrects_what_was_seen_before_it(tmp_path):
    summary = ingest(_bag(tmp_path), tmp_path / "m.loci")
    assert summary.map_jumps == 1 and summary.map_jumps_waiting == 0
    assert summary.inputs["map_jumps"][0]["t"] == pytest.approx(JUMP_T)
    with ObjectMemory.open(tmp_path / "m.loci") as mem:
        objects = mem.objects()
        assert sorted(o.label for o in objects) == ["bowl", "cup", "mug"]  # no second cup
        for label, center in _placed(mem).items():
            assert math.dist(center, TRUTH[label]) < 0.05, label
        moved = {e.label for e in mem.events(kind="REANCHORED")}
        assert moved == {"bowl", "cup"}  # the mug was seen only after the jump
        fixes = [a for a in mem.audit() if a.kind == "correction"]
        assert len(fixes) == 1 and fixes[0].actor == SOURCE
        assert f"jumped at t={JUMP_T:.9f} s" in fixes[0].reason
        assert not mem.events(kind="MERGED")  # corrected before the cup could be doubled
    # the same recording again: nothing new, the jump not applied twice
    again = ingest(_bag(tmp_path, "again"), tmp_path / "m.loci")
    assert again.scans_ingested == 0 and again.map_jumps == 0
    with ObjectMemory.open(tmp_path / "m.loci") as mem:
        assert len([a for a in mem.audit() if a.kind == "correction"]) == 1


def test_without_jump_handling_the_memory_is_off(tmp_path):
    """The test above can fail: read as a glide, the same bag leaves the bowl 0.4 m off."""
    ingest(_bag(tmp_path), tmp_path / "m.loci", bag_options=BagOptions(jump_m=None))
    with ObjectMemory.open(tmp_path / "m.loci") as mem:
        assert math.dist(_placed(mem)["bowl"], TRUTH["bowl"]) > 0.3
        assert not mem.events(kind="REANCHORED")


def test_a_resumed_run_applies_a_jump_past_where_the_first_stopped(tmp_path):
    first = _bag(tmp_path, "first", n=15)  # stops before the jump: its tf holds none
    assert ingest(first, tmp_path / "m.loci").map_jumps == 0
    rest = ingest(_bag(tmp_path), tmp_path / "m.loci")
    assert (rest.scans_resumed, rest.scans_ingested, rest.map_jumps) == (15, 15, 1)
    with ObjectMemory.open(tmp_path / "m.loci") as mem:
        assert math.dist(_placed(mem)["bowl"], TRUTH["bowl"]) < 0.05


def test_a_small_step_is_interpolated_not_a_jump(tmp_path):
    """A step under the threshold is SLAM's ordinary smoothing: nothing is corrected."""
    small = Transform((0.02, 0.0, 0.0), (1.0, 0.0, 0.0, 0.0))
    run = synth_run(30, objects=OBJECTS, t0_s=T0)
    bag = write_bag(tmp_path / "run", run, detection_frame="base_link",
                    map_odom=lambda ts: small.compose(MAP_ODOM) if ts < JUMP_T else MAP_ODOM)
    summary = ingest(bag, tmp_path / "m.loci")
    assert summary.map_jumps == 0 and summary.inputs["map_jumps"] == []
    with ObjectMemory.open(tmp_path / "m.loci") as mem:
        assert not mem.events(kind="REANCHORED")


@pytest.mark.parametrize(("options", "message"), [
    (BagOptions(jump_m=0.0), "a map jump must be > 0 metres"),
    (BagOptions(jump_deg=float("nan")), "a map jump's turn"),
    (BagOptions(jump_deg=200.0), "a map jump's turn"),
])
def test_bad_jump_thresholds_are_refused_and_write_nothing(tmp_path, options, message):
    with pytest.raises(InvalidInput, match=message):
        ingest(_bag(tmp_path), tmp_path / "m.loci", bag_options=options)
    assert not (tmp_path / "m.loci").exists()


# -- a rebooted robot: a second recording in a new SLAM map -------------------------------------
FURNITURE = [("table", (3.5, 0.0, 0.4), 0, 11, (1.2, 0.8, 0.75)),
             ("sofa", (4.6, 1.6, 0.4), 0, 11, (1.9, 0.9, 0.8)),
             ("shelf", (4.2, -1.7, 0.9), 0, 11, (0.8, 0.4, 1.8)),
             ("cabinet", (5.5, -0.4, 0.5), 0, 11, (0.6, 0.5, 1.0)),
             ("mug", (3.3, 0.2, 0.82), 0, 11)]
# day 2's map frame B = REBOOT . A (35 degrees, +0.6 m, -0.4 m)
REBOOT = Transform((0.6, -0.4, 0.0), (math.cos(math.radians(17.5)), 0, 0,
                                       math.sin(math.radians(17.5))))


def _day(tmp_path, name, t0, frame):
    return write_bag(tmp_path / name, synth_run(12, objects=FURNITURE, t0_s=t0),
                     detection_frame="base_link", map_odom=frame)


def test_a_rebooted_robots_recording_aligns_to_the_first(tmp_path):
    store = tmp_path / "house.loci"
    ingest(_day(tmp_path, "day1", T0, MAP_ODOM), store, map_epoch="day1")
    with ObjectMemory.open(store) as mem:
        day1 = {o.label: o.id for o in mem.objects()}
    assert len(day1) == 5
    day2 = _day(tmp_path, "day2", T0 + 86_400, REBOOT.compose(MAP_ODOM))
    out = subprocess.run([sys.executable, "-m", "locimem", "ingest", str(day2), str(store),
                          "--new-map", "--json"], capture_output=True, text=True, check=False)
    assert out.returncode == 0, out.stderr
    assert json.loads(out.stdout)["inputs"]["map_epoch"] == "day2"
    with ObjectMemory.open(store) as mem:
        epochs = {e.name: e for e in mem.map_epochs()}
        assert [epochs["day1"].status, epochs["day2"].status] == ["base", "aligned"]
        assert epochs["day2"].yaw_deg == pytest.approx(-35.0, abs=0.5)
        assert len(mem.events(kind="MAP_ALIGNED")) == 1
        objects = mem.objects()
        assert {o.label: o.id for o in objects} == day1  # the same identities, no doubles
        for o in objects:
            truth = next(f[1] for f in FURNITURE if f[0] == o.label)
            assert math.dist(o.center, truth) < 0.05, o.label
        assert mem.recall("mug").object_id == day1["mug"]


def test_a_second_recording_without_a_new_epoch_would_double_the_memory(tmp_path):
    """Why --new-map matters: read in the memory's frame, day 2 lands 0.6 m and 35 degrees
    off, and the furniture is doubled."""
    store = tmp_path / "house.loci"
    ingest(_day(tmp_path, "day1", T0, MAP_ODOM), store)
    ingest(_day(tmp_path, "day2", T0 + 86_400, REBOOT.compose(MAP_ODOM)), store)
    with ObjectMemory.open(store) as mem:
        assert len([o for o in mem.objects() if o.label == "table"]) == 2
        assert mem.map_epochs() == []


def test_a_jump_in_a_provisional_epoch_waits_for_its_alignment(tmp_path):
    """Too little furniture to align: the epoch stays provisional and its jump waits; once
    the operator gives the transform, a re-run applies it."""
    store = tmp_path / "m.loci"
    ingest(_day(tmp_path, "day1", T0 - 86_400, MAP_ODOM), store, map_epoch="day1")
    summary = ingest(_bag(tmp_path), store, map_epoch="day2")
    assert (summary.map_jumps, summary.map_jumps_waiting) == (0, 1)
    assert any("wait: map epoch 'day2' is provisional" in line for line in summary.lines())
    with ObjectMemory.open(store) as mem:
        assert [e.status for e in mem.map_epochs()] == ["base", "provisional"]
        mem.align_epoch("day2", ((0.0, 0.0, 0.0), (1.0, 0.0, 0.0, 0.0)), reason="same map")
        assert math.dist(_placed(mem)["bowl"], TRUTH["bowl"]) > 0.3  # not corrected yet
    again = ingest(_bag(tmp_path, "again"), store, map_epoch="day2")
    assert (again.scans_ingested, again.map_jumps, again.map_jumps_waiting) == (0, 1, 0)
    with ObjectMemory.open(store) as mem:
        assert math.dist(_placed(mem)["bowl"], TRUTH["bowl"]) < 0.05


def test_cli_new_map_and_map_epoch_are_exclusive_and_bag_only(tmp_path):
    bag = _bag(tmp_path, n=3)
    out = subprocess.run([sys.executable, "-m", "locimem", "ingest", str(bag),
                          str(tmp_path / "m.loci"), "--new-map", "--map-epoch", "x"],
                         capture_output=True, text=True, check=False)
    assert out.returncode == 2 and "either it or --map-epoch" in out.stderr
    assert not (tmp_path / "m.loci").exists()
    scans = tmp_path / "scans.jsonl"
    scans.write_text(json.dumps({"t": 1.0, "detections": []}) + "\n", encoding="utf-8")
    out = subprocess.run([sys.executable, "-m", "locimem", "ingest", str(scans),
                          str(tmp_path / "m.loci"), "--no-map-jumps"],
                         capture_output=True, text=True, check=False)
    assert out.returncode == 2 and "--no-map-jumps: options for ROS 2 bags" in out.stderr

