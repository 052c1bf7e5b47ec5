"""Bad input: every public entry point raises its typed error, names what was wrong, and a
rejected scan writes nothing at all (DESIGN.md, "Bad input")."""

from __future__ import annotations

import os
import sqlite3
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from locimem import Camera, Detection, ObjectMemory, TrackerConfig
from locimem.errors import (
    InvalidInput,
    LocimemError,
    NotAStore,
    NotFound,
    ReadOnly,
    SchemaVersionError,
    ScopeError,
    StoreClosed,
    StoreLocked,
)
from tests.helpers import det, row_counts

NAN = float("nan")
INF = float("inf")
CAM = {"position": (0.0, 0.0, 1.0), "quaternion": (1.0, 0.0, 0.0, 0.0),
       "fov_deg": 90.0, "range_m": 5.0}


@pytest.fixture
def filled(store_path: Path) -> Iterator[ObjectMemory]:
    """An on-disk memory with three scans: a cup (feature width 4), a book, a rejected glass."""
    memory = ObjectMemory.open(store_path, scope="test")
    feat = np.array([1.0, 0.0, 0.0, 0.0])
    memory.observe(0.0, [det("cup", 0.0, 0.0, feature=feat), det("book", 1.0, 1.0)])
    memory.observe(1.0, [det("cup", 0.01, 0.0, feature=feat), det("glass", 2, 2, conf=0.01)])
    memory.observe(2.0, [det("cup", 0.0, 0.01)])
    try:
        yield memory
    finally:
        memory.close()


def _picture(memory: ObjectMemory) -> dict[str, Any]:
    return {"counts": row_counts(memory), "snapshot": memory.snapshot(), "now": memory.now}


def _assert_nothing_written(memory: ObjectMemory, before: dict[str, Any]) -> None:
    assert _picture(memory) == before
    # ... and the counters did not move: the next good scan takes the very next commit id
    last = memory._live.store.conn.execute("SELECT max(id) FROM commits").fetchone()[0]
    result = memory.observe(memory.now, [])
    assert result.commit == last + 1
    assert result.assignments == ()
    assert result.events == ()


def test_filled_fixture_is_what_the_tests_assume(filled: ObjectMemory) -> None:
    assert _picture(filled)["counts"] == {
        "scoped": {"commits": 3, "observations": 5, "events": 2, "objects": 2},
        "raw": {"commits": 3, "observations": 5, "events": 2, "objects": 2},
    }
    assert filled.now == 2.0
    assert filled.snapshot()["feature_dim"] == 4


# -- one detection --------------------------------------------------------------------------
GOOD = {"label": "cup", "confidence": 0.9, "center": (0.0, 0.0, 0.9), "size": (0.1, 0.1, 0.1)}

