"""Vector search benchmark: exact (numpy) against a bare matrix product, and usearch.

``run_vector_bench(out)`` prints a markdown table; nothing here asserts on timing. The data
are clustered unit vectors (a few hundred centres with noise), which is what label and
appearance embeddings look like — uniformly random vectors are a needlessly hard case for
HNSW. Query latency is the median over ``queries`` single-vector searches.
"""

from __future__ import annotations

import statistics
import sys
import time
from collections.abc import Callable, Sequence
from functools import partial
from typing import Any, TextIO

import numpy as np

from locimem.index.vectors import ExactIndex, IndexUnavailable, UsearchIndex

__all__ = ["clustered_vectors", "run_vector_bench", "time_per_call"]


def clustered_vectors(n: int, dim: int, *, centres: int = 256, noise: float = 0.35,
                      seed: int = 0) -> np.ndarray:
    """``n`` unit float32 vectors around ``centres`` random directions."""
    rng = np.random.default_rng(seed)
    c = rng.standard_normal((centres, dim)).astype(np.float32)
    c /= np.linalg.norm(c, axis=1, keepdims=True)
    x = c[rng.integers(0, centres, n)] + noise * rng.standard_normal((n, dim)).astype(
        np.float32) / np.sqrt(dim)
    return (x / np.linalg.norm(x, axis=1, keepdims=True)).astype(np.float32)


def time_per_call(fn: Callable[[Any], Any], args: Sequence[Any]) -> float:
    """Median seconds of ``fn(a)`` over ``args`` (after one warm-up call)."""
    fn(args[0])
    times = []
    for a in args:
        t0 = time.perf_counter()
        fn(a)
        times.append(time.perf_counter() - t0)
    return statistics.median(times)


def run_vector_bench(out: TextIO = sys.stdout, *, sizes: Sequence[int] = (1_000, 10_000,
                     100_000), dim: int = 384, queries: int = 50, k: int = 10, seed: int = 0,
                     with_usearch: bool = True) -> list[dict[str, Any]]:
    """Time exact search, a bare ``matrix @ query`` and (if installed) usearch at each size;
    print a markdown table to ``out`` and return its rows as dicts (times in milliseconds)."""
    rows = []
    rng = np.random.default_rng(seed + 1)
    for n in sizes:
        data = clustered_vectors(n, dim, seed=seed)
        qs = data[rng.integers(0, n, queries)] + 0.05 * rng.standard_normal(
            (queries, dim)).astype(np.float32) / np.sqrt(dim)
        qs = [q / np.linalg.norm(q) for q in qs.astype(np.float32)]
        exact = ExactIndex(dim, capacity=n)
        exact.add_many(range(n), data)
        mat = np.ascontiguousarray(data)
        row: dict[str, Any] = {
            "n": n,
            "bare_matmul_ms": 1e3 * time_per_call(mat.__matmul__, qs),
            "exact_ms": 1e3 * time_per_call(partial(exact.search, k=k), qs),
        }
        row["exact_over_bare"] = row["exact_ms"] / row["bare_matmul_ms"]
        if with_usearch:
            try:
                approx = UsearchIndex(dim, exact_below=0, threads=0)
            except IndexUnavailable:
                with_usearch = False
            else:
                t0 = time.perf_counter()
                approx.add_many(list(range(n)), data)
                row["usearch_build_s"] = time.perf_counter() - t0
                approx.threads = 1
                row["usearch_ms"] = 1e3 * time_per_call(partial(approx.search, k=k), qs)
                hits = sum(len({i for _, i in exact.search(q, k)}
                               & {i for _, i in approx.search(q, k)}) for q in qs)
                row["usearch_recall"] = hits / (k * len(qs))
        rows.append(row)
    _print_table(out, rows, dim, k, with_usearch)
    return rows


def _print_table(out: TextIO, rows: list[dict[str, Any]], dim: int, k: int,
                 with_usearch: bool) -> None:
    head = ["vectors", "bare `M @ q` (ms)", "ExactIndex.search (ms)", "exact / bare"]
    if with_usearch:
        head += ["usearch build (s)", "usearch search (ms)", f"usearch recall@{k}"]
    print(f"Vector search, dim={dim}, top-{k}, median of single queries:\n", file=out)
    print("| " + " | ".join(head) + " |", file=out)
    print("|" + "|".join("---:" for _ in head) + "|", file=out)
    for r in rows:
        cells = [f"{r['n']:,}", f"{r['bare_matmul_ms']:.3f}", f"{r['exact_ms']:.3f}",
                 f"{r['exact_over_bare']:.2f}x"]
        if with_usearch and "usearch_ms" in r:
            cells += [f"{r['usearch_build_s']:.2f}", f"{r['usearch_ms']:.3f}",
                      f"{r['usearch_recall']:.3f}"]
        print("| " + " | ".join(cells) + " |", file=out)
