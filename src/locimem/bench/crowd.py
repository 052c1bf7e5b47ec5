"""Same-place crowds: what a scan costs when one box is reported many times.

Each row ingests scans holding ``n`` copies of one box (same label, centre and size) into a
fresh store file (durable, the default): the first scan, then the median of the following
ones. Before the crowd pre-pass (``tracker/crowd.py``) every copy became an object and the
second scan of 2,000 copies took 18.6 s; now the copies past the first are rejected as
``duplicate_in_scan`` (and more than 32 distinct detections in one 0.2 m cube as ``crowded``),
recorded like every rejection, and the cost per copy is flat. ``ratio`` compares each row's
median with the 200-copy row's (10x the copies at < 10x the cost is the acceptance line).
"""

from __future__ import annotations

import statistics
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path
from typing import TextIO

from locimem.memory import ObjectMemory
from locimem.model import Detection

BOX = Detection("box", 0.9, (1.0, 1.0, 0.5), (0.3, 0.3, 0.3))


@dataclass(frozen=True)
class CrowdFigures:
    copies: int
    first_ms: float
    median_ms: float
    objects: int


def bench_crowd(copies: int, *, scans: int = 7, durable: bool = True) -> CrowdFigures:
    """Ingest ``scans`` scans of ``copies`` copies of one box into a new store file."""
    with tempfile.TemporaryDirectory() as tmp, \
            ObjectMemory.open(Path(tmp) / "crowd.loci", durable=durable) as mem:
        dets = [BOX] * copies
        times = []
        for k in range(scans):
            start = time.perf_counter()
            mem.observe(float(k), dets)
            times.append((time.perf_counter() - start) * 1000)
        return CrowdFigures(copies, times[0], statistics.median(times[1:]),
                            len(mem.objects(status=None)))


def run_crowd_suite(out: TextIO, sizes: tuple[int, ...] = (200, 500, 1_000, 2_000, 10_000)
                    ) -> list[CrowdFigures]:
    """Print one row per crowd size; the ratio is against the smallest size."""
    rows = [bench_crowd(n) for n in sizes]
    base = rows[0]
    out.write("# locimem crowd benchmark: n copies of one box in one scan (durable store)\n\n")
    out.write("| copies | first scan ms | median later scan ms | objects | ratio to "
              f"{base.copies:,} | copies ratio |\n|---:|---:|---:|---:|---:|---:|\n")
    for r in rows:
        out.write(f"| {r.copies:,} | {r.first_ms:.1f} | {r.median_ms:.1f} | {r.objects} | "
                  f"{r.median_ms / base.median_ms:.2f}x | {r.copies / base.copies:g}x |\n")
    return rows
