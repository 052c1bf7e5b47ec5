"""The store contract (:class:`locimem.store.base.Store`): what every backend must do, with exact
outcomes. Runs once per backend (``tests/store/conftest.py``)."""

from __future__ import annotations

import threading
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from locimem.errors import InvalidInput, ReadOnly
from locimem.model import (
    Commit,
    Event,
    EventKind,
    ObjectState,
    Observation,
    ObservationMeta,
    Record,
    RejectionState,
    TombstoneState,
)
from locimem.store.base import RowChanges, RowsRejected, Store
from tests.store.conftest import Backend

pytestmark = pytest.mark.no_validate  # hand-made records: no tracker decided them

S, OTHER = "home", "office"


# -- records, built with the real record types -----------------------------------------------
def commit(cid: int, t: float, *, kind: str = "scan", recorded_at: float | None = None,
           actor: str = "tracker", **kw: Any) -> Commit:
    return Commit(id=cid, kind=kind, t=t, recorded_at=1000.0 + t if recorded_at is None
                  else recorded_at, actor=actor, reason=kw.pop("reason", None),
                  n_detections=kw.pop("n_detections", 0), **kw)


def obs(seq: int, cid: int, t: float, object_id: int | None, *, label: str = "cup",
        index: int = 0, **kw: Any) -> Observation:
    return Observation(seq=seq, commit=cid, t=t, index=index, label=label,
                       confidence=kw.pop("confidence", 0.9), center=kw.pop("center", (1.0, 2.0,
                                                                                     0.5)),
                       size=(0.1, 0.1, 0.2), object_id=object_id,
                       tier=None if object_id is None else kw.pop("tier", "tight"), **kw)


def event(seq: int, cid: int, t: float, kind: EventKind, object_id: int, *, label: str = "cup",
          data: dict[str, Any] | None = None) -> Event:
    return Event(seq=seq, commit=cid, t=t, kind=kind, object_id=object_id, label=label,
                 data={} if data is None else data)


def obj(oid: int, label: str = "cup", t: float = 0.0, **kw: Any) -> ObjectState:
    return ObjectState(id=oid, label=label, center=(1.0, 2.0, 0.5), size=(0.1, 0.1, 0.2),
                       place=(1.0, 2.0, 0.5), first_seen=0.0, last_seen=t,
                       label_mass=kw.pop("label_mass", {label: 1.0}), **kw)


def same_obs(a: list[Any], b: list[Any]) -> bool:
    """Records equal, embeddings included (``Observation.feature`` is left out of ``==``)."""
    if a != b:
        return False
    for x, y in zip(a, b, strict=True):
        fx, fy = getattr(x, "feature", None), getattr(y, "feature", None)
        if (fx is None) != (fy is None) or (fx is not None and not np.array_equal(fx, fy)):
            return False
    return True


def states(objects: list[ObjectState]) -> list[dict[str, Any]]:
    return [o.to_dict() for o in objects]


def fill(store: Store) -> dict[str, list[Record]]:
    """Two scopes, interleaved: home has commits 1, 2, 4 (a cup 1 and a book 2, a rejection),
    office commit 3 (a pen 3). Returns each scope's records in replay order."""
    feature = np.array([0.6, 0.8, 0.0], dtype=np.float32)
    home1 = [commit(1, 0.0, n_detections=2, camera={"fov": 90}),
             event(1, 1, 0.0, EventKind.APPEARED, 1, data={"label": "cup"}),
             obs(2, 1, 0.0, 1, tier="new", feature=feature, orientation=(1.0, 0.0, 0.0, 0.0)),
             event(3, 1, 0.0, EventKind.APPEARED, 2, label="book", data={"label": "book"}),
             obs(4, 1, 0.0, 2, label="book", index=1, tier="new", track_id="t7")]
    home2 = [commit(2, 5.0, n_detections=2, missed=(2,), miss_credits=(0.25,),
                    together=((1, 2),)),
             obs(5, 2, 5.0, 1, weight=0.5),
             obs(6, 2, 5.0, None, label="ghost", index=1, confidence=0.01,
                 rejected="below_min_confidence", key="ghost@0,0,0"),
             event(7, 2, 5.0, EventKind.PROMOTED, 1)]
    office3 = [commit(3, 7.0, n_detections=1),
               event(8, 3, 7.0, EventKind.APPEARED, 3, label="pen"),
               obs(9, 3, 7.0, 3, label="pen", tier="new")]
    home4 = [commit(4, 9.0, kind="correction", actor="ana", reason="it is a mug"),
             event(10, 4, 9.0, EventKind.LABEL_CHANGED, 1, label="mug", data={"to": "mug"}),
             event(11, 4, 9.0, EventKind.MERGED, 1, label="mug", data={"absorbed": 2})]
    store.append(S, home1, RowChanges(objects=[obj(1), obj(2, "book")], touched=[1, 2]))
    store.append(S, home2, RowChanges(objects=[obj(1, t=5.0)], touched=[1], rejections={
        "ghost@0,0,0": RejectionState("below_min_confidence", 1, 6, 6, 5.0)}))
    store.append(OTHER, office3, RowChanges(objects=[obj(3, "pen", 7.0)], touched=[3]))
    store.append(S, home4, RowChanges(objects=[obj(1, "mug", 9.0)], removed_objects=[2],
                                      touched=[1, 2]))
    return {S: home1 + home2 + home4, OTHER: office3}


