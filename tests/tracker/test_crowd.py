"""Same-place crowds (issue #13, item 6): one box reported many times in one scan is one
object, and a crowd in one 0.2 m cube is capped — each rejected copy recorded with its reason."""

from __future__ import annotations

from collections import Counter
from pathlib import Path

from locimem import Detection, ObjectMemory
from locimem.tracker.crowd import CROWDED, DUPLICATE, MAX_PER_PLACE, crowd_rejections

BOX = Detection("box", 0.9, (1.0, 1.0, 0.5), (0.3, 0.3, 0.3))


def test_copies_of_one_box_in_one_scan_are_one_object(store_path: Path) -> None:
    with ObjectMemory.open(store_path) as mem:
        for t in (0.0, 1.0):
            r = mem.observe(t, [BOX] * 2000)
            assert r.assignments == (1,) + (None,) * 1999
            assert r.rejected == {i: DUPLICATE for i in range(1, 2000)}
        assert [o.id for o in mem.objects()] == [1]
        assert mem.get(1).n_detections == 2
        assert mem._live.store.count("observations", mem.scope) == 4000  # every copy is recorded
        [key] = mem.rejections()
        assert (key.reason, key.count) == (DUPLICATE, 3998)
        assert mem.snapshot() == mem.rebuild_from_log().snapshot()


def test_the_most_confident_copy_is_kept_and_ties_keep_the_first() -> None:
    dets = [BOX, Detection("box", 0.95, BOX.center, BOX.size), BOX,
            Detection("box", 0.95, BOX.center, BOX.size)]
    assert crowd_rejections(dets, range(4), 0.2) == {0: DUPLICATE, 2: DUPLICATE,
                                                     3: DUPLICATE}


def test_a_copy_differing_in_label_centre_or_size_is_not_a_duplicate() -> None:
    dets = [BOX, Detection("crate", 0.9, BOX.center, BOX.size),
            Detection("box", 0.9, (1.0, 1.0, 0.51), BOX.size),
            Detection("box", 0.9, BOX.center, (0.3, 0.3, 0.31)), BOX]
    assert crowd_rejections(dets, range(5), 0.2) == {4: DUPLICATE}


def test_more_than_the_cap_in_one_cube_keeps_the_most_confident(mem: ObjectMemory) -> None:
    n = MAX_PER_PLACE + 8
    dets = [Detection("screw", 0.5 + i / 100, (1.0 + i * 0.004, 1.05, 0.5), (0.01,) * 3)
            for i in range(n)]  # all in the cube [1.0, 1.2) x [1.0, 1.2) x [0.4, 0.6)
    r = mem.observe(0.0, dets)
    assert r.rejected == {i: CROWDED for i in range(8)}  # the 8 least confident
    assert [a is None for a in r.assignments] == [True] * 8 + [False] * MAX_PER_PLACE
    assert len(mem._live._state.objects) == MAX_PER_PLACE
    # the cube next door is another place: its own 32
    other = [Detection("screw", 0.9, (1.21 + i * 0.004, 1.05, 0.5), (0.01,) * 3)
             for i in range(MAX_PER_PLACE)]
    r = mem.observe(1.0, dets + other)
    assert Counter(r.rejected.values()) == {CROWDED: 8}
    assert mem.snapshot() == mem.rebuild_from_log().snapshot()


def test_rejections_before_the_crowd_keep_their_reason(mem: ObjectMemory) -> None:
    weak = Detection("box", 0.01, BOX.center, BOX.size)
    r = mem.observe(0.0, [weak, weak, BOX, BOX])
    assert r.rejected == {0: "below_min_confidence", 1: "below_min_confidence", 3: DUPLICATE}
    assert r.assignments == (None, None, 1, None)
