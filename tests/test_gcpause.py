"""The collector pause used while a state is built (locimem/gcpause.py): it leaves the
collector as it found it, and settles a large build with one full collection."""

from __future__ import annotations

import gc

from locimem.gcpause import SETTLE_YOUNG, gc_paused


def _restore(was: bool) -> None:
    if was:
        gc.enable()
    else:
        gc.disable()


def test_the_collector_is_back_as_it_was() -> None:
    was = gc.isenabled()
    try:
        gc.enable()
        with gc_paused():
            assert not gc.isenabled()
            with gc_paused():  # nested: the outer pause decides
                assert not gc.isenabled()
            assert not gc.isenabled()
        assert gc.isenabled()
        gc.disable()
        with gc_paused():
            assert not gc.isenabled()
        assert not gc.isenabled()  # off on entry: left off
    finally:
        _restore(was)


def test_a_large_build_ends_in_one_full_collection() -> None:
    was = gc.isenabled()
    seen: list[int] = []

    def note(phase: str, info: dict) -> None:
        if phase == "start":
            seen.append(info["generation"])

    gc.enable()
    gc.collect()
    gc.callbacks.append(note)
    try:
        with gc_paused():
            kept = [[] for _ in range(SETTLE_YOUNG + 10)]  # young tracked containers
        assert seen[:1] == [2]  # settled, by a full collection
        assert gc.get_count()[0] < SETTLE_YOUNG
        seen.clear()
        with gc_paused():
            small = [[] for _ in range(100)]
        assert 2 not in seen  # a small build is left to the collector's own pace
        seen.clear()
        gc.disable()
        with gc_paused():
            more = [[] for _ in range(SETTLE_YOUNG + 10)]
        assert seen == []  # the caller turned it off: nothing collected
        del kept, small, more
    finally:
        gc.callbacks.remove(note)
        _restore(was)