BAD_DETECTIONS = [
    # non-finite numbers
    ({"center": (NAN, 0.0, 0.9)}, r"^center\[0\] must be a finite number, got nan$"),
    ({"center": (0.0, INF, 0.9)}, r"^center\[1\] must be a finite number, got inf$"),
    ({"center": (0.0, 0.0, -INF)}, r"^center\[2\] must be a finite number, got -inf$"),
    ({"size": (0.1, NAN, 0.1)}, r"^size\[1\] must be a finite number, got nan$"),
    ({"size": (0.1, 0.1, INF)}, r"^size\[2\] must be a finite number, got inf$"),
    ({"center": np.array([0.0, np.nan, 1.0])}, r"^center\[1\] must be a finite number, got nan$"),
    # negative size
    ({"size": (-0.01, 0.1, 0.1)}, r"^size must not be negative, got \(-0\.01, 0\.1, 0\.1\)$"),
    ({"size": (0.1, 0.1, -INF)}, r"^size\[2\] must be a finite number, got -inf$"),
    # wrong length / shape / type
    ({"center": (0.0, 0.0)}, r"^center must have 3 numbers, got 2$"),
    ({"center": (0.0, 0.0, 0.0, 0.0)}, r"^center must have 3 numbers, got 4$"),
    ({"size": [0.1]}, r"^size must have 3 numbers, got 1$"),
    ({"center": np.zeros(2)}, r"^center must have shape \(3,\), got shape \(2,\)$"),
    ({"center": np.zeros((1, 3))}, r"^center must have shape \(3,\), got shape \(1, 3\)$"),
    ({"center": "abc"}, r"^center must be a sequence of 3 numbers, got 'abc'$"),
    ({"center": (0.0, "1", 0.0)}, r"^center\[1\] must be a finite number, got '1'$"),
    # confidence
    ({"confidence": -0.1}, r"^confidence must be in \[0, 1\], got -0\.1$"),
    ({"confidence": 1.5}, r"^confidence must be in \[0, 1\], got 1\.5$"),
    ({"confidence": NAN}, r"^confidence must be a finite number, got nan$"),
    ({"confidence": None}, r"^confidence must be a finite number, got None$"),
    # bool is not a number
    ({"confidence": True}, r"^confidence must be a finite number, got True$"),
    ({"center": (True, 0.0, 0.9)}, r"^center\[0\] must be a finite number, got True$"),
    ({"size": (0.1, False, 0.1)}, r"^size\[1\] must be a finite number, got False$"),
    # labels
    ({"label": ""}, r"^label must not be empty$"),
    ({"label": "   "}, r"^label must not be empty$"),
    ({"label": " \t\n\r "}, r"^label must not be empty$"),
    ({"label": "cu\x00p"}, r"^label must not contain control characters$"),
    ({"label": "\x07bell"}, r"^label must not contain control characters$"),
    ({"label": "\x1b[31mred"}, r"^label must not contain control characters$"),
    ({"label": "cup\x7f"}, r"^label must not contain control characters$"),
    ({"label": 5}, r"^label must be a string, got 5$"),
    ({"label": None}, r"^label must be a string, got None$"),
    ({"label": b"cup"}, r"^label must be a string, got b'cup'$"),
    ({"label": "x" * 201}, r"^label must be at most 200 characters, got 201$"),
    # features
    ({"feature": np.zeros(4)}, r"^feature must have a non-zero norm$"),
    ({"feature": [0.0, 0.0]}, r"^feature must have a non-zero norm$"),
    ({"feature": [1.0, NAN, 0.0, 0.0]}, r"^feature must be finite$"),
    ({"feature": [1.0, INF]}, r"^feature must be finite$"),
    ({"feature": []}, r"^feature must be a non-empty 1-D array, got shape \(0,\)$"),
    ({"feature": [[1.0, 0.0], [0.0, 1.0]]},
     r"^feature must be a non-empty 1-D array, got shape \(2, 2\)$"),
    ({"feature": ["a", "b"]}, r"^feature must be a 1-D array of numbers: "),
    # track ids and orientation
    ({"track_id": True}, r"^track_id must be an int or a string, got True$"),
    ({"track_id": 1.5}, r"^track_id must be an int or a string, got 1\.5$"),
    ({"track_id": "   "}, r"^track_id must be 1 to 200 characters$"),
    ({"orientation": (1.0, 1.0, 0.0, 0.0)},
     r"^orientation must be a unit quaternion \(w, x, y, z\); its norm is 1\.41421$"),
    ({"orientation": (0.0, 0.0, 0.0, 0.0)},
     r"^orientation must be a non-zero quaternion \(w, x, y, z\), got \(0\.0, 0\.0, 0\.0, 0\.0\)$"),
    ({"orientation": (1.0, 0.0, 0.0)}, r"^orientation must have 4 numbers, got 3$"),
]


@pytest.mark.parametrize(("change", "message"), BAD_DETECTIONS,
                         ids=[f"{i}-{next(iter(c))}" for i, (c, _) in enumerate(BAD_DETECTIONS)])
def test_bad_detection_is_rejected_and_scan_writes_nothing(
    filled: ObjectMemory, change: dict[str, Any], message: str
) -> None:
    before = _picture(filled)
    with pytest.raises(InvalidInput, match=message) as info:
        filled.observe(3.0, [det("cup", 0.0, 0.0), Detection(**{**GOOD, **change})])
    assert isinstance(info.value, LocimemError)
    assert isinstance(info.value, ValueError)
    _assert_nothing_written(filled, before)


