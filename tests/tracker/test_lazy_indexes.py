"""An open with ``warm=False`` (and a read-only open) leaves the indexes (grids, embedding
matrix, labels, deltas, loss queue, and the relations) to build on first need. A memory that
opened lazily and then ingests, forgets and revives comes out exactly as one whose indexes
were built the moment it opened: the same records, state and indexes, row for row."""

from __future__ import annotations

import shutil
from pathlib import Path
from typing import Any

import numpy as np

from locimem import ObjectMemory
from locimem.model import Detection
from tests.helpers import HOUSE, ID, house_day


def _feature(i: int) -> np.ndarray:
    v = np.random.default_rng(i).standard_normal(8).astype(np.float32)
    return v / np.linalg.norm(v)


def _scan(t: float, shift: float) -> list[Detection]:
    return [Detection(label, 0.9, (c[0] + shift, c[1], c[2]), s, feature=_feature(i))
            for i, (label, c, s) in enumerate(HOUSE.values())]


def _indexes(mem: ObjectMemory) -> dict[str, Any]:
    state = mem._live._state
    ix = state.indexes
    f = ix.features
    n = len(f)
    return {
        "grid": [(c, sorted(b)) for c, b in ix.grid._cells.items()],
        "points": list(ix.grid._points.items()),
        "tombs": list(ix.tomb_grid._points.items()),
        "features": (f._ids[:n].tolist(), f._mat[:n].tobytes(), list(f._row.items())),
        "labels": list(ix._label_of.items()),
        "loss": sorted(ix._loss_queue),
        "deltas": dict(ix.delta_index),
        "relations": state.relations_snapshot(),
    }


def _session(path: Path, eager: bool) -> tuple[Any, ...]:
    # warm: built at open (a writable open's default); warm=False leaves them lazy
    with ObjectMemory.open(path, scope="home", durable=False, clock=lambda: 0.0,
                           warm=eager) as mem:
        state = mem._live._state
        assert state.indexes_pending is not eager and state.scene.built is eager
        for k, t in enumerate((60.0, 61.0, 62.0)):
            mem.observe(t, _scan(t, 0.02 * k))
        mem.forget(ID["fork"], reason="test")
        mem.observe(63.0, _scan(63.0, 0.5))  # moved a little: held or moved
        out = (_indexes(mem), mem._live._state.snapshot(), mem.events(since=59.0))
    return out


def test_a_lazily_indexed_memory_ingests_as_an_eagerly_indexed_one(tmp_path: Path) -> None:
    base = tmp_path / "base.loci"
    with ObjectMemory.open(base, scope="home", durable=False, clock=lambda: 0.0) as mem:
        house_day(mem, until=20)
    eager, lazy = tmp_path / "eager.loci", tmp_path / "lazy.loci"
    shutil.copy(base, eager)
    shutil.copy(base, lazy)
    got, expected = _session(lazy, eager=False), _session(eager, eager=True)
    assert got[0] == expected[0]
    assert got[1] == expected[1]
    assert [(e.kind, e.object_id, e.data) for e in got[2]] == \
        [(e.kind, e.object_id, e.data) for e in expected[2]]
    assert len(got[0]["points"]) > 5


def test_a_read_only_open_builds_nothing_it_is_not_asked_for(tmp_path: Path) -> None:
    path = tmp_path / "m.loci"
    with ObjectMemory.open(path, scope="home", durable=False) as mem:
        house_day(mem, until=12)
    with ObjectMemory.open(path, scope="home", read_only=True) as mem:
        state = mem._live._state
        assert state.indexes_pending and state._indexes is None
        assert mem.get(ID["table"]).label == "kitchen table"  # a read by id needs no index
        assert state.indexes_pending
        assert [o.id for o in mem.near((2.0, 2.0, 0.8), 0.5)]  # a spatial question does
        assert not state.indexes_pending and state._indexes is not None
