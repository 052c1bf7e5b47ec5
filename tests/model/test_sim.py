"""The simulator: seeded and deterministic, with ground truth that agrees with itself, and a
detector whose errors have the statistics it was configured with."""

from __future__ import annotations

import math
import random
from collections import defaultdict

import numpy as np
import pytest

from locimem import Camera
from locimem.geometry import look_at
from locimem.sim.perception import CONFUSIONS, NoiseModel
from locimem.sim.render import render_depth
from locimem.sim.scenario import NEAR_MOVE_M, ScenarioBuilder
from locimem.sim.scenarios import NAMES, build
from locimem.sim.world import LABEL_SIZES, build_world


@pytest.fixture(scope="module")
def scenarios():
    return {name: build(name) for name in NAMES}


def _same_frames(a, b) -> None:
    assert len(a.frames) == len(b.frames)
    for fa, fb in zip(a.frames, b.frames, strict=True):
        assert (fa.t, fa.restart, fa.sources, fa.truth) == (fb.t, fb.restart, fb.sources, fb.truth)
        assert fa.detections == fb.detections  # labels, centres, sizes, embeddings, track ids
        assert (fa.camera.position, fa.camera.quaternion) == (fb.camera.position,
                                                               fb.camera.quaternion)
        assert np.array_equal(fa.camera.depth, fb.camera.depth, equal_nan=True)
    assert a.events == b.events


# -- determinism ----------------------------------------------------------------------------------
def test_same_seed_same_scenario_whatever_the_global_random_state(scenarios):
    np.random.seed(12345)
    random.seed(99)
    np.random.random(17)
    _same_frames(scenarios["kitchen_day"], build("kitchen_day"))


def test_another_seed_gives_another_scenario(scenarios):
    other = build("kitchen_day", seed=11)
    first = scenarios["kitchen_day"]
    assert [f.detections for f in other.frames[:40]] != [f.detections for f in first.frames[:40]]


def test_unknown_scenario_names_the_built_in_ones():
    with pytest.raises(KeyError, match="built-in scenarios are kitchen_day, clutter"):
        build("kitchen_night")


def test_every_built_in_scenario_is_small(scenarios):
    for s in scenarios.values():
        assert 100 <= len(s.frames) <= 400, s.name
        assert s.n_detections <= 1500, s.name
        assert s.frames[0].t == 0.0
        assert all(b.t > a.t for a, b in zip(s.frames, s.frames[1:], strict=False))


# -- ground truth is consistent -------------------------------------------------------------------
def test_every_detection_comes_from_a_visible_object_or_is_a_false_positive(scenarios):
    for s in scenarios.values():
        for f in s.frames:
            truth = f.truth
            assert truth.visible <= set(truth.present), s.name
            assert not truth.visible & truth.occluded
            real = [src for src in f.sources if src is not None]
            assert set(real) <= truth.visible, (s.name, f.t)
            assert len(real) == len(set(real)), "one detection per object per scan"
            assert len(f.sources) == len(f.detections)


def test_labels_are_true_or_a_plausible_confusion_and_confidences_in_their_ranges(scenarios):
    for s in scenarios.values():
        nz = s.noise
        for f in s.frames:
            for det, src in zip(f.detections, f.sources, strict=True):
                if src is None:
                    assert nz.fp_confidence[0] <= det.confidence <= nz.fp_confidence[1]
                    continue
                true = s.objects[src].label
                swapped = {other for label, other, _ in nz.label_swaps if label == true}
                if det.label in swapped:  # as sure as a hit (or a flicker to the same label)
                    assert any(lo <= det.confidence <= hi
                               for lo, hi in (nz.confidence, nz.flicker_confidence))
                elif det.label == true:
                    assert nz.confidence[0] <= det.confidence <= nz.confidence[1]
                else:
                    assert det.label in {lab for lab, _ in CONFUSIONS[true]}, (true, det.label)
                    lo, hi = nz.flicker_confidence
                    assert lo <= det.confidence <= hi


