"""The protocol every storage backend implements (SQLite today; PostgreSQL for fleets later).

A backend stores three append-only logs per scope — commits, observations, events — and a
materialised object table kept in the same transaction. It never interprets records: deciding
and applying are the tracker's job.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from contextlib import AbstractContextManager
from dataclasses import dataclass, field
from typing import Any, Protocol

from locimem.model import (
    Commit,
    Event,
    ObjectState,
    Observation,
    Record,
    RejectionState,
    TombstoneState,
)


@dataclass
class RowChanges:
    """What one commit changed in the materialised state, written with its records."""

    objects: list[ObjectState] = field(default_factory=list)  # upserted
    removed_objects: list[int] = field(default_factory=list)  # forgotten
    tombstones: dict[int, TombstoneState] = field(default_factory=dict)  # upserted
    removed_tombstones: list[int] = field(default_factory=list)  # revived
    rejections: dict[str, RejectionState] = field(default_factory=dict)  # upserted
    rooms: dict[str, Any] | None = None  # the scope's whole room map, when it changed
    touched: list[int] = field(default_factory=list)  # every object id the commit touched
    # the long-term map, its deltas and keyframe evidence: id -> row (None: delete the row)
    prior: dict[int, dict[str, Any] | None] = field(default_factory=dict)
    deltas: dict[int, dict[str, Any]] = field(default_factory=dict)
    keyframes: dict[int, list[dict[str, Any]]] = field(default_factory=dict)


class Store(Protocol):
    path: str
    read_only: bool

    def append(self, scope: str, records: Sequence[Record], delta: RowChanges) -> None:
        """Write one commit's records and the state they changed, atomically."""

    def snapshot_read(self) -> AbstractContextManager[None]:
        """One read transaction: the queries inside see one committed state."""

    def counters(self) -> tuple[int, int, int]:
        """(next object id, next seq, next commit id) across every scope of the store."""

    def last_commit_time(self, scope: str) -> float | None: ...

    def load_objects(self, scope: str) -> list[ObjectState]: ...

    def iter_log(self, scope: str) -> Iterator[Record]:
        """Every record of ``scope`` in replay order."""

    def events(self, scope: str, *, kind: Sequence[str] | None = None, label: str | None = None,
               object_id: int | None = None, since: float | None = None,
               until: float | None = None, limit: int | None = None,
               newest_first: bool = False) -> list[Event]: ...

    def observations(self, scope: str, *, object_id: int | None = None,
                     rejected: bool | None = None, limit: int | None = None
                     ) -> list[Observation]: ...

    def merged_into(self, scope: str, object_id: int, *, until_commit: int | None = None
                    ) -> int | None:
        """The id that absorbed ``object_id`` in a MERGED event, if any."""

    def history(self, scope: str, object_id: int, *, until_commit: int | None = None,
                merged_from: Sequence[int] = ()) -> list[Observation | Event]: ...

    def commits(self, scope: str) -> list[Commit]: ...

    def count(self, table: str, scope: str) -> int: ...

    def scopes(self) -> list[str]: ...

    def close(self) -> None: ...
