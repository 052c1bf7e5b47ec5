"""Audit: every mutation — scans that changed something, corrections, forgetting, maintenance —
appears exactly once with actor, reason, valid time and record time; filters select exactly;
scans that changed nothing are not mutations."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from locimem import EventKind, ObjectMemory
from locimem.errors import InvalidInput
from locimem.model import AuditEntry
from tests.helpers import det


class FakeClock:
    """A wall clock the test sets by hand; counts how often it is read."""

    def __init__(self, now: float) -> None:
        self.now = now
        self.reads = 0

    def __call__(self) -> float:
        self.reads += 1
        return self.now


# (record time, action) — the story every test here reads back
def _story(memory: ObjectMemory, clock: FakeClock) -> None:
    steps: list[tuple[float, Any]] = [
        (1000.0, lambda: memory.observe(0.0, [det("cup", 1.0, 1.0)])),  # APPEARED #1
        (1001.0, lambda: memory.observe(1.0, [det("cup", 1.0, 1.0)])),  # nothing changed
        (1002.0, lambda: memory.observe(2.0, [det("dust", 2, 2, conf=0.01)])),  # only rejected
        (1003.0, lambda: memory.relabel(1, "vase", actor="alice", reason="it is a vase",
                                        t=3.0)),
        (1004.0, lambda: memory.move(1, (2.0, 1.0, 0.9), actor="bob", reason="moved it",
                                     t=4.0)),
        (1005.0, lambda: memory.set_attributes(1, {"color": "red"}, actor="alice", t=5.0)),
        (1006.0, lambda: memory.observe(6.0, [det("book", 4.0, 4.0)])),  # APPEARED #2
        (1006.5, lambda: memory.observe(6.5, [])),  # an empty scan changes nothing
        (1007.0, lambda: memory.forget(2, actor="carol", reason="privacy", t=7.0)),
        (1008.0, lambda: memory.compact(older_than_s=0.0, actor="janitor", reason="nightly")),
    ]
    for when, action in steps:
        clock.now = when
        action()
    clock.now = 9999.0  # reads after the story must not be stamped with it


EXPECTED = [
    # commit, kind, actor, reason, t, recorded_at, [(event kind, object)]
    (1, "scan", "tracker", None, 0.0, 1000.0, [("APPEARED", 1)]),
    (4, "correction", "alice", "it is a vase", 3.0, 1003.0, [("CORRECTED", 1)]),
    (5, "correction", "bob", "moved it", 4.0, 1004.0, [("CORRECTED", 1)]),
    (6, "correction", "alice", None, 5.0, 1005.0, [("CORRECTED", 1)]),
    (7, "scan", "tracker", None, 6.0, 1006.0, [("APPEARED", 2)]),
    (9, "forget", "carol", "privacy", 7.0, 1007.0, [("FORGOTTEN", 2)]),
    (10, "maintenance", "janitor", "nightly", 7.0, 1008.0, [("COMPACTED", 0)]),
]


def _shape(entries: list[AuditEntry]) -> list[tuple[Any, ...]]:
    return [(e.commit, e.kind, e.actor, e.reason, e.t, e.recorded_at,
             [(ev.kind.value, ev.object_id) for ev in e.events]) for e in entries]


@pytest.fixture
def audited(store_path: Path) -> Iterator[tuple[ObjectMemory, FakeClock]]:
    clock = FakeClock(0.0)
    memory = ObjectMemory.open(store_path, scope="a", clock=clock)
    _story(memory, clock)
    try:
        yield memory, clock
    finally:
        memory.close()


def test_every_mutation_appears_once_with_who_why_and_when(
        audited: tuple[ObjectMemory, FakeClock]) -> None:
    memory, _ = audited
    entries = memory.audit()
    assert _shape(entries) == EXPECTED
    assert len({e.commit for e in entries}) == len(entries)
    # the events of each entry are exactly the record's events of that commit
    every_event = memory._live.store.events(memory.scope)
    for entry in entries:
        assert list(entry.events) == [e for e in every_event if e.commit == entry.commit]
    # the correction events carry who and why too
    corrected = [ev for e in entries for ev in e.events if ev.kind is EventKind.CORRECTED]
    assert [(ev.data["actor"], ev.data["reason"]) for ev in corrected] == [
        ("alice", "it is a vase"), ("bob", "moved it"), ("alice", None)]
    # commits 2, 3 and 8 (scans without events) are in the record, not in the audit
    assert [c.id for c in memory._live.store.commits(memory.scope)] == list(range(1, 11))


def test_record_time_comes_from_the_injected_clock_only(store_path: Path) -> None:
    clock = FakeClock(0.0)
    with ObjectMemory.open(store_path, scope="a", clock=clock) as memory:
        _story(memory, clock)
        reads = clock.reads
        memory.audit()
        memory.objects()
        memory.as_of(3.0).audit()
        memory.compact(older_than_s=0.0, dry_run=True)
        assert clock.reads == reads  # reading and dry runs never stamp anything
        stamps = [c.recorded_at for c in memory._live.store.commits(memory.scope)]
    assert stamps == [1000.0, 1001.0, 1002.0, 1003.0, 1004.0, 1005.0, 1006.0, 1006.5, 1007.0,
                      1008.0]


@pytest.mark.parametrize(("kwargs", "commits"), [
    ({"since": 3.0, "until": 5.0}, [4, 5, 6]),
    ({"since": 5.5}, [7, 9, 10]),
    ({"until": 0.0}, [1]),
    ({"since": 7.0, "until": 7.0}, [9, 10]),
    ({"since": 100.0}, []),
    ({"recorded_since": 1004.0, "recorded_until": 1006.0}, [5, 6, 7]),
    ({"recorded_since": 1006.1}, [9, 10]),
    ({"recorded_until": 1000.0}, [1]),
    ({"recorded_until": 999.9}, []),
    ({"actor": "alice"}, [4, 6]),
    ({"actor": "tracker"}, [1, 7]),
    ({"actor": "janitor"}, [10]),
    ({"actor": "nobody"}, []),
    ({"object_id": 1}, [1, 4, 5, 6]),
    ({"object_id": 2}, [7, 9]),  # a forgotten object's audit stays whole
    ({"object_id": 0}, [10]),
    ({"object_id": 3}, []),
    ({"kind": "correction"}, [4, 5, 6]),
    ({"kind": ["scan", "forget"]}, [1, 7, 9]),
    ({"kind": ("maintenance",)}, [10]),
    ({"limit": 2}, [1, 4]),
    ({"limit": 1, "kind": "forget"}, [9]),
    ({"actor": "alice", "since": 4.0}, [6]),
    ({"object_id": 1, "kind": "scan"}, [1]),
    ({"object_id": 1, "recorded_since": 1003.5, "limit": 1}, [5]),
])
def test_audit_filters(audited: tuple[ObjectMemory, FakeClock], kwargs: dict[str, Any],
                       commits: list[int]) -> None:
    memory, _ = audited
    entries = memory.audit(**kwargs)
    assert [e.commit for e in entries] == commits
    by_commit = {row[0]: row for row in EXPECTED}
    assert _shape(entries) == [by_commit[c] for c in commits]


def test_audit_object_filter_keeps_only_that_objects_events(store_path: Path) -> None:
    with ObjectMemory.open(store_path, scope="a") as memory:
        memory.observe(0.0, [det("cup", 1.0, 1.0), det("book", 4.0, 4.0)])
        (entry,) = memory.audit(object_id=2)
        assert [(e.kind.value, e.object_id) for e in entry.events] == [("APPEARED", 2)]
        (both,) = memory.audit()
        assert [e.object_id for e in both.events] == [1, 2]


@pytest.mark.parametrize(("kwargs", "message"), [
    ({"kind": "scans"}, r"^kind must be one of scan, correction, forget, maintenance\b[^;]*; "
                        r"got 'scans'$"),
    ({"kind": ["scan", "SCAN"]}, r"got 'SCAN'$"),
    ({"kind": "APPEARED"}, r"got 'APPEARED'$"),
    ({"since": float("nan")}, r"^since must be a finite number"),
    ({"until": "5"}, r"^until must be a finite number"),
    ({"recorded_since": float("inf")}, r"^recorded_since must be a finite number"),
    ({"recorded_until": None, "limit": 0}, r"^limit must be >= 1, got 0$"),
    ({"actor": 5}, r"^actor must be a string, got int$"),
    ({"object_id": "1"}, r"^object_id must be an integer"),
])
def test_invalid_audit_filters_raise(audited: tuple[ObjectMemory, FakeClock],
                                     kwargs: dict[str, Any], message: str) -> None:
    memory, _ = audited
    with pytest.raises(InvalidInput, match=message):
        memory.audit(**kwargs)


def test_audit_survives_reopening_and_reads_as_of(audited: tuple[ObjectMemory, FakeClock],
                                                  store_path: Path) -> None:
    memory, _ = audited
    whole = memory.audit()
    assert _shape(memory.as_of(4.0).audit()) == EXPECTED[:3]
    assert _shape(memory.as_of(recorded=1005.5).audit()) == EXPECTED[:4]
    assert memory.as_of(-1.0).audit() == []
    memory.close()
    with ObjectMemory.open(store_path, scope="a", read_only=True) as reader:
        assert reader.audit() == whole
    with ObjectMemory.open(store_path, scope="other") as other:
        assert other.audit() == []


def test_scans_that_change_nothing_are_not_audit_entries(mem: ObjectMemory) -> None:
    mem.observe(0.0, [det("cup", 1.0, 1.0)])
    for i in range(1, 4):
        result = mem.observe(float(i), [det("cup", 1.0, 1.0), det("dust", 3, 3, conf=0.0)])
        assert result.events == ()
    mem.observe(4.0, [])
    assert [e.commit for e in mem.audit()] == [1]
    # ... but a scan whose only event is an EXPIRED (the cup, seen four times, was never
    # promoted; a promoted one would be LOST) is a mutation
    result = mem.observe(100.0, [])
    assert [e.kind for e in result.events] == [EventKind.EXPIRED]
    assert [(e.commit, e.t) for e in mem.audit()] == [(1, 0.0), (result.commit, 100.0)]
