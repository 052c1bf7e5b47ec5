"""``locimem bench ingest --profile``'s per-phase timing (locimem/bench/phases.py): every scan
is timed phase by phase while the profile is active, the phases it wraps are back as they
were afterwards, and the slowest scans name their cause."""

from __future__ import annotations

import gc

import locimem.memory.base as memory_base
import locimem.memory.scans as memory_scans
from locimem import ObjectMemory
from locimem.bench.phases import PHASES, ScanProfile, ScanTimes, percentile
from tests.helpers import det


def test_each_scan_is_timed_phase_by_phase_and_the_memory_is_put_back() -> None:
    decide, commit = memory_scans.decide, memory_base.commit_records
    hooks = list(gc.callbacks)
    with ObjectMemory.open() as mem:
        append = type(mem._live.store).append
        with ScanProfile(mem) as prof:
            for k in range(5):
                prof.scan(mem.observe, float(k), [det("cup", 1.0, 0.0), det("mug", 2.0, 0.0)])
            gc.collect()  # heard by the profile, outside any scan: counted in none
            prof.scan(mem.observe, 5.0, [])
        assert len(prof.scans) == 6
        for s in prof.scans:
            assert set(s.phases) <= set(PHASES) and {"decide", "commit", "append",
                                                     "other"} <= set(s.phases)
            assert all(v >= 0.0 for v in s.phases.values())
            # the phases that do not overlap add up to the scan's wall time
            parts = sum(v for p, v in s.phases.items() if p != "gc")
            assert abs(parts - s.wall) <= 1e-9 + 1e-6 * s.wall
        assert prof.scans[-1].collections == ()
        summary = prof.summary()
        assert set(summary) >= {"decide", "commit", "append", "other"}
        assert all(med <= p99 <= top for med, p99, top in summary.values())
        slowest = prof.slowest(2)
        assert [s.wall for s in slowest] == sorted((s.wall for s in prof.scans),
                                                   reverse=True)[:2]
        # put back: the functions, the store's own method, the collector's hooks
        assert memory_scans.decide is decide and memory_base.commit_records is commit
        assert "append" not in vars(mem._live.store)
        assert type(mem._live.store).append is append
        assert gc.callbacks == hooks
        result = mem.observe(6.0, [det("cup", 1.0, 0.0)])  # and it scans as before
        assert list(result.assignments) == [1] and mem.get(1).label == "cup"


def test_a_scan_names_its_cause() -> None:
    assert ScanTimes(0.010, {"decide": 0.006, "commit": 0.002, "append": 0.002}).cause() \
        == "decide"
    # a collection that took half of the scan or more is its cause, by its oldest generation
    assert ScanTimes(0.010, {"decide": 0.006, "gc": 0.005}, (0, 2)).cause() \
        == "gc (generation 2)"
    assert ScanTimes(0.010, {"decide": 0.006, "gc": 0.004}, (1,)).cause() == "decide"


def test_percentile_is_the_nearest_rank() -> None:
    values = [float(v) for v in range(1, 101)]
    assert percentile(values, 0.99) == 100.0
    assert percentile(values, 0.5) == 51.0
    assert percentile([], 0.99) == 0.0
