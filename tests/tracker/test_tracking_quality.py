"""Tracking quality on hard cases (issue 3's acceptance scenarios), each with exact or bounded
outcomes: neighbours that stay two, a watched move, hours out of view, a seen removal, false
positives, duplicates from a perception track-id reset, and a split."""

from __future__ import annotations

import collections
import math
import os
from pathlib import Path

import numpy as np
import pytest

from locimem import Detection, EventKind, ObjectMemory, ObjectStatus
from locimem.errors import NotFound
from locimem.geometry import look_at
from locimem.model import Observation
from locimem.sim.render import render_depth
from locimem.sim.scenario import Scenario, ScenarioBuilder
from locimem.sim.world import LABEL_SIZES, build_world
from tests.helpers import det

CUP = LABEL_SIZES["cup"]
SEEDS = [int(x) for x in os.environ.get("LOCIMEM_QUALITY_SEEDS", "").split(",") if x]
SEEDS_TWINS = SEEDS or [0, 1, 2]
SEEDS_MOVE = SEEDS or [0, 1, 2, 3]
SEEDS_REMOVAL = SEEDS or [0, 1, 2, 3, 4, 5]


def _play(scenario: Scenario, path: Path | str = ":memory:", published: list | None = None):
    """Play a scenario (reopening the store where it restarts); return the memory, every
    scan's result, and truth id -> Counter of the identities its detections were given.
    ``published`` collects ``tracked()`` after each scan."""
    mem = ObjectMemory.open(path, durable=False)
    results = []
    given: dict[int, collections.Counter] = collections.defaultdict(collections.Counter)
    for frame in scenario.frames:
        if frame.restart:
            snap = mem.snapshot()
            mem.close()
            mem = ObjectMemory.open(path, durable=False)
            assert mem.snapshot() == snap
        result = mem.observe(frame.t, list(frame.detections), frame.camera)
        results.append(result)
        if published is not None:
            published.append(mem.tracked())
        for oid, src in zip(result.assignments, frame.sources, strict=True):
            if src is not None:
                given[src][oid] += 1
    assert mem.snapshot() == mem.rebuild_from_log().snapshot()
    return mem, results, given


def _events(results, kind: EventKind, oid: int | None = None):
    return [e for r in results for e in r.events
            if e.kind is kind and (oid is None or e.object_id == oid)]


# -- neighbours ---------------------------------------------------------------------------------
@pytest.mark.parametrize("seed", SEEDS_TWINS)
def test_two_cups_10cm_apart_stay_two_over_200_scans(seed: int) -> None:
    world = build_world(seed, rooms=("kitchen",), bare=("kitchen/table",))
    b = ScenarioBuilder("twins", world, seed=seed)
    top = world.furniture_named("kitchen/table").surfaces[0]
    x, y, z = top.min_xy[0] + 0.5, top.min_xy[1] + 0.3, top.z_m + CUP[2] / 2
    a = b.add("cup", "kitchen/table", at=(x, y, z), setup=True)
    c = b.add("cup", "kitchen/table", at=(x + 0.10, y, z), setup=True)
    b.look("kitchen/table", 200)
    scenario = b.build()
    assert len(scenario.frames) == 200
    mem, results, given = _play(scenario)
    # every detection of each cup went to one identity (or, a flickered low-confidence one
    # with no fitting candidate, to none), and the two identities differ
    given_a, given_c = ({k: n for k, n in given[x].items() if k is not None} for x in (a, c))
    assert len(given_a) == 1 and len(given_c) == 1
    (ida,), (idc,) = given_a, given_c
    assert ida != idc
    assert sum(given_a.values()) > 150 and sum(given_c.values()) > 150
    for oid in (ida, idc):
        assert _events(results, EventKind.MOVED, oid) == []
        assert _events(results, EventKind.MERGED, oid) == []
        assert mem.get(oid).status is ObjectStatus.CONFIRMED
        assert mem.get(oid).label == "cup"
    assert math.dist(mem.get(ida).center, (x, y, z)) < 0.03
    assert math.dist(mem.get(idc).center, (x + 0.10, y, z)) < 0.03
    mem.close()


