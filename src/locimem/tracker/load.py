"""Loading states from a store's log: the replay a migration leaves to do.

A migration that adds something only a replay can compute (schema 3's existence belief: SQL
cannot run ``apply``) marks the store's materialised objects stale; the store itself never
replays — it knows records, not what they mean. :func:`replay_stale_cache` does it, above the
store, when the memory first opens such a store writable.
"""

from __future__ import annotations

import math
from typing import TYPE_CHECKING

from locimem.model import ObjectState
from locimem.tracker.apply import apply
from locimem.tracker.state import MemoryState

if TYPE_CHECKING:  # the tracker needs only the protocol's shape, not a backend
    from locimem.store.base import Store

__all__ = ["replay_objects", "replay_stale_cache"]


def replay_objects(store: Store, scope: str) -> list[ObjectState]:
    """The objects of ``scope`` as its log says: ``apply`` over every record after the newest
    checkpoint, starting from that checkpoint's state. Only ``apply`` runs — the records carry
    every decision, so no config is read (the loss deadline is irrelevant: nothing decides)."""
    state = MemoryState()
    after = 0
    checkpoint = store.latest_checkpoint(scope)
    if checkpoint is not None:
        after, snapshot = checkpoint
        state = MemoryState.from_snapshot(snapshot, state.grid.cell_m)
    for record in store.iter_log(scope, after_commit=after):
        apply(state, record, math.inf)
    return list(state.objects.values())


def replay_stale_cache(store: Store) -> bool:
    """If ``store`` (opened writable) says its cache is stale, replay every scope's log and
    rewrite its materialised objects, clearing the flag — one transaction for all scopes.
    Returns whether it did."""
    if store.read_only or not store.cache_stale():
        return False
    store.rewrite_cache({scope: replay_objects(store, scope) for scope in store.scopes()})
    return True
