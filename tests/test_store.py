"""The SQLite store: durability modes, WAL, scopes sharing one file, rejections and history."""

from __future__ import annotations

import sqlite3
import time
from pathlib import Path

import pytest

from locimem import EventKind, ObjectMemory
from locimem.errors import NotFound, ScopeError
from locimem.model import Event, Observation
from locimem.store.schema import SCHEMA_VERSION
from tests.helpers import det


def _scans(memory: ObjectMemory, label: str, x0: float, t0: float = 0.0, n: int = 7) -> list[int]:
    """``n`` scans of two ``label`` objects a metre apart; returns their ids."""
    ids: list[int] = []
    for i in range(n):
        result = memory.observe(t0 + i, [det(label, x0, 0.0), det(label, x0 + 1.0, 0.0)])
        ids = list(result.assignments)  # type: ignore[arg-type]
    return ids


@pytest.mark.parametrize(("durable", "synchronous"), [(True, 2), (False, 1)],
                         ids=["durable", "fast"])
def test_durable_and_fast_modes_both_persist(store_path: Path, durable: bool,
                                             synchronous: int) -> None:
    with ObjectMemory.open(store_path, scope="s", durable=durable) as memory:
        conn = memory.store.conn
        assert conn.execute("PRAGMA journal_mode").fetchone() == ("wal",)
        assert conn.execute("PRAGMA synchronous").fetchone() == (synchronous,)
        ids = _scans(memory, "cup", 0.0)
        snap = memory.snapshot()
    assert ids == [1, 2]
    for reopen_durable in (True, False):
        with ObjectMemory.open(store_path, scope="s", durable=reopen_durable) as again:
            assert again.snapshot() == snap
            assert [(o.id, o.label, o.n_detections, o.status.value) for o in again.objects()] == [
                (1, "cup", 7, "confirmed"), (2, "cup", 7, "confirmed")]
    # a plain SQLite reader sees a WAL file holding exactly the written log
    conn = sqlite3.connect(store_path)
    assert conn.execute("PRAGMA journal_mode").fetchone() == ("wal",)
    assert conn.execute("SELECT count(*) FROM commits").fetchone() == (7,)
    assert conn.execute("SELECT count(*) FROM observations").fetchone() == (14,)
    assert conn.execute("SELECT kind, object_id FROM events ORDER BY seq").fetchall() == [
        ("APPEARED", 1), ("APPEARED", 2), ("PROMOTED", 1), ("PROMOTED", 2)]
    meta = dict(conn.execute("SELECT key, value FROM meta"))
    assert meta.pop("schema_version") == str(SCHEMA_VERSION) and meta.pop("format") == "locimem"
    assert list(meta) == ["created_at"] and abs(float(meta["created_at"]) - time.time()) < 600
    conn.close()


def test_in_memory_store_is_wal_free_and_scratch() -> None:
    with ObjectMemory.open(":memory:", scope="s") as memory:
        assert _scans(memory, "cup", 0.0) == [1, 2]
    with ObjectMemory.open(":memory:", scope="s") as fresh:
        assert fresh.objects() == []
        assert fresh.now is None


def _fill_two_scopes(path: Path) -> dict[str, list[int]]:
    ids: dict[str, list[int]] = {}
    with ObjectMemory.open(path, scope="home/kitchen") as a:
        ids["a"] = _scans(a, "cup", 0.0)
    with ObjectMemory.open(path, scope="office") as b:
        ids["b"] = _scans(b, "book", 0.0)  # same places and times as the cups
    with ObjectMemory.open(path, scope="home/kitchen") as a:
        a.observe(7.0, [det("plate", 5.0, 5.0)])
        ids["a"].append(a.objects(label="plate")[0].id)
    with ObjectMemory.open(path, scope="office") as b:
        b.observe(100.0, [det("pen", 5.0, 5.0, conf=0.01)])  # rejected, and cups are LOST
    return ids