def test_two_cups_10cm_apart_without_a_camera_stay_two() -> None:
    rng = np.random.default_rng(5)
    a, c = np.array([1.0, 1.0, 0.8]), np.array([1.1, 1.0, 0.8])
    with ObjectMemory.open() as mem:
        for k in range(200):
            shown = [(0, a), (1, c)]
            if k:  # input order must not matter (after the first scan, which numbers them)
                rng.shuffle(shown)
            dets = [Detection("cup", 0.9, tuple((p + rng.normal(0, 0.01, 3)).tolist()), CUP)
                    for _, p in shown]
            result = mem.observe(float(k), dets)
            got = {which: oid for (which, _), oid in zip(shown, result.assignments, strict=True)}
            assert got == {0: 1, 1: 2}, f"scan {k}"
        assert [o.id for o in mem.tracked()] == [1, 2]
        assert mem.events(kind=["MOVED", "MERGED", "SPLIT", "LOST"]) == []


# -- a watched move ----------------------------------------------------------------------------
@pytest.mark.parametrize("seed", SEEDS_MOVE)
def test_cup_moved_70cm_while_watched_is_one_identity_one_move_and_no_ghost(seed: int) -> None:
    world = build_world(seed, rooms=("kitchen",), bare=("kitchen/counter",))
    b = ScenarioBuilder("watched_move", world, seed=seed)
    counter = world.furniture_named("kitchen/counter")
    top = counter.surfaces[0]
    at = (min(max(counter.target_m[0], top.min_xy[0] + 0.1), top.max_xy[0] - 0.1),
          min(max(counter.target_m[1], top.min_xy[1] + 0.1), top.max_xy[1] - 0.1),
          top.z_m + CUP[2] / 2)  # where the camera looks: in view before and after the move
    cup = b.add("cup", "kitchen/counter", at=at, setup=True)
    b.look("kitchen/counter", 8, sweep_m=0.0)
    b.move_by(cup, 0.7, keep_track=True)
    b.look("kitchen/counter", 12, sweep_m=0.0)
    scenario = b.build()
    (move,) = [e for e in scenario.events if e.kind == "move_far"]
    assert move.watched and math.dist(move.from_m, move.to_m) == pytest.approx(0.7)
    published: list = []
    mem, results, given = _play(scenario, published=published)
    (oid,) = given[cup]  # one identity, before and after the move
    (moved,) = _events(results, EventKind.MOVED, oid)
    assert move.t <= moved.t <= move.t + 5
    assert moved.data["distance_m"] == pytest.approx(0.7, abs=0.1)
    # from 5 s after the move on, nothing is published at the old place (no ghost)
    for frame, shown in zip(scenario.frames, published, strict=True):
        if frame.t >= move.t + 5:
            assert not [o for o in shown if math.dist(o.center, move.from_m) < 0.35]
    cup_now = mem.get(oid)
    assert math.dist(cup_now.center, move.to_m) < 0.05
    assert cup_now.status is ObjectStatus.CONFIRMED
    assert not [o for o in mem.tracked() if math.dist(o.center, move.from_m) < 0.35]
    mem.close()


# -- hours out of view -------------------------------------------------------------------------
def test_two_hours_out_of_view_is_still_remembered_and_recall_says_when(tmp_path: Path) -> None:
    world = build_world(4, rooms=("kitchen", "living", "office"))
    b = ScenarioBuilder("away", world, seed=4)
    cup = b.add("cup", "kitchen/table", setup=True)
    b.survey("kitchen", 8)
    b.away("office", 3700.0, scan_every_s=60.0)
    b.restart()
    b.away("office", 3700.0, scan_every_s=60.0)
    scenario = b.build()
    last = max(f.t for f in scenario.frames if cup in f.sources)
    assert scenario.frames[-1].t - last >= 7200
    mem, results, given = _play(scenario, tmp_path / "away.loci")
    (oid,) = given[cup]
    assert _events(results, EventKind.LOST) == []  # nothing lost only because out of view
    # a thing seen once and missed by the next looks at it may be dropped as a false positive
    # (one sighting is little evidence); nothing seen more often expires
    assert [e for e in _events(results, EventKind.EXPIRED) if e.data["n_detections"] > 1] == []
    # the office has a cup of its own, seen on the way: recall names one, and the other too
    r = mem.recall("cup")
    assert r.found and oid in (r.object_id, *r.others)
    hours = (scenario.frames[-1].t - r.last_seen) / 3600
    assert hours >= 2.0 and f"last seen {hours:.1f} h ago (t={r.last_seen:.1f} s)" in r.text
    kitchen = mem.get(oid)
    assert kitchen.status is ObjectStatus.CONFIRMED
    assert kitchen.last_seen == last  # an honest age: the last real sighting
    assert 0.5 <= kitchen.confidence < 1.0  # out of view decays, slowly
    assert all(o.status is not ObjectStatus.LOST for o in mem.objects())
    mem.close()


