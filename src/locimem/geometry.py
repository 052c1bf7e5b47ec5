"""Camera geometry: which map points a camera could see, and where they land in its image.

Pure functions over :class:`~locimem.model.Camera` and numpy arrays, shared by the simulator and
the tracker's visibility-aware belief (:func:`place_states`).

Frames and units
----------------
- **Map frame**: metres, z up. Points cross this module's boundary as array-likes of shape
  ``(n, 3)`` (a single ``(3,)`` point is accepted and treated as ``(1, 3)``).
- **Camera body frame** (ROS REP 103): origin at ``camera.position``; x forward along the optical
  axis, y left, z up. ``camera.quaternion`` (w, x, y, z) rotates body-frame vectors into the map
  frame: ``p_map = R @ p_body + position``.
- **Forward distance**: the body-frame x of a point, in metres (what a depth camera's z-buffer
  holds). ``camera.range_m`` and the depth image are forward distances.
- **Pinhole image**: the field of view is the rectangle ``|y / x| <= tan(fov_deg / 2)``,
  ``|z / x| <= tan(vfov_deg / 2)`` in the body frame. An image of shape ``(h, w)`` has focal
  lengths ``fx = (w / 2) / tan(fov / 2)``, ``fy = (h / 2) / tan(vfov / 2)`` (pixels) and centre
  ``(cx, cy) = (w / 2, h / 2)``; continuous pixel coordinates are
  ``col = cx - fx * y / x`` and ``row = cy - fy * z / x``, so row 0 is the top, column 0 the
  left, and pixel ``(i, j)`` covers ``[i, i + 1) x [j, j + 1)`` with its centre at
  ``(i + 0.5, j + 0.5)``.

    >>> import numpy as np
    >>> cam = look_at((0.0, 0.0, 1.0), (2.0, 0.0, 1.0), fov_deg=90.0, vfov_deg=60.0,
    ...               range_m=4.0)
    >>> to_camera_frame(cam, [[2.0, 1.0, 1.5]]).round(6).tolist()   # 2 m ahead, 1 m left, 0.5 up
    [[2.0, 1.0, 0.5]]
    >>> in_view(cam, [[2.0, 0.0, 1.0], [-1.0, 0.0, 1.0], [5.0, 0.0, 1.0]]).tolist()
    [True, False, False]
"""

from __future__ import annotations

import enum
import functools
import math
import struct
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
from scipy.spatial.transform import Rotation

from locimem.errors import InvalidInput
from locimem.model import Camera

__all__ = [
    "LOOKED",
    "Place",
    "PlaceLooks",
    "Visibility",
    "check_points",
    "in_view",
    "intrinsics",
    "look_at",
    "pixel_index",
    "pixel_rays",
    "place_looks",
    "place_states",
    "project",
    "quaternion_wxyz_from_matrix",
    "rotation_matrix_from_wxyz",
    "to_camera_frame",
    "view_box",
    "visibility",
]


class Visibility(enum.IntEnum):
    """Whether a camera could have seen a point during a scan.

    ``OUT_OF_VIEW``: outside the field of view, behind the camera, or beyond ``range_m``.
    ``VISIBLE``: in view, and (with a depth image) nothing measurably in front of it.
    ``OCCLUDED``: in view, but the depth image shows something nearer than the point.
    ``NO_DEPTH``: in view, but the depth image has no reading at the point's pixel.
    """

    OUT_OF_VIEW = 0
    VISIBLE = 1
    OCCLUDED = 2
    NO_DEPTH = 3


def check_points(points: Any, name: str = "points") -> np.ndarray:
    """Normalise points to a float64 array of shape ``(n, 3)`` (metres, map frame).

    A single point of shape ``(3,)`` becomes ``(1, 3)``; an empty input becomes ``(0, 3)``.

    Raises:
        InvalidInput: the shape is not ``(n, 3)`` or ``(3,)``, or a value is not finite.
    """
    try:
        arr = np.asarray(points, dtype=np.float64)
    except (TypeError, ValueError) as exc:
        raise InvalidInput(f"{name} must be an array of shape (n, 3) in metres: {exc}") from None
    if arr.size == 0:
        return np.zeros((0, 3))
    if arr.ndim == 1 and arr.shape[0] == 3:
        arr = arr[None, :]
    if arr.ndim != 2 or arr.shape[1] != 3:
        raise InvalidInput(f"{name} must have shape (n, 3) or (3,), got shape {arr.shape}")
    if not np.all(np.isfinite(arr)):
        raise InvalidInput(f"{name} must be finite")
    return arr


