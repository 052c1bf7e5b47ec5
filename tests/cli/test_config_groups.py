"""Settings grouped by concern: one declaration drives the groups of the TOML tables,
``from_dict``/``to_dict``, ``--set GROUP.NAME=VALUE`` and the docs; flat names still work,
with a deprecation warning."""

from __future__ import annotations

import dataclasses
import json
import warnings
from pathlib import Path

import pytest

from locimem.cli import main
from locimem.config import GROUP_OF, GROUPS, RelationConfig, TrackerConfig, knobs
from locimem.errors import InvalidInput

CHANGED = TrackerConfig(tau_s=20.0, promote_after=4, feature_margin=0.2, delta_move_m=0.7,
                        keyframes_kept=3, tight_radius_m=0.15, revive_after=None,
                        human_label_weight=2.0, relations=RelationConfig(on_gap_m=0.08))


def test_every_setting_belongs_to_one_declared_group() -> None:
    tracker = {name: spec.group for name, _, _, spec in knobs(TrackerConfig)}
    assert tracker == GROUP_OF and set(tracker.values()) == set(GROUPS) - {"relations"}
    assert {spec.group for *_, spec in knobs(RelationConfig)} == {"relations"}
    grouped = TrackerConfig().to_dict()
    assert list(grouped) == list(GROUPS)
    assert sum(len(v) for v in grouped.values()) == len(tracker) + len(knobs(RelationConfig))


def test_the_grouped_dict_round_trips_exactly() -> None:
    data = CHANGED.to_dict()
    assert data["belief"]["tau_s"] == 20.0 and data["lifecycle"]["promote_after"] == 4
    assert "tau_s" not in data and data["relations"]["on_gap_m"] == 0.08
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # the grouped form warns of nothing
        assert TrackerConfig.from_dict(json.loads(json.dumps(data))) == CHANGED
        assert TrackerConfig.from_dict({}) == TrackerConfig()


def test_a_toml_file_by_group_and_the_same_by_set(tmp_path: Path) -> None:
    path = tmp_path / "robot.toml"
    path.write_text("[belief]\ntau_s = 20.0\n[lifecycle]\npromote_after = 4\n"
                    "human_label_weight = 2.0\nrevive_after = 9\n[appearance]\n"
                    "feature_margin = 0.2\n[prior]\ndelta_move_m = 0.7\n[retention]\n"
                    "keyframes_kept = 3\n[association]\ntight_radius_m = 0.15\n"
                    "[relations]\non_gap_m = 0.08\n")
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        from_file = TrackerConfig.from_toml(path)
        by_set = TrackerConfig().with_settings([
            "belief.tau_s=20", "lifecycle.promote_after=4", "lifecycle.human_label_weight=2",
            "lifecycle.revive_after=9", "appearance.feature_margin=0.2",
            "prior.delta_move_m=0.7", "retention.keyframes_kept=3",
            "association.tight_radius_m=0.15", "relations.on_gap_m=0.08"])
    expected = dataclasses.replace(CHANGED, revive_after=9)
    assert from_file == by_set == expected
    assert by_set.with_settings(["lifecycle.revive_after=none"]).revive_after is None


@pytest.mark.parametrize("spelling", ["dict", "toml", "set"])
def test_flat_names_still_work_and_warn(tmp_path: Path, spelling: str) -> None:
    with pytest.warns(DeprecationWarning, match=r"belief"):
        if spelling == "dict":
            config = TrackerConfig.from_dict({"tau_s": 20.0})
        elif spelling == "toml":
            path = tmp_path / "old.toml"
            path.write_text("[tracker]\ntau_s = 20.0\n")
            config = TrackerConfig.from_toml(path)
        else:
            config = TrackerConfig().with_settings(["tau_s=20"])
    assert config == TrackerConfig(tau_s=20.0)


@pytest.mark.parametrize(("settings", "message"), [
    (["believe.tau_s=20"], r"^--set \[believe\]: no group 'believe' \(groups: association, "
                           r"belief, lifecycle, appearance, prior, retention, relations\)$"),
    (["belief.tau=20"], r"^--set \[belief\] has no setting 'tau' \(known: tau_s, "),
    (["belief.promote_after=2"], r"has no setting 'promote_after', it is in \[lifecycle\]"),
    (["relations.onn_gap_m=0.1"], r"^--set \[relations\] has no setting 'onn_gap_m'"),
    (["belief.tau_s=fast"], r"^--set belief\.tau_s: 'fast' is not a number \(or none\)$"),
    (["belief.tau_s"], r"^--set takes GROUP\.NAME=VALUE, got 'belief\.tau_s'$"),
    (["belief.tau_s=0"], r"^tau_s = 0 is out of range"),
])
def test_a_bad_setting_names_what_is_known(settings: list[str], message: str) -> None:
    with pytest.raises(InvalidInput, match=message):
        TrackerConfig().with_settings(settings)


def test_from_dict_refuses_an_unknown_group_or_setting() -> None:
    with pytest.raises(InvalidInput,
                       match=r"^unknown TrackerConfig group\(s\) or setting\(s\): beleif "):
        TrackerConfig.from_dict({"beleif": {"tau_s": 1.0}})
    with pytest.raises(InvalidInput, match=r"^\[belief\] has no setting 'near_m'"):
        TrackerConfig.from_dict({"belief": {"near_m": 1.0}})


def test_the_cli_takes_set_over_the_config_file(tmp_path: Path, capsys) -> None:
    config = tmp_path / "robot.toml"
    config.write_text("[lifecycle]\npromote_after = 5\n")
    scans = tmp_path / "scans.jsonl"
    scans.write_text("".join(json.dumps({"t": t, "detections": [
        {"label": "cup", "confidence": 0.9, "center": [5.0, 0.0, 0.5], "size": [0.1] * 3}]})
        + "\n" for t in (1.0, 2.0, 3.0)))
    store = tmp_path / "home.loci"
    assert main(["--config", str(config), "--set", "lifecycle.promote_after=2", "ingest",
                 str(scans), str(store), "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["events"] == {"APPEARED": 1, "PROMOTED": 1}
    bad = tmp_path / "bad.loci"
    assert main(["--set", "lifecycle.promote_after=0", "ingest", str(scans), str(bad)]) == 2
    assert capsys.readouterr().err.startswith("error: promote_after = 0 is out of range")
    assert not bad.exists()  # a refused setting writes nothing


@pytest.mark.parametrize(("settings", "named"), [
    ({"tau_s": -1.0}, "tau_s"), ({"promote_after": 2.5}, "promote_after"),
    ({"tau_s": float("nan")}, "tau_s"), ({"tight_radius_m": 2.0}, "tight_radius_m"),
    ({"lost_below": 0.9}, "lost_below"),
])
def test_a_refused_value_names_its_setting(settings: dict, named: str) -> None:
    with pytest.raises(InvalidInput) as caught:
        TrackerConfig(**settings)
    assert caught.value.setting == named  # (how a config file's error finds its table)
    assert InvalidInput("not about a setting").setting is None
