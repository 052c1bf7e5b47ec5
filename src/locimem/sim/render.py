"""A synthetic depth camera: ray-cast axis-aligned boxes through every pixel of a camera.

The image holds, per pixel, the forward distance (metres, along the camera's optical axis) of
the first box the pixel's ray hits, ``inf`` where it hits nothing: the convention of
:class:`locimem.model.Camera` and :mod:`locimem.geometry`.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from locimem.geometry import intrinsics, pixel_rays, rotation_matrix_from_wxyz, to_camera_frame
from locimem.model import Camera
from locimem.sim.world import Box


def boxes_to_arrays(boxes: Sequence[Box]) -> tuple[np.ndarray, np.ndarray]:
    """Box corners as two (n, 3) arrays: minima and maxima (metres, map frame)."""
    if not boxes:
        return np.zeros((0, 3)), np.zeros((0, 3))
    return (np.array([b.min_m for b in boxes], dtype=np.float64),
            np.array([b.max_m for b in boxes], dtype=np.float64))


def render_depth(camera: Camera, box_min: np.ndarray, box_max: np.ndarray,
                 shape: tuple[int, int] = (24, 32), max_range_m: float = 12.0) -> np.ndarray:
    """Depth image (h, w), float32: per pixel, the forward distance in metres to the nearest
    box its ray enters (slab test), or ``inf`` when none is hit within ``max_range_m``.

    Boxes that contain the camera are ignored (the camera is inside, not looking at them).
    ``camera.depth`` is not read; only the pose and fields of view.
    """
    rays = pixel_rays(camera, shape).reshape(-1, 3)  # forward component 1
    rays = np.where(np.abs(rays) < 1e-12, 1e-12, rays)
    origin = np.asarray(camera.position, dtype=np.float64)
    depth = np.full(rays.shape[0], np.inf)
    lo, hi = _cull(camera, box_min, box_max, max_range_m)
    if lo.shape[0]:
        inv = 1.0 / rays  # (P, 3)
        t_near = np.zeros((rays.shape[0], lo.shape[0]))
        t_far = np.full((rays.shape[0], lo.shape[0]), np.inf)
        for axis in range(3):  # slab test, one axis at a time on (P, B) arrays
            t1 = np.multiply.outer(inv[:, axis], lo[:, axis] - origin[axis])
            t2 = np.multiply.outer(inv[:, axis], hi[:, axis] - origin[axis])
            np.maximum(t_near, np.minimum(t1, t2), out=t_near)
            np.minimum(t_far, np.maximum(t1, t2), out=t_far)
        t = np.where(t_far >= t_near, t_near, np.inf).min(axis=1)
        depth = np.where((t > 0.0) & (t <= max_range_m), t, np.inf)
    return depth.reshape(shape).astype(np.float32)


def _cull(camera: Camera, box_min: np.ndarray, box_max: np.ndarray, max_range_m: float
          ) -> tuple[np.ndarray, np.ndarray]:
    """The boxes :func:`_in_sight` keeps, as (minima, maxima)."""
    keep = _in_sight(camera, box_min, box_max, max_range_m)
    return box_min[keep], box_max[keep]


def _in_sight(camera: Camera, box_min: np.ndarray, box_max: np.ndarray, max_range_m: float
              ) -> np.ndarray:
    """Indices of the boxes that may be hit: not containing the camera, and not wholly
    outside one side of the view frustum (a conservative test on the eight corners in the
    camera frame)."""
    if box_min.shape[0] == 0:
        return np.zeros(0, dtype=np.intp)
    origin = np.asarray(camera.position, dtype=np.float64)
    inside = np.all((box_min <= origin) & (origin <= box_max), axis=1)
    kept = np.flatnonzero(~inside)
    lo, hi = box_min[kept], box_max[kept]
    body = to_camera_frame(camera, _corners(lo, hi).reshape(-1, 3)).reshape(-1, 8, 3)
    x, y, z = body[..., 0], body[..., 1], body[..., 2]
    tan_h = np.tan(np.radians(camera.fov_deg) / 2)
    tan_v = np.tan(np.radians(camera.vfov_deg) / 2)
    out = (np.all(x <= 0, axis=1) | np.all(x > max_range_m, axis=1)
           | np.all(y > tan_h * x, axis=1) | np.all(y < -tan_h * x, axis=1)
           | np.all(z > tan_v * x, axis=1) | np.all(z < -tan_v * x, axis=1))
    return kept[~out]


def _corners(lo: np.ndarray, hi: np.ndarray) -> np.ndarray:
    """The eight corners (n, 8, 3) of boxes (n, 3) + (n, 3)."""
    return np.stack([np.where(np.array(bits, dtype=bool), hi, lo)
                     for bits in np.ndindex(2, 2, 2)], axis=1)


def render_ids(camera: Camera, box_min: np.ndarray, box_max: np.ndarray,
               shape: tuple[int, int] = (240, 320), max_range_m: float = 12.0
               ) -> tuple[np.ndarray, np.ndarray]:
    """The depth image of :func:`render_depth` (h, w, float32) and, per pixel, the index into
    ``box_min`` / ``box_max`` of the box it sees (int32, ``-1`` where none is hit): an instance
    image.

    Each box is ray-cast only through the pixels its projected corners span (every pixel when
    it reaches behind the camera), so a large image costs what the boxes cover on it rather
    than pixels times boxes. A pixel two boxes meet at the same distance sees the first.
    """
    rays = pixel_rays(camera, shape)
    inv = np.ascontiguousarray(np.moveaxis(1.0 / np.where(np.abs(rays) < 1e-12, 1e-12, rays),
                                           2, 0))  # (3, h, w): one plane per axis
    origin = np.asarray(camera.position, dtype=np.float64)
    depth = np.full(shape, np.inf)
    ids = np.full(shape, -1, dtype=np.int32)
    keep = _in_sight(camera, box_min, box_max, max_range_m)
    k_px = intrinsics(camera, shape)
    for k in keep.tolist():
        lo, hi = box_min[k] - origin, box_max[k] - origin
        r0, r1, c0, c1 = _pixel_span(camera, box_min[k], box_max[k], shape, k_px)
        if r0 >= r1 or c0 >= c1:
            continue
        t_near = np.zeros((r1 - r0, c1 - c0))
        t_far = np.full_like(t_near, np.inf)
        for axis in range(3):  # the slab test of render_depth, on this box's pixels
            plane = inv[axis, r0:r1, c0:c1]
            t1, t2 = plane * lo[axis], plane * hi[axis]
            np.maximum(t_near, np.minimum(t1, t2), out=t_near)
            np.minimum(t_far, np.maximum(t1, t2), out=t_far)
        seen = depth[r0:r1, c0:c1]
        closer = (t_far >= t_near) & (t_near > 0.0) & (t_near <= max_range_m) & (t_near < seen)
        seen[closer] = t_near[closer]
        ids[r0:r1, c0:c1][closer] = k
    return depth.astype(np.float32), ids


def _pixel_span(camera: Camera, lo: np.ndarray, hi: np.ndarray, shape: tuple[int, int],
                k: tuple[float, float, float, float]) -> tuple[int, int, int, int]:
    """Rows ``[r0, r1)`` and columns ``[c0, c1)`` whose pixel centres may see the box: those
    its projected corners span, a pixel wider (the whole image if a corner is not ahead)."""
    h, w = shape
    fx, fy, cx, cy = k
    body = to_camera_frame(camera, _corners(lo[None], hi[None])[0])
    x = body[:, 0]
    if np.any(x <= 1e-6):
        return 0, h, 0, w
    cols = cx - fx * body[:, 1] / x
    rows = cy - fy * body[:, 2] / x
    return (max(0, int(np.floor(rows.min())) - 1), min(h, int(np.ceil(rows.max())) + 1),
            max(0, int(np.floor(cols.min())) - 1), min(w, int(np.ceil(cols.max())) + 1))


def line_of_sight(camera: Camera, centers: np.ndarray, sizes: np.ndarray,
                  box_min: np.ndarray, box_max: np.ndarray, own: np.ndarray,
                  margin_m: float = 0.03) -> np.ndarray:
    """Whether the exact ray from the camera to each object's centre (``centers`` and
    ``sizes`` (m, 3)) is clear, a bool array (m,): no box of ``box_min``/``box_max`` (n, 3)
    other than the object's own (index ``own[i]``) is entered more than ``margin_m`` before
    the ray enters the object's own box. Boxes containing the camera are ignored, as in
    :func:`render_depth`. Points behind the camera are not clear.

    This is the simulator's ground truth of "the camera can see it": unlike reading the depth
    image at the centre's pixel, it does not depend on the image's resolution (at 24 x 32 a
    plate seen nearly edge-on would otherwise hide behind its own near rim, the pixel's ray
    not being the centre's).
    """
    m = centers.shape[0]
    if m == 0:
        return np.zeros(0, dtype=bool)
    origin = np.asarray(camera.position, dtype=np.float64)
    fwd = to_camera_frame(camera, centers)[:, 0]
    ahead = fwd > 1e-9
    with np.errstate(divide="ignore", invalid="ignore"):
        rays = (centers - origin) / np.where(ahead, fwd, 1.0)[:, None]  # forward component 1
    rays = np.where(np.abs(rays) < 1e-12, 1e-12, rays)
    inv = 1.0 / rays

    def entry(lo: np.ndarray, hi: np.ndarray, pairwise: bool) -> np.ndarray:
        t_near = np.zeros((m, lo.shape[0])) if pairwise else np.zeros(m)
        t_far = np.full_like(t_near, np.inf)
        for axis in range(3):
            a = lo[:, axis] - origin[axis]
            b = hi[:, axis] - origin[axis]
            t1 = np.multiply.outer(inv[:, axis], a) if pairwise else inv[:, axis] * a
            t2 = np.multiply.outer(inv[:, axis], b) if pairwise else inv[:, axis] * b
            np.maximum(t_near, np.minimum(t1, t2), out=t_near)
            np.minimum(t_far, np.maximum(t1, t2), out=t_far)
        return np.where((t_far >= t_near) & (t_far > 0.0), t_near, np.inf)

    own_entry = entry(centers - sizes / 2, centers + sizes / 2, pairwise=False)
    inside = np.all((box_min <= origin) & (origin <= box_max), axis=1)
    hits = entry(box_min, box_max, pairwise=True)  # (m, n)
    hits[:, inside] = np.inf
    hits[np.arange(m), own] = np.inf
    return ahead & ~(hits.min(axis=1, initial=np.inf) < own_entry - margin_m)


def visible_share(camera: Camera, box_min: np.ndarray, box_max: np.ndarray, own: np.ndarray,
                  grid: int = 5, margin_m: float = 0.03
                  ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """How much of each object the camera sees, sampled on a ``grid`` x ``grid`` of rays over
    the rectangle its box projects to on the image plane: for each object ``own[i]`` (an
    index into ``box_min`` / ``box_max``, (n, 3) metres, map frame, the scene's boxes with
    the objects among them), returns

    - ``share`` (m,): of the rays that enter the object's box, the share that is *seen* —
      inside both fields of view, entering the box at a forward distance within
      ``camera.range_m``, and entering no other box more than ``margin_m`` before it (as
      :func:`line_of_sight`; boxes containing the camera are ignored). 0 when no ray enters
      it, or a corner of its box is not ahead of the camera;
    - ``lo``, ``hi`` (m, 3): the part of the box that is seen: on each map axis, a side of
      the box beyond which entering rays were not seen is moved in to the outermost seen
      ray's entry point (so the box stays inside what is in sight); the whole box when
      every ray is seen, NaN when none is.

    A fully visible box gives share 1 and its own corners; a box whose left half is behind
    another gives about 0.5 and (about) its right half.
    """
    share = np.zeros(own.shape[0])
    lo_out = np.full((own.shape[0], 3), np.nan)
    hi_out = np.full((own.shape[0], 3), np.nan)
    if own.shape[0] == 0:
        return share, lo_out, hi_out
    # only the boxes not wholly outside the view (the rest see nothing)
    sight = _in_sight(camera, box_min[own], box_max[own], camera.range_m)
    if sight.size < own.shape[0]:
        part = visible_share(camera, box_min, box_max, own[sight], grid, margin_m)
        for out, got in zip((share, lo_out, hi_out), part, strict=True):
            out[sight] = got
        return share, lo_out, hi_out
    m = own.shape[0]
    origin = np.asarray(camera.position, dtype=np.float64)
    rot = rotation_matrix_from_wxyz(camera.quaternion)
    tan_h = float(np.tan(np.radians(camera.fov_deg) / 2))
    tan_v = float(np.tan(np.radians(camera.vfov_deg) / 2))
    body = to_camera_frame(camera, _corners(box_min[own], box_max[own]).reshape(-1, 3)
                           ).reshape(m, 8, 3)
    x = body[..., 0]
    ahead = np.all(x > 1e-6, axis=1)
    safe = np.where(x > 1e-6, x, 1.0)
    u, v = body[..., 1] / safe, body[..., 2] / safe  # tangents, left and up
    frac = (np.arange(grid) + 0.5) / grid
    uu = u.min(axis=1)[:, None] + frac[None, :] * (u.max(axis=1) - u.min(axis=1))[:, None]
    vv = v.min(axis=1)[:, None] + frac[None, :] * (v.max(axis=1) - v.min(axis=1))[:, None]
    g2 = grid * grid
    ray_u = np.repeat(uu, grid, axis=1)  # (m, g2): u varies slowest
    ray_v = np.tile(vv, (1, grid))
    rays_body = np.stack([np.ones_like(ray_u), ray_u, ray_v], axis=-1)  # forward component 1
    rays = (rays_body.reshape(-1, 3) @ rot.T)
    rays = np.where(np.abs(rays) < 1e-12, 1e-12, rays)
    inv = 1.0 / rays  # (m * g2, 3)
    obj = np.repeat(np.arange(m), g2)

    own_lo, own_hi = box_min[own][obj], box_max[own][obj]
    t_near = np.zeros(obj.shape[0])
    t_far = np.full(obj.shape[0], np.inf)
    for axis in range(3):
        t1 = inv[:, axis] * (own_lo[:, axis] - origin[axis])
        t2 = inv[:, axis] * (own_hi[:, axis] - origin[axis])
        np.maximum(t_near, np.minimum(t1, t2), out=t_near)
        np.minimum(t_far, np.maximum(t1, t2), out=t_far)
    enters = (t_far >= t_near) & (t_far > 0.0) & ahead[obj]

    inside = np.all((box_min <= origin) & (origin <= box_max), axis=1)
    others = np.flatnonzero(~inside)
    first = np.full(obj.shape[0], np.inf)
    if others.size:
        o_near = np.zeros((obj.shape[0], others.size))
        o_far = np.full_like(o_near, np.inf)
        for axis in range(3):
            t1 = np.multiply.outer(inv[:, axis], box_min[others, axis] - origin[axis])
            t2 = np.multiply.outer(inv[:, axis], box_max[others, axis] - origin[axis])
            np.maximum(o_near, np.minimum(t1, t2), out=o_near)
            np.minimum(o_far, np.maximum(t1, t2), out=o_far)
        o_near = np.where((o_far >= o_near) & (o_far > 0.0), o_near, np.inf)
        o_near[others[None, :] == own[obj][:, None]] = np.inf  # not its own box
        first = o_near.min(axis=1)
    in_fov = (np.abs(ray_u.ravel()) <= tan_h) & (np.abs(ray_v.ravel()) <= tan_v)
    seen = (enters & in_fov & (t_near <= camera.range_m)
            & ~(first < t_near - margin_m))
    points = origin + t_near[:, None] * rays
    box_lo, box_hi = box_min[own], box_max[own]
    for i in range(m):
        rows = slice(i * g2, (i + 1) * g2)
        hit, saw = enters[rows], seen[rows]
        n_hit, n_saw = int(hit.sum()), int(saw.sum())
        if n_hit == 0 or n_saw == 0:
            continue
        share[i] = n_saw / n_hit
        every, visible = points[rows][hit], points[rows][saw]
        low, high = visible.min(axis=0), visible.max(axis=0)
        lo_out[i] = np.clip(np.where(low - every.min(axis=0) > 1e-9, low, box_lo[i]),
                            box_lo[i], box_hi[i])
        hi_out[i] = np.clip(np.where(every.max(axis=0) - high > 1e-9, high, box_hi[i]),
                            lo_out[i], box_hi[i])
    return share, lo_out, hi_out
