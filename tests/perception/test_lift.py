"""lift_frame: 2D boxes and a rendered depth image lift to the world-frame boxes rendered."""

from __future__ import annotations

import contextlib
import io
import math
import re
from pathlib import Path
from types import SimpleNamespace

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy.spatial.transform import Rotation

from locimem import ObjectMemory
from locimem.errors import InvalidInput
from locimem.geometry import rotation_matrix_from_wxyz, to_camera_frame
from locimem.perception import Box2D, Intrinsics, lift_frame

K = Intrinsics(525.0, 525.0, 319.5, 239.5, 640, 480)
# optical (z forward, x right, y down) axes in the body frame (x forward, y left, z up)
OPTICAL_IN_BODY = np.array([[0.0, 0.0, 1.0], [-1.0, 0.0, 0.0], [0.0, -1.0, 0.0]])
CUBE = ((2.0, -0.2, 0.5), (2.4, 0.2, 0.9))  # a 40 cm cube, centre (2.2, 0, 0.7)


def _quat(matrix: np.ndarray) -> tuple[float, float, float, float]:
    x, y, z, w = Rotation.from_matrix(matrix).as_quat()
    return (w, x, y, z)


def looking(pos, target, roll_deg: float = 0.0):
    """(body quaternion, optical quaternion) of a camera at ``pos`` looking at ``target``."""
    d = np.asarray(target, float) - np.asarray(pos, float)
    yaw = math.degrees(math.atan2(d[1], d[0]))
    pitch = math.degrees(math.atan2(-d[2], math.hypot(d[0], d[1])))
    body = Rotation.from_euler("ZYX", [yaw, pitch, roll_deg], degrees=True).as_matrix()
    return _quat(body), _quat(body @ OPTICAL_IN_BODY)


def render(k: Intrinsics, pos, quat_optical, boxes, floor: float | None = 0.0,
           wall_x: float | None = 4.0) -> tuple[np.ndarray, np.ndarray]:
    """(depth in metres, 0 for no return; index of the box each pixel sees, -1 for none) of
    axis-aligned ``boxes`` [(lo, hi)], the floor z = ``floor`` and the wall x = ``wall_x``."""
    rot = rotation_matrix_from_wxyz(quat_optical)
    u, v = np.meshgrid(np.arange(k.width), np.arange(k.height))
    rays = np.stack([(u - k.cx) / k.fx, (v - k.cy) / k.fy, np.ones(u.shape)], -1) @ rot.T
    o = np.asarray(pos, float)
    t = np.full(u.shape, np.inf)
    which = np.full(u.shape, -1)
    with np.errstate(divide="ignore", invalid="ignore"):
        for i, (lo, hi) in enumerate(boxes):
            t1, t2 = (np.asarray(lo) - o) / rays, (np.asarray(hi) - o) / rays
            near = np.nanmax(np.minimum(t1, t2), -1)
            far = np.nanmin(np.maximum(t1, t2), -1)
            hit = (far >= near) & (near > 0) & (near < t)
            t, which = np.where(hit, near, t), np.where(hit, i, which)
        for axis, value in ((2, floor), (0, wall_x)):
            if value is not None:
                tp = (value - o[axis]) / rays[..., axis]
                hit = (tp > 0) & (tp < t)
                t, which = np.where(hit, tp, t), np.where(hit, -1, which)
    t[~np.isfinite(t)] = 0.0
    return t.astype(np.float32), which


def box_of(k: Intrinsics, pos, quat_optical, lo, hi) -> tuple[float, float, float, float]:
    """The image box (pixel edges) around a world box's projected corners."""
    rot = rotation_matrix_from_wxyz(quat_optical)
    corners = np.array([[x, y, z] for x in (lo[0], hi[0]) for y in (lo[1], hi[1])
                        for z in (lo[2], hi[2])])
    p = (corners - np.asarray(pos)) @ rot
    u = p[:, 0] / p[:, 2] * k.fx + k.cx + 0.5
    v = p[:, 1] / p[:, 2] * k.fy + k.cy + 0.5
    return (max(0.0, u.min()), max(0.0, v.min()), min(k.width, u.max()),
            min(k.height, v.max()))


