"""The simulated 2D detector and depth camera: exact boxes and masks on a known scene, what
must get none, the depth sensor's noise within its bounds, and the instance renderer agreeing
with the depth renderer."""

from __future__ import annotations

import numpy as np
import pytest

from locimem.geometry import look_at
from locimem.perception import lift_frame
from locimem.sim.frames2d import (
    BACKGROUND,
    NOTHING,
    DepthSensor,
    camera_intrinsics,
    frames_of,
    instance_image,
    masks_of,
    sensor_depth,
)
from locimem.sim.render import boxes_to_arrays, render_depth, render_ids
from locimem.sim.scenario import ScenarioBuilder
from locimem.sim.world import Box, build_world

# A 90 x 90 degree camera 1 m up looking along +x: 40 x 40 pixels, fx = fy = 20, centre 20.
CAMERA = look_at((0.0, 0.0, 1.0), (3.0, 0.0, 1.0), fov_deg=90.0, vfov_deg=90.0, range_m=5.0)
IMAGE = (40, 40)
WALL = Box((4.0, -5.0, -4.0), (4.1, 5.0, 6.0))
# its front face at 2 m spans y -0.44..0.26 (columns 17..23) and z 0.83..1.13 (rows 19..21)
CRATE = Box((2.0, -0.44, 0.83), (2.2, 0.26, 1.13))
HIDDEN = Box((2.5, -0.2, 0.9), (2.6, 0.1, 1.05))  # wholly behind the crate


def test_an_unoccluded_box_gets_its_exact_pixels_grown_by_one():
    depth, ids = instance_image(CAMERA, {7: CRATE, 8: HIDDEN}, [WALL], IMAGE)
    rows, cols = np.nonzero(ids == 7)
    assert (rows.min(), rows.max(), cols.min(), cols.max()) == (19, 21, 17, 23)
    assert (ids == 7).sum() == 3 * 7
    assert np.allclose(depth[ids == 7], 2.0)
    assert set(np.unique(ids)) == {7, BACKGROUND}  # the wall fills the rest; 8 is hidden
    masks = masks_of(ids, [BACKGROUND, 7, 8], grow_px=1)
    assert list(masks) == [7]  # no mask for the wall, none for the hidden box
    rows, cols = np.nonzero(masks[7])
    assert (rows.min(), rows.max(), cols.min(), cols.max()) == (18, 22, 16, 24)
    assert masks[7].sum() == 5 * 9  # a 3 x 3 dilation of a rectangle: a rectangle
    assert masks_of(ids, [7], grow_px=0)[7].sum() == 21


def test_nothing_in_view_is_nothing_and_intrinsics_match_the_camera():
    depth, ids = instance_image(CAMERA, {}, [], IMAGE)
    assert (ids == NOTHING).all() and np.isinf(depth).all()
    k = camera_intrinsics(CAMERA, IMAGE)
    assert (k.fx, k.fy, k.cx, k.cy, k.width, k.height) == pytest.approx(
        (20.0, 20.0, 19.5, 19.5, 40, 40))


def test_the_instance_renderer_agrees_with_the_depth_renderer():
    world = build_world(4, rooms=("kitchen", "living"))
    lo, hi = boxes_to_arrays(world.static_boxes())
    for f in world.furniture:
        cam = look_at(f.viewpoint_m, f.target_m, fov_deg=80.0, vfov_deg=60.0, range_m=4.5)
        depth, index = render_ids(cam, lo, hi, (60, 80), max_range_m=13.5)
        assert np.array_equal(depth, render_depth(cam, lo, hi, (60, 80), max_range_m=13.5))
        assert ((index >= 0) == np.isfinite(depth)).all()


def test_depth_noise_is_one_percent_with_holes_and_no_flying_pixels_on_a_flat_wall():
    clean = np.full((200, 200), 2.0, dtype=np.float32)
    ids = np.zeros((200, 200), dtype=np.int32)
    sensed = sensor_depth(clean, ids, {}, DepthSensor(), np.random.default_rng(1))
    holes = np.isnan(sensed)
    assert 0.015 < holes.mean() < 0.025  # dropout 2 %
    rel = sensed[~holes] / 2.0 - 1.0
    assert abs(rel.mean()) < 0.001 and 0.0095 < rel.std() < 0.0105


def test_a_depth_edge_has_holes_and_flying_pixels_between_its_sides_and_nowhere_else():
    clean = np.full((200, 200), 3.0, dtype=np.float32)
    clean[:, :100] = 1.0  # a step from 1 m to 3 m between columns 99 and 100
    ids = np.zeros((200, 200), dtype=np.int32)
    quiet = DepthSensor(range_sigma_frac=0.0, dropout=0.0)
    sensed = sensor_depth(clean, ids, {}, quiet, np.random.default_rng(2))
    edge, rest = sensed[:, 99:101], np.delete(sensed, [99, 100], axis=1)
    assert np.isfinite(rest).all() and set(np.unique(rest)) == {1.0, 3.0}
    assert 0.25 < np.isnan(edge).mean() < 0.35  # edge holes: 30 %
    mixed = edge[np.isfinite(edge) & (edge != 1.0) & (edge != 3.0)]
    assert ((mixed > 1.0) & (mixed < 3.0)).all()
    assert 0.3 < mixed.size / np.isfinite(edge).sum() < 0.7  # flying pixels: half the rest


def test_dark_and_thin_things_read_worse():
    clean = np.full((100, 100), 2.0, dtype=np.float32)
    ids = np.zeros((100, 100), dtype=np.int32)
    ids[:, :50] = 5
    sensed = sensor_depth(clean, ids, {5: 0.4}, DepthSensor(dropout=0.0),
                          np.random.default_rng(3))
    assert 0.35 < np.isnan(sensed[:, :50]).mean() < 0.45
    assert np.isnan(sensed[:, 50:]).sum() == 0


def _small_day():
    world = build_world(5, rooms=("kitchen",))
    b = ScenarioBuilder("small", world, seed=5)
    b.stock("kitchen/table", 3)
    b.look("kitchen/table", 12)
    b.look("kitchen/counter", 6)
    b.look("kitchen/table", 6)
    return b.build()


def test_every_detection_gets_a_box_of_its_own_object_or_is_listed():
    scenario = _small_day()
    for frame, f2 in zip(scenario.frames, frames_of(scenario), strict=True):
        assert len(f2.boxes) + len(f2.unrendered) == len(frame.detections)
        assert f2.depth.shape == (240, 320) and f2.depth.dtype == np.float32
        assert (f2.intrinsics.width, f2.intrinsics.height) == (320, 240)
        for box, src in zip(f2.boxes, f2.sources, strict=True):
            assert src is None or src in frame.truth.visible  # never a hidden thing
            if src is None:
                assert box.mask is None  # a false positive: a box, no mask
                continue
            rows, cols = np.nonzero(box.mask)
            assert (cols.min(), rows.min(), cols.max() + 1, rows.max() + 1) == box.bounds
        lifted = lift_frame(f2.boxes, f2.depth, f2.intrinsics, f2.position, f2.quaternion,
                            frame="body", range_m=(0.1, f2.range_m))
        assert len(lifted.detections) + len(lifted.skipped) == len(f2.boxes)


def test_the_frames_are_the_same_every_time():
    scenario = _small_day()
    a, b = list(frames_of(scenario))[:5], list(frames_of(scenario))[:5]
    for fa, fb in zip(a, b, strict=True):
        assert np.array_equal(fa.depth, fb.depth, equal_nan=True)
        assert [x.bounds for x in fa.boxes] == [x.bounds for x in fb.boxes]
