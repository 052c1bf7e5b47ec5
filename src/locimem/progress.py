"""Progress bars for long CLI work: ``tqdm``, drawn on stderr, and only when it is a TTY.

One call shape for every caller (the benchmarks, ingest, export, import, snapshot, restore):
``progress(items, total=None, label="", stream=None, unit=None)`` yields ``items`` while the
bar advances. A bar costs nothing when the stream is not a terminal (tqdm is then disabled),
so piping a command's output never mixes a bar into it.
"""

from __future__ import annotations

import itertools
import math
import os
import sys
import time
from collections.abc import Callable, Iterable, Iterator
from typing import Any, TextIO, TypeVar

T = TypeVar("T")
#: The shape of a progress callback: ``progress(items, total=n, label="…")``, iterated in the
#: place of ``items`` (:func:`progress` is one; so is ``tqdm``).
Progress = Callable[..., Iterable[Any]]


def _heartbeat_s() -> float:
    """``LOCIMEM_HEARTBEAT_S`` (seconds, > 0) if set to one, else 10."""
    try:
        value = float(os.environ.get("LOCIMEM_HEARTBEAT_S", "10"))
    except ValueError:
        return 10.0
    return value if math.isfinite(value) and value > 0 else 10.0


HEARTBEAT_S = _heartbeat_s()
"""Without a terminal (a log file, a service's journal), a line of progress this often:
10 s, or ``LOCIMEM_HEARTBEAT_S`` seconds when that is set to a positive number."""


def progress(items: Iterable[T], total: int | None = None, label: str = "",
             stream: TextIO | None = None, width: int = 28, unit: str | None = None,
             heartbeat_s: float | None = HEARTBEAT_S) -> Iterator[T]:
    """Yield ``items`` while drawing ``label  52%|█████     | 13/25 [00:01<00:01, 8.5 scans/s]``
    on ``stream`` (default stderr) when it is a TTY. ``width``: the bar's columns. When the
    stream is a file but not a terminal, a plain line every ``heartbeat_s`` seconds instead
    (``ingest: 130/400 scans (32 %), 25.1 scans/s``; None: none); a stream that is no file
    (``io.StringIO``, how a quiet command silences it) gets nothing."""
    from tqdm import tqdm

    out = stream if stream is not None else sys.stderr
    live = bool(getattr(out, "isatty", lambda: False)())
    if not live:
        if heartbeat_s is not None and _is_file(out):
            yield from _heartbeat(items, total, label.strip() or "progress", out,
                                  unit or "items", heartbeat_s)
        else:
            yield from items
        return
    yield from tqdm(items, total=total, desc=label.strip() or None, file=out,
                    unit=f" {unit}" if unit else "it", ncols=None,
                    bar_format="{l_bar}{bar:" + str(int(width)) + "}{r_bar}",
                    mininterval=0.1, leave=True)


def note(text: str, stream: TextIO | None = None) -> None:
    """One line for a person on ``stream`` (default stderr), written above a progress bar
    that may be drawing there rather than through it."""
    from tqdm import tqdm

    tqdm.write(text, file=stream if stream is not None else sys.stderr)


def _is_file(stream: TextIO) -> bool:
    try:
        stream.fileno()
    except (AttributeError, OSError, ValueError):  # io.UnsupportedOperation is an OSError
        return False
    return True


def _heartbeat(items: Iterable[T], total: int | None, label: str, out: TextIO, unit: str,
               every_s: float) -> Iterator[T]:
    start = time.monotonic()
    due = start + every_s
    for n, item in enumerate(items, 1):
        yield item
        now = time.monotonic()
        if now >= due:
            due = now + every_s
            of = f"/{total} {unit} ({100 * n / total:.0f} %)" if total else f" {unit}"
            out.write(f"{label}: {n}{of}, {n / (now - start):.1f} {unit}/s\n")
            out.flush()


class Ticker:
    """A bar advanced by hand, for work that is not one loop (a check of many rules, a
    compaction's phases): ``tick()`` after each step, ``close()`` at the end. Built on
    :func:`progress` (pass that, or any callable of the same shape, or None for no bar)."""

    def __init__(self, bar: Callable[..., Iterable[Any]] | None, total: int | None,
                 label: str = "") -> None:
        self._steps: Iterator[Any] | None = None
        self._total = total
        if bar is not None:
            self._steps = iter(bar(itertools.count() if total is None else range(total),
                                   total=total, label=label))
            next(self._steps, None)  # draw it at 0 (a generator runs only when asked)

    def tick(self) -> None:
        if self._steps is not None:
            next(self._steps, None)

    def close(self) -> None:
        if self._steps is not None:
            if self._total is not None:
                for _ in self._steps:  # run out: the bar shows it all done, and closes
                    pass
            close = getattr(self._steps, "close", None)
            if close is not None:
                close()
            self._steps = None
