"""The threads a scan may use: the BLAS pool numpy and scipy multiply matrices with.

A scan's own work runs on the calling thread. What can spread it over more cores is the BLAS
library behind numpy's matrix products (the appearance tier compares a detection's
embedding with every held one): OpenBLAS starts one worker per core and wakes them for a
product big enough, so a scan at 100,000 embeddings keeps both cores of a 2-core robot
computer busy, and its time then depends on what else runs there. :func:`limit_blas` sets
the pool of every BLAS library loaded in the process (OpenBLAS, as numpy's and scipy's
wheels bundle it; MKL; BLIS) through its own C entry point, found with :mod:`ctypes`, with
no package added. ``ObjectMemory.open(threads=1)`` (the default) calls it; ``threads=None``
leaves the pools as they are.

A BLAS pool belongs to the process, not to one memory: the setting holds for every matrix
product the process makes afterwards, until something sets it again. A library loaded
later (``scipy.linalg`` imported after the memory opened) keeps its own default; call
:func:`limit_blas` again after importing it. The text encoder's ``onnxruntime`` session has
its own setting (``MiniLMEncoder(threads=1)``).

>>> n = limit_blas(1)  # the number of BLAS libraries it reached (0 where none is found)
>>> all(v == 1 for v in blas_threads().values())
True
"""

from __future__ import annotations

import ctypes
import os
import sys
from collections.abc import Iterator

from locimem.check import check_int

__all__ = ["blas_threads", "limit_blas"]

# (set, get) entry points by library family; the first a library exports is used
_ENTRY_POINTS: tuple[tuple[str, str], ...] = (
    ("scipy_openblas_set_num_threads64_", "scipy_openblas_get_num_threads64_"),
    ("scipy_openblas_set_num_threads", "scipy_openblas_get_num_threads"),
    ("openblas_set_num_threads64_", "openblas_get_num_threads64_"),
    ("openblas_set_num_threads", "openblas_get_num_threads"),
    ("MKL_Set_Num_Threads", "MKL_Get_Max_Threads"),
    ("bli_thread_set_num_threads", "bli_thread_get_num_threads"),
)
_NAMES = ("openblas", "mkl_rt", "libmkl", "blis")


def _loaded_libraries() -> Iterator[str]:
    """Paths of the BLAS-looking shared libraries loaded in this process (Linux: from
    ``/proc/self/maps``; elsewhere: the ones numpy's and scipy's wheels bundle, if loaded)."""
    seen: set[str] = set()
    try:
        with open("/proc/self/maps", encoding="utf-8", errors="replace") as maps:
            for line in maps:
                path = line.rstrip("\n").split(maxsplit=5)[-1]
                if path.startswith("/") and path not in seen and _is_blas(path):
                    seen.add(path)
                    yield path
        return
    except OSError:
        pass
    for module in ("numpy", "scipy"):
        mod = sys.modules.get(module)
        if mod is None or not getattr(mod, "__file__", None):
            continue
        root = os.path.dirname(os.path.dirname(mod.__file__ or ""))
        for folder in (f"{module}.libs", os.path.join(module, ".dylibs")):
            where = os.path.join(root, folder)
            if os.path.isdir(where):
                for name in sorted(os.listdir(where)):
                    path = os.path.join(where, name)
                    if path not in seen and _is_blas(path):
                        seen.add(path)
                        yield path


def _is_blas(path: str) -> bool:
    name = os.path.basename(path).lower()
    return any(n in name for n in _NAMES) and (".so" in name or name.endswith(".dylib")
                                               or name.endswith(".dll"))


def _pools() -> Iterator[tuple[str, ctypes.CDLL, str, str]]:
    """(path, library, set entry, get entry) of each loaded BLAS library with an entry
    point this module knows."""
    for path in _loaded_libraries():
        try:
            lib = ctypes.CDLL(path, mode=getattr(os, "RTLD_NOLOAD", 0) | ctypes.RTLD_GLOBAL)
        except OSError:  # not loaded after all (RTLD_NOLOAD), or not loadable here
            continue
        for set_name, get_name in _ENTRY_POINTS:
            if hasattr(lib, set_name):
                yield path, lib, set_name, get_name
                break


def limit_blas(threads: int) -> int:
    """Let every BLAS library loaded in the process use at most ``threads`` threads (see
    the module). Returns how many libraries it set."""
    n = check_int(threads, "threads", lo=1, hi=1024)
    done = 0
    for _, lib, set_name, _ in _pools():
        entry = getattr(lib, set_name)
        entry.restype = None
        entry.argtypes = [ctypes.c_int]
        entry(n)
        done += 1
    return done


def blas_threads() -> dict[str, int]:
    """The thread count of each loaded BLAS library, by path (what :func:`limit_blas` would
    set; for a report such as ``locimem bench``)."""
    out: dict[str, int] = {}
    for path, lib, _, get_name in _pools():
        entry = getattr(lib, get_name, None)
        if entry is not None:
            entry.restype = ctypes.c_int
            entry.argtypes = []
            out[path] = int(entry())
    return out
