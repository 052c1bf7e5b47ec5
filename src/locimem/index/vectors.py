"""Vector indexes for semantic search: cosine top-k over embeddings keyed by object id.

Like every index in locimem these are caches, rebuildable from the store. Vectors are
normalised on the way in, so a score is the cosine similarity in [-1, 1]. Results are
``(score, id)`` pairs, highest score first, ties (scores within :data:`TIE_TOL`) broken by
the smaller id — the same order from every implementation.

- :class:`ExactIndex` (numpy, always available): one contiguous float32 matrix, swap-remove,
  one matrix-vector product per query. Its cost grows linearly with the number of vectors,
  but stays within a small factor of a bare ``matrix @ query``.
- :class:`UsearchIndex` (the ``vectors`` extra, ``usearch``): an HNSW graph for large stores.
  Below ``exact_below`` vectors it searches exhaustively, so small stores get exactly the
  :class:`ExactIndex` answer; above it, candidates from the graph are re-scored exactly.
"""

from __future__ import annotations

import contextlib
import math
from collections.abc import Collection, Iterable, Sequence
from typing import Any, Protocol, runtime_checkable

import numpy as np

from locimem.errors import InvalidInput, LocimemError, NotFound

__all__ = ["TIE_TOL", "ExactIndex", "IndexUnavailable", "UsearchIndex", "VectorIndex", "top_k"]

MAX_ID = 2**63 - 1


@runtime_checkable
class VectorIndex(Protocol):
    """Cosine top-k over unit vectors keyed by non-negative int ids."""

    @property
    def dim(self) -> int: ...

    def __len__(self) -> int: ...

    def __contains__(self, key: object) -> bool: ...

    def add(self, key: int, vector: Any) -> None:
        """Insert a new id (InvalidInput if it is already present)."""

    def add_many(self, keys: Sequence[int], vectors: Any) -> None:
        """Insert many new ids at once; ``vectors`` has shape (len(keys), dim)."""

    def update(self, key: int, vector: Any) -> None:
        """Replace the vector of a present id (NotFound if absent)."""

    def remove(self, key: int) -> None:
        """Delete a present id (NotFound if absent)."""

    def search(self, query: Any, k: int, allow: Collection[int] | None = None
               ) -> list[tuple[float, int]]:
        """The ``k`` best ``(cosine, id)`` pairs, highest first, ties by id; only ids in
        ``allow`` when it is given."""


# --------------------------------------------------------------------------------------------
# checks shared by the implementations


def _check_dim(dim: Any) -> int:
    if isinstance(dim, bool) or not isinstance(dim, (int, np.integer)) or int(dim) < 1:
        raise InvalidInput(f"dim must be a positive integer, got {dim!r}")
    return int(dim)


def _check_key(key: Any) -> int:
    if isinstance(key, bool) or not isinstance(key, (int, np.integer)):
        raise InvalidInput(f"id must be an integer, got {key!r}")
    key = int(key)
    if not 0 <= key <= MAX_ID:
        raise InvalidInput(f"id must be in [0, 2**63 - 1], got {key}")
    return key


def _check_k(k: Any) -> int:
    if isinstance(k, bool) or not isinstance(k, (int, np.integer)) or int(k) < 0:
        raise InvalidInput(f"k must be an integer >= 0, got {k!r}")
    return int(k)


def _unit_rows(vectors: Any, dim: int, name: str) -> np.ndarray:
    """(n, dim) float32 rows of unit norm; rejects wrong shapes, non-finite and zero rows."""
    try:
        arr = np.asarray(vectors, dtype=np.float32)
    except (TypeError, ValueError) as exc:
        raise InvalidInput(f"{name} must be numbers: {exc}") from None
    if arr.ndim == 1:
        arr = arr[None, :]
    if arr.ndim != 2 or arr.shape[1] != dim:
        raise InvalidInput(f"{name} must have shape ({dim},) or (n, {dim}), got {arr.shape}")
    if not np.all(np.isfinite(arr)):
        raise InvalidInput(f"{name} must be finite")
    norms = np.linalg.norm(arr, axis=1)
    if np.any(norms == 0.0):
        raise InvalidInput(f"{name} must have a non-zero norm")
    return (arr / norms[:, None]).astype(np.float32, copy=False)


