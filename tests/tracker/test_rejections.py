"""Rejected evidence is kept and findable: each rejected detection is recorded with its reason
and a key (label and tight-radius cell), repeats share the key and are counted exactly, and a
rejected detection never creates (or touches) an object."""

from __future__ import annotations

from pathlib import Path

import pytest

from locimem import ObjectMemory, TrackerConfig
from locimem.errors import InvalidInput
from locimem.model import RejectionKey
from locimem.tracker.decide import rejection_key
from tests.helpers import det

LOW = 0.01  # below min_detection_confidence (0.05)


def test_low_confidence_is_rejected_with_reason_and_key(mem: ObjectMemory) -> None:
    result = mem.observe(0.0, [det("mug", 1.05, 2.13, 0.9, conf=LOW)])
    assert result.assignments == (None,)
    assert result.rejected == {0: "below_min_confidence"}
    assert result.events == ()
    (obs,) = mem.rejected()
    assert (obs.label, obs.confidence, obs.center, obs.object_id, obs.tier) == (
        "mug", LOW, (1.05, 2.13, 0.9), None, None)
    assert (obs.rejected, obs.key, obs.t, obs.index, obs.commit) == (
        "below_min_confidence", "mug@5,10,4", 0.0, 0, result.commit)
    assert mem.rejections() == [RejectionKey("mug@5,10,4", "below_min_confidence", 1,
                                             obs.seq, obs.seq, 0.0)]


@pytest.mark.parametrize(("center", "key"), [
    ((0.0, 0.0, 0.0), "cup@0,0,0"),
    ((0.19, 0.39, 0.41), "cup@0,1,2"),
    ((-0.05, -0.2, -0.21), "cup@-1,-1,-2"),  # floor, not truncation toward zero
    ((10.0, -3.3, 1.0), "cup@50,-17,5"),
])
def test_key_is_label_and_tight_radius_cell(mem: ObjectMemory, center: tuple[float, ...],
                                            key: str) -> None:
    mem.observe(0.0, [det("cup", *center, conf=LOW)])
    assert [o.key for o in mem.rejected()] == [key]


def test_cells_follow_tight_radius() -> None:
    config = TrackerConfig(tight_radius_m=0.5)
    with ObjectMemory.open(":memory:", scope="r", config=config) as memory:
        memory.observe(0.0, [det("Coffee  Cup", 1.05, 2.13, 0.9, conf=LOW),
                             det("cup", -0.1, 0.49, 0.5, conf=LOW)])
        assert [o.key for o in memory.rejected()] == ["coffee cup@2,4,1", "cup@-1,0,1"]


def test_repeats_share_a_key_and_are_counted_exactly(store_path: Path) -> None:
    with ObjectMemory.open(store_path, scope="r") as memory:
        seqs: dict[str, list[int]] = {}
        times: dict[str, float] = {}
        plan = [
            (0.0, [det("mug", 1.05, 2.13, conf=LOW), det("mug", 1.1, 2.1, conf=0.02)]),
            (1.0, [det("cup", 1.05, 2.13, conf=LOW)]),  # another label: another key
            (2.0, [det("mug", 1.25, 2.13, conf=LOW)]),  # another cell: another key
            (3.0, [det("mug", 1.19, 2.01, conf=0.049)]),
            (7.5, [det("mug", 1.0, 2.0, conf=0.0), det("cup", 1.0, 2.0, conf=LOW)]),
        ]
        for t, dets in plan:
            result = memory.observe(t, dets)
            assert result.assignments == (None,) * len(dets)
            assert result.rejected == dict.fromkeys(range(len(dets)), "below_min_confidence")
            assert result.events == ()
        for obs in memory.rejected():
            assert obs.key == rejection_key(
                next(d for _, ds in plan for d in ds if d.center == obs.center
                     and d.label == obs.label), 0.2)
            seqs.setdefault(obs.key, []).append(obs.seq)
            times[obs.key] = obs.t
        assert {k: len(v) for k, v in seqs.items()} == {"mug@5,10,4": 4, "cup@5,10,4": 2,
                                                        "mug@6,10,4": 1}
        expected = [
            RejectionKey("mug@5,10,4", "below_min_confidence", 4, seqs["mug@5,10,4"][0],
                         seqs["mug@5,10,4"][-1], 7.5),
            RejectionKey("cup@5,10,4", "below_min_confidence", 2, seqs["cup@5,10,4"][0],
                         seqs["cup@5,10,4"][-1], 7.5),
            RejectionKey("mug@6,10,4", "below_min_confidence", 1, seqs["mug@6,10,4"][0],
                         seqs["mug@6,10,4"][0], 2.0),
        ]
        assert memory.rejections() == expected  # most repeated first, then by key
        assert [o.seq for o in memory.rejected(key="mug@5,10,4")] == seqs["mug@5,10,4"]
        assert [o.seq for o in memory.rejected(key="mug@5,10,4", limit=2)] == (
            seqs["mug@5,10,4"][:2])
        assert memory.rejected(key="mug@9,9,9") == []
        assert len(memory.rejected(reason="below_min_confidence")) == 7
        assert memory.rejected(reason="forgotten") == []
        # rejected evidence never made an object or an event
        assert memory.objects() == []
        assert memory.events() == []
        assert memory.audit() == []
        snap = memory.snapshot()
        assert memory.rebuild_from_log().snapshot() == snap
        # as of t=2 only the first three scans' rejections are counted
        assert [(r.key, r.count) for r in memory.as_of(2.0).rejections()] == [
            ("mug@5,10,4", 2), ("cup@5,10,4", 1), ("mug@6,10,4", 1)]
        assert len(memory.as_of(2.0).rejected()) == 4
    with ObjectMemory.open(store_path, scope="r") as again:
        assert again.snapshot() == snap
        assert again.rejections() == expected
        # a repeat after reopening continues the same count
        again.observe(8.0, [det("mug", 1.05, 2.13, conf=LOW)])
        (top, *_) = again.rejections()
        assert (top.key, top.count, top.first_seq, top.last_t) == (
            "mug@5,10,4", 5, seqs["mug@5,10,4"][0], 8.0)
        assert top.last_seq == again.rejected(key="mug@5,10,4")[-1].seq
        assert again.snapshot() == again.rebuild_from_log().snapshot()
    with ObjectMemory.open(store_path, scope="r", read_only=True) as reader:
        assert reader.rejections()[0].count == 5