# -- a seen removal ----------------------------------------------------------------------------
@pytest.mark.parametrize("seed", SEEDS_REMOVAL)
@pytest.mark.parametrize("depth_shape", [(12, 16), (24, 32), (48, 64)])
def test_looked_at_and_absent_is_lost_within_ten_looks(seed: int, depth_shape) -> None:
    # Coarse depth images (a real depth camera has 100 times the pixels): the place is judged
    # on the pixels the box covers, so the resolution does not decide whether it is checked.
    world = build_world(seed, rooms=("kitchen",))
    b = ScenarioBuilder("removal", world, seed=seed, depth_shape=depth_shape)
    b.stock("kitchen/table", 1)
    b.look("kitchen/table", 10)
    target = b.objects_on("kitchen/table")[0]
    removal = b.remove(target)
    b.look("kitchen/table", 45)
    scenario = b.build()
    mem, results, given = _play(scenario)
    (oid,) = given[target]
    (lost,) = _events(results, EventKind.LOST, oid)
    assert removal.t < lost.t <= removal.t + 10
    assert mem.get(oid).status is ObjectStatus.LOST
    assert {e.object_id for e in _events(results, EventKind.LOST)} == {oid}  # nothing else
    mem.close()


def test_without_depth_in_view_for_35s_is_lost_and_out_of_view_is_not() -> None:
    cam = look_at((0.0, 0.0, 1.2), (1.5, 0.0, 0.8), fov_deg=60.0, vfov_deg=45.0, range_m=4.0)
    away = look_at((0.0, 0.0, 1.2), (0.0, 1.5, 0.8), fov_deg=60.0, vfov_deg=45.0, range_m=4.0)
    with ObjectMemory.open() as mem:
        for k in range(5):
            mem.observe(float(k), [det("cup", 1.5, 0.0, 0.8), det("book", -1.5, 0.0, 0.8)], cam)
        events = [e for k in range(5, 60) for e in mem.observe(float(k), [], cam).events]
        # seen 5 times, so a detection probability of (5 + 4) / (5 + 5) = 0.9: lost at the
        # sixth look that misses it
        assert [(e.kind, e.object_id, e.t) for e in events] == [(EventKind.LOST, 1, 10.0)]
        assert mem.get(2).status is ObjectStatus.CONFIRMED  # out of view the whole time
        for k in range(60, 600, 10):
            assert mem.observe(float(k), [], away).events == ()
        assert mem.get(2).status is ObjectStatus.CONFIRMED


# -- false positives ---------------------------------------------------------------------------
def _camera_on(point: tuple[float, float, float], *boxes: tuple) -> object:
    """A camera 1.5 m from ``point`` looking at it, with a depth image of a wall 1 m behind it
    and of the boxes given as (centre, size)."""
    eye = (point[0] - 1.5, point[1], point[2] + 0.3)
    bare = look_at(eye, point, fov_deg=60.0, vfov_deg=45.0, range_m=4.0)
    lo = [np.array([point[0] + 1.0, point[1] - 3, point[2] - 3])]
    hi = [np.array([point[0] + 1.1, point[1] + 3, point[2] + 3])]
    for center, size in boxes:
        lo.append(np.asarray(center) - np.asarray(size) / 2)
        hi.append(np.asarray(center) + np.asarray(size) / 2)
    depth = render_depth(bare, np.array(lo), np.array(hi), (48, 64))
    return look_at(eye, point, fov_deg=60.0, vfov_deg=45.0, range_m=4.0, depth=depth)


