"""What ``ObjectMemory.open`` prepares for steady scans: BLAS threads (``threads``), the
indexes built at open (``warm``) and the garbage collector's view of a large state
(``freeze_gc``); each checked at the boundary."""

from __future__ import annotations

import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from locimem import Detection, ObjectMemory
from locimem.errors import InvalidInput
from locimem.threads import blas_threads, limit_blas


def test_threads_bound_every_blas_library_found() -> None:
    before = blas_threads()
    try:
        assert limit_blas(1) == len(before)
        assert set(blas_threads()) == set(before)
        assert all(n == 1 for n in blas_threads().values())
        with ObjectMemory.open(":memory:", threads=2):
            assert all(n == 2 for n in blas_threads().values())
        with ObjectMemory.open(":memory:", threads=None):  # left as it is
            assert all(n == 2 for n in blas_threads().values())
    finally:
        for n in set(before.values()):
            limit_blas(n)
    if sys.platform == "linux":  # numpy's wheels bundle OpenBLAS, found through /proc
        assert before, "no BLAS library found in this process"


@pytest.mark.parametrize("kwargs, message", [
    ({"threads": 0}, "threads"), ({"threads": 1.5}, "threads"), ({"threads": True}, "threads"),
    ({"warm": "yes"}, "warm must be True, False or None"),
    ({"freeze_gc": None}, "freeze_gc must be True or False"),
])
def test_bad_settings_are_refused_before_the_store_is_made(tmp_path: Path, kwargs: dict,
                                                           message: str) -> None:
    path = tmp_path / "m.loci"
    with pytest.raises(InvalidInput, match=message):
        ObjectMemory.open(path, **kwargs)
    assert not path.exists()


def test_a_writable_open_warms_and_a_read_only_one_does_not(tmp_path: Path) -> None:
    path = tmp_path / "m.loci"
    with ObjectMemory.open(path) as mem:
        mem.observe(0.0, [Detection("cup", 0.9, (1.0, 0.0, 0.8), (0.1, 0.1, 0.1))])
    for kwargs, built in (({}, True), ({"warm": False}, False), ({"read_only": True}, False),
                          ({"read_only": True, "warm": True}, True)):
        with ObjectMemory.open(path, **kwargs) as mem:
            state = mem._live._state
            grid = state.scene.built and state.scene.relations._grid_built is not None
            assert (not state.indexes_pending, state.scene.built, grid) == (built,) * 3, kwargs


_FREEZE = textwrap.dedent("""
    import gc, sys
    from locimem import Detection, ObjectMemory
    from locimem.memory.facade import FREEZE_ABOVE
    n, freeze = int(sys.argv[1]), sys.argv[2] == "1"
    with ObjectMemory.open(sys.argv[3], durable=False) as mem:
        for s in range(0, n, 500):
            mem.observe(s / 1000, [Detection("cup", 0.9, (0.5 * i, 0.0, 0.8), (0.1, 0.1, 0.1))
                                   for i in range(s, min(n, s + 500))])
    gc.collect()
    assert gc.get_freeze_count() == 0
    from locimem.gcpause import _REFREEZE
    with ObjectMemory.open(sys.argv[3], freeze_gc=freeze):
        print(n >= FREEZE_ABOVE, gc.get_freeze_count() > 0, _REFREEZE in gc.callbacks)
    print(_REFREEZE in gc.callbacks)  # closed: the hook is gone
""")


@pytest.mark.parametrize("n, freeze, printed", [
    (6000, True, "True True True"), (6000, False, "True False False"),
    (300, True, "False False False")])
def test_a_large_state_is_frozen_out_of_the_collectors_walks(tmp_path: Path, n: int,
                                                             freeze: bool, printed: str) -> None:
    # in a process of its own: gc.freeze() holds for the whole process
    out = subprocess.run([sys.executable, "-c", _FREEZE, str(n), "1" if freeze else "0",
                          str(tmp_path / "m.loci")], capture_output=True, text=True,
                         check=True, timeout=300)
    assert out.stdout.splitlines()[-2:] == [printed, "False"]


_SOLVER = textwrap.dedent("""
    import sys
    from locimem import ObjectMemory
    before = "scipy.optimize" in sys.modules
    with ObjectMemory.open(sys.argv[1], warm=sys.argv[2] == "1"):
        print(before, "scipy.optimize" in sys.modules)
""")


@pytest.mark.parametrize("warm, printed", [(True, "False True"), (False, "False False")])
def test_a_warm_open_imports_the_assignment_solver(tmp_path: Path, warm: bool,
                                                   printed: str) -> None:
    # the first ambiguous scan would otherwise import scipy.optimize (tens of ms)
    out = subprocess.run([sys.executable, "-c", _SOLVER, str(tmp_path / "m.loci"),
                          "1" if warm else "0"], capture_output=True, text=True, check=True,
                         timeout=300)
    assert out.stdout.strip() == printed
