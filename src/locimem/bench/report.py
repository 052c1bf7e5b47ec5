"""``locimem bench report``: the benchmark tables the docs show, generated in one run.

Runs a fixed list of suites (:data:`SECTIONS`) at the sizes the docs quote and writes one
markdown file (``docs/benchmarks.md`` by default) whose header says when, on what machine
and at which commit it was measured — so no figure in the docs is kept by hand. What each
figure measures is explained in ``docs/performance.md``; this file holds the figures.
"""

from __future__ import annotations

import datetime
import io
import os
import platform
import subprocess
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import TextIO

from locimem.files import new_file
from locimem.version import __version__

__all__ = ["SECTIONS", "Section", "machine_text", "write_report"]


@dataclass(frozen=True)
class Section:
    """One suite of the report: its title, the command that prints the same tables, what it
    measures (a line), and how to run it (full size, and ``quick`` for a smoke run)."""

    title: str
    command: str
    about: str
    run: Callable[[TextIO, bool], None]


def _ingest(out: TextIO, quick: bool) -> None:
    from locimem.bench import run_ingest_suite

    run_ingest_suite([200] if quick else [1_000, 10_000, 100_000], 20 if quick else 1_000,
                     0 if quick else 1_000_000, out, profile=True)


def _bag(out: TextIO, quick: bool) -> None:
    from locimem.bench.bag import run_bag_suite

    run_bag_suite(out, 20 if quick else 300)


def _queries(out: TextIO, quick: bool) -> None:
    from locimem.bench.queries import run_query_suite

    run_query_suite(out, [200] if quick else [1_000, 10_000, 100_000], runs=5 if quick else 200)


def _quality(out: TextIO, quick: bool) -> None:
    from locimem.bench.quality import run_seed_sweep

    run_seed_sweep(out, 2 if quick else 5, scenarios=["clutter"] if quick else None)


def _camera(out: TextIO, quick: bool) -> None:
    from locimem.bench.lifting import run_frames_suite as run_camera_suite

    run_camera_suite(out, 1 if quick else 5, scenarios=["clutter"] if quick else None,
                     image=(120, 160) if quick else (240, 320))


def _qa(out: TextIO, quick: bool) -> None:
    from locimem.bench.qa import run_qa_suite

    run_qa_suite(out, scenarios=["clutter"] if quick else None)


def _frames(out: TextIO, quick: bool) -> None:
    from locimem.bench.frames import run_frames_suite

    run_frames_suite(out, 20 if quick else 300)


def _crowd(out: TextIO, quick: bool) -> None:
    from locimem.bench.crowd import run_crowd_suite

    run_crowd_suite(out, (200,) if quick else (200, 500, 1_000, 2_000, 10_000))


def _retention(out: TextIO, quick: bool) -> None:
    from locimem.bench.retention import run_retention_suite

    run_retention_suite(out, minutes=3.0 if quick else 10.0)


def _interchange(out: TextIO, quick: bool) -> None:
    from locimem.bench.interchange import run

    run(200 if quick else 10_000, 2_000 if quick else 1_000_000, out=out)


SECTIONS: tuple[Section, ...] = (
    Section("Ingest", "locimem bench ingest --objects 1000,10000,100000 --scans 1000 --profile",
            "ms per scan (median, p99, max) of 30 detections at each store size, durable "
            "and fast, with a camera and with embeddings, beside the raw SQLite append of the "
            "same rows, and where each row's time goes; three simulated days; the time to "
            "open a store", _ingest),
    Section("ROS 2 bags", "locimem bench bag",
            "scans per second read from a ROS 2 bag beside the same scans through the "
            "Python API", _bag),
    Section("Queries", "locimem bench queries",
            "median ms per query kind at each store size", _queries),
    Section("Tracking quality", "locimem bench quality --seeds 5",
            "each simulated day played with 5 seeds, the worst seed's figures beside a naive "
            "baseline and the ceilings no memory can pass", _quality),
    Section("From a camera", "locimem bench quality --input frames",
            "each day rendered as 2D boxes, masks and a noisy depth image, lifted and played "
            "beside the same day as 3D detections: position error, objects behind their far "
            "face, boxes not lifted, identity and belief quality (worst of 5 seeds)",
            _camera),
    Section("Question answering", "locimem bench qa",
            "questions written from each day's ground truth, answered through the agent "
            "tools, graded per kind", _qa),
    Section("Map frames", "locimem bench frames",
            "time to align a new map epoch; a scan's cost in an aligned epoch beside the "
            "memory's own frame; 2D boxes lifted with a depth image", _frames),
    Section("Crowds", "locimem bench crowd",
            "one box reported hundreds to thousands of times in one scan", _crowd),
    Section("Retention", "locimem bench retention",
            "log bytes per object-hour of a 30 Hz stream, with and without compaction",
            _retention),
    Section("Interchange", "locimem bench interchange",
            "export, verification and import of a store beside bare reads and writes of its "
            "rows", _interchange),
)


