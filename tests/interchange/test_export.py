"""Export and import of a memory directory: byte-identical round trips, the same memory after
import, and every kind of damaged, partial or conflicting input refused with nothing written."""

from __future__ import annotations

import hashlib
import io
import itertools
import json
import shutil
import sqlite3
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from locimem import Camera, Detection, ObjectMemory
from locimem.errors import (
    IntegrityError,
    InvalidInput,
    NotFound,
    SchemaVersionError,
    ScopeError,
    StoreLocked,
)
from locimem.evidence.keyframes import Keyframe
from locimem.interchange.export import (
    FILES,
    FORMAT_VERSION,
    MANIFEST,
    TABLES,
    check_directory,
    export_memory,
    import_memory,
    verify_directory,
)
from locimem.model import Commit, Event, EventKind
from locimem.store.base import RowChanges
from locimem.store.sqlite import SQLiteStore
from locimem.store.sqlite.schema import SCHEMA_VERSION
from locimem.tracker.apply import apply
from tests.helpers import file_tree

FIXTURES = Path(__file__).parents[1] / "fixtures"
CLOCK_START = 1_700_000_000.0


# -- building stores -------------------------------------------------------------------------
def _build(path: Path, scope: str = "home", evidence: bool = True) -> None:
    """A memory that touches every table (and file): a named map epoch (the base), rooms,
    scans with and without a camera, embeddings, a rejected detection, a correction,
    attributes (an anchor), a forget and its suppressed repeat, a lost object, a compaction,
    and prior-map, delta and keyframe rows."""
    ticks = itertools.count(CLOCK_START, 0.5)
    with ObjectMemory.open(path, scope=scope, clock=lambda: next(ticks)) as mem:
        mem.observe(0.0, [], map_epoch="boot-1")  # its SLAM session named: the base epoch
        mem.define_room("kitchen", [(0, 0), (4, 0), (4, 3), (0, 3)])
        mem.define_room("hall", [(4, 0), (6, 0), (6, 3), (4, 3)])
        mem.connect_rooms("kitchen", "hall")
        table = Detection("kitchen table", 0.9, (1.0, 1.0, 0.375), (1.2, 0.8, 0.75))
        cup = Detection("cup", 0.9, (0.8, 1.0, 0.8), (0.08, 0.08, 0.1),
                        feature=np.array([1.0, 0.0, 0.0, 0.0]), track_id=7,
                        orientation=(1.0, 0.0, 0.0, 0.0))
        book = Detection("book", 0.8, (1.2, 1.1, 0.78), (0.2, 0.15, 0.03),
                         feature=np.array([0.0, 1.0, 0.2, 0.0]))
        plant = Detection("plant", 0.85, (5.0, 1.5, 0.3), (0.3, 0.3, 0.6),
                          feature=np.array([0.1, 0.0, 1.0, 0.3]))
        for t in range(0, 20, 2):
            mem.observe(float(t), [table, cup, book, plant,
                                   Detection("mug", 0.02, (3, 2, 1), (0.1,) * 3),
                                   Detection("crème pot", 0.7, (2.5, 2.5, 0.9), (0.1,) * 3)])
        camera = Camera((3.0, 1.0, 1.2), (1.0, 0.0, 0.0, 0.0), fov_deg=90.0, range_m=5.0)
        mem.observe(20.0, [table, cup], camera=camera)
        mem.relabel(2, "mug", actor="alice", reason="it is a mug")
        mem.set_attributes(2, {"color": "red"}, actor="alice")
        mem.set_attributes(1, {"anchor": True, "note": "table à manger"}, actor="alice")
        mem.forget(3, actor="alice", reason="not ours")
        mem.observe(22.0, [table, cup, book])
        for t in range(24, 60, 2):  # the plant is not seen again: it is lost
            mem.observe(float(t), [table, cup])
        mem.compact(older_than_s=10, trail_s=5, actor="maintenance")
        if evidence:
            _append_evidence(mem, float(next(ticks)))


