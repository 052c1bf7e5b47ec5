"""Untyped errors turned typed (issue 13, item 7): every bad argument below raises a
:class:`LocimemError` (mostly :class:`InvalidInput`) that says what was expected, nothing is
written, and the command line prints one line, not a traceback."""

from __future__ import annotations

import subprocess
import sys

import numpy as np
import pytest

from locimem import Camera, Detection, ObjectMemory
from locimem.check import MAX_ABS_COORD_M, MAX_SIZE_M
from locimem.errors import InvalidInput, LocimemError
from tests.helpers import det

CAM = dict(position=(0.0, 0.0, 1.0), quaternion=(1.0, 0.0, 0.0, 0.0), fov_deg=60.0,
           range_m=5.0)


def _run(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "locimem", *args], capture_output=True,
                          text=True, check=False)


@pytest.mark.parametrize(("depth", "says"), [
    ([["a", "b"], ["c", "d"]], "numbers"),
    (np.array([[object(), object()]], dtype=object), "numbers"),
    ([[1.0, 2.0], [3.0]], "(h, w)"),
    (np.ones((2, 2)) * (1 + 1j), "real"),
    ("far", "numbers"),
])
def test_bad_depth_images_are_invalid_input(depth, says):
    with pytest.raises(InvalidInput, match=r"camera\.depth") as err:
        Camera(**CAM, depth=depth)
    assert says in str(err.value)


def test_constructing_a_memory_from_a_path_says_to_open_it(tmp_path):
    path = tmp_path / "home.loci"
    with pytest.raises(InvalidInput, match=r"ObjectMemory\.open\('.*home\.loci', scope=\.\.\.\)"):
        ObjectMemory(str(path))  # type: ignore[arg-type]
    with pytest.raises(InvalidInput, match=r"ObjectMemory\.open\(path, .*got a int"):
        ObjectMemory(3)  # type: ignore[arg-type]
    assert not path.exists()  # nothing opened, nothing made

def test_lone_surrogate_in_a_label_is_invalid_and_nothing_is_written(mem):
    with pytest.raises(InvalidInput, match="surrogate"):
        Detection("cup\ud800", 0.9, (0.0, 0.0, 0.0), (0.1, 0.1, 0.1))
    with pytest.raises(InvalidInput, match="surrogate"):
        mem.observe(1.0, [det("cup", 1.0, 1.0)], source="cam\udfff")
    assert mem._live.store.conn.execute("SELECT count(*) FROM commits").fetchone()[0] == 0


BIG = 2**63


@pytest.mark.parametrize("call", [
    lambda m: m.get(BIG), lambda m: m.describe(BIG), lambda m: m.history(BIG),
    lambda m: m.forget(BIG), lambda m: m.relabel(BIG, "mug"), lambda m: m.where_was(BIG, 1.0),
    lambda m: m.events(object_id=BIG), lambda m: m.audit(object_id=BIG),
    lambda m: m.move(BIG, (1.0, 1.0, 1.0)), lambda m: m.get(-BIG - 1),
], ids=["get", "describe", "history", "forget", "relabel", "where_was", "events", "audit",
        "move", "get-negative"])
def test_object_ids_past_63_bits_are_invalid_input(mem, call):
    mem.observe(1.0, [det("cup", 1.0, 1.0)])
    with pytest.raises(InvalidInput, match=r"object_id|label_or_id") as err:
        call(mem)
    assert "2**63" in str(err.value) or "9223372036854775807" in str(err.value)
    assert mem._live.store.conn.execute("SELECT count(*) FROM commits").fetchone()[0] == 1


def test_huge_coordinates_are_outside_the_documented_domain(mem):
    with pytest.raises(InvalidInput, match="center") as err:
        Detection("cup", 0.9, (1e308, 0.0, 0.0), (0.1, 0.1, 0.1))
    assert f"{MAX_ABS_COORD_M:g}" in str(err.value)
    with pytest.raises(InvalidInput, match="size"):
        Detection("cup", 0.9, (0.0, 0.0, 0.0), (1e19, 1e19, 1e19))
    with pytest.raises(InvalidInput, match="point"):
        mem.near((1e308, 0.0, 0.0), 1.0)
    with pytest.raises(InvalidInput, match="radius"):
        mem.near((0.0, 0.0, 0.0), 1e308)
    with pytest.raises(InvalidInput, match=r"camera\.position"):
        Camera(**{**CAM, "position": (0.0, -1e7, 0.0)})
    with pytest.raises(InvalidInput, match=r"camera\.range_m"):
        Camera(**{**CAM, "range_m": 1e300})
    # the edge of the domain is inside it
    d = Detection("cup", 0.9, (MAX_ABS_COORD_M, -MAX_ABS_COORD_M, 0.0), (0.1, 0.1, 0.1))
    assert d.center == (1e6, -1e6, 0.0)
    assert mem.near((0.0, 0.0, 0.0), 2 * MAX_SIZE_M) == []  # the largest radius


def test_cli_events_with_a_huge_object_id_prints_one_line(tmp_path):
    store = tmp_path / "m.loci"
    with ObjectMemory.open(store, scope="default") as m:
        m.observe(1.0, [det("cup", 1.0, 1.0)])
    for cmd in (["events", str(store), "--object", str(BIG)],
                ["audit", str(store), "--object", str(BIG)]):
        proc = _run(*cmd)
        assert proc.returncode == 2, proc.stderr
        assert "Traceback" not in proc.stderr
        assert proc.stderr.count("\n") == 1 and proc.stderr.startswith("error: object_id")


def test_every_error_here_is_a_locimem_error():
    assert issubclass(InvalidInput, LocimemError)
