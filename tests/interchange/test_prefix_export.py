"""The way out of a scope stuck in the future: one scan at a time far ahead (a clock wrong by
centuries, inside the valid-time domain) makes every real scan "go back in time". The
refusal says how out; ``export --until-commit`` writes the scope as it was before the scan,
and the store imported from it is the store that never saw it."""

from __future__ import annotations

import json
from itertools import count
from pathlib import Path

import pytest

from locimem import Detection, ObjectMemory
from locimem.cli import main
from locimem.errors import InvalidInput
from locimem.interchange.export import export_memory, import_memory
from tests import pg

WALL = 1764600000.0  # the machine's clock in these tests (2025-12-01)
CUP = Detection("cup", 0.9, (1.0, 1.0, 0.9), (0.08, 0.08, 0.1))
BOOK = Detection("book", 0.9, (2.0, 0.5, 0.8), (0.2, 0.15, 0.05))


def _clock():
    ticks = count()
    return lambda: WALL + next(ticks)  # record times: one second a call


def _day(mem: ObjectMemory, poison: bool) -> None:
    for i in range(6):
        mem.observe(WALL - 100.0 + i, [CUP, BOOK] if i % 2 else [CUP])
    mem.relabel(1, "mug", reason="it has a handle")
    if poison:
        mem.observe(9e9, [BOOK])  # 2255: a clock gone wrong


def _stores(tmp_path: Path, backend: str) -> tuple[str, str]:
    if backend == "postgres":
        return pg.new_url("poisoned"), pg.new_url("clean")
    return str(tmp_path / "poisoned.loci"), str(tmp_path / "clean.loci")


@pytest.mark.parametrize("backend", ["sqlite", pytest.param("postgres", marks=pg.needs_postgres)])
def test_a_scope_stuck_in_the_future_is_taken_back_by_a_prefix_export(tmp_path,
                                                                      backend) -> None:
    poisoned, clean = _stores(tmp_path, backend)
    with ObjectMemory.open(poisoned, scope="home", clock=_clock()) as mem:
        _day(mem, poison=True)
        good = mem._live.store.last_commit_at("home", t=WALL)
        with pytest.raises(InvalidInput) as err:
            mem.observe(WALL, [CUP])
        # the refusal names the way out, with the commit to cut at
        assert (f"locimem export STORE DIR --scope home --until-commit {good} "
                in str(err.value))
        assert "then locimem import DIR NEW_STORE" in str(err.value)
    with ObjectMemory.open(clean, scope="home", clock=_clock()) as mem:
        _day(mem, poison=False)
        never_poisoned = mem._live._state.snapshot()

    out = tmp_path / "before"
    report = export_memory(poisoned, out, scope="home", until_commit=good)
    assert report.counts["commits"] == good
    memory_version = json.loads((out / "manifest.json").read_text())["memory_version"]
    assert memory_version["commit"] == good
    # what the export holds is what a store that never saw the poison exports
    export_memory(clean, tmp_path / "clean", scope="home")
    assert _texts(out) == _texts(tmp_path / "clean")

    restored = tmp_path / "restored.loci"
    import_memory(out, restored)
    with ObjectMemory.open(restored, scope="home", clock=_clock()) as mem:
        assert mem._live._state.snapshot() == never_poisoned
        assert all(o.last_seen < 9e9 for o in mem.objects())  # no sighting of the poison
        assert not mem._live.store.events("home", since=WALL + 1.0)
        mem.observe(WALL, [CUP])  # and real scans are taken again
        assert mem.get(1).label == "mug"


def _texts(directory: Path) -> dict[str, str]:
    """Every file of an export but the manifest (which names the export's time)."""
    out = {}
    for path in sorted(directory.rglob("*")):
        if path.is_file() and path.name != "manifest.json":
            out[str(path.relative_to(directory))] = path.read_bytes().hex()
    return out


@pytest.mark.parametrize("until, message", [
    (0, "until_commit=0 is not a commit of scope 'home'"),
    (99, "until_commit=99 is not a commit of scope 'home'"),
    ("3", "until_commit must be a commit id"),
    (True, "until_commit must be a commit id"),
])
def test_a_bad_until_commit_writes_nothing(tmp_path, until, message) -> None:
    store = tmp_path / "m.loci"
    with ObjectMemory.open(store, scope="home") as mem:
        _day(mem, poison=True)
    with pytest.raises(InvalidInput, match=message):
        export_memory(store, tmp_path / "out", scope="home", until_commit=until)
    # no directory, no partial one (the store's own -wal, -shm and -writer files aside)
    assert [p.name for p in tmp_path.iterdir() if not p.name.startswith("m.loci")] == []


def test_the_cli_takes_a_scope_back(tmp_path, capsys) -> None:
    store, out, new = tmp_path / "m.loci", tmp_path / "before", tmp_path / "new.loci"
    with ObjectMemory.open(store, scope="home", clock=_clock()) as mem:
        _day(mem, poison=True)
        good = mem._live.store.last_commit_at("home", t=WALL)
    assert main(["export", str(store), str(out), "--scope", "home", "--until-commit",
                 str(good), "--quiet"]) == 0
    assert main(["import", str(out), str(new), "--quiet"]) == 0
    with ObjectMemory.open(new, scope="home") as mem:
        assert mem.now == WALL - 95.0
    capsys.readouterr()
    assert main(["export", str(store), str(tmp_path / "x.usda"), "--scope", "home",
                 "--until-commit", str(good)]) == 2
    assert "--until-commit exports a directory" in capsys.readouterr().err
    assert not (tmp_path / "x.usda").exists()


def test_a_compacted_scope_is_taken_back_from_its_checkpoint(tmp_path) -> None:
    stores = {}
    for name, poison in (("poisoned", True), ("clean", False)):
        path = tmp_path / f"{name}.loci"
        with ObjectMemory.open(path, scope="home", clock=_clock()) as mem:
            for i in range(40):
                mem.observe(WALL - 100.0 + i, [CUP, BOOK] if i % 2 else [CUP])
            report = mem.compact(older_than_s=10.0, trail_s=5.0)
            assert report.removed > 0 and mem._live.store.latest_checkpoint("home") is not None
            mem.observe(WALL - 50.0, [BOOK])
            if poison:
                mem.observe(9e9, [BOOK])
            stores[name] = (path, mem._live.store.last_commit_at("home", t=WALL))
    (poisoned, good), (clean, _) = stores["poisoned"], stores["clean"]
    export_memory(poisoned, tmp_path / "before", scope="home", until_commit=good)
    export_memory(clean, tmp_path / "clean-out", scope="home")
    assert _texts(tmp_path / "before") == _texts(tmp_path / "clean-out")
    import_memory(tmp_path / "before", tmp_path / "restored.loci")
    with ObjectMemory.open(tmp_path / "restored.loci", scope="home") as mem, \
            ObjectMemory.open(clean, scope="home", read_only=True) as ref:
        assert mem._live._state.snapshot() == ref._live._state.snapshot()
        assert mem.rebuild_from_log().snapshot() == ref._live._state.snapshot()
