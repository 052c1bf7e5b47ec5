"""SpatialGrid answers exactly what a brute-force scan answers, in the same order."""

from __future__ import annotations

import gc
import math
import random
from collections.abc import Callable

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from locimem.index.grid import BLOCK, SpatialGrid

Vec3 = tuple[float, float, float]

CELLS = (0.25, 0.3, 0.5, 0.7, 1.0)
ACCEPTS: dict[str, Callable[[int], bool] | None] = {
    "all": None,
    "even": lambda key: key % 2 == 0,
    "not-3": lambda key: key % 3 != 0,
    "few": lambda key: key in (1, 7, 40),
    "none": lambda key: False,
}


def brute_near(points: dict[int, Vec3], p: Vec3, r: float) -> list[tuple[float, int]]:
    return sorted((math.dist(q, p), k) for k, q in points.items() if math.dist(q, p) <= r)


def brute_box(points: dict[int, Vec3], lo: Vec3, hi: Vec3) -> list[int]:
    return sorted(k for k, q in points.items() if all(lo[i] <= q[i] <= hi[i] for i in range(3)))


def brute_nearest(points: dict[int, Vec3], p: Vec3, k: int,
                  accept: Callable[[int], bool] | None) -> list[tuple[float, int]]:
    pairs = sorted((math.dist(q, p), key) for key, q in points.items()
                   if accept is None or accept(key))
    return pairs[:max(k, 0)]


@st.composite
def coords(draw: st.DrawFn, cell: float) -> float:
    """A coordinate, often exactly on a cell boundary or half-way, sometimes negative."""
    kind = draw(st.integers(0, 2))
    if kind == 0:
        return draw(st.integers(-12, 12)) * cell  # on a boundary
    if kind == 1:
        return draw(st.integers(-24, 24)) * cell / 2
    return draw(st.floats(-4.0, 4.0, allow_nan=False, allow_infinity=False))


def points_for(cell: float) -> st.SearchStrategy[Vec3]:
    c = coords(cell)
    return st.tuples(c, c, c)


@st.composite
def scenario(draw: st.DrawFn) -> tuple[float, list[tuple[str, int, Vec3]], list[Vec3]]:
    cell = draw(st.sampled_from(CELLS))
    point = points_for(cell)
    ops = draw(st.lists(
        st.tuples(st.sampled_from(["set", "set", "set", "move", "remove"]),
                  st.integers(0, 60), point),
        max_size=80,
    ))
    queries = draw(st.lists(point, min_size=1, max_size=6))
    return cell, ops, queries