def rotation_matrix_from_wxyz(quat_wxyz: Sequence[float]) -> np.ndarray:
    """The 3x3 rotation matrix of a quaternion (w, x, y, z), normalised first — the matrix
    ``scipy.spatial.transform.Rotation.from_quat([x, y, z, w]).as_matrix()`` gives, by the
    same arithmetic in closed form (scipy's call cost ~60 µs a scan, about 6 % of a
    realistic one).

    >>> rotation_matrix_from_wxyz((1.0, 0.0, 0.0, 0.0)).tolist()
    [[1.0, 0.0, 0.0], [0.0, 1.0, 0.0], [0.0, 0.0, 1.0]]
    """
    w, x, y, z = (float(v) for v in quat_wxyz)
    if math.sqrt(w * w + x * x + y * y + z * z) < 1e-12:
        raise InvalidInput("quaternion must be non-zero (w, x, y, z)")
    # one scan's camera is asked for its rotation hundreds of times: keep the last few, keyed
    # by the exact bits (so -0.0 and 0.0 stay apart), read-only so no caller can change them
    return _rotation_matrix(struct.pack("<4d", w, x, y, z))


@functools.lru_cache(maxsize=64)
def _rotation_matrix(key: bytes) -> np.ndarray:
    w, x, y, z = struct.unpack("<4d", key)
    # normalised, then the products and sums scipy's ``as_matrix`` takes, in its order (the
    # same bits: tested on random quaternions, zeros and unit ones among them)
    n = math.sqrt(x * x + y * y + z * z + w * w)
    x, y, z, w = x / n, y / n, z / n, w / n
    x2, y2, z2, w2 = x * x, y * y, z * z, w * w
    xy, zw, xz, yw, yz, xw = x * y, z * w, x * z, y * w, y * z, x * w
    matrix = np.array([[x2 - y2 - z2 + w2, 2 * (xy - zw), 2 * (xz + yw)],
                       [2 * (xy + zw), -x2 + y2 - z2 + w2, 2 * (yz - xw)],
                       [2 * (xz - yw), 2 * (yz + xw), -x2 - y2 + z2 + w2]])
    matrix.setflags(write=False)
    return matrix


def quaternion_wxyz_from_matrix(rotation: np.ndarray) -> tuple[float, float, float, float]:
    """The unit quaternion (w, x, y, z), with w >= 0, of a 3x3 rotation matrix
    (``scipy.spatial.transform.Rotation``; safe for every rotation)."""
    m = np.asarray(rotation, dtype=np.float64)
    if m.shape != (3, 3):
        raise InvalidInput(f"rotation must have shape (3, 3), got shape {m.shape}")
    x, y, z, w = (float(v) for v in Rotation.from_matrix(m).as_quat())
    return (w, x, y, z) if w >= 0 else (-w, -x, -y, -z)


def to_camera_frame(camera: Camera, points_map: Any) -> np.ndarray:
    """Map-frame points (n, 3), metres -> camera body-frame points (n, 3), metres
    (x forward, y left, z up)."""
    pts = check_points(points_map)
    rot = rotation_matrix_from_wxyz(camera.quaternion)
    return (pts - np.asarray(camera.position)) @ rot  # == (R.T @ (p - o).T).T


def _tan_half(camera: Camera) -> tuple[float, float]:
    return (math.tan(math.radians(camera.fov_deg) / 2.0),
            math.tan(math.radians(camera.vfov_deg) / 2.0))