# -- append ----------------------------------------------------------------------------------
def test_objects_load_whole_and_in_order_across_batches(store: Store) -> None:
    from locimem.store.sql import LOAD_BATCH
    n = 2 * LOAD_BATCH + 3  # two full batches and a partial one
    many = [obj(i, "cup" if i % 2 else "book", float(i)) for i in range(1, n + 1)]
    store.append(S, [commit(1, 0.0)], RowChanges(objects=many, touched=[o.id for o in many]))
    assert states(store.load_objects(S)) == states(many)


def test_a_miss_updates_two_columns_of_the_row_and_nothing_else(store: Store) -> None:
    fill(store)
    before = {o.id: o for o in store.load_objects(S)}
    pen_before = store.load_objects(OTHER)
    cup = before[1].copy()
    cup.n_missed, cup.absence_s = 3, 1.75
    cup.label, cup.center, cup.n_detections = "ignored", (9.0, 9.0, 9.0), 99  # not written
    store.append(S, [commit(5, 11.0, missed=(1,), miss_credits=(1.75,))],
                 RowChanges(missed=[cup]))
    (after,) = store.load_objects(S)
    expected = before[1].copy()
    expected.n_missed, expected.absence_s = 3, 1.75
    assert after.to_dict() == expected.to_dict()
    assert states(store.load_objects(OTHER)) == states(pen_before)  # another scope: untouched


def test_a_new_store_is_empty(store: Store) -> None:
    assert store.scopes() == []
    assert store.counters() == (1, 1, 1)
    assert list(store.iter_log(S)) == [] and store.commits(S) == []
    assert store.last_commit_time(S) is None and store.load_objects(S) == []
    assert store.load_tombstones(S) == {} and store.load_rejections(S) == {}
    assert store.load_rooms(S) is None and store.load_json_rows("prior_map", S) == {}
    assert store.latest_checkpoint(S) is None and store.feature_dim(S) is None
    assert not store.read_only and not store.cache_stale()


def test_records_round_trip_exactly(store: Store) -> None:
    logs = fill(store)
    for scope, records in logs.items():
        assert same_obs(list(store.iter_log(scope)), records)
        assert store.commits(scope) == [r for r in records if isinstance(r, Commit)]
    home = store.commits(S)
    assert home[0].camera == {"fov": 90}
    assert (home[1].missed, home[1].miss_credits, home[1].together) == ((2,), (0.25,), ((1, 2),))
    first = store.observations(S, object_id=1)[0]
    assert first.feature is not None and first.feature.dtype == np.float32
    assert first.feature.tolist() == pytest.approx([0.6, 0.8, 0.0])
    assert first.orientation == (1.0, 0.0, 0.0, 0.0)
    assert store.observations(S, object_id=2)[0].track_id == "t7"


class Boom(Exception):
    pass


class _Exploding:
    """An object state that fails the moment the store reads it: a failure mid-append."""

    def __getattr__(self, name: str) -> Any:
        raise Boom(f"read {name}")


def test_append_is_atomic(store: Store) -> None:
    fill(store)
    before = (store.counters(), list(store.iter_log(S)), states(store.load_objects(S)),
              store.load_rejections(S))
    records = [commit(5, 10.0), event(12, 5, 10.0, EventKind.APPEARED, 4),
               obs(13, 5, 10.0, 4, tier="new")]
    with pytest.raises(Boom):
        store.append(S, records, RowChanges(objects=[obj(4), _Exploding()],  # type: ignore[list-item]
                                            rejections={"k": RejectionState("r", 1, 13, 13,
                                                                            10.0)}))
    after = (store.counters(), list(store.iter_log(S)), states(store.load_objects(S)),
             store.load_rejections(S))
    assert after == before
    assert store.count("commits", S) == 3 and store.count("objects", S) == 1
    store.append(S, records, RowChanges(objects=[obj(4)]))  # and the store still takes it
    assert store.counters() == (5, 14, 6)