def _append_evidence(mem: ObjectMemory, recorded_at: float) -> None:
    """Prior-map, delta and keyframe records through the store's write path (what the
    evidence code writes, in plausible shapes), including a keyframe of a forgotten object."""
    state = mem._live._state
    commit = Commit(id=state.next_commit, kind="correction", t=float(state.now or 0.0),
                    recorded_at=recorded_at, actor="mapper", reason="prior map",
                    n_detections=0)
    entry = {"label": "kitchen table", "center": [1.0, 1.0, 0.375], "size": [1.2, 0.8, 0.75],
             "source": "prior:flat", "attributes": {"anchor": True}, "orientation": None,
             "confidence": 1.0, "prior_id": "T-1"}
    delta = {"id": 1, "kind": "moved", "object": 2, "label": "mug",
             "prior": {"center": [0.7, 1.0, 0.8], "size": [0.08, 0.08, 0.1]},
             "observed": {"center": [1.7, 1.0, 0.8], "size": [0.08, 0.08, 0.1]},
             "status": "pending", "opened_at": 20.0,
             "evidence": {"n": 1, "first_t": 20.0, "last_t": 20.0, "keyframes": [7]},
             "history": [{"t": 20.0, "status": "pending", "by": "evidence", "reason": None}]}
    kept = [Keyframe(t=20.0, commit=1, seq=7, position=(3.0, 1.0, 1.2),
                     quaternion=(1.0, 0.0, 0.0, 0.0), coverage=1.0, novelty=1.0, depth=None,
                     score=0.75, intrinsics=(40.0, 40.0, 16.0, 12.0, 32, 24)).to_dict()]
    seq = itertools.count(state.next_seq)
    records = [
        commit,
        Event(next(seq), commit.id, commit.t, EventKind.PRIOR, 1, "kitchen table",
              {"entry": entry}),
        Event(next(seq), commit.id, commit.t, EventKind.DELTA, 2, "mug", delta),
        Event(next(seq), commit.id, commit.t, EventKind.KEYFRAME, 2, "mug", {"kept": kept}),
        Event(next(seq), commit.id, commit.t, EventKind.KEYFRAME, 3, "book", {"kept": kept}),
    ]
    for record in records:
        apply(state, record, mem.config.lost_after_s)
    mem._live.store.append(mem.scope, records,
                     RowChanges(prior={1: entry}, deltas={1: delta}, keyframes={2: kept, 3: kept}))


