"""Object embeddings as one float64 matrix, for re-finding an object by appearance.

A cache over the objects' mean embeddings, kept in step by ``apply`` and rebuilt on open. The
cosine of each row is computed from that row alone (an elementwise product summed along the
row, :meth:`FeatureMatrix._score`), so a row's score never depends on where it sits in the
matrix: a memory that reopened and rebuilt the matrix in another order scores exactly as one
that did not.

Which rows get scored that way is a separate, cheaper step (:meth:`FeatureMatrix.above`): a
BLAS matrix-vector product over a float32 copy of all rows (half the bytes of the float64
rows to read, which is what the product costs at 100,000 rows; its rounding, at most
``(width + 2) * 2**-23`` for unit vectors, is absorbed by a tolerance, and the rows it keeps
are scored exactly from the float64 rows, so the answer is the same), or,
when asked for (``TrackerConfig.appearance_approximate_above``, e.g. :data:`APPROXIMATE_ABOVE`)
and the ``vectors`` extra is installed, candidates from a usearch HNSW graph above that many
rows. The graph is approximate: it can miss a row (its recall), so the answer
there is exact only where the graph finds every row above the floor — which it does for a
clear best match; a near tie between two rows can then be decided differently from the
exhaustive answer (see docs/architecture.md, Performance).
"""

from __future__ import annotations

import math
from collections.abc import Iterable
from typing import Any

import numpy as np

#: A good ``approximate_above`` (off by default): about where one BLAS product over all rows
#: costs as much as one graph search.
APPROXIMATE_ABOVE = 2048
#: A row whose vector moved this far (Euclidean, summed over updates) since the graph took
#: its copy is put in again; the graph's copies are never farther than this from the rows.
STALE_CHORD = 0.25
#: What the graph's int8 copies may get wrong of a cosine (a generous bound).
QUANTISATION_SLACK = 0.05
_FETCH = 16  # graph candidates asked for first (then four times more while they all count)
#: From this many queries on, :meth:`FeatureMatrix.above_many` takes their candidates from one
#: matrix product (a scan's two new things already gain from it).
BATCH_FROM = 2


def _usearch_index(dim: int) -> Any | None:
    """A usearch HNSW index of int8 cosine vectors, several per key (a row that drifted is
    added again rather than removed and re-added: a key removed and added again was found to
    be missed by searches), or None without the ``vectors`` extra."""
    try:
        from locimem.index.vectors import _import_usearch
        index_cls = _import_usearch()
    except ImportError:
        return None
    return index_cls(ndim=dim, metric="cos", dtype="i8", connectivity=16, expansion_add=32,
                     expansion_search=64, multi=True)


