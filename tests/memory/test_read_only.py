"""Read-only open: every mutator refuses with ReadOnly and a clear message, and the store's
files are byte-for-byte unchanged; reads, as-of views and dry-run compaction still work."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from locimem import ObjectMemory, TrackerConfig
from locimem.errors import ReadOnly
from tests.helpers import det

CONFIG = TrackerConfig(promote_after=2)


def _fill(path: Path) -> None:
    with ObjectMemory.open(path, scope="ro", config=CONFIG) as memory:
        for t in range(5):
            memory.observe(float(t), [det("cup", 1.0, 1.0), det("book", 3.0, 3.0),
                                      det("dust", 2.0, 2.0, conf=0.01)])
        memory.relabel(1, "vase", t=5.0)
        memory.observe(6.0, [det("plate", 5.0, 5.0)])
        memory.forget(3, t=6.0)


def _files(directory: Path) -> dict[str, bytes]:
    """The bytes of every file, except SQLite's shared-memory index (``-shm``), which any
    reader of a WAL database maps; a reader may also leave an empty ``-wal`` behind."""
    out = {}
    for p in sorted(directory.iterdir()):
        if p.name.endswith("-shm"):
            continue
        data = p.read_bytes()
        if p.name.endswith("-wal") and data == b"":
            continue
        out[p.name] = data
    return out


MUTATORS: dict[str, tuple[Callable[[ObjectMemory], Any], str]] = {
    "observe": (lambda m: m.observe(10.0, [det("cup", 1.0, 1.0)]), "observe"),
    "observe-empty": (lambda m: m.observe(10.0, []), "observe"),
    "observe-bad-time": (lambda m: m.observe(0.0, []), "observe"),
    "relabel": (lambda m: m.relabel(1, "jug", actor="alice", reason="r"), "relabel"),
    "relabel-unknown-id": (lambda m: m.relabel(999, "jug"), "relabel"),
    "move": (lambda m: m.move(1, (2.0, 2.0, 0.9)), "move"),
    "move-other-id": (lambda m: m.move(3, (2.0, 2.0, 0.9)), "move"),
    "set_attributes": (lambda m: m.set_attributes(1, {"color": "red"}), "set_attributes"),
    "set_attributes-remove": (lambda m: m.set_attributes(1, remove=["color"]),
                              "set_attributes"),
    "forget": (lambda m: m.forget(1, reason="privacy"), "forget"),
    "forget-unknown-id": (lambda m: m.forget(999), "forget"),
    "compact": (lambda m: m.compact(older_than_s=0.0), "compact"),
    "compact-explicit": (lambda m: m.compact(older_than_s=0.0, trail_s=1.0, dry_run=False),
                         "compact"),
}


@pytest.mark.parametrize("name", list(MUTATORS))
def test_every_mutator_refuses_and_writes_nothing(tmp_path: Path, name: str) -> None:
    path = tmp_path / "ro.loci"
    _fill(path)
    before = _files(tmp_path)
    assert sorted(before) == ["ro.loci", "ro.loci-writer"]
    call, what = MUTATORS[name]
    with ObjectMemory.open(path, scope="ro", config=CONFIG, read_only=True) as reader:
        assert reader.read_only
        snap = reader.snapshot()
        with pytest.raises(ReadOnly, match=rf"^{what}\(\) needs a writable memory; this one "
                                           r"was opened read-only$"):
            call(reader)
        assert reader.snapshot() == snap
        assert reader.get(1).label == "vase"
    assert _files(tmp_path) == before


def test_reads_views_and_dry_runs_work_read_only(tmp_path: Path) -> None:
    path = tmp_path / "ro.loci"
    _fill(path)
    with ObjectMemory.open(path, scope="ro", config=CONFIG) as writer:
        expected = (writer.snapshot(), writer.events(), writer.audit(), writer.history(1),
                    writer.rejections(), writer.tombstones(), writer.as_of(2.0).snapshot())
        dry = writer.compact(older_than_s=0.0, dry_run=True)
    before = _files(tmp_path)
    with ObjectMemory.open(path, scope="ro", config=CONFIG, read_only=True) as reader:
        got = (reader.snapshot(), reader.events(), reader.audit(), reader.history(1),
               reader.rejections(), reader.tombstones(), reader.as_of(2.0).snapshot())
        assert got == expected
        assert reader.snapshot() == reader.rebuild_from_log().snapshot()
        report = reader.compact(older_than_s=0.0, dry_run=True)
        assert report == dry
        assert report.dry_run and report.examined == 16 and report.removed > 0
        assert reader.recall("vase").object_id == 1
    assert _files(tmp_path) == before


def test_read_only_beside_a_live_writer(tmp_path: Path) -> None:
    path = tmp_path / "ro.loci"
    _fill(path)
    with ObjectMemory.open(path, scope="ro", config=CONFIG) as writer:
        with ObjectMemory.open(path, scope="ro", config=CONFIG, read_only=True) as reader:
            conn = writer._live.store.conn
            rows = conn.execute("SELECT count(*) FROM commits").fetchone()
            for call, what in MUTATORS.values():
                with pytest.raises(ReadOnly, match=rf"^{what}\(\) needs a writable memory"):
                    call(reader)
            assert conn.execute("SELECT count(*) FROM commits").fetchone() == rows
        # the writer is unaffected by the refused reader
        assert writer.observe(10.0, [det("cup", 1.0, 1.0)]).assignments == (1,)
