"""Every schema version the project has shipped has a small fixture store, and the current code
opens each one and replays it exactly. (Version 1 is the first; later versions add their
migration tests here.)"""

from __future__ import annotations

import shutil
import sqlite3
from pathlib import Path

from locimem import EventKind, ObjectMemory
from locimem.store.schema import SCHEMA_VERSION

FIXTURES = Path(__file__).parent / "fixtures"


def _copy(tmp_path: Path, name: str) -> Path:
    target = tmp_path / name
    shutil.copyfile(FIXTURES / name, target)
    return target


def test_the_v1_fixture_is_schema_version_1_and_current_code_reads_it(tmp_path: Path) -> None:
    path = _copy(tmp_path, "store_v1.loci")
    conn = sqlite3.connect(path)
    version = conn.execute("SELECT value FROM meta WHERE key = 'schema_version'").fetchone()[0]
    migrations = conn.execute("SELECT name, version FROM migrations").fetchall()
    conn.close()
    assert version == "1" and migrations == [("0001_initial", 1)]
    assert SCHEMA_VERSION == 1  # a new version must add a migration test from this fixture
    with ObjectMemory.open(path, scope="home", read_only=True) as mem:
        assert mem.snapshot() == mem.rebuild_from_log().snapshot()
        assert [r.name for r in mem.rooms()] == ["hall", "kitchen"]
        assert mem.path_rooms("kitchen", "hall") == ["kitchen", "hall"]
        mug = mem.get(2)
        assert (mug.label, mug.attributes, mug.corrected_label) == ("mug", {"color": "red"},
                                                                    "mug")
        assert [t.object_id for t in mem.tombstones()] == [3]
        kinds = {a.kind for a in mem.audit()}
        assert kinds == {"scene", "scan", "correction", "forget", "maintenance"}
        assert mem.events(kind=EventKind.FORGOTTEN) == []  # hidden like the object itself
        assert [o.id for o in mem.related(1, "on")] == [2]


def test_the_v1_fixture_accepts_new_scans(tmp_path: Path) -> None:
    path = _copy(tmp_path, "store_v1.loci")
    with ObjectMemory.open(path, scope="home") as mem:
        before = mem.now
        result = mem.observe(before + 2.0, [])
        assert result.assignments == () and mem.now == before + 2.0
        assert mem.snapshot() == mem.rebuild_from_log().snapshot()
