"""Interchange benchmark: export and import time and size of a memory directory.

The store: a furnished building (tables 2.5 m apart, four items on each; the layout of the
query benchmark) of ``n_objects`` objects. Every object is first seen through
:meth:`ObjectMemory.observe` until it is promoted (the tracker writes its APPEARED and
PROMOTED events, and its relations settle). The rest of the ``n_observations`` are
re-sightings with a ``feature_dim``-wide embedding — 30 objects a scan, round robin, 30 Hz, a
centimetre of noise — written as the records the tracker writes for a ``tight`` match
(weight ``position_alpha``) through the memory's own write path (``apply``, then one store
append per 1,000 scans) without running association. The store is valid (its cache equals a
replay of its log) and builds about three times faster than through ``observe`` (some 28,000
against 9,600 observations a second with embeddings, measured side by side).

Then: export it, verify the directory, import it into a new store, and export that again
(the two manifests — and so every file's SHA-256 — must be identical).
"""

from __future__ import annotations

import contextlib
import platform
import random
import sqlite3
import sys
import tempfile
import time
from collections.abc import Iterable
from pathlib import Path
from typing import Any, TextIO

import numpy as np

from locimem.bench.queries import _layout as furnished_layout
from locimem.config import TrackerConfig
from locimem.interchange.directory import BATCH_ROWS, TABLES
from locimem.interchange.export import (
    export_memory,
    import_memory,
    table_query,
    verify_directory,
)
from locimem.interchange.validate import validate_store
from locimem.memory import ObjectMemory, reader_of
from locimem.model import Commit, Observation
from locimem.progress import Progress
from locimem.store.sqlite import SQLiteStore

PER_SCAN = 30
HZ = 30.0
SCANS_PER_COMMIT = 1_000  # synthetic scans appended per transaction while building
SCOPE = "bench"


def _noop(items: Iterable[Any], total: int | None = None, **_: Any) -> Iterable[Any]:
    return items