def test_track_ids_are_never_shared_between_objects_or_with_false_positives(scenarios):
    for s in scenarios.values():
        owner: dict[str, object] = {}
        for f in s.frames:
            for det, src in zip(f.detections, f.sources, strict=True):
                key = ("fp", det.center) if src is None else src
                if src is None:
                    assert owner.setdefault(det.track_id, "fp") == "fp"
                else:
                    assert owner.setdefault(det.track_id, key) == key, s.name


def test_known_is_what_was_detected_and_not_since_seen_empty(scenarios):
    for s in scenarios.values():
        ever: set[int] = set()
        for f in s.frames:
            detected = {o for o in f.sources if o is not None}
            ever |= detected
            assert set(f.truth.known) <= ever
            for o in detected:
                assert f.truth.known[o] == f.truth.present[o]
            for o, place in f.truth.known.items():  # a stale belief is about a gone or moved thing
                if o not in f.truth.visible and o in f.truth.present:
                    here = f.truth.present[o]
                    assert here == place or math.dist(here, place) > 0


def test_restart_flags_follow_the_restart_events(scenarios):
    for s in scenarios.values():
        flagged = [f.t for f in s.frames if f.restart]
        assert flagged == [e.t for e in s.events if e.kind == "restart"], s.name
    assert [f.t for f in scenarios["kitchen_day"].frames if f.restart] != []


def test_the_depth_image_has_the_sensor_holes_it_was_configured_with(scenarios):
    frames = scenarios["heavy_flicker"].frames
    holes = np.mean([np.isnan(f.camera.depth).mean() for f in frames])
    assert holes == pytest.approx(NoiseModel().depth_dropout, abs=0.005)
    assert all(f.camera.depth.shape == (24, 32) for f in frames)


# -- events ---------------------------------------------------------------------------------------
def _frames_between(s, t0, t1):
    return [f for f in s.frames if t0 <= f.t < t1]


def test_a_person_in_front_hides_what_is_behind(scenarios):
    s = scenarios["kitchen_day"]
    start = next(e.t for e in s.events if e.kind == "occlusion_start")
    end = next(e.t for e in s.events if e.kind == "occlusion_end")
    during = _frames_between(s, start, end)
    assert len(during) >= 15
    hidden = set().union(*(f.truth.occluded for f in during))
    assert len(hidden) >= 2
    for f in during:
        assert not set(f.sources) & f.truth.occluded


def test_a_watched_removal_leaves_known_at_once_and_present_for_good(scenarios):
    s = scenarios["kitchen_day"]
    rm = next(e for e in s.events if e.kind == "remove")
    before = [f for f in s.frames if f.t < rm.t][-1]
    assert rm.object_id in before.truth.known and rm.object_id in before.truth.visible
    after = [f for f in s.frames if f.t >= rm.t]
    assert rm.object_id not in after[0].truth.known  # the camera sees the place empty
    assert all(rm.object_id not in f.truth.present and rm.object_id not in f.sources
               for f in after)


def test_the_watched_70cm_move_keeps_its_perception_track(scenarios):
    s = scenarios["kitchen_day"]
    mv = next(e for e in s.events if e.kind == "move_far")
    assert mv.watched
    assert math.dist(mv.from_m, mv.to_m) == pytest.approx(0.7)
    tracks = {f.t: det.track_id for f in s.frames
              for det, src in zip(f.detections, f.sources, strict=True) if src == mv.object_id}
    before = [tr for t, tr in tracks.items() if mv.t - 5 <= t < mv.t]
    after = [tr for t, tr in tracks.items() if mv.t <= t < mv.t + 5]
    assert before and after and set(before) == set(after) and len(set(after)) == 1
    near = next(e for e in s.events if e.kind == "move_near")
    assert near.watched and math.dist(near.from_m, near.to_m) < NEAR_MOVE_M