def _check(grid: SpatialGrid, points: dict[int, Vec3], queries: list[Vec3],
           radii: list[float], ks: list[int]) -> None:
    assert len(grid) == len(points)
    assert sorted(grid.items()) == sorted(points.items())
    # the blocks list exactly the occupied cells, each under its own block
    blocks: dict = {}
    for cell in grid._cells:
        blocks.setdefault(tuple(c // BLOCK for c in cell), set()).add(cell)
    assert grid._blocks == blocks
    for key, q in points.items():
        assert key in grid
        assert grid.position(key) == q
    for p in queries:
        for r in radii:
            assert grid.near(p, r) == brute_near(points, p, r), (p, r)
        for q in queries:
            lo = tuple(min(a, b) for a, b in zip(p, q, strict=True))
            hi = tuple(max(a, b) for a, b in zip(p, q, strict=True))
            assert grid.within_box(lo, hi) == brute_box(points, lo, hi), (lo, hi)
            # an inverted box holds nothing unless it is flat in that axis
            assert grid.within_box(p, q) == brute_box(points, p, q), (p, q)
            for r in radii:  # a camera's range and the box around its view
                for box in ((lo, hi), (p, q)):
                    inside = set(brute_box(points, *box))
                    assert grid.near_in_box(p, r, *box) == sorted(
                        k for _, k in brute_near(points, p, r) if k in inside), (p, r, box)
        for k in ks:
            for name, accept in ACCEPTS.items():
                assert grid.nearest(p, k, accept) == brute_nearest(points, p, k, accept), (
                    p, k, name)


@settings(max_examples=150, deadline=None)
@given(data=scenario(), radii=st.lists(st.floats(0.0, 3.0), min_size=1, max_size=3),
       ks=st.lists(st.integers(0, 12), min_size=1, max_size=3))
def test_grid_matches_brute_force_after_sets_moves_and_removals(
    data: tuple[float, list[tuple[str, int, Vec3]], list[Vec3]], radii: list[float],
    ks: list[int],
) -> None:
    cell, ops, queries = data
    grid = SpatialGrid(cell)
    points: dict[int, Vec3] = {}
    for op, key, p in ops:
        if op == "remove":
            grid.remove(key)  # removing an absent key is a no-op
            points.pop(key, None)
        elif op == "move" and points:
            victim = sorted(points)[key % len(points)]
            grid.set(victim, p)
            points[victim] = p
        else:
            grid.set(key, p)
            points[key] = p
    # the points themselves are queries too: zero distances and exact ties
    extra = list(points.values())[:2]
    _check(grid, points, queries + extra, [*radii, 0.0, cell, 2 * cell], ks)


@settings(max_examples=40, deadline=None)
@given(seed=st.integers(0, 2**32 - 1), cell=st.sampled_from(CELLS),
       queries=st.lists(st.tuples(*[st.floats(-8.0, 8.0)] * 3), min_size=1, max_size=4),
       ks=st.lists(st.integers(1, 30), min_size=1, max_size=3))
def test_grid_matches_brute_force_on_a_dense_cloud(
    seed: int, cell: float, queries: list[Vec3], ks: list[int]
) -> None:
    """Hundreds of occupied cells, so nearest() walks several rings before it stops."""
    rng = random.Random(seed)
    grid = SpatialGrid(cell)
    points: dict[int, Vec3] = {}
    for key in range(400):
        if rng.random() < 0.3:
            p = tuple(rng.randint(-20, 20) * cell for _ in range(3))
        else:
            p = tuple(rng.uniform(-6.0, 6.0) for _ in range(3))
        grid.set(key, p)
        points[key] = p
    for key in range(0, 400, 7):
        grid.remove(key)
        del points[key]
    _check(grid, points, queries, [0.5, cell, 2.5], ks)


def test_ties_are_broken_by_key() -> None:
    grid = SpatialGrid(1.0)
    for key, p in [(5, (1.0, 0.0, 0.0)), (2, (-1.0, 0.0, 0.0)), (9, (0.0, 1.0, 0.0)),
                   (1, (0.0, 0.0, 2.0))]:
        grid.set(key, p)
    assert grid.near((0.0, 0.0, 0.0), 1.0) == [(1.0, 2), (1.0, 5), (1.0, 9)]
    assert grid.nearest((0.0, 0.0, 0.0), 2) == [(1.0, 2), (1.0, 5)]
    assert grid.nearest((0.0, 0.0, 0.0), 2, accept=lambda k: k != 2) == [(1.0, 5), (1.0, 9)]
    assert grid.nearest((0.0, 0.0, 0.0), 0) == []
    assert grid.within_box((-1.0, 0.0, 0.0), (1.0, 1.0, 0.0)) == [2, 5, 9]
    assert grid.within_box((1.0, 1.0, 1.0), (-1.0, -1.0, -1.0)) == []


def test_empty_grid_and_bad_cell_size() -> None:
    grid = SpatialGrid(0.5)
    assert len(grid) == 0
    assert grid.near((0.0, 0.0, 0.0), 10.0) == []
    assert grid.within_box((-1.0, -1.0, -1.0), (1.0, 1.0, 1.0)) == []
    assert grid.nearest((0.0, 0.0, 0.0), 3) == []
    grid.remove(4)
    assert 4 not in grid
    for bad in (0.0, -1.0, float("nan")):
        with pytest.raises(ValueError, match=r"^cell_m must be > 0, got "):
            SpatialGrid(bad)


@settings(max_examples=30, deadline=None)
@given(seed=st.integers(0, 2**32 - 1), spread=st.sampled_from([5.0, 40.0, 400.0]),
       radii=st.lists(st.floats(0.0, 60.0), min_size=1, max_size=3))
def test_large_queries_over_a_wide_map_walk_blocks_and_match_brute_force(
    seed: int, spread: float, radii: list[float]
) -> None:
    """A camera's 8 m view (and more) over a map hundreds of metres wide: the query walks the
    blocks it overlaps, or the occupied blocks when those are fewer, and answers exactly."""
    rng = random.Random(seed)
    grid = SpatialGrid(1.0)
    points: dict[int, Vec3] = {}
    for key in range(300):
        p = (rng.uniform(-spread, spread), rng.uniform(-spread, spread), rng.uniform(0, 3))
        grid.set(key, p)
        points[key] = p
    for key in range(0, 300, 5):  # emptied cells leave their blocks
        grid.remove(key)
        del points[key]
    queries = [points[k] for k in (1, 2)] + [(0.0, 0.0, 1.0)]
    _check(grid, points, queries, radii, [3])


def test_the_tables_stay_tracked_by_the_garbage_collector() -> None:
    """A full collection untracks an exact dict whose keys and values are all untracked (the
    grid's: ints and tuples of numbers), and the next insert of a fresh tuple tracks it
    again as a young object, walked whole by the next young collection (8-16 ms at 100,000
    objects). The grid's tables never leave the collector, so they age once and stay old."""
    grid = SpatialGrid(1.0)
    for key in range(200):
        grid.set(key, (float(key % 20), float(key // 20), 0.5))
    plain = {key: grid.position(key) for key in range(200)}
    gc.collect()
    gc.collect()
    assert not gc.is_tracked(plain)  # what would happen to an exact dict
    assert gc.is_tracked(grid._points) and gc.is_tracked(grid._cells)
    grid.set(500, (3.5, 3.5, 0.5))
    assert sorted(k for _, k in grid.near((3.5, 3.5, 0.5), 0.1)) == [500]
