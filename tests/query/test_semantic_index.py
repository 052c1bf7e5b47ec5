"""The semantic index holds one vector per distinct label and lists each label's objects after the
search: the same answers, in the same order, as a vector index holding one vector per object."""

from __future__ import annotations

import random
from collections.abc import Callable, Sequence

import numpy as np
import pytest

from locimem.index.vectors import ExactIndex, VectorIndex
from locimem.query.semantic import SemanticIndex

DIM = 8


class TableEncoder:
    """A deterministic encoder that looks each text up in a table of vectors."""

    def __init__(self, table: dict[str, np.ndarray]) -> None:
        self.table = table
        self.calls: list[list[str]] = []

    @property
    def dim(self) -> int:
        return DIM

    def encode(self, texts: Sequence[str]) -> np.ndarray:
        self.calls.append(list(texts))
        rows = np.stack([self.table[t] for t in texts]).astype(np.float32)
        return rows / np.linalg.norm(rows, axis=1, keepdims=True)


def label_table(seed: int = 0) -> dict[str, np.ndarray]:
    """Distinct labels, two with the very same vector and one a hair (far below TIE_TOL) away."""
    rng = np.random.default_rng(seed)
    table = {f"thing{i}": rng.standard_normal(DIM) for i in range(10)}
    table["cup"] = rng.standard_normal(DIM)
    table["teacup"] = table["cup"].copy()  # identical: tied exactly
    table["mug"] = table["cup"] + 1e-7 * rng.standard_normal(DIM)  # tied within TIE_TOL
    return table


def per_object_reference(index: SemanticIndex, encoder: TableEncoder) -> ExactIndex:
    """What the index used to be: one vector per object, keyed by object id."""
    ref = ExactIndex(DIM)
    for oid, label in index._label_of.items():
        ref.add(oid, encoder.encode([label])[0])
    return ref


def assert_same_answers(index: SemanticIndex, ref: VectorIndex, queries: Sequence[np.ndarray],
                        allows: Sequence[set[int] | None]) -> None:
    for q in queries:
        for k in (1, 3, 10, 25, 1000):
            for allow in allows:
                got, want = index.by_embedding(q, k, allow), ref.search(q, k, allow)
                assert [i for _, i in got] == [i for _, i in want]
                assert [s for s, _ in got] == pytest.approx([s for s, _ in want], abs=1e-6)


def build(encoder: TableEncoder, make_index: Callable[[int], VectorIndex] | None = None,
          n: int = 80, seed: int = 1) -> SemanticIndex:
    rng = random.Random(seed)
    index = SemanticIndex(encoder, make_index)
    labels = sorted(encoder.table)
    ids = rng.sample(range(10_000), n)  # not in insertion order
    index.set_many((oid, rng.choice(labels)) for oid in ids)
    return index


def test_one_vector_per_label_and_the_per_object_answers() -> None:
    encoder = TableEncoder(label_table())
    index = build(encoder)
    assert len(index._vectors) == len(index.labels()) < len(index)
    rng = np.random.default_rng(2)
    queries = [*rng.standard_normal((20, DIM)), *encoder.encode(["cup", "thing3"])]
    ids = sorted(index._label_of)
    allows = [None, set(ids[::2]), set(ids[::17]), {ids[0], 99_999}, set()]
    assert_same_answers(index, per_object_reference(index, encoder), queries, allows)


def test_tied_labels_merge_their_objects_by_id() -> None:
    encoder = TableEncoder(label_table())
    index = SemanticIndex(encoder)
    index.set_many([(9, "cup"), (4, "teacup"), (7, "mug"), (2, "teacup"), (5, "cup"),
                    (1, "thing0")])
    hits = index.by_embedding(encoder.encode(["cup"])[0], 4)
    assert [i for _, i in hits] == [2, 4, 5, 7]
    assert len({s for s, _ in hits}) == 1  # one tie group, one score
    assert [i for _, i in index.by_embedding(encoder.encode(["cup"])[0], 4, {9, 7, 1})] \
        == [7, 9, 1]


