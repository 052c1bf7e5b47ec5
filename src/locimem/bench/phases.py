"""Where a scan's time goes, for ``locimem bench ingest --profile``: per-phase timing of each
scan, and what made the slowest ones slow.

:class:`ScanProfile` wraps one open memory's scan path while it is active — the tracker's
decision (``decide``), the commit step (``commit_records``: applying the records and deriving
relation, keyframe and prior-map events), the store's append (one transaction: rows, and a
WAL checkpoint when one is due) — and listens to the garbage collector (``gc.callbacks``).
What is left of a scan's wall time is ``other``: the checks of its input and the find index's
upkeep. A collection runs inside whichever phase allocated when it came due, so ``gc`` is
also counted in that phase; the slowest scans name it as their cause when it took most of
the scan. Only the benchmark uses this: it patches the memory's modules while it runs and
puts them back when it ends.
"""

from __future__ import annotations

import gc
import statistics
import time
import types
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, TypeVar

import locimem.memory.base as memory_base
import locimem.memory.scans as memory_scans

__all__ = ["PHASES", "ScanProfile", "ScanTimes"]

_T = TypeVar("_T")

PHASES = ("decide", "commit", "append", "gc", "other")
"""The phases of a scan, in the order a scan goes through them (``gc`` runs within them)."""


@dataclass
class ScanTimes:
    """One scan's wall time and its phases' (seconds), and the collections during it."""

    wall: float
    phases: dict[str, float] = field(default_factory=dict)
    collections: tuple[int, ...] = ()  # the generations the collector swept during it

    def cause(self) -> str:
        """What took most of the scan: ``gc (generation 2)`` when a collection took half of
        it or more, else the longest phase."""
        if self.phases.get("gc", 0.0) >= self.wall / 2 and self.collections:
            return f"gc (generation {max(self.collections)})"
        return max((p for p in PHASES if p != "gc"), key=lambda p: self.phases.get(p, 0.0))


class ScanProfile:
    """Times each scan of one memory while active (``with ScanProfile(mem) as prof:``, then
    a :meth:`scan` block around each ``observe``)."""

    def __init__(self, mem: Any) -> None:
        self._store = mem._live.store
        self.scans: list[ScanTimes] = []
        self._now: dict[str, float] = {}
        self._gens: list[int] = []
        self._gc_start = 0.0
        self._undo: list[Callable[[], None]] = []

    def __enter__(self) -> ScanProfile:
        self._wrap(memory_scans, "decide", "decide")
        self._wrap(memory_base, "commit_records", "commit")
        self._wrap(self._store, "append", "append")
        gc.callbacks.append(self._on_gc)
        self._undo.append(lambda: gc.callbacks.remove(self._on_gc))
        return self

    def __exit__(self, *exc: object) -> None:
        while self._undo:
            self._undo.pop()()

    def _wrap(self, owner: Any, name: str, phase: str) -> None:
        inner = getattr(owner, name)
        now = self._now

        def timed(*args: Any, **kwargs: Any) -> Any:
            t0 = time.perf_counter()
            try:
                return inner(*args, **kwargs)
            finally:
                now[phase] = now.get(phase, 0.0) + time.perf_counter() - t0

        setattr(owner, name, timed)
        if isinstance(owner, types.ModuleType):  # a module: put its function back
            self._undo.append(lambda: setattr(owner, name, inner))
        else:  # an instance: drop the attribute that shadows its method
            self._undo.append(lambda: delattr(owner, name))

    def _on_gc(self, phase: str, info: dict[str, Any]) -> None:
        if phase == "start":
            self._gc_start = time.perf_counter()
        else:
            self._now["gc"] = self._now.get("gc", 0.0) + time.perf_counter() - self._gc_start
            self._gens.append(int(info["generation"]))

    def scan(self, observe: Callable[..., _T], *args: Any, **kwargs: Any) -> _T:
        """Run one scan (``observe(*args, **kwargs)``) and record its times."""
        self._now.clear()
        self._gens.clear()
        t0 = time.perf_counter()
        out = observe(*args, **kwargs)
        wall = time.perf_counter() - t0
        phases = dict(self._now)
        phases["other"] = max(0.0, wall - sum(v for k, v in phases.items() if k != "gc"))
        self.scans.append(ScanTimes(wall, phases, tuple(self._gens)))
        return out

    def summary(self) -> dict[str, tuple[float, float, float]]:
        """Each phase's median, p99 and max (ms) over the scans."""
        out = {}
        for phase in PHASES:
            values = sorted(s.phases.get(phase, 0.0) * 1e3 for s in self.scans)
            if values:
                out[phase] = (statistics.median(values), percentile(values, 0.99), values[-1])
        return out

    def slowest(self, k: int = 3) -> list[ScanTimes]:
        return sorted(self.scans, key=lambda s: -s.wall)[:k]


def percentile(sorted_values: list[float], q: float) -> float:
    """The ``q`` quantile of sorted values (nearest rank)."""
    if not sorted_values:
        return 0.0
    return sorted_values[min(len(sorted_values) - 1, int(q * len(sorted_values)))]
