"""Benchmarks behind ``locimem bench``: they print figures and ratios; nothing here asserts
timing. Run them on a quiet machine and compare ratios measured side by side in one run."""

from __future__ import annotations

import platform
from collections.abc import Sequence
from typing import TextIO

from locimem.bench.ingest import bench_ingest, bench_open


def run_ingest_suite(sizes: Sequence[int], scans: int, open_observations: int,
                     out: TextIO) -> None:
    """Print the ingest table (both durability modes) and the open-time figures."""
    out.write(f"# locimem ingest benchmark ({platform.python_implementation()} "
              f"{platform.python_version()}, {platform.machine()})\n\n")
    out.write("| objects held | mode | det/scan | det/s | median ms/scan | p99 ms/scan "
              "| raw append floor ms | ratio |\n")
    out.write("|---:|---|---:|---:|---:|---:|---:|---:|\n")
    out.flush()
    for durable, camera in ((True, False), (False, False), (False, True)):
        for n in sizes:
            f = bench_ingest(n, scans=scans, durable=durable, camera=camera)
            mode = ("durable" if durable else "fast") + (" + camera" if camera else "")
            out.write(f"| {f.n_objects:,} | {mode} | {f.per_scan} | {f.detections_per_s:,.0f} | "
                      f"{f.median_ms:.2f} | {f.p99_ms:.2f} | {f.floor_median_ms:.2f} | "
                      f"{f.ratio:.2f}x |\n")
            out.flush()
    if open_observations > 0:
        o = bench_open(open_observations)
        out.write(f"\nOpen a store of {o.n_observations:,} observations / {o.n_objects:,} "
                  f"objects ({o.file_mb:.0f} MB): {o.open_ms:.0f} ms from the materialised "
                  f"table; full rebuild from the log {o.rebuild_from_log_ms:.0f} ms.\n")
        if o.open_check_ms is not None:
            modes = ", ".join(f"{k} {v:.0f} ms" for k, v in o.open_check_ms.items())
            out.write(f"Open by check mode (median of 3): {modes}; PRAGMA quick_check alone "
                      f"{o.quick_check_ms:.0f} ms.\n")
    out.flush()


__all__ = ["bench_ingest", "bench_open", "run_ingest_suite"]
