"""A person merges two identities that are one thing, or splits one that is two: corrections
with actor and reason, shown by audit, kept across reopening, replayed exactly, undone by a
later correction, and checked by validate (which also refuses a tampered record)."""

from __future__ import annotations

import sqlite3
from pathlib import Path

import pytest

from locimem import Detection, EventKind, ObjectMemory
from locimem.errors import InvalidInput, NotFound, ReadOnly, ScopeError
from locimem.interchange.validate import validate_store

MUG_A = Detection("mug", 0.9, (1.0, 1.0, 0.8), (0.08, 0.08, 0.1))
MUG_B = Detection("mug", 0.9, (2.0, 1.0, 0.8), (0.08, 0.08, 0.1))


@pytest.fixture
def path(tmp_path: Path) -> Path:
    """Two mugs seen together for 6 scans (ids 1 and 2), then only the second, moved."""
    p = tmp_path / "home.loci"
    with ObjectMemory.open(p, scope="home") as mem:
        for t in range(6):
            mem.observe(float(t), [MUG_A, MUG_B])
        mem.observe(6.0, [Detection("mug", 0.9, (2.05, 1.0, 0.8), (0.08, 0.08, 0.1))])
    return p


def test_merge_keeps_one_id_both_histories_and_the_place_seen_last(path: Path) -> None:
    with ObjectMemory.open(path, scope="home") as mem:
        history = len(mem.history(1)) + len(mem.history(2))
        seen_last = mem.get(2).center
        ev = mem.merge(1, 2, actor="alice", reason="one mug seen twice")
        assert (ev.kind, ev.object_id, ev.data["absorbed"]) == (EventKind.MERGED, 1, 2)
        assert (ev.data["actor"], ev.data["reason"]) == ("alice", "one mug seen twice")
        mug = mem.get(1)
        assert mug.center == seen_last  # #2 was seen last: the merged mug is there
        assert mug.n_detections == 13 and mug.label_votes == {"mug": pytest.approx(11.7)}
        assert [o.id for o in mem.objects()] == [1]
        with pytest.raises(NotFound, match=r"^object 2 was merged into #1"):
            mem.get(2)
        assert len(mem.history(1)) == history + 1  # both histories, and the MERGED event
    with ObjectMemory.open(path, scope="home", read_only=True) as mem:  # reopened
        assert [o.id for o in mem.objects()] == [1]
        (entry,) = mem.audit(kind="correction")
        assert (entry.actor, entry.reason, [e.kind for e in entry.events]) == (
            "alice", "one mug seen twice", [EventKind.MERGED])
        assert mem.snapshot() == mem.rebuild_from_log().snapshot()
        assert validate_store(mem._live.store).ok


def test_split_makes_a_published_object_with_the_persons_label(path: Path) -> None:
    with ObjectMemory.open(path, scope="home") as mem:
        ev = mem.split(1, (1.4, 1.0, 0.8), label="cup", actor="bob", reason="a cup beside it")
        assert (ev.kind, ev.object_id, ev.data["into"]) == (EventKind.SPLIT, 1, 3)
        cup = mem.get(3)
        assert (cup.label, cup.status.value, cup.center, cup.size) == (
            "cup", "confirmed", (1.4, 1.0, 0.8), (0.08, 0.08, 0.1))
        assert (cup.corrected_label, cup.label_by, cup.source) == ("cup", "bob", "person:bob")
        assert cup.n_detections == 0 and cup.label_votes == {}  # no detector evidence
        assert mem.get(1).center == (1.0, 1.0, 0.8)  # the original keeps its evidence
        # seen together from now on: the tracker does not merge them back
        result = mem.observe(7.0, [MUG_A, Detection("cup", 0.9, (1.4, 1.0, 0.8),
                                                    (0.08, 0.08, 0.1))])
        assert result.assignments == (1, 3)
    with ObjectMemory.open(path, scope="home", read_only=True) as mem:
        assert [(o.id, o.label) for o in mem.objects()] == [(1, "mug"), (2, "mug"), (3, "cup")]
        assert validate_store(mem._live.store).ok
        assert mem.snapshot() == mem.rebuild_from_log().snapshot()


