"""Objects and space: what is tracked, where things are, what is near, what was seen
lately, and search by name or meaning.
"""

from __future__ import annotations

import heapq
from collections.abc import Iterable
from typing import Any

from locimem.check import (
    check_coordinate_domain,
    check_distance_domain,
    check_int,
    check_label,
    check_time,
)
from locimem.errors import InvalidInput
from locimem.model import (
    ObjectStatus,
    RecallResult,
    TrackedObject,
)
from locimem.query.base import (
    LIVE_STATUSES,
    FindResult,
    ReaderBase,
    check_statuses,
)
from locimem.query.recall import recall as _recall
from locimem.query.semantic import SemanticIndex
from locimem.query.views import status_of


class ObjectQueries(ReaderBase):
    """Questions about objects and where they are."""

    def tracked(self) -> list[TrackedObject]:
        """The published objects: promoted and confident (``status == confirmed``), by id."""
        return self.objects(status=ObjectStatus.CONFIRMED)

    def objects(self, status: ObjectStatus | str | Iterable[ObjectStatus | str] | None = None,
                label: str | None = None) -> list[TrackedObject]:
        """Every remembered object (optionally of some statuses and/or a voted label), by id."""
        self.store  # noqa: B018 - raises if closed
        wanted = check_statuses(status)
        if label is not None:
            label = check_label(label, "label")
        out = []
        for obj in self._visible():
            if label is not None and obj.label != label:
                continue
            v = self._view(obj)
            if wanted is None or v.status in wanted:
                out.append(v)
        return out

    def get(self, object_id: int) -> TrackedObject:
        """One object by id. Raises :class:`NotFound` for an unknown or forgotten id."""
        return self._view(self._object(object_id))

    def recall(self, name: str) -> RecallResult:
        """What the memory knows about ``name`` ("cup", "the red mug"): the best matching
        object, its status, last place and time, and a one-line answer."""
        self.store  # noqa: B018
        if not isinstance(name, str):
            raise InvalidInput(f"name must be a string, got {type(name).__name__}")
        return _recall(name, list(self._visible()), self._state.now, self._config)

    # -- space ---------------------------------------------------------------------------------
    def near(self, point: Any, radius: float, *, label: str | None = None,
             status: Any = LIVE_STATUSES, level: str | None = None,
             room: str | None = None) -> list[TrackedObject]:
        """Objects whose centre is within ``radius`` metres of ``point`` (x, y, z; map frame),
        nearest first. ``label`` matches whole words ("chair" finds "office chair", "table"
        never "vegetable"); ``status`` defaults to every status but lost; ``level`` is
        ``furniture`` or ``item``; ``room`` a defined room's name."""
        p = check_coordinate_domain(point, "point")
        r = check_distance_domain(radius, "radius")
        accept = self._filter(label, status, level, room)
        objects = self._state.objects
        return [self._view(objects[oid]) for _, oid in self._state.indexes.grid.near(p, r)
                if accept(objects[oid])]

    def nearest(self, point: Any, k: int = 1, *, label: str | None = None,
                status: Any = LIVE_STATUSES, level: str | None = None,
                room: str | None = None) -> list[TrackedObject]:
        """The ``k`` objects nearest to ``point`` (filters as in :meth:`near`), nearest first."""
        p = check_coordinate_domain(point, "point")
        k = check_int(k, "k", lo=1, hi=10_000)
        accept = self._filter(label, status, level, room)
        objects = self._state.objects
        hits = self._state.indexes.grid.nearest(p, k, accept=lambda oid: accept(objects[oid]))
        return [self._view(objects[oid]) for _, oid in hits]

    def within(self, box_min: Any, box_max: Any, *, label: str | None = None,
               status: Any = LIVE_STATUSES, level: str | None = None,
               room: str | None = None) -> list[TrackedObject]:
        """Objects whose centre lies in the axis-aligned box [box_min, box_max] (map frame,
        inclusive), by id."""
        lo = check_coordinate_domain(box_min, "box_min")
        hi = check_coordinate_domain(box_max, "box_max")
        if any(a > b for a, b in zip(lo, hi, strict=True)):
            raise InvalidInput(f"box_min {lo} must not exceed box_max {hi} on any axis")
        accept = self._filter(label, status, level, room)
        objects = self._state.objects
        return [self._view(objects[oid]) for oid in self._state.indexes.grid.within_box(lo, hi)
                if accept(objects[oid])]

    # -- time ----------------------------------------------------------------------------------
    def recent(self, n: int = 10, *, label: str | None = None,
               status: Any = None) -> list[TrackedObject]:
        """The ``n`` most recently seen objects, newest first (ties by id)."""
        n = check_int(n, "n", lo=1, hi=10_000)
        accept = self._filter(label, status)
        objs = heapq.nsmallest(n, (o for o in self._state.objects.values() if accept(o)),
                               key=lambda o: (-o.last_seen, o.id))
        return [self._view(o) for o in objs]

    def stale(self, before: float, *, label: str | None = None,
              status: Any = LIVE_STATUSES) -> list[TrackedObject]:
        """Objects not seen since before time ``before`` (and, by default, not lost): what
        the robot should look at again. Oldest sighting first."""
        t = check_time(before, "before")
        accept = self._filter(label, status)
        objs = sorted((o for o in self._state.objects.values()
                       if o.last_seen < t and accept(o)), key=lambda o: (o.last_seen, o.id))
        return [self._view(o) for o in objs]

    def last_seen(self, label: str) -> TrackedObject | None:
        """The most recently seen object answering to ``label`` (any status), or None."""
        found = self.recent(1, label=label)
        return found[0] if found else None

    # -- search ---------------------------------------------------------------------------------
    def semantic_index(self) -> SemanticIndex:
        """The index ``find`` searches (labels by words, synonyms and meaning), built on
        first use and kept current by the memory's commits."""
        if self._semantic_index is None:
            index = SemanticIndex(self._encoder, self._vector_index)
            index.set_many((o.id, o.label) for o in self._visible())
            self._semantic_index = index
        return self._semantic_index

    def find(self, text: str, top_k: int = 10, *, status: Any = LIVE_STATUSES
             ) -> list[FindResult]:
        """Objects matching a description: whole-word label matches ("table" never finds
        "vegetable"), a built-in synonym and category table ("something to drink from" finds
        cups, mugs, glasses and bottles), and — when the memory has an encoder — embedding
        similarity of labels ("beaker" finds a mug). Best first; ties favour confirmed and
        recently seen objects."""
        if not isinstance(text, str) or not text.strip():
            raise InvalidInput("find() needs a non-empty text")
        if len(text) > 500:
            raise InvalidInput(f"text must be at most 500 characters, got {len(text)}")
        k = check_int(top_k, "top_k", lo=1, hi=1000)
        accept = self._filter(None, status)
        objects = self._state.objects
        now, config = self._state.now or 0.0, self._config
        rank_of = {s: i for i, s in enumerate(ObjectStatus)}

        def rank(oid: int) -> tuple:
            obj = objects[oid]
            return (rank_of[status_of(obj, now, config)], -obj.last_seen, oid)

        hits = self.semantic_index().search(text, k, lambda oid: oid in objects and
                                       accept(objects[oid]), rank)
        return [FindResult(self._view(objects[m.object_id]), m.score, m.how) for m in hits]