def test_a_rejected_detection_never_creates_or_touches_an_object(mem: ObjectMemory) -> None:
    mem.observe(0.0, [det("cup", 1.0, 1.0, conf=0.5)])
    before = mem.get(1)
    # at the object's very place, with its label and with another
    result = mem.observe(1.0, [det("cup", 1.0, 1.0, conf=LOW), det("mug", 1.0, 1.0, conf=LOW),
                               det("plate", 3.0, 3.0, conf=0.049999)])
    assert result.assignments == (None, None, None)
    assert result.events == ()
    after = mem.get(1)
    assert (after.n_detections, after.label_votes, after.center, after.last_seen) == (
        before.n_detections, before.label_votes, before.center, before.last_seen)
    assert [o.id for o in mem.objects()] == [1]
    assert [r.seq for r in mem.history(1)] == [1, 2]  # APPEARED and its first observation
    # the id counter did not move: the next new object is #2
    assert mem.observe(2.0, [det("plate", 3.0, 3.0)]).assignments == (2,)


def test_the_confidence_boundary_is_inclusive(mem: ObjectMemory) -> None:
    mem.observe(0.0, [det("cup", 1.0, 1.0, conf=0.9)])
    # 0.05 is kept (it refreshes the cup; below new_object_min_confidence it could not create one)
    result = mem.observe(1.0, [det("cup", 1.0, 1.0, conf=0.05), det("mug", 3, 3, conf=0.0499)])
    assert result.assignments == (1, None)
    assert result.rejected == {1: "below_min_confidence"}
    assert [r.key for r in mem.rejections()] == ["mug@15,15,4"]


def test_rejected_filters_are_validated(mem: ObjectMemory) -> None:
    mem.observe(0.0, [det("cup", 1.0, 1.0, conf=LOW)])
    for kwargs, message in (
        ({"reason": 5}, r"^reason must be a string, got int$"),
        ({"key": ["cup@5,5,4"]}, r"^key must be a string, got list$"),
        ({"limit": 0}, r"^limit must be >= 1, got 0$"),
        ({"limit": "1"}, r"^limit must be an integer"),
    ):
        with pytest.raises(InvalidInput, match=message):
            mem.rejected(**kwargs)


def test_replay_equality_with_rejections_and_objects_mixed(store_path: Path) -> None:
    with ObjectMemory.open(store_path, scope="r", durable=False) as memory:
        for i in range(30):
            dets = [det("cup", 1.0 + 0.01 * (i % 3), 1.0),
                    det("mug", 1.0 + 0.3 * (i % 4), 2.0, conf=LOW if i % 2 else 0.6),
                    det("glass", 2.0, 2.0 + 0.1 * (i % 5), conf=LOW)]
            memory.observe(float(i), dets)
        snap = memory.snapshot()
        assert memory.rebuild_from_log().snapshot() == snap
        total = sum(r.count for r in memory.rejections())
        assert total == len(memory.rejected()) == 15 + 30
    with ObjectMemory.open(store_path, scope="r") as again:
        assert again.snapshot() == snap
        assert again.rebuild_from_log().snapshot() == snap