def test_scopes_sharing_a_file_never_see_each_other(store_path: Path) -> None:
    ids = _fill_two_scopes(store_path)
    assert ids == {"a": [1, 2, 5], "b": [3, 4]}  # file-wide ids: no collision
    with ObjectMemory.open(store_path, scope="home/kitchen", read_only=True) as a, \
            ObjectMemory.open(store_path, scope="office", read_only=True) as b:
        assert [(o.id, o.label) for o in a.objects()] == [(1, "cup"), (2, "cup"), (5, "plate")]
        assert [(o.id, o.label) for o in b.objects()] == [(3, "book"), (4, "book")]
        assert a.now == 7.0 and b.now == 100.0
        assert {e.object_id for e in a.events()} == {1, 2, 5}
        assert {e.object_id for e in b.events()} == {3, 4}
        assert [e.kind for e in b.events(kind="LOST")] == [EventKind.LOST, EventKind.LOST]
        assert a.events(kind="LOST") == []  # b's clock never reaches a
        assert a.events(label="book") == [] and b.events(label="cup") == []
        for oid in (3, 4):
            with pytest.raises(NotFound, match=rf"^no object {oid} in scope 'home/kitchen'$"):
                a.history(oid)
            with pytest.raises(NotFound):
                a.get(oid)
        for oid in (1, 2, 5):
            with pytest.raises(NotFound, match=rf"^no object {oid} in scope 'office'$"):
                b.history(oid)
        assert {r.object_id for r in a.history(1)} == {1}
        assert a.recall("book").found is False
        assert a.recall("book").object_id is None
        assert b.recall("cup").found is False
        assert b.recall("plate").found is False
        assert (a.recall("cup").object_id, a.recall("cup").others) == (1, (2,))
        book = b.recall("book")
        assert (book.object_id, book.status.value, book.others) == (3, "lost", (4,))
        assert a.rejected() == []
        assert [(o.label, o.rejected) for o in b.rejected()] == [("pen", "below_min_confidence")]
        assert a.store.scopes() == ["home/kitchen", "office"]
        assert a.store.count("objects", "home/kitchen") == 3
        assert b.store.count("objects", "office") == 2
        # both rebuild from their own slice of the log
        assert a.rebuild_from_log().snapshot() == a.snapshot()
        assert b.rebuild_from_log().snapshot() == b.snapshot()
    with pytest.raises(ScopeError, match="holds no scope 'nobody'; its scopes: "
                                         "'home/kitchen', 'office'"):
        ObjectMemory.open(store_path, scope="nobody", read_only=True)  # a reader of nothing
    with ObjectMemory.open(store_path, scope="nobody") as empty:  # a writer starts it
        assert empty.objects() == [] and empty.events() == [] and empty.now is None
        assert empty.recall("cup").found is False


def test_ids_and_seqs_are_unique_across_scopes(store_path: Path) -> None:
    _fill_two_scopes(store_path)
    conn = sqlite3.connect(store_path)
    appeared = conn.execute("SELECT object_id, scope FROM events WHERE kind = 'APPEARED' "
                            "ORDER BY object_id").fetchall()
    assert appeared == [(1, "home/kitchen"), (2, "home/kitchen"), (3, "office"), (4, "office"),
                        (5, "home/kitchen")]
    seqs = [r[0] for r in conn.execute("SELECT seq FROM observations UNION ALL "
                                       "SELECT seq FROM events")]
    assert sorted(seqs) == list(range(1, len(seqs) + 1))
    commits = conn.execute("SELECT id, scope FROM commits ORDER BY id").fetchall()
    assert [c[0] for c in commits] == list(range(1, 17))
    assert [c[1] for c in commits] == ["home/kitchen"] * 7 + ["office"] * 7 + [
        "home/kitchen", "office"]
    # every record sits in the scope of its commit, and each object in one scope only
    assert conn.execute("SELECT count(*) FROM observations o JOIN commits c "
                        "ON c.id = o.commit_id WHERE c.scope != o.scope").fetchone() == (0,)
    assert conn.execute("SELECT count(*) FROM events e JOIN commits c "
                        "ON c.id = e.commit_id WHERE c.scope != e.scope").fetchone() == (0,)
    assert conn.execute("SELECT count(DISTINCT scope) FROM events "
                        "GROUP BY object_id ORDER BY 1 DESC LIMIT 1").fetchone() == (1,)
    conn.close()


