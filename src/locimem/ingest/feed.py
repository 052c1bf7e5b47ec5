"""Feeding planned scans into a memory: resume, skip, observe, count.

A reader (rosbag2, JSON lines) turns its source into :class:`PlannedScan` items in time order.
Each knows its time and where it came from, and builds its :class:`Scan` only when asked, so a
resumed run passes over what the store already holds without decoding it. ``build`` raises
:class:`SkipScan` for a scan that cannot be ingested without guessing (a missing transform)
and :class:`IngestError` for bad input; either way nothing of that scan is written (a scan is
committed by one ``observe``, atomically).

Exactly once: a scan is passed over when its time is before the store's latest scan time for
the scope, or equal to it and among the first *k* buildable scans at that time, where *k* is
the number of scans the store already holds at that time from the same ``source``. Readers
yield scans in a deterministic order, so a run interrupted anywhere and run again ingests
every scan once.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import TextIO

from locimem.errors import InvalidInput
from locimem.ingest.summary import IngestSummary
from locimem.memory import ObjectMemory
from locimem.model import Camera, Detection
from locimem.progress import progress

__all__ = ["IngestError", "PlannedScan", "Scan", "SkipScan", "feed"]


class IngestError(InvalidInput):
    """Bad input in a recording or a scan file; ``where`` names the line or stamp. Nothing of
    that scan was written (earlier scans were, and a re-run resumes after them)."""

    def __init__(self, where: str, message: str) -> None:
        super().__init__(f"{where}: {message}")
        self.where = where


class SkipScan(Exception):
    """This scan cannot be ingested without guessing; ``reason`` groups it in the summary."""

    def __init__(self, reason: str) -> None:
        super().__init__(reason)
        self.reason = reason


@dataclass(frozen=True, slots=True)
class Scan:
    """One scan ready for :meth:`ObjectMemory.observe`: map frame, metres, seconds."""

    t: float
    detections: list[Detection]
    camera: Camera | None = None
    dropped: dict[str, int] = field(default_factory=dict)  # detections left out, by reason


@dataclass(frozen=True, slots=True)
class PlannedScan:
    """A scan at ``t`` (seconds) from ``where`` ("line 12", "stamp 12.5 s"), built lazily."""

    t: float
    where: str
    build: Callable[[], Scan]


def _scans_at(mem: ObjectMemory, t: float, source: str) -> int:
    row = mem.store.conn.execute(  # type: ignore[attr-defined]
        "SELECT count(*) FROM commits WHERE scope = ? AND kind = 'scan' AND t = ? AND actor = ?",
        (mem.scope, t, source),
    ).fetchone()
    return int(row[0])


def feed(mem: ObjectMemory, plan: Iterable[PlannedScan], summary: IngestSummary, *,
         total: int | None = None, stream: TextIO | None = None, label: str = "ingest") -> None:
    """Observe every planned scan the store does not hold yet, in order, counting into
    ``summary``. Raises :class:`IngestError` at the first bad scan (nothing of it written)."""
    start = time.monotonic()
    resume_t = mem.now
    summary.resume_from_t = resume_t
    held_at_resume = 0 if resume_t is None else _scans_at(mem, resume_t, summary.source)
    last_t: float | None = None
    try:
        for planned in progress(plan, total=total, label=label, stream=stream, unit="scans"):
            summary.scans_read += 1
            if last_t is not None and planned.t < last_t:
                raise IngestError(planned.where, f"t={planned.t} is before the previous scan's "
                                  f"t={last_t}; scans must come in time order")
            last_t = planned.t
            if resume_t is not None and planned.t < resume_t:
                summary.scans_resumed += 1
                continue
            try:
                scan = planned.build()
            except SkipScan as skip:
                summary.skip(skip.reason, planned.t)
                continue
            except IngestError:
                raise
            except InvalidInput as exc:
                raise IngestError(planned.where, str(exc)) from None
            if resume_t is not None and planned.t == resume_t and held_at_resume > 0:
                held_at_resume -= 1
                summary.scans_resumed += 1
                continue
            try:
                result = mem.observe(scan.t, scan.detections, scan.camera, source=summary.source)
            except InvalidInput as exc:
                raise IngestError(planned.where, str(exc)) from None
            summary.scans_ingested += 1
            summary.detections += len(scan.detections)
            for reason, n in scan.dropped.items():
                summary.drop(reason, n)
            for event in result.events:
                kind = event.kind.value
                summary.events[kind] = summary.events.get(kind, 0) + 1
            summary.objects_created += sum(1 for e in result.events if e.kind.value == "APPEARED")
    finally:
        summary.seconds = time.monotonic() - start
        summary.objects_in_memory = len(mem.objects())
