"""Same-place crowds: the detections of one scan that cannot all be distinct objects.

A detector that fails its non-maximum suppression, or a hostile caller, can report the same box
hundreds of times in one scan. Every detection of a scan is a distinct object (the assignment
never gives two to one object), so without a bound, *n* copies of one box become *n* objects at
one place, and every later scan solves a dense *n* × *n* assignment there — super-linear in the
crowd. This pre-pass runs before association and rejects, with a recorded reason:

- ``duplicate_in_scan``: a detection with exactly the same label, centre and size as a more
  confident one of the same scan (ties: the earlier one is kept) — the same report twice;
- ``crowded``: beyond the :data:`MAX_PER_PLACE` most confident detections (ties: the earlier
  ones) whose centres fall in one cube of the tight radius (0.2 m by default) — more than that
  many distinct objects in a fist-sized cube is not a scene, it is an echo.

The rejected detections are recorded like every rejection (an observation with the reason and
a rejection key, repeats counted), so nothing is silently dropped. Pure: no state, no config
beyond the cell size; linear in the scan.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

from locimem.model import Detection

DUPLICATE = "duplicate_in_scan"
CROWDED = "crowded"
MAX_PER_PLACE = 32  # detections of one scan kept per cube of the tight radius


def crowd_rejections(detections: Sequence[Detection], candidates: Sequence[int],
                     cell_m: float) -> dict[int, str]:
    """Which of ``candidates`` (indices into ``detections``) to reject as duplicates or as a
    crowd, and why: index -> ``duplicate_in_scan`` | ``crowded``. ``cell_m`` is the side of
    the place cube (the tracker's tight radius, metres)."""
    if len(candidates) <= 1:
        return {}
    order = sorted(candidates, key=lambda i: (-detections[i].confidence, i))
    out: dict[int, str] = {}
    seen: set[tuple[str, tuple[float, ...], tuple[float, ...]]] = set()
    per_cell: dict[tuple[int, int, int], int] = {}
    inv = 1.0 / cell_m
    for i in order:
        det = detections[i]
        c = det.center
        key = (det.label, c, det.size)
        if key in seen:
            out[i] = DUPLICATE
            continue
        seen.add(key)
        cell = (math.floor(c[0] * inv), math.floor(c[1] * inv), math.floor(c[2] * inv))
        n = per_cell.get(cell, 0)
        if n >= MAX_PER_PLACE:
            out[i] = CROWDED
            continue
        per_cell[cell] = n + 1
    return out
