"""Every setting has a range, declared once beside it, that keeps the tracker's arithmetic
finite: a value outside is refused when the config is made (in Python or from a TOML file,
naming the file, the table, the setting, its range and the value), a value at a bound runs.
A config file that is not UTF-8 text, nests too deeply, is not a regular file or is huge is
refused with a typed error too (issue 36, item 4)."""

from __future__ import annotations

import dataclasses
import json
import math
from pathlib import Path

import numpy as np
import pytest

from locimem import Camera, Detection, ObjectMemory, TrackerConfig
from locimem.cli import main
from locimem.config import GROUP_OF, Knob, RelationConfig, knobs, settings_table
from locimem.errors import InvalidInput
from locimem.geometry import look_at

ROOT = Path(__file__).resolve().parents[2]


def _toml(tmp_path: Path, text: str | bytes, name: str = "home") -> Path:
    path = tmp_path / f"{name}.toml"
    if isinstance(text, bytes):
        path.write_bytes(text)
    else:
        path.write_text(text, encoding="utf-8")
    return path


# -- the values the issue found: accepted, then a crash mid-scan -------------------------------
@pytest.mark.parametrize(("table", "setting", "value", "message"), [
    ("association", "tight_radius_m", "5e-324", "tight_radius_m = 5e-324 is out of range: must be "
     "within [0.001, 10] m"),
    ("belief", "tau_s", "1e308", "tau_s = 1e+308 is out of range: must be within "
     "[0.001, 1e6] s"),
    ("association", "position_sigma_m", "1e308", "position_sigma_m = 1e+308 is out of range: must "
     "be within [0.0001, 10] m"),
    ("belief", "existence_max", "5e-324", "existence_max = 5e-324 is out of range: must be "
     "within [0.5, 0.999999]"),
    ("belief", "pd_prior_weight", "0", "pd_prior_weight = 0 is out of range: must be within "
     "[0.1, 1e6] looks"),
    ("belief", "pd_prior_weight", "-0.0", "pd_prior_weight = -0.0 is out of range: must be "
     "within [0.1, 1e6] looks"),
    ("lifecycle", "promote_confidence", "0", "promote_confidence = 0 is out of range: must be "
     "within [0.01, 10]"),
    ("lifecycle", "move_confirm_after", "1", "move_confirm_after = 1 is out of range: must be "
     "within [2, 10000] sightings"),
    ("relations", "near_m", "1e308", "near_m = 1e+308 is out of range: must be within "
     "[0.001, 100] m"),
])
def test_a_value_out_of_range_is_refused_at_load_naming_its_place(tmp_path, table, setting,
                                                                  value, message) -> None:
    path = _toml(tmp_path, f"[{table}]\n{setting} = {value}\n")
    with pytest.raises(InvalidInput) as caught:
        TrackerConfig.from_toml(path)
    assert str(caught.value) == f"{path}: [{table}] {message}"


def test_the_python_constructors_refuse_the_same_values(tmp_path) -> None:
    with pytest.raises(InvalidInput, match=r"^tight_radius_m = 5e-324 is out of range"):
        TrackerConfig(tight_radius_m=5e-324)
    with pytest.raises(InvalidInput, match=r"^near_m = 1e\+308 is out of range"):
        RelationConfig(near_m=1e308)
    with pytest.raises(InvalidInput, match=r"^existence_max = 5e-324 is out of range"):
        TrackerConfig.from_dict({"belief": {"existence_max": 5e-324}})
    with pytest.raises(InvalidInput, match=r"^promote_confidence = 0 is out of range"):
        dataclasses.replace(TrackerConfig(), promote_confidence=0)
    store = tmp_path / "home.loci"
    with pytest.raises(InvalidInput, match=r"^pd_prior_weight = 0 is out of range"):
        ObjectMemory.open(store, config=TrackerConfig.from_dict({"belief": {"pd_prior_weight": 0}}))
    assert not store.exists()  # a refused config writes nothing


def test_the_cli_refuses_it_at_load_before_the_store_is_touched(tmp_path, capsys) -> None:
    path = _toml(tmp_path, "[association]\ntight_radius_m = 5e-324\n")
    store = tmp_path / "home.loci"
    scans = tmp_path / "scans.jsonl"
    scans.write_text(json.dumps({"t": 1.0, "detections": []}) + "\n")
    assert main(["--config", str(path), "ingest", str(scans), str(store)]) == 2
    assert capsys.readouterr().err == (f"error: {path}: [association] tight_radius_m = 5e-324 is "
                                       "out of range: must be within [0.001, 10] m\n")
    assert not store.exists()


