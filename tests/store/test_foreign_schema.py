"""A store holds the locimem schema and nothing else: a trigger, a view, another table or
index, or a changed one is refused — by ``open``, ``restore``, ``export``/``import`` — naming
it, and ``validate`` reports it. (A trigger deleting the observations a scan inserts had a
restored archive pass ``validate`` and then lose data; one failing every commit surfaced as an
untyped ``sqlite3.IntegrityError``.) Restoring an archive onto itself is refused too."""

from __future__ import annotations

import os
import sqlite3
from pathlib import Path

import pytest

from locimem import ObjectMemory
from locimem.cli import main
from locimem.errors import CorruptStore, IntegrityError
from locimem.interchange.export import export_memory
from locimem.interchange.load import import_memory
from locimem.interchange.restore import restore
from locimem.interchange.snapshot import snapshot
from locimem.interchange.validate import validate_store
from locimem.store.sqlite.schema import SCHEMA_VERSION, expected_schema
from tests.helpers import det

DELETE_ON_INSERT = ("CREATE TRIGGER eat AFTER INSERT ON observations "
                    "WHEN new.seq % 3 != 0 BEGIN DELETE FROM observations WHERE seq = new.seq; END")
FOREIGN = [
    (DELETE_ON_INSERT, "trigger 'eat' is not part of the locimem schema"),
    ("CREATE TRIGGER fail BEFORE INSERT ON commits BEGIN SELECT RAISE(ABORT, 'no'); END",
     "trigger 'fail' is not part of the locimem schema"),
    ("CREATE VIEW v AS SELECT * FROM objects", "view 'v' is not part of the locimem schema"),
    ("CREATE TABLE notes (x TEXT)", "table 'notes' is not part of the locimem schema"),
    ("CREATE INDEX extra ON objects (label)", "index 'extra' is not part of the locimem schema"),
    ("DROP INDEX events_label; CREATE INDEX events_label ON events (scope, label, seq) "
     "WHERE kind = 'APPEARED'", "index 'events_label' is not the one the locimem schema creates"),
]


def _store(path: Path, scans: int = 3) -> Path:
    with ObjectMemory.open(path, scope="home") as m:
        for t in range(scans):
            m.observe(float(t), [det("cup", 1.0, 1.0)])
    return path


def _alter(path: Path, sql: str) -> None:
    conn = sqlite3.connect(path)
    try:
        conn.executescript(sql)
    finally:
        conn.close()


def test_the_expected_schema_is_what_a_new_store_holds(tmp_path: Path) -> None:
    path = _store(tmp_path / "m.loci", scans=0)
    with sqlite3.connect(path) as conn:
        rows = conn.execute("SELECT type, name, sql FROM sqlite_master").fetchall()
    conn.close()
    have = {(k, n): None if s is None else " ".join(s.split()) for k, n, s in rows}
    assert have == expected_schema(SCHEMA_VERSION)
    assert not [k for k in have if k[0] in ("trigger", "view")]


@pytest.mark.no_validate
@pytest.mark.parametrize(("sql", "message"), FOREIGN, ids=[m.split("'")[1] for _, m in FOREIGN])
@pytest.mark.parametrize("read_only", [False, True])
def test_open_refuses_a_store_whose_schema_is_not_locimem_s(tmp_path: Path, sql: str,
                                                            message: str, read_only: bool) -> None:
    path = _store(tmp_path / "m.loci")
    _alter(path, sql)
    before = path.read_bytes()
    for check in ("quick", "header", "off"):
        with pytest.raises(CorruptStore) as err:
            ObjectMemory.open(path, scope="home", read_only=read_only, check=check)
        assert message in str(err.value) and "drop it" in str(err.value)
        assert f"locimem validate {path}" in str(err.value)
    assert path.read_bytes() == before
    report = validate_store(path)  # one violation, naming the object; nothing checked after
    name = message.split("'")[1]
    assert [v.rule for v in report.violations] == ["schema_tables"]
    assert name in report.violations[0].message
    assert report.rules[-1] == "schema_tables" and report.scopes == ()


@pytest.mark.no_validate
def test_a_table_defined_otherwise_is_refused_and_reported(tmp_path: Path) -> None:
    path = _store(tmp_path / "m.loci")
    conn = sqlite3.connect(path)
    conn.execute("PRAGMA writable_schema = ON")  # same columns, one CHECK more
    conn.execute("UPDATE sqlite_master SET sql = replace(sql, 'data TEXT NOT NULL', "
                 "'data TEXT NOT NULL CHECK (length(data) < 5)') WHERE name = 'events'")
    conn.commit()
    conn.close()
    with pytest.raises(CorruptStore, match="table 'events' is not the one the locimem schema"):
        ObjectMemory.open(path, scope="home", check="header")
    assert [v.message[:48] for v in validate_store(path).of("schema_tables")] == [
        "table 'events' is not the one the locimem schema"]


@pytest.mark.no_validate
def test_sqlite_s_own_statistics_tables_are_fine(tmp_path: Path) -> None:
    path = _store(tmp_path / "m.loci")
    _alter(path, "ANALYZE")
    with ObjectMemory.open(path, scope="home") as m:
        assert m._live.store.count("observations", "home") == 3
    assert validate_store(path).ok


@pytest.mark.no_validate
@pytest.mark.parametrize(("sql", "message"), FOREIGN[:2], ids=["delete", "raise"])
def test_restore_refuses_an_archive_holding_a_trigger(tmp_path: Path, sql: str,
                                                      message: str) -> None:
    source = _store(tmp_path / "m.loci")
    _alter(source, sql)
    archive = snapshot(source, tmp_path / "a.loci-snapshot").path
    files = sorted(tmp_path.iterdir())
    with pytest.raises(IntegrityError, match=f"{message}; nothing was restored"):
        restore(archive, tmp_path / "restored.loci")
    assert sorted(tmp_path.iterdir()) == files  # no store, no temporary file


@pytest.mark.no_validate
def test_export_and_import_refuse_a_store_holding_a_trigger(tmp_path: Path) -> None:
    good = _store(tmp_path / "good.loci")
    directory = tmp_path / "export"
    export_memory(good, directory, scope="home")
    target = _store(tmp_path / "target.loci")
    with ObjectMemory.open(target, scope="home") as m:
        m.observe(9.0, [det("plate", 3.0, 3.0)])
    _alter(target, DELETE_ON_INSERT)
    before = target.read_bytes()
    with pytest.raises(CorruptStore, match="trigger 'eat' is not part of the locimem schema"):
        import_memory(directory, target, scope="other")
    assert target.read_bytes() == before
    with pytest.raises(CorruptStore, match="trigger 'eat' is not part of the locimem schema"):
        export_memory(target, tmp_path / "export2", scope="home")
    assert not (tmp_path / "export2").exists()


def test_restoring_an_archive_onto_itself_is_refused(tmp_path: Path,
                                                     capsys: pytest.CaptureFixture[str]) -> None:
    archive = snapshot(_store(tmp_path / "m.loci"), tmp_path / "a.loci-snapshot").path
    os.symlink(archive, tmp_path / "sym")
    os.link(archive, tmp_path / "hard")
    before, files = archive.read_bytes(), sorted(tmp_path.iterdir())
    for dest in (archive, tmp_path / "sym", tmp_path / "hard"):
        capsys.readouterr()
        assert main(["restore", str(archive), str(dest), "--force"]) != 0
        err = capsys.readouterr().err
        assert "is the snapshot archive" in err and "nothing was restored" in err
        assert "Traceback" not in err
        assert archive.read_bytes() == before
    assert sorted(tmp_path.iterdir()) == files
