"""What a camera says about the places remembered objects should be at (:func:`place_looks`,
:func:`place_states`): each box judged at once against the view and the depth image, and the
ray-box chords that judging rests on. Frames and units: :mod:`locimem.geometry`."""

from __future__ import annotations

import enum
import math
from dataclasses import dataclass
from typing import Any

import numpy as np

from locimem.errors import InvalidInput
from locimem.geometry.camera import (
    _tan_half,
    check_points,
    intrinsics,
    pixel_index,
    project,
    rotation_matrix_from_wxyz,
    to_camera_frame,
)
from locimem.model import Camera


class Place(enum.IntEnum):
    """What a scan's camera says about the place a remembered object should be at.

    ``OUT_OF_VIEW``: not wholly inside the view and the range (no evidence either way).
    ``IN_VIEW``: wholly in view and range, and the camera has no depth image (it should have
    been seen; nothing more is known).
    ``EMPTY``: visible, and the depth pixels whose rays cross the object's box saw *through*
    it (at least half of them) — had the object been there, it would have been in the way.
    ``OCCUPIED``: visible (not hidden), and the depth shows a surface at the object's place,
    or cannot tell (no pixel's central ray crosses a small box): it may be there.
    ``OCCLUDED``: most of the pixels the box covers show something in front of it.
    ``NO_DEPTH``: none of the pixels the box covers has a reading.
    """

    OUT_OF_VIEW = 0
    IN_VIEW = 1
    EMPTY = 2
    OCCUPIED = 3
    OCCLUDED = 4
    NO_DEPTH = 5


#: Places a camera *looked at*: the object should have been detected there if present.
LOOKED = frozenset({Place.IN_VIEW, Place.EMPTY, Place.OCCUPIED})


@dataclass(frozen=True, slots=True)
class PlaceLooks:
    """What one camera says about remembered boxes, one entry per box (arrays of shape (n,)).

    ``states``: :class:`Place` values (int8). ``visible``: the share of the pixels the box
    covers that are not occluded (1.0 without a depth image, 0.0 out of view or without
    readings). ``forward_m``: the forward distance of the box's centre (metres; NaN behind
    the camera). ``angle_rad``: the angle its bounding sphere subtends at the camera.
    """

    states: np.ndarray
    visible: np.ndarray
    forward_m: np.ndarray
    angle_rad: np.ndarray


_CORNER_SIGNS = np.array(list(np.ndindex(2, 2, 2)), dtype=np.float64) * 2 - 1  # (8, 3)
LARGE_PLACE_M = 0.25
"""A box whose bounding sphere's radius is at least this (a chair, a plant, a table) is in
view when its centre is and at least :data:`PARTLY_IN_VIEW` of its projection is."""
PARTLY_IN_VIEW = 0.5
MAX_PLACE_PIXELS = 4096  # a large box is judged on a grid of at most this many pixels


