"""Every schema version the project has shipped has a small fixture store; the current code
migrates each one (a backup first, one transaction per named migration) and replays it exactly.
"""

from __future__ import annotations

import shutil
import sqlite3
from pathlib import Path

import pytest

from locimem import EventKind, ObjectMemory
from locimem.errors import SchemaVersionError
from locimem.store.sqlite import schema
from locimem.store.sqlite.schema import SCHEMA_VERSION

FIXTURES = Path(__file__).parents[1] / "fixtures"
ALL_MIGRATIONS = [("0001_initial", 1), ("0002_sources_prior_keyframes", 2),
                  ("0003_existence_belief", 3)]


def _copy(tmp_path: Path, name: str) -> Path:
    target = tmp_path / name
    shutil.copyfile(FIXTURES / name, target)
    return target


def _meta(path: Path) -> tuple[str, list[tuple[str, int]], int, int]:
    conn = sqlite3.connect(path)
    try:
        version = conn.execute("SELECT value FROM meta WHERE key = 'schema_version'").fetchone()[0]
        migrations = conn.execute(
            "SELECT name, version FROM migrations ORDER BY version").fetchall()
        n_obs = conn.execute("SELECT count(*) FROM observations").fetchone()[0]
        n_events = conn.execute("SELECT count(*) FROM events").fetchone()[0]
    finally:
        conn.close()
    return version, migrations, n_obs, n_events


def test_the_migrations_are_named_in_order_and_reach_the_current_version() -> None:
    assert [(name, v) for name, v, _ in schema.MIGRATIONS] == ALL_MIGRATIONS
    assert ALL_MIGRATIONS[-1][1] == SCHEMA_VERSION  # a new version adds a fixture and a test


def test_a_v1_store_is_refused_read_only_and_left_byte_identical(tmp_path: Path) -> None:
    path = _copy(tmp_path, "store_v1.loci")
    before = path.read_bytes()
    with pytest.raises(SchemaVersionError, match="open it once writable to migrate"):
        ObjectMemory.open(path, scope="home", read_only=True)
    assert path.read_bytes() == before
    assert [p.name for p in tmp_path.iterdir() if "backup" in p.name] == []


def test_the_v1_fixture_migrates_with_a_backup_and_loses_nothing(tmp_path: Path) -> None:
    path = _copy(tmp_path, "store_v1.loci")
    original = path.read_bytes()
    version, migrations, n_obs, n_events = _meta(path)
    assert version == "1" and migrations == ALL_MIGRATIONS[:1]
    with ObjectMemory.open(path, scope="home") as mem:
        backup = Path(mem._live.store.backup_path)
        assert backup == tmp_path / "store_v1.loci.backup-v1"
        assert mem.snapshot() == mem.rebuild_from_log().snapshot()
        assert [r.name for r in mem.rooms()] == ["hall", "kitchen"]
        assert mem.path_rooms("kitchen", "hall") == ["kitchen", "hall"]
        mug = mem.get(2)
        assert (mug.label, mug.attributes, mug.corrected_label) == ("mug", {"color": "red"},
                                                                    "mug")
        assert (mug.source, mug.label_by) == ("tracker", "alice")  # backfilled from the log
        assert {o.source for o in mem.objects(status=None)} == {"tracker"}
        assert [t.object_id for t in mem.tombstones()] == [3]
        kinds = {a.kind for a in mem.audit()}
        assert kinds == {"scene", "scan", "correction", "forget", "maintenance"}
        assert mem.events(kind=EventKind.FORGOTTEN) == []  # hidden like the object itself
        assert [o.id for o in mem.related(1, "on")] == [2]
    assert _meta(path) == (str(SCHEMA_VERSION), ALL_MIGRATIONS, n_obs, n_events)
    # the backup is the v1 store as it was (same schema, same rows), and still opens as v1
    assert _meta(backup) == ("1", ALL_MIGRATIONS[:1], n_obs, n_events)
    conn = sqlite3.connect(backup)
    assert conn.execute("PRAGMA integrity_check").fetchone() == ("ok",)
    conn.close()
    assert original  # (the fixture itself was copied, never touched)
    # opening again migrates nothing and takes no second backup
    with ObjectMemory.open(path, scope="home") as mem:
        assert mem._live.store.backup_path is None
    assert sorted(p.name for p in tmp_path.iterdir() if "backup" in p.name) == [
        "store_v1.loci.backup-v1"]


