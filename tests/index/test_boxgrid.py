"""The box grid behind room lookup and relation candidates."""

from __future__ import annotations

import random

import pytest

from locimem.index.boxgrid import BoxGrid


def overlaps(a, b) -> bool:
    (alo, ahi), (blo, bhi) = a, b
    return all(alo[i] <= bhi[i] and blo[i] <= ahi[i] for i in range(len(alo)))


@pytest.mark.parametrize("dims", [2, 3])
def test_overlapping_matches_brute_force(dims: int) -> None:
    rng = random.Random(dims)
    grid = BoxGrid(cell_m=0.7, dims=dims, max_cells=64)  # some boxes overflow
    boxes = {}
    for step in range(800):
        key = rng.randrange(120)
        if key in boxes and rng.random() < 0.2:
            grid.remove(key)
            del boxes[key]
            continue
        if key in boxes and rng.random() < 0.4:  # nudged: mostly the same cells, or not
            lo = [x + rng.uniform(-0.05, 0.05) for x in boxes[key][0]]
            hi = [max(a, x + rng.uniform(-0.05, 0.05))
                  for a, x in zip(lo, boxes[key][1], strict=True)]
        else:
            lo = [rng.uniform(-10, 10) for _ in range(dims)]
            hi = [x + rng.choice([0.0, rng.uniform(0, 1), rng.uniform(0, 12)]) for x in lo]
        grid.set(key, lo, hi)
        boxes[key] = (tuple(lo), tuple(hi))
        if step % 10 == 0:
            qlo = [rng.uniform(-12, 12) for _ in range(dims)]
            qhi = [x + rng.uniform(0, 4) for x in qlo]
            expected = sorted(k for k, b in boxes.items() if overlaps(b, (qlo, qhi)))
            assert sorted(grid.overlapping(qlo, qhi)) == expected
            assert set(expected) <= grid.candidates(qlo, qhi)
    assert len(grid) == len(boxes)
    assert all(grid.box(k) == boxes[k] for k in boxes)
    # every key is filed in exactly the cells its box covers (or overflows), and no others
    filed: dict = {}
    for cell, keys in grid._cells.items():
        for k in keys:
            filed.setdefault(k, set()).add(cell)
    for k, (lo, hi) in boxes.items():
        cells = set(grid._cells_of(lo, hi)) if k not in grid._overflow else set()
        assert filed.get(k, set()) == cells


def test_huge_boxes_overflow_instead_of_filling_cells() -> None:
    grid = BoxGrid(cell_m=0.5, dims=3, max_cells=100)
    grid.set("house-sized", (0, 0, 0), (50, 50, 10))
    grid.set("cup", (1, 1, 1), (1.1, 1.1, 1.1))
    assert grid._cells.keys() == {(2, 2, 2)}  # only the cup holds cells
    assert sorted(grid.overlapping((1, 1, 1), (1, 1, 1))) == ["cup", "house-sized"]
    grid.remove("house-sized")
    grid.remove("never there")
    assert grid.overlapping((20, 20, 5), (21, 21, 6)) == []


def test_bad_construction() -> None:
    with pytest.raises(ValueError, match="cell_m must be a finite number > 0"):
        BoxGrid(cell_m=0)
    with pytest.raises(ValueError, match="dims must be 2 or 3"):
        BoxGrid(dims=4)