def test_counters_are_shared_across_scopes(store: Store) -> None:
    # counters() without a scope is above every scope's ids, on every backend; whether ids
    # are *allocated* file-wide is SQLite's own (test_sqlite_specific.py) — PostgreSQL
    # allocates per scope (counters(scope)), so scopes write in parallel
    fill(store)
    # next object id: after the newest APPEARED (3); next seq after 11; next commit after 4
    assert store.counters() == (4, 12, 5)
    store.append("third", [commit(5, 1.0), event(12, 5, 1.0, EventKind.APPEARED, 9)],
                 RowChanges())
    assert store.counters() == (10, 13, 6)


def test_scopes_are_isolated(store: Store) -> None:
    fill(store)
    assert store.scopes() == [S, OTHER]
    assert [o.id for o in store.load_objects(S)] == [1]
    assert [o.id for o in store.load_objects(OTHER)] == [3]
    assert {table: store.count(table, S) for table in ("commits", "observations", "events",
                                                       "objects")} == {
        "commits": 3, "observations": 4, "events": 5, "objects": 1}
    assert {table: store.count(table, OTHER) for table in ("commits", "observations",
                                                           "events", "objects")} == {
        "commits": 1, "observations": 1, "events": 1, "objects": 1}
    assert store.events(OTHER, label="cup") == [] and store.observations(OTHER, object_id=1) == []
    assert store.events(OTHER, object_id=1, kind=["MERGED"]) == [] and store.audit(OTHER) == [
        store.audit(OTHER)[0]]  # its one scan, with its APPEARED
    assert store.last_commit_time(S) == 9.0 and store.last_commit_time(OTHER) == 7.0
    assert store.count("objects", "nobody") == 0 and list(store.iter_log("nobody")) == []
    with pytest.raises(ValueError, match="unknown table"):
        store.count("meta", S)


# -- reading the log -------------------------------------------------------------------------
def test_iter_log_orders_by_commit_then_seq_within_bounds(store: Store) -> None:
    logs = fill(store)
    home = logs[S]
    kinds = [type(r).__name__[0] + str(r.id if isinstance(r, Commit) else r.seq)
             for r in store.iter_log(S)]
    assert kinds == ["C1", "E1", "O2", "E3", "O4", "C2", "O5", "O6", "E7", "C4", "E10", "E11"]
    assert same_obs(list(store.iter_log(S, after_commit=1)), home[5:])
    assert same_obs(list(store.iter_log(S, until_commit=2)), home[:9])
    assert same_obs(list(store.iter_log(S, after_commit=1, until_commit=3)), home[5:9])
    assert list(store.iter_log(S, after_commit=4)) == []


def test_event_filters(store: Store) -> None:
    fill(store)

    def seqs(**kw: Any) -> list[int]:
        return [e.seq for e in store.events(S, **kw)]

    assert seqs() == [1, 3, 7, 10, 11]
    assert seqs(kind=["APPEARED"]) == [1, 3]
    assert seqs(kind=["PROMOTED", "MERGED"]) == [7, 11]
    assert seqs(label="book") == [3] and seqs(label="mug") == [10, 11]
    assert seqs(object_id=1) == [1, 7, 10, 11]
    assert seqs(since=5.0) == [7, 10, 11] and seqs(until=5.0) == [1, 3, 7]
    assert seqs(since=1.0, until=8.0) == [7]
    assert seqs(limit=2) == [1, 3] and seqs(newest_first=True) == [11, 10, 7, 3, 1]
    assert seqs(newest_first=True, limit=1) == [11]
    assert seqs(until_commit=2) == [1, 3, 7]
    assert seqs(kind=["APPEARED"], object_id=2, label="book", since=0.0, until=0.0) == [3]
    assert store.events(S, kind=["LOST"]) == []


def test_exclude_forgotten_hides_what_names_a_tombstone(store: Store) -> None:
    fill(store)
    store.append(S, [commit(5, 10.0, kind="forget"),
                     event(12, 5, 10.0, EventKind.FORGOTTEN, 2, label="book"),
                     event(13, 5, 10.0, EventKind.RELATION, 1, data={"object": 2}),
                     event(14, 5, 10.0, EventKind.RELATION, 1, data={"object": 7})],
                 RowChanges(tombstones={2: TombstoneState(obj(2, "book"), 10.0, "ana", None)}))
    assert [e.seq for e in store.events(S, exclude_forgotten=True)] == [1, 7, 10, 11, 14]
    assert [e.seq for e in store.events(S)] == [1, 3, 7, 10, 11, 12, 13, 14]


