"""A uniform hash grid over 3D points: the spatial index behind matching and spatial queries.

It is a cache — rebuildable from the objects at any time, never the source of truth. Updates
and radius queries touch only the cells near the point, so their cost does not grow with the
number of objects held (for a bounded local density). A large query (a camera's 8 m view)
walks *blocks* of ``BLOCK`` cells a side, each listing its occupied cells, so it too costs what
lies inside it, not what the memory holds.

A cell's keys are a sorted tuple, replaced whole when it changes (cells hold a few keys): a
tuple of ints is no container the cyclic garbage collector walks once it has seen it, where a
set per occupied cell was one more for every object or so (docs/architecture.md,
"Performance").
"""

from __future__ import annotations

import bisect
import builtins
import heapq
import math
from collections.abc import Callable, Iterable, Iterator

Vec3 = tuple[float, float, float]
Cell = tuple[int, int, int]

BLOCK = 8  # cells a side of a block (a query spanning more than BLOCK_CELLS walks blocks)
BLOCK_CELLS = 64


class _Table(dict):
    """A dict the cyclic garbage collector never untracks (it untracks only exact dicts).

    The grid's two tables hold a tuple per object or cell. A full collection finds every
    tuple untracked (numbers only) and so untracks the table; the next insert of a fresh
    tuple tracks it again, as a young object, and the next young collection walks all of
    it — 8–16 ms at 100,000 objects, now and then on a scan. Tracked for good, a table
    ages into the oldest generation once and is walked by full collections alone."""

    __slots__ = ()


