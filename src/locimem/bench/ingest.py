"""Ingest and open benchmarks: what a scan costs, beside the raw cost of writing its rows.

The *floor* replays, into a copy of the same store, exactly the rows each measured scan wrote
(its commit, observations, events and object upserts), in one transaction per scan with the
same journal and sync settings. ``ratio`` = locimem's median scan time / the floor's median.
"""

from __future__ import annotations

import contextlib
import random
import shutil
import sqlite3
import statistics
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from locimem.bench.phases import ScanProfile, percentile
from locimem.config import TrackerConfig
from locimem.memory import ObjectMemory, reader_of
from locimem.model import Camera, Detection, EventKind
from locimem.progress import progress
from locimem.store.sqlite.codec import OBJECT_COLUMNS, UPSERT_OBJECT

SPACING_M = 0.8  # objects sit on a lattice this far apart: distinct, but within drift range
N_LABELS = 20
SIZE = (0.1, 0.1, 0.1)
SEED_SPAN_S = 5.0


@dataclass(frozen=True)
class IngestFigures:
    n_objects: int
    durable: bool
    camera: bool
    scans: int
    per_scan: int
    median_ms: float
    p99_ms: float
    detections_per_s: float
    floor_median_ms: float
    ratio: float
    # CPU time of the process per scan (``time.process_time``): steadier than wall time on a
    # shared machine
    cpu_median_ms: float = 0.0
    cpu_p99_ms: float = 0.0
    max_ms: float = 0.0  # the slowest scan (wall)
    cpu_max_ms: float = 0.0
    dim: int = 0  # embedding width on every detection (0: none)
    new_per_scan: int = 0  # detections a scan of objects never seen before
    # resident memory a process gains by opening the store, per object held (bytes; measured
    # in a fresh process, so nothing this one allocated before counts)
    rss_per_object_b: float | None = None
    # with ``profile``: each measured scan's phases (see locimem.bench.phases)
    profile: ScanProfile | None = None