def build_store(path: Path, n_objects: int, n_observations: int, *, feature_dim: int = 32,
                progress: Progress | None = None, seed: int = 0) -> dict[str, int]:
    """Write the benchmark store at ``path``; return its row counts."""
    bar = progress or _noop
    rng = np.random.default_rng(seed)
    jitter = random.Random(seed)
    layout = furnished_layout(n_objects, seed)
    features = rng.standard_normal((len(layout), feature_dim)).astype(np.float32)
    features /= np.linalg.norm(features, axis=1, keepdims=True)
    config = TrackerConfig()
    recorded = [1_700_000_000.0]

    def clock() -> float:
        recorded[0] += 0.001
        return recorded[0]


    ids: list[int] = [0] * len(layout)
    t = 0.0
    with ObjectMemory.open(path, scope=SCOPE, config=config, durable=False, clock=clock) as mem:
        blocks = range(0, len(layout), PER_SCAN)
        for start in bar(blocks, total=len(blocks)):  # seen until promoted, 6 scans a block
            block = range(start, min(len(layout), start + PER_SCAN))
            for _ in range(config.promote_after):
                result = mem.observe(t, [layout[i] for i in block])
                t += 0.005
            for i, oid in zip(block, result.assignments, strict=True):
                ids[i] = oid if oid is not None else 0
        seeded = reader_of(mem).store.count("observations", SCOPE)
        state = reader_of(mem).state
        remaining = max(0, n_observations - seeded)
        scans = -(-remaining // PER_SCAN)
        cursor = 0
        batches = range(0, scans, SCANS_PER_COMMIT)
        for first in bar(batches, total=len(batches)):
            records: list[Any] = []
            seq, commit_id = state.next_seq, state.next_commit
            for _ in range(min(SCANS_PER_COMMIT, scans - first)):
                n = min(PER_SCAN, remaining)
                remaining -= n
                t += 1.0 / HZ
                noise = rng.standard_normal((n, feature_dim)).astype(np.float32) * 0.05
                records.append(Commit(id=commit_id, kind="scan", t=t, recorded_at=clock(),
                                      actor="tracker", reason=None, n_detections=n))
                for index in range(n):
                    i = cursor % len(layout)
                    cursor += 1
                    d = layout[i]
                    c = d.center
                    noisy = features[i] + noise[index]
                    records.append(Observation(
                        seq=seq, commit=commit_id, t=t, index=index, label=d.label,
                        confidence=d.confidence,
                        center=(c[0] + jitter.gauss(0, 0.01), c[1] + jitter.gauss(0, 0.01),
                                c[2]),
                        size=d.size, object_id=ids[i], tier="tight",
                        weight=config.position_alpha, feature=noisy))
                    seq += 1
                commit_id += 1
            # pre-decided records: the bench builds the log directly
            mem._live._commit(records)
        counts = {table: reader_of(mem).store.count(table, SCOPE)
                  for table in ("commits", "observations", "events", "objects")}
    return counts


def _tree_bytes(directory: Path) -> dict[str, int]:
    sizes: dict[str, int] = {}
    for p in directory.rglob("*"):
        if p.is_file():
            rel = p.relative_to(directory).as_posix()
            sizes[rel] = p.stat().st_size
    return sizes


def _timed(call: Any) -> tuple[Any, float, float]:
    """``call()``, its wall and its CPU seconds (CPU: this process only, so less of the noise
    of other work on the machine)."""
    w, c = time.perf_counter(), time.process_time()
    result = call()
    return result, time.perf_counter() - w, time.process_time() - c


def _bare_read(store: Path) -> tuple[int, float, float]:
    """Every row of the scope, by the queries export runs (same columns, same order), fetched
    and dropped: what reading them costs SQLite and the driver alone. (rows, wall s, CPU s)"""
    conn = sqlite3.connect(store.resolve().as_uri() + "?mode=ro", uri=True,
                           isolation_level=None)
    try:
        def read() -> int:
            n = 0
            conn.execute("BEGIN")
            for table in TABLES:
                count = conn.execute(f"SELECT count(*) FROM {table.name} WHERE scope = ?",
                                     (SCOPE,)).fetchone()[0]
                rows = conn.execute(table_query(conn, table, count), (SCOPE,))
                while batch := rows.fetchmany(BATCH_ROWS):
                    n += len(batch)
            conn.execute("ROLLBACK")
            return n

        return _timed(read)
    finally:
        conn.close()


def _bare_write(store: Path, target: Path) -> tuple[int, float, float]:
    """The rows of the scope, as stored (read beforehand, untimed), into a new store by one
    ``executemany`` a table in one transaction: what writing them costs SQLite and the driver
    alone — the schema's indexes and constraints included, no check. (rows, wall s, CPU s)"""
    with contextlib.closing(SQLiteStore(store, read_only=True)) as src:
        rows = {t.name: src.conn.execute(
            f"SELECT scope, {', '.join(t.columns)} FROM {t.name} WHERE scope = ? "
            f"ORDER BY {t.key}", (SCOPE,)).fetchall() for t in TABLES}
    with contextlib.closing(SQLiteStore(target)) as dst:
        def write() -> int:
            with dst.atomic() as conn:
                for table in TABLES:
                    columns = ("scope", *table.columns)
                    conn.executemany(f"INSERT INTO {table.name} ({', '.join(columns)}) VALUES "
                                     f"({', '.join('?' * len(columns))})", rows[table.name])
            return sum(map(len, rows.values()))

        return _timed(write)


def run(n_objects: int = 10_000, n_observations: int = 1_000_000,
        progress: Progress | None = None, *, feature_dim: int = 32,
        out: TextIO | None = sys.stdout, workdir: str | Path | None = None) -> dict[str, Any]:
    """Build the store, then time export, verification, import and a second export, and —
    in the same run — a bare SQLite read of the rows export reads and a bare ``executemany``
    write of the rows import writes, and the validation import runs on its scratch store
    (timed again on the imported store); print a table to ``out`` (None: print nothing) and
    return the figures."""
    with tempfile.TemporaryDirectory(dir=workdir) as tmp:
        root = Path(tmp)
        store, copy = root / "bench.loci", root / "imported.loci"
        t0 = time.perf_counter()
        counts = build_store(store, n_objects, n_observations, feature_dim=feature_dim,
                             progress=progress)
        build_s = time.perf_counter() - t0
        store_bytes = store.stat().st_size

        read_rows, read_s, read_cpu = _bare_read(store)
        exported, _, export_cpu = _timed(
            lambda: export_memory(store, root / "dir", scope=SCOPE, progress=progress))
        _, verify_s, _ = _timed(lambda: verify_directory(root / "dir"))
        imported, _, import_cpu = _timed(
            lambda: import_memory(root / "dir", copy, progress=progress))
        _, validate_s, validate_cpu = _timed(lambda: validate_store(copy, quick=True))
        written_rows, write_s, write_cpu = _bare_write(copy, root / "bare.loci")
        again, _, again_cpu = _timed(lambda: export_memory(copy, root / "again", scope=SCOPE))
        identical = (root / "dir" / "manifest.json").read_bytes() == \
            (root / "again" / "manifest.json").read_bytes()
        files = _tree_bytes(root / "dir")
        rows = sum(v for k, v in exported.counts.items() if not k.endswith("_embeddings"))
        assert read_rows == rows == written_rows
        figures: dict[str, Any] = {
            "n_objects": counts["objects"], "n_observations": counts["observations"],
            "n_commits": counts["commits"], "n_events": counts["events"],
            "feature_dim": feature_dim, "rows": rows, "build_s": build_s,
            "store_bytes": store_bytes, "imported_store_bytes": copy.stat().st_size,
            "directory_bytes": exported.bytes, "files": files,
            "export_s": exported.seconds, "verify_s": verify_s, "import_s": imported.seconds,
            "second_export_s": again.seconds,
            "export_cpu_s": export_cpu, "import_cpu_s": import_cpu,
            "second_export_cpu_s": again_cpu,
            "validate_s": validate_s, "validate_cpu_s": validate_cpu,
            "bare_read_s": read_s, "bare_read_cpu_s": read_cpu,
            "bare_write_s": write_s, "bare_write_cpu_s": write_cpu,
            "export_rows_per_s": rows / exported.seconds,
            "import_rows_per_s": rows / imported.seconds,
            "bare_read_rows_per_s": rows / read_s, "bare_write_rows_per_s": rows / write_s,
            "export_rows_per_cpu_s": rows / export_cpu, "import_rows_per_cpu_s": rows / import_cpu,
            # the ratios by CPU time: less of the noise of other work on the machine
            "export_vs_bare_read": read_cpu / export_cpu,
            "import_vs_bare_write": write_cpu / import_cpu,
            "round_trip_identical": identical,
        }
    if out is not None:
        print_table(figures, out)
    return figures


def print_table(f: dict[str, Any], out: TextIO) -> None:
    mb = 1e6
    out.write(f"# locimem interchange benchmark ({platform.python_implementation()} "
              f"{platform.python_version()}, {platform.machine()})\n\n")
    out.write(f"Store: {f['n_objects']:,} objects, {f['n_observations']:,} observations "
              f"({f['feature_dim']}-float embeddings), {f['n_commits']:,} commits, "
              f"{f['n_events']:,} events; {f['store_bytes'] / mb:,.0f} MB "
              f"(built in {f['build_s']:.0f} s); {f['rows']:,} rows.\n\n")
    out.write("| step | seconds | CPU s | rows/s | rows/CPU s | MB/s | vs bare SQLite (CPU) |\n"
              "|---|---:|---:|---:|---:|---:|---:|\n")
    d = f["directory_bytes"] / mb
    rows = f["rows"]
    for name, seconds, cpu, bare in (
            ("export", f["export_s"], f["export_cpu_s"], f["bare_read_cpu_s"]),
            ("verify (SHA-256 of every file)", f["verify_s"], None, None),
            ("import into a new store (verify + check + insert + validate)", f["import_s"],
             f["import_cpu_s"], f["bare_write_cpu_s"]),
            ("— of which validate (timed again on the imported store)", f["validate_s"],
             f["validate_cpu_s"], None),
            ("export of the imported store", f["second_export_s"], f["second_export_cpu_s"],
             f["bare_read_cpu_s"]),
            ("bare SQLite read of the same rows", f["bare_read_s"], f["bare_read_cpu_s"], None),
            ("bare `executemany` write of the same rows", f["bare_write_s"],
             f["bare_write_cpu_s"], None)):
        counted = not name.startswith(("verify", "—"))
        per_s = f"{rows / seconds:,.0f}" if counted else ""
        per_cpu = f"{rows / cpu:,.0f}" if counted and cpu else ""
        mbs = f"{d / seconds:,.0f}" if not name.startswith(("bare", "—")) else ""
        ratio = f"{bare / cpu:.2f}x" if bare is not None and cpu else ""
        out.write(f"| {name} | {seconds:.1f} | {'' if cpu is None else f'{cpu:.1f}'} | "
                  f"{per_s} | {per_cpu} | {mbs} | {ratio} |\n")
    largest = sorted(f["files"].items(), key=lambda kv: -kv[1])[:5]
    out.write(f"\nDirectory: {d:,.0f} MB in {len(f['files'])} files — "
              + ", ".join(f"{name} {size / mb:,.1f} MB" for name, size in largest)
              + f". Imported store: {f['imported_store_bytes'] / mb:,.0f} MB. "
              f"Export → import → export byte-identical: "
              f"{'yes' if f['round_trip_identical'] else 'NO'}. "
              "\"vs bare SQLite\": the bare step's CPU seconds over this step's (1.00x: as "
              "fast as SQLite alone reads, or writes, the rows).\n")
    out.flush()


if __name__ == "__main__":  # pragma: no cover - python -m locimem.bench.interchange [n_obs]
    from locimem.progress import progress as bar

    run(n_observations=int(sys.argv[1]) if len(sys.argv) > 1 else 1_000_000, progress=bar)
