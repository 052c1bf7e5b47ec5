"""Loading a scope's state from a store: from its materialised rows or by replaying its log
(:func:`load_state`), and the replay a migration leaves to do.

A migration that adds something only a replay can compute (schema 3's existence belief: SQL
cannot run ``apply``) marks the store's materialised objects stale; the store itself never
replays — it knows records, not what they mean. :func:`replay_stale_cache` does it, above the
store, when the memory first opens such a store writable.
"""

from __future__ import annotations

import contextlib
import math
from collections.abc import Iterable, Iterator, Mapping, Sequence
from contextlib import AbstractContextManager
from typing import Any, Protocol

from locimem.config import TrackerConfig
from locimem.errors import LocimemError, damaged_store
from locimem.gcpause import gc_paused
from locimem.model import Event, ObjectState, Record, RejectionState, TombstoneState
from locimem.model.prior import Delta, PriorEntry
from locimem.scene.rooms import RoomMap
from locimem.tracker.apply import EPOCH_KINDS, apply_epoch, replay
from locimem.tracker.state import MemoryState, keyframes_of

__all__ = ["StateSource", "gc_paused", "load_state", "replay_objects", "replay_stale_cache"]


class StateSource(Protocol):
    """The reads a state is loaded from: the part of :class:`locimem.store.base.Store` the
    tracker needs. The tracker defines it so that it never imports a store; every store has
    this shape (the store's contract documents each method)."""

    path: str
    read_only: bool

    def snapshot_read(self) -> AbstractContextManager[None]: ...
    def cache_stale(self) -> bool: ...
    def rewrite_cache(self, objects: Mapping[str, Iterable[ObjectState]]) -> None: ...
    def scopes(self) -> list[str]: ...
    def counters(self, scope: str | None = None) -> tuple[int, int, int]: ...
    def last_commit_time(self, scope: str) -> float | None: ...
    def latest_checkpoint(self, scope: str, until_commit: int | None = None
                          ) -> tuple[int, dict[str, Any]] | None: ...
    def iter_log(self, scope: str, *, after_commit: int = 0,
                 until_commit: int | None = None) -> Iterator[Record]: ...
    def events(self, scope: str, *, kind: Sequence[str] | None = None) -> list[Event]: ...
    def feature_dim(self, scope: str) -> int | None: ...
    def load_objects(self, scope: str) -> list[ObjectState]: ...
    def load_tombstones(self, scope: str) -> dict[int, TombstoneState]: ...
    def load_rejections(self, scope: str) -> dict[str, RejectionState]: ...
    def load_rooms(self, scope: str) -> dict[str, Any] | None: ...
    def load_json_rows(self, table: str, scope: str) -> dict[int, Any]: ...


# what a record that decodes but cannot be applied raises (an event's data missing a key or
# holding a value of the wrong type: damage that left valid JSON, or a row of the wrong type)
_UNAPPLIABLE = (KeyError, ValueError, TypeError, IndexError, AttributeError, ArithmeticError,
                RecursionError)


@contextlib.contextmanager
def _reading(store: StateSource, scope: str) -> Iterator[None]:
    """Reading ``scope``'s state: a record that cannot be applied is a
    :class:`~locimem.errors.CorruptStore` naming ``locimem validate`` (the store itself turns
    the damage it meets decoding into one) — the one place a state is read, for an open, a
    rebuild, ``as_of`` and the replay a migration leaves."""
    try:
        yield
    except LocimemError:
        raise
    except _UNAPPLIABLE as exc:
        raise damaged_store(str(store.path), f"the record of scope {scope!r} cannot be read "
                                             f"({type(exc).__name__}: {str(exc)[:200]})"
                            ) from exc


def replay_objects(store: StateSource, scope: str) -> list[ObjectState]:
    """The objects of ``scope`` as its log says: ``apply`` over every record after the newest
    checkpoint, starting from that checkpoint's state. Only ``apply`` runs — the records carry
    every decision, so no config is read (the loss deadline is irrelevant: nothing decides)."""
    with gc_paused(), _reading(store, scope):
        return _replay_objects(store, scope)


