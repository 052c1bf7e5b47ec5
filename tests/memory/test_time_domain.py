"""The valid-time domain: a scan or correction far outside it (a clock in milliseconds, 1e300)
is refused with the unit it looks like and writes nothing, so it cannot poison the scope; a
store or directory carrying such a time fails ``validate`` (and so an import)."""

from __future__ import annotations

import sqlite3

import pytest

from locimem import Detection, ObjectMemory
from locimem.check import MAX_ABS_TIME_S
from locimem.errors import InvalidInput
from locimem.interchange.validate import validate_store

CUP = Detection("cup", 0.9, (1.0, 1.0, 0.9), (0.08, 0.08, 0.1))
T0 = 1764600000.0


@pytest.mark.parametrize("t, message", [
    (1e300, "outside the valid-time domain (within ±1e+10 s of t=0: Unix time up to the year "
            "2286); give seconds of valid time"),
    (-1e11, "give seconds of valid time"),
    (T0 * 1e3, "it looks like milliseconds since the epoch: give seconds (t / 1000)"),
    (T0 * 1e6, "it looks like microseconds since the epoch: give seconds (t / 1e+06)"),
    (T0 * 1e9, "it looks like nanoseconds since the epoch: give seconds (t / 1e+09)"),
])
def test_a_scan_outside_the_domain_is_refused_and_the_scope_goes_on(tmp_path, t,
                                                                   message) -> None:
    with ObjectMemory.open(tmp_path / "m.loci") as mem:
        mem.observe(T0, [CUP])
        with pytest.raises(InvalidInput, match="outside the valid-time domain") as err:
            mem.observe(t, [CUP])
        assert message in str(err.value)
        with pytest.raises(InvalidInput, match="outside the valid-time domain"):
            mem.relabel(1, "mug", t=t)
        assert mem.now == T0
        mem.observe(T0 + 1, [CUP])  # the next real scan is taken
        assert len(mem._live.store.commits(mem.scope)) == 2
    assert not validate_store(tmp_path / "m.loci").violations


def test_the_domain_edges_are_accepted(tmp_path) -> None:
    with ObjectMemory.open(tmp_path / "m.loci") as mem:
        mem.observe(-MAX_ABS_TIME_S, [CUP])
        mem.observe(MAX_ABS_TIME_S, [CUP])
        assert mem.now == MAX_ABS_TIME_S


def test_validate_reports_a_time_outside_the_domain(tmp_path) -> None:
    path = tmp_path / "m.loci"
    with ObjectMemory.open(path) as mem:
        mem.observe(T0, [CUP])
        mem.observe(T0 + 1, [CUP])
    with sqlite3.connect(path) as conn:
        conn.execute("UPDATE commits SET recorded_at = -1e300 WHERE id = 2")
    conn.close()
    (v,) = [v for v in validate_store(path).violations if v.rule == "log_order"]
    assert v.ids == (2,)
    assert "outside the valid-time domain" in v.message and "recorded_at=-1e+300" in v.message
