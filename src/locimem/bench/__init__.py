"""Benchmarks behind ``locimem bench``: they print figures and ratios; nothing here asserts
timing. Run them on a quiet machine and compare ratios measured side by side in one run."""

from __future__ import annotations

import platform
import resource
from collections.abc import Sequence
from typing import TextIO

from locimem.bench.ingest import bench_day, bench_ingest, bench_open

DAYS = ("clutter", "removals", "moves_across_rooms")
"""The simulated days ``run_ingest_suite`` times after its table (no process restarts)."""


def run_ingest_suite(sizes: Sequence[int], scans: int, open_observations: int,
                     out: TextIO) -> None:
    """Print the ingest table (both durability modes, a camera, 128-d embeddings), the
    simulated days' (:data:`DAYS`) and the open-time figures."""
    out.write(f"# locimem ingest benchmark ({platform.python_implementation()} "
              f"{platform.python_version()}, {platform.machine()})\n\n")
    out.write("| objects held | mode | det/scan | det/s | median ms/scan | p99 ms/scan "
              "| CPU median ms | CPU p99 ms | raw append floor ms | ratio | resident B/object "
              "| peak RSS MB |\n")
    out.write("|---:|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|\n")
    out.flush()
    rows = ((True, False, 0), (False, False, 0), (False, True, 0), (False, False, 128))
    for durable, camera, dim in rows:
        for n in sizes:
            if dim:  # 18 re-observations and 2 new objects a scan, each with an embedding
                f = bench_ingest(n, scans=scans, per_scan=20, new_per_scan=2, dim=dim)
            else:
                f = bench_ingest(n, scans=scans, durable=durable, camera=camera)
            mode = ("durable" if durable else "fast") + (" + camera" if camera else "")
            if dim:
                mode += f" + {dim}-d embeddings ({f.per_scan - f.new_per_scan} seen, "
                mode += f"{f.new_per_scan} new)"
            rss = "" if f.rss_per_object_b is None else f"{f.rss_per_object_b:,.0f}"
            peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024  # Linux: KiB
            out.write(f"| {f.n_objects:,} | {mode} | {f.per_scan} | {f.detections_per_s:,.0f} | "
                      f"{f.median_ms:.2f} | {f.p99_ms:.2f} | {f.cpu_median_ms:.2f} | "
                      f"{f.cpu_p99_ms:.2f} | {f.floor_median_ms:.2f} | {f.ratio:.2f}x | {rss} | "
                      f"{peak:,.0f} |\n")
            out.flush()
    out.write("\nA robot's day, simulated (the quality benchmark's scenarios: a camera with a "
              "coarse depth image, detections with embeddings, flicker and false positives), "
              "fast mode:\n\n| scenario | scans | det/scan | objects held | depth | median ms/scan "
              "| p99 ms/scan | CPU median ms | raw append floor ms | ratio |\n"
              "|---|---:|---:|---:|---|---:|---:|---:|---:|---:|\n")
    for name in DAYS:
        d = bench_day(name)
        depth = "none" if d.depth_shape is None else f"{d.depth_shape[0]}x{d.depth_shape[1]}"
        out.write(f"| {d.scenario} | {d.scans} | {d.detections_per_scan:.1f} | {d.objects} | "
                  f"{depth} | {d.median_ms:.2f} | {d.p99_ms:.2f} | {d.cpu_median_ms:.2f} | "
                  f"{d.floor_median_ms:.2f} | {d.ratio:.2f}x |\n")
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
