"""Vector indexes: exact numpy search, the usearch extra, and their shared contract."""

from __future__ import annotations

import io
import random

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from locimem.errors import InvalidInput, NotFound
from locimem.index.bench import clustered_vectors, run_vector_bench
from locimem.index.vectors import TIE_TOL, ExactIndex, VectorIndex, top_k


def unit(*xs: float) -> np.ndarray:
    v = np.asarray(xs, dtype=np.float32)
    return v / np.linalg.norm(v)


def brute(store: dict[int, np.ndarray], q: np.ndarray, k: int,
          allow: set[int] | None = None) -> list[int]:
    """Reference ranking in float64: score desc, then id."""
    q = q / np.linalg.norm(q)
    pairs = [(-float(v.astype(np.float64) @ q / np.linalg.norm(v)), i)
             for i, v in store.items() if allow is None or i in allow]
    return [i for _, i in sorted(pairs)[:k]]


def test_exact_index_basics() -> None:
    ix = ExactIndex(3)
    assert isinstance(ix, VectorIndex)
    ix.add(10, [1, 0, 0])
    ix.add(11, [0, 2, 0])  # normalised on the way in
    ix.add(12, [1, 1, 0])
    assert len(ix) == 3 and 11 in ix and 99 not in ix
    hits = ix.search([1, 0.1, 0], 2)
    assert [i for _, i in hits] == [10, 12]
    assert hits[0][0] == pytest.approx(1 / np.sqrt(1.01), abs=1e-6)
    assert np.allclose(ix.vector(11), [0, 1, 0])
    ix.update(10, [0, 0, 5])
    assert [i for _, i in ix.search([1, 0, 0], 3)] == [12, 10, 11]
    ix.remove(12)
    assert ix.ids() == [10, 11] and len(ix) == 2
    assert [i for _, i in ix.search([1, 1, 0], 5)] == [11, 10]
    assert ix.search([1, 0, 0], 0) == []
    assert ExactIndex(3).search([1, 0, 0], 4) == []


def test_ties_are_broken_by_id_and_report_equal_scores() -> None:
    rng = np.random.default_rng(3)
    ix = ExactIndex(64)
    same = rng.standard_normal(64)
    ids = list(range(500, 0, -7))  # inserted in descending id order
    for i in ids:
        ix.add(i, same if i % 2 else rng.standard_normal(64))
    hits = ix.search(same, 10)
    tied = sorted(i for i in ids if i % 2)[:10]
    assert [i for _, i in hits] == tied
    assert len({s for s, _ in hits}) == 1


def test_top_k_helper() -> None:
    scores = np.array([0.5, -np.inf, 0.9, 0.5, 0.1], dtype=np.float32)
    ids = np.array([4, 0, 7, 2, 9])
    assert top_k(scores, ids, 3) == [(pytest.approx(0.9), 7), (0.5, 2), (0.5, 4)]
    assert [i for _, i in top_k(scores, ids, 10)] == [7, 2, 4, 9]  # -inf excluded
    assert top_k(scores, ids, 0) == []
    assert top_k(np.array([-np.inf]), np.array([1]), 1) == []


def reference_top_k(scores: np.ndarray, ids: np.ndarray, k: int) -> list[tuple[float, int]]:
    """The tie rule spelled out over every entry: the candidates are those within TIE_TOL of
    the k-th best (never one scored -inf); sorted by score, neighbours less than TIE_TOL apart
    form a group, which reports its best score and lists its ids in order."""
    if k <= 0:
        return []
    ordered = sorted(scores.tolist(), reverse=True)
    floor = float(np.float32(ordered[k - 1]) - TIE_TOL) if k < len(ordered) else -np.inf
    cand = sorted(((s, i) for s, i in zip(scores.tolist(), ids.tolist(), strict=True)
                   if s >= floor and s > -np.inf), reverse=True)
    groups: list[list[tuple[float, int]]] = []
    for s, i in cand:
        if groups and groups[-1][-1][0] - s <= TIE_TOL:
            groups[-1].append((s, i))
        else:
            groups.append([(s, i)])
    return [(g[0][0], i) for g in groups for i in sorted(i for _, i in g)][:k]


@settings(max_examples=300, deadline=None)
@given(n=st.integers(1, 300), k=st.integers(0, 320), seed=st.integers(0, 2**16))
def test_top_k_matches_the_tie_rule_spelled_out(n: int, k: int, seed: int) -> None:
    """Scores on a grid of 3e-6 steps around a few values: exact ties, chains of near-ties
    (one step is within TIE_TOL, four are not), clear gaps and excluded (-inf) entries; few
    candidates and many (ranked by different code)."""
    rng = np.random.default_rng(seed)
    base = np.array([0.9, 0.5, 0.1, -0.4, -np.inf])[rng.integers(0, 5, n)]
    scores = (base + 3e-6 * rng.integers(-4, 5, n)).astype(np.float32)
    ids = rng.permutation(10 * n)[:n]
    assert top_k(scores, ids, k) == reference_top_k(scores, ids, k)