def assert_box(det, lo, hi, center_tol: float = 0.015, size_tol: float = 0.06) -> None:
    lo, hi = np.asarray(lo), np.asarray(hi)
    np.testing.assert_allclose(det.center, (lo + hi) / 2, atol=center_tol)
    np.testing.assert_allclose(det.size, hi - lo, rtol=size_tol)


def scene(pos, target=None, roll_deg=0.0, k=K, boxes=(CUBE,), **kw):
    target = np.mean(CUBE, axis=0) if target is None else target
    body, optical = looking(pos, target, roll_deg)
    depth, which = render(k, pos, optical, boxes, **kw)
    return body, optical, depth, which


# -- placing -----------------------------------------------------------------------------------


def test_a_box_straight_ahead_lifts_to_its_place_and_size():
    pos = (0.0, 0.0, 0.7)
    _, q, depth, _ = scene(pos, floor=None)
    lifted = lift_frame([Box2D(*box_of(K, pos, q, *CUBE), "box", 0.9)], depth, K, pos, q)
    assert lifted.skipped == [] and lifted.indices == [0]
    (det,) = lifted.detections
    assert (det.label, det.confidence) == ("box", 0.9)
    # only the front face is seen: the depth behind it is taken as its smaller side
    assert_box(det, *CUBE, center_tol=0.01, size_tol=0.04)


@pytest.mark.parametrize("pos, roll", [
    ((0.3, -1.3, 0.7), 0.0),     # 30 degrees to the side, level
    ((0.6, 1.4, 1.6), 0.0),      # from above, to the other side
    ((-0.2, -0.9, 1.9), 12.0),   # from above, rolled
    ((4.0, 1.2, 1.2), -8.0),     # from behind (no wall in the way here)
])
def test_a_rotated_camera_lifts_to_the_same_place(pos, roll):
    body, q, depth, _ = scene(pos, roll_deg=roll, floor=None, wall_x=None if pos[0] > 3
                              else 4.0)
    box = Box2D(*box_of(K, pos, q, *CUBE), "box", 0.9)
    (det,) = lift_frame([box], depth, K, pos, q).detections
    assert_box(det, *CUBE, center_tol=0.02, size_tol=0.08)
    # the same pose given in locimem's body frame lifts the same
    (same,) = lift_frame([box], depth, K, pos, body, frame="body").detections
    np.testing.assert_allclose(same.center, det.center, atol=1e-9)
    np.testing.assert_allclose(same.size, det.size, atol=1e-9)


def test_the_camera_is_the_scans_and_sees_what_the_depth_image_shows():
    pos = (0.0, 0.0, 0.7)
    body, q, depth, _ = scene(pos, floor=None)
    cam = lift_frame([], depth, K, pos, q, range_m=(0.2, 6.0)).camera
    np.testing.assert_allclose(cam.quaternion, body, atol=1e-9)  # in the body frame
    assert cam.position == pos and cam.range_m == 6.0 and cam.depth.shape == (480, 640)
    assert cam.fov_deg == pytest.approx(math.degrees(2 * math.atan(320 / 525)))
    assert cam.vfov_deg == pytest.approx(math.degrees(2 * math.atan(240 / 525)))
    assert cam.intrinsics == (525.0, 525.0, 319.5, 239.5, 640.0, 480.0)
    # the cube's centre is straight ahead; a point 1 m left of it, 2.2 m ahead
    body_pts = to_camera_frame(cam, [[2.2, 0.0, 0.7], [2.2, 1.0, 0.7]])
    np.testing.assert_allclose(body_pts, [[2.2, 0.0, 0.0], [2.2, 1.0, 0.0]], atol=1e-9)


def test_an_object_taken_away_is_lost_by_the_cameras_looks():
    pos = (0.0, 0.0, 0.7)
    _, q, depth, _ = scene(pos)
    box = Box2D(*box_of(K, pos, q, *CUBE), "box", 0.9)
    _, _, empty, _ = scene(pos, boxes=())
    with ObjectMemory.open(":memory:", durable=False) as mem:
        for t in range(3):
            lifted = lift_frame([box], depth, K, pos, q)
            mem.observe(float(t), lifted.detections, lifted.camera)
        (obj,) = mem.objects()
        assert obj.status.value == "confirmed"
        np.testing.assert_allclose(obj.center, (2.2, 0.0, 0.7), atol=0.02)
        for t in range(3, 12):  # the cube is gone: the wall behind its place is seen
            lifted = lift_frame([], empty, K, pos, q)
            mem.observe(float(t), lifted.detections, lifted.camera)
        assert [o.status.value for o in mem.objects()] == ["lost"]


