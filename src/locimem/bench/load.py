"""Load test: one writer and several readers on one store file, in separate processes.

The writer ingests scans of the same ``per_scan`` objects (each seen in every scan) as fast as
it can; each reader opens the store read-only, checks the state it loaded, asks a few questions
and closes, over and over. A state is *torn* when it is not one the writer committed: since
every scan sights every object, in any committed state every object was last seen at the
state's own clock and has been detected once per scan so far. Any other state mixes commits.

``locimem bench load`` runs it for 60 s (1 writer, 4 readers) and reports the writer's scan
latency and the readers' open latency (p50 / p99), torn states and errors.
"""

from __future__ import annotations

import json
import math
import subprocess
import sys
import tempfile
import time
import traceback
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TextIO

from locimem.memory import ObjectMemory, reader_of
from locimem.model import Detection
from locimem.tracker.load import load_state

SPACING_M = 0.8
SIZE = (0.1, 0.1, 0.1)


@dataclass(frozen=True)
class LoadFigures:
    seconds: float
    readers: int
    scans: int
    writer_p50_ms: float
    writer_p99_ms: float
    opens: int
    open_p50_ms: float
    open_p99_ms: float
    query_p99_ms: float
    torn: int
    errors: list[str]


def _scan(n: int) -> list[Detection]:
    side = math.isqrt(n) + 1
    return [Detection(f"thing{i % 10}", 0.9, ((i % side) * SPACING_M, (i // side) * SPACING_M,
                                              0.5), SIZE) for i in range(n)]


def _percentile(values: list[float], q: float) -> float:
    if not values:
        return math.nan
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, max(0, math.ceil(q * len(ordered)) - 1))]


def torn(mem: ObjectMemory) -> str | None:
    """Why this loaded state is not one the load writer committed (None if it is)."""
    state = reader_of(mem).state
    scans = state.next_commit - 1  # the writer's scope is the only one in the file
    if state.now is None:
        return None if not state.objects else "objects before the first commit"
    for obj in state.objects.values():
        if obj.last_seen != state.now or obj.n_detections != scans:
            return (f"object {obj.id} last seen at t={obj.last_seen} with {obj.n_detections} "
                    f"detections, in a state at t={state.now} after {scans} scans")
    return None


def writer(path: str, seconds: float, per_scan: int, out: str) -> None:
    """Ingest scans for ``seconds``; write the per-scan latencies (ms) to ``out`` as JSON."""
    dets = _scan(per_scan)
    times: list[float] = []
    errors: list[str] = []
    with ObjectMemory.open(path, scope="load") as mem:
        t = 0.0
        stop = time.monotonic() + seconds
        while time.monotonic() < stop:
            start = time.perf_counter()
            try:
                mem.observe(t, dets)
            except Exception:
                errors.append(traceback.format_exc(limit=3))
                break
            times.append((time.perf_counter() - start) * 1000)
            t += 0.1
    Path(out).write_text(json.dumps({"times": times, "errors": errors}))


def reader(path: str, seconds: float, out: str, rebuild: bool = False) -> None:
    """Open, check, query and close the store for ``seconds``; with ``rebuild``, also compare
    each loaded state with a replay of the log up to the same commit (slower, exact)."""
    opens: list[float] = []
    queries: list[float] = []
    torn_states: list[str] = []
    errors: list[str] = []
    stop = time.monotonic() + seconds
    while time.monotonic() < stop:
        try:
            start = time.perf_counter()
            mem = ObjectMemory.open(path, scope="load", read_only=True)
            opens.append((time.perf_counter() - start) * 1000)
            with mem:
                why = torn(mem)
                if why is None and rebuild and mem.now is not None:
                    replay = load_state(reader_of(mem).store, mem.scope, mem.config, from_log=True,
                                        until_commit=reader_of(mem).state.next_commit - 1)
                    if replay.snapshot() != mem.snapshot():
                        why = "the loaded state differs from a replay to the same commit"
                if why is not None:
                    torn_states.append(why)
                start = time.perf_counter()
                mem.near((0.0, 0.0, 0.5), 2.0)
                mem.find("thing3")
                mem.recall("thing1")
                mem.tracked()
                queries.append((time.perf_counter() - start) * 1000)
        except Exception:
            errors.append(traceback.format_exc(limit=3))
    Path(out).write_text(json.dumps({"opens": opens, "queries": queries, "torn": torn_states,
                                     "errors": errors}))


