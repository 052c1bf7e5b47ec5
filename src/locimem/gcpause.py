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

A large memory goes further (``ObjectMemory.open(freeze_gc=True)``): once its state is built
it moves everything alive into the collector's permanent generation (``gc.freeze()``), which
no collection walks. That alone only defers the cost: every container the scans replace (an
object's box in the relation index, its grid cells, its kept frames) is new and ages into the
old generation, so full collections walk more and more of the state again — at 100,000
objects with a camera, six in 1,000 scans, the last ones 0.1 s. :func:`keep_frozen` ends each
full collection by freezing what survived it, so the next walks only what was made since.
Cyclic garbage among frozen objects is not lost for good: once the frozen heap has doubled
since everything was last walked, the next full collection walks it all again (the
interpreter's own rule spaces full walks by a quarter's growth; this, by a doubling) and
frees what became garbage. It holds while any memory that asked for it is open.
"""

from __future__ import annotations

import contextlib
import gc
import threading
from collections.abc import Iterator
from typing import Any

__all__ = ["SETTLE_YOUNG", "gc_paused", "keep_frozen", "release_frozen"]

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


class _Refreeze:
    """The one ``gc.callbacks`` hook :func:`keep_frozen` installs, and its counts."""

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.keepers = 0  # open memories that asked for it
        self.walk_all_at = 0  # the frozen count at which the next full collection walks all
        self.walking_all = False  # the permanent generation was put back to be walked

    def __call__(self, phase: str, info: dict[str, Any]) -> None:
        if phase != "stop" or info["generation"] != 2:
            return
        gc.freeze()  # what this full collection left alive (younger generations are empty)
        frozen = gc.get_freeze_count()
        if self.walking_all:  # this collection walked everything: start counting again
            self.walking_all = False
            self.walk_all_at = 2 * max(frozen, SETTLE_YOUNG)
        elif frozen >= self.walk_all_at:  # doubled: let the next full collection walk it all
            gc.unfreeze()
            self.walking_all = True


_REFREEZE = _Refreeze()


def keep_frozen() -> None:
    """Freeze what the process holds now (``gc.freeze()``) and, until the matching
    :func:`release_frozen`, end every full collection by freezing its survivors, walking
    everything again each time the frozen heap has doubled (see the module). Calls nest:
    the hook stays while any holds."""
    hook = _REFREEZE
    with hook.lock:
        gc.freeze()
        if hook.keepers == 0:
            hook.walk_all_at = 2 * max(gc.get_freeze_count(), SETTLE_YOUNG)
            hook.walking_all = False
            gc.callbacks.append(hook)
        hook.keepers += 1


def release_frozen() -> None:
    """Undo one :func:`keep_frozen`; the last one removes the hook (what it froze stays
    frozen, as ``gc.freeze()`` leaves it)."""
    hook = _REFREEZE
    with hook.lock:
        if hook.keepers == 0:
            return
        hook.keepers -= 1
        if hook.keepers == 0:
            gc.callbacks.remove(hook)