def test_the_migrated_v1_fixture_accepts_new_scans(tmp_path: Path) -> None:
    path = _copy(tmp_path, "store_v1.loci")
    with ObjectMemory.open(path, scope="home") as mem:
        before = mem.now
        result = mem.observe(before + 2.0, [])
        assert result.assignments == () and mem.now == before + 2.0
        assert mem.snapshot() == mem.rebuild_from_log().snapshot()
    with ObjectMemory.open(path, scope="home", read_only=True) as mem:
        assert mem.now == before + 2.0


def test_a_failed_migration_rolls_back_and_keeps_the_backup(tmp_path: Path,
                                                           monkeypatch: pytest.MonkeyPatch
                                                           ) -> None:
    path = _copy(tmp_path, "store_v1.loci")
    name, version, migrate = schema.MIGRATIONS[1]

    def half_then_fail(conn: sqlite3.Connection) -> None:
        migrate(conn)  # every statement of the real migration, then a failure
        raise RuntimeError("disk on fire")

    monkeypatch.setattr(schema, "MIGRATIONS", [schema.MIGRATIONS[0], (name, version,
                                                                        half_then_fail)])
    import locimem.store.sqlite.store as sqlite_module

    monkeypatch.setattr(sqlite_module, "MIGRATIONS", schema.MIGRATIONS)
    with pytest.raises(RuntimeError, match="disk on fire"):
        ObjectMemory.open(path, scope="home")
    assert _meta(path)[:2] == ("1", ALL_MIGRATIONS[:1])  # rolled back whole
    conn = sqlite3.connect(path)
    columns = [row[1] for row in conn.execute("PRAGMA table_info(objects)")]
    conn.close()
    assert "source" not in columns
    monkeypatch.undo()
    with ObjectMemory.open(path, scope="home") as mem:  # a second attempt, second backup
        assert Path(mem._live.store.backup_path).name == "store_v1.loci.backup-v1-2"
        assert mem.snapshot() == mem.rebuild_from_log().snapshot()
    assert (tmp_path / "store_v1.loci.backup-v1").exists()


def test_the_v2_fixture_migrates_and_replays_exactly(tmp_path: Path) -> None:
    path = _copy(tmp_path, "store_v2.loci")
    assert _meta(path)[:2] == ("2", ALL_MIGRATIONS[:2])
    with ObjectMemory.open(path, scope="home") as mem:  # migrates; the cache is replayed
        assert Path(mem._live.store.backup_path).name == "store_v2.loci.backup-v2"
        assert not mem._live.store.cache_stale()
        assert mem.snapshot() == mem.rebuild_from_log().snapshot()
        # what the detection probability is learned from came from the log
        assert mem._live._state.objects[5].n_looked_seen > 0
    assert _meta(path)[:2] == ("3", ALL_MIGRATIONS)
    with ObjectMemory.open(path, scope="home", read_only=True) as mem:
        assert mem.snapshot() == mem.rebuild_from_log().snapshot()
        assert [(d["id"], d["kind"], d["status"], d["object"], d.get("live"))
                for d in mem.deltas()] == [(1, "moved", "applied", 2, 4),
                                           (2, "added", "rejected", 5, None)]
        assert mem.prior_map()[2]["center"] == [4.1, 1.0, 0.95]
        assert [(o.id, o.source, o.label_by) for o in mem.objects(status=None)] == [
            (1, "prior:survey", "alice"), (2, "prior:survey", None),
            (3, "prior:survey", None), (5, "head-cam/yolo", None)]
        assert (len(mem.keyframes(3)), len(mem.archived_keyframes(3))) == (2, 1)
        # the mug's frames, seen as #4 until consolidation merged it into #2, stayed with it
        frames = [k.seq for k in mem.keyframes(2)]
        assert len(frames) == 2 and frames == mem.delta(1)["evidence"]["keyframes"]
    with ObjectMemory.open(path, scope="home") as mem:
        assert mem._live.store.backup_path is None


def test_a_new_store_has_no_cache_to_replay(tmp_path: Path) -> None:
    """Creating a store runs every migration; the version-3 one marks a cache to replay only
    in a store that already holds commits."""
    path = tmp_path / "new.loci"
    with ObjectMemory.open(path, scope="home") as mem:
        assert not mem._live.store.cache_stale()
        mem.observe(1.0, [])
    with ObjectMemory.open(path, scope="home") as mem:
        assert not mem._live.store.cache_stale()
