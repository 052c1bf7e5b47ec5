"""A camera's frames, its image and what it can see: points to the body frame, the
field of view, projection, pixel rays and per-point visibility against a depth image; and
:func:`look_at`. Frames and units: :mod:`locimem.geometry`."""

from __future__ import annotations

import enum
import functools
import math
import struct
from collections.abc import Sequence
from typing import Any

import numpy as np
from scipy.spatial.transform import Rotation

from locimem.errors import InvalidInput
from locimem.model import Camera


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
