"""A uniform grid over axis-aligned boxes (2-D or 3-D): which boxes may touch this region?

:class:`~locimem.index.grid.SpatialGrid` indexes *points*; relations and rooms need *boxes*
(a 3 m counter's centre is 1.5 m from a cup at its end). Each box is registered in every cell
it overlaps, so a query costs the number of boxes near the query region, not the number held.
A box that would cover more than ``max_cells`` cells (a mis-detection the size of a house)
goes to a small overflow set that every query checks, so one outlier cannot blow up memory.

Like every index here it is a cache, rebuildable at any time.
"""

from __future__ import annotations

import builtins
import itertools
import math
from collections.abc import Hashable, Iterator, Sequence
from typing import Generic, TypeVar

from locimem.errors import InvalidInput

__all__ = ["BoxGrid"]

Cell = tuple[int, ...]
K = TypeVar("K", bound=Hashable)


class BoxGrid(Generic[K]):
    """Boxes keyed by any hashable key, bucketed in cubic (square) cells of ``cell_m``."""

    __slots__ = ("_boxes", "_cells", "_inv", "_keycells", "_overflow", "cell_m", "dims",
                 "max_cells")

    def __init__(self, cell_m: float = 1.0, dims: int = 3, max_cells: int = 4096) -> None:
        if not (isinstance(cell_m, (int, float)) and math.isfinite(cell_m) and cell_m > 0):
            raise InvalidInput(f"cell_m must be a finite number > 0, got {cell_m!r}")
        if dims not in (2, 3):
            raise InvalidInput(f"dims must be 2 or 3, got {dims!r}")
        self.cell_m = float(cell_m)
        self.dims = dims
        self.max_cells = int(max_cells)
        self._inv = 1.0 / self.cell_m
        self._cells: dict[Cell, set[K]] = {}
        self._boxes: dict[K, tuple[tuple[float, ...], tuple[float, ...]]] = {}
        self._keycells: dict[K, list[Cell]] = {}
        self._overflow: set[K] = set()

    def __len__(self) -> int:
        return len(self._boxes)

    def __contains__(self, key: object) -> bool:
        return key in self._boxes

    def box(self, key: K) -> tuple[tuple[float, ...], tuple[float, ...]]:
        """The ``(lo, hi)`` corners stored for ``key``."""
        return self._boxes[key]

    def _range(self, lo: Sequence[float], hi: Sequence[float]) -> list[range]:
        inv = self._inv
        return [range(math.floor(lo[i] * inv), math.floor(hi[i] * inv) + 1)
                for i in range(self.dims)]

    def _cells_of(self, lo: Sequence[float], hi: Sequence[float]) -> Iterator[Cell]:
        return itertools.product(*self._range(lo, hi))

    def _span(self, lo: Sequence[float], hi: Sequence[float]) -> int:
        inv = self._inv  # counted, not built: a huge box must not overflow range()
        return math.prod(math.floor(hi[i] * inv) - math.floor(lo[i] * inv) + 1
                         for i in range(self.dims))

    def set(self, key: K, lo: Sequence[float], hi: Sequence[float]) -> None:
        """Insert ``key`` with the box ``[lo, hi]`` (first ``dims`` coordinates), or move it."""
        lo_t = tuple(float(x) for x in lo[: self.dims])
        hi_t = tuple(float(x) for x in hi[: self.dims])
        old = self._boxes.get(key)
        if old is not None:
            if key not in self._overflow and self._range(*old) == self._range(lo_t, hi_t):
                self._boxes[key] = (lo_t, hi_t)  # the same cells: only the box moved
                return
            self.remove(key)
        self._boxes[key] = (lo_t, hi_t)
        if self._span(lo_t, hi_t) > self.max_cells:
            self._overflow.add(key)
            return
        cells = list(self._cells_of(lo_t, hi_t))
        for cell in cells:
            self._cells.setdefault(cell, set()).add(key)
        self._keycells[key] = cells

    def remove(self, key: K) -> None:
        """Forget ``key`` (no-op if absent)."""
        if self._boxes.pop(key, None) is None:
            return
        if key in self._overflow:
            self._overflow.discard(key)
            return
        for cell in self._keycells.pop(key):
            bucket = self._cells[cell]
            bucket.discard(key)
            if not bucket:
                del self._cells[cell]

    def candidates(self, lo: Sequence[float], hi: Sequence[float]) -> builtins.set[K]:
        """Keys whose cells touch the cells of ``[lo, hi]``: a superset of the boxes that
        overlap it (check with :meth:`overlapping` for the exact set)."""
        out: builtins.set[K] = set(self._overflow)
        if self._span(lo, hi) > max(len(self._cells), 1):  # sparse: walk the occupied cells
            ranges = self._range(lo, hi)
            for cell, keys in self._cells.items():
                if all(cell[i] in ranges[i] for i in range(self.dims)):
                    out.update(keys)
            return out
        cells = self._cells
        for cell in self._cells_of(lo, hi):
            bucket = cells.get(cell)
            if bucket:
                out.update(bucket)
        return out

    def overlapping(self, lo: Sequence[float], hi: Sequence[float]) -> list[K]:
        """Keys whose boxes overlap ``[lo, hi]`` (closed boxes: touching counts), in no
        particular order."""
        boxes, flat = self._boxes, self.dims == 2
        out = []
        for key in self.candidates(lo, hi):  # spelled out: asked at every settling
            blo, bhi = boxes[key]
            if (blo[0] <= hi[0] and lo[0] <= bhi[0] and blo[1] <= hi[1] and lo[1] <= bhi[1]
                    and (flat or (blo[2] <= hi[2] and lo[2] <= bhi[2]))):
                out.append(key)
        return out