def test_far_moves_go_to_other_rooms_and_across_a_room(scenarios):
    s = scenarios["moves_across_rooms"]
    moves = [e for e in s.events if e.kind == "move_far"]
    assert len(moves) == 4 and not any(e.kind == "move_near" for e in s.events)
    rooms = [(s.world.room_of(e.from_m), s.world.room_of(e.to_m)) for e in moves]
    assert rooms == [("kitchen", "living"), ("kitchen", "kitchen"), ("office", "living"),
                     ("living", "kitchen")]


def test_long_absence_spends_two_hours_away_with_sparse_scans(scenarios):
    s = scenarios["long_absence"]
    assert s.duration_s > 7200
    gaps = [b.t - a.t for a, b in zip(s.frames, s.frames[1:], strict=False)]
    assert sum(1 for g in gaps if g >= 60.0) >= 110
    assert sum(f.restart for f in s.frames) == 1


def test_removals_include_a_same_label_replacement(scenarios):
    s = scenarios["removals"]
    removed = [e for e in s.events if e.kind == "remove"]
    added = [e for e in s.events if e.kind == "add"]
    assert len(removed) == 5 and len(added) == 1
    last = removed[-1]
    assert added[0].to_m == last.from_m
    assert s.objects[added[0].object_id].label == s.objects[last.object_id].label
    assert added[0].object_id != last.object_id


def test_track_id_resets_give_objects_many_track_ids(scenarios):
    def tracks_per_object(s):
        seen = defaultdict(set)
        for f in s.frames:
            for det, src in zip(f.detections, f.sources, strict=True):
                if src is not None:
                    seen[src].add(det.track_id)
        return np.mean([len(v) for v in seen.values()])

    assert tracks_per_object(scenarios["track_id_resets"]) > 2 * tracks_per_object(
        scenarios["heavy_flicker"])


# -- noise statistics -----------------------------------------------------------------------------
@pytest.fixture(scope="module")
def noisy():
    noise = NoiseModel(position_sigma_m=0.03, outlier_prob=0.0, miss_prob=0.2,
                       flicker_prob=0.3, fp_rate=0.5, fp_persist_prob=0.0, track_reset_prob=0.0,
                       feature_sigma=0.05)
    b = ScenarioBuilder("stats", build_world(21, rooms=("kitchen",)), seed=21, noise=noise)
    for _ in range(6):
        b.survey("kitchen", 10)
    return b.build()


def test_misses_flicker_and_false_positives_happen_at_the_configured_rates(noisy):
    visible = sum(len(f.truth.visible) for f in noisy.frames)
    real = [(d, s) for f in noisy.frames for d, s in zip(f.detections, f.sources, strict=True)
            if s is not None]
    assert visible > 600
    assert 1 - len(real) / visible == pytest.approx(0.2, abs=0.045)
    flicker = np.mean([d.label != noisy.objects[s].label for d, s in real])
    assert flicker == pytest.approx(0.3, abs=0.05)
    fps = [sum(s is None for s in f.sources) for f in noisy.frames]
    assert np.mean(fps) == pytest.approx(0.5, abs=0.17)


def test_position_errors_are_unbiased_with_the_configured_spread(noisy):
    err = np.array([np.subtract(d.center, f.truth.present[s]) for f in noisy.frames
                    for d, s in zip(f.detections, f.sources, strict=True) if s is not None])
    assert np.abs(err.mean(axis=0)).max() < 0.005
    np.testing.assert_allclose(err.std(axis=0), 0.03, atol=0.004)


def test_embeddings_stay_close_to_their_object(noisy):
    own, other = [], []
    specs = noisy.objects
    for f in noisy.frames:
        for d, s in zip(f.detections, f.sources, strict=True):
            if s is None:
                continue
            own.append(float(d.feature @ specs[s].embedding))
            o = min(k for k in specs if k != s)
            other.append(float(d.feature @ specs[o].embedding))
    assert np.mean(own) > 0.97 and min(own) > 0.9
    assert np.mean(other) < 0.6


