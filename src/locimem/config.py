"""Tracker thresholds, validated once, with the published design's defaults.

The record never depends on these values: observations carry the weight they were applied with
and events carry the state they set, so replaying a store under another config rebuilds exactly
the same memory. The config only shapes *new* decisions and how beliefs are read.
"""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass, fields
from typing import Any

from locimem.check import check_float, check_int
from locimem.errors import InvalidInput

_INTS = {"promote_after", "revive_after", "doubt_after_misses"}
_OPTIONAL = {"human_label_weight", "revive_after"}


@dataclass(frozen=True, slots=True)
class TrackerConfig:
    """Association, belief and lifecycle thresholds.

    Matching tiers, tried in order for each scan (one detection per object per scan):

    1. *track*: the detection carries the perception ``track_id`` the object last had, and lies
       within ``drift_radius_m`` of it.
    2. *tight*: a live object within ``tight_radius_m``, whatever its label.
    3. *drift*: a live object within ``drift_radius_m`` whose voted label is the detection's.
    4. *reacquire*: an object lost at most ``reacquire_window_s`` ago (or, when both carry
       embeddings with cosine >= ``feature_match_min``, ``feature_reacquire_window_s`` ago),
       within ``drift_radius_m`` and with the same voted label (or within ``tight_radius_m``).

    Belief: ``confidence = exp(-(t - last_seen) / tau_s)``. Published (``confirmed``) when
    promoted and confidence >= ``publish_min``; ``lost`` once it falls below ``lost_below``.
    Every object that is not lost is matchable (no dead band between a match line and the lost
    line), and a lost one stays re-acquirable for the window.

    Governance: a person's ``relabel`` pins the label (the detector's votes are kept but do not
    overturn it) when ``human_label_weight`` is None, or adds that much label mass otherwise.
    A forgotten object seen again is suppressed; with ``revive_after`` = N, the N-th suppressed
    sighting revives it instead. An object the camera looked at and missed
    ``doubt_after_misses`` times in a row is ``doubted``.
    """

    tight_radius_m: float = 0.2
    drift_radius_m: float = 1.0
    promote_after: int = 6
    tau_s: float = 15.0
    publish_min: float = 0.5
    lost_below: float = 0.1
    reacquire_window_s: float = 60.0
    feature_reacquire_window_s: float = 3600.0
    feature_match_min: float = 0.8
    min_detection_confidence: float = 0.05
    position_alpha: float = 0.3
    human_label_weight: float | None = None
    revive_after: int | None = None
    doubt_after_misses: int = 2

    def __post_init__(self) -> None:
        for f in fields(self):
            value = getattr(self, f.name)
            if f.name in _OPTIONAL and value is None:
                continue
            if f.name in _INTS:
                object.__setattr__(self, f.name, check_int(value, f.name, lo=1, hi=1_000_000))
            else:
                object.__setattr__(self, f.name, check_float(value, f.name))
        if self.human_label_weight is not None and self.human_label_weight <= 0:
            raise InvalidInput(f"human_label_weight must be > 0 or None, "
                               f"got {self.human_label_weight}")
        positive = ("tight_radius_m", "drift_radius_m", "tau_s", "position_alpha")
        for name in positive:
            if getattr(self, name) <= 0:
                raise InvalidInput(f"{name} must be > 0, got {getattr(self, name)}")
        if self.tight_radius_m > self.drift_radius_m:
            raise InvalidInput(
                f"tight_radius_m ({self.tight_radius_m}) must not exceed "
                f"drift_radius_m ({self.drift_radius_m})"
            )
        if not 0.0 < self.lost_below < self.publish_min <= 1.0:
            raise InvalidInput(
                "thresholds must satisfy 0 < lost_below < publish_min <= 1, got "
                f"lost_below={self.lost_below}, publish_min={self.publish_min}"
            )
        for name in ("reacquire_window_s", "feature_reacquire_window_s"):
            if getattr(self, name) < 0:
                raise InvalidInput(f"{name} must be >= 0, got {getattr(self, name)}")
        for name in ("feature_match_min", "min_detection_confidence", "position_alpha"):
            if not 0.0 <= getattr(self, name) <= 1.0:
                raise InvalidInput(f"{name} must be in [0, 1], got {getattr(self, name)}")

    @property
    def lost_after_s(self) -> float:
        """Seconds without a detection after which belief falls below ``lost_below``."""
        return self.tau_s * math.log(1.0 / self.lost_below)

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> TrackerConfig:
        known = {f.name for f in fields(cls)}
        unknown = sorted(set(data) - known)
        if unknown:
            raise InvalidInput(f"unknown TrackerConfig field(s): {', '.join(unknown)}")
        return cls(**data)
