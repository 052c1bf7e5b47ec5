"""Feeding planned scans into a memory: resume, skip, observe, count.

A reader (rosbag2, JSON lines) turns its source into :class:`PlannedScan` items in time order.
Each knows its time and where it came from, and builds its :class:`Scan` only when asked, so a
resumed run passes over what the store already holds without decoding it. ``build`` raises
:class:`SkipScan` for a scan that cannot be ingested without guessing (a missing transform)
and :class:`IngestError` for bad input; either way nothing of that scan is written (a scan is
committed by one ``observe``, atomically).

Exactly once, per source: a scan is passed over when its time is before the latest scan the
store holds *from the same source* in the scope, or equal to it and among the first *k*
buildable scans at that time, where *k* is the number of scans the store holds at that time
from that source. Readers yield scans in a deterministic order, so a run interrupted anywhere
and run again ingests every scan once. Scans of other sources (another robot's recording of
the same hours) do not count: this source's scans are ingested beside them, under the
store's late-scan rule (:meth:`ObjectMemory.open`'s ``late_s``).

Map jumps (:class:`MapJump`: a loop closure or relocalisation the recording's tf shows) are
applied by :meth:`ObjectMemory.correct_poses` before the first scan at or after the jump, to
what was seen since the previous one. Each is applied once: the correction commit carries
the jump's stamp in its reason, and a resumed run passes over a jump the store holds. A jump
in a map epoch that is still provisional waits until the epoch is aligned (its frame is not
tied to the memory's before).
"""

from __future__ import annotations

import contextlib
import logging
import math
import signal
import threading
import time
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field
from typing import TextIO

from locimem.errors import InvalidInput
from locimem.ingest.summary import IngestSummary
from locimem.memory import ObjectMemory, reader_of
from locimem.memory.facade import SCAN_WARNING
from locimem.model import Camera, Detection
from locimem.progress import note, progress

__all__ = ["IngestError", "Interrupted", "MapJump", "PlannedScan", "Scan", "SkipScan", "feed"]


class IngestError(InvalidInput):
    """Bad input in a recording or a scan file; ``where`` names the line or stamp. Nothing of
    that scan was written (earlier scans were, and a re-run resumes after them)."""

    def __init__(self, where: str, message: str) -> None:
        super().__init__(f"{where}: {message}")
        self.where = where


class SkipScan(Exception):
    """This scan cannot be ingested without guessing; ``reason`` groups it in the summary,
    ``hint`` says what would fix it (a flag to pass, the frames the recording has)."""

    def __init__(self, reason: str, hint: str | None = None) -> None:
        super().__init__(reason)
        self.reason = reason
        self.hint = hint


@dataclass(frozen=True, slots=True)
class Scan:
    """One scan ready for :meth:`ObjectMemory.observe`: map frame, metres, seconds."""

    t: float
    detections: list[Detection]
    camera: Camera | None = None
    dropped: dict[str, int] = field(default_factory=dict)  # detections left out, by reason
    warnings: tuple[str, ...] = ()  # the reader's own (a missing mask), counted like observe's


@dataclass(frozen=True, slots=True)
class PlannedScan:
    """A scan at ``t`` (seconds) from ``where`` ("line 12", "stamp 12.5 s"), built lazily."""

    t: float
    where: str
    build: Callable[[], Scan]


@dataclass(frozen=True, slots=True)
class MapJump:
    """At ``t`` (seconds) the map frame jumped: every scan from ``since`` until just before
    ``t`` was placed with a pose off by ``correction`` (``(translation_xyz,
    quaternion_wxyz)``, in the map frame), which :meth:`ObjectMemory.correct_poses` undoes."""

    t: float
    since: float
    correction: tuple[tuple[float, float, float], tuple[float, float, float, float]]

    def reason(self, source: str) -> str:
        """The correction commit's reason: how a resumed run knows the jump is applied."""
        return (f"{source}: the map frame jumped at t={self.t:.9f} s (a loop closure or a "
                "relocalisation in the recording's tf)")