def test_track_ids_persist_exactly_while_the_gap_is_short(noisy):
    gap = noisy.noise.track_max_gap
    last: dict[int, tuple[int, str]] = {}
    changes = keeps = 0
    for f in noisy.frames:
        for d, s in zip(f.detections, f.sources, strict=True):
            if s is None:
                continue
            if s in last:
                k, tr = last[s]
                if f.index - k > gap + 1:
                    assert d.track_id != tr
                    changes += 1
                else:
                    assert d.track_id == tr
                    keeps += 1
            last[s] = (f.index, d.track_id)
    assert keeps > 300 and changes > 10


# -- the renderer ---------------------------------------------------------------------------------
def test_depth_is_the_forward_distance_to_the_nearest_box():
    cam = look_at((0, 0, 1), (1, 0, 1), fov_deg=60.0, vfov_deg=40.0, range_m=5.0)
    lo = np.array([[2.0, -5, -5], [3.0, -5, -5], [-3, -5, -5], [-1, -1, 0]])
    hi = np.array([[2.2, 0.0, 5], [3.2, 5, 5], [-2.8, 5, 5], [1, 1, 2]])
    # box 0: a wall at x=2 covering the right half (y <= 0); box 1: a wall at x=3 everywhere;
    # box 2: behind the camera; box 3: contains the camera (ignored)
    d = render_depth(cam, lo, hi, shape=(4, 6))
    np.testing.assert_allclose(d[:, 3:], 2.0, atol=1e-6)
    np.testing.assert_allclose(d[:, :3], 3.0, atol=1e-6)
    empty = render_depth(cam, lo[2:3], hi[2:3], shape=(4, 6))
    assert np.isinf(empty).all()
    assert render_depth(cam, lo, hi, shape=(4, 6), max_range_m=2.5)[0, 0] == np.inf


def test_a_camera_with_the_rendered_depth_is_a_valid_camera():
    world = build_world(0, rooms=("kitchen",))
    b = ScenarioBuilder("t", world, seed=0)
    frame = b.scan(world.furniture_named("kitchen/table").target_m)
    assert isinstance(frame.camera, Camera) and frame.camera.depth.dtype == np.float32
    finite = np.isfinite(frame.camera.depth)
    assert finite.mean() > 0.9 and (frame.camera.depth[finite] > 0).all()


def test_world_objects_fit_on_their_surfaces_without_overlapping():
    world = build_world(3)
    boxes = []
    for oid, (sid, c) in world.placements.items():
        size = world.objects[oid].size_m
        assert size == LABEL_SIZES[world.objects[oid].label]
        if sid >= 0:
            s = world.surface(sid)
            assert c[2] == pytest.approx(s.z_m + size[2] / 2)
            assert s.min_xy[0] <= c[0] - size[0] / 2 and c[0] + size[0] / 2 <= s.max_xy[0]
            assert s.min_xy[1] <= c[1] - size[1] / 2 and c[1] + size[1] / 2 <= s.max_xy[1]
        boxes.append((np.subtract(c, np.divide(size, 2)), np.add(c, np.divide(size, 2))))
    for i, (alo, ahi) in enumerate(boxes):
        for blo, bhi in boxes[i + 1:]:
            assert not (np.all(alo < bhi) and np.all(blo < ahi))


@pytest.mark.parametrize("name", NAMES)
def test_every_scenario_builds_for_other_seeds(name):
    s = build(name, seed=101)
    assert s.seed == 101 and len(s.frames) >= 100
    moved = [e.object_id for e in s.events if e.kind == "move_far"]
    assert len(moved) == len(set(moved))  # each far move is a different object


# -- the ground truth of "the camera can see it" -----------------------------------------------
def _sight(camera, objects, others=()):
    """line_of_sight for ``objects`` [(centre, size)] with ``others`` [(min, max)] in front."""
    from locimem.sim.render import line_of_sight
    centers = np.array([c for c, _ in objects], dtype=float)
    sizes = np.array([s for _, s in objects], dtype=float)
    lo = np.vstack([np.array([a for a, _ in others]).reshape(-1, 3), centers - sizes / 2])
    hi = np.vstack([np.array([b for _, b in others]).reshape(-1, 3), centers + sizes / 2])
    own = np.arange(len(others), len(others) + len(objects))
    return line_of_sight(camera, centers, sizes, lo, hi, own).tolist()