def place_looks(camera: Camera, centers: Any, sizes: Any, see_through_m: float = 0.01,
                front_m: float = 0.05, uncertainty_m: float = 0.008,
                depth_noise_m: float = 0.01, depth_noise_per_m: float = 0.005) -> PlaceLooks:
    """What the camera says about each remembered box (centres and extents (n, 3), metres,
    map frame): :class:`PlaceLooks`.

    In view means the box's bounding sphere lies inside both fields of view, ahead of the camera
    and within ``range_m`` — or, for a large box (a sphere of :data:`LARGE_PLACE_M` or more: a
    chair seen from 3 m seldom fits whole in a 45-degree view), that its centre is in view and
    at least :data:`PARTLY_IN_VIEW` of the rectangle its corners project to lies inside the
    image (its pixels there are judged like any other's). With a depth image, the informative
    pixels are the ones the box's projection covers — at least the pixel its centre projects
    into, whatever the image's resolution (on a grid of at most :data:`MAX_PLACE_PIXELS` over a
    large box). A pixel with depth ``d`` (no reading: skipped) is *occluded* when ``d`` is in
    front of the box's entry point on its central ray by more than ``front_m`` plus the depth
    noise at that range (``depth_noise_m + depth_noise_per_m * x``) — or, for a ray that misses
    the box, in front of its near face and, looking down, of the plane of its bottom (a ray
    passing below a small object meets the surface it stands on before it) or, looking up from
    below it, in front of that plane (the ray could not have reached it); looking up from below
    it, a ray entering the box through its bottom face is occluded too (it has crossed what the
    object stands on: a shelf's board). The place is ``NO_DEPTH`` without readings, ``OCCLUDED``
    when more than half of the readings are occluded, else *visible*: ``EMPTY`` when at least
    half of the visible rays that cross the box's *core* (shrunk by ``uncertainty_m`` per side,
    to at least a third) show a surface more than ``see_through_m`` plus the depth noise beyond
    the middle of their path through it, else ``OCCUPIED``.

    >>> from locimem.geometry import look_at
    >>> cam = look_at((0, 0, 1), (1, 0, 1), fov_deg=90.0, vfov_deg=90.0, range_m=5.0,
    ...               depth=np.full((9, 9), 2.0))
    >>> looks = place_looks(cam, [[1.5, 0, 1], [-1, 0, 1]], [(0.2, 0.2, 0.2)] * 2)
    >>> [Place(v).name for v in looks.states], looks.visible.tolist()
    (['EMPTY', 'OUT_OF_VIEW'], [1.0, 0.0])
    """
    pts = check_points(centers)
    ext = check_points(sizes, "sizes")
    if ext.shape != pts.shape:
        raise InvalidInput(f"sizes must have the shape of centers {pts.shape}, got {ext.shape}")
    n = pts.shape[0]
    states = np.full(n, Place.OUT_OF_VIEW, dtype=np.int8)
    visible = np.zeros(n)
    half = np.abs(ext) / 2
    r = np.linalg.norm(half, axis=1)
    body = to_camera_frame(camera, pts)
    x, y, z = body[:, 0], body[:, 1], body[:, 2]
    dist = np.linalg.norm(body, axis=1)
    with np.errstate(divide="ignore", invalid="ignore"):
        angle = 2.0 * np.arcsin(np.clip(r / np.maximum(dist, 1e-12), 0.0, 1.0))
    forward = np.where(x > 0.0, x, np.nan)
    looks = PlaceLooks(states, visible, forward, angle)
    if n == 0:
        return looks
    tan_h, tan_v = _tan_half(camera)
    # the sphere is inside the pinhole's half-angle planes when its centre is at least
    # radius / cos(half angle) inside each of them
    sec_h, sec_v = math.sqrt(1 + tan_h * tan_h), math.sqrt(1 + tan_v * tan_v)
    inside = ((x - r > 0.0) & (x + r <= camera.range_m)
              & (np.abs(y) <= tan_h * x - r * sec_h) & (np.abs(z) <= tan_v * x - r * sec_v))
    partly = np.flatnonzero(~inside & (r >= LARGE_PLACE_M) & (x - r > 0.0)
                            & (x + r <= camera.range_m)
                            & (np.abs(y) <= tan_h * x) & (np.abs(z) <= tan_v * x))
    if partly.size:  # a large box, its centre in view: in view if half its projection is
        inside[partly[_share_in_view(camera, pts[partly], half[partly]) >= PARTLY_IN_VIEW]] = True
    if camera.depth is None:
        states[inside] = Place.IN_VIEW
        visible[inside] = 1.0
        return looks
    idx = np.flatnonzero(inside)
    if idx.size == 0:
        return looks
    _depth_looks(camera, pts[idx], half[idx], x[idx], looks, idx, see_through_m, front_m,
                 uncertainty_m, depth_noise_m, depth_noise_per_m)
    return looks


def _share_in_view(camera: Camera, pts: np.ndarray, half: np.ndarray) -> np.ndarray:
    """The share of the rectangle each box's corners project to (every corner ahead of the
    camera) that lies inside the fields of view, (m,)."""
    tan_h, tan_v = _tan_half(camera)
    corners = pts[:, None, :] + _CORNER_SIGNS[None] * half[:, None, :]
    body = to_camera_frame(camera, corners.reshape(-1, 3)).reshape(-1, 8, 3)
    u, v = body[:, :, 1] / body[:, :, 0], body[:, :, 2] / body[:, :, 0]
    u0, u1, v0, v1 = u.min(axis=1), u.max(axis=1), v.min(axis=1), v.max(axis=1)
    iu = np.clip(np.minimum(u1, tan_h) - np.maximum(u0, -tan_h), 0.0, None)
    iv = np.clip(np.minimum(v1, tan_v) - np.maximum(v0, -tan_v), 0.0, None)
    return iu * iv / np.maximum((u1 - u0) * (v1 - v0), 1e-18)