def _replay_objects(store: StateSource, scope: str) -> list[ObjectState]:
    state = MemoryState()
    after = 0
    checkpoint = store.latest_checkpoint(scope)
    if checkpoint is not None:
        after, snapshot = checkpoint
        state = MemoryState.from_snapshot(snapshot, state.grid_cell_m)
    state.defer_indexes()  # only the objects are wanted
    replay(state, store.iter_log(scope, after_commit=after), math.inf)
    return list(state.objects.values())


def replay_stale_cache(store: StateSource) -> bool:
    """If ``store`` (opened writable) says its cache is stale, replay every scope's log and
    rewrite its materialised objects, clearing the flag — one transaction for all scopes.
    Returns whether it did."""
    if store.read_only or not store.cache_stale():
        return False
    store.rewrite_cache({scope: replay_objects(store, scope) for scope in store.scopes()})
    return True


def load_state(store: StateSource, scope: str, config: TrackerConfig, *, from_log: bool,
               until_commit: int | None = None) -> MemoryState:
    """The state of ``scope``: from the materialised rows (``from_log=False``: the fast path
    every open takes), or by replaying the record from the newest checkpoint at or before
    ``until_commit`` through :func:`apply` (``rebuild_from_log``, ``as_of``, compaction) — read
    inside one read transaction, so it is a state that was committed, never a mix of two
    (another process may be writing)."""
    with store.snapshot_read(), gc_paused(), _reading(store, scope):
        return _read_state(store, scope, config, from_log, until_commit)


def _read_state(store: StateSource, scope: str, config: TrackerConfig, from_log: bool,
                until_commit: int | None) -> MemoryState:
    lost_after = config.lost_after_s
    cell = config.drift_radius_m
    relations = config.relations
    approximate = config.appearance_approximate_above
    state = MemoryState(grid_cell_m=cell, relations=relations, approximate_above=approximate)
    if from_log:
        checkpoint = store.latest_checkpoint(scope, until_commit)
        after = 0
        if checkpoint is not None:
            after, snapshot = checkpoint
            state = MemoryState.from_snapshot(snapshot, cell, relations, approximate)
        state.defer_indexes()  # built once, below
        replay(state, store.iter_log(scope, after_commit=after, until_commit=until_commit),
               lost_after)
    else:
        for obj in store.load_objects(scope):
            state.objects[obj.id] = obj
            if obj.feature is not None and state.feature_dim is None:
                state.feature_dim = int(obj.feature.shape[0])
        state.tombstones = store.load_tombstones(scope)
        state.rejections = store.load_rejections(scope)
        rooms = store.load_rooms(scope)
        if rooms is not None:
            state.scene.rooms = RoomMap.from_dict(rooms)
        state.now = store.last_commit_time(scope)
        state.prior = {oid: PriorEntry.from_dict(e)
                       for oid, e in store.load_json_rows("prior_map", scope).items()}
        state.deltas = {did: Delta.from_dict(d)
                        for did, d in store.load_json_rows("deltas", scope).items()}
        state.keyframes = {oid: keyframes_of(kept)
                           for oid, kept in store.load_json_rows("keyframes", scope).items()}
        for ev in store.events(scope, kind=[k.value for k in sorted(EPOCH_KINDS)]):
            apply_epoch(state, ev)
    if state.feature_dim is None:  # a forgotten object's embedding still fixes the width
        for tomb in state.tombstones.values():
            if tomb.obj.feature is not None:
                state.feature_dim = int(tomb.obj.feature.shape[0])
                break
    if state.feature_dim is None and not from_log:  # ... and so do expired ones'
        state.feature_dim = store.feature_dim(scope)
    # ids and sequence numbers above every id the scope could clash with (SQLite: the
    # file's; PostgreSQL: the scope's), so scopes sharing a store never collide
    state.next_object_id, state.next_seq, state.next_commit = store.counters(scope)
    state.rebuild_indexes(lost_after)
    return state