def test_an_object_never_hides_itself_whatever_its_shape():
    # a 24 cm plate 3 cm thick seen nearly edge-on, from below and above its plane: its near
    # rim is 12 cm in front of its centre. The old truth read the depth image at the centre's
    # pixel, whose ray is not the centre's: at 24 x 32 such a plate could hide behind its own
    # rim, and the simulated detector then never reported a plate in plain view.
    for height in (1.1, 1.2, 1.25, 1.3, 1.5):
        cam = look_at((0, 0, height), (2, 0, 1.25), fov_deg=60.0, vfov_deg=45.0, range_m=5.0)
        plates = [((x, y, 1.265), (w, w, 0.03)) for x in (1.0, 1.5, 2.5)
                  for y in (-0.3, 0.0, 0.2) for w in (0.12, 0.24, 0.4)]
        assert all(_sight(cam, [plate]) == [True] for plate in plates)


def test_what_stands_in_front_hides_and_what_stands_beside_does_not():
    cam = look_at((0, 0, 1.0), (3, 0, 1.0), fov_deg=60.0, vfov_deg=45.0, range_m=5.0)
    cup = ((2.0, 0.0, 1.0), (0.1, 0.1, 0.1))
    aside = ((2.0, 0.5, 1.0), (0.1, 0.1, 0.1))
    board = ((1.0, -0.2, 0.8), (1.05, 0.2, 1.2))  # a board between the camera and the cup
    assert _sight(cam, [cup, aside], [board]) == [False, True]
    assert _sight(cam, [cup, aside]) == [True, True]
    # within the margin (3 cm before the cup's face) a neighbour touching it hides nothing
    touching = ((1.93, -0.2, 0.8), (1.96, 0.2, 1.2))
    assert _sight(cam, [cup], [touching]) == [True]
    inches = ((1.85, -0.2, 0.8), (1.88, 0.2, 1.2))
    assert _sight(cam, [cup], [inches]) == [False]


def test_a_table_hides_a_cup_on_it_from_below_and_not_from_above():
    cup = ((2.0, 0.0, 0.80), (0.1, 0.1, 0.1))
    table = ((1.5, -0.5, 0.70), (2.5, 0.5, 0.75))
    above = look_at((0, 0, 1.5), (2, 0, 0.8), fov_deg=60.0, vfov_deg=45.0, range_m=5.0)
    below = look_at((0, 0, 0.3), (2, 0, 0.8), fov_deg=60.0, vfov_deg=45.0, range_m=5.0)
    assert _sight(above, [cup], [table]) == [True]
    assert _sight(below, [cup], [table]) == [False]


def test_a_box_around_the_camera_and_a_point_behind_it_are_handled():
    cam = look_at((0, 0, 1.0), (3, 0, 1.0), fov_deg=60.0, vfov_deg=45.0, range_m=5.0)
    room = ((-5, -5, 0), (5, 5, 3))  # the camera stands inside it: not an occluder
    ahead = ((2.0, 0.0, 1.0), (0.1, 0.1, 0.1))
    behind = ((-2.0, 0.0, 1.0), (0.1, 0.1, 0.1))
    assert _sight(cam, [ahead, behind], [room]) == [True, False]


def test_the_shelf_front_row_hides_the_back_row_now_and_then(scenarios):
    s = scenarios["shelf"]
    seen: dict[int, set[bool]] = defaultdict(set)
    for f in s.frames:
        for oid in f.truth.visible:
            seen[oid].add(True)
        for oid in f.truth.occluded:
            seen[oid].add(False)
    shelved = [oid for oid in s.objects
               if s.objects[oid].label in ("bottle", "vase", "plant", "clock")]
    assert sum(seen[oid] == {True, False} for oid in shelved) >= 4  # hidden, then in view
    assert [e.kind for e in s.events] == ["remove", "move_near", "remove"]
