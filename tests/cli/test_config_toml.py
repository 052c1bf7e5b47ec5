"""Tracker and relation settings from a TOML file: read, validated with errors that name the
file, the table and the setting, and used by the command line (``locimem --config``); the
CLI's ``-v`` shows the ``locimem`` logger, which the library leaves without handlers."""

from __future__ import annotations

import json
import logging
import subprocess
import sys
from pathlib import Path

import pytest

from locimem import Detection, ObjectMemory, TrackerConfig
from locimem.cli import main
from locimem.config import RelationConfig
from locimem.errors import InvalidInput


def _toml(tmp_path: Path, text: str, name: str = "robot") -> Path:
    path = tmp_path / f"{name}.toml"
    path.write_text(text)
    return path


def test_a_config_file_sets_tracker_and_relation_settings(tmp_path) -> None:
    path = _toml(tmp_path, "[belief]\ntau_s = 20.0\n[lifecycle]\npromote_after = 4\n"
                           "human_label_weight = 2\n\n[relations]\non_gap_m = 0.08\n")
    config = TrackerConfig.from_toml(path)
    assert config == TrackerConfig(tau_s=20.0, promote_after=4, human_label_weight=2.0,
                                   relations=RelationConfig(on_gap_m=0.08))
    assert TrackerConfig.from_toml(_toml(tmp_path, "")) == TrackerConfig()


@pytest.mark.parametrize(("text", "message"), [
    ("[belief]\ntau = 3\n", r": \[belief\] has no setting 'tau' \(known: tau_s, "),
    ("[belief]\npromote_after = 3\n",
     r": \[belief\] has no setting 'promote_after', it is in \[lifecycle\] \(known: "),
    ("[relations]\nonn_gap_m = 0.1\n", r": \[relations\] has no setting 'onn_gap_m'"),
    ("[camera]\nname = 'head'\n", r": unknown table\(s\) camera \(a config has "
                                   r"\[association\], \[belief\], \[lifecycle\], "
                                   r"\[appearance\], \[prior\], \[retention\], \[relations\], "
                                   r"\[encoder\], \[store\]\)$"),
    ("belief = 3\n", r": \[belief\] must be a table of settings, got a int$"),
    ("[belief]\ntau_s = -1.0\n",
     r": \[belief\] tau_s = -1\.0 is out of range: must be within \[0\.001, 1e6\] s$"),
    ("[lifecycle]\npromote_after = 'six'\n",
     r": \[lifecycle\] promote_after must be an integer"),
    ("[association]\ntight_radius_m = 2.0\n",
     r": \[association\] tight_radius_m \(2\.0\) must not exceed drift_radius_m \(1\.0\)$"),
    ("[relations]\non_min_overlap = 2.0\n",
     r": \[relations\] on_min_overlap = 2\.0 is out of range: must be within \[1e-9, 1\]$"),
    ("[belief]\ntau_s = nan\n", r": \[belief\] tau_s must be"),
    ("[belief]\nlost_below = 0.9\n", r": \[belief\] lost_below must be below publish_min"),
    ("[tracker\ntau_s = 1\n", r"robot\.toml is not valid TOML: "),
])
def test_bad_config_files_are_named(tmp_path, text, message) -> None:
    path = _toml(tmp_path, text)
    with pytest.raises(InvalidInput, match=message) as caught:
        TrackerConfig.from_toml(path)
    assert str(path) in str(caught.value)


def test_a_missing_config_file(tmp_path) -> None:
    with pytest.raises(InvalidInput, match=r"^cannot read the config '.*nope\.toml': No such"):
        TrackerConfig.from_toml(tmp_path / "nope.toml")


def test_on_python_3_10_tomli_reads_it(tmp_path, monkeypatch) -> None:
    pytest.importorskip("tomli")
    monkeypatch.setitem(sys.modules, "tomllib", None)  # as if Python 3.10
    path = _toml(tmp_path, "[belief]\ntau_s = 20.0\n")
    assert TrackerConfig.from_toml(path).tau_s == 20.0
    with pytest.raises(InvalidInput, match="is not valid TOML"):
        TrackerConfig.from_toml(_toml(tmp_path, "[tracker\n"))


