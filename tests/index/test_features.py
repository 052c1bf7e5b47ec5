"""The appearance tier's candidates (index/features.py): ``above`` gives exactly the head of the
exhaustive ranking it replaced, ties included, below the graph threshold; above it (usearch),
every row it gives is scored exactly, and the decision is the same wherever the exhaustive
answer is unambiguous — up to the graph's recall (an HNSW search can miss a row: measured
about one unambiguous query in 1,500 on 32-d random vectors)."""

from __future__ import annotations

import importlib.util

import numpy as np
import pytest

from locimem.index.features import FeatureMatrix

NEED, MARGIN = 0.9, 0.1  # feature_match_min + feature_label_strict, feature_margin (defaults)


def _reference(fm: FeatureMatrix, query: np.ndarray, floor: float
               ) -> tuple[list[int], list[float]]:
    """The exhaustive ranking ``by_appearance`` used before: score every row, lexsort all of
    them (best first, ties by lower id), read down to ``floor``."""
    n = len(fm)
    ids = fm._ids[:n]
    cos = (fm._mat[:n] * query).sum(axis=1)
    order = np.lexsort((ids, -cos))
    out_ids, out_cos = [], []
    for oid, c in zip(ids[order].tolist(), cos[order].tolist(), strict=True):
        if c < floor:
            break
        out_ids.append(oid)
        out_cos.append(c)
    return out_ids, out_cos


def _decision(ids: list[int], cos: list[float]) -> int | None:
    """What ``by_appearance`` decides when every object is eligible."""
    if not ids:
        return None
    second = cos[1] if len(cos) > 1 else -1.0
    return ids[0] if cos[0] >= NEED and cos[0] - second >= MARGIN else None


def _unit(rows: np.ndarray) -> np.ndarray:
    return rows / np.linalg.norm(rows, axis=-1, keepdims=True)


