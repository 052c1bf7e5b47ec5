"""Small builders shared by the test files (import with ``from tests.helpers import det``)."""

from __future__ import annotations

import os
import random
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest

from locimem import Detection, ObjectMemory

TABLES = ("commits", "observations", "events", "objects")


def det(
    label: str,
    x: float,
    y: float,
    z: float = 0.9,
    conf: float = 0.9,
    size: tuple[float, float, float] = (0.1, 0.1, 0.1),
    **kw: Any,
) -> Detection:
    """A detection of ``label`` at (x, y, z) in the map frame, metres."""
    return Detection(label, conf, (x, y, z), size, **kw)


def row_counts(mem: ObjectMemory) -> dict[str, Any]:
    """Rows per log table, both through the store's API (this scope) and raw SQL (whole file)."""
    conn = mem._live.store.conn
    return {
        "scoped": {t: mem._live.store.count(t, mem.scope) for t in TABLES},
        "raw": {t: conn.execute(f"SELECT count(*) FROM {t}").fetchone()[0] for t in TABLES},
    }


# A furnished house shared by the scene-graph and query tests: (label, centre, size), metres.
HOUSE = {
    "table": ("kitchen table", (1.5, 1.5, 0.375), (1.2, 0.8, 0.75)),  # top at 0.75
    "cup": ("cup", (1.2, 1.4, 0.80), (0.08, 0.08, 0.1)),  # on the table
    "plate": ("plate", (1.6, 1.5, 0.76), (0.2, 0.2, 0.02)),  # on the table
    "phone": ("phone", (1.9, 1.7, 0.755), (0.08, 0.15, 0.01)),  # on the table
    "shelf": ("shelf", (2.5, 1.5, 0.5), (0.4, 0.8, 1.0)),  # 0.2 m beside the table
    "vase": ("vase", (2.5, 1.5, 1.1), (0.1, 0.1, 0.2)),  # on the shelf, not the table
    "counter": ("counter", (1.2, 2.4, 0.45), (0.8, 0.6, 0.9)),  # 0.2 m behind the table
    "sink": ("sink", (3.3, 3.3, 0.45), (0.5, 0.4, 0.9)),
    "cup2": ("cup", (3.3, 3.8, 0.95), (0.08, 0.08, 0.1)),  # near the sink
    "cupboard": ("cupboard", (2.7, 3.5, 0.9), (0.5, 0.4, 0.6)),  # near the sink too
    "drawer": ("drawer", (3.0, 0.5, 0.5), (0.6, 0.4, 0.15)),
    "fork": ("fork", (3.22, 0.5, 0.47), (0.12, 0.03, 0.02)),  # in the drawer
    "shoes": ("shoes", (1.8, 1.3, 0.05), (0.3, 0.2, 0.1)),  # under the table
    "nightstand": ("nightstand", (7.0, 1.0, 0.25), (0.5, 0.4, 0.5)),
    "bottle": ("water bottle", (7.0, 1.0, 0.6), (0.07, 0.07, 0.2)),  # on the nightstand
    "bed": ("bed", (8.5, 2.5, 0.25), (2.0, 1.6, 0.5)),
}
ID = {name: i for i, name in enumerate(HOUSE, start=1)}
ROOMS = {
    "kitchen": [(0, 0), (4, 0), (4, 4), (0, 4)],
    "hall": [(4, 0), (6, 0), (6, 4), (4, 4)],
    "bedroom": [(6, 0), (10, 0), (10, 4), (6, 4)],
    "garage": [(0, -5), (4, -5), (4, -1), (0, -1)],  # no door to the rest
}


def start_child(script: Path, store: Path, seed: int, ready: Path) -> subprocess.Popen[bytes]:
    """Run ``script STORE SEED READY`` and wait until it has created ``ready`` (its store is
    open); fail the test if it exits or takes more than 15 s."""
    proc = subprocess.Popen([sys.executable, str(script), str(store), str(seed), str(ready)],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    deadline = time.monotonic() + 15.0
    while not ready.exists():
        if proc.poll() is not None:
            _, err = proc.communicate()
            pytest.fail(f"child exited early ({proc.returncode}): {err.decode()}")
        if time.monotonic() > deadline:  # pragma: no cover - a stuck child
            proc.kill()
            proc.wait()
            pytest.fail("child did not open the store within 15 s")
        time.sleep(0.01)
    return proc


def kill_at_random(proc: subprocess.Popen[bytes], rng: random.Random, lo: float,
                   hi: float) -> None:
    """Let the child work for a random while, then SIGKILL it; it must have printed nothing."""
    time.sleep(rng.uniform(lo, hi))
    assert proc.poll() is None, proc.communicate()[1].decode()
    os.kill(proc.pid, signal.SIGKILL)
    out, err = proc.communicate(timeout=10)
    assert proc.returncode == -signal.SIGKILL
    assert (out, err) == (b"", b"")


def file_tree(directory: Path) -> dict[str, bytes]:
    """Every file below ``directory`` (relative POSIX path -> bytes): two trees are
    byte-identical exactly when these are equal."""
    return {p.relative_to(directory).as_posix(): p.read_bytes()
            for p in sorted(directory.rglob("*")) if p.is_file()}


# A day in the furnished house for the pictures (map, Rerun): every HOUSE object seen once a
# second from t=0 to t=50 (no camera: the time-only belief), except that the cup is carried
# from the kitchen table to the counter at t=10 (MOVED), the phone is taken away after t=9
# (tentative from t=20, LOST at t=44) and keys are dropped in the hall at t=15.
CUP_ON_COUNTER = (1.2, 2.2, 0.95)
KEYS = ("keys", (5.0, 2.0, 0.02), (0.1, 0.05, 0.03))


def house_day(mem: ObjectMemory, until: int = 50) -> None:
    """Play the house day (see above) into ``mem``: rooms first, then one scan a second."""
    for name, polygon in ROOMS.items():
        mem.define_room(name, polygon)
    mem.connect_rooms("kitchen", "hall")
    mem.connect_rooms("hall", "bedroom")
    for t in range(until + 1):
        dets = []
        for name, (label, center, size) in HOUSE.items():
            if name == "phone" and t >= 10:
                continue
            if name == "cup" and t >= 10:
                center = CUP_ON_COUNTER
            dets.append(Detection(label, 0.9, center, size))
        if t >= 15:
            dets.append(Detection(KEYS[0], 0.9, KEYS[1], KEYS[2]))
        mem.observe(float(t), dets)