def test_observation_filters(store: Store) -> None:
    fill(store)

    def seqs(**kw: Any) -> list[int]:
        return [o.seq for o in store.observations(S, **kw)]

    assert seqs() == [2, 4, 5, 6]
    assert seqs(object_id=1) == [2, 5]
    assert seqs(rejected=True) == [6] and seqs(rejected=False) == [2, 4, 5]
    assert seqs(reason="below_min_confidence") == [6] and seqs(reason="crowded") == []
    assert seqs(key="ghost@0,0,0") == [6]
    assert seqs(limit=3) == [2, 4, 5] and seqs(until_commit=1) == [2, 4]


def test_one_objects_records_pages_merged_into_and_audit(store: Store) -> None:
    fill(store)

    def history(oid: int, **kw: Any) -> list[int]:  # what a reader's history() reads
        return sorted([o.seq for o in store.observations(S, object_id=oid, **kw)]
                      + [e.seq for e in store.events(S, object_id=oid, **kw)])

    assert history(1) == [1, 2, 5, 7, 10, 11]
    assert sorted(history(1) + history(2)) == [1, 2, 3, 4, 5, 7, 10, 11]
    assert history(1, until_commit=1) == [1, 2]
    assert history(1, after_seq=2) == [5, 7, 10, 11]  # a page's cursor, exclusive
    assert [e.seq for e in store.events(S, after_seq=3, limit=2)] == [7, 10]
    assert [e.seq for e in store.events(S, before_seq=10, newest_first=True)] == [7, 3, 1]
    assert [a.commit for a in store.audit(S, after_commit=1)] == [2, 4]
    assert store.merged_into(S, 2) == 1
    assert store.merged_into(S, 2, until_commit=3) is None
    assert store.merged_into(S, 1) is None and store.merged_into(OTHER, 2) is None
    entries = store.audit(S)
    assert [(a.commit, a.kind, a.actor, [e.seq for e in a.events]) for a in entries] == [
        (1, "scan", "tracker", [1, 3]), (2, "scan", "tracker", [7]),
        (4, "correction", "ana", [10, 11])]
    assert entries[2].reason == "it is a mug" and entries[2].recorded_at == 1009.0
    assert [a.commit for a in store.audit(S, kinds=["correction"])] == [4]
    assert [a.commit for a in store.audit(S, actor="ana")] == [4]
    assert [a.commit for a in store.audit(S, since=1.0, until=6.0)] == [2]
    assert [a.commit for a in store.audit(S, recorded_since=1004.0)] == [2, 4]
    assert [a.commit for a in store.audit(S, recorded_until=1004.0)] == [1]
    assert [a.commit for a in store.audit(S, limit=1)] == [1]
    assert [a.commit for a in store.audit(S, until_commit=2)] == [1, 2]
    by_object = store.audit(S, object_id=2)
    assert [(a.commit, [e.seq for e in a.events]) for a in by_object] == [(1, [3])]


def test_last_commit_at_by_valid_and_record_time(store: Store) -> None:
    fill(store)
    assert store.last_commit_at(S, t=-1.0) is None
    assert store.last_commit_at(S, t=0.0) == 1
    assert store.last_commit_at(S, t=8.9) == 2  # commit 3 is office's
    assert store.last_commit_at(S, t=9.0) == 4
    assert store.last_commit_at(OTHER, t=100.0) == 3
    assert store.last_commit_at(S, recorded=1004.9) == 1
    assert store.last_commit_at(S, recorded=1005.0) == 2
    assert store.last_commit_at(S, recorded=999.0) is None