def test_good_detection_is_normalised() -> None:
    d = Detection("  Coffee\t  CUP ", 1, np.array([1, 2, 3]), [0, 0, 0], track_id=7,
                  orientation=(-1.0, 0.0, 0.0, 0.0), feature=[3, 4])
    assert d.label == "coffee cup"
    assert d.confidence == 1.0 and type(d.confidence) is float
    assert d.center == (1.0, 2.0, 3.0)
    assert d.size == (0.0, 0.0, 0.0)
    assert d.track_id == "7"
    assert d.orientation == (1.0, 0.0, 0.0, 0.0)  # one canonical sign: w >= 0
    assert d.feature is not None and d.feature.dtype == np.float32
    assert d.feature.tolist() == [3.0, 4.0]
    assert not d.feature.flags.writeable


def test_label_with_c1_control_character_is_rejected() -> None:
    with pytest.raises(InvalidInput, match="must not contain control characters"):
        Detection("cup\x9b", 0.9, (0.0, 0.0, 0.0), (0.1, 0.1, 0.1))


# -- one scan -------------------------------------------------------------------------------
@pytest.mark.parametrize(("t", "message"), [
    (NAN, r"^t must be a finite number, got nan$"),
    (INF, r"^t must be a finite number, got inf$"),
    (-INF, r"^t must be a finite number, got -inf$"),
    (True, r"^t must be a finite number, got True$"),
    ("3.0", r"^t must be a finite number, got '3\.0'$"),
    (None, r"^t must be a finite number, got None$"),
])
def test_bad_scan_time(filled: ObjectMemory, t: Any, message: str) -> None:
    before = _picture(filled)
    with pytest.raises(InvalidInput, match=message):
        filled.observe(t, [det("cup", 0.0, 0.0)])
    _assert_nothing_written(filled, before)


def test_time_going_backwards_is_rejected_and_equal_time_is_allowed(filled: ObjectMemory) -> None:
    before = _picture(filled)
    with pytest.raises(InvalidInput, match=(r"^t=1\.999 is before the latest scan \(t=2\.0\); "
                                            r"scans must not go back in time$")):
        filled.observe(1.999, [det("cup", 0.0, 0.0)])
    assert _picture(filled) == before
    result = filled.observe(2.0, [det("cup", 0.0, 0.0)])
    assert result.t == 2.0
    assert filled.now == 2.0
    assert filled._live.store.count("commits", "test") == 4


def test_time_going_backwards_after_reopen(filled: ObjectMemory, store_path: Path) -> None:
    filled.close()
    with ObjectMemory.open(store_path, scope="test") as again:
        assert again.now == 2.0
        before = _picture(again)
        with pytest.raises(InvalidInput, match=r"^t=-5\.0 is before the latest scan \(t=2\.0\)"):
            again.observe(-5.0, [])
        _assert_nothing_written(again, before)


@pytest.mark.parametrize(("detections", "message"), [
    ([det("cup", 0.0, 0.0), {"label": "cup"}], r"^detections\[1\] must be a Detection, got dict$"),
    ([("cup", 0.9, (0, 0, 0), (1, 1, 1))], r"^detections\[0\] must be a Detection, got tuple$"),
    ([det("cup", 0.0, 0.0), det("book", 1, 1), None],
     r"^detections\[2\] must be a Detection, got NoneType$"),
    (det("cup", 0.0, 0.0), r"^detections must be a list of Detection"),
    ("cup", r"^detections must be a list of Detection"),
    (b"cup", r"^detections must be a list of Detection"),
])
def test_non_detection_in_scan(filled: ObjectMemory, detections: Any, message: str) -> None:
    before = _picture(filled)
    with pytest.raises(InvalidInput, match=message):
        filled.observe(3.0, detections)
    _assert_nothing_written(filled, before)


@pytest.mark.parametrize("detections", [None, 5])
def test_non_iterable_detections_raise_invalid_input(mem: ObjectMemory, detections: Any) -> None:
    with pytest.raises(InvalidInput, match="detections must be a list of Detection"):
        mem.observe(0.0, detections)


