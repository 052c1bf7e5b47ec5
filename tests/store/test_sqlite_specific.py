"""What only the SQLite backend does: its file (WAL, durability modes, the writer lock), its
``:memory:`` mode, file-wide ids in SQL, the stale-cache flag a migration sets, and its codecs.
(Migrations from every shipped schema: ``tests/test_schema_fixtures.py``; the open checks:
``tests/test_open_checks.py``.)"""

from __future__ import annotations

import itertools
import os
import sqlite3
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from locimem import ObjectMemory
from locimem.errors import NotFound, StoreLocked
from locimem.model import Commit, Event, EventKind
from locimem.store.base import RowChanges
from locimem.store.sqlite import MEMORY, SQLiteStore, writer_lock_path
from locimem.store.sqlite.codec import (
    decode_checkpoint,
    encode_checkpoint,
    encode_json,
    encode_json_ordered,
)
from locimem.store.sqlite.schema import REBUILD_CACHE, SCHEMA_VERSION
from locimem.tracker.load import replay_objects, replay_stale_cache
from tests.helpers import det
from tests.store.scans import fill_two_scopes, pairs


@pytest.mark.parametrize(("durable", "synchronous"), [(True, 2), (False, 1)],
                         ids=["durable", "fast"])
def test_durable_and_fast_modes_both_persist(store_path: Path, durable: bool,
                                             synchronous: int) -> None:
    with ObjectMemory.open(store_path, scope="s", durable=durable) as memory:
        conn = memory._live.store.conn
        assert conn.execute("PRAGMA journal_mode").fetchone() == ("wal",)
        assert conn.execute("PRAGMA synchronous").fetchone() == (synchronous,)
        ids = pairs(memory, "cup", 0.0)
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
        assert pairs(memory, "cup", 0.0) == [1, 2]
    with ObjectMemory.open(":memory:", scope="s") as fresh:
        assert fresh.objects() == []
        assert fresh.now is None


def test_ids_and_seqs_are_unique_across_scopes(store_path: Path) -> None:
    fill_two_scopes(store_path)
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


def test_a_store_in_a_missing_directory_is_a_clear_error(tmp_path: Path) -> None:
    target = tmp_path / "no" / "such" / "dir" / "m.loci"
    with pytest.raises(NotFound, match="its directory does not exist"):
        ObjectMemory.open(target, scope="s")
    assert not (tmp_path / "no").exists()


def test_an_in_memory_store_cannot_be_opened_read_only() -> None:
    with pytest.raises(NotFound, match="in-memory store cannot be opened read-only"):
        SQLiteStore(MEMORY, read_only=True)


def test_one_writer_per_file_and_the_lock_names_its_holder(tmp_path: Path) -> None:
    path = tmp_path / "one.loci"
    first = SQLiteStore(path)
    try:
        assert Path(writer_lock_path(path)).read_text() == str(os.getpid())
        with pytest.raises(StoreLocked, match=rf"already open for writing \(pid {os.getpid()}\)"):
            SQLiteStore(path)
        os.link(path, tmp_path / "other-name.loci")
        with pytest.raises(StoreLocked, match="under another name"):
            SQLiteStore(tmp_path / "other-name.loci")
        reader = SQLiteStore(path, read_only=True)  # readers take no lock
        reader.close()
    finally:
        first.close()
    SQLiteStore(path).close()  # released on close


def test_a_stale_cache_waits_for_the_replay_above_the_store(tmp_path: Path) -> None:
    """A migration's stale flag: the store only reports it; replay_stale_cache (the tracker's)
    rewrites every scope's objects from its log and clears it, in one transaction."""
    path = tmp_path / "stale.loci"
    fill_two_scopes(path)
    with ObjectMemory.open(path, scope="office") as mem:
        mem.observe(101.0, [det("pen", 5.0, 5.0)])
    conn = sqlite3.connect(path)
    good = conn.execute("SELECT * FROM objects ORDER BY id").fetchall()
    with conn:  # what a migration that cannot compute the cache leaves behind
        conn.execute("UPDATE objects SET belief = NULL, n_detections = 0")
        conn.execute("INSERT INTO meta (key, value) VALUES (?, '1')", (REBUILD_CACHE,))
    stale = conn.execute("SELECT * FROM objects ORDER BY id").fetchall()
    assert stale != good
    store = SQLiteStore(path)
    try:
        assert store.cache_stale()
        assert conn.execute("SELECT * FROM objects ORDER BY id").fetchall() == stale  # untouched
        assert sorted(o.id for o in replay_objects(store, "office")) == [3, 4, 6]
        assert replay_stale_cache(store) is True
        assert not store.cache_stale() and replay_stale_cache(store) is False
    finally:
        store.close()
    assert conn.execute("SELECT * FROM objects ORDER BY id").fetchall() == good
    conn.close()