def machine_text() -> str:
    """The machine a report ran on: CPU model and count, memory, OS, Python."""
    cpu = platform.processor() or platform.machine()
    try:
        with open("/proc/cpuinfo", encoding="utf-8") as f:
            cpu = next((line.split(":", 1)[1].strip() for line in f
                        if line.startswith("model name")), cpu)
    except OSError:
        pass
    try:
        mem = os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES") / 2**30
        memory = f", {mem:.0f} GiB"
    except (ValueError, OSError, AttributeError):
        memory = ""
    return (f"{cpu}, {os.cpu_count()} cores{memory}; {platform.system()} "
            f"{platform.release()}; {platform.python_implementation()} "
            f"{platform.python_version()}")


def _commit() -> str:
    """The git commit of the working tree (``+ changes`` when it differs), or ``unknown``."""
    root = Path(__file__).resolve().parents[3]
    try:
        head = subprocess.run(["git", "-C", str(root), "rev-parse", "--short=12", "HEAD"],
                              capture_output=True, text=True, check=True, timeout=10)
        dirty = subprocess.run(["git", "-C", str(root), "status", "--porcelain", "--",
                                "src"], capture_output=True, text=True, check=True,
                               timeout=10).stdout.strip()
    except (OSError, subprocess.SubprocessError):
        return "unknown (not a git checkout)"
    return head.stdout.strip() + (" + uncommitted changes in src/" if dirty else "")


def write_report(path: str | os.PathLike[str], *, quick: bool = False,
                 only: list[str] | None = None, progress: TextIO | None = sys.stderr) -> str:
    """Run the report's suites (``only``: those titles) and write the markdown to ``path``
    (replaced atomically when complete). ``quick``: tiny sizes, for a smoke test — its
    figures say nothing. Returns the text."""
    sections = [s for s in SECTIONS if only is None or s.title in only]
    started = datetime.datetime.now(datetime.timezone.utc)
    parts = []
    for section in sections:
        if progress is not None:
            progress.write(f"bench report: {section.title} ({section.command}) ...\n")
            progress.flush()
        out = io.StringIO()
        t0 = time.perf_counter()
        section.run(out, quick)
        took = time.perf_counter() - t0
        body = "\n".join("###" + line[1:] if line.startswith("# ") else line
                         for line in out.getvalue().rstrip().splitlines())
        parts.append(f"## {section.title}\n\n`{section.command}`: {section.about} "
                     f"({took:.0f} s).\n\n{body}\n")
    header = (
        "# Benchmarks\n\n"
        "Generated by `locimem bench report"
        f"{' --quick' if quick else ''}` — do not edit by hand; run it again instead. "
        "What each figure measures, and why the design is what it is: "
        "[performance.md](performance.md).\n\n"
        f"- date: {started:%Y-%m-%d %H:%M} UTC\n"
        f"- machine: {machine_text()}\n"
        f"- locimem {__version__}, commit {_commit()}\n"
        f"- load average at the start: {_load()}\n\n"
        "Timings on a shared machine are noisy: compare the ratios, each measured side by "
        "side in one run.\n\n")
    if quick:
        header += "**A quick run: tiny sizes, for a smoke test. These figures say nothing.**\n\n"
    text = header + "\n".join(parts)
    target = Path(path)
    tmp = new_file(target.parent, f".{target.name}.", ".partial")
    try:
        tmp.write_text(text, encoding="utf-8")
        os.replace(tmp, target)
    finally:
        tmp.unlink(missing_ok=True)
    return text


def _load() -> str:
    try:
        return ", ".join(f"{v:.2f}" for v in os.getloadavg())
    except OSError:
        return "unknown"
