"""Benchmarks behind ``locimem bench``: they print figures and ratios; nothing here asserts
timing. Run them on a quiet machine and compare ratios measured side by side in one run."""

from __future__ import annotations

import platform
import resource
from collections.abc import Sequence
from typing import TextIO

from locimem.bench.ingest import bench_day, bench_ingest, bench_open
from locimem.bench.phases import PHASES, ScanProfile

DAYS = ("clutter", "removals", "moves_across_rooms")
"""The simulated days ``run_ingest_suite`` times after its table (no process restarts)."""


def run_ingest_suite(sizes: Sequence[int], scans: int, open_observations: int,
                     out: TextIO, profile: bool = False) -> None:
    """Print the ingest table (both durability modes, a camera, 128-d embeddings), the
    simulated days' (:data:`DAYS`) and the open-time figures; with ``profile``, after the
    table, where each row's time goes (:mod:`locimem.bench.phases`)."""
    out.write(f"# locimem ingest benchmark ({platform.python_implementation()} "
              f"{platform.python_version()}, {platform.machine()})\n\n")
    out.write("| objects held | mode | det/scan | det/s | median ms/scan | p99 ms/scan "
              "| max ms/scan | p99 / median | CPU median ms | CPU p99 ms | CPU max ms "
              "| raw append floor ms | ratio | resident B/object | peak RSS MB |\n")
    out.write("|---:|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|\n")
    out.flush()
    profiles = []
    rows = ((True, False, 0), (False, False, 0), (False, True, 0), (False, False, 128))
    for durable, camera, dim in rows:
        for n in sizes:
            if dim:  # 18 re-observations and 2 new objects a scan, each with an embedding
                f = bench_ingest(n, scans=scans, per_scan=20, new_per_scan=2, dim=dim,
                                 profile=profile)
            else:
                f = bench_ingest(n, scans=scans, durable=durable, camera=camera,
                                 profile=profile)
            mode = ("durable" if durable else "fast") + (" + camera" if camera else "")
            if dim:
                mode += f" + {dim}-d embeddings ({f.per_scan - f.new_per_scan} seen, "
                mode += f"{f.new_per_scan} new)"
            rss = "" if f.rss_per_object_b is None else f"{f.rss_per_object_b:,.0f}"
            peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024  # Linux: KiB
            out.write(f"| {f.n_objects:,} | {mode} | {f.per_scan} | {f.detections_per_s:,.0f} | "
                      f"{f.median_ms:.2f} | {f.p99_ms:.2f} | {f.max_ms:.2f} | "
                      f"{f.p99_ms / f.median_ms:.1f}x | {f.cpu_median_ms:.2f} | "
                      f"{f.cpu_p99_ms:.2f} | {f.cpu_max_ms:.2f} | {f.floor_median_ms:.2f} | "
                      f"{f.ratio:.2f}x | {rss} | {peak:,.0f} |\n")
            out.flush()
            if f.profile is not None:
                profiles.append((f"{f.n_objects:,} {mode}", f.profile))
    out.write(f"\nBLAS threads while scanning: {_blas_text()} (`ObjectMemory.open(threads=1)`); "
              "CPU times are the process's, every thread's.\n")
    if profiles:
        _write_profiles(out, profiles)
    out.write("\nA robot's day, simulated (the quality benchmark's scenarios: a camera with a "
              "coarse depth image, detections with embeddings, flicker and false positives), "
              "fast mode:\n\n| scenario | scans | det/scan | objects held | depth | median ms/scan "
              "| p99 ms/scan | max ms/scan | CPU median ms | raw append floor ms | ratio |\n"
              "|---|---:|---:|---:|---|---:|---:|---:|---:|---:|---:|\n")
    for name in DAYS:
        d = bench_day(name)
        depth = "none" if d.depth_shape is None else f"{d.depth_shape[0]}x{d.depth_shape[1]}"
        out.write(f"| {d.scenario} | {d.scans} | {d.detections_per_scan:.1f} | {d.objects} | "
                  f"{depth} | {d.median_ms:.2f} | {d.p99_ms:.2f} | {d.max_ms:.2f} | "
                  f"{d.cpu_median_ms:.2f} | "
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


def _blas_text() -> str:
    from locimem.threads import blas_threads

    found = sorted(set(blas_threads().values()))
    return "none found" if not found else " / ".join(str(n) for n in found)


def _write_profiles(out: TextIO, profiles: Sequence[tuple[str, ScanProfile]]) -> None:
    """Where each row's time goes: every phase's median, p99 and max, then the slowest
    scans with what took most of them."""
    out.write("\nWhere a scan's time goes (`--profile`; ms: median / p99 / max; `gc` runs "
              "within the other phases; `other`: the input's checks and the find index):\n\n"
              "| row | " + " | ".join(PHASES) + " | slowest scans (ms: cause) |\n"
              "|---|" + "---:|" * len(PHASES) + "---|\n")
    for name, prof in profiles:
        summary = prof.summary()
        cells = [" / ".join(f"{v:.2f}" for v in summary[p]) if p in summary else "—"
                 for p in PHASES]
        slow = ", ".join(f"{s.wall * 1e3:.1f}: {s.cause()}" for s in prof.slowest(3))
        out.write(f"| {name} | " + " | ".join(cells) + f" | {slow} |\n")
    out.flush()


__all__ = ["bench_ingest", "bench_open", "run_ingest_suite"]