def test_labels_tied_beyond_the_first_fetch_are_not_cut_off() -> None:
    """30 labels share one vector; the smallest ids belong to the labels indexed last."""
    same = np.ones(DIM)
    encoder = TableEncoder({f"label{i}": same for i in range(30)} | {"other": -same})
    index = SemanticIndex(encoder)
    for i in range(30):
        index.set(1000 - i, f"label{i}")
    index.set(1, "other")
    assert [i for _, i in index.by_embedding(same, 3)] == [971, 972, 973]
    assert [i for _, i in index.by_embedding(same, 3, allow={1000, 985, 1})] == [985, 1000, 1]
    assert [i for _, i in index.by_embedding(-same, 2)] == [1, 971]


def test_relabel_and_remove_keep_one_vector_per_label() -> None:
    encoder = TableEncoder(label_table())
    index = SemanticIndex(encoder)
    index.set_many([(1, "cup"), (2, "cup"), (3, "thing1")])
    assert len(index._vectors) == 2
    index.set(3, "cup")  # thing1 lost its last object
    assert len(index._vectors) == 1 and index.labels() == ["cup"]
    index.set(2, "thing2")
    index.remove(1)
    index.remove(1)  # a second removal is a no-op
    assert index.labels() == ["cup", "thing2"] and len(index._vectors) == 2
    q = encoder.encode(["thing2"])[0]
    assert [i for _, i in index.by_embedding(q, 5)] == [2, 3]
    index.set(7, "thing1")  # a label that comes back is embedded once only
    assert sum(c.count("thing1") for c in encoder.calls) == 1
    assert len(index._vectors) == 3


def test_random_operations_agree_with_one_vector_per_object() -> None:
    encoder = TableEncoder(label_table(3))
    index = build(encoder, n=40, seed=3)
    rng = random.Random(4)
    nrng = np.random.default_rng(4)
    labels = sorted(encoder.table)
    for step in range(300):
        oid = rng.randrange(60)
        if rng.random() < 0.3:
            index.remove(oid)
        else:
            index.set(oid, rng.choice(labels))
        if step % 25 == 0:
            ids = sorted(index._label_of)
            assert len(index._vectors) == len(index.labels())
            assert_same_answers(index, per_object_reference(index, encoder),
                                list(nrng.standard_normal((4, DIM))),
                                [None, set(rng.sample(ids, len(ids) // 3))])


def test_without_an_encoder_or_objects_there_is_nothing_to_find() -> None:
    assert SemanticIndex().by_embedding(np.ones(DIM), 5) == []
    empty = SemanticIndex(TableEncoder(label_table()))
    assert empty.by_embedding(np.ones(DIM), 5) == []
    assert build(TableEncoder(label_table())).by_embedding(np.ones(DIM), 0) == []


def test_exact_and_usearch_label_indexes_agree() -> None:
    pytest.importorskip("usearch")
    from locimem.index.vectors import UsearchIndex

    encoder = TableEncoder(label_table(5))
    exact, approx = build(encoder, seed=6), build(encoder, UsearchIndex, seed=6)
    for oid in sorted(exact._label_of)[::7]:
        exact.remove(oid)
        approx.remove(oid)
    exact.set(12_345, "mug")
    approx.set(12_345, "mug")
    queries = [*np.random.default_rng(7).standard_normal((15, DIM)), encoder.encode(["mug"])[0]]
    ids = sorted(exact._label_of)
    assert_same_answers(approx, per_object_reference(exact, encoder), queries,
                        [None, set(ids[::3])])
    for q in queries:
        a, e = approx.by_embedding(q, 10), exact.by_embedding(q, 10)
        assert [i for _, i in a] == [i for _, i in e]
        assert [s for s, _ in a] == pytest.approx([s for s, _ in e], abs=1e-6)