# -- what is not lifted ------------------------------------------------------------------------


def test_a_box_over_no_return_pixels_is_skipped_with_its_reason():
    pos = (0.0, 0.0, 0.7)
    _, q, depth, _ = scene(pos, floor=None)
    depth = depth.copy()
    depth[:, :100] = 0.0  # no return on the left
    depth[:50, 500:] = np.nan
    boxes = [Box2D(10, 200, 90, 300, "ghost", 0.8),
             Box2D(*box_of(K, pos, q, *CUBE), "box", 0.9),
             Box2D(520, 0, 600, 40, "ghost", 0.7)]
    lifted = lift_frame(boxes, depth, K, pos, q)
    assert [d.label for d in lifted.detections] == ["box"] and lifted.indices == [1]
    assert [i for i, _ in lifted.skipped] == [0, 2]
    assert all(reason.startswith("no depth: 0 of ") for _, reason in lifted.skipped)


def test_no_object_from_background_depth():
    """A dark cube gives no return; its box's margin shows the wall behind it. Without a mask
    that margin must not become the cube: the box is refused, and nothing lies on the wall."""
    pos = (0.0, 0.0, 0.7)
    _, q, depth, which = scene(pos, floor=None)
    depth = np.where(which == 0, 0.0, depth).astype(np.float32)  # the cube: no return
    x0, y0, x1, y1 = box_of(K, pos, q, *CUBE)
    loose = Box2D(x0 - 25, y0 - 25, x1 + 25, y1 + 25, "box", 0.9)  # margin: the wall at 4 m
    lifted = lift_frame([loose], depth, K, pos, q)
    assert lifted.detections == [] and lifted.indices == []
    ((index, reason),) = lifted.skipped
    assert index == 0 and reason.startswith("background depth only: 0 of ")
    assert not any(d.center[0] > 3.5 for d in lifted.detections)  # nothing on the wall
    # with the cube's depth back, the same box lifts onto the cube, not the wall
    (det,) = lift_frame([loose], scene(pos, floor=None)[2], K, pos, q).detections
    assert det.center[0] == pytest.approx(2.2, abs=0.05)


def test_a_box_beyond_the_range_and_a_tiny_one_are_skipped():
    pos = (0.0, 0.0, 0.7)
    _, q, depth, _ = scene(pos, floor=None, wall_x=14.0)
    boxes = [Box2D(10, 10, 60, 60, "far", 0.8),  # the wall, 14 m away
             Box2D(300.2, 300.2, 300.4, 300.4, "speck", 0.8),
             Box2D(*box_of(K, pos, q, *CUBE), "box", 0.9)]
    lifted = lift_frame(boxes, depth, K, pos, q, range_m=(0.1, 10.0))
    assert lifted.indices == [2]
    (far, speck) = lifted.skipped
    assert far[0] == 0 and far[1].startswith("out of range: 0 of 2500 returns")
    assert speck[0] == 1 and speck[1].startswith("too small")
    lifted = lift_frame(boxes[:1], depth, K, pos, q, range_m=(0.1, 20.0))
    (wall,) = lifted.detections  # its near face at 14 m
    assert lifted.skipped == [] and wall.center[0] - wall.size[0] / 2 == pytest.approx(
        14.0, abs=0.01)


def test_min_pixels_and_an_empty_mask():
    pos = (0.0, 0.0, 0.7)
    _, q, depth, _ = scene(pos, floor=None)
    box = box_of(K, pos, q, *CUBE)
    assert lift_frame([Box2D(*box, "box", 0.9)], depth, K, pos, q,
                      min_pixels=20_000).skipped[0][1].startswith("no depth")
    empty = Box2D(*box, "box", 0.9, mask=np.zeros((480, 640), bool))
    assert lift_frame([empty], depth, K, pos, q).skipped == [
        (0, "empty mask: the mask marks no pixel inside the box")]