def view_box(camera: Camera) -> tuple[tuple[float, float, float], tuple[float, float, float]]:
    """The axis-aligned box (map frame, metres) around the camera's view: the pyramid from its
    position to the rectangle its fields of view span at ``range_m``, padded by a micrometre —
    every point :func:`in_view` admits lies in it (and every box :func:`place_looks` judges
    in view has its centre there).

    >>> lo, hi = view_box(look_at((0, 0, 1), (1, 0, 1), fov_deg=90.0, vfov_deg=90.0,
    ...                           range_m=2.0))
    >>> [round(v, 3) for v in lo], [round(v, 3) for v in hi]
    ([-0.0, -2.0, -1.0], [2.0, 2.0, 3.0])
    """
    tan_h, tan_v = _tan_half(camera)
    r = camera.range_m
    (a, b, c), (d, e, f), (g, h, i) = rotation_matrix_from_wxyz(camera.quaternion).tolist()
    ox, oy, oz = (float(v) for v in camera.position)
    pts = [(ox, oy, oz)]
    for u, v in ((sy * r * tan_h, sz * r * tan_v) for sy in (-1, 1) for sz in (-1, 1)):
        # the corner (r, u, v) of the far rectangle, rotated into the map and moved there;
        # the pad below dwarfs any rounding, so the box holds the pyramid however summed
        pts.append((a * r + b * u + c * v + ox, d * r + e * u + f * v + oy,
                    g * r + h * u + i * v + oz))
    pad = 1e-6 * (1.0 + r + max(abs(q) for p in pts for q in p))
    xs, ys, zs = zip(*pts, strict=True)
    return ((min(xs) - pad, min(ys) - pad, min(zs) - pad),
            (max(xs) + pad, max(ys) + pad, max(zs) + pad))


def in_view(camera: Camera, points_map: Any) -> np.ndarray:
    """Which map points lie inside the view: within both fields of view (pinhole rectangle,
    boundary included) and at a forward distance in ``(0, range_m]``. Returns a bool array (n,).
    """
    body = to_camera_frame(camera, points_map)
    x, y, z = body[:, 0], body[:, 1], body[:, 2]
    tan_h, tan_v = _tan_half(camera)
    ahead = (x > 0.0) & (x <= camera.range_m)
    with np.errstate(divide="ignore", invalid="ignore"):
        inside = (np.abs(y) <= tan_h * x) & (np.abs(z) <= tan_v * x)
    return ahead & inside


def _image_shape(camera: Camera, shape: tuple[int, int] | None) -> tuple[int, int]:
    if shape is None:
        if camera.depth is None:
            raise InvalidInput("an image shape (h, w) is needed when the camera has no depth")
        shape = camera.depth.shape
    if len(shape) != 2 or int(shape[0]) < 1 or int(shape[1]) < 1:
        raise InvalidInput(f"image shape must be (h, w) with h, w >= 1, got {shape}")
    return int(shape[0]), int(shape[1])


def intrinsics(camera: Camera, shape: tuple[int, int] | None = None
               ) -> tuple[float, float, float, float]:
    """Pinhole intrinsics ``(fx, fy, cx, cy)`` in pixels for an image of ``shape`` (h, w)
    (default: the camera's depth image), consistent with ``fov_deg`` and ``vfov_deg``.

    >>> cam = look_at((0, 0, 1), (1, 0, 1), fov_deg=90.0, vfov_deg=90.0, range_m=3.0)
    >>> [round(v, 9) for v in intrinsics(cam, (20, 40))]
    [20.0, 10.0, 20.0, 10.0]
    """
    h, w = _image_shape(camera, shape)
    tan_h, tan_v = _tan_half(camera)
    return (w / 2.0) / tan_h, (h / 2.0) / tan_v, w / 2.0, h / 2.0