# -- the ranges are declared once, and every value inside one runs ------------------------------
def test_every_setting_declares_its_range_and_its_default_lies_in_it() -> None:
    for kind in (TrackerConfig, RelationConfig):
        declared = {name for name, *_ in knobs(kind)}
        assert declared == {f.name for f in dataclasses.fields(kind)} - {"relations"}
        for name, _, default, spec in knobs(kind):
            assert isinstance(spec, Knob) and spec.lo < spec.hi and spec.doc, name
            assert default is None or spec.lo <= default <= spec.hi, name


def _feature(seed: int) -> np.ndarray:
    return np.random.default_rng(seed).normal(size=16).astype(np.float32)


def _scans(mem: ObjectMemory) -> None:
    """A few scans that reach the arithmetic of most settings: sightings with a camera and
    embeddings, misses with the depth seeing through, a scan without a camera, a long gap, a
    move, a held sighting and unsure detections."""
    cup, book, table = (1.0, 0.0, 0.8), (1.0, 0.5, 0.8), (1.0, 0.2, 0.4)
    cam = look_at((0.0, 0.0, 1.0), (1.0, 0.2, 0.8), fov_deg=90.0, vfov_deg=70.0, range_m=5.0)
    through = Camera(cam.position, cam.quaternion, cam.fov_deg, cam.range_m, cam.vfov_deg,
                     depth=np.full((6, 8), 4.9))
    under = Detection("table", 0.9, table, (1.0, 1.0, 0.8))
    t = 0.0
    for i in range(4):
        mem.observe(t, [Detection("cup", 0.9, cup, (0.1, 0.1, 0.12), feature=_feature(1)),
                        Detection("book", 0.45 + 0.1 * i, book, (0.2, 0.15, 0.04),
                                  feature=_feature(2)), under], camera=cam)
        t += 1e-7 if i == 0 else 1.0
    for _ in range(3):
        mem.observe(t, [under], camera=through)
        t += 0.5
    mem.observe(t, [under])
    t += 1e6
    mem.observe(t, [Detection("cup", 0.95, (3.0, 1.0, 0.8), (0.1, 0.1, 0.12),
                              feature=_feature(1)), under], camera=cam)
    for _ in range(3):
        t += 1.0
        mem.observe(t, [Detection("cup", 0.95, (1.3, 0.0, 0.8), (0.3, 0.3, 0.36),
                                  feature=_feature(1)),
                        Detection("box", 0.3, (1.0, 0.4, 0.8), (0.1, 0.1, 0.1)), under],
                    camera=cam)
    mem.observe(t + 1e-9, [under])


SAMPLE = [(GROUP_OF[n], n) for n in (
    "tight_radius_m", "drift_radius_m", "tau_s", "position_sigma_m", "position_info_max",
    "existence_max", "pd_prior_weight", "pd_max", "empty_likelihood", "promote_confidence",
    "move_confirm_after", "range_edge", "tau_unseen_s", "suspect_size_ratio")] + [
    ("relations", n) for n in ("on_gap_m", "under_max_gap_m", "next_to_gap_m", "near_m")]


def _bound_config(tmp_path: Path, table: str, name: str, value: float) -> Path:
    kind = RelationConfig if table == "relations" else TrackerConfig
    typ = next(t for n, t, _, _ in knobs(kind) if n == name)
    text = f"[{table}]\n{name} = {int(value) if typ.startswith('int') else repr(value)}\n"
    if name == "tight_radius_m" and value > 1.0:
        text += "drift_radius_m = 100.0\n"  # (the same group, [association])
    if name == "drift_radius_m" and value < 0.2:
        text += f"tight_radius_m = {max(value, 0.001)!r}\n"
    return _toml(tmp_path, text, f"{name}-{value}")