# -- masks, resolutions, units -----------------------------------------------------------------


def wide_scene():
    """A cube on the floor seen from the side and above, and a box around it reaching far
    right, over the floor and the wall: its inner region is background."""
    cube = ((2.0, -0.2, 0.0), (2.4, 0.2, 0.4))
    pos = (0.6, -1.2, 1.3)
    _, q = looking(pos, (2.2, 0.0, 0.2))
    depth, which = render(K, pos, q, [cube])
    x0, y0, x1, y1 = box_of(K, pos, q, *cube)
    wide = (x0, y0 - 30, min(640.0, x1 + 2.5 * (x1 - x0)), y1 + 20)
    return cube, pos, q, depth, which, wide


def test_a_mask_picks_the_object_and_not_the_background_behind_it():
    cube, pos, q, depth, which, wide = wide_scene()
    bare = lift_frame([Box2D(*wide, "box", 0.9)], depth, K, pos, q).detections[0]
    assert np.linalg.norm(np.subtract(bare.center, (2.2, 0.0, 0.2))) > 0.3  # the background
    masked = Box2D(*wide, "box", 0.9, mask=which == 0)
    (det,) = lift_frame([masked], depth, K, pos, q).detections
    assert_box(det, *cube, center_tol=0.015, size_tol=0.06)


@pytest.mark.parametrize("width, height, size_tol", [(320, 240, 0.08), (160, 120, 0.1)])
def test_depth_at_another_resolution(width, height, size_tol):
    cube, pos, q, _, which, wide = wide_scene()
    kd = K.scaled(width, height)
    depth, _ = render(kd, pos, q, [cube])
    box = Box2D(*wide, "box", 0.9, mask=which == 0)  # boxes and masks: color pixels
    (det,) = lift_frame([box], depth, K, pos, q, depth_intrinsics=kd).detections
    assert_box(det, *cube, center_tol=0.02, size_tol=size_tol)  # a depth pixel: 1.7 cm
    assert lift_frame([box], depth, K, pos, q, depth_intrinsics=kd).camera.depth.shape == (
        height, width)
    with pytest.raises(InvalidInput, match=rf"intrinsics.scaled\({width}, {height}\)"):
        lift_frame([box], depth, K, pos, q)


def test_uint16_millimetres():
    _, pos, q, depth, which, wide = wide_scene()
    mm = np.round(depth * 1000).astype(np.uint16)
    box = Box2D(*wide, "box", 0.9, mask=which == 0)
    (det,) = lift_frame([box], mm, K, pos, q, depth_scale=0.001).detections
    (ref,) = lift_frame([box], depth, K, pos, q).detections
    np.testing.assert_allclose(det.center, ref.center, atol=0.002)
    np.testing.assert_allclose(det.size, ref.size, atol=0.004)
    cam = lift_frame([box], mm, K, pos, q, depth_scale=0.001).camera
    assert cam.depth.dtype == np.float32
    np.testing.assert_allclose(cam.depth, mm * 0.001, atol=1e-6)


def test_embedding_and_track_id_are_carried():
    pos = (0.0, 0.0, 0.7)
    _, q, depth, _ = scene(pos, floor=None)
    box = Box2D(*box_of(K, pos, q, *CUBE), " Red  Box", 0.5, embedding=[3.0, 4.0],
                track_id=7)
    (det,) = lift_frame([box], depth, K, pos, q).detections
    assert (det.label, det.track_id) == ("red box", "7")
    np.testing.assert_allclose(det.feature, [3.0, 4.0])


# -- intrinsics --------------------------------------------------------------------------------