def project(camera: Camera, points_map: Any, shape: tuple[int, int] | None = None
            ) -> tuple[np.ndarray, np.ndarray]:
    """Continuous pixel coordinates ``(rows, cols)`` of map points in an image of ``shape``
    (default: the camera's depth image). Pixel ``(i, j)`` covers ``[i, i + 1) x [j, j + 1)``;
    row 0 is the top, column 0 the left. Points at a forward distance <= 0 get NaN. Points
    outside the field of view get coordinates outside ``[0, h] x [0, w]``.

    >>> cam = look_at((0, 0, 1), (1, 0, 1), fov_deg=90.0, vfov_deg=90.0, range_m=3.0)
    >>> rows, cols = project(cam, [[1.0, 0.0, 1.0], [1.0, 1.0, 2.0]], shape=(20, 40))
    >>> (rows.round(9) + 0.0).tolist(), (cols.round(9) + 0.0).tolist()  # centre; top-left corner
    ([10.0, 0.0], [20.0, 0.0])
    """
    fx, fy, cx, cy = intrinsics(camera, shape)
    body = to_camera_frame(camera, points_map)
    x, y, z = body[:, 0], body[:, 1], body[:, 2]
    with np.errstate(divide="ignore", invalid="ignore"):
        cols = np.where(x > 0.0, cx - fx * y / x, np.nan)
        rows = np.where(x > 0.0, cy - fy * z / x, np.nan)
    return rows, cols


def pixel_index(rows: np.ndarray, cols: np.ndarray, shape: tuple[int, int]
                ) -> tuple[np.ndarray, np.ndarray]:
    """Integer pixel indices of continuous coordinates: floor, clipped into the image (so a
    point exactly on the image's bottom or right border lands in the last row or column).
    NaN coordinates give index 0; mask them yourself."""
    h, w = shape
    r = np.nan_to_num(np.floor(rows), nan=0.0)
    c = np.nan_to_num(np.floor(cols), nan=0.0)
    return (np.clip(r, 0, h - 1).astype(np.intp), np.clip(c, 0, w - 1).astype(np.intp))


def pixel_rays(camera: Camera, shape: tuple[int, int] | None = None,
               window: tuple[int, int, int, int] | None = None, step: int = 1) -> np.ndarray:
    """Map-frame ray directions through every pixel centre, shape ``(h, w, 3)`` — or only
    through rows ``r0..r1`` and columns ``c0..c1`` (inclusive) of a ``window``, every
    ``step``-th row and column.

    Each direction has a *forward component of 1* in the body frame, so a hit at ray parameter
    ``s`` (``point = position + s * ray``) lies at forward distance ``s``: exactly what a depth
    image pixel holds.
    """
    h, w = _image_shape(camera, shape)
    fx, fy, cx, cy = intrinsics(camera, (h, w))
    r0, r1, c0, c1 = (0, h - 1, 0, w - 1) if window is None else window
    cols = (np.arange(c0, c1 + 1, step) + 0.5 - cx) / fx  # = -y / x
    rows = (np.arange(r0, r1 + 1, step) + 0.5 - cy) / fy  # = -z / x
    h, w = rows.size, cols.size
    body = np.empty((h, w, 3))
    body[..., 0] = 1.0
    body[..., 1] = -cols[None, :]
    body[..., 2] = -rows[:, None]
    rot = rotation_matrix_from_wxyz(camera.quaternion)
    return body @ rot.T


def _check_margin(margin_m: Any, n: int) -> np.ndarray:
    if isinstance(margin_m, bool):
        raise InvalidInput(f"margin_m must be a number or an array of shape ({n},), got bool")
    try:
        arr = np.broadcast_to(np.asarray(margin_m, dtype=np.float64), (n,))
    except (TypeError, ValueError):
        raise InvalidInput(
            f"margin_m must be a number or an array of shape ({n},), got {margin_m!r}"
        ) from None
    if not np.all(np.isfinite(arr)) or np.any(arr < 0):
        raise InvalidInput("margin_m must be finite and >= 0")
    return arr


