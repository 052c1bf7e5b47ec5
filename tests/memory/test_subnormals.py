"""One numeric domain for every backend (issue 37, item 2): a subnormal number (5e-324, 1e-310)
is flushed to 0.0 where it comes in — detections, cameras, corrections, attributes — so SQLite
and PostgreSQL hold the same values (PostgreSQL refused the write: half of 5e-324 in an
object's box underflows there); an attribute integer past 64 bits is refused at
``set_attributes`` as import refuses it."""

from __future__ import annotations

import re
from collections.abc import Callable
from pathlib import Path

import numpy as np
import pytest

from locimem import Camera, Detection, ObjectMemory
from locimem.errors import InvalidInput
from locimem.interchange.validate import validate
from tests import pg

TINY = 5e-324
BACKENDS = [pytest.param(lambda tmp: str(tmp / "m.loci"), id="sqlite"),
            pytest.param(lambda tmp: pg.new_url("tiny"), id="postgres",
                         marks=pg.needs_postgres)]


def test_a_vector_of_plain_floats_is_kept_and_any_other_is_converted_or_refused() -> None:
    from locimem.check import check_vec

    assert check_vec((1.5, -0.0, 1e300), "c") == (1.5, -0.0, 1e300)
    mixed = check_vec([np.float64(0.25), 2, np.float32(0.5)], "c")
    assert mixed == (0.25, 2.0, 0.5) and all(type(x) is float for x in mixed)
    assert check_vec((1.0, TINY, 2.0), "c") == (1.0, 0.0, 2.0)
    for bad, where in (((1.0, float("inf"), 0.0), "c[1]"), ((float("nan"), 0.0, 0.0), "c[0]"),
                       ((0.0, 0.0, True), "c[2]")):
        with pytest.raises(InvalidInput, match=rf"^{re.escape(where)} must be a finite"):
            check_vec(bad, "c")

def test_a_subnormal_is_flushed_to_zero_and_nothing_else_is() -> None:
    from locimem.check import flush_subnormal

    d = Detection("cup", TINY, (TINY, -1e-310, 2.5e-308), (TINY, 0.1, 1e-320),
                  feature=np.array([1.0, 1e-40, -1e-45, 0.0], dtype=np.float32))
    assert d.confidence == 0.0
    assert d.center == (0.0, 0.0, 2.5e-308)  # the smallest normal numbers are kept
    assert d.size == (0.0, 0.1, 0.0)
    assert d.feature.tolist() == [1.0, 0.0, 0.0, 0.0]  # float32's subnormals
    cam = Camera((TINY, 0.0, 1.0), (1.0, 1e-310, 0.0, 0.0), 90.0, 8.0)
    assert cam.position == (0.0, 0.0, 1.0) and cam.quaternion == (1.0, 0.0, 0.0, 0.0)
    assert [flush_subnormal(x) for x in (TINY, -TINY, 0.0, -0.0, 1.0)] == [0.0, 0.0, 0.0, 0.0,
                                                                           1.0]


@pytest.mark.parametrize("where", BACKENDS)
def test_subnormal_inputs_are_stored_as_zero_on_every_backend(
        where: Callable[[Path], str], tmp_path: Path) -> None:
    url = where(tmp_path)
    with ObjectMemory.open(url, scope="home") as mem:
        for t in range(3):  # a new object with a subnormal box: the PostgreSQL write failed
            mem.observe(float(t), [Detection("box", 0.9, (TINY, 1.0, 1e-310), (TINY, 0.2, 0.2))],
                        camera=Camera((0.0, TINY, 1.0), (1.0, 0.0, 0.0, 0.0), 90.0, 8.0))
        mem.move(1, (1e-310, 2.0, 0.0))
        mem.set_attributes(1, {"weight_kg": TINY, "big": 2**63 - 1})
        mem.define_room("kitchen", [(TINY, 0), (6, 0), (6, 4), (0, 4)])
        obj = mem.get(1)
        assert obj.center == (0.0, 2.0, 0.0) and obj.size == (0.0, 0.2, 0.2)
        assert obj.attributes == {"weight_kg": 0.0, "big": 2**63 - 1}
        seen = mem._live.store.observations("home", object_id=1)
        assert [(o.center, o.size) for o in seen] == [((0.0, 1.0, 0.0), (0.0, 0.2, 0.2))] * 3
        assert mem.snapshot() == mem.rebuild_from_log().snapshot()
        assert [o.id for o in mem.objects()] == [1]
    assert validate(url).ok


@pytest.mark.parametrize("value", [2**63, -(2**63) - 1, 10**5000],
                         ids=["2**63", "-2**63-1", "10**5000"])
def test_an_attribute_integer_past_64_bits_is_refused(value: int) -> None:
    with ObjectMemory.open(":memory:", scope="home") as mem:
        mem.observe(0.0, [Detection("cup", 0.9, (1.0, 1.0, 0.5), (0.1, 0.1, 0.1))])
        before = mem.snapshot()
        with pytest.raises(InvalidInput, match=r"attribute 'n' must be an integer within 64 "
                                               r"bits \(-2\*\*63 to 2\*\*63 - 1\)"):
            mem.set_attributes(1, {"n": value})
        assert mem.snapshot() == before and mem._live.store.count("commits", "home") == 1
        mem.set_attributes(1, {"n": -(2**63)})  # the edges are fine
        assert mem.get(1).attributes == {"n": -(2**63)}


def test_a_huge_integer_for_a_float_is_refused_as_not_finite() -> None:
    with pytest.raises(InvalidInput, match=r"center\[0\] must be a finite number, got an "
                                           r"integer of 1329 bits"):
        Detection("cup", 0.9, (10**400, 0, 0), (0.1, 0.1, 0.1))