def test_embedding_width_must_match_earlier_scans(filled: ObjectMemory) -> None:
    before = _picture(filled)
    with pytest.raises(InvalidInput, match=(r"^detections\[1\]\.feature has width 3, but this "
                                            r"memory's embeddings have width 4$")):
        filled.observe(3.0, [det("cup", 0.0, 0.0, feature=[1, 0, 0, 0]),
                             det("cup", 3.0, 3.0, feature=[1, 0, 0])])
    _assert_nothing_written(filled, before)


def test_embedding_width_is_remembered_across_reopen(filled: ObjectMemory,
                                                     store_path: Path) -> None:
    filled.close()
    with ObjectMemory.open(store_path, scope="test") as again:
        before = _picture(again)
        assert before["snapshot"]["feature_dim"] == 4
        with pytest.raises(InvalidInput, match=r"^detections\[0\]\.feature has width 8, but"):
            again.observe(3.0, [det("mug", 5.0, 5.0, feature=np.ones(8))])
        _assert_nothing_written(again, before)


def test_two_widths_in_one_scan_reject_the_whole_scan(mem: ObjectMemory) -> None:
    before = _picture(mem)
    assert before["counts"]["raw"] == {"commits": 0, "observations": 0, "events": 0,
                                       "objects": 0}
    scan = [
        det("cup", 0.0, 0.0, feature=[1.0, 0.0, 0.0, 0.0]),
        det("book", 1.0, 0.0),
        det("mug", 2.0, 0.0, feature=[0.0, 1.0, 0.0, 0.0]),
        det("glass", 3.0, 0.0, feature=[1.0, 0.0, 0.0, 0.0, 0.0]),
    ]
    with pytest.raises(InvalidInput, match=(r"^detections\[3\]\.feature has width 5, but this "
                                            r"memory's embeddings have width 4$")):
        mem.observe(0.0, scan)
    assert _picture(mem) == before
    assert mem.now is None
    assert mem.objects() == []
    # the rejected scan did not fix the width either: width 5 alone is now accepted
    result = mem.observe(0.0, [scan[3]])
    assert result.commit == 1
    assert result.assignments == (1,)
    assert mem.snapshot()["feature_dim"] == 5


def test_bad_camera_argument(filled: ObjectMemory) -> None:
    before = _picture(filled)
    with pytest.raises(InvalidInput, match=r"^camera must be a Camera or None, got dict$"):
        filled.observe(3.0, [det("cup", 0.0, 0.0)], camera=dict(CAM))
    _assert_nothing_written(filled, before)


@pytest.mark.parametrize(("change", "message"), [
    ({"fov_deg": 180.0}, r"^camera\.fov_deg must be < 180 degrees, got 180\.0$"),
    ({"fov_deg": 270}, r"^camera\.fov_deg must be < 180 degrees, got 270\.0$"),
    ({"vfov_deg": 180.0}, r"^camera\.vfov_deg must be < 180 degrees, got 180\.0$"),
    ({"fov_deg": 0.0}, r"^camera\.fov_deg must be > 0, got 0\.0$"),
    ({"fov_deg": NAN}, r"^camera\.fov_deg must be a finite number, got nan$"),
    ({"range_m": 0.0}, r"^camera\.range_m must be > 0, got 0\.0$"),
    ({"range_m": -1.0}, r"^camera\.range_m must be > 0, got -1\.0$"),
    ({"range_m": INF}, r"^camera\.range_m must be a finite number, got inf$"),
    ({"quaternion": (1.0, 1.0, 0.0, 0.0)},
     r"^camera\.quaternion must be a unit quaternion \(w, x, y, z\); its norm is 1\.41421$"),
    ({"quaternion": (0.5, 0.0, 0.0, 0.0)},
     r"^camera\.quaternion must be a unit quaternion \(w, x, y, z\); its norm is 0\.5$"),
    ({"quaternion": (0.0, 0.0, 0.0, 0.0)}, r"^camera\.quaternion must be a non-zero quaternion"),
    ({"position": (0.0, NAN, 1.0)}, r"^camera\.position\[1\] must be a finite number, got nan$"),
    ({"depth": np.ones(5)}, r"^camera\.depth must be a \(h, w\) array, got shape \(5,\)$"),
])
def test_bad_camera(filled: ObjectMemory, change: dict[str, Any], message: str) -> None:
    before = _picture(filled)
    with pytest.raises(InvalidInput, match=message):
        filled.observe(3.0, [det("cup", 0.0, 0.0)], camera=Camera(**{**CAM, **change}))
    _assert_nothing_written(filled, before)