def test_ties_with_allow_and_a_tie_group_larger_than_k() -> None:
    ix = ExactIndex(16)
    rng = np.random.default_rng(5)
    same = rng.standard_normal(16)
    ids = rng.permutation(5000)[:600]
    for i in ids:
        ix.add(int(i), same if i % 3 else rng.standard_normal(16))
    tied = sorted(int(i) for i in ids if i % 3)
    assert [i for _, i in ix.search(same, 7)] == tied[:7]
    allow = set(tied[::5]) | {int(i) for i in ids if i % 3 == 0}
    hits = ix.search(same, 7, allow=allow)
    assert [i for _, i in hits] == sorted(tied[::5])[:7]
    assert len({s for s, _ in hits}) == 1 and hits[0][0] == pytest.approx(1.0, abs=1e-6)
    assert [i for _, i in ix.search(same, 3, allow={tied[-1], 99_999})] == [tied[-1]]


@pytest.mark.parametrize(("query", "message"), [
    ([1, 0], r"query must have shape \(3,\), got \(2,\)"),
    ([np.inf, 0, 0], "query must be finite"),
    ([np.nan, 1, 0], "query must be finite"),
    ([0, 0, 0], "query must have a non-zero norm"),
])
def test_a_bad_query_is_refused(query, message) -> None:
    ix = ExactIndex(3)
    ix.add(1, [1, 0, 0])
    with pytest.raises(InvalidInput, match=message):
        ix.search(query, 1)


