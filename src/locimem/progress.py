"""A dependency-free progress bar for long CLI work (drawn on stderr only when it is a TTY)."""

from __future__ import annotations

import sys
import time
from collections.abc import Iterable, Iterator
from typing import TextIO, TypeVar

T = TypeVar("T")


def progress(items: Iterable[T], total: int | None = None, label: str = "",
             stream: TextIO | None = None, width: int = 28, unit: str | None = None
             ) -> Iterator[T]:
    """Yield ``items`` while drawing ``label [#####.....] 52% 1.2s`` at most 10 times a second
    (with ``unit``, also the rate: ``… 1.2s 850 scans/s``)."""
    out = stream if stream is not None else sys.stderr
    if total is None and hasattr(items, "__len__"):
        total = len(items)  # type: ignore[arg-type]
    live = bool(getattr(out, "isatty", lambda: False)())
    start = last = time.monotonic()
    for done, item in enumerate(items, start=1):
        yield item
        now = time.monotonic()
        if live and (now - last > 0.1 or done == total):
            last = now
            rate = f" {done / max(now - start, 1e-9):.0f} {unit}/s" if unit else ""
            if total:
                filled = int(width * done / total)
                bar = "#" * filled + "." * (width - filled)
                out.write(f"\r{label} [{bar}] {100 * done // total:3d}% {now - start:.1f}s{rate}")
            else:
                out.write(f"\r{label} {done} {now - start:.1f}s{rate}")
            out.flush()
    if live:
        out.write("\n")
        out.flush()