def test_good_camera_is_recorded(filled: ObjectMemory) -> None:
    cam = Camera(**{**CAM, "quaternion": (-1.0, 0.0, 0.0, 0.0)}, depth=np.ones((2, 3)))
    result = filled.observe(3.0, [], camera=cam)
    (commit,) = [c for c in filled._live.store.commits("test") if c.id == result.commit]
    assert commit.camera == {"position": [0.0, 0.0, 1.0], "quaternion": [1.0, 0.0, 0.0, 0.0],
                             "fov_deg": 90.0, "range_m": 5.0, "vfov_deg": 60.0,
                             "depth_shape": [2, 3]}


# -- queries --------------------------------------------------------------------------------
def test_get_and_history_of_unknown_id(filled: ObjectMemory) -> None:
    assert [o.id for o in filled.objects()] == [1, 2]
    with pytest.raises(NotFound, match=r"^no object 999 in scope 'test'$") as info:
        filled.get(999)
    assert str(info.value) == "no object 999 in scope 'test'"
    assert isinstance(info.value, LookupError)
    with pytest.raises(NotFound, match=r"^no object 3 in scope 'test'$"):
        filled.history(3)
    with pytest.raises(InvalidInput, match=r"^object_id must be an integer, got '1'$"):
        filled.get("1")  # type: ignore[arg-type]
    with pytest.raises(InvalidInput, match=r"^object_id must be an integer, got True$"):
        filled.get(True)


@pytest.mark.parametrize(("call", "message"), [
    (lambda m: m.events(kind="NOPE"), r"^kind must be one of APPEARED, PROMOTED, "
     r"LABEL_CHANGED, MOVED, LOST, REACQUIRED, CORRECTED, .*; got 'NOPE'$"),
    (lambda m: m.events(kind=["APPEARED", "nope"]), r"^kind must be one of .*; got 'nope'$"),
    (lambda m: m.objects(status="nope"),
     r"^status must be one of confirmed, tentative, doubted, lost, forgotten; got 'nope'$"),
    (lambda m: m.objects(status=["lost", "gone"]), r"^status must be one of .*; got 'gone'$"),
    (lambda m: m.events(since=NAN), r"^since must be a finite number, got nan$"),
    (lambda m: m.events(until="soon"), r"^until must be a finite number, got 'soon'$"),
    (lambda m: m.events(limit=0), r"^limit must be >= 1, got 0$"),
    (lambda m: m.events(object_id=1.0), r"^object_id must be an integer, got 1\.0$"),
    (lambda m: m.rejected(limit=-1), r"^limit must be >= 1, got -1$"),
    (lambda m: m.recall(5), r"^name must be a string, got int$"),
])
def test_bad_query_arguments(filled: ObjectMemory, call: Any, message: str) -> None:
    with pytest.raises(InvalidInput, match=message):
        call(filled)


def test_query_kinds_are_case_insensitive_and_exact(filled: ObjectMemory) -> None:
    assert [(e.kind.value, e.object_id) for e in filled.events(kind="appeared")] == [
        ("APPEARED", 1), ("APPEARED", 2)]
    assert filled.events(kind="LOST") == []
    assert filled.objects(status="lost") == []


@pytest.mark.parametrize("call", [lambda m: m.objects(status=5), lambda m: m.events(kind=5)],
                         ids=["objects-status", "events-kind"])
def test_non_string_status_or_kind_is_invalid_input(filled: ObjectMemory, call: Any) -> None:
    with pytest.raises(InvalidInput, match="must be one of"):
        call(filled)