def test_the_memory_replays_a_stale_cache_when_it_opens_writable(tmp_path: Path) -> None:
    path = tmp_path / "stale.loci"
    with ObjectMemory.open(path, scope="s") as mem:
        pairs(mem, "cup", 0.0)
        snap = mem.snapshot()
    conn = sqlite3.connect(path)
    with conn:
        conn.execute("UPDATE objects SET n_detections = 0")
        conn.execute("INSERT INTO meta (key, value) VALUES (?, '1')", (REBUILD_CACHE,))
    conn.close()
    with ObjectMemory.open(path, scope="s", read_only=True) as reader:  # readers never replay
        assert reader._live.store.cache_stale() and reader.snapshot() != snap
    with ObjectMemory.open(path, scope="s") as mem:
        assert not mem._live.store.cache_stale() and mem.snapshot() == snap


def test_the_codecs() -> None:
    assert encode_json({"b": 1, "a": [1.5, None]}) == '{"a":[1.5,null],"b":1}'
    assert encode_json_ordered({"b": 1, "a": 2}) == '{"b":1,"a":2}'
    with pytest.raises(ValueError):
        encode_json({"x": float("nan")})
    state = {"objects": [{"id": 1, "center": [0.1, 0.2, 0.3]}], "now": 5.0}
    blob = encode_checkpoint(state)
    assert isinstance(blob, bytes) and decode_checkpoint(blob) == state
    assert blob == encode_checkpoint(dict(reversed(state.items())))  # canonical


@pytest.mark.no_validate  # a hand-made commit no tracker decided
def test_records_keep_their_sqlite_encoding(tmp_path: Path) -> None:
    """The columns as SQLite holds them (what exports and the raw-append floor read)."""
    store = SQLiteStore(tmp_path / "enc.loci")
    try:
        store.append("s", [Commit(1, "scan", 0.0, 1.0, "tracker", None, 1, missed=(3,),
                                  miss_credits=(0.5,)),
                           Event(1, 1, 0.0, EventKind.APPEARED, 3, "cup", {"b": 1, "a": 2})],
                     RowChanges())
        row = store.conn.execute("SELECT missed, miss_credit, miss_credits FROM commits"
                                 ).fetchone()
        assert row == ("[3]", None, "[0.5]")
        assert store.conn.execute("SELECT data FROM events").fetchone() == ('{"a":2,"b":1}',)
    finally:
        store.close()


