"""The interchange commands: export (directory or USD), import (a copy, or a prior map),
deltas, consolidate, snapshot and restore — each run as a user would, through ``main``."""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path

import pytest

from locimem import Detection, ObjectMemory
from locimem.cli import main
from tests.helpers import file_tree

MUG = Detection("mug", 0.9, (1.2, 1.0, 0.8), (0.08, 0.08, 0.1))
TABLE = Detection("kitchen table", 0.9, (1.0, 1.0, 0.375), (1.2, 0.8, 0.75))
COUNTER = Detection("counter", 0.9, (4.0, 1.0, 0.45), (1.0, 0.6, 0.9))


@pytest.fixture
def survey(tmp_path: Path) -> Path:
    """A store in which an offline pass saw the table, the mug on it and the counter."""
    path = tmp_path / "survey.loci"
    with ObjectMemory.open(path, scope="house") as mem:
        mem.define_room("kitchen", [(0, 0), (5, 0), (5, 3), (0, 3)])
        for t in range(8):
            mem.observe(float(t), [TABLE, MUG, COUNTER], source="survey-rig")
    return path


def test_export_import_export_is_byte_identical(survey: Path, tmp_path: Path,
                                                capsys: pytest.CaptureFixture[str]) -> None:
    first, second = tmp_path / "first", tmp_path / "second"
    assert main(["export", str(survey), str(first), "--scope", "house", "--quiet"]) == 0
    assert "manifest.json lists each file's SHA-256" in capsys.readouterr().out
    copy = tmp_path / "copy.loci"
    assert main(["import", str(first), str(copy), "--quiet"]) == 0
    out = capsys.readouterr().out
    assert f"created {copy}, scope 'house'" in out and "every checksum verified" in out
    assert main(["export", str(copy), str(second), "--scope", "house", "--quiet"]) == 0
    assert file_tree(first) == file_tree(second)
    # a tampered file is refused, and nothing is created
    events = first / "log" / "events.jsonl"
    events.write_bytes(events.read_bytes().replace(b'"mug"', b'"mud"', 1))
    capsys.readouterr()
    assert main(["import", str(first), str(tmp_path / "never.loci"), "--quiet"]) == 2
    assert "log/events.jsonl" in capsys.readouterr().err
    assert not (tmp_path / "never.loci").exists()


def test_export_to_usd_by_extension(survey: Path, tmp_path: Path,
                                    capsys: pytest.CaptureFixture[str]) -> None:
    pytest.importorskip("pxr")
    target = tmp_path / "house.usda"
    assert main(["export", str(survey), str(target), "--scope", "house"]) == 0
    assert capsys.readouterr().out.startswith(f"wrote {target}: 1 rooms, 3 objects")
    assert 'upAxis = "Z"' in target.read_text()


