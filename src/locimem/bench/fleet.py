"""``locimem bench fleet``: scans per second and p99 scan latency for 1, 2, 4 and 8 writer
processes — all in one scope (they take turns at its write lock and catch up on each other's
commits) and one scope each (in parallel) — on PostgreSQL, beside the same workload on SQLite
(one file per writer: a SQLite file takes one writer, so "one scope" there is one writer).

Each writer observes its own neighbourhood: scans of 30 detections of 30 known objects, 0.1 s
apart, durable commits on both backends (``synchronous_commit = on``; SQLite
``synchronous=FULL``). Every writer opens, takes a few warm-up scans, waits for the common
start, then scans for the measured seconds; a scan's latency is its ``observe`` call (catch-up,
decide, append, commit).
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path
from typing import TextIO

from locimem.model import Detection

__all__ = ["FleetFigures", "bench_fleet", "run_fleet_suite"]

PER_SCAN = 30
WARMUP = 5


@dataclass(frozen=True)
class FleetFigures:
    """One configuration's figures: scans/s summed over the writers, and latencies (ms)."""

    backend: str
    layout: str  # "one scope" or "a scope each"
    writers: int
    scans: int
    scans_per_s: float
    median_ms: float
    p99_ms: float


def _scan(writer: int) -> list[Detection]:
    x0 = writer * 100.0  # each writer's own neighbourhood
    return [Detection("cup", 0.9, (x0 + (i % 6) * 0.8, (i // 6) * 0.8, 0.8), (0.1, 0.1, 0.1))
            for i in range(PER_SCAN)]


def _worker(store: str, scope: str, writer: int, start_at: float, seconds: float) -> None:
    from locimem.memory.facade import ObjectMemory

    dets = _scan(writer)
    latencies: list[float] = []
    with ObjectMemory.open(store, scope=scope) as mem:
        t = 0.0
        for _ in range(WARMUP):
            mem.observe(t, dets)
            t += 0.1
        while time.time() < start_at:
            time.sleep(0.001)
        end = start_at + seconds
        while True:
            began = time.perf_counter()
            mem.observe(t, dets)
            latencies.append((time.perf_counter() - began) * 1000.0)
            t += 0.1
            if time.time() >= end:
                break
    json.dump({"latencies": latencies}, sys.stdout)


def bench_fleet(store_of: list[str], scopes: list[str], seconds: float) -> tuple[int, float,
                                                                                  float, float]:
    """Run one writer process per (store, scope) pair at once: (scans, scans/s, median ms,
    p99 ms)."""
    start_at = time.time() + 3.0 + 1.0 * len(store_of)  # time for every writer to open
    env = dict(os.environ)
    src = str(Path(__file__).resolve().parents[2])
    env["PYTHONPATH"] = os.pathsep.join([src, env.get("PYTHONPATH", "")])
    procs = [subprocess.Popen(
        [sys.executable, "-m", "locimem.bench.fleet", "--worker", store, scope, str(w),
         str(start_at), str(seconds)], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
        text=True, env=env) for w, (store, scope) in enumerate(zip(store_of, scopes,
                                                                   strict=True))]
    latencies: list[float] = []
    for p in procs:
        out, err = p.communicate()
        if p.returncode != 0:
            raise RuntimeError(f"a fleet writer failed: {err.strip()[-500:]}")
        latencies += json.loads(out)["latencies"]
    latencies.sort()
    p99 = latencies[min(len(latencies) - 1, int(0.99 * len(latencies)))]
    return len(latencies), len(latencies) / seconds, statistics.median(latencies), p99


def _fresh_schema(url: str, name: str) -> str:
    from locimem.store.postgres import with_schema

    return with_schema(url, name)


def run_fleet_suite(out: TextIO, url: str | None, *, writers: tuple[int, ...] = (1, 2, 4, 8),
                    seconds: float = 5.0) -> list[FleetFigures]:
    """Print the fleet table; PostgreSQL rows need ``url`` (default ``$LOCIMEM_POSTGRES``: a
    server the bench may create schemas in; each run uses new ones and drops them)."""
    url = url or os.environ.get("LOCIMEM_POSTGRES")
    figures: list[FleetFigures] = []
    out.write(f"# locimem fleet benchmark ({os.cpu_count()} cores; {seconds:g} s per row, "
              f"{PER_SCAN} detections a scan, durable commits)\n\n")
    out.write("| backend | layout | writers | scans | scans/s | median ms/scan | p99 ms/scan |\n")
    out.write("|---|---|---:|---:|---:|---:|---:|\n")
    out.flush()
    tag = f"bench_fleet_{os.getpid()}_{int(time.time())}"
    made: list[str] = []

    def row(backend: str, layout: str, n: int, stores: list[str], scopes: list[str]) -> None:
        scans, rate, median, p99 = bench_fleet(stores, scopes, seconds)
        f = FleetFigures(backend, layout, n, scans, rate, median, p99)
        figures.append(f)
        out.write(f"| {backend} | {layout} | {n} | {scans:,} | {rate:,.0f} | {median:.2f} | "
                  f"{p99:.2f} |\n")
        out.flush()

    try:
        with tempfile.TemporaryDirectory(prefix="locimem-fleet-") as folder:
            for n in writers:
                if url is not None:
                    one = _fresh_schema(url, f"{tag}_one_{n}")
                    each = _fresh_schema(url, f"{tag}_each_{n}")
                    made += [f"{tag}_one_{n}", f"{tag}_each_{n}"]
                    row("postgres", "one scope", n, [one] * n, ["fleet"] * n)
                    row("postgres", "a scope each", n, [each] * n,
                        [f"robot{w}" for w in range(n)])
                if n == 1:
                    row("sqlite", "one scope", 1, [str(Path(folder) / "one.loci")], ["fleet"])
                row("sqlite", "a file each", n,
                    [str(Path(folder) / f"each{n}_{w}.loci") for w in range(n)],
                    [f"robot{w}" for w in range(n)])
    finally:
        if url is not None and made:
            import psycopg

            from locimem.store.postgres import parse_url

            with psycopg.connect(parse_url(url)[0], autocommit=True) as conn:
                for schema in made:
                    conn.execute(f'DROP SCHEMA IF EXISTS "{schema}" CASCADE')
    if url is None:
        out.write("\n(PostgreSQL rows skipped: pass --url postgresql://… or set "
                  "LOCIMEM_TEST_POSTGRES.)\n")
    return figures


def _main() -> None:
    ap = argparse.ArgumentParser(prog="python -m locimem.bench.fleet")
    ap.add_argument("--worker", nargs=5, metavar=("STORE", "SCOPE", "WRITER", "START",
                                                   "SECONDS"))
    args = ap.parse_args()
    store, scope, writer, start_at, seconds = args.worker
    _worker(store, scope, int(writer), float(start_at), float(seconds))


if __name__ == "__main__":
    _main()