def _layout(n: int) -> tuple[list[tuple[float, float, float]], list[str]]:
    side = int(n ** 0.5) + 1
    positions = [((i % side) * SPACING_M, (i // side) * SPACING_M, 0.5 + (i % 3) * 0.5)
                 for i in range(n)]
    labels = [f"thing{i % N_LABELS}" for i in range(n)]
    return positions, labels


def _embeddings(n: int, dim: int, seed: int) -> np.ndarray:
    """``n`` random unit vectors of width ``dim`` (one object's appearance each)."""
    rows = np.random.default_rng(seed).standard_normal((n, dim))
    return rows / np.linalg.norm(rows, axis=1, keepdims=True)


def _seed(path: Path, n: int, per_scan: int, durable: bool,
          features: np.ndarray | None = None) -> float:
    """Create ``n`` objects, ``per_scan`` per scan at 30 Hz (each with its row of ``features``
    as its embedding, when given); return the next scan time."""
    positions, labels = _layout(n)
    t = 0.0
    starts = range(0, n, per_scan)
    # at most SEED_SPAN_S of scan time, whatever n: every size then measures the same fresh
    # objects (at 30 Hz a 100k-object seeding would span 111 s, and its first objects would be
    # lost before they are seen again)
    step = min(1 / 30, SEED_SPAN_S / len(starts)) if starts else 1 / 30
    with ObjectMemory.open(path, durable=durable) as mem:
        for s in progress(starts, label=f"  seeding {n} objects"):
            mem.observe(t, [Detection(labels[i], 0.9, positions[i], SIZE,
                                      feature=None if features is None else features[i])
                            for i in range(s, min(n, s + per_scan))])
            t += step
    return t


def _camera_on(points: list[tuple[float, float, float]]) -> Camera:
    """A camera 1.5 m behind the neighbourhood (in x), looking along +x at it, with a 60x80
    depth image that sees through everything (the worst case: every object in view and not
    detected is a miss, and every detected one is scored for keyframes)."""
    x = min(p[0] for p in points) - 1.5
    y = sum(p[1] for p in points) / len(points)
    return Camera((x, y, 1.0), (1.0, 0.0, 0.0, 0.0), fov_deg=90.0, range_m=8.0,
                  depth=np.full((60, 80), 50.0))


def bench_ingest(n_objects: int, *, scans: int = 300, per_scan: int = 30, durable: bool = False,
                 camera: bool = False, dim: int = 0, new_per_scan: int = 0, seed: int = 0,
                 workdir: Path | None = None, config: TrackerConfig | None = None,
                 profile: bool = False) -> IngestFigures:
    """Time ``scans`` scans of ``per_scan`` detections (a robot looking at one neighbourhood
    at a time, 30 Hz) in a store holding ``n_objects``: ``per_scan - new_per_scan`` of known
    objects and ``new_per_scan`` of things never seen before (placed away from the others, so
    only their appearance could match them). With ``camera``, each scan also says where the
    camera was (visibility-aware belief and keyframes); with ``dim``, every detection carries
    a ``dim``-wide embedding (a known object's own, slightly perturbed). ``config``: the
    tracker's settings for the measured scans (default: the defaults). ``profile``: time
    each scan's phases too (:class:`~locimem.bench.phases.ScanProfile`)."""
    rng = random.Random(seed)
    seen = per_scan - new_per_scan
    features = _embeddings(n_objects + new_per_scan * scans, dim, seed) if dim else None
    noise = np.random.default_rng(seed + 1)
    with tempfile.TemporaryDirectory(dir=workdir) as tmp:
        path, floor_path = Path(tmp) / "bench.loci", Path(tmp) / "floor.loci"
        t = _seed(path, n_objects, per_scan, durable, features)
        shutil.copyfile(path, floor_path)
        positions, labels = _layout(n_objects)
        times: list[float] = []
        cpu: list[float] = []
        fresh = n_objects  # the next never-seen thing (its row of ``features``)
        created = 0
        with ObjectMemory.open(path, durable=durable, config=config) as mem, \
                (ScanProfile(mem) if profile else contextlib.nullcontext()) as prof:
            first_commit = reader_of(mem).store.counters()[2]
            for _ in progress(range(scans), label=f"  ingesting ({n_objects} objects)"):
                start = rng.randrange(max(1, n_objects - seen))
                dets = [
                    Detection(labels[i], 0.9,
                              (positions[i][0] + rng.gauss(0, 0.01),
                               positions[i][1] + rng.gauss(0, 0.01), positions[i][2]), SIZE,
                              feature=None if features is None
                              else features[i] + noise.normal(0.0, 0.01, dim))
                    for i in range(start, min(n_objects, start + seen))
                ]
                for _ in range(new_per_scan):  # on a line of their own, 2 m from the lattice
                    k = fresh - n_objects
                    dets.append(Detection(labels[fresh % len(labels)], 0.9,
                                          (-2.0 - (k // 1000) * SPACING_M,
                                           (k % 1000) * SPACING_M, 1.0), SIZE,
                                          feature=None if features is None else features[fresh]))
                    fresh += 1
                cam = _camera_on([d.center for d in dets]) if camera else None
                c0, t0 = time.process_time(), time.perf_counter()
                if prof is None:
                    result = mem.observe(t, dets, camera=cam)
                else:
                    result = prof.scan(mem.observe, t, dets, camera=cam)
                times.append(time.perf_counter() - t0)
                cpu.append(time.process_time() - c0)
                appeared = {e.object_id for e in result.events if e.kind is EventKind.APPEARED}
                created += len(appeared.intersection(result.assignments[seen:]))
                t += 1 / 30
        # the workload is not what it says it is (with a camera the tracker may also split,
        # merge and lose the known objects it is shown: the worst case is meant to exercise that)
        if not camera and created != new_per_scan * scans:
            raise RuntimeError(f"expected {new_per_scan * scans} new objects, made {created}")
        floor = _floor(path, floor_path, first_commit, durable)
        rss = resident_per_object(path)
    times.sort()
    cpu.sort()
    median = statistics.median(times)
    floor_median = statistics.median(floor)
    return IngestFigures(
        n_objects=n_objects, durable=durable, camera=camera, scans=scans, per_scan=per_scan,
        median_ms=median * 1e3, p99_ms=_p99(times) * 1e3,
        detections_per_s=per_scan * len(times) / sum(times),
        floor_median_ms=floor_median * 1e3, ratio=median / floor_median,
        cpu_median_ms=statistics.median(cpu) * 1e3, cpu_p99_ms=_p99(cpu) * 1e3,
        max_ms=times[-1] * 1e3, cpu_max_ms=cpu[-1] * 1e3,
        dim=dim, new_per_scan=new_per_scan, rss_per_object_b=rss, profile=prof,
    )


@dataclass(frozen=True)
class DayFigures:
    """A simulated robot's day played through a file-backed memory: what its scans cost."""

    scenario: str
    scans: int
    detections_per_scan: float  # mean
    objects: int  # identities the memory holds at the end
    depth_shape: tuple[int, int] | None
    median_ms: float
    p99_ms: float
    cpu_median_ms: float
    cpu_p99_ms: float
    floor_median_ms: float
    ratio: float
    max_ms: float = 0.0


def bench_day(name: str, *, seed: int | None = None, durable: bool = False,
              workdir: Path | None = None) -> DayFigures:
    """Time every scan of the quality benchmark's scenario ``name`` (its camera poses, depth
    images, detections with embeddings, label flicker and false positives: what a robot
    walking a flat streams) through a memory on a file, beside the raw append of the rows each
    scan wrote. Scenarios that restart the process are refused (a reopen is no scan)."""
    from locimem.sim.scenarios import build

    scenario = build(name, seed)
    if any(frame.restart for frame in scenario.frames):
        raise ValueError(f"scenario {name!r} restarts the process; pick one that does not")
    times: list[float] = []
    cpu: list[float] = []
    with tempfile.TemporaryDirectory(dir=workdir) as tmp:
        path, floor_path = Path(tmp) / "day.loci", Path(tmp) / "floor.loci"
        ObjectMemory.open(path, durable=durable).close()  # the empty store, for the floor
        shutil.copyfile(path, floor_path)
        with ObjectMemory.open(path, durable=durable) as mem:
            first_commit = reader_of(mem).store.counters()[2]
            for frame in progress(scenario.frames, label=f"  playing {name}"):
                detections = list(frame.detections)
                c0, t0 = time.process_time(), time.perf_counter()
                mem.observe(frame.t, detections, camera=frame.camera)
                times.append(time.perf_counter() - t0)
                cpu.append(time.process_time() - c0)
            objects = len(reader_of(mem).state.objects)
        floor = _floor(path, floor_path, first_commit, durable)
    times.sort()
    cpu.sort()
    median, floor_median = statistics.median(times), statistics.median(floor)
    camera = scenario.frames[0].camera
    depth = None if camera is None or camera.depth is None else camera.depth.shape[:2]
    return DayFigures(
        scenario=name, scans=len(times),
        detections_per_scan=statistics.fmean(len(f.detections) for f in scenario.frames),
        objects=objects, depth_shape=depth, median_ms=median * 1e3,
        p99_ms=_p99(times) * 1e3, cpu_median_ms=statistics.median(cpu) * 1e3,
        cpu_p99_ms=_p99(cpu) * 1e3, floor_median_ms=floor_median * 1e3,
        ratio=median / floor_median, max_ms=times[-1] * 1e3)


_RSS_PROBE = """
import sys
from locimem.config import TrackerConfig
from locimem.memory import ObjectMemory, reader_of

def rss():
    with open("/proc/self/statm") as f:
        return int(f.read().split()[1]) * {page}

with ObjectMemory.open(sys.argv[2], read_only=True, check="off"):  # imports, caches warm
    pass
before = rss()
mem = ObjectMemory.open(sys.argv[1], read_only=True, check="off")
print(rss() - before, len(reader_of(mem).state.objects))
"""


def resident_per_object(path: Path) -> float | None:
    """Bytes of resident memory per object held that a fresh process gains by opening the
    store at ``path`` (read-only; Linux: /proc/self/statm), or None where that cannot be read."""
    if not Path("/proc/self/statm").exists():
        return None
    import os

    empty = path.parent / "empty.loci"
    ObjectMemory.open(empty).close()
    probe = _RSS_PROBE.replace("{page}", str(os.sysconf("SC_PAGE_SIZE")))
    try:
        out = subprocess.run([sys.executable, "-c", probe, str(path), str(empty)],
                             capture_output=True, text=True, check=True, timeout=600).stdout
    except (subprocess.SubprocessError, OSError):
        return None
    grown, n = (int(v) for v in out.split())
    return grown / max(1, n)


def _p99(sorted_values: list[float]) -> float:
    return percentile(sorted_values, 0.99)


def _floor(source: Path, target: Path, first_commit: int, durable: bool) -> list[float]:
    """Append, per measured commit, the same rows locimem wrote, with plain executemany."""
    src = sqlite3.connect(source)
    commits = src.execute("SELECT * FROM commits WHERE id >= ? ORDER BY id",
                          (first_commit,)).fetchall()
    per_commit = []
    for row in commits:
        cid = row[0]
        obs = src.execute("SELECT * FROM observations WHERE commit_id = ?", (cid,)).fetchall()
        events = src.execute("SELECT * FROM events WHERE commit_id = ?", (cid,)).fetchall()
        ids = sorted({o[5] for o in obs if o[5] is not None} | {e[5] for e in events})
        found = (src.execute(f"SELECT {OBJECT_COLUMNS} FROM objects WHERE id = ?",
                             (i,)).fetchone() for i in ids)
        objects = [o for o in found if o is not None]  # (ended identities have no row)
        per_commit.append((row, obs, events, objects))
    src.close()
    dst = sqlite3.connect(target, isolation_level=None)
    dst.execute("PRAGMA journal_mode=WAL")
    dst.execute(f"PRAGMA synchronous={'FULL' if durable else 'NORMAL'}")
    times = []
    for row, obs, events, objects in per_commit:
        t0 = time.perf_counter()
        dst.execute("BEGIN IMMEDIATE")
        dst.execute(f"INSERT INTO commits VALUES ({', '.join('?' * len(row))})", row)
        if obs:
            dst.executemany(f"INSERT INTO observations VALUES ({', '.join('?' * len(obs[0]))})",
                            obs)
        if events:
            dst.executemany(f"INSERT INTO events VALUES ({', '.join('?' * len(events[0]))})",
                            events)
        if objects:
            dst.executemany(UPSERT_OBJECT, objects)
        dst.execute("COMMIT")
        times.append(time.perf_counter() - t0)
    dst.close()
    return times


@dataclass(frozen=True)
class OpenFigures:
    n_observations: int
    n_objects: int
    file_mb: float
    open_ms: float
    rebuild_from_log_ms: float
    # the open check (locimem.store.sqlite.open_check): open time per check mode (median of 3), and
    # what PRAGMA quick_check alone costs on the file, whatever its size
    open_check_ms: dict[str, float] | None = None
    quick_check_ms: float | None = None


def bench_open(n_observations: int, *, n_objects: int = 10_000, per_scan: int = 30,
               workdir: Path | None = None) -> OpenFigures:
    """Build a store holding ``n_observations`` over ``n_objects``, then time opening it
    (state from the materialised table) and a full rebuild from the log."""
    positions, labels = _layout(n_objects)
    rng = random.Random(1)
    with tempfile.TemporaryDirectory(dir=workdir) as tmp:
        path = Path(tmp) / "open.loci"
        t = _seed(path, n_objects, per_scan, durable=False)
        remaining = max(0, n_observations - n_objects)
        with ObjectMemory.open(path, durable=False) as mem:
            for _ in progress(range(0, remaining, per_scan), label="  filling the log"):
                start = rng.randrange(max(1, n_objects - per_scan))
                mem.observe(t, [Detection(labels[i], 0.9, positions[i], SIZE)
                                for i in range(start, min(n_objects, start + per_scan))])
                t += 1 / 30
            n_obs = reader_of(mem).store.count("observations", mem.scope)
        t0 = time.perf_counter()
        mem = ObjectMemory.open(path, read_only=True)
        open_s = time.perf_counter() - t0
        t0 = time.perf_counter()
        mem.rebuild_from_log()
        rebuild_s = time.perf_counter() - t0
        mem.close()
        size_mb = path.stat().st_size / 1e6
        by_check = {}
        for check in ("off", "header", "quick"):
            times = []
            for _ in range(3):
                t0 = time.perf_counter()
                ObjectMemory.open(path, read_only=True, check=check).close()
                times.append(time.perf_counter() - t0)
            by_check[check] = statistics.median(times) * 1e3
        with sqlite3.connect(path.resolve().as_uri() + "?mode=ro", uri=True) as conn:
            t0 = time.perf_counter()
            conn.execute("PRAGMA quick_check").fetchall()
            quick_s = time.perf_counter() - t0
        conn.close()
    return OpenFigures(n_observations=n_obs, n_objects=n_objects, file_mb=size_mb,
                       open_ms=open_s * 1e3, rebuild_from_log_ms=rebuild_s * 1e3,
                       open_check_ms=by_check, quick_check_ms=quick_s * 1e3)
