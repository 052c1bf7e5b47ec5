"""The CLI takes a store path or a ``postgresql://`` URL wherever it takes a store, and
``locimem migrate`` moves a memory between them (PostgreSQL cases skip without
``LOCIMEM_TEST_POSTGRES``; the SQLite ones always run)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from locimem import Detection, ObjectMemory
from locimem.cli import main
from tests import pg

MUG = Detection("mug", 0.9, (0.8, 1.0, 0.8), (0.08, 0.08, 0.1))
BOOK = Detection("book", 0.9, (2.0, 1.0, 0.8), (0.2, 0.15, 0.04))


def _fill(target: str, scope: str = "flat") -> None:
    with ObjectMemory.open(target, scope=scope) as mem:
        for t in range(0, 12, 2):
            mem.observe(float(t), [MUG, BOOK])


def _json(capsys: pytest.CaptureFixture[str], argv: list[str]) -> dict:
    assert main(argv) == 0
    return json.loads(capsys.readouterr().out)


def test_migrate_copies_every_scope_and_names_what_it_moved(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    src, dst = tmp_path / "a.loci", tmp_path / "b.loci"
    _fill(str(src), "flat")
    _fill(str(src), "office")
    out = _json(capsys, ["migrate", str(src), str(dst), "--json"])
    assert out["scopes"] == ["flat", "office"] and out["rows"]["objects"] == 4
    for scope in ("flat", "office"):
        with ObjectMemory.open(src, scope=scope, read_only=True) as a, \
                ObjectMemory.open(dst, scope=scope, read_only=True) as b:
            assert a.snapshot() == b.snapshot()


def test_migrate_refuses_a_missing_source_or_scope_and_writes_nothing(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    src, dst = tmp_path / "a.loci", tmp_path / "b.loci"
    assert main(["migrate", str(tmp_path / "none.loci"), str(dst)]) == 2
    assert "no store at" in capsys.readouterr().err
    _fill(str(src))
    assert main(["migrate", str(src), str(dst), "--scope", "kitchen"]) == 2
    assert "holds no scope 'kitchen'; its scopes: 'flat'" in capsys.readouterr().err
    assert not dst.exists()  # refused before the target was touched


@pg.needs_postgres
def test_read_commands_take_a_postgres_url(capsys: pytest.CaptureFixture[str]) -> None:
    url = pg.new_url("cli")
    _fill(url)
    inspect = _json(capsys, ["inspect", url, "--json"])
    assert list(inspect["scopes"]) == ["flat"] and inspect["scopes"]["flat"]["commits"] == 6
    assert main(["recall", url, "mug"]) == 0
    assert "The mug (#1)" in capsys.readouterr().out
    assert main(["events", url, "--kind", "PROMOTED"]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert len(lines) == 2 and all("PROMOTED" in line for line in lines)
    assert main(["recall", url, "mug", "--scope", "kitchen"]) == 2
    assert "its scopes: 'flat'" in capsys.readouterr().err
    assert main(["validate", url]) == 0


@pg.needs_postgres
def test_migrate_sqlite_to_postgres_and_back_keeps_the_memory(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    src, back, url = tmp_path / "a.loci", tmp_path / "back.loci", pg.new_url("mig")
    _fill(str(src))
    assert _json(capsys, ["migrate", str(src), url, "--json"])["scopes"] == ["flat"]
    assert _json(capsys, ["migrate", url, str(back), "--json"])["rows"]["observations"] == 12
    with ObjectMemory.open(src, scope="flat", read_only=True) as a, \
            ObjectMemory.open(url, scope="flat", read_only=True) as b, \
            ObjectMemory.open(back, scope="flat", read_only=True) as c:
        assert a.snapshot() == b.snapshot() == c.snapshot()
        assert [o.label for o in c.tracked()] == ["mug", "book"]


def test_compact_vacuum_shrinks_the_retention_store_and_keeps_the_memory(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    from locimem.bench.retention import stream_store
    from locimem.interchange.validate import validate_store

    path = tmp_path / "retention.loci"
    stream_store(path, n_objects=6, minutes=1.0)  # the retention benchmark's stream, shorter
    with ObjectMemory.open(path, read_only=True) as mem:
        before = mem.snapshot()
    size = path.stat().st_size
    out = _json(capsys, ["compact", str(path), "--older-than", "10", "--vacuum", "--json"])
    assert out["vacuumed"] is True and out["removed"] > 0
    assert out["observations_after"] == out["observations_before"] - out["removed"]
    assert out["bytes_after"] < out["bytes_before"]
    assert path.stat().st_size < size  # the file itself is smaller
    with ObjectMemory.open(path, read_only=True) as mem:
        assert mem.snapshot() == before  # the same memory
    assert validate_store(path).ok
    # text: rows and bytes before and after, and the hint without --vacuum
    assert main(["compact", str(path), "--older-than", "1"]) == 0
    text = capsys.readouterr().out
    assert "store size:" in text and "--vacuum gives them back" in text