class FeatureMatrix:
    """Unit embeddings keyed by object id (one width), with swap-remove.

    ``approximate_above``: rows above which :meth:`above` takes its candidates from a graph
    (None: never; the graph is built on the first query that needs it, then kept in step).
    """

    def __init__(self, approximate_above: int | None = None) -> None:
        self._mat = np.empty((0, 0), dtype=np.float64)
        self._mat32 = np.empty((0, 0), dtype=np.float32)  # the rows, for candidate products
        self._ids = np.empty(0, dtype=np.int64)
        self._drift = np.empty(0, dtype=np.float64)  # per row: moved since the graph's copy
        self._row: dict[int, int] = {}
        self._n = 0
        self.approximate_above = approximate_above
        self._graph: Any | None = None  # usearch Index over every row, once built
        self._no_graph = False  # usearch is not installed

    def __len__(self) -> int:
        return self._n

    def set(self, key: int, vector: np.ndarray) -> None:
        """Insert or replace ``key``'s vector (a vector of another width is ignored)."""
        if self._n == 0 and not self._row:
            self._mat = np.empty((64, vector.shape[0]), dtype=np.float64)
            self._mat32 = np.empty((64, vector.shape[0]), dtype=np.float32)
            self._ids = np.empty(64, dtype=np.int64)
            self._drift = np.zeros(64, dtype=np.float64)
        if vector.shape[0] != self._mat.shape[1]:
            return
        row = self._row.get(key)
        graph = self._graph
        if row is None:
            if self._n == self._mat.shape[0]:
                self._mat = np.concatenate([self._mat, np.empty_like(self._mat)])
                self._mat32 = np.concatenate([self._mat32, np.empty_like(self._mat32)])
                self._ids = np.concatenate([self._ids, np.empty_like(self._ids)])
                self._drift = np.concatenate([self._drift, np.zeros_like(self._drift)])
            row = self._n
            self._row[key] = row
            self._ids[row] = key
            self._n += 1
            self._mat[row] = vector
            self._mat32[row] = vector
            self._drift[row] = 0.0
            if graph is not None:
                graph.add(key, vector.astype(np.float32), threads=1)
            return
        if graph is not None:
            drift = self._drift[row] + float(np.linalg.norm(vector - self._mat[row]))
            if drift > STALE_CHORD:  # another copy under the same key (the old one stays)
                graph.add(key, vector.astype(np.float32), threads=1)
                drift = 0.0
            self._drift[row] = drift
        self._mat[row] = vector
        self._mat32[row] = vector

    @classmethod
    def built(cls, items: Iterable[tuple[int, np.ndarray]],
              approximate_above: int | None = None) -> FeatureMatrix:
        """The matrix ``set`` of each of ``items`` (distinct keys), in order, would leave —
        the same rows in the same order, the first vector fixing the width and one of another
        width ignored — stacked at once (an open indexes every object)."""
        matrix = cls(approximate_above)
        keys: list[int] = []
        vectors: list[np.ndarray] = []
        width = None
        for key, vector in items:
            if width is None:
                width = vector.shape[0]
            if vector.shape[0] == width:
                keys.append(key)
                vectors.append(vector)
        if width is None:
            return matrix
        n = len(keys)
        capacity = 64
        while capacity < n:
            capacity *= 2
        matrix._mat = np.empty((capacity, width), dtype=np.float64)
        matrix._mat32 = np.empty((capacity, width), dtype=np.float32)
        if n:
            matrix._mat[:n] = vectors
            matrix._mat32[:n] = matrix._mat[:n]
        matrix._ids = np.empty(capacity, dtype=np.int64)
        matrix._ids[:n] = keys
        matrix._drift = np.zeros(capacity, dtype=np.float64)
        matrix._row = {key: row for row, key in enumerate(keys)}
        matrix._n = n
        return matrix

    def remove(self, key: int) -> None:
        row = self._row.pop(key, None)
        if row is None:
            return
        if self._graph is not None:
            self._graph.remove(key)
        last = self._n - 1
        if row != last:
            moved = int(self._ids[last])
            self._mat[row] = self._mat[last]
            self._mat32[row] = self._mat32[last]
            self._drift[row] = self._drift[last]
            self._ids[row] = moved
            self._row[moved] = row
        self._n = last

    def ranked(self, query: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """(ids, cosines) of every row, best first, ties by lower id. ``query`` is a unit
        vector of the matrix's width. (Exhaustive: the reference :meth:`above` answers.)"""
        n = self._n
        ids = self._ids[:n]
        cos = self._score(np.arange(n), query)
        order = np.lexsort((ids, -cos))
        return ids[order], cos[order]

    def above(self, query: np.ndarray, floor: float) -> tuple[np.ndarray, np.ndarray]:
        """(ids, cosines) of the rows whose cosine with ``query`` (a unit vector of the
        matrix's width) is at least ``floor``, best first, ties by lower id: the head of
        :meth:`ranked` down to ``floor``, with the same cosines. Below the graph's threshold
        the answer is exactly that; above it, every row the graph proposes is scored exactly,
        so a row is only ever missing, never mis-scored or misplaced."""
        if self._n == 0:
            return self._ids[:0], np.empty(0)
        rows = self._candidates(query, floor)
        ids = self._ids[rows]
        cos = self._score(rows, query)
        keep = cos >= floor
        ids, cos = ids[keep], cos[keep]
        order = np.lexsort((ids, -cos))
        return ids[order], cos[order]

    def above_many(self, queries: list[np.ndarray], floor: float
                   ) -> list[tuple[np.ndarray, np.ndarray]]:
        """:meth:`above` of each of ``queries``, the same answers: from :data:`BATCH_FROM`
        queries on (and without a graph), their candidates come from one matrix product over
        the float32 rows, which reads the rows once for all of them (at 100,000 x 128 rows,
        side by side: 2 queries 3.6 ms against 3.9 one by one, 6 queries 5-7 against 12-16,
        20 queries 10 against 61). Its rounding is
        bounded as one query's is (any order of summation), and the rows it keeps are scored
        exactly, row by row."""
        n = self._n
        if n == 0 or len(queries) < BATCH_FROM or self._graph_for_query() is not None:
            return [self.above(q, floor) for q in queries]
        tol = (self._mat32.shape[1] + 2) * 2.0 ** -23
        product = np.stack(queries).astype(np.float32) @ self._mat32[:n].T  # a row a query
        out = []
        for j, query in enumerate(queries):
            rows = np.flatnonzero(product[j] >= floor - tol)
            ids = self._ids[rows]
            cos = self._score(rows, query)
            keep = cos >= floor
            ids, cos = ids[keep], cos[keep]
            order = np.lexsort((ids, -cos))
            out.append((ids[order], cos[order]))
        return out

    def _score(self, rows: np.ndarray, query: np.ndarray) -> np.ndarray:
        """The cosines of ``rows``: each from its own row alone (see the module docstring)."""
        return (self._mat[rows] * query).sum(axis=1)

    def _candidates(self, query: np.ndarray, floor: float) -> np.ndarray:
        """Rows that may score ``floor`` or more (a superset, up to the graph's recall)."""
        n = self._n
        graph = self._graph_for_query()
        if graph is not None and floor > -1.0:
            # a row scoring >= floor is within chord c of the query; its graph copy within
            # c + STALE_CHORD, which the graph reads as a cosine of at least ``lowest``
            chord = math.sqrt(2.0 * max(0.0, 1.0 - floor)) + STALE_CHORD
            lowest = 1.0 - chord * chord / 2.0 - QUANTISATION_SLACK
            q32 = query.astype(np.float32)
            fetch = _FETCH
            while 4 * fetch < n:
                found = graph.search(q32, fetch, threads=1)
                count = len(found)
                keys, dist = found.keys[:count], found.distances[:count]
                if count < fetch or 1.0 - float(dist[-1]) < lowest:
                    row = self._row
                    return np.unique(np.fromiter(  # a key may come back once per copy
                        (row[int(k)] for k, d in zip(keys, dist, strict=True)
                         if 1.0 - float(d) >= lowest), dtype=np.int64))
                fetch *= 4  # every candidate counts: there may be more
        # one product over every row's float32 copy: each term's rounding (the copies', the
        # query's, the products' and the sums') is at most 2**-23 of |x_i q_i|, and those sum
        # to at most 1 for unit vectors, so a row whose exact cosine reaches ``floor`` scores
        # at least ``floor - (width + 2) * 2**-23`` here; the rows it keeps are scored again,
        # exactly, row by row
        # (the query times the rows' transpose: OpenBLAS reads the rows faster that way round,
        # 2.1 against 2.7 ms at 100,000 x 128)
        tol = (self._mat32.shape[1] + 2) * 2.0 ** -23
        return np.flatnonzero(query.astype(np.float32) @ self._mat32[:n].T >= floor - tol)

    def _graph_for_query(self) -> Any | None:
        """The graph over every row, built now if the matrix has outgrown exact search."""
        if self._graph is not None:
            return self._graph
        if (self._no_graph or self.approximate_above is None
                or self._n <= self.approximate_above):
            return None
        graph = _usearch_index(self._mat.shape[1])
        if graph is None:
            self._no_graph = True
            return None
        n = self._n
        # one thread: the same rows in the same order make the same graph (several threads
        # race, and a reopened memory could then decide a near tie differently)
        graph.add(self._ids[:n].astype(np.uint64), self._mat32[:n], threads=1)
        self._drift[:n] = 0.0
        self._graph = graph
        return graph

    @property
    def dim(self) -> int | None:
        return self._mat.shape[1] if self._row else None
