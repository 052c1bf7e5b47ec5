"""Scans from a JSON-lines file: one scan per line, in locimem's own frames and units.

Each non-blank line is one JSON object::

    {"t": 12.5,
     "detections": [{"label": "cup", "confidence": 0.9, "center": [0.4, 0.1, 0.9],
                     "size": [0.08, 0.08, 0.1], "track_id": "7",
                     "orientation": [1, 0, 0, 0], "feature": [0.1, 0.2]}],
     "camera": {"position": [0, 0, 1.2], "quaternion": [1, 0, 0, 0], "fov_deg": 69.4,
                "range_m": 6.0, "vfov_deg": 42.5, "depth": [[2.5, null], [2.4, 2.4]]}}

``t`` is seconds; ``detections`` (default none) and ``camera`` (default none) take exactly the
fields of :class:`~locimem.model.Detection` and :class:`~locimem.model.Camera`: positions in
the map frame, metres, z up, quaternions (w, x, y, z), the camera's body frame x forward, y
left, z up, ``depth`` rows of forward distances in metres (top row first; ``null`` = no
reading). Only ``track_id``, ``orientation``, ``feature``, ``vfov_deg``, ``depth``, ``image``
and ``intrinsics`` are optional. Unknown keys are an error, so a typo is never ignored.
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any, BinaryIO

import numpy as np

from locimem.files import open_regular
from locimem.ingest.feed import IngestError, PlannedScan, Scan
from locimem.model import Camera, Detection

__all__ = ["count_scans", "plan_jsonl"]

_SCAN_KEYS = {"t", "detections", "camera"}
_DETECTION_KEYS = {"label", "confidence", "center", "size", "track_id", "orientation", "feature"}
_CAMERA_KEYS = {"position", "quaternion", "fov_deg", "range_m", "vfov_deg", "depth", "image",
                "intrinsics"}


def _open(path: str | os.PathLike[str]) -> BinaryIO:
    return open_regular(path, "the scan file", "expected a .jsonl file")


def _lines(path: Path) -> Iterator[tuple[int, str]]:
    with _open(path) as f:
        for number, raw in enumerate(f, start=1):
            try:
                line = raw.decode("utf-8")
            except UnicodeDecodeError:
                raise IngestError(f"{path.name} line {number}", "not UTF-8 text") from None
            if line.strip():
                yield number, line


def count_scans(path: str | os.PathLike[str]) -> int:
    """Non-blank lines of the file (for a progress bar)."""
    with _open(path) as f:
        return sum(1 for raw in f if raw.strip())


def _unknown(where: str, what: str, got: dict[str, Any], allowed: set[str]) -> None:
    extra = sorted(set(got) - allowed)
    if extra:
        raise IngestError(where, f"unknown {what} key(s) {extra}; expected some of "
                          f"{sorted(allowed)}")


def _detection(where: str, i: int, d: Any) -> Detection:
    if not isinstance(d, dict):
        raise IngestError(where, f"detections[{i}] must be an object, got {type(d).__name__}")
    _unknown(where, f"detections[{i}]", d, _DETECTION_KEYS)
    missing = sorted({"label", "confidence", "center", "size"} - set(d))
    if missing:
        raise IngestError(where, f"detections[{i}] lacks {missing}")
    feature = d.get("feature")
    try:
        return Detection(
            d["label"], d["confidence"], _vec(d["center"]), _vec(d["size"]),
            feature=None if feature is None else np.asarray(feature, dtype=np.float32),
            track_id=d.get("track_id"),
            orientation=None if d.get("orientation") is None else _vec(d["orientation"]),
        )
    except (ValueError, TypeError) as exc:  # InvalidInput is a ValueError
        raise IngestError(where, f"detections[{i}]: {exc}") from None


def _vec(v: Any) -> Any:
    return tuple(v) if isinstance(v, list) else v


def _camera(where: str, c: Any) -> Camera:
    if not isinstance(c, dict):
        raise IngestError(where, f"camera must be an object, got {type(c).__name__}")
    _unknown(where, "camera", c, _CAMERA_KEYS)
    missing = sorted({"position", "quaternion", "fov_deg", "range_m"} - set(c))
    if missing:
        raise IngestError(where, f"camera lacks {missing}")
    depth = c.get("depth")
    if depth is not None:
        try:
            depth = np.array([[np.nan if v is None else v for v in row] for row in depth],
                             dtype=np.float32)
        except (TypeError, ValueError):
            raise IngestError(where, "camera.depth must be rows of numbers (metres) or null, "
                              "all rows of one length") from None
    try:
        return Camera(_vec(c["position"]), _vec(c["quaternion"]), c["fov_deg"], c["range_m"],
                      vfov_deg=c.get("vfov_deg", 60.0), depth=depth, image=c.get("image"),
                      intrinsics=None if c.get("intrinsics") is None
                      else _vec(c["intrinsics"]))
    except (ValueError, TypeError) as exc:
        raise IngestError(where, f"camera: {exc}") from None


def plan_jsonl(path: str | os.PathLike[str]) -> Iterator[PlannedScan]:
    """The scans of a JSON-lines file, in file order. Raises :class:`IngestError` naming the
    line for a line that is not a JSON object with a finite ``t``; the rest of a line is
    checked when its scan is built."""
    path = Path(path)
    for number, line in _lines(path):
        where = f"{path.name} line {number}"
        try:
            doc = json.loads(line)
        except json.JSONDecodeError as exc:
            raise IngestError(where, f"not valid JSON ({exc.msg} at column {exc.colno})") \
                from None
        if not isinstance(doc, dict):
            raise IngestError(where, f"a scan must be a JSON object, got {type(doc).__name__}")
        _unknown(where, "scan", doc, _SCAN_KEYS)
        t = doc.get("t")
        if isinstance(t, bool) or not isinstance(t, (int, float)) or not np.isfinite(t):
            raise IngestError(where, f"t must be a finite number of seconds, got {t!r}")

        def build(doc: dict[str, Any] = doc, where: str = where) -> Scan:
            dets = doc.get("detections", [])
            if not isinstance(dets, list):
                raise IngestError(where, "detections must be a list")
            camera = doc.get("camera")
            return Scan(float(doc["t"]), [_detection(where, i, d) for i, d in enumerate(dets)],
                        None if camera is None else _camera(where, camera))

        yield PlannedScan(float(t), where, build)