def test_intrinsics_from_a_camera_info_message_or_dict():
    k = [600.0, 0.0, 320.0, 0.0, 610.0, 240.0, 0.0, 0.0, 1.0]
    msg = SimpleNamespace(k=np.array(k), width=640, height=480, d=[0.0] * 5)
    assert Intrinsics.from_camera_info(msg) == Intrinsics(600, 610, 320, 240, 640, 480)
    assert Intrinsics.from_camera_info({"K": k, "width": 640, "height": 480}).fy == 610.0
    with pytest.raises(InvalidInput, match="uncalibrated"):
        Intrinsics.from_camera_info({"k": [0] * 9, "width": 640, "height": 480})
    with pytest.raises(InvalidInput, match="9 numbers"):
        Intrinsics.from_camera_info({"k": k[:6], "width": 640, "height": 480})
    with pytest.raises(InvalidInput, match="no 'height'"):
        Intrinsics.from_camera_info({"k": k, "width": 640})
    with pytest.raises(InvalidInput, match="skew"):
        Intrinsics.from_camera_info({"k": [600, 1, 320, 0, 600, 240, 0, 0, 1], "width": 640,
                                     "height": 480})


def test_scaled_intrinsics_keep_the_rays():
    small = K.scaled(320, 240)
    assert small == Intrinsics(262.5, 262.5, 159.5, 119.5, 320, 240)
    # the corner of the image is the same ray at both resolutions
    assert (-0.5 - K.cx) / K.fx == pytest.approx((-0.5 - small.cx) / small.fx)


# -- bad input ---------------------------------------------------------------------------------


@pytest.mark.parametrize("args", [
    (-525.0, 525.0, 319.5, 239.5, 640, 480),
    (525.0, 0.0, 319.5, 239.5, 640, 480),
    (525.0, 525.0, math.nan, 239.5, 640, 480),
    (525.0, 525.0, 319.5, 239.5, 0, 480),
    (525.0, 525.0, 319.5, 239.5, 640.5, 480),
])
def test_bad_intrinsics_raise(args):
    with pytest.raises(InvalidInput):
        Intrinsics(*args)


@pytest.mark.parametrize("kw", [
    {"x0": 10, "x1": 5}, {"y0": math.nan}, {"score": 1.5}, {"label": ""},
    {"mask": np.zeros((4, 4, 2), bool)}, {"mask": np.full((4, 4), 0.5)},
    {"embedding": [0.0, 0.0]}, {"track_id": True},
])
def test_bad_boxes_raise(kw):
    args = {"x0": 1, "y0": 1, "x1": 9, "y1": 9, "label": "cup", "score": 0.5, **kw}
    with pytest.raises(InvalidInput):
        Box2D(**args)


def test_bad_frames_raise():
    pos = (0.0, 0.0, 0.7)
    _, q, depth, _ = scene(pos, floor=None)
    ok = Box2D(100, 100, 200, 200, "box", 0.9)
    lift_frame([ok], depth, K, pos, q)
    bad = [
        dict(boxes=[Box2D(700, 10, 800, 100, "box", 0.9)]),  # outside the image
        dict(boxes=[Box2D(600, 10, 660, 100, "box", 0.9)]),  # partly outside
        dict(boxes=[Box2D(100, 100, 200, 200, "box", 0.9, mask=np.ones((240, 320), bool))]),
        dict(boxes=[(100, 100, 200, 200)]),
        dict(position=(0.0, math.nan, 0.7)),
        dict(quaternion=(math.nan, 0.0, 0.0, 1.0)),
        dict(quaternion=(2.0, 0.0, 0.0, 0.0)),
        dict(depth=depth[:, :320]),
        dict(depth=depth > 1),
        dict(intrinsics=(525.0, 525.0, 319.5, 239.5, 640, 480)),
        dict(frame="camera"),
        dict(range_m=(5.0, 1.0)),
        dict(depth_scale=0.0),
        dict(min_pixels=0),
    ]
    for change in bad:
        args = dict(boxes=[ok], depth=depth, intrinsics=K, position=pos, quaternion=q)
        frame = change.pop("frame", "optical")
        range_m = change.pop("range_m", (0.1, 10.0))
        scale = change.pop("depth_scale", 1.0)
        min_pixels = change.pop("min_pixels", 16)
        args.update(change)
        with pytest.raises(InvalidInput):
            lift_frame(args["boxes"], args["depth"], args["intrinsics"], args["position"],
                       args["quaternion"], frame=frame, range_m=range_m, depth_scale=scale,
                       min_pixels=min_pixels)