def test_latest_scan_is_per_scope_and_source(store: Store) -> None:
    """What an ingest resumes after: a source's latest scan time and its scans there —
    another source's scans, a later correction and another scope's scans do not count."""
    assert store.latest_scan(S, "robot-a") is None
    store.append(S, [commit(1, 5.0, actor="robot-a")], RowChanges())
    store.append(S, [commit(2, 7.0, actor="robot-a")], RowChanges())
    store.append(S, [commit(3, 7.0, actor="robot-a")], RowChanges())
    store.append(S, [commit(4, 9.0, actor="robot-b")], RowChanges())
    store.append(S, [commit(5, 9.5, kind="correction", actor="robot-a")], RowChanges())
    store.append(OTHER, [commit(6, 20.0, actor="robot-a")], RowChanges())
    assert store.latest_scan(S, "robot-a") == (7.0, 2)
    assert store.latest_scan(S, "robot-b") == (9.0, 1)
    assert store.latest_scan(OTHER, "robot-a") == (20.0, 1)
    assert store.latest_scan(S, "robot-c") is None
    assert store.latest_scan("nowhere", "robot-a") is None


def test_late_s_is_only_raised_and_kept(backend: Backend, store: Store) -> None:
    start = store.late_s
    assert start == (1.0 if backend.name == "postgres" else 0.0)
    store.raise_late_s(30)
    assert store.late_s == 30.0 and store.meta()["late_s"] == "30.0"
    for bad, message in ((5.0, r"^late_s=5\.0 is below the store's late_s=30\.0: a store's "
                               r"late-scan tolerance is only raised"),
                         (float("inf"), "finite"), (-1.0, "finite"), ("2", "finite")):
        with pytest.raises(InvalidInput, match=message):
            store.raise_late_s(bad)  # type: ignore[arg-type]
    assert store.late_s == 30.0 and store.meta()["late_s"] == "30.0"
    if backend.reopen is not None:
        again = backend.reopen(store, read_only=True)
        try:
            assert again.late_s == 30.0
            with pytest.raises(ReadOnly):
                again.raise_late_s(40.0)
        finally:
            again.close()


def test_observation_meta_and_change_commits(store: Store) -> None:
    fill(store)
    assert store.observation_meta(S, 0, 4) == [
        ObservationMeta(2, 1, 0.0, 1, None), ObservationMeta(4, 1, 0.0, 2, None),
        ObservationMeta(5, 2, 5.0, 1, None), ObservationMeta(6, 2, 5.0, None, "ghost@0,0,0")]
    assert store.observation_meta(S, 1, 2) == store.observation_meta(S, 0, 4)[2:]
    assert store.change_commits(S, 0, 4, ["LABEL_CHANGED", "PROMOTED"]) == {(1, 2), (1, 4)}
    assert store.change_commits(S, 2, 4, ["PROMOTED"]) == set()


def test_feature_widths(store: Store) -> None:
    fill(store)
    assert store.feature_dim(S) == 3 and store.logged_feature_dim(S) == 3
    assert store.feature_dim(OTHER) is None and store.logged_feature_dim(OTHER) is None
    rejected = obs(12, 5, 8.0, None, label="x", rejected="crowded", key="x@0,0,0",
                   feature=np.ones(5, dtype=np.float32))
    store.append(OTHER, [commit(5, 8.0), rejected], RowChanges())
    assert store.feature_dim(OTHER) is None and store.logged_feature_dim(OTHER) == 5