def run_load(path: Path, *, seconds: float = 60.0, readers: int = 4, per_scan: int = 30,
             rebuild: bool = False) -> LoadFigures:
    """One writer and ``readers`` reader processes on the store at ``path`` for ``seconds``."""
    work = Path(tempfile.mkdtemp(prefix="locimem-load-"))
    with ObjectMemory.open(path, scope="load") as mem:  # the store exists before readers open
        mem.observe(0.0, _scan(per_scan))
    me = [sys.executable, "-m", "locimem.bench.load"]
    procs = [subprocess.Popen([*me, "writer", str(path), str(seconds), str(per_scan),
                               str(work / "writer.json")])]
    for i in range(readers):
        procs.append(subprocess.Popen([*me, "reader", str(path), str(seconds),
                                       str(work / f"reader{i}.json"), "1" if rebuild else "0"]))
    errors: list[str] = []
    for name, proc in zip(["writer", *(f"reader{i}" for i in range(readers))], procs,
                          strict=True):
        if proc.wait(timeout=seconds + 120) != 0:
            errors.append(f"process {name} exited with {proc.returncode}")
    w = _read(work / "writer.json", errors)
    rs = [_read(work / f"reader{i}.json", errors) for i in range(readers)]
    opens = [x for r in rs for x in r.get("opens", [])]
    queries = [x for r in rs for x in r.get("queries", [])]
    errors += w.get("errors", []) + [e for r in rs for e in r.get("errors", [])]
    torn_states = [x for r in rs for x in r.get("torn", [])]
    times = w.get("times", [])
    return LoadFigures(seconds, readers, len(times), _percentile(times, 0.5),
                       _percentile(times, 0.99), len(opens), _percentile(opens, 0.5),
                       _percentile(opens, 0.99), _percentile(queries, 0.99), len(torn_states),
                       errors + [f"torn: {x}" for x in torn_states[:3]])


def _read(path: Path, errors: list[str]) -> dict[str, Any]:
    try:
        return json.loads(path.read_text())
    except (OSError, ValueError) as exc:
        errors.append(f"no result from {path.name}: {exc}")
        return {}


def run_load_suite(out: TextIO, *, seconds: float = 60.0, readers: int = 4) -> LoadFigures:
    """Print the load test's figures as a markdown table."""
    with tempfile.TemporaryDirectory() as tmp:
        f = run_load(Path(tmp) / "load.loci", seconds=seconds, readers=readers)
    out.write(f"# locimem load test: 1 writer, {f.readers} readers, {f.seconds:g} s\n\n")
    out.write("| scans | writer p50 ms | writer p99 ms | reader opens | open p50 ms | "
              "open p99 ms | queries p99 ms | torn states | errors |\n")
    out.write("|---:|---:|---:|---:|---:|---:|---:|---:|---:|\n")
    out.write(f"| {f.scans:,} | {f.writer_p50_ms:.2f} | {f.writer_p99_ms:.2f} | {f.opens:,} | "
              f"{f.open_p50_ms:.2f} | {f.open_p99_ms:.2f} | {f.query_p99_ms:.2f} | {f.torn} | "
              f"{len(f.errors)} |\n")
    for e in f.errors[:5]:
        out.write(f"\nerror: {e}\n")
    return f


if __name__ == "__main__":  # the worker processes: writer PATH SECONDS N OUT | reader ...
    role, args = sys.argv[1], sys.argv[2:]
    if role == "writer":
        writer(args[0], float(args[1]), int(args[2]), args[3])
    else:
        reader(args[0], float(args[1]), args[2], rebuild=args[3] == "1")
