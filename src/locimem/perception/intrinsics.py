"""Pinhole intrinsics of a color or depth image, as a ROS ``sensor_msgs/CameraInfo`` gives them.

Pixel convention (ROS / OpenCV): the centre of pixel column ``u`` is at ``x = u``, so the ray
through pixel ``(row v, column u)`` is, in the optical frame (z forward, x right, y down),
``((u - cx) / fx, (v - cy) / fy, 1)``. A camera centred on its image has
``cx = (width - 1) / 2``. (locimem's :mod:`~locimem.geometry` puts pixel centres at
``u + 0.5`` with ``cx = width / 2``: the same camera, half a pixel apart in the numbers.)

Distortion is not modelled: lifting needs rectified images (the ``image_rect`` topics of ROS
``image_proc``; a RealSense's aligned depth is rectified). A ``CameraInfo`` whose distortion
``d`` is not all zero describes the *raw* image, and by ROS's convention its projection
matrix ``p`` holds the intrinsics of the rectified one: those are used
(:func:`camera_matrix`). A distorted camera info without a usable ``p`` is refused.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from locimem.check import check_float, check_int, check_positive
from locimem.errors import InvalidInput

__all__ = ["Intrinsics", "camera_matrix", "centred_window"]


@dataclass(frozen=True, slots=True)
class Intrinsics:
    """Pinhole intrinsics in pixels: focal lengths ``fx``, ``fy`` (> 0), principal point
    ``cx``, ``cy`` (ROS convention: pixel centres at integers) and the image's ``width`` and
    ``height`` (integers >= 1).

    >>> k = Intrinsics(525.0, 525.0, 319.5, 239.5, 640, 480)
    >>> k.scaled(320, 240)
    Intrinsics(fx=262.5, fy=262.5, cx=159.5, cy=119.5, width=320, height=240)
    """

    fx: float
    fy: float
    cx: float
    cy: float
    width: int
    height: int

    def __post_init__(self) -> None:
        set_ = object.__setattr__
        set_(self, "fx", check_positive(self.fx, "intrinsics.fx"))
        set_(self, "fy", check_positive(self.fy, "intrinsics.fy"))
        set_(self, "cx", check_float(self.cx, "intrinsics.cx"))
        set_(self, "cy", check_float(self.cy, "intrinsics.cy"))
        set_(self, "width", check_int(self.width, "intrinsics.width", lo=1, hi=1 << 20))
        set_(self, "height", check_int(self.height, "intrinsics.height", lo=1, hi=1 << 20))

    @classmethod
    def from_camera_info(cls, info: Any) -> Intrinsics:
        """The intrinsics of a ``sensor_msgs/CameraInfo``: a message (attributes ``k``,
        ``width``, ``height``; ROS 1's ``K`` too) or a dict with those keys. ``k`` is the 3x3
        camera matrix, row-major, 9 numbers ``[fx, 0, cx, 0, fy, cy, 0, 0, 1]``.

        >>> Intrinsics.from_camera_info({"k": [600, 0, 320, 0, 600, 240, 0, 0, 1],
        ...                              "width": 640, "height": 480}).fx
        600.0

        Raises:
            InvalidInput: a field is missing, ``k`` is not 9 finite numbers of a pinhole
                matrix (no skew, last row ``0 0 1``), or the camera is uncalibrated (all 0).
        """
        k = camera_matrix(info)
        return cls(k[0], k[4], k[2], k[5], _field(info, "width"), _field(info, "height"))

    def scaled(self, width: int, height: int) -> Intrinsics:
        """The same camera at another resolution (a depth image registered to this one and
        resampled, say): focal lengths scale with the size, and so does the principal point,
        about the image's corner (``(cx + 0.5) * s - 0.5``, pixel centres at integers)."""
        width = check_int(width, "width", lo=1, hi=1 << 20)
        height = check_int(height, "height", lo=1, hi=1 << 20)
        sx, sy = width / self.width, height / self.height
        return Intrinsics(self.fx * sx, self.fy * sy, (self.cx + 0.5) * sx - 0.5,
                          (self.cy + 0.5) * sy - 0.5, width, height)

    def as_tuple(self) -> tuple[float, float, float, float, float, float]:
        """``(fx, fy, cx, cy, width, height)``: :attr:`locimem.model.Camera.intrinsics`."""
        return (self.fx, self.fy, self.cx, self.cy, float(self.width), float(self.height))


def camera_matrix(info: Any) -> tuple[float, ...]:
    """The 3x3 camera matrix (9 numbers, row-major) of the rectified image a
    ``sensor_msgs/CameraInfo`` (a message, or a dict with its fields) describes: ``k`` when
    its distortion ``d`` is absent or all zero; else the left 3x3 of its projection matrix
    ``p`` (``[fx', 0, cx', Tx, 0, fy', cy', Ty, 0, 0, 1, 0]``), the rectified image's.

    Raises:
        InvalidInput: the matrix is missing, not 9 finite numbers of a pinhole matrix (no
            skew, last row ``0 0 1``), all zeros (uncalibrated), or ``d`` is not zero and
            ``p`` is missing or all zeros (a raw, distorted image: give rectified ones).
    """
    name, raw = "k", _field(info, "k")
    d = _field(info, "d", None)
    try:
        distorted = d is not None and any(float(v) != 0.0 for v in d)
    except (TypeError, ValueError):
        raise InvalidInput(f"camera info 'd' must be numbers, got {d!r:.60}") from None
    if distorted:
        p = _numbers(_field(info, "p", None) or (), "p")
        if len(p) != 12 or not any(p):
            raise InvalidInput(
                f"camera info has distortion d={list(d)!r:.80} and no projection matrix 'p' "
                "of its rectified image: lifting needs rectified images — give the "
                "image_rect topics (ROS image_proc) and their camera info")
        name, raw = "p (the rectified image's)", [*p[0:3], *p[4:7], *p[8:11]]
    k = _numbers(raw, name)
    if len(k) != 9:
        raise InvalidInput(f"camera info 'k' must have 9 numbers (3x3, row-major), got "
                           f"{len(k)}")
    if not any(k):
        raise InvalidInput(f"camera info {name} is all zeros: the camera is uncalibrated")
    if k[1] != 0.0 or k[3] != 0.0 or (k[6], k[7], k[8]) != (0.0, 0.0, 1.0):
        raise InvalidInput(f"camera info {name} must be a pinhole matrix [fx, 0, cx, 0, fy, "
                           f"cy, 0, 0, 1] (no skew), got {k}")
    return tuple(k)


_MISSING = object()


def _field(info: Any, name: str, default: Any = _MISSING) -> Any:
    """A camera info's field (ROS 1's upper-case name too), from a message or a dict."""
    for key in (name, name.upper()):
        if isinstance(info, Mapping):
            if key in info:
                return info[key]
        elif hasattr(info, key):
            return getattr(info, key)
    if default is not _MISSING:
        return default
    raise InvalidInput(f"camera info has no {name!r} (a sensor_msgs/CameraInfo, or a dict "
                       "with 'k', 'width' and 'height')")


def _numbers(raw: Any, name: str) -> list[float]:
    try:
        out = [float(v) for v in raw]
    except (TypeError, ValueError):
        raise InvalidInput(f"camera info {name!r} must be numbers, got {raw!r:.60}") from None
    if not all(math.isfinite(v) for v in out):
        raise InvalidInput(f"camera info {name!r} must be finite")
    return out


def _centred(c: float, n: int) -> tuple[int, int]:
    """Pixel range [a, b) of an axis of ``n`` pixels centred on the principal point ``c``
    (pixel centres at integers) to within half a pixel."""
    edge = c + 0.5  # the principal point in pixel-edge coordinates
    half = math.floor(min(edge, n - edge)) if math.isfinite(edge) else 0
    if half < 1:
        raise InvalidInput(f"principal point {c} leaves no image around it (size {n})")
    a = round(edge - half)
    return max(0, a), min(n, a + 2 * half)


def centred_window(k: Intrinsics) -> tuple[int, int, int, int, float, float]:
    """``(row0, row1, col0, col1, fov_deg, vfov_deg)``: the largest block of whole pixels of
    the image centred on its principal point (rows and columns ``[row0, row1)``,
    ``[col0, col1)``) and its fields of view — the part locimem's centred pinhole camera
    (:class:`~locimem.model.Camera`) describes exactly. It lies inside the real view, so no
    absence is credited for a place the camera could not see.

    >>> centred_window(Intrinsics(320.0, 320.0, 319.5, 239.5, 640, 480))[:4]
    (0, 480, 0, 640)
    """
    c0, c1 = _centred(k.cx, k.width)
    r0, r1 = _centred(k.cy, k.height)
    fov = math.degrees(2.0 * math.atan((c1 - c0) / 2.0 / k.fx))
    vfov = math.degrees(2.0 * math.atan((r1 - r0) / 2.0 / k.fy))
    return r0, r1, c0, c1, fov, vfov
