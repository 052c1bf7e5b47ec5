"""A scan gives up at most ``losses_per_scan`` objects unseen too long (the longest overdue
first); the rest are given up at the next scans and are not published meanwhile."""

from __future__ import annotations

from locimem import ObjectMemory, TrackerConfig
from locimem.model import Detection, EventKind, ObjectStatus


def _lost_ids(events: object) -> list[int]:
    return sorted(e.object_id for e in events if e.kind is EventKind.LOST)  # type: ignore[attr-defined]


def test_a_scan_after_a_long_pause_gives_up_a_bounded_number_of_objects() -> None:
    config = TrackerConfig(promote_after=1, losses_per_scan=3)
    with ObjectMemory.open(":memory:", config=config) as mem:
        ids = []
        for k in range(8):  # seen one after another: the first seen is the most overdue
            r = mem.observe(float(k), [Detection("cup", 0.9, (2.0 * k, 0.0, 0.5),
                                                 (0.1, 0.1, 0.1))])
            ids.append(r.assignments[0])
        assert len(set(ids)) == 8
        late = 7.0 + config.lost_after_s + 60.0  # every one of them is long overdue
        rounds = [_lost_ids(mem.observe(late + 0.1 * i, []).events) for i in range(4)]
        assert rounds == [ids[0:3], ids[3:6], ids[6:8], []]
        # between the rounds, the ones not yet given up are not published (not confirmed)
        with ObjectMemory.open(":memory:", config=config) as again:
            for k in range(8):
                again.observe(float(k), [Detection("cup", 0.9, (2.0 * k, 0.0, 0.5),
                                                   (0.1, 0.1, 0.1))])
            again.observe(late, [])
            statuses = {o.id: o.status for o in again.objects(status=None)}
            assert [statuses[i] for i in ids] == [ObjectStatus.LOST] * 3 + \
                [ObjectStatus.TENTATIVE] * 5


def test_fewer_overdue_than_the_bound_are_all_given_up_at_once() -> None:
    config = TrackerConfig(promote_after=1)  # the default bound, 32
    with ObjectMemory.open(":memory:", config=config) as mem:
        for k in range(20):
            mem.observe(0.0, [Detection("cup", 0.9, (2.0 * k, 0.0, 0.5), (0.1, 0.1, 0.1))])
        r = mem.observe(config.lost_after_s + 1.0, [])
        assert len(_lost_ids(r.events)) == 20