@pytest.mark.parametrize("call", [lambda m: m.objects(label=5), lambda m: m.events(label=5)],
                         ids=["objects-label", "events-label"])
def test_non_string_label_filter_is_invalid_input(filled: ObjectMemory, call: Any) -> None:
    with pytest.raises(InvalidInput, match="label"):
        call(filled)


# -- config ---------------------------------------------------------------------------------
@pytest.mark.parametrize(("kwargs", "message"), [
    ({"tight_radius_m": 1.5, "drift_radius_m": 1.0},
     r"^tight_radius_m \(1\.5\) must not exceed drift_radius_m \(1\.0\)$"),
    ({"lost_below": 0.5, "publish_min": 0.5},
     r"^lost_below must be below publish_min, got lost_below=0\.5, publish_min=0\.5$"),
    ({"lost_below": 0.6}, r"^lost_below must be below .* got lost_below=0\.6, publish_min=0\.5$"),
    ({"lost_below": 0.0},
     r"^lost_below = 0\.0 is out of range: must be within \[1e-6, 0\.999\]$"),
    ({"publish_min": 1.5},
     r"^publish_min = 1\.5 is out of range: must be within \[0\.001, 1\]$"),
    ({"promote_after": 0},
     r"^promote_after = 0 is out of range: must be within \[1, 10000\] sightings$"),
    ({"promote_after": 2.0}, r"^promote_after must be an integer, got 2\.0$"),
    ({"promote_after": True}, r"^promote_after must be an integer, got True$"),
    ({"tau_s": 0}, r"^tau_s = 0 is out of range: must be within \[0\.001, 1e6\] s$"),
    ({"tau_s": -1.0}, r"^tau_s = -1\.0 is out of range: must be within \[0\.001, 1e6\] s$"),
    ({"tau_s": NAN}, r"^tau_s must be a finite number, got nan$"),
    ({"tight_radius_m": 0.0},
     r"^tight_radius_m = 0\.0 is out of range: must be within \[0\.001, 10\] m$"),
    ({"reacquire_window_s": -1.0},
     r"^reacquire_window_s = -1\.0 is out of range: must be within \[0, 1e9\] s$"),
    ({"min_detection_confidence": 1.5},
     r"^min_detection_confidence = 1\.5 is out of range: must be within \[0, 1\]$"),
    ({"position_alpha": 2.0},
     r"^position_alpha = 2\.0 is out of range: must be within \[0\.001, 1\]$"),
])
def test_invalid_tracker_config(kwargs: dict[str, Any], message: str) -> None:
    with pytest.raises(InvalidInput, match=message):
        TrackerConfig(**kwargs)


def test_invalid_config_objects() -> None:
    with pytest.raises(InvalidInput, match=r"^unknown TrackerConfig group\(s\) or setting\(s\): "
                       r"bogus, zz \(groups: association, "):
        TrackerConfig.from_dict({"zz": 1, "tau_s": 3.0, "bogus": 2})
    with pytest.raises(InvalidInput, match=r"^config must be a TrackerConfig, got dict$"):
        ObjectMemory.open(":memory:", config={"tau_s": 1.0})  # type: ignore[arg-type]
    assert TrackerConfig.from_dict({"belief": {"tau_s": 3}}).tau_s == 3.0
    with pytest.warns(DeprecationWarning, match=r"group them"):  # a stored config's flat form
        assert TrackerConfig.from_dict({"tau_s": 3}).tau_s == 3.0


# -- scopes ---------------------------------------------------------------------------------
@pytest.mark.parametrize(("scope", "message"), [
    ("", r"^scope must be a string of 1 to 64 characters, got ''$"),
    ("x" * 65, r"^scope must be a string of 1 to 64 characters, got 'xxxx"),
    (None, r"^scope must be a string of 1 to 64 characters, got None$"),
    (5, r"^scope must be a string of 1 to 64 characters, got 5$"),
    ("a b", r"^scope may hold only letters, digits and - _ \. /, got 'a b'$"),
    ("home;drop", r"^scope may hold only letters, digits and - _ \. /, got 'home;drop'$"),
    ("tab\t", r"^scope may hold only letters, digits and - _ \. /, got 'tab\\t'$"),
    ("a'b", r"^scope may hold only letters"),
])
def test_invalid_scope(store_path: Path, scope: Any, message: str) -> None:
    with pytest.raises(ScopeError, match=message):
        ObjectMemory.open(store_path, scope=scope)
    assert sorted(os.listdir(store_path.parent)) == []  # rejected before touching the disk