def _depth_looks(camera: Camera, pts: np.ndarray, half: np.ndarray, x: np.ndarray,
                 looks: PlaceLooks, idx: np.ndarray, see_through_m: float, front_m: float,
                 uncertainty_m: float, depth_noise_m: float, depth_noise_per_m: float,
                 window: np.ndarray | None = None) -> None:
    """The depth part of :func:`place_looks` for the ``m`` boxes wholly in view (centres
    ``pts`` and half extents ``half`` (m, 3), centre forward distances ``x`` (m,)), written into
    ``looks`` at ``idx``: every box at once. The pixels of all boxes are laid end to end (box
    by box, each window row by row) and each is judged by the same elementwise arithmetic a
    box-by-box loop does, so every compared float is the same (tested against that loop).
    ``window`` (m,): metres by which each box's pixel window is widened on every side (its
    pixels still judged against the box itself)."""
    states, visible = looks.states, looks.visible
    depth = camera.depth
    assert depth is not None
    h, w = depth.shape
    m = pts.shape[0]
    origin = np.asarray(camera.position, dtype=np.float64)
    c_rows, c_cols = project(camera, pts, (h, w))
    c_r, c_c = pixel_index(c_rows, c_cols, (h, w))
    corners = (pts[:, None, :] + _CORNER_SIGNS[None, :, :] * half[:, None, :]).reshape(-1, 3)
    body = to_camera_frame(camera, corners)
    fx, fy, cx, cy = intrinsics(camera, (h, w))
    rows = (cy - fy * body[:, 2] / body[:, 0]).reshape(m, 8)  # every corner is ahead
    cols = (cx - fx * body[:, 1] / body[:, 0]).reshape(m, 8)
    near_face = body[:, 0].reshape(m, 8).min(axis=1)
    if window is not None:  # the window: the corners of the box grown by it
        wide = (pts[:, None, :] + _CORNER_SIGNS[None, :, :] * (half + window[:, None])[:, None, :]
                ).reshape(-1, 3)
        body = to_camera_frame(camera, wide)
        rows = (cy - fy * body[:, 2] / body[:, 0]).reshape(m, 8)
        cols = (cx - fx * body[:, 1] / body[:, 0]).reshape(m, 8)
    # every pixel the projected box's bounding rectangle touches, and the centre's pixel
    r0 = np.minimum(np.maximum(0, np.floor(rows.min(axis=1))).astype(np.intp), c_r)
    r1 = np.maximum(np.minimum(h - 1, np.ceil(rows.max(axis=1)) - 1).astype(np.intp), c_r)
    c0 = np.minimum(np.maximum(0, np.floor(cols.min(axis=1))).astype(np.intp), c_c)
    c1 = np.maximum(np.minimum(w - 1, np.ceil(cols.max(axis=1)) - 1).astype(np.intp), c_c)
    step = np.maximum(1, np.ceil(np.sqrt((r1 - r0 + 1) * (c1 - c0 + 1) / MAX_PLACE_PIXELS))
                      ).astype(np.intp)
    n_rows, n_cols = (r1 - r0) // step + 1, (c1 - c0) // step + 1
    counts = n_rows * n_cols
    box = np.repeat(np.arange(m), counts)  # the box of each pixel laid end to end
    local = np.arange(box.size) - np.repeat(np.cumsum(counts) - counts, counts)
    pr = r0[box] + (local // n_cols[box]) * step[box]
    pc = c0[box] + (local % n_cols[box]) * step[box]
    d = depth[pr, pc].astype(np.float64)
    valid = np.isfinite(d) & (d > 0.0)
    n_valid = np.bincount(box[valid], minlength=m)
    for j in np.flatnonzero(n_valid == 0).tolist():
        states[idx[j]] = Place.NO_DEPTH
    box, pr, pc, d = box[valid], pr[valid], pc[valid], d[valid]
    if box.size == 0:
        return
    # the rays through the pixel centres, as pixel_rays makes them (forward component 1)
    ray_body = np.empty((box.size, 3))
    ray_body[:, 0] = 1.0
    ray_body[:, 1] = -((pc + 0.5 - cx) / fx)
    ray_body[:, 2] = -((pr + 0.5 - cy) / fy)
    ray = ray_body @ rotation_matrix_from_wxyz(camera.quaternion).T
    lo, hi = pts - half, pts + half
    t_in, _ = ray_box_chord(origin, ray, lo[box], hi[box])
    crosses = np.isfinite(t_in)
    noise = depth_noise_m + depth_noise_per_m * x  # (m,)
    # a ray that misses the box: looking down, it may meet the surface the object stands
    # on (the plane of its bottom) in front of it, which is no occluder; looking up from
    # below the object, it cannot reach the object before crossing that plane
    tilt = ray[:, 2]
    bottom = lo[box, 2]
    face = near_face[box]
    with np.errstate(divide="ignore", invalid="ignore"):
        t_plane = np.where(np.abs(tilt) > 1e-9, (bottom - origin[2]) / tilt, np.inf)
    expected = np.where(crosses, t_in, np.where(
        tilt < -1e-9, np.minimum(face, t_plane),
        np.where((tilt > 1e-9) & (origin[2] < bottom), np.maximum(face, t_plane), face)))
    occluded = d < expected - (front_m + noise[box])
    # looking up from below the object, a ray entering its box through the bottom face has
    # crossed what the object stands on first
    entry_z = origin[2] + np.where(crosses, t_in, 0.0) * tilt
    occluded |= crosses & (origin[2] < bottom) & (entry_z <= bottom + 1e-9)
    share = 1.0 - np.bincount(box[occluded], minlength=m) / np.maximum(n_valid, 1)
    judged = n_valid > 0
    visible[idx[judged]] = share[judged]
    hidden = judged & (share < 0.5)
    states[idx[hidden]] = Place.OCCLUDED
    open_ = judged & ~hidden
    if not open_.any():
        return
    keep = open_[box]  # the pixels of the boxes not hidden
    box, d, ray, occluded = box[keep], d[keep], ray[keep], occluded[keep]
    core_half = np.maximum(half - uncertainty_m, half / 3)
    c_in, c_out = ray_box_chord(origin, ray, (pts - core_half)[box], (pts + core_half)[box])
    core = np.isfinite(c_in) & ~occluded
    beyond = core & (d > (c_in + c_out) / 2 + see_through_m + noise[box])
    n_core = np.bincount(box[core], minlength=m)
    n_beyond = np.bincount(box[beyond], minlength=m)
    empty = open_ & (n_core > 0) & (2 * n_beyond >= n_core)
    states[idx[empty]] = Place.EMPTY
    states[idx[open_ & ~empty]] = Place.OCCUPIED


def bordered_share(camera: Camera, centers: Any, sizes: Any, window_m: Any,
                   front_m: float = 0.05, depth_noise_m: float = 0.01,
                   depth_noise_per_m: float = 0.005, states: Any = None) -> np.ndarray:
    """The share in sight of the pixels around each box (centres and extents (n, 3), metres,
    map frame): those the box grown by ``window_m`` on every side (metres; a scalar or one
    per box) projects to, each judged against the box itself as :func:`place_looks` judges
    its own — occluded when it shows something nearer than where its ray would meet the box,
    or, missing it, its near face (looking down: the plane of its bottom, which the table
    it stands on is not in front of). Below 1, the box is *bordered* by something nearer: a
    thing whose box is only the part of it in sight may reach on behind. 0 for a box not in
    view, without a depth image, or without readings (n,). ``states``: the boxes'
    :class:`Place` from a :func:`place_looks` of this camera the caller already made (else it
    is made here).

    >>> from locimem.geometry import look_at
    >>> depth = np.full((9, 9), 2.0)
    >>> depth[:, :3] = 1.2  # something nearer fills the left third of the image
    >>> cam = look_at((0, 0, 1), (1, 0, 1), fov_deg=90.0, vfov_deg=90.0, range_m=5.0,
    ...               depth=depth)
    >>> centers = [[1.5, -0.2, 1], [1.5, 0.15, 1]]  # the first far from it, the second beside
    >>> place_looks(cam, centers, [(0.1, 0.1, 0.1)] * 2).visible.tolist()  # each in sight
    [1.0, 1.0]
    >>> bordered_share(cam, centers, [(0.1, 0.1, 0.1)] * 2, 0.3).round(2).tolist()
    [1.0, 0.83]
    """
    pts = check_points(centers)
    ext = check_points(sizes, "sizes")
    if ext.shape != pts.shape:
        raise InvalidInput(f"sizes must have the shape of centers {pts.shape}, got {ext.shape}")
    n = pts.shape[0]
    if states is None:
        states = place_looks(camera, pts, ext, front_m=front_m, depth_noise_m=depth_noise_m,
                             depth_noise_per_m=depth_noise_per_m).states
    states = np.asarray(states)
    if states.shape != (n,):
        raise InvalidInput(f"states must have one entry per box ({n}), got {states.shape}")
    out = np.zeros(n)
    idx = np.flatnonzero(np.isin(states, (Place.EMPTY, Place.OCCUPIED, Place.OCCLUDED)))
    if camera.depth is None or idx.size == 0:
        return out
    half = np.abs(ext[idx]) / 2
    x = to_camera_frame(camera, pts[idx])[:, 0]
    r = np.linalg.norm(half, axis=1)
    grow = np.broadcast_to(np.asarray(window_m, dtype=np.float64), (n,))[idx]
    # (the grown box's corners stay ahead of the camera)
    window = np.clip(grow, 0.0, np.maximum(0.0, 0.9 * (x - r)) / math.sqrt(3.0))
    wide = PlaceLooks(states.copy(), np.zeros(n), np.zeros(n), np.zeros(n))
    _depth_looks(camera, pts[idx], half, x, wide, idx, 0.0, front_m, 0.0, depth_noise_m,
                 depth_noise_per_m, window)
    out[idx] = wide.visible[idx]
    return out


def place_states(camera: Camera, centers: Any, sizes: Any, see_through_m: float = 0.01,
                 front_m: float = 0.05, uncertainty_m: float = 0.008) -> np.ndarray:
    """:class:`Place` of each remembered box (centres and extents (n, 3), metres, map frame),
    an int8 array (n,): the ``states`` of :func:`place_looks`.

    >>> from locimem.geometry import look_at
    >>> cam = look_at((0, 0, 1), (1, 0, 1), fov_deg=90.0, vfov_deg=90.0, range_m=5.0,
    ...               depth=np.full((9, 9), 2.0))
    >>> box = (0.2, 0.2, 0.2)
    >>> [Place(v).name for v in place_states(cam, [[1.5, 0, 1], [2.08, 0, 1], [3, 0, 1],
    ...                                             [-1, 0, 1]], [box] * 4)]
    ['EMPTY', 'OCCUPIED', 'OCCLUDED', 'OUT_OF_VIEW']
    """
    return place_looks(camera, centers, sizes, see_through_m=see_through_m, front_m=front_m,
                       uncertainty_m=uncertainty_m).states


def ray_box_chord(origin: np.ndarray, rays: np.ndarray, lo: np.ndarray, hi: np.ndarray
                  ) -> tuple[np.ndarray, np.ndarray]:
    """Forward distances at which each ray (forward component 1) enters and leaves the box
    [lo, hi] (inf, inf where it misses)."""
    safe = np.where(np.abs(rays) < 1e-12, 1e-12, rays)
    t1 = (lo - origin) / safe
    t2 = (hi - origin) / safe
    t_near = np.minimum(t1, t2).max(axis=1)
    t_far = np.maximum(t1, t2).min(axis=1)
    hit = (t_far >= t_near) & (t_far > 0.0)
    return np.where(hit, np.maximum(t_near, 0.0), np.inf), np.where(hit, t_far, np.inf)
