"""``geometry.place_looks`` judges every box of a scan at once; the box-by-box loop it replaced
is kept here as the reference. Both must give the same states and the same floats (the
visible share is compared with thresholds downstream), on random cameras, boxes and depth
images — including the coarse images of the belief tests."""

from __future__ import annotations

import math

import numpy as np
import pytest

from locimem.errors import InvalidInput
from locimem.geometry import (
    LARGE_PLACE_M,
    MAX_PLACE_PIXELS,
    PARTLY_IN_VIEW,
    Place,
    look_at,
    pixel_index,
    pixel_rays,
    place_looks,
    project,
    ray_box_chord,
    to_camera_frame,
)
from locimem.sim.render import render_depth

SHAPES = [(12, 16), (13, 17), (24, 32), (60, 80), (480, 640)]


def reference_place_looks(camera, pts, ext, see_through_m=0.01, front_m=0.05,
                          uncertainty_m=0.008, depth_noise_m=0.01, depth_noise_per_m=0.005):
    """The box-by-box loop of locimem 1e882e7 (``place_looks`` before it was vectorised),
    with the rules added since (a ray entering from below through the bottom face; a large
    box with its centre and half its projection in view is in view)."""
    n = pts.shape[0]
    states = np.full(n, Place.OUT_OF_VIEW, dtype=np.int8)
    visible = np.zeros(n)
    half = np.abs(ext) / 2
    r = np.linalg.norm(half, axis=1)
    body = to_camera_frame(camera, pts)
    x, y, z = body[:, 0], body[:, 1], body[:, 2]
    tan_h = math.tan(math.radians(camera.fov_deg) / 2.0)
    tan_v = math.tan(math.radians(camera.vfov_deg) / 2.0)
    sec_h, sec_v = math.sqrt(1 + tan_h * tan_h), math.sqrt(1 + tan_v * tan_v)
    inside = ((x - r > 0.0) & (x + r <= camera.range_m)
              & (np.abs(y) <= tan_h * x - r * sec_h) & (np.abs(z) <= tan_v * x - r * sec_v))
    signs = np.array(list(np.ndindex(2, 2, 2)), dtype=np.float64) * 2 - 1
    for k in range(n):
        if inside[k] or r[k] < LARGE_PLACE_M or not (
                x[k] - r[k] > 0.0 and x[k] + r[k] <= camera.range_m
                and abs(y[k]) <= tan_h * x[k] and abs(z[k]) <= tan_v * x[k]):
            continue
        cb = to_camera_frame(camera, pts[k] + signs * half[k])
        u, v = cb[:, 1] / cb[:, 0], cb[:, 2] / cb[:, 0]
        iu = max(0.0, min(u.max(), tan_h) - max(u.min(), -tan_h))
        iv = max(0.0, min(v.max(), tan_v) - max(v.min(), -tan_v))
        inside[k] = iu * iv / ((u.max() - u.min()) * (v.max() - v.min())) >= PARTLY_IN_VIEW
    idx = np.flatnonzero(inside)
    if idx.size == 0:
        return states, visible
    depth = camera.depth
    h, w = depth.shape
    origin = np.asarray(camera.position, dtype=np.float64)
    core_half = np.maximum(half - uncertainty_m, half / 3)
    c_rows, c_cols = project(camera, pts[idx], (h, w))
    c_r, c_c = pixel_index(c_rows, c_cols, (h, w))
    for j, k in enumerate(idx.tolist()):
        corners = pts[k] + signs * half[k]
        rows, cols = project(camera, corners, (h, w))
        r0 = min(max(0, math.floor(rows.min())), int(c_r[j]))
        r1 = max(min(h - 1, math.ceil(rows.max()) - 1), int(c_r[j]))
        c0 = min(max(0, math.floor(cols.min())), int(c_c[j]))
        c1 = max(min(w - 1, math.ceil(cols.max()) - 1), int(c_c[j]))
        step = max(1, math.ceil(math.sqrt((r1 - r0 + 1) * (c1 - c0 + 1) / MAX_PLACE_PIXELS)))
        d = depth[r0:r1 + 1:step, c0:c1 + 1:step].reshape(-1).astype(np.float64)
        valid = np.isfinite(d) & (d > 0.0)
        if not valid.any():
            states[k] = Place.NO_DEPTH
            continue
        ray = pixel_rays(camera, (h, w), window=(r0, r1, c0, c1), step=step).reshape(-1, 3)
        ray, d = ray[valid], d[valid]
        lo, hi = pts[k] - half[k], pts[k] + half[k]
        t_in, _ = ray_box_chord(origin, ray, lo, hi)
        crosses = np.isfinite(t_in)
        near_face = float(to_camera_frame(camera, corners)[:, 0].min())
        noise = depth_noise_m + depth_noise_per_m * float(x[k])
        tilt = ray[:, 2]
        with np.errstate(divide="ignore", invalid="ignore"):
            t_plane = np.where(np.abs(tilt) > 1e-9, (lo[2] - origin[2]) / tilt, np.inf)
        expected = np.where(crosses, t_in, np.where(
            tilt < -1e-9, np.minimum(near_face, t_plane),
            np.where((tilt > 1e-9) & (origin[2] < lo[2]), np.maximum(near_face, t_plane),
                     near_face)))
        occluded = d < expected - (front_m + noise)
        # added after 1e882e7: from below, a ray entering through the bottom face is hidden
        if origin[2] < lo[2]:
            entry_z = origin[2] + np.where(crosses, t_in, 0.0) * tilt
            occluded |= crosses & (entry_z <= lo[2] + 1e-9)
        share = 1.0 - np.count_nonzero(occluded) / d.size
        visible[k] = share
        if share < 0.5:
            states[k] = Place.OCCLUDED
            continue
        c_in, c_out = ray_box_chord(origin, ray, pts[k] - core_half[k], pts[k] + core_half[k])
        core = np.isfinite(c_in) & ~occluded
        if core.any() and 2 * np.count_nonzero(
                d[core] > (c_in[core] + c_out[core]) / 2 + see_through_m + noise) >= core.sum():
            states[k] = Place.EMPTY
        else:
            states[k] = Place.OCCUPIED
    return states, visible


