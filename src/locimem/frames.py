"""Rigid transforms of the map frame: one form at every boundary.

A transform is given either as a 4x4 homogeneous matrix ``M`` (rotation in ``M[:3, :3]``,
translation in ``M[:3, 3]``, bottom row ``0 0 0 1``) or as a pair ``(translation_xyz,
quaternion_wxyz)``; :func:`check_transform` turns either into a 4x4 float array and refuses
anything that is not a proper rigid motion (a reflection, a scale, a shear, a non-finite
number, a translation outside the position domain). ``T`` maps a point ``x`` to
``R @ x + t``: "frame B = T · frame A" means a point with coordinates ``x`` in A has
coordinates ``T · x`` in B.

Every stored position is in the *memory's frame*: the first map frame its scope saw. When the
scope's scans name their SLAM session (``observe(..., map_epoch=NAME)``) that frame is the
``base`` epoch's, and every export says so: :func:`memory_epoch` names it and
:func:`frame_note` is the line each export writes about its positions.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

import numpy as np

from locimem.errors import InvalidInput

__all__ = ["FRAME_NAME", "IDENTITY", "as_pair", "check_transform", "compose", "frame_note",
           "invert", "memory_epoch", "transform_points", "yaw_of", "yaw_transform"]

IDENTITY = np.eye(4)
IDENTITY.setflags(write=False)

_ORTHONORMAL_TOL = 1e-6  # how far R^T R may be from I (a rotation that went through JSON)
_UNIT_TOL = 1e-3  # how far a quaternion's norm may be from 1 (it is then normalised)
MAX_TRANSLATION_M = 1e6  # the position domain (locimem.check.MAX_ABS_COORD_M)

FORM = ("a 4x4 rigid matrix or (translation_xyz, quaternion_wxyz)")
FRAME_NAME = "map"
"""The name the exports give the memory's frame (a memory directory's ``map_frame`` may be
named otherwise: :func:`~locimem.interchange.export.export_memory`)."""


def check_transform(value: Any, name: str = "transform") -> np.ndarray:
    """``value`` as a 4x4 float array, if it is a rigid transform in either form (see the
    module); :class:`~locimem.errors.InvalidInput` naming what is wrong otherwise."""
    if isinstance(value, (tuple, list)) and len(value) == 2 and not _is_matrix_row(value[0]):
        out = _from_pair(value, name)
    else:
        try:
            out = np.array(value, dtype=float)
        except (TypeError, ValueError):
            raise InvalidInput(f"{name} must be {FORM}, got {type(value).__name__}") from None
        if out.shape != (4, 4):
            raise InvalidInput(f"{name} must be {FORM}; got an array of shape {out.shape}")
        if not np.isfinite(out).all():
            raise InvalidInput(f"{name} holds a non-finite number")
        if not np.array_equal(out[3], [0.0, 0.0, 0.0, 1.0]):
            raise InvalidInput(f"{name}'s bottom row must be 0 0 0 1, got {out[3].tolist()}")
        rot = out[:3, :3]
        if np.abs(rot.T @ rot - np.eye(3)).max() > _ORTHONORMAL_TOL:
            raise InvalidInput(f"{name}'s rotation is not orthonormal (a scale or shear)")
        if np.linalg.det(rot) < 0:
            raise InvalidInput(f"{name}'s rotation is a reflection (determinant -1)")
    if np.abs(out[:3, 3]).max() > MAX_TRANSLATION_M:
        raise InvalidInput(f"{name}'s translation is outside the position domain "
                           f"(|coordinate| <= {MAX_TRANSLATION_M:g} m)")
    out.setflags(write=False)
    return out


def _is_matrix_row(row: Any) -> bool:
    """A pair's first item is a translation (3 numbers), a matrix's a row of 4."""
    return hasattr(row, "__len__") and len(row) == 4


def _from_pair(value: Sequence[Any], name: str) -> np.ndarray:
    translation, quaternion = value
    try:
        t = np.array(translation, dtype=float)
        q = np.array(quaternion, dtype=float)
    except (TypeError, ValueError):
        raise InvalidInput(f"{name} must be {FORM}") from None
    if t.shape != (3,) or q.shape != (4,):
        raise InvalidInput(f"{name} as a pair needs 3 translation numbers and a quaternion of "
                           f"4 (w, x, y, z); got {t.shape} and {q.shape}")
    if not (np.isfinite(t).all() and np.isfinite(q).all()):
        raise InvalidInput(f"{name} holds a non-finite number")
    norm = float(np.linalg.norm(q))
    if abs(norm - 1.0) > _UNIT_TOL:
        raise InvalidInput(f"{name}'s quaternion must be a unit quaternion (w, x, y, z); its "
                           f"norm is {norm:g}")
    w, x, y, z = q / norm
    out = np.eye(4)
    out[:3, :3] = [
        [1 - 2 * (y * y + z * z), 2 * (x * y - w * z), 2 * (x * z + w * y)],
        [2 * (x * y + w * z), 1 - 2 * (x * x + z * z), 2 * (y * z - w * x)],
        [2 * (x * z - w * y), 2 * (y * z + w * x), 1 - 2 * (x * x + y * y)],
    ]
    out[:3, 3] = t
    return out


def compose(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """``a · b``: first ``b``, then ``a``."""
    return np.asarray(a, dtype=float) @ np.asarray(b, dtype=float)


def invert(transform: np.ndarray) -> np.ndarray:
    """The inverse of a rigid transform (exact: the rotation's transpose)."""
    rot = np.asarray(transform, dtype=float)[:3, :3]
    out = np.eye(4)
    out[:3, :3] = rot.T
    out[:3, 3] = -rot.T @ np.asarray(transform, dtype=float)[:3, 3]
    return out


def transform_points(transform: np.ndarray, points: Any) -> np.ndarray:
    """``transform · x`` for each row ``x`` of ``points`` (N x 3, or one point of 3)."""
    p = np.asarray(points, dtype=float)
    m = np.asarray(transform, dtype=float)
    return p @ m[:3, :3].T + m[:3, 3]


def yaw_transform(yaw_deg: float, tx: float = 0.0, ty: float = 0.0, tz: float = 0.0
                  ) -> np.ndarray:
    """A rotation of ``yaw_deg`` about z (counter-clockwise seen from above), then a
    translation: the transforms a gravity-aligned SLAM frame differs by."""
    a = math.radians(yaw_deg)
    c, s = math.cos(a), math.sin(a)
    out = np.eye(4)
    out[:2, :2] = [[c, -s], [s, c]]
    out[:3, 3] = (tx, ty, tz)
    return out


def yaw_of(transform: np.ndarray) -> float:
    """The rotation about z of ``transform``, degrees in (-180, 180]."""
    m = np.asarray(transform, dtype=float)
    return math.degrees(math.atan2(m[1, 0], m[0, 0]))


def as_pair(transform: np.ndarray) -> tuple[list[float], list[float]]:
    """``(translation_xyz, quaternion_wxyz)`` of a rigid transform, as plain lists (for JSON,
    events and exports); :func:`check_transform` reads it back."""
    m = np.asarray(transform, dtype=float)
    r = m[:3, :3]
    trace = r[0, 0] + r[1, 1] + r[2, 2]
    q: tuple[float, ...]
    if trace > 0:
        s = 2.0 * math.sqrt(trace + 1.0)
        q = (0.25 * s, (r[2, 1] - r[1, 2]) / s, (r[0, 2] - r[2, 0]) / s,
             (r[1, 0] - r[0, 1]) / s)
    elif r[0, 0] > r[1, 1] and r[0, 0] > r[2, 2]:
        s = 2.0 * math.sqrt(1.0 + r[0, 0] - r[1, 1] - r[2, 2])
        q = ((r[2, 1] - r[1, 2]) / s, 0.25 * s, (r[0, 1] + r[1, 0]) / s,
             (r[0, 2] + r[2, 0]) / s)
    elif r[1, 1] > r[2, 2]:
        s = 2.0 * math.sqrt(1.0 + r[1, 1] - r[0, 0] - r[2, 2])
        q = ((r[0, 2] - r[2, 0]) / s, (r[0, 1] + r[1, 0]) / s, 0.25 * s,
             (r[1, 2] + r[2, 1]) / s)
    else:
        s = 2.0 * math.sqrt(1.0 + r[2, 2] - r[0, 0] - r[1, 1])
        q = ((r[1, 0] - r[0, 1]) / s, (r[0, 2] + r[2, 0]) / s, (r[1, 2] + r[2, 1]) / s,
             0.25 * s)
    if q[0] < 0:  # one of the two quaternions of a rotation: w >= 0
        q = tuple(-v for v in q)
    return [float(v) for v in m[:3, 3]], [float(v) for v in q]


def memory_epoch(epochs: Any) -> str | None:
    """The map epoch whose frame is the memory's, from a state's ``epochs`` (name -> epoch) or
    a list of :class:`~locimem.model.MapEpoch`: the ``base`` one's name; None for a scope that
    never named its first frame (no epochs, or scans before the first named epoch)."""
    values = epochs.values() if hasattr(epochs, "values") else epochs
    return next((e.name for e in values if e.status == "base"), None)


def frame_note(epoch: str | None, name: str = FRAME_NAME) -> str:
    """What an export says about its positions: the memory's frame by name, and its map epoch
    when it has one (:func:`memory_epoch`).

    >>> print(frame_note("2026-12-01-boot"))
    positions in the memory's frame "map" (map epoch 2026-12-01-boot)
    >>> print(frame_note(None))
    positions in the memory's frame "map"
    """
    text = f"positions in the memory's frame \"{name}\""
    return text if epoch is None else f"{text} (map epoch {epoch})"