class SpatialGrid:
    """Points keyed by an integer id, bucketed in cubic cells of ``cell_m`` metres."""

    __slots__ = ("_blocks", "_cells", "_inv", "_points", "cell_m")

    def __init__(self, cell_m: float = 1.0) -> None:
        if not cell_m > 0:
            raise ValueError(f"cell_m must be > 0, got {cell_m}")
        self.cell_m = float(cell_m)
        self._inv = 1.0 / self.cell_m
        self._cells: dict[Cell, tuple[int, ...]] = _Table()  # cell -> its keys, sorted
        self._blocks: dict[Cell, set[Cell]] = {}  # block -> its occupied cells
        self._points: dict[int, Vec3] = _Table()

    def __len__(self) -> int:
        return len(self._points)

    def __contains__(self, key: int) -> bool:
        return key in self._points

    def _cell(self, p: Vec3) -> Cell:
        inv = self._inv
        return (math.floor(p[0] * inv), math.floor(p[1] * inv), math.floor(p[2] * inv))

    def position(self, key: int) -> Vec3:
        return self._points[key]

    def items(self) -> Iterator[tuple[int, Vec3]]:
        return iter(self._points.items())

    def set(self, key: int, p: Vec3) -> None:
        """Insert ``key`` at ``p``, or move it there."""
        old = self._points.get(key)
        new_cell = self._cell(p)
        if old is not None:
            old_cell = self._cell(old)
            if old_cell != new_cell:
                self._drop(old_cell, key)
                self._add(new_cell, key)
        else:
            self._add(new_cell, key)
        self._points[key] = p

    @classmethod
    def built(cls, cell_m: float, items: Iterable[tuple[int, Vec3]]) -> SpatialGrid:
        """The grid ``set`` of each of ``items`` (distinct keys), in order, would leave —
        the same cells, buckets and points — built in one pass (an open indexes every
        object)."""
        grid = cls(cell_m)
        inv, floor = grid._inv, math.floor
        points = grid._points
        filling: dict[Cell, list[int]] = {}
        for key, p in items:
            cell = (floor(p[0] * inv), floor(p[1] * inv), floor(p[2] * inv))
            bucket = filling.get(cell)
            if bucket is None:
                filling[cell] = [key]
            else:
                bucket.append(key)
            points[key] = p
        cells = grid._cells
        for cell, keys in filling.items():
            keys.sort()
            cells[cell] = tuple(keys)
        blocks = grid._blocks
        for cell in cells:
            blocks.setdefault((cell[0] // BLOCK, cell[1] // BLOCK, cell[2] // BLOCK),
                              set()).add(cell)
        return grid

    def remove(self, key: int) -> None:
        p = self._points.pop(key, None)
        if p is None:
            return
        self._drop(self._cell(p), key)

    def _add(self, cell: Cell, key: int) -> None:
        bucket = self._cells.get(cell)
        if bucket is None:
            self._cells[cell] = (key,)
            block = (cell[0] // BLOCK, cell[1] // BLOCK, cell[2] // BLOCK)
            self._blocks.setdefault(block, set()).add(cell)
            return
        i = bisect.bisect_left(bucket, key)
        if i == len(bucket) or bucket[i] != key:
            self._cells[cell] = (*bucket[:i], key, *bucket[i:])

    def _drop(self, cell: Cell, key: int) -> None:
        bucket = self._cells[cell]
        i = bisect.bisect_left(bucket, key)
        if i < len(bucket) and bucket[i] == key:
            bucket = bucket[:i] + bucket[i + 1:]
        if bucket:
            self._cells[cell] = bucket
        else:
            del self._cells[cell]
            block = (cell[0] // BLOCK, cell[1] // BLOCK, cell[2] // BLOCK)
            cells = self._blocks[block]
            cells.discard(cell)
            if not cells:
                del self._blocks[block]

    def _cells_in_box(self, lo: Vec3, hi: Vec3) -> Iterator[tuple[int, ...]]:
        """The occupied cells' buckets overlapping the box [lo, hi]: by looking each cell up,
        or, when that would take more lookups than there are occupied cells in the blocks the
        box overlaps, by walking those."""
        c0, c1 = self._cell(lo), self._cell(hi)
        x0, y0, z0 = c0
        x1, y1, z1 = c1
        span = (x1 - x0 + 1) * (y1 - y0 + 1) * (z1 - z0 + 1)
        cells = self._cells
        if span > BLOCK_CELLS:
            inside = self._blocks_in(c0, c1)
            if sum(len(found) for found in inside) < span:
                for found in inside:
                    for cell in found:
                        if x0 <= cell[0] <= x1 and y0 <= cell[1] <= y1 and z0 <= cell[2] <= z1:
                            yield cells[cell]
                return
        for i in range(x0, x1 + 1):
            for j in range(y0, y1 + 1):
                for k in range(z0, z1 + 1):
                    bucket = cells.get((i, j, k))
                    if bucket:
                        yield bucket

    def _blocks_in(self, c0: Cell, c1: Cell) -> list[builtins.set[Cell]]:
        """The occupied cells of each occupied block overlapping cells c0..c1."""
        b0 = (c0[0] // BLOCK, c0[1] // BLOCK, c0[2] // BLOCK)
        b1 = (c1[0] // BLOCK, c1[1] // BLOCK, c1[2] // BLOCK)
        blocks = self._blocks
        if (b1[0] - b0[0] + 1) * (b1[1] - b0[1] + 1) * (b1[2] - b0[2] + 1) > len(blocks):
            return [found for b, found in blocks.items()
                    if b0[0] <= b[0] <= b1[0] and b0[1] <= b[1] <= b1[1]
                    and b0[2] <= b[2] <= b1[2]]
        get = blocks.get
        return [found for i in range(b0[0], b1[0] + 1) for j in range(b0[1], b1[1] + 1)
                for k in range(b0[2], b1[2] + 1) if (found := get((i, j, k)))]

    def near(self, p: Vec3, radius: float) -> list[tuple[float, int]]:
        """``(distance, key)`` for every point within ``radius`` of ``p``, nearest first
        (ties broken by key)."""
        inv, r = self._inv, radius
        # pad the cell range a hair: a point just outside the box (by less than a rounding
        # error) can still be at a distance that rounds to exactly ``r``
        pad = r + 1e-9 * (1.0 + r + abs(p[0]) + abs(p[1]) + abs(p[2]))
        x0, x1 = math.floor((p[0] - pad) * inv), math.floor((p[0] + pad) * inv)
        y0, y1 = math.floor((p[1] - pad) * inv), math.floor((p[1] + pad) * inv)
        z0, z1 = math.floor((p[2] - pad) * inv), math.floor((p[2] + pad) * inv)
        points, cells, dist = self._points, self._cells, math.dist
        out = []
        if (x1 - x0 + 1) * (y1 - y0 + 1) * (z1 - z0 + 1) > BLOCK_CELLS:
            lo = (p[0] - pad, p[1] - pad, p[2] - pad)
            hi = (p[0] + pad, p[1] + pad, p[2] + pad)
            for keys in self._cells_in_box(lo, hi):
                for key in keys:
                    d = dist(points[key], p)
                    if d <= r:
                        out.append((d, key))
        else:
            get = cells.get
            zs = range(z0, z1 + 1)
            for i in range(x0, x1 + 1):
                for j in range(y0, y1 + 1):
                    for k in zs:
                        bucket = get((i, j, k))
                        if bucket:
                            for key in bucket:
                                d = dist(points[key], p)
                                if d <= r:
                                    out.append((d, key))
        out.sort()
        return out

    def within_box(self, lo: Vec3, hi: Vec3) -> list[int]:
        """Keys of points inside the axis-aligned box [lo, hi] (inclusive), sorted."""
        points = self._points
        out = []
        for bucket in self._cells_in_box(lo, hi):
            for key in bucket:
                q = points[key]
                if lo[0] <= q[0] <= hi[0] and lo[1] <= q[1] <= hi[1] and lo[2] <= q[2] <= hi[2]:
                    out.append(key)
        out.sort()
        return out

    def near_in_box(self, p: Vec3, radius: float, lo: Vec3, hi: Vec3) -> list[int]:
        """Keys of the points within ``radius`` of ``p`` (as :meth:`near` finds them) that
        also lie inside the box [lo, hi] (inclusive), sorted: what a camera's range and the
        box around its view hold — :meth:`within_box` of the box cut down to the (padded)
        sphere's, then the distance test."""
        r = radius
        pad = r + 1e-9 * (1.0 + r + abs(p[0]) + abs(p[1]) + abs(p[2]))
        box_lo = (max(lo[0], p[0] - pad), max(lo[1], p[1] - pad), max(lo[2], p[2] - pad))
        box_hi = (min(hi[0], p[0] + pad), min(hi[1], p[1] + pad), min(hi[2], p[2] + pad))
        if box_lo[0] > box_hi[0] or box_lo[1] > box_hi[1] or box_lo[2] > box_hi[2]:
            return []
        points, dist = self._points, math.dist
        return [key for key in self.within_box(box_lo, box_hi) if dist(points[key], p) <= r]

    def nearest(
        self, p: Vec3, k: int, accept: Callable[[int], bool] | None = None
    ) -> list[tuple[float, int]]:
        """The ``k`` nearest ``(distance, key)`` pairs (optionally only keys ``accept`` admits),
        searching outward ring by ring of cells."""
        if k <= 0 or not self._points:
            return []
        c = self._cell(p)
        best: list[tuple[float, int]] = []  # max-heap by negated distance
        points, cells = self._points, self._cells
        ring = 0
        while True:
            if (2 * ring + 1) ** 3 > 2 * len(cells):  # the rings now cover more than exists
                return self._nearest_scan(p, k, accept)
            for cell in _ring(c, ring):
                bucket = cells.get(cell)
                if not bucket:
                    continue
                for key in bucket:
                    if accept is not None and not accept(key):
                        continue
                    item = (-math.dist(points[key], p), -key)
                    if len(best) < k:
                        heapq.heappush(best, item)
                    elif item > best[0]:
                        heapq.heapreplace(best, item)
            # every point outside rings 0..ring is at least ring * cell_m away
            if len(best) == k and -best[0][0] < ring * self.cell_m * (1 - 1e-12):
                break
            ring += 1
        return sorted((-d, -key) for d, key in best)

    def _nearest_scan(
        self, p: Vec3, k: int, accept: Callable[[int], bool] | None
    ) -> list[tuple[float, int]]:
        pairs = (
            (math.dist(q, p), key)
            for key, q in self._points.items()
            if accept is None or accept(key)
        )
        return heapq.nsmallest(k, pairs)


def _ring(c: Cell, r: int) -> Iterator[Cell]:
    """The cells at Chebyshev distance exactly ``r`` from ``c``."""
    if r == 0:
        yield c
        return
    x0, y0, z0 = c
    for i in range(-r, r + 1):
        for j in range(-r, r + 1):
            if abs(i) == r or abs(j) == r:
                for k in range(-r, r + 1):
                    yield (x0 + i, y0 + j, z0 + k)
            else:
                yield (x0 + i, y0 + j, z0 - r)
                yield (x0 + i, y0 + j, z0 + r)