def test_a_merge_is_undone_by_a_split_and_a_split_by_a_merge(path: Path) -> None:
    with ObjectMemory.open(path, scope="home") as mem:
        mem.merge(1, 2, actor="alice", reason="one mug")
        there = mem.get(1).center
        undo = mem.split(1, (2.05, 1.0, 0.8), actor="alice", reason="no: two mugs")
        again = undo.data["into"]
        assert sorted((o.id, o.center) for o in mem.objects()) == [
            (1, there), (again, (2.05, 1.0, 0.8))]
        mem.move(1, (1.0, 1.0, 0.8), actor="alice", reason="the first one stayed")
        mem.merge(1, again, actor="alice", reason="after all, one")
        assert [o.id for o in mem.objects()] == [1]
        assert [(a.actor, a.reason) for a in mem.audit(kind="correction")] == [
            ("alice", "one mug"), ("alice", "no: two mugs"), ("alice", "the first one stayed"),
            ("alice", "after all, one")]
        assert validate_store(mem._live.store).ok
    with ObjectMemory.open(path, scope="home", read_only=True) as mem:
        assert mem.snapshot() == mem.rebuild_from_log().snapshot()


def test_bad_merges_and_splits_write_nothing(path: Path) -> None:
    with ObjectMemory.open(path, scope="home") as mem:
        before = mem._live.store.counters()
        with pytest.raises(InvalidInput, match=r"^cannot merge object 1 with itself$"):
            mem.merge(1, 1)
        with pytest.raises(NotFound, match=r"^no object 9 in scope 'home'$"):
            mem.merge(1, 9)
        with pytest.raises(InvalidInput, match="center"):
            mem.split(1, (1.0, float("nan"), 0.8))
        with pytest.raises(InvalidInput, match=r"^t=1\.0 is before the latest commit"):
            mem.split(1, (1.5, 1.0, 0.8), t=1.0)
        assert mem._live.store.counters() == before
    with ObjectMemory.open(path, scope="home", read_only=True) as mem, \
            pytest.raises(ReadOnly, match=r"^merge\(\) needs a writable memory"):
        mem.merge(1, 2)


def test_a_read_only_open_of_a_scope_the_store_does_not_hold_names_its_scopes(path) -> None:
    with pytest.raises(ScopeError, match=r"holds no scope 'garage'; its scopes: 'home'$") as e:
        ObjectMemory.open(path, scope="garage", read_only=True)
    assert e.value.scopes == ["home"]
    with ObjectMemory.open(path, scope="garage") as mem:  # a writer starts a new scope
        assert mem.objects() == []
    empty = path.parent / "empty.loci"
    ObjectMemory.open(empty, scope="home").close()
    with ObjectMemory.open(empty, scope="anything", read_only=True) as mem:
        assert mem.objects() == []  # an empty store holds no scope to refuse it against


@pytest.mark.parametrize(("sql", "message"), [
    ("UPDATE commits SET kind = 'scene' WHERE id = (SELECT commit_id FROM events WHERE "
     "kind = 'MERGED')", "MERGED event seq {seq} is in a scene commit (only scans, "
     "corrections and consolidation merge or split identities)"),
    ("UPDATE events SET data = json_set(data, '$.actor', 'mallory') WHERE kind = 'MERGED'",
     "MERGED event seq {seq} of a correction names actor 'mallory', its commit 'alice'"),
    ("UPDATE events SET data = json_set(data, '$.absorbed', 1) WHERE kind = 'MERGED'",
     "MERGED event seq {seq} of #1 absorbs 1, not another object's id"),
])
def test_validate_refuses_a_tampered_merge(path: Path, sql: str, message: str) -> None:
    with ObjectMemory.open(path, scope="home") as mem:
        seq = mem.merge(1, 2, actor="alice", reason="one").seq
    with sqlite3.connect(path) as conn:
        conn.execute(sql)
    report = validate_store(str(path), scope="home")
    found = [v for v in report.violations if v.rule == "record_kinds"]
    assert [v.message for v in found] == [message.format(seq=seq)]


def test_validate_refuses_an_event_after_an_identity_ended(path: Path) -> None:
    with ObjectMemory.open(path, scope="home") as mem:
        merged = mem.merge(1, 2, actor="alice", reason="one")
        mem.relabel(1, "cup")
    with sqlite3.connect(path) as conn:
        conn.execute("UPDATE events SET object_id = 2 WHERE kind = 'CORRECTED'")
    report = validate_store(str(path), scope="home")
    assert [v.message for v in report.violations if v.rule == "appeared"] == [
        f"object #2 has a CORRECTED event (seq {merged.seq + 1}) after it was MERGED into "
        f"another (seq {merged.seq})"]