def _check_batch(keys: Sequence[int], vectors: Any, dim: int, present: Collection[int]
                 ) -> tuple[list[int], np.ndarray]:
    """Validate an ``add_many`` batch: distinct new ids, one unit row per id."""
    keys = [_check_key(k) for k in keys]
    rows = _unit_rows(vectors, dim, "vectors")
    if rows.shape[0] != len(keys):
        raise InvalidInput(f"got {len(keys)} ids but {rows.shape[0]} vectors")
    if len(set(keys)) != len(keys):
        raise InvalidInput("ids must be distinct")
    clash = [k for k in keys if k in present]
    if clash:
        raise InvalidInput(f"ids already in the vector index: {sorted(clash)[:5]}")
    return keys, rows


def _unit_vector(vector: Any, dim: int, name: str = "vector") -> np.ndarray:
    """``vector`` as a float32 unit vector of shape (dim,); rejects other shapes, non-finite
    and zero vectors. Cheap enough to run on every query: one pass for the squared norm, which
    is non-finite whenever an element is nan or inf."""
    try:
        arr = np.asarray(vector, dtype=np.float32)
    except (TypeError, ValueError) as exc:
        raise InvalidInput(f"{name} must be numbers: {exc}") from None
    if arr.shape != (dim,):
        raise InvalidInput(f"{name} must have shape ({dim},), got {arr.shape}")
    norm2 = float(arr @ arr)
    if not math.isfinite(norm2):
        raise InvalidInput(f"{name} must be finite")
    if norm2 == 0.0:
        raise InvalidInput(f"{name} must have a non-zero norm")
    return arr / np.float32(math.sqrt(norm2))


#: Scores closer than this count as tied. A float32 matrix-vector product can give two
#: identical rows results one or two ulps apart (BLAS handles rows in blocks), so exact
#: equality would let row order, not the id, decide between identical vectors.
TIE_TOL = 1e-5

_LOWEST = np.float32(-np.finfo(np.float32).max)  # below every finite score, above -inf
_FEW = 64  # candidates up to this many are ranked in Python


def top_k(scores: np.ndarray, ids: np.ndarray, k: int) -> list[tuple[float, int]]:
    """The ``k`` best ``(score, id)`` pairs from parallel arrays, highest score first.

    Ties: sorted by score, neighbours less than :data:`TIE_TOL` apart form one tie group,
    ordered by id, and every member reports the group's best score (so identical vectors
    always report identical scores and come out in id order). Entries scored ``-inf`` are
    excluded. Exact at the k-th place: every entry tied with the k-th competes on its id.

    Cost: a ``partition`` and a comparison over all ``n`` scores; only the candidates (the k
    best and whatever is tied with the k-th) are sorted: in Python when they are few (numpy's
    cost per call would dominate), in numpy when many vectors tie.
    """
    n = scores.shape[0]
    if k <= 0 or n == 0:
        return []
    floor = _LOWEST  # drops the excluded entries
    if k < n:  # nothing more than TIE_TOL below the k-th can make it
        floor = max(np.partition(scores, n - k)[n - k] - TIE_TOL, floor)
    rows = np.flatnonzero(scores >= floor)
    if rows.size <= _FEW:
        return _rank_few(scores[rows].tolist(), ids[rows].tolist(), k)
    return _rank_many(scores[rows], ids[rows], k)


def _rank_few(scores: list[float], ids: list[int], k: int) -> list[tuple[float, int]]:
    """:func:`top_k`'s order over a few candidates, in Python."""
    best: list[float] = []  # each tie group's best score, in order
    tagged: list[tuple[int, int]] = []  # (tie group, id)
    prev = math.inf
    for score, key in sorted(zip(scores, ids, strict=True), reverse=True):
        if prev - score > TIE_TOL:  # a gap: a new tie group starts here
            best.append(score)
        tagged.append((len(best) - 1, key))
        prev = score
    tagged.sort()  # by group, then by id within it
    return [(best[group], key) for group, key in tagged[:k]]


def _rank_many(scores: np.ndarray, ids: np.ndarray, k: int) -> list[tuple[float, int]]:
    """:func:`top_k`'s order over many candidates, in numpy (the same steps as
    :func:`_rank_few`)."""
    order = np.lexsort((ids, -scores))  # best first
    scores, ids = scores[order], ids[order]
    starts = np.ones(scores.size, dtype=bool)  # where a tie group starts
    np.greater(scores[:-1] - scores[1:], TIE_TOL, out=starts[1:])
    group = np.cumsum(starts) - 1
    order = np.lexsort((ids, group))[:k]  # by group, then by id within it
    best = scores[starts]  # each group's best score
    return list(zip(best[group[order]].tolist(), ids[order].tolist(), strict=True))