def test_a_prior_map_from_an_export_then_deltas_and_consolidate(
        survey: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    exported = tmp_path / "survey-map"
    assert main(["export", str(survey), str(exported), "--scope", "house", "--quiet"]) == 0
    robot = tmp_path / "robot.loci"
    assert main(["import", str(exported), str(robot), "--prior", "--scope", "home",
                 "--actor", "mapper"]) == 0
    assert "loaded 3 objects as the prior map 'house' (ids 1..3)" in capsys.readouterr().out
    moved = Detection("mug", 0.9, (4.1, 1.0, 0.95), (0.08, 0.08, 0.1))
    with ObjectMemory.open(robot, scope="home") as mem:
        assert {o.source for o in mem.objects()} == {"prior:house"}
        for t in range(8):
            mem.observe(100.0 + t, [moved, COUNTER])
    assert main(["deltas", str(robot), "--scope", "home"]) == 0
    out = capsys.readouterr().out
    assert out.splitlines() == [
        "delta    1  confirmed moved    #2 mug (seen as #4) at (4.10, 1.00, 0.95); evidence 3"]
    assert main(["deltas", str(robot), "--scope", "home", "--status", "pending"]) == 0
    assert capsys.readouterr().out == "no deltas with status pending\n"
    assert main(["consolidate", str(robot), "--scope", "home", "--actor", "alice"]) == 0
    assert capsys.readouterr().out == "applied delta 1: moved #2 mug\n"
    assert main(["events", str(robot), "--scope", "home", "--object", "2"]) == 0
    lines = [line.split(None, 3)[3] for line in capsys.readouterr().out.splitlines()]
    assert lines == [
        "#2 mug at (1.20, 1.00, 0.80)",
        "#2 mug from the prior map: now published",
        "#2 mug: prior map entry at (1.20, 1.00, 0.80)",
        "#2 mug now on #1 kitchen table",
        "#2 mug: moved vs the prior map, pending (delta 1, evidence 1)",
        "#2 mug: moved vs the prior map, pending (delta 1, evidence 2)",
        "#2 mug: moved vs the prior map, confirmed (delta 1, evidence 3)",
        "#2 mug: absorbed #4 (2.90 m away), now 8 detections",
        "#2 mug: prior map entry at (4.10, 1.00, 0.95)",
        "#2 mug: moved vs the prior map, applied (delta 1, evidence 3)",
        "#2 mug no longer on #1 kitchen table",
        "#2 mug now on #3 counter"]
    assert main(["deltas", str(robot), "--scope", "home", "--json"]) == 0
    (delta,) = json.loads(capsys.readouterr().out)["deltas"]  # one document
    assert delta["status"] == "applied"
    assert main(["consolidate", str(robot), "--scope", "home"]) == 0
    assert capsys.readouterr().out == "no confirmed deltas: nothing to apply\n"
    assert main(["inspect", str(robot), "--scope", "home"]) == 0
    assert ("  prior map: 3 entries; deltas: pending 0, confirmed 0, rejected 0, applied 1"
            in capsys.readouterr().out.splitlines())


def test_snapshot_and_restore(survey: Path, tmp_path: Path,
                              capsys: pytest.CaptureFixture[str]) -> None:
    archive = tmp_path / "s.loci-snapshot"
    assert main(["snapshot", str(survey), "--out", str(archive), "--quiet"]) == 0
    assert capsys.readouterr().out.startswith(f"wrote {archive}: ")
    restored = tmp_path / "restored.loci"
    assert main(["restore", str(archive), str(restored)]) == 0
    assert "sha256 verified" in capsys.readouterr().out
    assert main(["restore", str(archive), str(restored)]) == 2  # exists: needs --force
    err = capsys.readouterr().err
    assert err.startswith("error: ") and "force" in err
    with ObjectMemory.open(survey, scope="house", read_only=True) as a, \
            ObjectMemory.open(restored, scope="house", read_only=True) as b:
        assert a.snapshot() == b.snapshot()


def test_every_new_command_has_help(capsys: pytest.CaptureFixture[str]) -> None:
    for command in ("export", "import", "validate", "snapshot", "restore", "deltas",
                    "consolidate"):
        with pytest.raises(SystemExit) as exit_:
            main([command, "--help"])
        assert exit_.value.code == 0
        assert capsys.readouterr().out.startswith(f"usage: locimem {command}")


def test_validate_a_store_and_a_directory(survey: Path, tmp_path: Path,
                                          capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["validate", str(survey)]) == 0
    assert capsys.readouterr().out.rstrip().endswith("house: ok")
    exported = tmp_path / "dir"
    assert main(["export", str(survey), str(exported), "--scope", "house", "--quiet"]) == 0
    capsys.readouterr()
    assert main(["validate", str(exported), "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["ok"] is True
    # a seeded violation: a confidence out of range, in a copy
    broken = tmp_path / "broken.loci"
    broken.write_bytes(survey.read_bytes())
    conn = sqlite3.connect(broken)
    conn.execute("UPDATE observations SET confidence = 1.5 WHERE seq = "
                 "(SELECT min(seq) FROM observations)")
    conn.commit()
    conn.close()
    assert main(["validate", str(broken)]) == 1
    out = capsys.readouterr().out
    assert "[confidence_range]" in out


@pytest.mark.parametrize("name", ["scene.txt", "scene.JSON", "map.html"])
def test_export_refuses_a_file_name_it_does_not_write(survey: Path, tmp_path: Path,
                                                      capsys: pytest.CaptureFixture[str],
                                                      name: str) -> None:
    target = tmp_path / name
    assert main(["export", str(survey), str(target), "--quiet"]) == 2
    err = capsys.readouterr().err
    assert f"export does not write {target.suffix.lower()!r} files" in err
    assert ".usda" in err and ".cypher" in err and "end it with /" in err
    assert not target.exists()  # no directory named scene.txt


def test_export_takes_a_dotted_directory_with_a_slash(survey: Path, tmp_path: Path) -> None:
    target = tmp_path / "home.2026"
    assert main(["export", str(survey), f"{target}/", "--quiet"]) == 0
    assert (target / "manifest.json").is_file()


@pytest.mark.parametrize("command", ["snapshot", "restore"])
def test_snapshot_and_restore_name_a_postgres_url_whole(tmp_path: Path,
                                                        capsys: pytest.CaptureFixture[str],
                                                        command: str) -> None:
    url = "postgresql://robot:sekrit@db.example:5432/fleet?schema=home"
    argv = ["snapshot", url] if command == "snapshot" else ["restore", str(tmp_path / "a"), url]
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert "'postgresql://robot:***@db.example:5432/fleet?schema=home' is a PostgreSQL" in err
    assert "sekrit" not in err and "locimem migrate" in err
    assert list(tmp_path.iterdir()) == []