@pytest.fixture(scope="module")
def source(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("source") / "home.loci"
    _build(path)
    return path


@pytest.fixture(scope="module")
def exported(source: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    directory = tmp_path_factory.mktemp("exports") / "home"
    export_memory(source, directory, scope="home", scene="flat 3b")
    return directory


def _listing(directory: Path) -> list[str]:
    return sorted(p.name for p in directory.iterdir())


def _rows(path: Path, scope: str) -> dict[str, list[tuple[Any, ...]]]:
    """Every row of a scope, every column but the scope, as stored (text and bytes)."""
    conn = sqlite3.connect(path)
    try:
        return {t.name: conn.execute(f"SELECT {', '.join(t.columns)} FROM {t.name} "
                                     f"WHERE scope = ? ORDER BY {t.key}", (scope,)).fetchall()
                for t in TABLES}
    finally:
        conn.close()


def _copy_dir(directory: Path, tmp_path: Path) -> Path:
    copy = tmp_path / "copy"
    shutil.copytree(directory, copy)
    return copy


def _rewrite_manifest(directory: Path, **changes: Any) -> None:
    """Edit the manifest the way a newer locimem would write it (its checksum recomputed)."""
    from locimem.interchange.export import _document, _manifest_digest

    doc = json.loads((directory / MANIFEST).read_text())
    doc.update(changes)
    doc["manifest_sha256"] = _manifest_digest(doc)
    (directory / MANIFEST).write_text(_document(doc))


# -- the layout ------------------------------------------------------------------------------
def test_the_table_specs_name_every_column_of_the_schema(tmp_path: Path) -> None:
    store = SQLiteStore(tmp_path / "new.loci")
    try:
        for table in TABLES:
            columns = [r[1] for r in store.conn.execute(f"PRAGMA table_info({table.name})")]
            assert [c for c in columns if c != "scope"] == list(table.columns), table.name
    finally:
        store.close()


def test_the_directory_holds_every_file_and_a_manifest_that_lists_them(
        exported: Path, source: Path) -> None:
    assert sorted(file_tree(exported)) == sorted([MANIFEST, *FILES])
    manifest = json.loads((exported / MANIFEST).read_text())
    assert sorted(manifest["files"]) == list(FILES)
    assert (manifest["format"], manifest["format_version"], manifest["schema_version"],
            manifest["scope"], manifest["scene"]) == ("locimem-memory", 2, SCHEMA_VERSION, "home",
                                                       "flat 3b")
    assert manifest["map_frame"] == {"name": "map", "units": "m", "up": "z",
                                     "quaternion": "wxyz", "epoch": "boot-1"}
    assert manifest["counts"]["epochs"] == 1
    assert (exported / "state/epochs.jsonl").read_text() == (
        '{"inliers":0,"name":"boot-1","residual_m":null,"scope":null,"since":0.0,'
        '"source":null,"status":"base","transform":null,"yaw_deg":null}\n')
    conn = sqlite3.connect(source)
    created = conn.execute("SELECT value FROM meta WHERE key = 'created_at'").fetchone()[0]
    last = conn.execute("SELECT id, t FROM commits ORDER BY id DESC LIMIT 1").fetchone()
    n_obs = conn.execute("SELECT count(*) FROM observations").fetchone()[0]
    conn.close()
    assert manifest["created_at"] == float(created)  # the store's time, not the export's
    assert manifest["memory_version"] == {"commit": last[0], "t": last[1]}
    assert manifest["counts"]["observations"] == n_obs
    assert manifest["counts"]["prior_map"] == manifest["counts"]["deltas"] == 1
    assert manifest["counts"]["keyframes"] == 2
    assert manifest["ids"]["commit"] == [1, last[0]]
    info = verify_directory(exported)
    assert info.scope == "home" and info.counts == manifest["counts"]
    for name, entry in info.files.items():
        assert (exported / name).stat().st_size == entry.bytes
    lines = (exported / "log/commits.jsonl").read_bytes().split(b"\n")
    assert lines[-1] == b"" and len(lines) - 1 == manifest["counts"]["commits"]
    assert all(b"\"scope\"" not in line for line in lines)  # the manifest names the scope


def test_embeddings_are_npy_files_as_numpy_saves_them_and_lines_point_into_them(
        exported: Path, source: Path) -> None:
    for name, dtype in (("embeddings/observations.npy", np.float32),
                        ("embeddings/objects.npy", np.float64)):
        data = (exported / name).read_bytes()
        matrix = np.load(io.BytesIO(data), allow_pickle=False)
        assert matrix.dtype == dtype and matrix.ndim == 2
        again = io.BytesIO()
        np.save(again, matrix)
        assert again.getvalue() == data
    matrix = np.load(exported / "embeddings/observations.npy")
    conn = sqlite3.connect(source)
    blobs = conn.execute("SELECT seq, feature FROM observations WHERE feature IS NOT NULL "
                         "ORDER BY seq").fetchall()
    conn.close()
    assert matrix.shape == (len(blobs), 4)
    lines = [json.loads(x) for x in (exported / "log/observations.jsonl").open()]
    by_seq = {line["seq"]: line["feature"] for line in lines}
    for i, (seq, blob) in enumerate(blobs):
        assert by_seq[seq] == i
        assert matrix[i].tobytes() == blob
    assert sum(f is None for f in by_seq.values()) == len(lines) - len(blobs)


def test_memory_json_is_the_readable_scene_graph(exported: Path) -> None:
    doc = json.loads((exported / "memory.json").read_text())
    objects = {o["id"]: o for o in doc["objects"]}
    assert sorted(objects) == [1, 2, 4, 5]  # 3 was forgotten: left out
    assert objects[5]["label"] == "crème pot" and objects[1]["attributes"]["note"] == \
        "table à manger"
    table, mug, plant = objects[1], objects[2], objects[4]
    assert (table["level"], mug["level"]) == ("furniture", "item")
    assert (mug["label"], mug["corrected_label"], mug["label_by"]) == ("mug", "mug", "alice")
    assert mug["attributes"] == {"color": "red"} and mug["orientation"] == [1.0, 0.0, 0.0, 0.0]
    assert mug["parents"] == [{"id": 1, "relation": "on"}]
    assert table["children"] == [{"id": 2, "relation": "on"}] and table["parents"] == []
    assert (table["room"], mug["room"], plant["room"]) == ("kitchen", "kitchen", "hall")
    assert plant["status"] == "lost" and plant["lost_at"] is not None
    assert table["status"] == "confirmed" and 0 < table["confidence"] <= 1
    assert {"subject": 2, "relation": "on", "object": 1, "source": "geometry"}.items() <= \
        next(r for r in doc["relations"] if r["relation"] == "on").items()
    rooms = {r["name"]: r for r in doc["rooms"]}
    assert rooms["kitchen"]["polygon"] == [[0.0, 0.0], [4.0, 0.0], [4.0, 3.0], [0.0, 3.0]]
    assert rooms["kitchen"]["connected"] == ["hall"]
    assert doc["anchors"] == [1]
    assert [p["id"] for p in doc["prior_map"]] == [1]
    assert doc["prior_map"][0]["data"]["prior_id"] == "T-1"
    assert [(d["id"], d["object_id"], d["status"]) for d in doc["deltas"]] == [(1, 2, "pending")]
    assert [k["object_id"] for k in doc["keyframes"]] == [2]  # not the forgotten book's
    kept = [json.loads(x)["object_id"] for x in (exported / "state/keyframes.jsonl").open()]
    assert kept == [2, 3]  # ... which the state keeps, like the store does
    text = (exported / "memory.json").read_text()
    assert text.count("\n") > len(doc["objects"]) + len(doc["relations"])  # a line an entry


# -- round trips -----------------------------------------------------------------------------
def test_export_import_export_is_byte_identical(exported: Path, tmp_path: Path) -> None:
    store = tmp_path / "copy.loci"
    report = import_memory(exported, store)
    assert report.created and report.scope == "home"
    assert report.counts == verify_directory(exported).counts
    export_memory(store, tmp_path / "again", scope="home", scene="flat 3b")
    assert file_tree(tmp_path / "again") == file_tree(exported)


def test_the_imported_store_is_the_same_memory(exported: Path, source: Path,
                                               tmp_path: Path) -> None:
    store = tmp_path / "copy.loci"
    import_memory(exported, store)
    assert _rows(store, "home") == _rows(source, "home")  # every column, byte for byte
    with ObjectMemory.open(source, scope="home", read_only=True) as a, \
            ObjectMemory.open(store, scope="home", read_only=True) as b:
        assert b.snapshot() == a.snapshot()
        assert b.snapshot() == b.rebuild_from_log().snapshot()
        assert b._live.store.counters() == a._live.store.counters()
        assert b.audit() == a.audit() and b.events() == a.events()
        assert b.rejections() == a.rejections() and b.tombstones() == a.tombstones()
        for obj in a.objects():
            assert [_comparable(r) for r in b.history(obj.id)] == \
                [_comparable(r) for r in a.history(obj.id)]
            assert b.relations(obj.id) == a.relations(obj.id)
        assert b.describe(2) == a.describe(2)


def test_the_imported_memory_goes_on_exactly_like_the_original(tmp_path: Path) -> None:
    original = tmp_path / "original.loci"
    _build(original, evidence=False)  # (made-up deltas would upset the delta detector)
    export_memory(original, tmp_path / "d", scope="home")
    import_memory(tmp_path / "d", tmp_path / "copy.loci")
    results = []
    for path in (original, tmp_path / "copy.loci"):
        with ObjectMemory.open(path, scope="home", clock=lambda: 0.0) as mem:
            for t in (60.0, 62.0):
                results.append(mem.observe(t, [
                    Detection("cup", 0.9, (0.81, 1.0, 0.8), (0.08, 0.08, 0.1),
                              feature=np.array([0.9, 0.1, 0.0, 0.0])),
                    Detection("plant", 0.8, (5.0, 1.5, 0.3), (0.3, 0.3, 0.6))]))
            results.append(mem.snapshot())
    assert results[:3] == results[3:]


def _comparable(record: Any) -> Any:
    feature = getattr(record, "feature", None)
    return (record, None if feature is None else feature.tobytes())


def test_a_new_store_takes_the_exported_creation_time(exported: Path, tmp_path: Path) -> None:
    import_memory(exported, tmp_path / "copy.loci")
    conn = sqlite3.connect(tmp_path / "copy.loci")
    created = conn.execute("SELECT value FROM meta WHERE key = 'created_at'").fetchone()[0]
    conn.close()
    assert float(created) == json.loads((exported / MANIFEST).read_text())["created_at"]


def test_import_under_another_scope(exported: Path, source: Path, tmp_path: Path) -> None:
    store = tmp_path / "lab.loci"
    report = import_memory(exported, store, scope="lab")
    assert report.scope == "lab"
    with ObjectMemory.open(store, scope="lab", read_only=True) as b, \
            ObjectMemory.open(source, scope="home", read_only=True) as a:
        assert b.snapshot() == a.snapshot() == b.rebuild_from_log().snapshot()
        assert b._live.store.scopes() == ["lab"]
    export_memory(store, tmp_path / "lab", scope="lab", scene="flat 3b")
    again, first = file_tree(tmp_path / "lab"), file_tree(exported)
    assert {k for k in first if again[k] != first[k]} == {MANIFEST, "memory.json"}  # the name


def test_import_beside_another_scope_whose_ids_do_not_collide(exported: Path,
                                                              tmp_path: Path) -> None:
    both = tmp_path / "both.loci"
    import_memory(exported, both)
    with ObjectMemory.open(both, scope="garage", clock=lambda: CLOCK_START) as mem:
        for t in range(3):
            mem.observe(float(t), [Detection("bike", 0.9, (9.0, 9.0, 0.5), (1.8, 0.6, 1.0))])
    export_memory(both, tmp_path / "garage", scope="garage")
    target = tmp_path / "target.loci"
    import_memory(exported, target)
    report = import_memory(tmp_path / "garage", target)
    assert not report.created and report.scope == "garage"
    assert _rows(target, "garage") == _rows(both, "garage")
    assert _rows(target, "home") == _rows(both, "home")


def test_scopes_written_interleaved_in_one_file_are_put_back_together(tmp_path: Path) -> None:
    shared = tmp_path / "shared.loci"
    ticks = itertools.count(CLOCK_START)
    a = ObjectMemory.open(shared, scope="a", clock=lambda: next(ticks))
    for t in range(8):  # a and b take turns: their ids interleave in the file
        a.observe(float(t), [Detection("cup", 0.9, (1.0, 0.0, 0.8), (0.1,) * 3)])
        a.close()
        a = ObjectMemory.open(shared, scope="b", clock=lambda: next(ticks))
        a.observe(float(t), [Detection("box", 0.9, (5.0, 0.0, 0.3), (0.4,) * 3)])
        a.close()
        a = ObjectMemory.open(shared, scope="a", clock=lambda: next(ticks))
    a.close()
    for scope in ("a", "b"):
        export_memory(shared, tmp_path / scope, scope=scope)
    target = tmp_path / "target.loci"
    import_memory(tmp_path / "a", target)
    import_memory(tmp_path / "b", target)  # overlapping ranges, no id in common
    for scope in ("a", "b"):
        assert _rows(target, scope) == _rows(shared, scope)
    before = target.read_bytes()
    with pytest.raises(ScopeError, match=r"collide with rows already in .*commit ids"):
        import_memory(tmp_path / "a", target, scope="c")
    assert target.read_bytes() == before


def test_the_v1_fixture_exports_from_a_migrated_copy_and_is_left_alone(tmp_path: Path) -> None:
    path = tmp_path / "store_v1.loci"
    shutil.copyfile(FIXTURES / "store_v1.loci", path)
    before = path.read_bytes()
    report = export_memory(path, tmp_path / "v1", scope="home")
    assert report.migrated_from == 1
    assert path.read_bytes() == before
    assert not [p for p in tmp_path.iterdir() if "backup" in p.name or "export" in p.name]
    import_memory(tmp_path / "v1", tmp_path / "imported.loci")
    migrated = tmp_path / "migrated.loci"
    shutil.copyfile(FIXTURES / "store_v1.loci", migrated)
    with ObjectMemory.open(migrated, scope="home") as a, \
            ObjectMemory.open(tmp_path / "imported.loci", scope="home", read_only=True) as b:
        assert b.snapshot() == a.snapshot() == b.rebuild_from_log().snapshot()
        assert b.get(2).label_by == "alice"
    assert _rows(tmp_path / "imported.loci", "home") == _rows(migrated, "home")
    export_memory(tmp_path / "imported.loci", tmp_path / "again", scope="home")
    assert file_tree(tmp_path / "again") == file_tree(tmp_path / "v1")


def test_the_v2_fixture_round_trips_with_its_prior_map_deltas_and_keyframes(
        tmp_path: Path) -> None:
    path = tmp_path / "store_v2.loci"
    shutil.copyfile(FIXTURES / "store_v2.loci", path)
    report = export_memory(path, tmp_path / "v2", scope="home", scene="survey")
    assert report.migrated_from == 2
    counts = report.counts
    assert counts["prior_map"] > 0 and counts["deltas"] > 0 and counts["keyframes"] > 0
    import_memory(tmp_path / "v2", tmp_path / "copy.loci")
    ObjectMemory.open(path, scope="home").close()  # migrated like the exported copy was
    assert _rows(tmp_path / "copy.loci", "home") == _rows(path, "home")
    with ObjectMemory.open(path, scope="home", read_only=True) as a, \
            ObjectMemory.open(tmp_path / "copy.loci", scope="home", read_only=True) as b:
        assert b.snapshot() == a.snapshot() == b.rebuild_from_log().snapshot()
    export_memory(tmp_path / "copy.loci", tmp_path / "again", scope="home", scene="survey")
    assert file_tree(tmp_path / "again") == file_tree(tmp_path / "v2")
    doc = json.loads((tmp_path / "v2" / "memory.json").read_text())
    assert {o["source"] for o in doc["objects"]} >= {"prior:survey", "head-cam/yolo"}
    assert {d["status"] for d in doc["deltas"]} >= {"rejected"}


def test_import_into_an_older_store_migrates_it_first_with_a_backup(tmp_path: Path) -> None:
    grown = tmp_path / "grown.loci"  # the v1 fixture with a second scope added after it
    shutil.copyfile(FIXTURES / "store_v1.loci", grown)
    with ObjectMemory.open(grown, scope="guest", clock=lambda: CLOCK_START) as mem:
        mem.observe(100.0, [Detection("suitcase", 0.9, (2.0, 2.0, 0.3), (0.5, 0.3, 0.6))])
    export_memory(grown, tmp_path / "guest", scope="guest")
    old = tmp_path / "old.loci"
    shutil.copyfile(FIXTURES / "store_v1.loci", old)
    before = old.read_bytes()
    with pytest.raises(ScopeError, match="already has data for scope 'home'"):
        import_memory(tmp_path / "guest", old, scope="home")
    assert old.read_bytes() == before  # refused before anything: not even migrated
    assert not [p for p in tmp_path.iterdir() if p.name.startswith("old.loci.backup")]
    report = import_memory(tmp_path / "guest", old)
    assert (report.migrated_from, report.backup_path) == (1, f"{old}.backup-v1")
    assert _rows(old, "guest") == _rows(grown, "guest")
    assert _rows(old, "home") == _rows(grown, "home")


def test_a_writer_in_another_connection_cannot_tear_an_export(tmp_path: Path) -> None:
    path = tmp_path / "live.loci"
    _build(path, evidence=False)
    export_memory(path, tmp_path / "before", scope="home")
    writer = ObjectMemory.open(path, scope="home", clock=lambda: CLOCK_START + 999)

    def progress(items: Any, total: int | None = None) -> Iterator[Any]:
        for n, item in enumerate(items):
            if n == 0:  # mid-export: the writer commits a scan
                writer.observe(70.0, [Detection("cup", 0.9, (0.8, 1.0, 0.8), (0.08,) * 3)])
            yield item

    try:
        export_memory(path, tmp_path / "during", scope="home", progress=progress)
    finally:
        writer.close()
    assert file_tree(tmp_path / "during") == file_tree(tmp_path / "before")
    export_memory(path, tmp_path / "after", scope="home")
    assert file_tree(tmp_path / "after") != file_tree(tmp_path / "before")


def test_progress_is_drawn_over_the_whole_export_and_import(exported: Path,
                                                           tmp_path: Path) -> None:
    calls: list[tuple[int, int]] = []

    def progress(items: Any, total: int | None = None) -> Iterator[Any]:
        n = 0
        for n, item in enumerate(items, start=1):  # noqa: B007
            yield item
        calls.append((n, total or 0))

    import_memory(exported, tmp_path / "p.loci", progress=progress)
    export_memory(tmp_path / "p.loci", tmp_path / "p", scope="home", progress=progress)
    assert len(calls) == 3 and all(n == total > 0 for n, total in calls)


# -- refusals --------------------------------------------------------------------------------
def _refused(directory: Path, tmp_path: Path, error: type[Exception], match: str) -> None:
    """Importing ``directory`` into a new store is refused, and nothing is left behind."""
    before = _listing(tmp_path)
    with pytest.raises(error, match=match):
        import_memory(directory, tmp_path / "new.loci")
    assert _listing(tmp_path) == before
    assert not (tmp_path / "new.loci").exists()


@pytest.mark.parametrize("name", [MANIFEST, *FILES])
def test_one_changed_byte_in_any_file_is_refused(name: str, exported: Path,
                                                 tmp_path: Path) -> None:
    copy = _copy_dir(exported, tmp_path)
    data = bytearray((copy / name).read_bytes())
    data[len(data) // 2] ^= 0x01
    (copy / name).write_bytes(bytes(data))
    which = "manifest.json was edited or damaged" if name == MANIFEST else \
        f"{name} was changed: its SHA-256 differs"
    _refused(copy, tmp_path, IntegrityError, which)
    assert check_directory(copy) != [] and check_directory(exported) == []


@pytest.mark.parametrize("name", ["log/events.jsonl", "embeddings/objects.npy", "memory.json"])
def test_a_deleted_file_is_refused(name: str, exported: Path, tmp_path: Path) -> None:
    copy = _copy_dir(exported, tmp_path)
    (copy / name).unlink()
    _refused(copy, tmp_path, IntegrityError, f"incomplete: {name} is missing")


def test_a_missing_manifest_is_refused(exported: Path, tmp_path: Path) -> None:
    copy = _copy_dir(exported, tmp_path)
    (copy / MANIFEST).unlink()
    _refused(copy, tmp_path, IntegrityError, "manifest.json is missing")


def test_a_truncated_file_is_refused(exported: Path, tmp_path: Path) -> None:
    copy = _copy_dir(exported, tmp_path)
    data = (copy / "log/observations.jsonl").read_bytes()
    (copy / "log/observations.jsonl").write_bytes(data[: len(data) - 100])
    _refused(copy, tmp_path, IntegrityError,
             rf"log/observations.jsonl has {len(data) - 100} bytes, the manifest says "
             rf"{len(data)} \(truncated\)")


@pytest.mark.parametrize("name", ["notes.txt", "log/extra.jsonl", "tmp/x"])
def test_an_extra_file_is_refused(name: str, exported: Path, tmp_path: Path) -> None:
    copy = _copy_dir(exported, tmp_path)
    (copy / name).parent.mkdir(parents=True, exist_ok=True)
    (copy / name).write_text("hello\n")
    _refused(copy, tmp_path, IntegrityError, "is not part of a memory directory")


@pytest.mark.parametrize("edit", [
    lambda text: text.replace('"scope":"home"', '"scope":"hone"'),
    lambda text: text.replace('"observations":', '"observations":1'),
    lambda text: text.replace('"created_at":', '"created_at":1'),
])
def test_an_edited_manifest_is_refused(edit: Any, exported: Path, tmp_path: Path) -> None:
    copy = _copy_dir(exported, tmp_path)
    text = (copy / MANIFEST).read_text()
    assert edit(text) != text
    (copy / MANIFEST).write_text(edit(text))
    _refused(copy, tmp_path, IntegrityError, "manifest.json was edited or damaged")


def test_a_manifest_that_is_not_json_is_refused(exported: Path, tmp_path: Path) -> None:
    copy = _copy_dir(exported, tmp_path)
    (copy / MANIFEST).write_text("{not json")
    _refused(copy, tmp_path, IntegrityError, "manifest.json is not valid JSON")


def test_a_newer_schema_or_format_version_is_refused(exported: Path, tmp_path: Path) -> None:
    copy = _copy_dir(exported, tmp_path)
    _rewrite_manifest(copy, schema_version=SCHEMA_VERSION + 1)
    _refused(copy, tmp_path, SchemaVersionError,
             f"store schema version {SCHEMA_VERSION + 1}, newer than this")
    _rewrite_manifest(copy, schema_version=SCHEMA_VERSION, format_version=FORMAT_VERSION + 1)
    _refused(copy, tmp_path, SchemaVersionError,
             f"format version {FORMAT_VERSION + 1}, newer than this locimem reads "
             rf"\({FORMAT_VERSION}\)")


def test_rows_that_disagree_with_a_consistent_manifest_are_refused(exported: Path,
                                                                  tmp_path: Path) -> None:
    """A directory whose checksums were recomputed after an edit still has to make sense."""
    copy = _copy_dir(exported, tmp_path)
    lines = (copy / "log/events.jsonl").read_bytes().split(b"\n")
    lines[1], lines[2] = lines[2], lines[1]
    (copy / "log/events.jsonl").write_bytes(b"\n".join(lines))
    doc = json.loads((copy / MANIFEST).read_text())
    data = (copy / "log/events.jsonl").read_bytes()
    doc["files"]["log/events.jsonl"] = {"sha256": hashlib.sha256(data).hexdigest(),
                                        "bytes": len(data)}
    _rewrite_manifest(copy, files=doc["files"])
    _refused(copy, tmp_path, IntegrityError, r"log/events.jsonl line 3: seq \d+ is not after")


def test_check_directory_lists_every_problem(exported: Path, tmp_path: Path) -> None:
    copy = _copy_dir(exported, tmp_path)
    (copy / "state/tombstones.jsonl").unlink()
    (copy / "extra.txt").write_text("x")
    with open(copy / "log/commits.jsonl", "ab") as f:
        f.write(b"{}\n")
    problems = check_directory(copy)
    assert len(problems) == 3
    assert any(p.startswith("state/tombstones.jsonl is missing") for p in problems)
    assert any(p.startswith("extra.txt is not part") for p in problems)
    assert any(p.startswith("log/commits.jsonl has") for p in problems)
    with pytest.raises(IntegrityError, match=r"\(2 more problems\)"):
        verify_directory(copy)
    with pytest.raises(NotFound, match="no memory directory"):
        verify_directory(tmp_path / "nowhere")


def test_an_existing_scope_is_refused_and_the_store_is_unchanged(exported: Path,
                                                                 tmp_path: Path) -> None:
    store = tmp_path / "copy.loci"
    import_memory(exported, store)
    before = store.read_bytes()
    with pytest.raises(ScopeError, match="already has data for scope 'home'; import under "
                                         "another name"):
        import_memory(exported, store)
    assert store.read_bytes() == before


def test_colliding_ids_are_refused_and_the_store_is_unchanged(exported: Path, source: Path,
                                                              tmp_path: Path) -> None:
    store = tmp_path / "copy.loci"
    shutil.copyfile(source, store)
    before = store.read_bytes()
    with pytest.raises(ScopeError, match=r"collide with rows already in .* import into a new "
                                         r"store"):
        import_memory(exported, store, scope="twin")
    assert store.read_bytes() == before


def test_a_store_open_for_writing_or_newer_is_refused(exported: Path, tmp_path: Path) -> None:
    store = tmp_path / "busy.loci"
    with ObjectMemory.open(store, scope="other"), pytest.raises(StoreLocked):
        import_memory(exported, store)
    newer = tmp_path / "newer.loci"
    shutil.copyfile(store, newer)
    conn = sqlite3.connect(newer)
    conn.execute("UPDATE meta SET value = ? WHERE key = 'schema_version'",
                 (str(SCHEMA_VERSION + 1),))
    conn.commit()
    conn.close()
    with pytest.raises(SchemaVersionError, match=f"schema version {SCHEMA_VERSION + 1}"):
        import_memory(exported, newer)


def test_export_refuses_what_it_cannot_do(source: Path, tmp_path: Path) -> None:
    (tmp_path / "full").mkdir()
    (tmp_path / "full" / "x").write_text("x")
    with pytest.raises(InvalidInput, match="exists and is not empty"):
        export_memory(source, tmp_path / "full", scope="home")
    with pytest.raises(NotFound, match=r"no scope 'attic' .*scopes: 'home'"):
        export_memory(source, tmp_path / "d", scope="attic")
    with pytest.raises(NotFound, match="no store at"):
        export_memory(tmp_path / "missing.loci", tmp_path / "d", scope="home")
    with pytest.raises(ScopeError):
        export_memory(source, tmp_path / "d", scope="../up")
    assert _listing(tmp_path) == ["full"]  # no partial directory left behind
    (tmp_path / "empty").mkdir()
    export_memory(source, tmp_path / "empty", scope="home")  # an empty directory will do
    assert check_directory(tmp_path / "empty") == []


def test_the_interchange_benchmark_runs(tmp_path: Path) -> None:
    from locimem.bench.interchange import run

    out = io.StringIO()
    figures = run(200, 3_000, feature_dim=8, out=out, workdir=tmp_path)
    assert figures["round_trip_identical"] and figures["n_observations"] == 3_000
    assert "| export |" in out.getvalue() and "byte-identical: yes" in out.getvalue()
