"""Every read of a memory, over one state: the live memory and its as-of views share this.

:class:`MemoryReader` is the questions of each concern together — objects and space
(:mod:`~locimem.query.objects`), rooms and relations (:mod:`~locimem.query.rooms`), time and
the record (:mod:`~locimem.query.history`), the prior map (:mod:`~locimem.query.prior`) — over
the shared :class:`~locimem.query.base.ReaderBase`.
"""

from __future__ import annotations

from locimem.query.base import (
    COMMIT_KINDS,
    LIVE_STATUSES,
    FindResult,
    RelationInfo,
    RoomInfo,
    label_matches_folded,
)
from locimem.query.history import HistoryQueries
from locimem.query.objects import ObjectQueries
from locimem.query.prior import PriorQueries
from locimem.query.rooms import RoomQueries

__all__ = ["COMMIT_KINDS", "LIVE_STATUSES", "FindResult", "MemoryReader", "RelationInfo",
           "RoomInfo", "label_matches_folded"]


class MemoryReader(ObjectQueries, RoomQueries, HistoryQueries, PriorQueries):
    """Read-only questions over one state of one scope: the live memory
    (:class:`~locimem.ObjectMemory` is one) or an as-of view of it (:meth:`as_of`)."""