def visibility(camera: Camera, points_map: Any, margin_m: float | np.ndarray = 0.1
               ) -> np.ndarray:
    """Visibility state of each map point, an int8 array (n,) of :class:`Visibility` values.

    Without a depth image every in-view point is ``VISIBLE``. With one, let ``d`` be the depth
    at the point's pixel and ``x`` the point's forward distance (metres): ``OCCLUDED`` if
    ``d < x - margin_m``, ``VISIBLE`` if ``d >= x - margin_m``, ``NO_DEPTH`` if the pixel has no
    reading (non-finite or <= 0). ``margin_m`` (metres; one number, or one per point) absorbs
    the object's own thickness in front of its centre and depth noise.

    >>> cam = look_at((0, 0, 1), (1, 0, 1), fov_deg=90.0, vfov_deg=90.0, range_m=5.0,
    ...               depth=np.full((4, 4), 2.0))
    >>> [Visibility(v).name for v in visibility(cam, [[1.5, 0, 1], [3, 0, 1], [-1, 0, 1]])]
    ['VISIBLE', 'OCCLUDED', 'OUT_OF_VIEW']
    """
    pts = check_points(points_map)
    margins = _check_margin(margin_m, pts.shape[0])
    seen = in_view(camera, pts)
    out = np.full(pts.shape[0], Visibility.OUT_OF_VIEW, dtype=np.int8)
    if camera.depth is None:
        out[seen] = Visibility.VISIBLE
        return out
    idx = np.flatnonzero(seen)
    if idx.size == 0:
        return out
    depth = camera.depth
    rows, cols = project(camera, pts[idx])
    r, c = pixel_index(rows, cols, depth.shape)
    d = depth[r, c].astype(np.float64)
    forward = to_camera_frame(camera, pts[idx])[:, 0]
    valid = np.isfinite(d) & (d > 0.0)
    state = np.where(d >= forward - margins[idx], Visibility.VISIBLE, Visibility.OCCLUDED)
    out[idx] = np.where(valid, state, Visibility.NO_DEPTH)
    return out


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
                 uncertainty_m: float, depth_noise_m: float, depth_noise_per_m: float) -> None:
    """The depth part of :func:`place_looks` for the ``m`` boxes wholly in view (centres
    ``pts`` and half extents ``half`` (m, 3), centre forward distances ``x`` (m,)), written into
    ``looks`` at ``idx``: every box at once. The pixels of all boxes are laid end to end (box
    by box, each window row by row) and each is judged by the same elementwise arithmetic a
    box-by-box loop does, so every compared float is the same (tested against that loop)."""
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


def place_states(camera: Camera, centers: Any, sizes: Any, see_through_m: float = 0.01,
                 front_m: float = 0.05, uncertainty_m: float = 0.008) -> np.ndarray:
    """:class:`Place` of each remembered box (centres and extents (n, 3), metres, map frame),
    an int8 array (n,): the ``states`` of :func:`place_looks`.

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


def look_at(
    position: Sequence[float],
    target: Sequence[float],
    *,
    fov_deg: float = 70.0,
    vfov_deg: float = 50.0,
    range_m: float = 4.0,
    depth: np.ndarray | None = None,
) -> Camera:
    """A camera at ``position`` whose optical axis points at ``target`` (both map frame,
    metres), with no roll: the body y axis stays horizontal (level horizon). Looking straight
    up or down, body y is taken along map +y.

    >>> cam = look_at((0, 0, 0), (0, 3, 0))   # facing map +y: a 90 degree yaw
    >>> [round(v, 6) for v in cam.quaternion]
    [0.707107, 0.0, 0.0, 0.707107]
    """
    p = check_points(position, "position")[0]
    q = check_points(target, "target")[0]
    forward = q - p
    dist = float(np.linalg.norm(forward))
    if dist < 1e-9:
        raise InvalidInput("look_at needs a target distinct from the position")
    x_axis = forward / dist
    y_axis = np.cross(np.array([0.0, 0.0, 1.0]), x_axis)
    if np.linalg.norm(y_axis) < 1e-9:  # looking straight up or down
        y_axis = np.array([0.0, 1.0, 0.0])
    y_axis = y_axis / np.linalg.norm(y_axis)
    z_axis = np.cross(x_axis, y_axis)
    rot = np.column_stack([x_axis, y_axis, z_axis])  # body axes expressed in the map frame
    return Camera(position=tuple(p.tolist()), quaternion=quaternion_wxyz_from_matrix(rot),
                  fov_deg=fov_deg, range_m=range_m, vfov_deg=vfov_deg, depth=depth)