def _random_store(rng: np.random.Generator, n: int, dim: int, **kw: object) -> FeatureMatrix:
    """``n`` rows under shuffled ids, some rows duplicated (exact ties) and some near
    duplicates (near ties)."""
    rows = _unit(rng.standard_normal((n, dim)))
    for i in rng.choice(n, size=min(n, 1 + n // 10), replace=False):
        j = int(rng.integers(n))
        rows[i] = rows[j] if rng.random() < 0.5 else _unit(rows[j] + rng.normal(0, 0.02, dim))
    fm = FeatureMatrix(**kw)  # type: ignore[arg-type]
    for key, row in zip(rng.permutation(20 * n)[:n].tolist(), rows, strict=True):
        fm.set(int(key) + 1, row)
    return fm


@pytest.mark.parametrize("seed", range(40))
def test_exact_candidates_are_the_head_of_the_exhaustive_ranking(seed: int) -> None:
    rng = np.random.default_rng(seed)
    n = int(rng.integers(1, 3000))
    dim = int(rng.choice([2, 8, 128]))
    fm = _random_store(rng, n, dim, approximate_above=None)
    # churn: replace and remove some rows (swap-remove reorders the matrix)
    keys = list(fm._row)
    for key in rng.choice(keys, size=len(keys) // 5, replace=False).tolist():
        if rng.random() < 0.5:
            fm.remove(key)
        else:
            fm.set(key, _unit(rng.standard_normal(dim)))
    if len(fm) == 0:
        return
    for _ in range(10):
        base = fm._mat[int(rng.integers(len(fm)))]
        query = _unit(base + rng.normal(0, float(rng.choice([0.0, 0.05, 1.0])), dim))
        floor = float(rng.choice([NEED - MARGIN, -1.0, float(rng.uniform(-1, 1))]))
        ids, cos = fm.above(query, floor)
        ref_ids, ref_cos = _reference(fm, query, floor)
        assert ids.tolist() == ref_ids
        assert cos.tolist() == ref_cos  # bit for bit


def test_a_rows_score_does_not_depend_on_its_position() -> None:
    rng = np.random.default_rng(7)
    rows = _unit(rng.standard_normal((500, 128)))
    query = _unit(rows[3] + rng.normal(0, 0.05, 128))
    a, b = FeatureMatrix(approximate_above=None), FeatureMatrix(approximate_above=None)
    for k in range(500):
        a.set(k + 1, rows[k])
    for k in rng.permutation(500).tolist():
        b.set(k + 1, rows[k])
    ids_a, cos_a = a.above(query, -1.0)
    ids_b, cos_b = b.above(query, -1.0)
    assert ids_a.tolist() == ids_b.tolist() and cos_a.tolist() == cos_b.tolist()
    assert ids_a.tolist() == a.ranked(query)[0].tolist()


def test_ties_go_to_the_lower_id() -> None:
    fm = FeatureMatrix(approximate_above=None)
    v = _unit(np.arange(1.0, 5.0))
    for key in (9, 4, 7):
        fm.set(key, v)
    ids, cos = fm.above(v, 0.5)
    assert ids.tolist() == [4, 7, 9] and len(set(cos.tolist())) == 1


@pytest.mark.skipif(importlib.util.find_spec("usearch") is None, reason="needs the vectors extra")
@pytest.mark.parametrize("seed", range(12))
def test_graph_candidates_decide_as_the_exhaustive_ranking_when_unambiguous(seed: int) -> None:
    rng = np.random.default_rng(100 + seed)
    n, dim = 3000, 32
    fm = _random_store(rng, n, dim, approximate_above=500)
    exact = FeatureMatrix(approximate_above=None)
    for key, row in fm._row.items():
        exact.set(key, fm._mat[row].copy())
    checked = unambiguous = same = 0
    for step in range(300):
        # keep the graph in step: new rows, drifting rows, removed rows
        if step % 3 == 0:
            key = 10**7 + step
            v = _unit(rng.standard_normal(dim))
        else:
            key = int(rng.choice(list(fm._row)))
            v = _unit(fm._mat[fm._row[key]] + rng.normal(0, 0.03, dim))
        if step % 17 == 0:
            fm.remove(key)
            exact.remove(key)
        else:
            fm.set(key, v)
            exact.set(key, v)
        base = exact._mat[int(rng.integers(len(exact)))]
        query = _unit(base + rng.normal(0, float(rng.choice([0.01, 0.05, 0.3, 3.0])), dim))
        ids, cos = fm.above(query, NEED - MARGIN)
        ref_ids, ref_cos = _reference(exact, query, NEED - MARGIN)
        for oid, c in zip(ids.tolist(), cos.tolist(), strict=True):  # scored exactly
            assert c == ref_cos[ref_ids.index(oid)]
        want = _decision(ref_ids, ref_cos)
        if want is not None or not ref_ids:  # unambiguous: a clear best, or nothing close
            unambiguous += 1
            same += _decision(ids.tolist(), cos.tolist()) == want
        checked += 1
    assert fm._graph is not None
    assert unambiguous > checked // 2
    assert same >= unambiguous - 2  # the graph's recall: rare misses, never a wrong score


@pytest.mark.skipif(importlib.util.find_spec("usearch") is None, reason="needs the vectors extra")
def test_the_same_rows_make_the_same_graph() -> None:
    """The graph is built on one thread, so a memory reopened with the same rows finds the
    same candidates — near ties included — as the one before it."""
    stores = [_random_store(np.random.default_rng(7), 3000, 32, approximate_above=500)
              for _ in range(2)]
    rng = np.random.default_rng(8)
    for _ in range(200):
        base = stores[0]._mat[int(rng.integers(len(stores[0])))]
        query = _unit(base + rng.normal(0, float(rng.choice([0.01, 0.05, 0.3])), 32))
        (a_ids, a_cos), (b_ids, b_cos) = (s.above(query, NEED - MARGIN) for s in stores)
        assert a_ids.tolist() == b_ids.tolist() and a_cos.tolist() == b_cos.tolist()
    assert all(s._graph is not None for s in stores)


@pytest.mark.parametrize("dim", [16, 128, 768])
def test_the_float32_candidate_product_never_drops_a_row_at_the_floor(dim: int) -> None:
    """The candidates come from a float32 copy of the rows; the floor is put exactly at some
    rows' float64 cosines and a hair (1e-12 .. 1e-6) above and below others', where float32
    rounding alone would decide: the answer is still the exhaustive float64 one, row for row,
    with every removal and reuse of rows along the way."""
    rng = np.random.default_rng(dim)
    fm = _random_store(rng, 600, dim)
    for key in rng.choice(fm._ids[:len(fm)], size=50, replace=False).tolist():
        fm.remove(int(key))
    for key in range(100_000, 100_030):
        fm.set(key, _unit(rng.standard_normal(dim)))
    for _ in range(40):
        query = _unit(rng.standard_normal(dim))
        exact = (fm._mat[:len(fm)] * query).sum(axis=1)
        pivot = float(exact[int(rng.integers(len(fm)))])
        for floor in (pivot, pivot - 1e-12, pivot + 1e-12, pivot - 1e-6, pivot + 1e-6):
            ids, cos = fm.above(query, floor)
            ref_ids, ref_cos = _reference(fm, query, floor)
            assert ids.tolist() == ref_ids and cos.tolist() == ref_cos
        assert fm._mat32[:len(fm)].tolist() == fm._mat[:len(fm)].astype(np.float32).tolist()


@pytest.mark.parametrize("seed", range(6))
def test_many_queries_at_once_answer_as_each_alone(seed: int) -> None:
    from locimem.index.features import BATCH_FROM

    rng = np.random.default_rng(seed)
    fm = _random_store(rng, int(rng.integers(50, 3000)), int(rng.choice([8, 32, 128])))
    n, dim = len(fm), fm.dim
    assert dim is not None
    k = int(rng.integers(1, 3 * BATCH_FROM))
    # near copies of stored rows (near ties at the floor) and random directions
    queries = [_unit(fm._mat[int(rng.integers(n))] + rng.normal(0, 0.05, dim))
               if rng.random() < 0.7 else _unit(rng.standard_normal(dim)) for _ in range(k)]
    floor = NEED - MARGIN
    many = fm.above_many(queries, floor)
    assert len(many) == k
    for q, (ids, cos) in zip(queries, many, strict=True):
        ids1, cos1 = fm.above(q, floor)
        assert ids.tolist() == ids1.tolist() and cos.tobytes() == cos1.tobytes()
        assert (ids.tolist(), cos.tolist()) == _reference(fm, q, floor)
    assert fm.above_many([], floor) == []
