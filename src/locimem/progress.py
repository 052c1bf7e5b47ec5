"""Progress bars for long CLI work: ``tqdm``, drawn on stderr, and only when it is a TTY.

One call shape for every caller (the benchmarks, ingest, export, import, snapshot, restore):
``progress(items, total=None, label="", stream=None, unit=None)`` yields ``items`` while the
bar advances. A bar costs nothing when the stream is not a terminal (tqdm is then disabled),
so piping a command's output never mixes a bar into it.
"""

from __future__ import annotations

import sys
from collections.abc import Iterable, Iterator
from typing import TextIO, TypeVar

T = TypeVar("T")


def progress(items: Iterable[T], total: int | None = None, label: str = "",
             stream: TextIO | None = None, width: int = 28, unit: str | None = None
             ) -> Iterator[T]:
    """Yield ``items`` while drawing ``label  52%|█████     | 13/25 [00:01<00:01, 8.5 scans/s]``
    on ``stream`` (default stderr) when it is a TTY. ``width``: the bar's columns."""
    from tqdm import tqdm

    out = stream if stream is not None else sys.stderr
    live = bool(getattr(out, "isatty", lambda: False)())
    yield from tqdm(items, total=total, desc=label.strip() or None, file=out, disable=not live,
                    unit=f" {unit}" if unit else "it", ncols=None if live else 80,
                    bar_format="{l_bar}{bar:" + str(int(width)) + "}{r_bar}",
                    mininterval=0.1, leave=True)
