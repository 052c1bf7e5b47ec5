"""Replay property: for any scan sequence, the live memory, the materialised cache on disk, and a
replay of the append-only log all describe exactly the same state — and reopening a store in the
middle of a run changes no decision."""

from __future__ import annotations

import tempfile
from pathlib import Path
from typing import Any

import numpy as np
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from locimem import Detection, EventKind, ObjectMemory, TrackerConfig
from locimem.model import ScanResult

LABELS = ("cup", "mug", "glass", "book")
MIN_CONF = TrackerConfig().min_detection_confidence  # 0.05
NEW_MIN = TrackerConfig().new_object_min_confidence  # 0.5
FEATURES = (
    (1.0, 0.0, 0.0, 0.0),
    (0.9, 0.1, 0.0, 0.0),
    (0.0, 1.0, 0.0, 0.0),
    (0.0, 0.0, 0.6, 0.8),
)

CONFIG = TrackerConfig(promote_after=3)
ANCHORS = ((0.5, 0.5, 0.5), (0.62, 0.5, 0.5), (1.3, 0.5, 0.5), (2.0, 2.0, 0.5))
coord = st.one_of(
    st.integers(0, 60).map(lambda k: k * 0.05),  # a lattice: exact ties and shared cells
    st.floats(0.0, 3.0, allow_nan=False),
)
jitter = st.floats(-0.05, 0.05)
centers = st.one_of(
    st.tuples(st.sampled_from(ANCHORS), jitter, jitter).map(
        lambda a: (a[0][0] + a[1], a[0][1] + a[2], a[0][2])
    ),  # objects seen again near where they were: tight matches, two objects 12 cm apart
    st.tuples(coord, coord, st.floats(0.0, 1.0)),
)
low = st.floats(0.0, MIN_CONF, exclude_max=True)  # rejected as below_min_confidence
confidences = st.tuples(st.integers(0, 5), st.floats(0.3, 1.0), low).map(
    lambda x: x[2] if x[0] == 0 else x[1]  # about one detection in six is rejected
)
detections = st.builds(
    Detection,
    label=st.sampled_from(LABELS),
    confidence=confidences,
    center=centers,
    size=st.tuples(*[st.floats(0.0, 0.5)] * 3),
    feature=st.one_of(st.none(), st.sampled_from(FEATURES).map(np.array)),
    track_id=st.one_of(st.none(), st.integers(1, 3), st.sampled_from(["a", "b"])),
    orientation=st.one_of(st.none(), st.just((0.0, 0.0, 0.0, 1.0))),
)
gaps = st.one_of(st.just(0.0), st.floats(0.0, 3.0), st.floats(0.0, 50.0))
scans = st.lists(st.tuples(gaps, st.lists(detections, max_size=6)), min_size=1, max_size=14)


def _ingest(memory: ObjectMemory, t0: float, scan_list: list[tuple[float, list[Detection]]]
            ) -> tuple[float, list[ScanResult]]:
    t = t0
    results = []
    for gap, dets in scan_list:
        t += gap
        result = memory.observe(t, dets)
        _check_result(memory, result, dets)
        results.append(result)
    return t, results


def _check_result(memory: ObjectMemory, result: ScanResult, dets: list[Detection]) -> None:
    assert len(result.assignments) == len(dets)
    objects = memory.snapshot()["objects"]
    for i, d in enumerate(dets):  # below the line: rejected; below the new-object line:
        if d.confidence < MIN_CONF:  # it may refresh an object but never create one
            assert result.rejected.get(i) == "below_min_confidence"
        elif result.rejected.get(i) == "duplicate_in_scan":  # the same box twice in a scan
            assert any(j != i and (e.label, e.center, e.size) == (d.label, d.center, d.size)
                       and e.confidence >= d.confidence for j, e in enumerate(dets))
        elif i in result.rejected:
            assert result.rejected[i] in ("below_new_object_confidence", "crowded")
            assert d.confidence < NEW_MIN or result.rejected[i] == "crowded"
    given_ids = []
    for i, oid in enumerate(result.assignments):
        if oid is None:
            assert i in result.rejected
        else:
            assert i not in result.rejected
            assert oid in objects
            given_ids.append(oid)
    assert len(given_ids) == len(set(given_ids)), f"one id given twice in a scan: {given_ids}"