def test_a_low_confidence_false_positive_never_creates_an_object() -> None:
    with ObjectMemory.open() as mem:
        for k in range(10):
            result = mem.observe(float(k), [det("vase", 2.0, 0.0, 0.8, conf=0.3)])
            assert result.assignments == (None,)
            assert result.rejected == {0: "below_new_object_confidence"}
            assert mem.tracked() == [] and mem.objects() == []
        (key,) = mem.rejections()
        assert (key.key, key.count, key.reason) == ("vase@10,0,4", 10,
                                                    "below_new_object_confidence")
        assert mem.recall("vase").found is False
        # ... but it may refresh an object that is there (ByteTrack's second pass)
        mem.observe(20.0, [det("cup", 1.0, 0.0, 0.8)])
        result = mem.observe(21.0, [det("cup", 1.02, 0.0, 0.8, conf=0.3)])
        assert result.assignments == (1,) and result.rejected == {}


@pytest.mark.parametrize("camera", [True, False])
def test_a_single_false_positive_never_reaches_tracked_and_expires_quietly(camera: bool) -> None:
    """A detection below ``promote_confidence`` (0.7) is not believed at once."""
    fp = (2.0, 0.0, 0.8)
    with ObjectMemory.open() as mem:
        cam = _camera_on(fp, (fp, (0.1, 0.1, 0.1))) if camera else None
        empty = _camera_on(fp) if camera else None
        first = mem.observe(0.0, [Detection("vase", 0.65, fp, (0.1, 0.1, 0.1))], cam)
        assert first.assignments == (1,)
        ends = []
        for k in range(1, 60):
            result = mem.observe(float(k), [], empty)
            assert mem.tracked() == []
            ends += [e for e in result.events]
        # looked at and not seen: one sighting, and an unsure one (0.65 of the 0.7 a sure
        # one takes), is little evidence (existence 0.91, not 0.92), so two looks
        # (detection probability 0.83) end it; without a camera, unseen for 34.5 s
        (expired,) = ends
        assert (expired.kind, expired.object_id, expired.t) == (
            EventKind.EXPIRED, 1, 2.0 if camera else 35.0)
        assert mem.events(kind=["PROMOTED", "LOST"]) == []
        assert mem.objects() == [] and mem.recall("vase").found is False
        with pytest.raises(NotFound):
            mem.get(1)
        assert mem.snapshot() == mem.rebuild_from_log().snapshot()


def test_a_sure_detection_is_published_at_once_and_withdrawn_when_its_place_is_seen_through(
        ) -> None:
    """With a camera, a detection at or above ``promote_confidence`` publishes its identity at
    the first sighting (the robot may not look again for minutes); if it was wrong, looks that
    see through its place take it back. Without a camera the rule does not apply."""
    vase = (2.0, 0.0, 0.8)
    with ObjectMemory.open() as mem:
        first = mem.observe(0.0, [Detection("vase", 0.7, vase, (0.1, 0.1, 0.1))],
                            _camera_on(vase, (vase, (0.1, 0.1, 0.1))))
        assert first.assignments == (1,)
        assert [(e.kind, e.object_id) for e in first.events
                if e.kind is not EventKind.KEYFRAME] == [
            (EventKind.APPEARED, 1), (EventKind.PROMOTED, 1)]
        assert [o.id for o in mem.tracked()] == [1]
        empty = _camera_on(vase)
        statuses = [mem.observe(float(k), [], empty) and mem.get(1).status
                    for k in range(1, 4)]
        assert statuses[-1] is ObjectStatus.LOST and mem.tracked() == []
        assert [e.kind for e in mem.events(kind=["LOST", "EXPIRED"])] == [EventKind.LOST]
    with ObjectMemory.open() as mem:
        mem.observe(0.0, [Detection("vase", 0.95, vase, (0.1, 0.1, 0.1))])
        assert mem.tracked() == [] and mem.events(kind=["PROMOTED"]) == []