class Interrupted(KeyboardInterrupt):
    """Ctrl-C during an ingest: the scan in progress was not written (each is atomic); the
    ones before it were. ``summary`` counts them; a re-run resumes after them."""

    def __init__(self, summary: IngestSummary) -> None:
        super().__init__(f"interrupted after {summary.scans_ingested} scans")
        self.summary = summary


class _CountedWrites:
    """Holds a Ctrl-C that arrives while a scan is written and counted until both are done,
    so the count an interrupted ingest reports is the number of scans the store holds (a
    SIGINT between ``observe``'s commit and the count would undercount by one). Outside
    :meth:`writing` a Ctrl-C interrupts at once. Only the main thread receives signals, and
    a SIGINT handler the caller installed is left alone; in either case this does nothing."""

    def __init__(self) -> None:
        self.writing_now = False
        self.held = False

    def _on_sigint(self, signum: int, frame: object) -> None:
        if self.writing_now:
            self.held = True
            return
        raise KeyboardInterrupt

    @contextlib.contextmanager
    def installed(self) -> Iterator[None]:
        if threading.current_thread() is not threading.main_thread() or \
                signal.getsignal(signal.SIGINT) is not signal.default_int_handler:
            yield
            return
        signal.signal(signal.SIGINT, self._on_sigint)
        try:
            yield
        finally:
            signal.signal(signal.SIGINT, signal.default_int_handler)

    @contextlib.contextmanager
    def writing(self) -> Iterator[None]:
        self.writing_now = True
        try:
            yield
        finally:
            self.writing_now = False
        if self.held:
            self.held = False
            raise KeyboardInterrupt


class _ScanWarnings(logging.Filter):
    """Keeps ``observe``'s per-scan warnings off the log while an ingest counts them."""

    def filter(self, record: logging.LogRecord) -> bool:
        return record.msg is not SCAN_WARNING


def feed(mem: ObjectMemory, plan: Iterable[PlannedScan], summary: IngestSummary, *,
         total: int | None = None, stream: TextIO | None = None, label: str = "ingest",
         warning_text: Callable[[str], str] = str, map_epoch: str | None = None,
         jumps: Iterable[MapJump] = ()) -> None:
    """Observe every planned scan the store does not hold yet, in order, counting into
    ``summary``. Raises :class:`IngestError` at the first bad scan (nothing of it written),
    :class:`Interrupted` on Ctrl-C.

    A scan's warnings (``ScanResult.warnings``) are counted by kind in ``summary``; the first
    of each kind is written to ``stream`` (above the progress bar) as ``warning_text`` words
    it, the rest only counted — not logged scan by scan.

    ``map_epoch``: the map epoch of every scan (``observe``'s); ``jumps``: the map jumps to
    apply (see the module's text)."""
    start = time.monotonic()
    latest = reader_of(mem).store.latest_scan(_scans_scope(mem, map_epoch), summary.source)
    resume_t, held_at_resume = (None, 0) if latest is None else latest
    summary.resume_from_t = resume_t
    quiet = _ScanWarnings()
    logger = logging.getLogger("locimem")
    logger.addFilter(quiet)
    writes = _CountedWrites()
    try:
        with writes.installed():
            corrections = _Jumps(mem, summary, map_epoch, jumps)
            _feed(mem, plan, summary, writes, total=total, stream=stream, label=label,
                  warning_text=warning_text, resume=(resume_t, held_at_resume),
                  map_epoch=map_epoch, jumps=corrections)
            with writes.writing():
                corrections.due(None)
    except KeyboardInterrupt:
        summary.interrupted = True
        raise Interrupted(summary) from None
    finally:
        logger.removeFilter(quiet)
        summary.seconds = time.monotonic() - start
        summary.objects_in_memory = len(mem.objects())


def _scans_scope(mem: ObjectMemory, map_epoch: str | None) -> str:
    """Where this run's scans are: a provisional epoch's own scope, else the memory's."""
    epoch = next((e for e in mem.map_epochs() if e.name == map_epoch), None)
    if epoch is not None and epoch.status == "provisional" and epoch.scope is not None:
        return epoch.scope
    return mem.scope