# -- the materialised state ------------------------------------------------------------------
def test_materialised_rows_follow_each_commits_changes(store: Store) -> None:
    feature = np.array([0.0, 1.0], dtype=np.float64)
    rich = obj(1, attributes={"colour": "red"}, feature=feature, n_features=2,
               held=((1.0, 1.0, 2.0, 0.5, 0.1, 0.1, 0.2, "cup", 0.9, 3),),
               together=frozenset({5, 4}), merged_from=(7,), orientation=(1.0, 0.0, 0.0, 0.0),
               lost=True, lost_at=3.0,
               pinned_label="cup", label_by="ana", n_looked_seen=2, n_looked_missed=1,
               pos_info=4.5, label_mass={"cup": 2.0, "bowl": 0.5})
    tomb = TombstoneState(obj(2, "book"), 4.0, "ana", "private", suppressed=1,
                          last_suppressed=4.5)
    rooms = {"rooms": {"kitchen": {"floor": [[0, 0], [1, 0], [1, 1]]}}}
    store.append(S, [commit(1, 0.0)], RowChanges(
        objects=[rich, obj(2, "book")], tombstones={3: tomb},
        rejections={"k@1": RejectionState("crowded", 2, 1, 2, 0.0)}, rooms=rooms,
        prior={1: {"label": "cup"}, 2: {"label": "book"}},
        deltas={1: {"object": 1, "status": "open", "kind": "moved"}},
        keyframes={1: [{"t": 0.0, "score": 0.5}]}))
    loaded = store.load_objects(S)
    assert states(loaded) == states([rich, obj(2, "book")])
    assert loaded[0].feature is not None and loaded[0].feature.tolist() == [0.0, 1.0]
    assert list(loaded[0].label_mass) == ["cup", "bowl"]  # as given
    assert store.load_tombstones(S)[3].to_dict() == tomb.to_dict()
    assert store.load_rejections(S) == {"k@1": RejectionState("crowded", 2, 1, 2, 0.0)}
    assert store.load_rooms(S) == rooms
    assert store.load_json_rows("prior_map", S) == {1: {"label": "cup"}, 2: {"label": "book"}}
    assert store.load_json_rows("deltas", S) == {
        1: {"object": 1, "status": "open", "kind": "moved"}}
    assert store.load_json_rows("keyframes", S) == {1: [{"t": 0.0, "score": 0.5}]}
    # a second commit upserts, removes, and leaves alone what it does not name
    store.append(S, [commit(2, 1.0)], RowChanges(
        objects=[obj(2, "box", 1.0)], removed_objects=[1], removed_tombstones=[3],
        tombstones={4: tomb}, rejections={"k@1": RejectionState("crowded", 3, 1, 9, 1.0)},
        prior={1: None}, deltas={1: {"object": 1, "status": "closed", "kind": "moved"}},
        keyframes={2: []}))
    assert states(store.load_objects(S)) == states([obj(2, "box", 1.0)])
    assert list(store.load_tombstones(S)) == [4]
    assert store.load_rejections(S) == {"k@1": RejectionState("crowded", 3, 1, 9, 1.0)}
    assert store.load_rooms(S) == rooms  # rooms=None: unchanged
    assert store.load_json_rows("prior_map", S) == {2: {"label": "book"}}
    assert store.load_json_rows("deltas", S)[1]["status"] == "closed"
    assert store.load_json_rows("keyframes", S) == {1: [{"t": 0.0, "score": 0.5}], 2: []}
    assert store.load_objects(OTHER) == [] and store.load_rooms(OTHER) is None


def test_rewrite_cache_upserts_each_scopes_objects(store: Store) -> None:
    fill(store)
    store.rewrite_cache({S: [obj(1, "mug", 9.0, pos_info=2.0)], OTHER: [obj(3, "pen", 8.0)]})
    assert states(store.load_objects(S)) == states([obj(1, "mug", 9.0, pos_info=2.0)])
    assert states(store.load_objects(OTHER)) == states([obj(3, "pen", 8.0)])
    assert not store.cache_stale()


# -- compaction ------------------------------------------------------------------------------
def test_compact_stores_a_checkpoint_and_deletes_observations(store: Store) -> None:
    fill(store)
    state = {"objects": [{"id": 1}], "feature_dim": 3, "now": 5.0}
    maintenance = [commit(5, 9.5, kind="maintenance"),
                   event(12, 5, 9.5, EventKind.COMPACTED, 0, label="", data={"deleted": 2})]
    store.compact(S, checkpoint_commit=2, checkpoint_t=5.0, state=state, delete_seqs=[2, 5],
                  records=maintenance)
    assert store.latest_checkpoint(S) == (2, state)
    assert store.latest_checkpoint(S, until_commit=1) is None
    assert store.latest_checkpoint(OTHER) is None
    assert [o.seq for o in store.observations(S)] == [4, 6]  # 2 and 5 are gone
    assert [r.seq for r in store.iter_log(S) if not isinstance(r, Commit)] == [
        1, 3, 4, 6, 7, 10, 11, 12]
    assert [o.seq for o in store.observations(S, object_id=1)] == []  # 2 and 5 were its own
    assert store.count("observations", S) == 2
    assert store.commits(S)[-1] == maintenance[0]
    assert same_obs(list(store.iter_log(S, after_commit=4)), maintenance)
    assert store.counters() == (4, 13, 6)
    store.compact(S, checkpoint_commit=4, checkpoint_t=9.0, state={"v": 2}, delete_seqs=[],
                  records=[commit(6, 9.6, kind="maintenance")])
    assert store.latest_checkpoint(S) == (4, {"v": 2})
    assert store.latest_checkpoint(S, until_commit=3) == (2, state)


def test_reclaim_keeps_every_row_and_reports_a_size(backend: Backend, store: Store) -> None:
    fill(store)
    store.compact(S, checkpoint_commit=2, checkpoint_t=5.0, state={"v": 1}, delete_seqs=[2, 5],
                  records=[commit(5, 9.5, kind="maintenance")])
    log, counts = list(store.iter_log(S)), store.count("observations", S)
    store.reclaim()
    assert list(store.iter_log(S)) == log and store.count("observations", S) == counts == 2
    size = store.size_bytes()
    assert size == 0 if backend.name == "sqlite-memory" else size > 0


