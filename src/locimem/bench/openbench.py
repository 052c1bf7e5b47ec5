"""Open and rebuild benchmarks: a memory's state read from its store, beside a bare read of the
same rows.

``open``: :meth:`ObjectMemory.open` (read-only: the state from the materialised rows, its
indexes and relations built) against a bare ``SELECT`` of the rows that state is read from
(objects, tombstones, rejection keys, prior map, deltas, keyframes), fetched and dropped.
``rebuild``: :meth:`ObjectMemory.rebuild_from_log` (every record decoded and applied, then the
indexes built once) against a bare read of the same commits, observations and events in the
same order.

The store is the interchange benchmark's furnished building (:func:`build_store`: every
object seen through ``observe`` until promoted, the rest of the observations appended as
pre-decided records in bulk). Times are the median of ``repeats`` runs, CPU
(``time.process_time``) and wall; ratios are CPU to CPU, measured side by side in one run.
"""

from __future__ import annotations

import platform
import sqlite3
import statistics
import sys
import tempfile
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from functools import partial
from pathlib import Path
from typing import TextIO

from locimem.bench.interchange import SCOPE, build_store
from locimem.memory import ObjectMemory
from locimem.store.sqlite.store import log_queries

__all__ = ["Timing", "bare_log_read", "bare_state_read", "run", "time_open", "time_rebuild"]

STATE_TABLES = ("objects", "tombstones", "rejection_keys", "prior_map", "deltas", "keyframes")


@dataclass(frozen=True)
class Timing:
    """Median CPU and wall seconds of some runs."""

    cpu_s: float
    wall_s: float


def _timed(fn: Callable[[], object], repeats: int) -> Timing:
    cpu, wall = [], []
    for _ in range(repeats):
        c0, w0 = time.process_time(), time.perf_counter()
        fn()
        cpu.append(time.process_time() - c0)
        wall.append(time.perf_counter() - w0)
    return Timing(statistics.median(cpu), statistics.median(wall))


def _connect(path: Path) -> sqlite3.Connection:
    return sqlite3.connect(path.resolve().as_uri() + "?mode=ro", uri=True)


def bare_state_read(path: Path, scope: str = SCOPE) -> int:
    """Every row an open reads its state from, fetched and dropped; returns how many."""
    conn = _connect(path)
    try:
        n = 0
        for table in STATE_TABLES:
            n += len(conn.execute(f"SELECT * FROM {table} WHERE scope = ?", (scope,))
                     .fetchall())
        return n
    finally:
        conn.close()


def bare_log_read(path: Path, scope: str = SCOPE) -> int:
    """The log's rows as a replay reads them (the same columns and order), iterated and
    dropped; returns how many."""
    conn = _connect(path)
    try:
        n = 0
        for sql, bound in log_queries(conn, scope):  # the statements (and plans) replay runs
            for _ in conn.execute(sql, bound):
                n += 1
        return n
    finally:
        conn.close()


def time_open(path: Path, repeats: int = 5, scope: str = SCOPE) -> Timing:
    return _timed(lambda: ObjectMemory.open(path, read_only=True, scope=scope).close(), repeats)


def time_rebuild(path: Path, repeats: int = 1, scope: str = SCOPE) -> Timing:
    with ObjectMemory.open(path, read_only=True, scope=scope) as mem:
        return _timed(mem.rebuild_from_log, repeats)


def run(suite: str, sizes: Sequence[int], n_observations: int, out: TextIO = sys.stdout,
        *, repeats: int = 5, workdir: str | Path | None = None) -> list[dict[str, float]]:
    """Build a store of each size and print the ``open`` or ``rebuild`` table."""
    if suite not in ("open", "rebuild"):
        raise ValueError(f"suite must be 'open' or 'rebuild', got {suite!r}")
    out.write(f"# locimem {suite} benchmark ({platform.python_implementation()} "
              f"{platform.python_version()}, {platform.machine()})\n\n")
    if suite == "open":
        out.write("| objects | observations | MB | open CPU ms | open wall ms "
                  "| bare SELECT CPU ms | state rows | ratio |\n"
                  "|---:|---:|---:|---:|---:|---:|---:|---:|\n")
    else:
        out.write("| objects | records | rebuild CPU s | wall s | records/s (CPU) "
                  "| bare read CPU s | bare records/s | ratio |\n"
                  "|---:|---:|---:|---:|---:|---:|---:|---:|\n")
    out.flush()
    figures = []
    for n in sizes:
        with tempfile.TemporaryDirectory(dir=workdir) as tmp:
            path = Path(tmp) / f"{suite}.loci"
            counts = build_store(path, n, n_observations)
            mb = path.stat().st_size / 1e6
            if suite == "open":
                time_open(path, 1)  # warm the page cache for both sides alike
                rows = bare_state_read(path)
                mine, bare = [], []
                for _ in range(repeats):  # interleaved: one of each in turn
                    mine.append(time_open(path, 1))
                    bare.append(_timed(partial(bare_state_read, path), 1))
                cpu = statistics.median(t.cpu_s for t in mine)
                wall = statistics.median(t.wall_s for t in mine)
                floor = statistics.median(t.cpu_s for t in bare)
                f = {"objects": counts["objects"], "observations": counts["observations"],
                     "mb": mb, "open_cpu_s": cpu, "open_wall_s": wall, "bare_cpu_s": floor,
                     "rows": rows, "ratio": cpu / floor}
                out.write(f"| {f['objects']:,} | {f['observations']:,} | {mb:,.0f} | "
                          f"{cpu * 1e3:,.0f} | {wall * 1e3:,.0f} | {floor * 1e3:,.0f} | "
                          f"{rows:,} | {f['ratio']:.1f}x |\n")
            else:
                records = bare_log_read(path)  # also warms the page cache
                floor = _timed(partial(bare_log_read, path), 1).cpu_s
                t = time_rebuild(path, 1)
                f = {"objects": counts["objects"], "records": records, "rebuild_cpu_s": t.cpu_s,
                     "rebuild_wall_s": t.wall_s, "records_per_s": records / t.cpu_s,
                     "bare_cpu_s": floor, "bare_records_per_s": records / floor,
                     "ratio": t.cpu_s / floor}
                out.write(f"| {f['objects']:,} | {records:,} | {t.cpu_s:.2f} | {t.wall_s:.2f} | "
                          f"{f['records_per_s']:,.0f} | {floor:.2f} | "
                          f"{f['bare_records_per_s']:,.0f} | {f['ratio']:.1f}x |\n")
            out.flush()
            figures.append(f)
    return figures


if __name__ == "__main__":  # pragma: no cover - python -m locimem.bench.openbench open 10000
    run(sys.argv[1] if len(sys.argv) > 1 else "open",
        [int(s) for s in (sys.argv[2] if len(sys.argv) > 2 else "10000").split(",")],
        1_000_000)