def test_rejected_detections_are_recorded_with_their_reason(mem: ObjectMemory) -> None:
    result = mem.observe(0.0, [det("cup", 0.0, 0.0), det("ghost", 1.0, 0.0, conf=0.01),
                               det("mug", 2.0, 0.0, conf=0.05), det("fog", 3.0, 0.0, conf=0.0)])
    # 0.05 is the line, and it is kept — but below new_object_min_confidence (0.5) a detection
    # may only refresh an object, never create one: with nothing there, it is rejected too
    assert result.assignments == (1, None, None, None)
    assert result.rejected == {1: "below_min_confidence", 2: "below_new_object_confidence",
                               3: "below_min_confidence"}
    assert [(e.kind, e.object_id) for e in result.events] == [(EventKind.APPEARED, 1)]
    rejected = mem.rejected()
    assert [(o.index, o.label, o.confidence, o.rejected, o.object_id, o.tier, o.commit)
            for o in rejected] == [
        (1, "ghost", 0.01, "below_min_confidence", None, None, result.commit),
        (2, "mug", 0.05, "below_new_object_confidence", None, None, result.commit),
        (3, "fog", 0.0, "below_min_confidence", None, None, result.commit),
    ]
    assert rejected[0].center == (1.0, 0.0, 0.9)
    assert [o.label for o in mem.rejected(limit=1)] == ["ghost"]
    assert [o.label for o in mem.objects()] == ["cup"]
    assert "ghost" not in {e.label for e in mem.events()}
    assert mem.recall("ghost").found is False
    # a rejection is evidence of nothing: it never enters any object's history
    assert all(r.object_id == 1 for r in mem.history(1))
    assert mem.store.count("observations", "test") == 4


def test_history_is_in_seq_order_and_starts_with_appeared(store_path: Path) -> None:
    with ObjectMemory.open(store_path, scope="h") as memory:
        for i in range(3):
            memory.observe(float(i), [det("mug", 0.0, 0.0), det("book", 3.0, 0.0)])
        for i in range(3, 9):
            memory.observe(float(i), [det("cup", 0.0, 0.0), det("book", 3.0, 0.0)])
        memory.observe(9.0, [det("cup", 0.6, 0.0)])  # drift: MOVED
        memory.observe(60.0, [])  # LOST
        memory.observe(70.0, [det("cup", 0.6, 0.05)])  # REACQUIRED
        history = memory.history(1)
        other = memory.history(2)
    seqs = [r.seq for r in history]
    assert seqs == sorted(seqs) and len(set(seqs)) == len(seqs)
    first = history[0]
    assert isinstance(first, Event) and first.kind is EventKind.APPEARED
    assert first.data == {"label": "mug", "center": [0.0, 0.0, 0.9], "size": [0.1, 0.1, 0.1]}
    assert all(r.object_id == 1 for r in history)
    assert not {r.seq for r in other} & set(seqs)
    story = [r.kind.value if isinstance(r, Event) else f"obs:{r.tier}" for r in history]
    assert story == (
        ["APPEARED", "obs:new"] + ["obs:tight"] * 2  # t 0-2: mug
        + ["obs:tight"] * 2 + ["obs:tight", "PROMOTED"]  # t 3-5: cup; 6th sighting; 2.7 = 2.7
        + ["obs:tight", "LABEL_CHANGED"] + ["obs:tight"] * 2  # t 6: cup 3.6 > mug 2.7
        + ["obs:drift", "MOVED"] + ["LOST"] + ["REACQUIRED", "obs:reacquire"]
    )
    assert [type(r) for r in history].count(Observation) == 11
    assert [(r.t, r.label) for r in history if isinstance(r, Event)] == [
        (0.0, "mug"), (5.0, "mug"), (6.0, "cup"), (9.0, "cup"), (60.0, "cup"), (70.0, "cup")]


def test_a_store_in_a_missing_directory_is_a_clear_error(tmp_path: Path) -> None:
    target = tmp_path / "no" / "such" / "dir" / "m.loci"
    with pytest.raises(NotFound, match="its directory does not exist"):
        ObjectMemory.open(target, scope="s")
    assert not (tmp_path / "no").exists()