def test_valid_scopes(store_path: Path) -> None:
    for scope in ("a", "x" * 64, "home/kitchen-1_v.2"):
        with ObjectMemory.open(store_path, scope=scope) as memory:
            assert memory.scope == scope


# -- files ----------------------------------------------------------------------------------
def test_text_file_is_not_a_store_and_is_left_alone(tmp_path: Path) -> None:
    path = tmp_path / "notes.txt"
    content = b"shopping list\n- milk\n- eggs\n" * 50
    path.write_bytes(content)
    for read_only in (False, True):
        with pytest.raises(NotAStore, match=r"'.*notes\.txt' is not a locimem store "
                                            r"\(file is not a database\)"):
            ObjectMemory.open(path, read_only=read_only)
        assert path.read_bytes() == content
    assert not (tmp_path / "notes.txt-wal").exists()
    assert not (tmp_path / "notes.txt-shm").exists()


def _unrelated_sqlite(path: Path, with_meta: bool = False) -> bytes:
    conn = sqlite3.connect(path)
    conn.execute("CREATE TABLE recipes (name TEXT, minutes INTEGER)")
    conn.execute("INSERT INTO recipes VALUES ('soup', 30)")
    if with_meta:
        conn.execute("CREATE TABLE meta (key TEXT PRIMARY KEY, value TEXT NOT NULL)")
        conn.execute("INSERT INTO meta VALUES ('format', 'other-app')")
    conn.commit()
    conn.close()
    return path.read_bytes()


def test_unrelated_sqlite_file_is_not_a_store(tmp_path: Path) -> None:
    path = tmp_path / "recipes.db"
    content = _unrelated_sqlite(path)
    with pytest.raises(NotAStore, match=r"'.*recipes\.db' is not a locimem store "
                                        r"\(no such table: meta\); pass a new path"):
        ObjectMemory.open(path, read_only=True)
    assert path.read_bytes() == content
    with pytest.raises(NotAStore, match=r"is not a locimem store \(no such table: meta\)"):
        ObjectMemory.open(path)
    # the file still holds exactly the unrelated data
    conn = sqlite3.connect(path)
    assert conn.execute("SELECT name, minutes FROM recipes").fetchall() == [("soup", 30)]
    assert [r[0] for r in conn.execute("SELECT name FROM sqlite_master WHERE type='table'")] == [
        "recipes"]
    conn.close()


def test_sqlite_file_with_a_foreign_meta_table_is_not_a_store(tmp_path: Path) -> None:
    path = tmp_path / "other.db"
    content = _unrelated_sqlite(path, with_meta=True)
    with pytest.raises(NotAStore, match=r"'.*other\.db' is a SQLite file but not a locimem store$"):
        ObjectMemory.open(path, read_only=True)
    assert path.read_bytes() == content


@pytest.mark.parametrize("with_meta", [False, True], ids=["no-meta", "foreign-meta"])
def test_writable_open_leaves_a_foreign_sqlite_file_byte_identical(
    tmp_path: Path, with_meta: bool
) -> None:
    path = tmp_path / "recipes.db"
    content = _unrelated_sqlite(path, with_meta=with_meta)
    with pytest.raises(NotAStore):
        ObjectMemory.open(path)
    assert path.read_bytes() == content


def _set_meta(path: Path, key: str, value: str) -> None:
    conn = sqlite3.connect(path)
    conn.execute("UPDATE meta SET value = ? WHERE key = ?", (value, key))
    conn.commit()
    conn.close()