def test_a_thing_seen_once_is_doubted_not_lost_by_looks_that_see_something_at_its_place() -> None:
    """A book glimpsed once: its box, from one sighting 1.5 m away, is uncertain by
    centimetres. Looks that show a surface where it would be and do not detect it (it may be
    hidden behind a shelf's lip the depth image cannot resolve) withdraw it from ``tracked()``
    (doubted) but never give it up as LOST; a second sighting restores it, and from then on
    misses can lose it."""
    book, size = (2.0, 0.0, 0.8), (0.16, 0.23, 0.04)
    seen = _camera_on(book, (book, size))
    with ObjectMemory.open() as mem:
        assert mem.observe(0.0, [Detection("book", 0.9, book, size)], seen).assignments == (1,)
        assert [o.id for o in mem.tracked()] == [1]
        for k in range(1, 121):  # two minutes of looks that miss it, its place occupied
            mem.observe(float(k), [], seen)
        obj = mem.get(1)
        assert obj.status is ObjectStatus.DOUBTED and mem.tracked() == []
        assert mem.events(kind=["LOST", "EXPIRED"]) == []
        assert mem.observe(121.0, [Detection("book", 0.9, book, size)], seen).assignments == (1,)
        assert [o.id for o in mem.tracked()] == [1]
        assert mem.snapshot() == mem.rebuild_from_log().snapshot()
    with ObjectMemory.open() as mem:  # seen in two scans: misses can lose it
        for t in (0.0, 1.0):
            assert mem.observe(t, [Detection("book", 0.9, book, size)], seen).assignments == (1,)
        for k in range(2, 30):
            mem.observe(float(k), [], seen)
        assert mem.get(1).status is ObjectStatus.LOST
        assert [e.object_id for e in mem.events(kind=["LOST"])] == [1]


# -- duplicates --------------------------------------------------------------------------------
@pytest.mark.parametrize("camera", [False, True])
def test_duplicates_from_a_track_id_reset_are_merged(camera: bool) -> None:
    """A cup tracked as perception track 1; perception resets it to track 2, whose first box
    is 30 cm off and called a mug: a second identity. Track 2's boxes then settle back on the
    cup: the two identities overlap, carry the same label, and were never seen together —
    they are merged into the older, with both histories."""
    p = np.array([2.0, 0.0, 0.8])
    with ObjectMemory.open() as mem:
        def see(t: float, where: np.ndarray, label: str, track: str, conf: float = 0.9):
            c = tuple(where.tolist())
            cam = _camera_on(c, (c, CUP)) if camera else None
            return mem.observe(t, [Detection(label, conf, c, CUP, track_id=track)], cam)

        for k in range(8):
            assert see(float(k), p, "cup", "1").assignments == (1,)
        reset = see(8.0, p + np.array([0.3, 0.0, 0.0]), "mug", "2", conf=0.7)
        assert reset.assignments == (2,)
        merged = []
        for k, dx in enumerate([0.15, 0.08, 0.03, 0.0, 0.0, 0.0, 0.0, 0.0]):
            result = see(9.0 + k, p + np.array([dx, 0.0, 0.0]), "cup", "2")
            merged += [e for e in result.events if e.kind is EventKind.MERGED]
        (event,) = merged
        assert (event.object_id, event.data["absorbed"], event.label) == (1, 2, "cup")
        assert [o.id for o in mem.objects()] == [1]
        assert [o.id for o in mem.tracked()] == [1]
        with pytest.raises(NotFound, match=r"^object 2 was merged into #1 .*use id 1$"):
            mem.get(2)
        # both histories: the older's, and the merged one's observations and events
        history = mem.history(1)
        assert [r.seq for r in history] == sorted(r.seq for r in history)
        assert {r.object_id for r in history} == {1, 2}
        kinds = [(r.object_id, r.kind) for r in history if not isinstance(r, Observation)]
        assert (2, EventKind.APPEARED) in kinds and (1, EventKind.MERGED) in kinds
        assert sum(isinstance(r, Observation) for r in history) == 8 + 1 + 8
        cup = mem.get(1)
        assert cup.label == "cup" and math.dist(cup.center, p) < 0.05
        assert mem.recall("cup").object_id == 1
        assert mem.snapshot() == mem.rebuild_from_log().snapshot()


