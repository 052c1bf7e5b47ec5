"""The indexes an open builds in bulk (``SpatialGrid.built``, ``FeatureMatrix.built``, and
``MemoryState.rebuild_indexes`` with them) are the ones ``set`` / ``place_object`` of each
object in turn leave: the same cells, buckets, points, rows, ids and labels, in the same order,
and the same answers after later changes."""

from __future__ import annotations

import random

import numpy as np

from locimem.index.features import FeatureMatrix
from locimem.index.grid import SpatialGrid
from locimem.model import ObjectState
from locimem.tracker.state import MemoryState


def _grid_state(grid: SpatialGrid) -> tuple:
    return ([(c, sorted(b)) for c, b in grid._cells.items()], list(grid._points.items()),
            sorted((b, sorted(cells)) for b, cells in grid._blocks.items()))


def _matrix_state(m: FeatureMatrix) -> tuple:
    n = len(m)
    return (n, m._ids[:n].tolist(), m._mat[:n].tobytes(), m._drift[:n].tolist(),
            list(m._row.items()), m.dim if n else None)


def test_grid_built_equals_set_one_by_one() -> None:
    rng = random.Random(1)
    items = [(k, (rng.uniform(-9, 9), rng.choice((0.0, 1.0, rng.uniform(-9, 9))),
                  rng.uniform(0, 3))) for k in rng.sample(range(5000), 800)]
    old = SpatialGrid(0.75)
    for k, p in items:
        old.set(k, p)
    new = SpatialGrid.built(0.75, items)
    assert _grid_state(new) == _grid_state(old)
    assert SpatialGrid.built(1.0, [])._cells == {}
    for k, p in items[:50]:  # later moves and removals act the same
        q = (p[0] + 1.3, p[1], p[2])
        old.set(k, q)
        new.set(k, q)
    for k, _ in items[50:90]:
        old.remove(k)
        new.remove(k)
    assert _grid_state(new) == _grid_state(old)
    assert new.near((0.0, 0.0, 1.0), 3.0) == old.near((0.0, 0.0, 1.0), 3.0)


def test_feature_matrix_built_equals_set_one_by_one() -> None:
    rng = np.random.default_rng(2)
    for n in (0, 1, 64, 65, 300):
        keys = [int(k) for k in rng.permutation(10 * n + 1)[:n]]
        items = [(k, rng.standard_normal(8 if i % 37 != 5 else 6)) for i, k in enumerate(keys)]
        old = FeatureMatrix()
        for k, v in items:
            old.set(k, v)
        new = FeatureMatrix.built(items)
        assert _matrix_state(new) == _matrix_state(old)
        if n:
            q = items[0][1] / np.linalg.norm(items[0][1])
            assert [a.tolist() for a in new.ranked(q)] == [a.tolist() for a in old.ranked(q)]
            for k, v in items[: n // 2]:
                old.set(k, -v)
                new.set(k, -v)
            for k, _ in items[n // 3: n // 2 + 3]:
                old.remove(k)
                new.remove(k)
            extra = [(10 * n + 5 + i, rng.standard_normal(8)) for i in range(70)]
            for k, v in extra:
                old.set(k, v)
                new.set(k, v)
            assert _matrix_state(new) == _matrix_state(old)


def test_rebuild_indexes_equals_placing_each_object() -> None:
    rng = random.Random(4)
    state = MemoryState(grid_cell_m=0.5)
    for oid in rng.sample(range(1, 4000), 500):
        c = (rng.uniform(-5, 5), rng.uniform(-5, 5), rng.uniform(0, 2))
        state.objects[oid] = ObjectState(
            id=oid, label=rng.choice(("cup", "table", "book")), center=c, size=(1, 1, 1),
            place=c, first_seen=0.0, last_seen=1.0,
            feature=np.random.default_rng(oid).standard_normal(4) if rng.random() < 0.7
            else None)
    state.rebuild_indexes(60.0)
    old = MemoryState(grid_cell_m=0.5)
    old.objects = state.objects
    for oid in sorted(state.objects):
        old.place_object(state.objects[oid])
    built, placed = state.indexes, old.indexes
    assert _grid_state(built.grid) == _grid_state(placed.grid)
    assert _matrix_state(built.features) == _matrix_state(placed.features)
    assert built._label_of == placed._label_of
    assert list(built._label_of) == list(placed._label_of)
    assert {k: sorted(v) for k, v in built._by_label.items()} == \
        {k: sorted(v) for k, v in placed._by_label.items()}
    assert list(built._by_label) == list(placed._by_label)