def test_the_log_is_checkpointed_beside_the_writer_and_stays_bounded(
        store_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The writer's connection never checkpoints inside a commit (``wal_autocheckpoint=0``);
    a thread of the store's own copies the log back once a commit leaves more than
    ``WAL_PAGES`` pages in it, so the log stays bounded over many commits, nothing is lost,
    and closing the store stops the thread and leaves no log behind."""
    import threading

    from locimem.store.sqlite import checkpointer

    monkeypatch.setattr(checkpointer, "WAL_PAGES", 8)
    wal = Path(str(store_path) + "-wal")
    memory = ObjectMemory.open(store_path, scope="s", durable=False)
    store = memory._live.store
    assert store.conn.execute("PRAGMA wal_autocheckpoint").fetchone() == (0,)
    sizes, frames = [], []
    for k in range(300):
        memory.observe(float(k), [det("cup", 0.1 * (k % 40), 0.0, 0.8),
                                  det("bowl", 0.1 * (k % 40), 1.0, 0.8)])
        sizes.append(wal.stat().st_size)
        frames.append(store._checkpointer.frames())
    thread = store._checkpointer._thread
    deadline = time.monotonic() + 10.0
    while store._checkpointer.checkpoints == 0 and time.monotonic() < deadline:
        time.sleep(0.01)
    assert store._checkpointer.checkpoints > 0 and store._checkpointer.error is None
    # bounded: 300 commits wrote about 11 MB of log, which is what the file grows to with
    # no checkpoint; whatever the thread managed, the writer's own checkpoints when it fell
    # BEHIND keep it to a fraction of that
    assert max(sizes) < 2_000_000
    # the log's own length (the wal-index's frame count: about 30 frames a commit here,
    # 9,000 for the run) stays within a few commits of BEHIND times the limit (an inline
    # checkpoint that meets the thread's own returns at once and is tried again on the next
    # commit), and SQLite restarts the log again and again
    assert max(frames) < 400
    assert sum(1 for a, b in itertools.pairwise(frames) if b < a) >= 10
    snap = memory.snapshot()
    memory.close()
    assert not thread.is_alive()
    assert [t for t in threading.enumerate() if t.name.startswith("locimem-checkpoint")] == []
    assert not wal.exists() or wal.stat().st_size == 0
    with ObjectMemory.open(store_path, scope="s", read_only=True) as again:
        assert again.snapshot() == snap
        assert again._live.store.conn.execute("SELECT count(*) FROM commits").fetchone() == (300,)


def test_the_thread_is_woken_again_only_a_step_past_its_last_copy(store_path: Path) -> None:
    """Past the limit the log seldom restarts behind the thread (the writer commits again while
    it copies), so waking it at every commit there made a checkpoint of a few frames per
    commit. Past the limit, the thread is woken once; then again only once the log has grown
    more than a ``STEP``-th of the limit past what it last copied; a restarted log starts
    over."""
    from locimem.store.sqlite.checkpointer import STEP

    memory = ObjectMemory.open(store_path, scope="s", durable=False)
    ck = memory._live.store._checkpointer
    writer = memory._live.store.conn
    ck.close()  # no thread to take the wake: what committed() decides stays visible
    size = [0]
    ck.frames = lambda: size[0]  # type: ignore[method-assign]
    step = ck.limit // STEP

    def woken(frames: int) -> bool:
        ck._wake.clear()
        size[0] = frames
        ck.committed(writer)
        return ck._wake.is_set()

    assert not woken(ck.limit) and woken(ck.limit + 1)
    ck._copied = ck.limit + 1  # the thread copied all it saw
    assert not woken(ck.limit + 1 + step) and woken(ck.limit + 2 + step)
    assert not woken(10) and ck._copied == 0  # the log restarted
    assert woken(ck.limit + 1)
    assert ck.inline == 0
    memory.close()


def test_a_read_only_or_in_memory_store_runs_no_checkpointer(store_path: Path) -> None:
    with ObjectMemory.open(store_path, scope="s") as memory:
        pairs(memory, "cup", 0.0)
    with ObjectMemory.open(store_path, scope="s", read_only=True) as reader:
        assert reader._live.store._checkpointer is None
    with ObjectMemory.open(MEMORY, scope="s") as scratch:
        assert scratch._live.store._checkpointer is None


def _indexes(store: SQLiteStore) -> dict[str, str]:
    return dict(store.conn.execute(
        "SELECT name, sql FROM sqlite_master WHERE type = 'index' AND sql IS NOT NULL"))


def test_bulk_load_into_an_empty_table_builds_its_indexes_after_the_rows(
        store_path: Path) -> None:
    """An empty table is loaded without its secondary indexes, built again at the end: the
    same definitions, holding every row; a load that fails leaves them as they were."""
    store = SQLiteStore(store_path)
    try:
        before = _indexes(store)
        columns = ("scope", "id", "kind", "t", "recorded_at", "actor", "reason", "n_detections")
        store.bulk_load([("commits", columns, [("s", i, "scan", float(i), 1e3 + i, "x", None, 0)
                                                for i in range(1, 50)])])
        assert _indexes(store) == before
        assert store.conn.execute("PRAGMA integrity_check").fetchone() == ("ok",)
        assert store.conn.execute("SELECT count(*) FROM commits INDEXED BY commits_scope "
                                  "WHERE scope = 's'").fetchone() == (49,)

        def failing() -> Iterator[tuple[object, ...]]:
            yield ("s", 1, 1, 1.0, "APPEARED", 1, "cup", "{}")
            raise RuntimeError("the source broke")

        ev = ("scope", "seq", "commit_id", "t", "kind", "object_id", "label", "data")
        with pytest.raises(RuntimeError, match="broke"):
            store.bulk_load([("events", ev, failing())])
        assert _indexes(store) == before
        assert store.conn.execute("SELECT count(*) FROM events").fetchone() == (0,)
    finally:
        store.close()
