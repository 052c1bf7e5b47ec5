"""The collector pause used while a state is built (locimem/gcpause.py): it leaves the
collector as it found it, and settles a large build with one full collection; and the hook a
large open memory keeps, which freezes what each full collection leaves alive."""

from __future__ import annotations

import gc
import subprocess
import sys
import textwrap

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


# keep_frozen changes the whole process's collector (gc.freeze): each check runs in a
# process of its own
_KEEP = textwrap.dedent("""
    import gc, weakref
    from locimem.gcpause import SETTLE_YOUNG, _REFREEZE, keep_frozen, release_frozen

    class Node:
        pass

    gc.collect()
    keep_frozen()  # freezes what the process holds, as open does
    print("held now frozen:", gc.get_freeze_count() > 0, len(gc.get_objects()) < 100)
    keep_frozen()  # nested: one hook
    assert gc.callbacks.count(_REFREEZE) == 1
    kept = [[] for _ in range(1000)]
    before = gc.get_freeze_count()
    gc.collect()
    frozen = {id(o) for o in gc.get_objects()}
    print("survivors frozen:", gc.get_freeze_count() - before >= 1000,
          not any(id(k) in frozen for k in kept))

    # a cycle alive at a full collection is frozen with it; once garbage, it waits
    a, b = Node(), Node()
    a.other, b.other = b, a
    alive = weakref.ref(a)
    gc.collect()
    del a, b
    gc.collect()
    print("frozen garbage waits:", alive() is not None)

    # until the frozen heap has doubled: then the next full collection walks everything
    grown = [[] for _ in range(2 * max(gc.get_freeze_count(), SETTLE_YOUNG))]
    gc.collect()  # freezes the growth, sees the doubling, puts the frozen heap back
    gc.collect()  # walks it all: the cycle is freed
    print("freed after the doubling:", alive() is None, gc.get_freeze_count() > 0)

    release_frozen()
    print("one release keeps the hook:", _REFREEZE in gc.callbacks)
    release_frozen()
    release_frozen()  # one too many: nothing to undo
    print("the last removes it:", _REFREEZE not in gc.callbacks)
    n = gc.get_freeze_count()
    more = [[] for _ in range(1000)]
    gc.collect()
    print("then nothing more is frozen:", gc.get_freeze_count() == n)
""")


def test_full_collections_freeze_their_survivors_and_walk_all_once_it_doubled() -> None:
    out = subprocess.run([sys.executable, "-c", _KEEP], capture_output=True, text=True,
                         check=True, timeout=300)
    assert out.stdout.splitlines() == [
        "held now frozen: True True", "survivors frozen: True True", "frozen garbage waits: True",
        "freed after the doubling: True True", "one release keeps the hook: True",
        "the last removes it: True", "then nothing more is frozen: True"]