def test_two_things_seen_together_are_never_merged() -> None:
    with ObjectMemory.open() as mem:
        for k in range(10):  # a cup and a second detection of it in every scan
            mem.observe(float(k), [det("cup", 1.0, 0.0, 0.8), det("cup", 1.03, 0.0, 0.8)])
        assert [o.id for o in mem.objects()] == [1, 2]
        for k in range(10, 20):  # later only one of them is seen, overlapping both
            mem.observe(float(k), [det("cup", 1.015, 0.0, 0.8)])
        assert mem.events(kind="MERGED") == []
        assert [o.id for o in mem.objects()] == [1, 2]


# -- a split -----------------------------------------------------------------------------------
def test_an_identity_seen_alternately_in_two_places_splits() -> None:
    """A known cup A, and an unknown cup B 50 cm away, seen alternately (the camera looks at
    one, then the other): B's sightings are held on A (the depth image shows A still at its
    place), and once they form a second cluster while A is still seen at its own, they split
    off as a new identity."""
    a, b_ = (2.0, 0.0, 0.8), (2.0, 0.5, 0.8)
    boxes = ((a, CUP), (b_, CUP))
    with ObjectMemory.open() as mem:
        for k in range(6):
            mem.observe(float(k), [Detection("cup", 0.9, a, CUP)], _camera_on(a, *boxes))
        assert [o.id for o in mem.tracked()] == [1]
        events = []
        for k in range(6, 14):
            at = b_ if k % 2 == 0 else a
            result = mem.observe(float(k), [Detection("cup", 0.9, at, CUP)],
                                 _camera_on(a, *boxes))
            events += list(result.events)
        kinds = [(e.kind, e.object_id) for e in events]
        assert (EventKind.SPLIT, 1) in kinds and (EventKind.APPEARED, 2) in kinds
        assert not [e for e in events if e.kind is EventKind.MOVED]
        assert math.dist(mem.get(1).center, a) < 0.02
        assert math.dist(mem.get(2).center, b_) < 0.02
        assert mem.snapshot() == mem.rebuild_from_log().snapshot()


CHAIR = LABEL_SIZES["chair"]


@pytest.mark.parametrize("offset, box, splits", [
    # the visible side of a chair half hidden: a shrunk box, shifted, 60 % inside its own
    (0.21, (0.45, 0.15, 0.9), False),
    # a second chair pushed against it (its box a fifth inside the first's): two chairs
    (0.36, CHAIR, True),
    # a second chair beside it: a whole box of its own
    (0.46, CHAIR, True),
])
def test_held_sightings_inside_an_objects_box_are_views_of_it(
        offset: float, box: tuple, splits: bool) -> None:
    """A chair seen whole six times, then alternately whole and as a second cluster of held
    sightings more than the tight radius from its centre (its place in view, not empty):
    the cluster splits off as a new identity — unless, under the chair's label, its box lies
    mostly inside the chair's, as the visible part of a partly hidden chair does."""
    a, b_ = (2.0, 0.0, 0.45), (2.0, offset, 0.45)
    with ObjectMemory.open() as mem:
        for k in range(6):
            mem.observe(float(k), [Detection("chair", 0.9, a, CHAIR)], _camera_on(a, (a, CHAIR)))
        events = []
        for k in range(6, 16):
            seen = Detection("chair", 0.9, b_ if k % 2 == 0 else a,
                             box if k % 2 == 0 else CHAIR)
            result = mem.observe(float(k), [seen], _camera_on(a, (a, CHAIR), (b_, box)))
            events += list(result.events)
        kinds = [(e.kind, e.object_id) for e in events]
        assert ((EventKind.SPLIT, 1) in kinds) is splits
        assert [o.id for o in mem.tracked()] == ([1, 2] if splits else [1])
        assert not [e for e in events if e.kind is EventKind.MOVED]
        assert math.dist(mem.get(1).center, a) < 0.02
        assert mem.snapshot() == mem.rebuild_from_log().snapshot()