@pytest.fixture
def store(tmp_path: Path) -> Path:
    path = tmp_path / "home.loci"
    with ObjectMemory.open(path, scope="home") as mem:
        for t in range(6):
            mem.observe(float(t), [Detection("cup", 0.9, (1, 1, 1), (0.1, 0.1, 0.1))])
    return path


def test_the_cli_uses_the_config(tmp_path, store, capsys) -> None:
    weighted = _toml(tmp_path, "[lifecycle]\nhuman_label_weight = 2.0\n", "weighted")
    assert main(["--config", str(weighted), "relabel", str(store), "1", "vase", "--json"]) == 0
    data = json.loads(capsys.readouterr().out)["event"]["data"]
    assert (data["pin"], data["mass"]) == (False, 2.0)  # weighted evidence, not a pin
    assert main(["relabel", str(store), "1", "mug", "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["event"]["data"]["pin"] is True
    slow = _toml(tmp_path, "[belief]\ntau_s = 1000.0\n", "slow")
    assert main(["--config", str(slow), "inspect", str(store), "--json"]) == 0
    capsys.readouterr()
    bad = _toml(tmp_path, "[belief]\ntau_s = 0\n", "bad")
    assert main(["--config", str(bad), "events", str(store)]) == 2
    assert capsys.readouterr().err == (
        f"error: {bad}: [belief] tau_s = 0 is out of range: must be within [0.001, 1e6] s\n")
    # ingest opens its store with the config's tracker settings and its [store] table
    scans = tmp_path / "scans.jsonl"
    scans.write_text("".join(json.dumps({"t": t, "detections": [
        {"label": "cup", "confidence": 0.9, "center": [5.0, 0.0, 0.5], "size": [0.1] * 3}]})
        + "\n" for t in (1.0, 2.0, 3.0)))
    quick = _toml(tmp_path, "[lifecycle]\npromote_after = 2\n[store]\nlate_s = 2.5\n", "quick")
    fresh = tmp_path / "fresh.loci"
    assert main(["--config", str(quick), "ingest", str(scans), str(fresh), "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["events"] == {"APPEARED": 1, "PROMOTED": 1}
    with ObjectMemory.open(fresh, read_only=True) as mem:
        assert mem._live.store.late_s == 2.5
        assert [e.kind.value for e in mem.events()] == ["APPEARED", "PROMOTED"]
        promoted = [e for e in mem.events() if e.kind.value == "PROMOTED"]
        assert promoted[0].t == 2.0  # at the second detection, not the sixth
    late = _toml(tmp_path, "[store]\nlate_s = -1\n", "late")
    assert main(["--config", str(late), "ingest", str(scans), str(fresh)]) == 2
    assert capsys.readouterr().err == (f"error: {late}: [store] late_s must be a number of "
                                       "seconds >= 0, got -1\n")


def test_the_library_installs_no_log_handlers_and_verbose_shows_its_logger(store, capsys):
    code = ("import logging, locimem, locimem.memory, locimem.cli; "
            "print(logging.getLogger('locimem').handlers)")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         check=True).stdout
    assert out == "[]\n"
    logger = logging.getLogger("locimem")
    try:
        assert main(["-v", "inspect", str(store)]) == 0
        logger.info("a message for the operator")
        assert capsys.readouterr().err.endswith("INFO locimem: a message for the operator\n")
    finally:
        for handler in list(logger.handlers):
            logger.removeHandler(handler)
        logger.setLevel(logging.NOTSET)


def test_the_guides_config_example_reads(tmp_path) -> None:
    import re

    readme = (Path(__file__).resolve().parents[2] / "docs" / "guide.md").read_text()
    (block,) = re.findall(r"```toml\n(.*?)```", readme, flags=re.S)
    config = TrackerConfig.from_toml(_toml(tmp_path, block))
    assert (config.tau_s, config.promote_after, config.human_label_weight,
            config.relations.on_gap_m) == (20.0, 4, 2.0, 0.08)