def _allow_array(allow: Collection[int]) -> np.ndarray:
    return np.fromiter((int(a) for a in allow), dtype=np.int64, count=len(allow))


# --------------------------------------------------------------------------------------------
# exact


class ExactIndex:
    """Exact cosine search: a contiguous ``(capacity, dim)`` float32 matrix of unit rows.

    ``add`` appends (the matrix doubles when full), ``remove`` moves the last row into the
    hole (swap-remove), ``search`` is one matrix-vector product over the live rows plus a
    ``partition`` (see :func:`top_k`). Memory: ``4 * dim`` bytes a vector (with up to 2x slack).
    """

    def __init__(self, dim: int, capacity: int = 1024) -> None:
        self._dim = _check_dim(dim)
        cap = max(16, int(capacity))
        self._mat = np.empty((cap, self._dim), dtype=np.float32)
        self._ids = np.empty(cap, dtype=np.int64)
        self._row: dict[int, int] = {}
        self._n = 0

    @property
    def dim(self) -> int:
        return self._dim

    def __len__(self) -> int:
        return self._n

    def __contains__(self, key: object) -> bool:
        return key in self._row

    def ids(self) -> list[int]:
        """Ids held, in ascending order."""
        return sorted(self._row)

    def vector(self, key: int) -> np.ndarray:
        """A copy of the stored (unit) vector of ``key``."""
        row = self._row.get(key)
        if row is None:
            raise NotFound(f"id {key} is not in the vector index")
        return self._mat[row].copy()

    def _reserve(self, extra: int) -> None:
        need = self._n + extra
        cap = self._mat.shape[0]
        if need <= cap:
            return
        while cap < need:
            cap *= 2
        mat = np.empty((cap, self._dim), dtype=np.float32)
        mat[: self._n] = self._mat[: self._n]
        ids = np.empty(cap, dtype=np.int64)
        ids[: self._n] = self._ids[: self._n]
        self._mat, self._ids = mat, ids

    def add(self, key: int, vector: Any) -> None:
        key = _check_key(key)
        if key in self._row:
            raise InvalidInput(f"id {key} is already in the vector index; use update()")
        vec = _unit_vector(vector, self._dim)
        self._reserve(1)
        self._mat[self._n] = vec
        self._ids[self._n] = key
        self._row[key] = self._n
        self._n += 1

    def add_many(self, keys: Sequence[int], vectors: Any) -> None:
        keys, rows = _check_batch(keys, vectors, self._dim, self._row)
        self._reserve(len(keys))
        start = self._n
        self._mat[start:start + len(keys)] = rows
        self._ids[start:start + len(keys)] = keys
        for i, k in enumerate(keys):
            self._row[k] = start + i
        self._n += len(keys)

    def update(self, key: int, vector: Any) -> None:
        row = self._row.get(key)
        if row is None:
            raise NotFound(f"id {key} is not in the vector index")
        self._mat[row] = _unit_vector(vector, self._dim)

    def remove(self, key: int) -> None:
        row = self._row.pop(key, None)
        if row is None:
            raise NotFound(f"id {key} is not in the vector index")
        last = self._n - 1
        if row != last:
            self._mat[row] = self._mat[last]
            moved = int(self._ids[last])
            self._ids[row] = moved
            self._row[moved] = row
        self._n = last

    def search(self, query: Any, k: int, allow: Collection[int] | None = None
               ) -> list[tuple[float, int]]:
        k = _check_k(k)
        q = _unit_vector(query, self._dim, "query")
        n = self._n
        if k == 0 or n == 0:
            return []
        if allow is None:
            return top_k(self._mat[:n] @ q, self._ids[:n], k)
        if 4 * len(allow) < n:  # few allowed: score only their rows
            rows = np.fromiter((self._row[a] for a in allow if a in self._row), dtype=np.int64)
            return top_k(self._mat[rows] @ q, self._ids[rows], k)
        scores = self._mat[:n] @ q
        scores[~np.isin(self._ids[:n], _allow_array(allow))] = -np.inf
        return top_k(scores, self._ids[:n], k)


# --------------------------------------------------------------------------------------------
# approximate (usearch)


class IndexUnavailable(LocimemError, ImportError):
    """An optional index backend is not installed."""