def test_a_failed_compaction_writes_nothing(store: Store) -> None:
    fill(store)
    before = (store.counters(), list(store.iter_log(S)))
    with pytest.raises(Boom):
        store.compact(S, checkpoint_commit=2, checkpoint_t=5.0, state={"v": 1},
                      delete_seqs=[2], records=[commit(5, 9.5), _Exploding()])  # type: ignore[list-item]
    assert (store.counters(), list(store.iter_log(S))) == before
    assert store.latest_checkpoint(S) is None


# -- transactions, read-only, closing --------------------------------------------------------
def test_snapshot_read_joins_and_nests(store: Store) -> None:
    fill(store)
    with store.snapshot_read():
        with store.snapshot_read():
            assert store.count("commits", S) == 3
        assert store.count("commits", S) == 3
    store.append(S, [commit(5, 10.0)], RowChanges())  # writes work after it
    assert store.count("commits", S) == 4


def test_snapshot_read_sees_one_committed_state(shared_backend: Backend, tmp_path: Path
                                                ) -> None:
    writer = shared_backend.new(tmp_path)
    assert shared_backend.reopen is not None
    try:
        fill(writer)
        reader = shared_backend.reopen(writer, read_only=True)
        try:
            with reader.snapshot_read():
                before = (reader.count("commits", S), reader.counters())
                done = threading.Event()

                def write() -> None:
                    writer.append(S, [commit(5, 10.0), event(12, 5, 10.0,
                                                             EventKind.APPEARED, 9)],
                                  RowChanges(objects=[obj(9)]))
                    done.set()

                threading.Thread(target=write).start()
                assert done.wait(10)  # landed meanwhile, and not seen
                assert (reader.count("commits", S), reader.counters()) == before
                assert [o.id for o in reader.load_objects(S)] == [1]
            assert reader.count("commits", S) == 4 and reader.counters() == (10, 13, 6)
        finally:
            reader.close()
    finally:
        writer.close()


def test_a_read_only_store_refuses_every_write(shared_backend: Backend, tmp_path: Path
                                               ) -> None:
    writer = shared_backend.new(tmp_path)
    assert shared_backend.reopen is not None
    fill(writer)
    writer.close()
    reader = shared_backend.reopen(writer, read_only=True)
    try:
        assert reader.read_only
        log = list(reader.iter_log(S))
        writes = [
            lambda: reader.append(S, [commit(5, 10.0)], RowChanges()),
            lambda: reader.compact(S, checkpoint_commit=2, checkpoint_t=5.0, state={},
                                   delete_seqs=[2], records=[commit(5, 10.0)]),
            lambda: reader.rewrite_cache({S: [obj(1)]}),
            lambda: reader.bulk_load([("commits", ("scope", "id"), [(S, 9)])]),
            reader.reclaim,
        ]
        for write in writes:
            with pytest.raises(ReadOnly, match="read-only"):
                write()
        assert list(reader.iter_log(S)) == log and reader.counters() == (4, 12, 5)
    finally:
        reader.close()


def test_closing_twice_is_safe(backend: Backend, tmp_path: Path) -> None:
    s = backend.new(tmp_path)
    fill(s)
    s.close()
    s.close()
    if backend.reopen is not None:  # and the writer lock went with the first close
        again = backend.reopen(s, read_only=False)
        assert again.count("commits", S) == 3
        again.close()


# -- bulk load and backup --------------------------------------------------------------------
def test_bulk_load_inserts_rows_as_stored_in_one_transaction(store: Store) -> None:
    assert {"id", "scope", "kind", "t"} <= set(store.column_types("commits"))
    assert store.column_types("commits")["scope"][1] is True  # NOT NULL
    columns = ("scope", "id", "kind", "t", "recorded_at", "actor", "reason", "n_detections")
    store.bulk_load([("commits", columns, iter([(S, 1, "scan", 0.0, 1000.0, "x", None, 0),
                                                (S, 2, "scan", 1.0, 1001.0, "x", None, 0)]))],
                    meta={"created_at": "123.0"})
    assert store.commits(S) == [commit(1, 0.0, actor="x"), commit(2, 1.0, actor="x")]
    assert store.counters() == (1, 1, 3)
    with pytest.raises(RowsRejected) as refused:
        store.bulk_load([("commits", columns, [(S, 3, "scan", 2.0, 1002.0, "x", None, 0)]),
                         ("commits", columns, [(OTHER, 4, "scan", 2.0, 1002.0, None, None,
                                                0)])])  # actor is NOT NULL
    assert refused.value.table == "commits"
    assert [c.id for c in store.commits(S)] == [1, 2] and store.commits(OTHER) == []

    def failing() -> Any:
        yield (S, 5, "scan", 3.0, 1003.0, "x", None, 0)
        raise Boom("the source broke")

    with pytest.raises(Boom):
        store.bulk_load([("commits", columns, failing())])
    assert [c.id for c in store.commits(S)] == [1, 2]