def _record(memory: ObjectMemory) -> dict[str, Any]:
    """Everything the store holds for the scope, minus wall-clock record times."""
    commits = [(c.id, c.kind, c.t, c.actor, c.reason, c.n_detections, c.camera)
               for c in memory._live.store.commits(memory.scope)]
    observations = [
        (o, None if o.feature is None else o.feature.tolist())
        for o in memory._live.store.observations(memory.scope)
    ]
    return {"commits": commits, "observations": observations, "events": memory.events()}


@settings(max_examples=40, deadline=None,
          suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
@given(scan_list=scans, t0=st.floats(-100.0, 100.0), split=st.integers(0, 14))
def test_live_cache_and_log_agree(scan_list: list[tuple[float, list[Detection]]], t0: float,
                                  split: int) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "p.loci"
        with ObjectMemory.open(path, scope="prop", config=CONFIG, durable=False) as memory:
            _, results = _ingest(memory, t0, scan_list)
            snap = memory.snapshot()
            assert snap == memory.rebuild_from_log().snapshot()
            record = _record(memory)
            # every event the scans reported is in the store, in order, and nothing else is
            assert [e for r in results for e in r.events] == record["events"]
            assert snap["now"] == results[-1].t
        with ObjectMemory.open(path, scope="prop", config=CONFIG) as again:
            assert again.snapshot() == snap
            assert again.rebuild_from_log().snapshot() == snap
            assert _record(again) == record
        with ObjectMemory.open(path, scope="prop", config=CONFIG, read_only=True) as reader:
            assert reader.snapshot() == snap

        # the same scans with a close/reopen in the middle decide exactly the same
        split_path = Path(tmp) / "split.loci"
        k = min(split, len(scan_list))
        with ObjectMemory.open(split_path, scope="prop", config=CONFIG,
                               durable=False) as first:
            t, head = _ingest(first, t0, scan_list[:k])
        with ObjectMemory.open(split_path, scope="prop", config=CONFIG,
                               durable=False) as second:
            _, tail = _ingest(second, t, scan_list[k:])
            assert second.snapshot() == snap
            assert _record(second) == record
        assert [r.assignments for r in head + tail] == [r.assignments for r in results]
        assert [r.rejected for r in head + tail] == [r.rejected for r in results]


def test_the_generator_reaches_every_lifecycle_event() -> None:
    """A fixed sequence like the generated ones, showing LOST, REACQUIRED (by the window and by
    the embedding) and a rejection all happen, and still replay exactly."""
    cup = np.array(FEATURES[0])
    seq = [
        (0.0, [Detection("cup", 0.9, (1.0, 1.0, 0.5), (0.1, 0.1, 0.1), feature=cup)]),
        (40.0, [Detection("book", 0.9, (2.5, 2.5, 0.5), (0.2, 0.1, 0.3))]),  # cup LOST
        (10.0, [Detection("cup", 0.8, (1.05, 1.0, 0.5), (0.1, 0.1, 0.1))]),  # window
        (50.0, [Detection("mug", 0.01, (0.0, 0.0, 0.5), (0.1, 0.1, 0.1))]),  # cup+book LOST
        (50.0, []),
        (50.0, [Detection("cup", 0.9, (1.0, 1.1, 0.5), (0.1, 0.1, 0.1), feature=cup)]),
    ]
    # promoted at once: a tentative identity unseen for too long would expire, not be lost
    with tempfile.TemporaryDirectory() as tmp, \
            ObjectMemory.open(Path(tmp) / "e.loci", scope="prop",
                              config=TrackerConfig(promote_after=1)) as memory:
        _, results = _ingest(memory, 0.0, seq)
        story = [(e.t, e.kind, e.object_id) for r in results for e in r.events
                 if e.kind is not EventKind.PROMOTED]
        assert story == [
            (0.0, EventKind.APPEARED, 1),
            (40.0, EventKind.LOST, 1),
            (40.0, EventKind.APPEARED, 2),
            (50.0, EventKind.REACQUIRED, 1),
            (50.0, EventKind.SETTLED, 1),  # its second sighting: twice what promotes it
            (100.0, EventKind.LOST, 1),
            (100.0, EventKind.LOST, 2),
            (200.0, EventKind.REACQUIRED, 1),
        ]
        assert results[3].rejected == {0: "below_min_confidence"}
        assert [r.assignments for r in results] == [(1,), (2,), (1,), (None,), (), (1,)]
        assert memory.snapshot() == memory.rebuild_from_log().snapshot()