def _import_usearch() -> Any:
    # usearch 2.26 loaded before onnxruntime 1.32 makes the later onnxruntime import crash
    # the process (a native library clash); the other order is safe, so load onnxruntime
    # first whenever it is installed (the text extra).
    with contextlib.suppress(ImportError):
        import onnxruntime  # noqa: F401
    try:
        from usearch.index import Index
    except ImportError:
        raise IndexUnavailable(
            "UsearchIndex needs usearch: pip install 'locimem[vectors]'"
        ) from None
    return Index


class UsearchIndex:
    """Approximate cosine search on a usearch HNSW graph (the ``vectors`` extra).

    Below ``exact_below`` vectors (and for ``allow`` sets up to ``exact_below`` ids) the
    search is exhaustive, so the answer is exactly :class:`ExactIndex`'s. Above it the graph
    proposes ``2k + 16`` candidates, which are re-scored exactly and ranked with the shared
    tie rule; recall then depends on ``expansion_search``.

    Args:
        dim: vector width.
        connectivity, expansion_add, expansion_search: HNSW parameters (usearch's names).
        exact_below: store size under which every search is exhaustive.
        threads: usearch threads for add/search (0 = all cores).
    """

    def __init__(self, dim: int, *, connectivity: int = 16, expansion_add: int = 128,
                 expansion_search: int = 64, exact_below: int = 4096, threads: int = 1) -> None:
        index_cls = _import_usearch()
        self._dim = _check_dim(dim)
        self._index = index_cls(ndim=self._dim, metric="cos", dtype="f32",
                                connectivity=connectivity, expansion_add=expansion_add,
                                expansion_search=expansion_search)
        self._keys: set[int] = set()
        self.exact_below = int(exact_below)
        self.threads = int(threads)

    @property
    def dim(self) -> int:
        return self._dim

    def __len__(self) -> int:
        return len(self._keys)

    def __contains__(self, key: object) -> bool:
        return key in self._keys

    def ids(self) -> list[int]:
        return sorted(self._keys)

    def add(self, key: int, vector: Any) -> None:
        key = _check_key(key)
        if key in self._keys:
            raise InvalidInput(f"id {key} is already in the vector index; use update()")
        self._index.add(key, _unit_vector(vector, self._dim), threads=self.threads)
        self._keys.add(key)

    def add_many(self, keys: Sequence[int], vectors: Any) -> None:
        keys, rows = _check_batch(keys, vectors, self._dim, self._keys)
        if keys:
            self._index.add(np.asarray(keys, dtype=np.uint64), rows, threads=self.threads)
            self._keys.update(keys)

    def update(self, key: int, vector: Any) -> None:
        if key not in self._keys:
            raise NotFound(f"id {key} is not in the vector index")
        vec = _unit_vector(vector, self._dim)
        self._index.remove(key)
        self._index.add(key, vec, threads=self.threads)

    def remove(self, key: int) -> None:
        if key not in self._keys:
            raise NotFound(f"id {key} is not in the vector index")
        self._index.remove(key)
        self._keys.discard(key)

    def _rescore(self, q: np.ndarray, keys: Iterable[int], k: int) -> list[tuple[float, int]]:
        ids = np.fromiter(keys, dtype=np.int64)
        if ids.size == 0:
            return []
        vecs = self._index.get(ids.astype(np.uint64), dtype=np.float32)
        mat = np.asarray(vecs, dtype=np.float32).reshape(ids.size, self._dim)
        return top_k(mat @ q, ids, k)

    def search(self, query: Any, k: int, allow: Collection[int] | None = None
               ) -> list[tuple[float, int]]:
        k = _check_k(k)
        q = _unit_vector(query, self._dim, "query")
        n = len(self._keys)
        if k == 0 or n == 0:
            return []
        if allow is not None:
            allowed = [int(a) for a in allow if a in self._keys]
            if len(allowed) <= max(self.exact_below, 4 * k):
                return self._rescore(q, allowed, k)
            allow_set = set(allowed)
        elif n <= self.exact_below:
            return self._rescore(q, self._keys, k)
        fetch = min(n, 2 * k + 16)
        while True:
            found = self._index.search(q, fetch, threads=self.threads)
            keys = [int(x) for x in found.keys]
            if allow is not None:
                keys = [x for x in keys if x in allow_set]
            if len(keys) >= k or fetch >= n:
                return self._rescore(q, keys, k)
            fetch = min(n, fetch * 4)
