"""The rows one commit changes in the materialised state, written with its records.

The tracker computes them in the same pass that applies a commit; every store writes them. They
sit here, with the records, so that neither the tracker nor a store depends on the other.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from locimem.model.objects import ObjectState, RejectionState, TombstoneState

__all__ = ["RowChanges"]


@dataclass
class RowChanges:
    """What one commit changed in the materialised state, written with its records."""

    objects: list[ObjectState] = field(default_factory=list)  # upserted
    # looked at and missed, nothing else: only the row's n_missed and absence_s change
    missed: list[ObjectState] = field(default_factory=list)
    removed_objects: list[int] = field(default_factory=list)  # forgotten
    tombstones: dict[int, TombstoneState] = field(default_factory=dict)  # upserted
    removed_tombstones: list[int] = field(default_factory=list)  # revived
    rejections: dict[str, RejectionState] = field(default_factory=dict)  # upserted
    rooms: dict[str, Any] | None = None  # the scope's whole room map, when it changed
    touched: list[int] = field(default_factory=list)  # ids of the rows written or removed
    # the long-term map, its deltas and keyframe evidence: id -> row (None: delete the row)
    prior: dict[int, dict[str, Any] | None] = field(default_factory=dict)
    deltas: dict[int, dict[str, Any]] = field(default_factory=dict)
    keyframes: dict[int, list[dict[str, Any]]] = field(default_factory=dict)