def test_backup_opens_as_a_store_with_the_same_rows(backend: Backend, store: Store,
                                                    tmp_path: Path) -> None:
    logs = fill(store)
    store.compact(S, checkpoint_commit=2, checkpoint_t=5.0, state={"v": 1}, delete_seqs=[2],
                  records=[commit(5, 9.5, kind="maintenance")])
    target = backend.copy_target(tmp_path)
    store.backup(target)
    copy = backend.open_copy(target)
    try:
        assert copy.scopes() == store.scopes() and copy.counters() == store.counters()
        for scope in logs:
            assert same_obs(list(copy.iter_log(scope)), list(store.iter_log(scope)))
            assert states(copy.load_objects(scope)) == states(store.load_objects(scope))
            assert copy.load_rejections(scope) == store.load_rejections(scope)
        assert copy.latest_checkpoint(S) == (2, {"v": 1})
        assert 2 not in {o.seq for o in copy.observations(S)}
    finally:
        copy.close()


# -- many writers: turns, heads, rows for moving between stores -------------------------------
def test_head_and_counters_of_a_scope(store: Store) -> None:
    assert store.head(S) == 0
    fill(store)
    assert store.head(S) == 4 and store.head(OTHER) == 3 and store.head("nobody") == 0
    # a scope's counters are above its own ids (SQLite's: above every scope's)
    next_oid, next_seq, next_commit = store.counters(S)
    assert next_oid >= 3 and next_seq >= 12 and next_commit >= 5
    assert store.counters(OTHER)[2] >= 4


def test_a_write_turn_commits_its_appends_together(store: Store) -> None:
    fill(store)
    with store.write_turn(S):
        store.append(S, [commit(5, 10.0)], RowChanges())
        store.append(S, [commit(6, 11.0)], RowChanges())
    assert store.head(S) == 6
    with pytest.raises(Boom), store.write_turn(S):
        store.append(S, [commit(7, 12.0)], RowChanges())
        raise Boom("decided wrong")
    if backend_is_server(store):
        assert store.head(S) == 6  # a server's turn is one transaction: 7 rolled back


def backend_is_server(store: Store) -> bool:
    return store.path.startswith(("postgresql://", "postgres://"))


def test_rows_give_the_interchange_encoding_bulk_load_takes(backend: Backend,
                                                            store: Store,
                                                            tmp_path: Path) -> None:
    logs = fill(store)
    columns = {"commits": ("id", "kind", "t", "recorded_at", "actor", "reason",
                           "n_detections", "camera", "missed", "miss_credit", "together",
                           "miss_credits"),
               "observations": ("seq", "commit_id", "t", "idx", "object_id", "label",
                                "confidence", "cx", "cy", "cz", "sx", "sy", "sz", "weight",
                                "tier", "rejected", "track_id", "orientation", "feature", "key"),
               "events": ("seq", "commit_id", "t", "kind", "object_id", "label", "data"),
               "rejection_keys": ("key", "reason", "count", "first_seq", "last_seq",
                                  "last_t")}
    first = next(store.rows("observations", S, columns["observations"]))
    assert isinstance(first[18], bytes)  # the embedding as raw float32 bytes
    assert np.frombuffer(first[18], np.float32).tolist() == pytest.approx([0.6, 0.8, 0.0])
    (tmp_path / "second").mkdir()
    copy = backend.new(tmp_path / "second")  # another, empty store of the same backend
    try:
        copy.bulk_load([(t, ("scope", *cols), ((S, *r) for r in store.rows(t, S, cols)))
                        for t, cols in columns.items()])
        assert same_obs(list(copy.iter_log(S)), logs[S])
        assert copy.load_rejections(S) == store.load_rejections(S)
    finally:
        copy.close()
    with pytest.raises(ValueError, match="unknown table"):
        list(store.rows("meta", S, ("key",)))
    assert store.meta()["format"] == "locimem"
