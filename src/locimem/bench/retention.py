"""Retention benchmark: observation-log bytes per object-hour for a 30 Hz stream, with and
without compaction, measured on the same store in one run."""

from __future__ import annotations

import random
import shutil
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TextIO

from locimem.memory import ObjectMemory, reader_of
from locimem.model import Detection
from locimem.progress import progress


@dataclass(frozen=True)
class RetentionFigures:
    n_objects: int
    hours: float
    observations_before: int
    observations_after: int
    bytes_before: int
    bytes_after: int
    thinned_hours: float  # the stretch older than the horizon
    thinned_before: int  # observations in that stretch, before and after compaction
    thinned_after: int
    # the store file itself: before, after compact() (deleted rows leave free pages), and
    # after compact(reclaim=True) on a copy compacted the same way (locimem compact --vacuum)
    file_before: int = 0
    file_compacted: int = 0
    file_vacuumed: int = 0

    def raw_bytes_per_object_hour(self) -> float:
        return self.bytes_before / (self.n_objects * self.hours)

    def compacted_bytes_per_object_hour(self) -> float:
        """Steady state: kept rows of the thinned stretch at the compacted log's bytes a row."""
        per_row = self.bytes_after / self.observations_after
        return self.thinned_after * per_row / (self.n_objects * self.thinned_hours)


def _log_bytes(path: Path) -> int:
    """Bytes of the observations table and its indexes, from a vacuumed copy of the store."""
    import sqlite3

    with tempfile.TemporaryDirectory() as tmp:
        copy = Path(tmp) / "copy.loci"
        src = sqlite3.connect(path)
        src.execute("VACUUM INTO ?", (str(copy),))
        src.close()
        conn = sqlite3.connect(copy)
        try:
            row = conn.execute(
                "SELECT sum(pgsize) FROM dbstat WHERE name = 'observations' OR name IN "
                "(SELECT name FROM sqlite_master WHERE type = 'index' "
                "AND tbl_name = 'observations')").fetchone()
            return int(row[0])
        except sqlite3.OperationalError:  # no dbstat: fall back to the whole file
            return copy.stat().st_size
        finally:
            conn.close()


def stream_store(path: Path, n_objects: int = 10, minutes: float = 10.0, hz: float = 30.0,
                 seed: int = 0) -> int:
    """Write the benchmark's stream into a new store at ``path``: ``n_objects`` seen at ``hz``
    for ``minutes`` (one of them moves 0.5 m every two minutes). Returns the observations."""
    rng = random.Random(seed)
    homes = [(0.8 * i, 0.0, 0.9) for i in range(n_objects)]
    with ObjectMemory.open(path, durable=False) as mem:
        n_scans = int(minutes * 60 * hz)
        for k in progress(range(n_scans), label="  streaming at 30 Hz"):
            if k and k % int(120 * hz) == 0:  # every two minutes one object moves 0.5 m
                i = rng.randrange(n_objects)
                homes[i] = (homes[i][0], homes[i][1] + 0.5, homes[i][2])
            dets = [Detection("cup" if rng.random() < 0.9 else "mug", 0.9,
                              (x + rng.gauss(0, 0.005), y + rng.gauss(0, 0.005), z),
                              (0.08, 0.08, 0.1)) for x, y, z in homes]
            mem.observe(k / hz, dets)
        return reader_of(mem).store.count("observations", mem.scope)


def bench_retention(n_objects: int = 10, minutes: float = 10.0, hz: float = 30.0,
                    older_than_s: float = 60.0, trail_s: float = 10.0,
                    seed: int = 0) -> RetentionFigures:
    """Stream ``n_objects`` seen at ``hz`` for ``minutes`` (a few move now and then), then
    compact everything older than ``older_than_s`` and compare the log's bytes — and the
    file's, without and with reclaiming the freed space."""
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "retention.loci"
        before = stream_store(path, n_objects, minutes, hz, seed)
        bytes_before = _log_bytes(path)
        file_before = path.stat().st_size
        shutil.copyfile(path, Path(tmp) / "vacuumed.loci")
        with ObjectMemory.open(path, durable=False) as mem:
            report = mem.compact(older_than_s=older_than_s, trail_s=trail_s)
            after = reader_of(mem).store.count("observations", mem.scope)
            sqlite: Any = reader_of(mem).store  # (a SQLite store: its connection)
            thinned_after = sqlite.conn.execute(
                "SELECT count(*) FROM observations WHERE commit_id <= ?",
                (report.horizon_commit,)).fetchone()[0]
        bytes_after = _log_bytes(path)
        with ObjectMemory.open(Path(tmp) / "vacuumed.loci", durable=False) as mem:
            vacuumed = mem.compact(older_than_s=older_than_s, trail_s=trail_s, reclaim=True)
    return RetentionFigures(n_objects, minutes / 60, before, after, bytes_before, bytes_after,
                            thinned_hours=(report.horizon_t or 0.0) / 3600,
                            thinned_before=report.examined, thinned_after=thinned_after,
                            file_before=file_before, file_compacted=report.bytes_after or 0,
                            file_vacuumed=vacuumed.bytes_after or 0)


def run_retention_suite(out: TextIO, minutes: float = 10.0) -> None:
    f = bench_retention(minutes=minutes)
    out.write(f"# locimem retention benchmark: {f.n_objects} objects seen at 30 Hz for "
              f"{f.hours * 60:.0f} min; compact(older_than_s=60, trail_s=10)\n\n")
    out.write("| observation log | rows | bytes per object-hour |\n|---|---:|---:|\n")
    out.write(f"| raw (whole run) | {f.observations_before:,} | "
              f"{f.raw_bytes_per_object_hour():,.0f} |\n")
    out.write(f"| compacted history (older than the horizon) | {f.thinned_after:,} of "
              f"{f.thinned_before:,} | {f.compacted_bytes_per_object_hour():,.0f} |\n")
    ratio = f.raw_bytes_per_object_hour() / f.compacted_bytes_per_object_hour()
    out.write(f"\nCompacted history costs {ratio:.0f}x less per object-hour; the last "
              "minute stays raw until the next compaction.\n")
    mb = 1e6
    out.write(f"\nThe store file: {f.file_before / mb:.2f} MB before; "
              f"{f.file_compacted / mb:.2f} MB after compact() (deleted rows leave free pages "
              f"in the file); {f.file_vacuumed / mb:.2f} MB after compact(reclaim=True) "
              "(locimem compact --vacuum).\n")
    out.flush()