@pytest.mark.parametrize(("table", "name"), SAMPLE)
def test_a_value_at_each_bound_runs_and_one_just_outside_is_refused(tmp_path, table,
                                                                     name) -> None:
    kind = RelationConfig if table == "relations" else TrackerConfig
    typ, spec = next((t, k) for n, t, _, k in knobs(kind) if n == name)
    for bound in (spec.lo, spec.hi):
        config = TrackerConfig.from_toml(_bound_config(tmp_path, table, name, bound))
        with ObjectMemory.open(config=config) as mem:
            _scans(mem)
            assert mem.objects()
            for obj in mem.objects():  # every number the memory reports is finite
                json.dumps(mem.describe(obj.id), allow_nan=False, default=str)
                assert math.isfinite(mem.get(obj.id).confidence)
            json.dumps([e.data for e in mem.events()], allow_nan=False)
            assert mem.rebuild_from_log() is not None
    integer = typ.startswith("int")
    for outside in ((spec.lo - 1, spec.hi + 1) if integer else
                    (math.nextafter(spec.lo, -math.inf), math.nextafter(spec.hi, math.inf))):
        path = _bound_config(tmp_path, table, name, outside)
        with pytest.raises(InvalidInput, match=rf"^{path}: \[{table}\] {name} = .* is out of "
                           rf"range: must be within \[.*\]"):
            TrackerConfig.from_toml(path)


def test_the_settings_table_in_the_docs_is_generated_from_the_declarations() -> None:
    text = (ROOT / "docs" / "configuration.md").read_text(encoding="utf-8")
    assert settings_table() in text, "paste settings_table() there"


# -- files that are not a config ---------------------------------------------------------------
def test_a_config_that_is_not_utf8_is_named(tmp_path) -> None:
    path = _toml(tmp_path, b"[belief]\ntau_s = 20.0 # caf\xe9\n")
    with pytest.raises(InvalidInput) as caught:
        TrackerConfig.from_toml(path)
    assert str(caught.value) == f"{path} is not UTF-8 text (byte 27): a TOML config is UTF-8"


@pytest.mark.parametrize("value", ["[" * 10_000 + "]" * 10_000,
                                   "{a = " * 10_000 + "1" + "}" * 10_000])
def test_a_config_that_nests_deeply_is_named(tmp_path, value) -> None:
    path = _toml(tmp_path, f"[belief]\ntau_s = {value}\n")
    with pytest.raises(InvalidInput) as caught:
        TrackerConfig.from_toml(path)
    assert str(caught.value) == f"{path} nests arrays or inline tables too deeply to be a config"


def test_ten_thousand_nested_tables_are_an_unknown_setting(tmp_path) -> None:
    path = _toml(tmp_path, "[belief." + ".".join(["a"] * 10_000) + "]\n")
    with pytest.raises(InvalidInput, match=r"\[belief\] has no setting 'a'"):
        TrackerConfig.from_toml(path)


def test_a_config_larger_than_a_mebibyte_is_refused(tmp_path) -> None:
    path = _toml(tmp_path, "# " + "x" * (1 << 20) + "\n")
    with pytest.raises(InvalidInput) as caught:
        TrackerConfig.from_toml(path)
    assert str(caught.value) == (f"the config {str(path)!r} is larger than 1 MiB: expected a "
                                 "TOML file of at most 1 MiB")


def test_a_device_is_not_a_config(capsys) -> None:
    assert main(["--config", "/dev/zero", "inspect", "x.loci"]) == 2
    assert capsys.readouterr().err == ("error: the config '/dev/zero' is a character device, "
                                       "not a regular file: expected a TOML file of at most "
                                       "1 MiB\n")


# -- the text encoder's table ------------------------------------------------------------------
@pytest.mark.parametrize(("line", "message"), [
    ("threads = 1000000", "threads = 1000000 is out of range: must be within [1, 256]"),
    ("threads = 1e6", "threads must be an integer, got 1000000.0"),
    ("max_length = 1000000000", "max_length = 1000000000 is out of range: must be within "
     "[3, 512]"),
    ("batch_size = 0", "batch_size = 0 is out of range: must be within [1, 4096]"),
])
def test_the_encoder_table_is_bounded(tmp_path, line, message) -> None:
    from locimem.language.encoder import encoder_from_toml

    path = _toml(tmp_path, f"[encoder]\n{line}\n")
    with pytest.raises(InvalidInput) as caught:
        encoder_from_toml(path)
    assert str(caught.value) == f"{path}: [encoder] {message}"