# -- any pose ----------------------------------------------------------------------------------

SMALL = Intrinsics(150.0, 150.0, 79.5, 59.5, 160, 120)


@settings(max_examples=40, deadline=None)
@given(st.floats(-180, 180), st.floats(1.5, 3.5), st.floats(0.2, 1.6), st.floats(-20, 20),
       st.floats(0.15, 0.6), st.floats(-3, 3), st.floats(-3, 3))
def test_any_pose_lifts_a_masked_box_near_its_place(azimuth, dist, height, roll, side, x, y):
    """A cube anywhere on the floor, seen from any side and height, masked: its centre is
    found within 2 cm plus 2 % of the distance, its size within 12 % and a depth pixel."""
    lo, hi = (x - side / 2, y - side / 2, 0.0), (x + side / 2, y + side / 2, side)
    a = math.radians(azimuth)
    pos = (x + dist * math.cos(a), y + dist * math.sin(a), height)
    _, q = looking(pos, (x, y, side / 2), roll)
    depth, which = render(SMALL, pos, q, [(lo, hi)], wall_x=None)
    box = Box2D(*box_of(SMALL, pos, q, lo, hi), "cube", 0.9, mask=which == 0)
    lifted = lift_frame([box], depth, SMALL, pos, q, min_pixels=4)
    (det,) = lifted.detections
    pixel = dist / SMALL.fx  # a depth pixel's footprint at the cube: up to 2.3 cm
    np.testing.assert_allclose(det.center, (x, y, side / 2), atol=0.02 + 0.02 * dist)
    np.testing.assert_allclose(det.size, (side,) * 3, rtol=0.12, atol=0.01 + pixel)


def test_the_guides_example_runs_and_prints_what_it_says():
    guide = (Path(__file__).resolve().parents[2] / "docs" / "guide.md").read_text()
    (block,) = [b for b in re.findall(r"```python\n(.*?)```", guide, flags=re.S)
                if "lift_frame" in b]
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        exec(compile(block, "docs/guide.md", "exec"), {})
    claims = [line.strip()[2:].split("    ")[0] for line in block.splitlines()
              if line.strip().startswith("# [")]
    assert out.getvalue().splitlines() == claims


# -- a box cut by the image's edge ---------------------------------------------------------------
EDGE_TARGET = (2.2, 2.2 * 320 / 525, 0.7)  # the image's right edge runs through the cube's centre


def test_a_box_cut_by_the_images_edge_lifts_what_is_seen():
    pos = (0.0, 0.0, 0.7)
    _, q, depth, _ = scene(pos, target=EDGE_TARGET, floor=None)
    box = box_of(K, pos, q, *CUBE)
    assert box[2] == K.width  # the box runs to the image's edge
    lifted = lift_frame([Box2D(*box, "box", 0.9)], depth, K, pos, q)
    assert lifted.skipped == [] and lifted.indices == [0]
    (det,) = lifted.detections
    # the visible half of the front face (y from 0 to 0.2), lifted as a whole thing is: its
    # centre and extent (and a depth its width suggests), not a guess beyond the edge
    assert 0.06 <= det.center[1] <= 0.14 and 0.14 <= det.size[1] <= 0.26
    assert 2.05 <= det.center[0] <= 2.2 and det.center[2] == pytest.approx(0.7, abs=0.02)


def test_a_look_that_cuts_a_place_is_no_evidence_it_is_empty():
    pos = (0.0, 0.0, 0.7)
    _, q, depth, _ = scene(pos)
    box = Box2D(*box_of(K, pos, q, *CUBE), "box", 0.9)
    _, q_edge, empty, _ = scene(pos, target=EDGE_TARGET, boxes=())
    with ObjectMemory.open(":memory:", durable=False) as mem:
        for t in range(3):
            lifted = lift_frame([box], depth, K, pos, q)
            mem.observe(float(t), lifted.detections, lifted.camera)
        for t in range(3, 12):  # the cube is gone, but only half its place is in the image
            lifted = lift_frame([], empty, K, pos, q_edge)
            mem.observe(float(t), lifted.detections, lifted.camera)
        assert [o.status.value for o in mem.objects()] == ["confirmed"]