def _scene(rng: np.random.Generator, shape: tuple[int, int]):
    """A random camera over random boxes, its depth image rendered from some of them (the
    others removed, so their places read empty) plus a floor, with holes and noise."""
    eye = rng.uniform([-1, -1, 0.3], [1, 1, 2.0])
    target = eye + rng.normal(size=3) * [3, 3, 1]
    if np.linalg.norm(target - eye) < 0.5:
        target = eye + np.array([2.0, 0.0, -0.5])
    fov = float(rng.uniform(40, 100))
    cam0 = look_at(eye, target, fov_deg=fov, vfov_deg=fov * float(rng.uniform(0.5, 0.9)),
                   range_m=float(rng.uniform(2, 9)))
    n = int(rng.integers(1, 60))
    forward = (target - eye) / np.linalg.norm(target - eye)
    centers = eye + forward * rng.uniform(0.3, 8, (n, 1)) + rng.normal(size=(n, 3)) * 0.8
    sizes = (rng.choice([0.02, 0.05, 0.1, 0.3, 1.0, 2.5], size=(n, 3))
             * rng.uniform(0.5, 1.5, (n, 3)))
    present = rng.random(n) < 0.6
    lo = np.vstack([centers[present] - sizes[present] / 2, [[-20, -20, -0.1]]])
    hi = np.vstack([centers[present] + sizes[present] / 2, [[20, 20, 0.0]]])
    depth = render_depth(cam0, lo, hi, shape).astype(np.float64)
    depth += rng.normal(0, 0.01, depth.shape)
    depth[rng.random(depth.shape) < 0.05] = np.nan
    depth[rng.random(depth.shape) < 0.02] = 0.0
    if rng.random() < 0.5:
        depth = depth.astype(np.float32)
    cam = look_at(eye, target, fov_deg=cam0.fov_deg, vfov_deg=cam0.vfov_deg,
                  range_m=cam0.range_m, depth=depth)
    # jitter some boxes (the memory's estimate is off by centimetres)
    centers = centers + rng.normal(0, 0.02, centers.shape) * (rng.random((n, 1)) < 0.5)
    return cam, centers, sizes


