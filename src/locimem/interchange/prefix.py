"""A scope as it was at one commit: its record up to that commit, and the state it implies.

:func:`prefix_copy` is how an operator takes back what should not have landed — above all a
scan whose clock was wrong by years, after which every real scan is "going back in time" —
without editing the record: ``locimem export STORE DIR --scope S --until-commit N`` writes
the scope as of commit ``N`` (:func:`~locimem.interchange.export.export_memory` with
``until_commit``), and ``locimem import DIR NEW`` starts a store from it. The records up to
``N`` are copied as they are (same ids, times and record times); the materialised state is
rebuilt by replaying them through the one ``apply`` (from the newest checkpoint at or before
``N``, which is copied too when compaction wrote one), so the copy is exactly the store a
memory that never saw the later commits would have written.
"""

from __future__ import annotations

import contextlib
import os
import tempfile
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import Any

from locimem.config import TrackerConfig
from locimem.errors import InvalidInput, NotFound
from locimem.model import Commit, Record
from locimem.store import open_store
from locimem.store.base import RowChanges, Store
from locimem.store.sqlite import SQLiteStore
from locimem.tracker.apply import Touched, apply
from locimem.tracker.state import MemoryState

__all__ = ["check_until_commit", "prefix_copy"]


def check_until_commit(store: Store, scope: str, until_commit: Any) -> int:
    """``until_commit`` if it is one of ``scope``'s commits; InvalidInput saying what to give
    otherwise."""
    if isinstance(until_commit, bool) or not isinstance(until_commit, int):
        raise InvalidInput(f"until_commit must be a commit id (an int), got "
                           f"{type(until_commit).__name__}")
    commits = [c.id for c in store.commits(scope)]
    if not commits:
        raise NotFound(f"no scope {scope!r} in {store.path!r} "
                       f"(scopes: {', '.join(map(repr, store.scopes())) or 'none'})")
    if until_commit not in set(commits):
        raise InvalidInput(
            f"until_commit={until_commit} is not a commit of scope {scope!r} (its commits run "
            f"from {commits[0]} to {commits[-1]}); `locimem events STORE --scope {scope}` "
            "shows each event's commit and time")
    return until_commit


@contextlib.contextmanager
def prefix_copy(source: str | os.PathLike[str], scope: str, until_commit: int
                ) -> Iterator[Path]:
    """A SQLite file (in a temporary directory, deleted afterwards) holding ``scope`` of the
    store at ``source`` (a file or a PostgreSQL URL) as of commit ``until_commit``: its
    records up to it, and the state they imply. The source is only read."""
    with tempfile.TemporaryDirectory(prefix="locimem-prefix-") as folder, \
            contextlib.closing(open_store(source, read_only=True)) as src:
        path = Path(folder) / "scope.loci"
        with src.snapshot_read():
            until = check_until_commit(src, scope, until_commit)
            with contextlib.closing(SQLiteStore(path, late_s=src.late_s)) as dst:
                _copy_prefix(src, dst, scope, until)
        yield path


def _copy_prefix(src: Store, dst: SQLiteStore, scope: str, until: int) -> None:
    config = TrackerConfig()
    lost_after = config.lost_after_s
    state = MemoryState(grid_cell_m=config.drift_radius_m, relations=config.relations)
    after = 0
    checkpoint = src.latest_checkpoint(scope, until)
    if checkpoint is not None:  # the thinned record before it, then the state it holds
        after, snapshot = checkpoint
        for records in _by_commit(src.iter_log(scope, until_commit=after)):
            dst.append(scope, records, RowChanges())
        state = MemoryState.from_snapshot(snapshot, config.drift_radius_m, config.relations)
        t = next(c.t for c in src.commits(scope) if c.id == after)
        dst.compact(scope, checkpoint_commit=after, checkpoint_t=t, state=snapshot,
                    delete_seqs=[], records=[])
        dst.append(scope, [], _whole(state))
    for records in _by_commit(src.iter_log(scope, after_commit=after, until_commit=until)):
        touched = Touched()
        for record in records:
            apply(state, record, lost_after, touched)
        state.scene.drain()  # its RELATION events are in the record already
        dst.append(scope, records, touched.rows(state))


def _by_commit(records: Iterable[Record]) -> Iterator[list[Record]]:
    """The log's records, one commit (the commit, then its records) at a time."""
    group: list[Record] = []
    for record in records:
        if isinstance(record, Commit) and group:
            yield group
            group = []
        group.append(record)
    if group:
        yield group


def _whole(state: MemoryState) -> RowChanges:
    """Every row of a state (what a checkpoint's state materialises to; a scope without rooms
    has no room row)."""
    rooms = state.scene.rooms.to_dict()
    return RowChanges(
        objects=[state.objects[i] for i in sorted(state.objects)],
        tombstones=dict(sorted(state.tombstones.items())),
        rejections=dict(sorted(state.rejections.items())),
        rooms=rooms if any(rooms.values()) else None,
        touched=sorted({*state.objects, *state.tombstones}),
        prior={i: e.to_dict() for i, e in sorted(state.prior.items())},
        deltas={i: d.to_dict() for i, d in sorted(state.deltas.items())},
        keyframes={i: [k.to_dict() for k in kept] for i, kept in sorted(state.keyframes.items())},
    )
