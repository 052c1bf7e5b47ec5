"""A 2D detection: a box in the color image, what the detector called it, optionally its mask."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from locimem.check import (
    check_feature,
    check_float,
    check_label,
    check_track_id,
    check_unit_interval,
)
from locimem.errors import InvalidInput

__all__ = ["Box2D"]


@dataclass(frozen=True, slots=True, eq=False)
class Box2D:
    """One 2D detection in the color image.

    Args:
        x0, y0, x1, y1: the box, pixels of the color image: columns ``x0..x1``, rows
            ``y0..y1``, continuous coordinates in which pixel ``(row i, column j)`` covers
            ``[j, j + 1) x [i, i + 1)`` — a box of the whole image is ``(0, 0, width,
            height)``, as detectors report boxes. ``x0 < x1``, ``y0 < y1``; the image bounds
            are checked by :func:`~locimem.perception.lift_frame`.
        label: the detector's class name (normalised as :class:`~locimem.model.Detection`'s).
        score: the detector's confidence, in [0, 1].
        mask: optional instance mask, a (height, width) bool array at the color image's size
            (an integer array of 0 and 1 is taken as bool); only its pixels inside the box
            count. Kept by reference when it is already bool: do not change it afterwards.
        embedding: optional appearance embedding (the detection's ``feature``).
        track_id: optional short-term perception track id (int or str).
    """

    x0: float
    y0: float
    x1: float
    y1: float
    label: str
    score: float
    mask: np.ndarray | None = None
    embedding: np.ndarray | None = None
    track_id: str | None = None

    def __post_init__(self) -> None:
        set_ = object.__setattr__
        for name in ("x0", "y0", "x1", "y1"):
            set_(self, name, check_float(getattr(self, name), f"box.{name}"))
        if not (self.x0 < self.x1 and self.y0 < self.y1):
            raise InvalidInput(f"box must have x0 < x1 and y0 < y1 (pixels), got "
                               f"({self.x0}, {self.y0}, {self.x1}, {self.y1})")
        set_(self, "label", check_label(self.label, "box.label"))
        set_(self, "score", check_unit_interval(self.score, "box.score"))
        if self.mask is not None:
            set_(self, "mask", _check_mask(self.mask))
        if self.embedding is not None:
            set_(self, "embedding", check_feature(self.embedding, "box.embedding"))
        set_(self, "track_id", check_track_id(self.track_id, "box.track_id"))

    @property
    def bounds(self) -> tuple[float, float, float, float]:
        """``(x0, y0, x1, y1)``."""
        return (self.x0, self.y0, self.x1, self.y1)


def _check_mask(value: Any) -> np.ndarray:
    if not isinstance(value, np.ndarray):
        try:
            value = np.asarray(value)
        except (TypeError, ValueError) as exc:
            raise InvalidInput(f"box.mask must be a (height, width) bool array: {exc}") from None
    if value.ndim != 2 or min(value.shape) < 1:
        raise InvalidInput(f"box.mask must be a (height, width) bool array, got shape "
                           f"{value.shape}")
    if value.dtype == np.bool_:
        return value
    if value.dtype.kind in "iu" and bool(np.all((value == 0) | (value == 1))):
        return value.astype(np.bool_)
    raise InvalidInput(f"box.mask must be a bool array (or of 0 and 1), got dtype {value.dtype}")