def test_random_operations_agree_with_brute_force() -> None:
    rng = random.Random(11)
    nrng = np.random.default_rng(11)
    dim = 8
    ix = ExactIndex(dim, capacity=4)  # forces growth
    store: dict[int, np.ndarray] = {}
    for _ in range(600):
        op = rng.random()
        if op < 0.5 or not store:
            key = rng.randrange(1000)
            if key in store:
                continue
            v = nrng.standard_normal(dim)
            ix.add(key, v)
            store[key] = v
        elif op < 0.7:
            key = rng.choice(sorted(store))
            v = nrng.standard_normal(dim)
            ix.update(key, v)
            store[key] = v
        else:
            key = rng.choice(sorted(store))
            ix.remove(key)
            del store[key]
        if rng.random() < 0.2:
            q = nrng.standard_normal(dim)
            k = rng.randint(1, 12)
            assert [i for _, i in ix.search(q, k)] == brute(store, q, k)
            allow = set(rng.sample(sorted(store), max(1, len(store) // rng.choice([2, 10]))))
            allow.add(99_999)  # unknown ids in allow are ignored
            assert [i for _, i in ix.search(q, k, allow=allow)] == brute(store, q, k, allow)
    assert sorted(store) == ix.ids()


def test_bulk_add_and_allow_paths() -> None:
    data = clustered_vectors(300, 16, seed=2)
    ix = ExactIndex(16)
    ix.add_many(range(300), data)
    store = dict(enumerate(data))
    q = data[17]
    assert [i for _, i in ix.search(q, 5)] == brute(store, q, 5)
    small = {3, 17, 250}
    assert [i for _, i in ix.search(q, 5, allow=small)] == brute(store, q, 5, small)
    large = set(range(0, 300, 2))
    assert [i for _, i in ix.search(q, 5, allow=large)] == brute(store, q, 5, large)
    assert ix.search(q, 5, allow=set()) == []


@pytest.mark.parametrize(("call", "error", "message"), [
    (lambda ix: ix.add(1, [1, 0]), InvalidInput, r"shape \(3,\), got \(2,\)"),
    (lambda ix: ix.add(1, [np.nan, 0, 0]), InvalidInput, "must be finite"),
    (lambda ix: ix.add(1, [0, 0, 0]), InvalidInput, "non-zero norm"),
    (lambda ix: ix.add(True, [1, 0, 0]), InvalidInput, "id must be an integer"),
    (lambda ix: ix.add(-1, [1, 0, 0]), InvalidInput, r"id must be in \[0, 2\*\*63 - 1\]"),
    (lambda ix: ix.add(5, [1, 0, 0]), InvalidInput, "already in the vector index; use update"),
    (lambda ix: ix.update(6, [1, 0, 0]), NotFound, "id 6 is not in the vector index"),
    (lambda ix: ix.remove(6), NotFound, "id 6 is not in the vector index"),
    (lambda ix: ix.search([1, 0, 0], -1), InvalidInput, "k must be an integer >= 0"),
    (lambda ix: ix.search("abc", 1), InvalidInput, "must be numbers"),
    (lambda ix: ix.add_many([1, 2], [[1, 0, 0]]), InvalidInput, "2 ids but 1 vectors"),
    (lambda ix: ix.add_many([1, 1], [[1, 0, 0], [0, 1, 0]]), InvalidInput, "distinct"),
    (lambda ix: ix.add_many([5], [[1, 0, 0]]), InvalidInput, r"already in the vector index: \[5\]"),
])
def test_bad_input_is_refused(call, error, message) -> None:
    ix = ExactIndex(3)
    ix.add(5, [0, 0, 1])
    with pytest.raises(error, match=message):
        call(ix)
    assert ix.ids() == [5]  # nothing changed


def test_dim_is_checked() -> None:
    with pytest.raises(InvalidInput, match="dim must be a positive integer, got 0"):
        ExactIndex(0)


# -- usearch (the vectors extra) ------------------------------------------------------------

def test_usearch_gives_the_exact_top_k_on_small_stores() -> None:
    pytest.importorskip("usearch")
    from locimem.index.vectors import UsearchIndex

    data = clustered_vectors(1500, 32, seed=4)
    data[100:120] = data[7]  # a block of identical vectors: ties
    order = list(range(1500))
    random.Random(4).shuffle(order)
    exact, approx = ExactIndex(32), UsearchIndex(32)
    assert isinstance(approx, VectorIndex)
    exact.add_many(order, data)
    approx.add_many(order, data)
    for key in order[:200:3]:
        exact.remove(key)
        approx.remove(key)
    for key in order[300:320]:
        v = np.random.default_rng(key).standard_normal(32)
        exact.update(key, v)
        approx.update(key, v)
    assert exact.ids() == approx.ids()
    qs = [*clustered_vectors(40, 32, seed=9), data[7], data[100]]
    allow = set(order[::5])
    for q in qs:
        for k in (1, 10, 25):
            e, a = exact.search(q, k), approx.search(q, k)
            assert [i for _, i in e] == [i for _, i in a]
            assert np.allclose([s for s, _ in e], [s for s, _ in a], atol=1e-5)
            assert [i for _, i in exact.search(q, k, allow)] == \
                [i for _, i in approx.search(q, k, allow)]


def test_usearch_graph_search_recall() -> None:
    pytest.importorskip("usearch")
    from locimem.index.vectors import UsearchIndex

    data = clustered_vectors(3000, 48, seed=6)
    exact, approx = ExactIndex(48), UsearchIndex(48, exact_below=0)
    exact.add_many(range(3000), data)
    approx.add_many(range(3000), data)
    qs = clustered_vectors(50, 48, seed=8)
    hits = 0
    for q in qs:
        e = dict((i, s) for s, i in exact.search(q, 10))
        a = approx.search(q, 10)
        hits += sum(i in e for _, i in a)
        for s, i in a:  # candidates are re-scored exactly
            if i in e:
                assert s == pytest.approx(e[i], abs=1e-5)
    assert hits / 500 >= 0.95
    # allow far smaller than the graph's first candidates: it widens its search
    allow = set(range(0, 3000, 97))
    assert [i for _, i in approx.search(qs[0], 3, allow)] == \
        [i for _, i in exact.search(qs[0], 3, allow)]
    with pytest.raises(NotFound):
        approx.remove(123_456)
    with pytest.raises(InvalidInput, match="already in the vector index"):
        approx.add(0, data[0])


def test_vector_bench_prints_a_table() -> None:
    out = io.StringIO()
    rows = run_vector_bench(out, sizes=(200, 400), dim=16, queries=3, k=5)
    text = out.getvalue()
    assert "| vectors | bare `M @ q` (ms) | ExactIndex.search (ms) | exact / bare |" in text
    assert [r["n"] for r in rows] == [200, 400]
    assert "| 200 |" in text and "| 400 |" in text
    assert all(r["exact_ms"] > 0 and r["bare_matmul_ms"] > 0 for r in rows)


def test_usearch_then_the_encoder_in_one_process_does_not_crash() -> None:
    """usearch imported before onnxruntime crashes the process unless locimem orders them."""
    pytest.importorskip("usearch")
    pytest.importorskip("onnxruntime")
    import subprocess
    import sys

    code = ("from locimem.index.vectors import UsearchIndex; UsearchIndex(8); "
            "from locimem.language.encoder import MiniLMEncoder; "
            "print(MiniLMEncoder().encode(['cup']).shape)")
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          check=False, timeout=120)
    assert proc.returncode == 0, proc.stderr[-500:]
    assert proc.stdout.strip() == "(1, 384)"