@pytest.mark.parametrize("shape", SHAPES)
def test_all_boxes_at_once_equal_the_box_by_box_loop(shape) -> None:
    rng = np.random.default_rng(sum(shape))
    judged = set()
    for _ in range(40 if shape != (480, 640) else 8):
        cam, centers, sizes = _scene(rng, shape)
        for uncertainty in (0.008, math.inf):
            looks = place_looks(cam, centers, sizes, uncertainty_m=uncertainty)
            states, visible = reference_place_looks(cam, centers, sizes,
                                                    uncertainty_m=uncertainty)
            assert looks.states.tolist() == states.tolist()
            assert looks.visible.tobytes() == visible.tobytes()  # bit for bit
            judged.update(Place(s).name for s in states)
    # the scenes reach every state a depth image can give
    assert {"EMPTY", "OCCUPIED", "OCCLUDED", "OUT_OF_VIEW"} <= judged


def test_the_belief_tests_scenes_at_every_resolution() -> None:
    """The table, wall and thin remote of tests/tracker/test_belief.py."""
    table_lo, table_hi = np.array([1.0, -1.0, 0.71]), np.array([3.0, 1.0, 0.75])
    wall_lo, wall_hi = np.array([3.5, -3.0, 0.0]), np.array([3.6, 3.0, 3.0])
    remote_c, remote_s = np.array([2.0, 0.1, 0.76]), np.array([0.18, 0.05, 0.02])
    grid = np.stack(np.meshgrid(np.linspace(1.0, 3.0, 9), np.linspace(-0.8, 0.8, 7),
                                [0.76, 0.8, 1.2]), -1).reshape(-1, 3)
    centers = np.vstack([remote_c, grid])
    sizes = np.vstack([remote_s, np.tile([0.1, 0.1, 0.1], (len(grid), 1))])
    for shape in SHAPES[:3] + SHAPES[4:]:
        for with_remote in (True, False):
            lo, hi = [table_lo, wall_lo], [table_hi, wall_hi]
            if with_remote:
                lo.append(remote_c - remote_s / 2)
                hi.append(remote_c + remote_s / 2)
            bare = look_at((0.6, 0.0, 1.3), remote_c, fov_deg=60.0, vfov_deg=45.0, range_m=4.0)
            depth = render_depth(bare, np.array(lo), np.array(hi), shape)
            cam = look_at((0.6, 0.0, 1.3), remote_c, fov_deg=60.0, vfov_deg=45.0,
                          range_m=4.0, depth=depth)
            looks = place_looks(cam, centers, sizes)
            states, visible = reference_place_looks(cam, centers, sizes)
            assert looks.states.tolist() == states.tolist()
            assert looks.visible.tobytes() == visible.tobytes()


def test_bordered_share_takes_the_states_already_made() -> None:
    from locimem.geometry import bordered_share, look_at, place_looks

    rng = np.random.default_rng(7)
    depth = rng.uniform(1.0, 4.0, (24, 32))
    cam = look_at((0, 0, 1), (1, 0, 1), fov_deg=90.0, vfov_deg=70.0, range_m=6.0, depth=depth)
    centers = np.column_stack([rng.uniform(1.0, 4.0, 40), rng.uniform(-2, 2, 40),
                               rng.uniform(0.3, 1.7, 40)])
    sizes = rng.uniform(0.05, 0.4, (40, 3))
    window = rng.uniform(0.0, 0.2, 40)
    states = place_looks(cam, centers, sizes).states
    alone = bordered_share(cam, centers, sizes, window)
    given = bordered_share(cam, centers, sizes, window, states=states)
    assert alone.tobytes() == given.tobytes() and (alone > 0).any() and (alone < 1).any()
    with pytest.raises(InvalidInput, match="one entry per box"):
        bordered_share(cam, centers, sizes, window, states=states[:3])
