"""Object embeddings as one float64 matrix, for re-finding an object by appearance.

A cache over the objects' mean embeddings, kept in step by ``apply`` and rebuilt on open. The
cosine of each row is computed from that row alone (an elementwise product summed along the
row), so a row's score never depends on where it sits in the matrix: a memory that reopened
and rebuilt the matrix in another order decides exactly as one that did not.
"""

from __future__ import annotations

import numpy as np


class FeatureMatrix:
    """Unit embeddings keyed by object id (one width), with swap-remove."""

    def __init__(self) -> None:
        self._mat = np.empty((0, 0), dtype=np.float64)
        self._ids = np.empty(0, dtype=np.int64)
        self._row: dict[int, int] = {}
        self._n = 0

    def __len__(self) -> int:
        return self._n

    def set(self, key: int, vector: np.ndarray) -> None:
        """Insert or replace ``key``'s vector (a vector of another width is ignored)."""
        if self._n == 0 and not self._row:
            self._mat = np.empty((64, vector.shape[0]), dtype=np.float64)
            self._ids = np.empty(64, dtype=np.int64)
        if vector.shape[0] != self._mat.shape[1]:
            return
        row = self._row.get(key)
        if row is None:
            if self._n == self._mat.shape[0]:
                self._mat = np.concatenate([self._mat, np.empty_like(self._mat)])
                self._ids = np.concatenate([self._ids, np.empty_like(self._ids)])
            row = self._n
            self._row[key] = row
            self._ids[row] = key
            self._n += 1
        self._mat[row] = vector

    def remove(self, key: int) -> None:
        row = self._row.pop(key, None)
        if row is None:
            return
        last = self._n - 1
        if row != last:
            moved = int(self._ids[last])
            self._mat[row] = self._mat[last]
            self._ids[row] = moved
            self._row[moved] = row
        self._n = last

    def ranked(self, query: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """(ids, cosines) of every row, best first, ties by lower id. ``query`` is a unit
        vector of the matrix's width."""
        n = self._n
        ids = self._ids[:n]
        cos = (self._mat[:n] * query).sum(axis=1)
        order = np.lexsort((ids, -cos))
        return ids[order], cos[order]

    @property
    def dim(self) -> int | None:
        return self._mat.shape[1] if self._row else None
