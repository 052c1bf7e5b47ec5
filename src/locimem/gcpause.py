"""Pausing Python's cyclic garbage collector while a large structure is built.

Building a memory's state (or one of its indexes) makes objects by the hundred thousand and
frees none, and every collection the interpreter would run meanwhile walks all of them made
so far: :func:`gc_paused` turns the collector off for the build and back on afterwards, as
it was. What the build made is then all in the collector's youngest generation, and the
collector would walk it three times over the next scans — a young, a middle and then a full
collection (about 0.1 s each at 100,000 objects), the camera path's p99. So a pause that
leaves at least ``SETTLE_YOUNG`` new objects behind ends with one full collection
(``gc.collect()``): they are walked once, there, and counted as old, and the next full
collection waits until the old generation has grown by a quarter (the interpreter's own
rule). Nothing is left changed: no threshold, no freeze; with the collector off on entry
(the caller's choice, or an outer pause) nothing is collected.
"""

from __future__ import annotations

import contextlib
import gc
from collections.abc import Iterator

__all__ = ["SETTLE_YOUNG", "gc_paused"]

# new objects (tracked by the collector, net of those freed) a pause must leave for it to end
# with a full collection; a running collector keeps the young generation under 700
SETTLE_YOUNG = 50_000


@contextlib.contextmanager
def gc_paused() -> Iterator[None]:
    """Pause the cyclic garbage collector while a state or index is built (reference counting
    still frees what dies); on exit, turn it back on if it was on, and if the build left at
    least ``SETTLE_YOUNG`` new objects, collect once so they are old (see the module)."""
    was = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if was:
            gc.enable()
            if gc.get_count()[0] >= SETTLE_YOUNG:
                gc.collect()