def test_store_from_a_newer_schema(store_path: Path) -> None:
    with ObjectMemory.open(store_path, scope="test") as memory:
        memory.observe(0.0, [det("cup", 0.0, 0.0)])
    _set_meta(store_path, "schema_version", "999")
    content = store_path.read_bytes()
    for read_only in (False, True):
        with pytest.raises(SchemaVersionError, match=(
            r"'.*m\.loci' has schema version 999, newer than this locimem understands \(3\); "
            r"upgrade locimem to open it$"
        )):
            ObjectMemory.open(store_path, scope="test", read_only=read_only)
    assert store_path.read_bytes() == content
    _set_meta(store_path, "schema_version", "3")  # put back: the store opens again, intact
    with ObjectMemory.open(store_path, scope="test") as memory:
        assert [o.label for o in memory.objects()] == ["cup"]


def test_store_with_a_garbled_schema_version(store_path: Path) -> None:
    ObjectMemory.open(store_path).close()
    _set_meta(store_path, "schema_version", "two")
    with pytest.raises((NotAStore, SchemaVersionError)):
        ObjectMemory.open(store_path, read_only=True)


def test_read_only_open_of_a_missing_path(tmp_path: Path) -> None:
    path = tmp_path / "nowhere.loci"
    with pytest.raises(NotFound, match=r"^no store at '.*nowhere\.loci'$"):
        ObjectMemory.open(path, read_only=True)
    assert sorted(os.listdir(tmp_path)) == []
    with pytest.raises(NotFound, match=r"^an in-memory store cannot be opened read-only"):
        ObjectMemory.open(":memory:", read_only=True)


def test_read_only_memory_refuses_to_write(filled: ObjectMemory, store_path: Path) -> None:
    filled.close()
    with ObjectMemory.open(store_path, scope="test", read_only=True) as ro:
        assert ro.read_only is True
        before = _picture(ro)
        with pytest.raises(ReadOnly, match=r"^observe\(\) needs a writable memory; this one "
                                           r"was opened read-only$"):
            ro.observe(3.0, [det("cup", 0.0, 0.0)])
        with pytest.raises(ReadOnly, match=r"^this store was opened read-only$"), \
                ro._live.store.atomic():
            pass  # pragma: no cover - atomic() refuses before entering
        assert _picture(ro) == before
    with ObjectMemory.open(store_path, scope="test") as again:
        assert _picture(again) == before


def test_use_after_close(filled: ObjectMemory) -> None:
    filled.close()
    filled.close()  # safe twice
    calls = [
        lambda: filled.observe(3.0, []),
        filled.objects,
        filled.tracked,
        lambda: filled.get(1),
        lambda: filled.history(1),
        filled.events,
        filled.rejected,
        lambda: filled.recall("cup"),
        filled.snapshot,
        filled.rebuild_from_log,
        lambda: filled._live.store,
        lambda: filled.read_only,
    ]
    for call in calls:
        with pytest.raises(StoreClosed, match=r"^this memory is closed; open it again with "
                                              r"ObjectMemory\.open\(\)$"):
            call()
    assert "closed" in repr(filled)


def test_second_writer_is_locked_out(filled: ObjectMemory, store_path: Path) -> None:
    before = _picture(filled)
    with pytest.raises(StoreLocked, match=(rf"'.*m\.loci' is already open for writing "
                                           rf"\(pid {os.getpid()}\); close that memory, or open "
                                           r"this one with read_only=True$")):
        ObjectMemory.open(store_path, scope="test")
    with pytest.raises(StoreLocked):
        ObjectMemory.open(store_path, scope="another")
    # a reader is welcome while the writer holds the lock, and sees what it committed
    with ObjectMemory.open(store_path, scope="test", read_only=True) as ro:
        assert ro.snapshot() == before["snapshot"]
        filled.observe(5.0, [det("mug", 3.0, 3.0)])
        assert [o.label for o in ro.objects()] == ["cup", "book"]  # its state is as of opening
    # the failed writers did not break the holder
    assert [o.label for o in filled.objects()] == ["cup", "book", "mug"]
    filled.close()
    with ObjectMemory.open(store_path, scope="test") as writer:
        assert [o.label for o in writer.objects()] == ["cup", "book", "mug"]
        assert writer.now == 5.0
        writer.observe(6.0, [])