class _Jumps:
    """The map jumps of a run not applied yet, in time order, applied as they fall due."""

    def __init__(self, mem: ObjectMemory, summary: IngestSummary, map_epoch: str | None,
                 jumps: Iterable[MapJump]) -> None:
        self.mem, self.summary, self.map_epoch = mem, summary, map_epoch
        self.waiting = sorted(jumps, key=lambda j: j.t)
        self.done: set[str] = set()
        if self.waiting:
            store = reader_of(mem).store
            self.done = {e.reason for e in store.audit(mem.scope, actor=summary.source,
                                               kinds=["correction"])
                         if e.reason is not None}

    def due(self, t: float | None) -> None:
        """Apply the jumps at or before ``t`` (None: all), unless the epoch is provisional."""
        if self.waiting and not self._provisional():
            while self.waiting and (t is None or self.waiting[0].t <= t):
                self._apply(self.waiting.pop(0))
        self.summary.map_jumps_waiting = len(self.waiting)

    def _apply(self, jump: MapJump) -> None:
        reason = jump.reason(self.summary.source)
        if reason in self.done:
            return
        before = math.nextafter(jump.t, -math.inf)
        events = self.mem.correct_poses([(jump.since, before, jump.correction)],
                                        map_epoch=self.map_epoch,
                                        actor=self.summary.source, reason=reason)
        self.summary.map_jumps += 1
        for event in events:
            kind = event.kind.value
            self.summary.events[kind] = self.summary.events.get(kind, 0) + 1

    def _provisional(self) -> bool:
        return self.map_epoch is not None and any(
            e.name == self.map_epoch and e.status == "provisional"
            for e in self.mem.map_epochs())


def _feed(mem: ObjectMemory, plan: Iterable[PlannedScan], summary: IngestSummary,
          writes: _CountedWrites, *, total: int | None, stream: TextIO | None, label: str,
          warning_text: Callable[[str], str], resume: tuple[float | None, int],
          map_epoch: str | None, jumps: _Jumps) -> None:
    resume_t, held_at_resume = resume
    last_t: float | None = None
    for planned in progress(plan, total=total, label=label, stream=stream, unit="scans"):
        summary.scans_read += 1
        if last_t is not None and planned.t < last_t:
            raise IngestError(planned.where, f"t={planned.t} is before the previous scan's "
                              f"t={last_t}; scans must come in time order")
        last_t = planned.t
        if resume_t is not None and planned.t < resume_t:
            summary.scans_resumed += 1
            summary.took()
            continue
        try:
            scan = planned.build()
        except SkipScan as skip:
            summary.skip(skip.reason, planned.t, skip.hint)
            continue
        except IngestError:
            raise
        except InvalidInput as exc:
            raise IngestError(planned.where, str(exc)) from None
        if resume_t is not None and planned.t == resume_t and held_at_resume > 0:
            held_at_resume -= 1
            summary.scans_resumed += 1
            summary.took()
            continue
        with writes.writing():  # the scan and its tally, whole, before a Ctrl-C
            jumps.due(scan.t)
            try:
                result = mem.observe(scan.t, scan.detections, scan.camera,
                                     source=summary.source, map_epoch=map_epoch)
            except InvalidInput as exc:
                raise IngestError(planned.where, str(exc)) from None
            summary.scans_ingested += 1
            summary.took()
            summary.detections += len(scan.detections)
            for reason, n in scan.dropped.items():
                summary.drop(reason, n)
            for warning in (*scan.warnings, *result.warnings):
                if summary.warn(warning_text(warning)):
                    note(f"warning: {planned.where}: {warning_text(warning)} (further scans "
                         "with this warning are counted in the summary)", stream)
            for event in result.events:
                kind = event.kind.value
                summary.events[kind] = summary.events.get(kind, 0) + 1
            summary.objects_created += sum(1 for e in result.events
                                           if e.kind.value == "APPEARED")
