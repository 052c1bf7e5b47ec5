"""The decisions fingerprint: the same tree gives the same prints; another decision does not."""

from __future__ import annotations

import json
from pathlib import Path

from locimem.bench.decisions import compared, fingerprint, main
from locimem.sim.scenarios import build


def test_a_scenario_fingerprints_the_same_twice_and_another_seed_differs() -> None:
    first = fingerprint(build("track_id_resets"))
    assert fingerprint(build("track_id_resets")) == first
    assert fingerprint(build("track_id_resets", 101)) != first
    assert len(first.split()) == 2


def test_compare_says_identical_or_which_differ(tmp_path: Path, capsys) -> None:
    before, after = tmp_path / "before.json", tmp_path / "after.json"
    assert main([str(before), "--scenario", "track_id_resets"]) == 0
    assert main([str(after), "--scenario", "track_id_resets", "--compare", str(before)]) == 0
    assert capsys.readouterr().out.endswith("identical\n")
    changed = json.loads(before.read_text())
    changed["track_id_resets/101"] = "0 0"
    before.write_text(json.dumps(changed))
    assert main([str(after), "--scenario", "track_id_resets", "--compare", str(before)]) == 1
    assert capsys.readouterr().out.endswith("1 differ: track_id_resets/101\n")


def test_runs_the_old_file_lacks_are_named_apart_and_do_not_differ() -> None:
    found = {"a/default": "1 2", "b/default": "3 4", "c/default": "5 6"}
    assert compared(found, {"a/default": "1 2", "b/default": "3 4"}) == \
        "identical (1 new, not in the old file: c/default)"
    assert compared(found, {"a/default": "1 2", "b/default": "0 0"}) == \
        "1 differ: b/default (1 new, not in the old file: c/default)"
    assert compared(found, dict(found)) == "identical"
