"""A replay folds the embeddings of the sightings between two events in arrays
(``apply.replay``, ``_RunningMeans``); each object comes out with the floats ``apply`` one
record at a time gives, to the bit."""

from __future__ import annotations

import copy

import numpy as np
import pytest

from locimem.model import ObjectState
from locimem.tracker.apply import _row_dots, _RunningMeans, _update_embedding


def _obj(oid: int, feature: np.ndarray | None, n: int) -> ObjectState:
    return ObjectState(id=oid, label="cup", center=(0.0, 0.0, 0.0), size=(1.0, 1.0, 1.0),
                       place=(0.0, 0.0, 0.0), first_seen=0.0, last_seen=0.0, feature=feature,
                       n_features=n)


def _fold_embeddings(pairs: list[tuple[ObjectState, np.ndarray]]) -> None:
    """One batch folded through a replay's running means, written back."""
    means = _RunningMeans()
    try:
        means.fold([o for o, _ in pairs], [f for _, f in pairs])
    finally:
        means.release_all()


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


def test_batches_and_releases_in_any_order_equal_one_by_one() -> None:
    """Many batches through one replay's means — objects seen again, released (an event
    named them) and taken again into reused rows, some with no embedding before — leave every
    object with the floats and counts of folding its sightings one at a time."""
    rng = np.random.default_rng(5)
    width = 16
    objects = [_obj(oid, None if oid % 5 == 0 else rng.standard_normal(width) / 4.0,
                    0 if oid % 5 == 0 else int(rng.integers(1, 50))) for oid in range(1, 41)]
    one = copy.deepcopy(objects)
    means = _RunningMeans()
    for step in range(60):
        chosen = rng.choice(len(objects), size=int(rng.integers(1, 25)), replace=False)
        sightings = [rng.standard_normal(width).astype(np.float32) for _ in chosen]
        for k, f in zip(chosen, sightings, strict=True):
            _update_embedding(one[k], f)
        means.fold([objects[k] for k in chosen], sightings)
        if step % 4 == 3:  # an event names a few: written back, their rows freed
            for k in rng.choice(len(objects), size=5, replace=False):
                means.release(objects[k].id)
                assert objects[k].feature is None or objects[k].feature.tobytes() == \
                    one[k].feature.tobytes()
    assert len(means.owner) <= 2 * len(objects)  # freed rows are taken again
    means.release_all()
    for a, b in zip(objects, one, strict=True):
        assert a.n_features == b.n_features
        assert a.feature.tobytes() == b.feature.tobytes()
        assert a.feature.flags.owndata


def test_a_replay_writes_back_the_means_an_event_reads() -> None:
    """An event that names objects reads their embeddings as the sightings before it left
    them: two cups sighted with embeddings, merged (the survivor averages both means), then
    sighted again and one forgotten — a replay (means in a matrix, written back only when an
    event names an object) ends with the state ``apply`` gives record by record, to the
    bit, whichever cup the merge absorbs."""
    import math

    from locimem.model import Commit, Event, EventKind, Observation
    from locimem.tracker.apply import apply, replay
    from locimem.tracker.state import MemoryState

    rng = np.random.default_rng(9)
    seq = iter(range(1, 1000))

    def sighting(commit: int, t: float, oid: int) -> Observation:
        return Observation(next(seq), commit, t, 0, "cup", 0.9, (1.0, float(oid), 0.5),
                           (0.1, 0.1, 0.1), oid, "track", 0.5,
                           feature=rng.standard_normal(8).astype(np.float32))

    def event(commit: int, t: float, kind: EventKind, oid: int, data: dict) -> Event:
        return Event(next(seq), commit, t, kind, oid, "cup", data)

    records: list = [Commit(1, "scan", 0.0, 0.0, "tracker", None, 2)]
    for oid in (1, 2):
        records.append(event(1, 0.0, EventKind.APPEARED, oid, {
            "label": "cup", "center": [1.0, float(oid), 0.5], "size": [0.1, 0.1, 0.1]}))
    for k in range(2, 6):  # several commits of sightings: one batch per repeat
        records.append(Commit(k, "scan", float(k), 0.0, "tracker", None, 2))
        records += [sighting(k, float(k), 1), sighting(k, float(k), 2)]
    records.append(event(5, 5.0, EventKind.MERGED, 1, {
        "absorbed": 2, "center": [1.0, 1.5, 0.5], "size": [0.1, 0.1, 0.1],
        "label_mass": {"cup": 7.2}, "n_detections": 8}))
    records.append(Commit(6, "scan", 6.0, 0.0, "tracker", None, 1))
    records.append(sighting(6, 6.0, 1))
    records.append(event(6, 6.0, EventKind.FORGOTTEN, 1, {"actor": "test", "reason": None}))

    live = MemoryState()
    for r in records:
        apply(live, r, math.inf)
    replayed = MemoryState()
    replayed.defer_indexes()
    replay(replayed, records, math.inf)
    assert set(replayed.objects) == set(live.objects) == set()
    a, b = replayed.tombstones[1].obj, live.tombstones[1].obj
    assert a.n_features == b.n_features == 9  # four and four sightings merged, then one
    assert a.feature.tobytes() == b.feature.tobytes()
    assert a.feature.flags.owndata
