"""The tracker design's worked kitchen timeline, end to end through a real file with a real
close and reopen (the acceptance story of the core)."""

from __future__ import annotations

import math

import pytest

from locimem import EventKind, ObjectMemory, ObjectStatus
from locimem.sim.kitchen import CUP_HOME, CUP_MOVED, kitchen_timeline


@pytest.fixture(scope="module")
def played(tmp_path_factory):
    """Play the whole timeline into a store; keep per-scan results and belief checkpoints."""
    path = tmp_path_factory.mktemp("kitchen") / "kitchen.loci"
    results, beliefs = {}, {}
    with ObjectMemory.open(path, scope="kitchen") as mem:
        for scan in kitchen_timeline():
            results[scan.t] = mem.observe(scan.t, scan.detections)
            beliefs[scan.t] = [(o.id, o.status, o.confidence) for o in mem.objects()]
        live_snapshot = mem.snapshot()
    return path, results, beliefs, live_snapshot


def test_exact_event_sequence(played):
    _, results, _, _ = played
    events = [(e.t, e.kind, e.object_id) for r in results.values() for e in r.events]
    assert events == [
        (0.0, EventKind.APPEARED, 1),
        (10.0, EventKind.PROMOTED, 1),  # the 6th detection (t = 0, 2, 4, 6, 8, 10)
        (60.0, EventKind.MOVED, 1),  # a move, not a second object
        (154.0, EventKind.LOST, 1),  # first scan more than tau*ln(10) = 34.5 s after t=118
    ]


def test_every_detection_goes_to_the_one_cup(played):
    _, results, _, _ = played
    ids = {i for r in results.values() for i in r.assignments}
    assert ids == {1}


def test_confidence_bands_at_the_design_times(played):
    _, _, beliefs, _ = played
    (_, status, conf), = beliefs[14.0]
    assert status is ObjectStatus.CONFIRMED and conf == pytest.approx(math.exp(-4 / 15))
    assert round(conf, 2) == 0.77
    (_, status, conf), = beliefs[20.0]
    assert status is ObjectStatus.CONFIRMED and round(conf, 2) == 0.51
    (_, status, conf), = beliefs[24.0]
    assert status is ObjectStatus.TENTATIVE and 0.2 <= conf < 0.5  # out of the published set
    (_, status, conf), = beliefs[25.0]
    assert status is ObjectStatus.CONFIRMED and conf == 1.0  # re-detection resets belief


def test_not_published_before_promotion(played):
    _, _, beliefs, _ = played
    for t in (0.0, 2.0, 4.0, 6.0, 8.0):
        (_, status, _), = beliefs[t]
        assert status is ObjectStatus.TENTATIVE
    (_, status, _), = beliefs[10.0]
    assert status is ObjectStatus.CONFIRMED


def test_no_phantom_at_the_old_place(played):
    path, _, _, _ = played
    with ObjectMemory.open(path, scope="kitchen", read_only=True) as mem:
        (cup,) = mem.objects()
        assert math.dist(cup.center, CUP_MOVED) < 0.02
        assert all(math.dist(o.center, CUP_HOME) > 0.5 for o in mem.objects())
        moved = mem.events(kind="MOVED")
        assert len(moved) == 1 and moved[0].t == 60.0


def test_label_flicker_in_the_timeline_keeps_the_vote(played):
    _, results, _, _ = played
    assert results[31.0].assignments == (1,)  # the "mug" sighting went to the cup
    assert not [e for r in results.values() for e in r.events
                if e.kind is EventKind.LABEL_CHANGED]


def test_restart_rebuilds_the_same_memory_and_recall_reports_lost(played):
    path, _, _, live_snapshot = played
    with ObjectMemory.open(path, scope="kitchen") as mem:
        assert mem.snapshot() == live_snapshot
        assert mem.rebuild_from_log().snapshot() == live_snapshot
        assert mem.tracked() == []  # nothing published: the cup was taken away
        r = mem.recall("cup")
        assert r.found and r.object_id == 1 and r.status is ObjectStatus.LOST
        assert r.last_seen == 118.0 and r.lost_at == 154.0
        assert math.dist(r.center, CUP_MOVED) < 0.02
        assert "lost" in r.text and "t=118.0" in r.text and "#1" in r.text
        assert mem.recall("teapot").found is False
        # the restarted process carries on with the same identity when the cup comes back
        last_sighting = next(s for s in reversed(kitchen_timeline()) if s.detections)
        res = mem.observe(205.0, last_sighting.detections)
        assert res.assignments == (1,)
        assert [e.kind for e in res.events] == [EventKind.REACQUIRED]