# -- replay ------------------------------------------------------------------------------------
def test_camera_scans_replay_to_the_same_memory_and_decisions(tmp_path: Path) -> None:
    """A simulated morning with cameras, moves, a removal and a restart: the live state, a
    reopened store and a replay of the log agree, and a run reopened halfway decides the same."""
    from locimem.sim.scenarios import build

    scenario = build("kitchen_day")
    mem, results, _ = _play(scenario, tmp_path / "whole.loci")
    snap = mem.snapshot()
    mem.close()
    with ObjectMemory.open(tmp_path / "whole.loci") as again:
        assert again.snapshot() == snap
        assert again.rebuild_from_log().snapshot() == snap
    split = tmp_path / "split.loci"
    half = len(scenario.frames) // 3
    assignments = []
    for part in (scenario.frames[:half], scenario.frames[half:]):
        with ObjectMemory.open(split, durable=False) as m:
            for frame in part:
                assignments.append(m.observe(frame.t, list(frame.detections),
                                             frame.camera).assignments)
    assert assignments == [r.assignments for r in results]
    with ObjectMemory.open(split) as m:
        assert m.snapshot() == snap


def test_a_thing_published_at_its_first_sighting_settles_where_its_next_sightings_put_it(
        ) -> None:
    """An apple glimpsed from afar, its first box 6 cm too low (inside the table) and 12 cm
    aside, is published at once; it is not "on" the table yet. Its next sightings — one
    17 cm from the first — are not held as outliers of so young an estimate: they are
    smoothed in, and its settled box follows (SETTLED) until its third sighting, when it
    stands on the table as a thing promoted at that count would. After that the box is
    settled, and a sighting within the tight radius no longer moves it."""
    table = Detection("table", 0.9, (1.0, 1.0, 0.375), (1.2, 0.8, 0.75))
    apple = (1.2, 1.1, 0.79)
    size = (0.08, 0.08, 0.08)
    with ObjectMemory.open() as mem:
        for k in range(4):
            mem.observe(float(k), [table], _camera_on((1.0, 1.0, 0.375)))
        cam = _camera_on(apple)
        first = mem.observe(4.0, [table, Detection("apple", 0.8, (1.12, 1.0, 0.73), size)], cam)
        oid = first.assignments[1]
        assert mem.get(oid).status is ObjectStatus.CONFIRMED
        assert mem.related(1, "on") == []
        for t in (5.0, 6.0):
            r = mem.observe(t, [table, Detection("apple", 0.8, apple, size)], cam)
            assert r.assignments[1] == oid
        settled = mem.events(kind=["SETTLED"], object_id=oid)
        assert [e.data["n_detections"] for e in settled] == [2, 3]
        assert mem.events(kind=["MOVED"], object_id=oid) == []
        assert [o.id for o in mem.related(1, "on")] == [oid]
        since = {r.object: r.since for r in mem.relations(oid)}
        mem.observe(7.0, [table, Detection("apple", 0.8, (1.25, 1.1, 0.79), size)], cam)
        assert len(mem.events(kind=["SETTLED"], object_id=oid)) == 2
        assert {r.object: r.since for r in mem.relations(oid)} == since
        assert mem.snapshot() == mem.rebuild_from_log().snapshot()


def test_a_settled_box_reads_as_such_in_the_history_tools_and_the_cli() -> None:
    from locimem.cli.text import format_event

    with ObjectMemory.open() as mem:
        cam = _camera_on((1.2, 1.1, 0.79))
        for t, x in ((0.0, 1.12), (1.0, 1.2)):
            mem.observe(t, [Detection("apple", 0.8, (x, 1.1, 0.79), (0.08, 0.08, 0.08))], cam)
        (settled,) = mem.events(kind=["SETTLED"])
        assert format_event(settled).endswith("after 2 detections")
        history = mem.tools().call("object_history", {"object_id": 1})
        assert any("its place settled at" in str(e) for e in history["events"])
