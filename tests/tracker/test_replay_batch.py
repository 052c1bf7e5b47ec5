"""A replay folds the embeddings of the sightings between two events in arrays
(``apply.replay``, ``_fold_embeddings``); each object comes out with the floats ``apply`` one
record at a time gives, to the bit."""

from __future__ import annotations

import copy

import numpy as np
import pytest

from locimem.model import ObjectState
from locimem.tracker.apply import _fold_embeddings, _row_dots, _update_embedding


def _obj(oid: int, feature: np.ndarray | None, n: int) -> ObjectState:
    return ObjectState(id=oid, label="cup", center=(0.0, 0.0, 0.0), size=(1.0, 1.0, 1.0),
                       place=(0.0, 0.0, 0.0), first_seen=0.0, last_seen=0.0, feature=feature,
                       n_features=n)


def _same_as_one_by_one(objects: list[ObjectState], sightings: list[np.ndarray]) -> None:
    one = copy.deepcopy(objects)
    for obj, f in zip(one, sightings, strict=True):
        _update_embedding(obj, f)
    _fold_embeddings(list(zip(objects, sightings, strict=True)))
    for a, b in zip(objects, one, strict=True):
        assert a.n_features == b.n_features
        assert a.feature.dtype == b.feature.dtype and a.feature.tobytes() == b.feature.tobytes()
        assert a.feature.flags.owndata  # not a view that would keep the batch alive


@pytest.mark.parametrize("width", [3, 8, 32, 33, 512])
def test_folding_a_batch_equals_folding_one_by_one(width: int) -> None:
    rng = np.random.default_rng(width)
    objects = []
    for oid in range(1, 200):
        kind = oid % 4
        if kind == 0:
            feature, n = None, 0
        else:
            v = rng.standard_normal(width)
            feature, n = v / np.linalg.norm(v), int(rng.integers(1, 10_000))
        objects.append(_obj(oid, feature, n))
    sightings = [(rng.standard_normal(width) * rng.choice((1e-3, 1.0, 1e3))).astype(
        np.float32 if k % 3 else np.float64) for k in range(len(objects))]
    sightings[5] = -objects[5].feature.astype(np.float32) if objects[5].feature is not None \
        else sightings[5]  # a mean that nearly cancels
    _same_as_one_by_one(objects, sightings)


def test_mixed_widths_fall_back_to_one_by_one() -> None:
    rng = np.random.default_rng(1)
    objects = [_obj(1, None, 0), _obj(2, np.ones(4) / 2.0, 3)]
    sightings = [rng.standard_normal(6).astype(np.float32), rng.standard_normal(4)]
    one = copy.deepcopy(objects)
    for obj, f in zip(one, sightings, strict=True):
        _update_embedding(obj, f)
    _fold_embeddings(list(zip(objects, sightings, strict=True)))
    assert [o.feature.tobytes() for o in objects] == [o.feature.tobytes() for o in one]


def test_row_dots_are_each_rows_dot() -> None:
    rng = np.random.default_rng(2)
    for width in (1, 7, 32, 100):
        a = rng.standard_normal((300, width))
        assert _row_dots(a).tobytes() == np.array([x.dot(x) for x in a]).tobytes()


def test_a_mean_that_cancels_exactly_keeps_the_sighting() -> None:
    v = np.array([0.6, 0.8, 0.0])
    objects = [_obj(1, v.copy(), 1), _obj(2, v.copy(), 2)]
    _same_as_one_by_one(objects, [-v, -v])
    assert objects[0].feature.tolist() == [-0.6, -0.8, -0.0]  # the mean was zero


def test_a_float32_mean_sends_the_batch_one_by_one() -> None:
    rng = np.random.default_rng(3)
    objects = [_obj(k, rng.standard_normal(8) / 3.0, 4) for k in range(1, 6)]
    objects[2].feature = objects[2].feature.astype(np.float32)
    _same_as_one_by_one(objects, [rng.standard_normal(8) for _ in objects])
    assert objects[2].feature.dtype == np.float32


@pytest.mark.parametrize("odd", ["wider mean", "2-d sighting"])
def test_a_row_update_object_refuses_is_refused_the_same_way(odd: str) -> None:
    rng = np.random.default_rng(4)
    objects = [_obj(k, rng.standard_normal(8) / 3.0, 4) for k in range(1, 6)]
    sightings = [rng.standard_normal(8) for _ in objects]
    if odd == "wider mean":
        objects[2].feature = rng.standard_normal(9)
    else:
        sightings[2] = sightings[2].reshape(2, 4)
    with pytest.raises(ValueError):
        _update_embedding(copy.deepcopy(objects[2]), sightings[2])
    with pytest.raises(ValueError):
        _fold_embeddings(list(zip(objects, sightings, strict=True)))
