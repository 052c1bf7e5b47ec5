"""Spatial relations between objects, kept up to date incrementally (:class:`RelationIndex`).

What each relation means, and the predicates that judge one pair of boxes, are in
:mod:`locimem.scene.predicates` (re-exported here).

:class:`RelationIndex` keeps every relation between the objects it holds. ``update`` of one
object recomputes only the pairs that object is part of, against the candidates a box grid
returns near it, and returns what changed.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any, Literal

from locimem.check import check_float, check_int
from locimem.config import RelationConfig
from locimem.errors import InvalidInput, NotFound
from locimem.index.boxgrid import BoxGrid
from locimem.scene.predicates import (
    LEVELS,
    RELATIONS,
    ROLES,
    SYMMETRIC,
    Box,
    Key,
    Vec3,
    compute_relations,
    contains,
    in_,
    near,
    next_to,
    on,
    pair_relations,
    under,
)
from locimem.scene.relation_join import _bulk_relations

__all__ = [
    "LEVELS",
    "RELATIONS",
    "ROLES",
    "Box",
    "Relation",
    "RelationChange",
    "RelationConfig",
    "RelationIndex",
    "compute_relations",
    "contains",
    "in_",
    "near",
    "next_to",
    "on",
    "pair_relations",
    "under",
]


# --------------------------------------------------------------------------------------------
# the incremental index


@dataclass(frozen=True, slots=True)
class Relation:
    """``subject relation object`` with a confidence in (0, 1]; ``since`` is the ``t`` of the
    update that established it (None if no time was given)."""

    subject: int
    relation: str
    object: int
    confidence: float
    since: float | None = None


@dataclass(frozen=True, slots=True)
class RelationChange:
    """One change an update made: ``added``, ``removed`` or ``changed`` (the confidence moved
    by at least ``report_delta``). ``confidence`` is the new value (the last one for
    ``removed``), ``previous`` the old one (None for ``added``)."""

    kind: Literal["added", "removed", "changed"]
    subject: int
    relation: str
    object: int
    confidence: float
    previous: float | None = None


def _check_relation(relation: str) -> str:
    if relation not in RELATIONS:
        raise InvalidInput(f"relation must be one of {', '.join(RELATIONS)}, got {relation!r}")
    return relation


class RelationIndex:
    """The relations among a changing set of objects, maintained incrementally.

    ``update`` recomputes only the pairs the updated object is part of, against the objects
    whose boxes lie within reach of its box (a :class:`~locimem.index.boxgrid.BoxGrid`), so
    its cost depends on the local density, not on how many objects are held.
    ``last_candidates`` says how many other objects the last update examined.

    Args:
        config: the predicate thresholds.
        cell_m: cell side of the candidate grid, metres.
    """

    def __init__(self, config: RelationConfig | None = None, *, cell_m: float = 1.0) -> None:
        self.config = config or RelationConfig()
        self._cell_m = cell_m
        self._grid_built: BoxGrid[int] | None = BoxGrid(cell_m, dims=3)
        self._boxes: dict[int, Box] = {}
        self._rel: dict[Key, tuple[float, float | None]] = {}
        self._touch: dict[int, set[Key]] = {}
        self._fwd: dict[tuple[int, str], dict[int, float]] = {}
        self._bwd: dict[tuple[int, str], dict[int, float]] = {}
        self.last_candidates = 0

    @classmethod
    def built(cls, objects: Iterable[tuple[int, Box]], config: RelationConfig | None = None,
              *, cell_m: float = 1.0) -> RelationIndex:
        """The index that ``update`` of each of ``objects`` (distinct ids, boxes already
        checked), one after another in the order given, would leave — with the same relations
        and confidences — built in bulk: the candidate pairs found at once (a later object
        relates to an earlier one whose box meets its reach, as ``update`` finds them), no
        change lists. The candidate grid for later updates is built when first needed."""
        index = cls(config, cell_m=cell_m)
        entries = list(objects)
        boxes, touch, rel, link = index._boxes, index._touch, index._rel, index._link
        for oid, box in entries:
            if oid in boxes:
                raise InvalidInput(f"object {oid} is given twice")
            boxes[oid] = box
            touch[oid] = set()
        placed = [(oid, box) for oid, box in entries if box.level != "room"]
        for key, conf in _bulk_relations(placed, index.config):
            rel[key] = (conf, None)
            touch[key[0]].add(key)
            touch[key[2]].add(key)
            link(key, conf)
        index._grid_built = None
        return index

    def ensure_grid(self) -> None:
        """Build the candidate grid now (:meth:`built` leaves it to the first update)."""
        self._grid  # noqa: B018 - the property builds it

    @property
    def _grid(self) -> BoxGrid[int]:
        """The candidate grid over every box but rooms' (built on first use after
        :meth:`built`)."""
        grid = self._grid_built
        if grid is None:
            grid = self._grid_built = BoxGrid(self._cell_m, dims=3)
            for oid, box in self._boxes.items():
                if box.level != "room":
                    grid.set(oid, box.lo, box.hi)
        return grid

    def __len__(self) -> int:
        return len(self._boxes)

    def __contains__(self, object_id: object) -> bool:
        return object_id in self._boxes

    def box(self, object_id: int) -> Box:
        """The box last given for ``object_id``."""
        self._known(object_id)
        return self._boxes[object_id]

    # -- mutation ----------------------------------------------------------------------

    def _link(self, key: Key, conf: float) -> None:
        s, r, o = key
        self._fwd.setdefault((s, r), {})[o] = conf
        self._bwd.setdefault((o, r), {})[s] = conf
        if r in SYMMETRIC:
            self._fwd.setdefault((o, r), {})[s] = conf
            self._bwd.setdefault((s, r), {})[o] = conf

    def _unlink(self, key: Key) -> None:
        s, r, o = key
        pairs = [((s, r), o, self._fwd), ((o, r), s, self._bwd)]
        if r in SYMMETRIC:
            pairs += [((o, r), s, self._fwd), ((s, r), o, self._bwd)]
        for k, other, table in pairs:
            bucket = table.get(k)
            if bucket is not None:
                bucket.pop(other, None)
                if not bucket:
                    del table[k]

    def _reach(self, box: Box) -> tuple[Vec3, Vec3]:
        cfg = self.config
        exy, ez, n = cfg.reach_xy_m, cfg.reach_z_m, cfg.near_m
        c = box.center
        lo = (min(box.lo[0] - exy, c[0] - n), min(box.lo[1] - exy, c[1] - n),
              min(box.lo[2] - ez, c[2] - n))
        hi = (max(box.hi[0] + exy, c[0] + n), max(box.hi[1] + exy, c[1] + n),
              max(box.hi[2] + ez, c[2] + n))
        return lo, hi

    def update(self, object_id: int, center: Any, size: Any, level: str = "item",
               role: str | None = None, *, t: float | None = None) -> list[RelationChange]:
        """Insert or move an object and return the relation changes this caused, sorted by
        (subject, relation, object). ``center``/``size`` in metres, map frame; ``t`` (any
        clock, seconds) stamps relations this update establishes."""
        oid = check_int(object_id, "object_id", lo=0)
        box = Box(center, size, level, role)
        if t is not None:
            t = check_float(t, "t")
        return self.update_box(oid, box, t)

    def update_box(self, oid: int, box: Box, t: float | None = None) -> list[RelationChange]:
        """:meth:`update` with a box already made (``Box.trusted`` from a state's checked
        values: the tracker re-indexes objects by the thousand) and ``oid``, ``t`` already
        checked."""
        new: dict[Key, float] = {}
        self._boxes[oid] = box
        if box.level == "room":
            self._grid.remove(oid)
            self.last_candidates = 0
        else:
            self._grid.set(oid, box.lo, box.hi)
            lo, hi = self._reach(box)
            candidates = [k for k in self._grid.overlapping(lo, hi) if k != oid]
            self.last_candidates = len(candidates)
            for other in candidates:
                new.update(pair_relations(oid, box, other, self._boxes[other], self.config))
        return self._apply(oid, new, t)

    def remove(self, object_id: int) -> list[RelationChange]:
        """Remove an object and every relation it was part of (NotFound if absent)."""
        self._known(object_id)
        changes = self._apply(object_id, {}, None)
        del self._boxes[object_id]
        self._grid.remove(object_id)
        self._touch.pop(object_id, None)
        return changes

    def _apply(self, oid: int, new: dict[Key, float], t: float | None) -> list[RelationChange]:
        old = self._touch.get(oid, set())
        changes: list[RelationChange] = []
        delta = self.config.report_delta
        for key in old - new.keys():
            conf, _ = self._rel.pop(key)
            self._unlink(key)
            other = key[2] if key[0] == oid else key[0]
            self._touch[other].discard(key)
            changes.append(RelationChange("removed", key[0], key[1], key[2], conf))
        for key, conf in new.items():
            prev = self._rel.get(key)
            if prev is None:
                self._rel[key] = (conf, t)
                other = key[2] if key[0] == oid else key[0]
                self._touch.setdefault(other, set()).add(key)
                changes.append(RelationChange("added", key[0], key[1], key[2], conf))
            else:
                self._rel[key] = (conf, prev[1])
                if abs(conf - prev[0]) >= delta and conf != prev[0]:
                    changes.append(RelationChange("changed", key[0], key[1], key[2], conf,
                                                  prev[0]))
            self._link(key, conf)
        self._touch[oid] = set(new)
        changes.sort(key=lambda c: (c.subject, RELATIONS.index(c.relation), c.object))
        return changes

    # -- questions ---------------------------------------------------------------------

    def _known(self, object_id: int) -> None:
        if object_id not in self._boxes:
            raise NotFound(f"object {object_id} is not in the relation index")

    def subjects(self, relation: str, object_id: int) -> list[tuple[float, int]]:
        """``(confidence, id)`` of everything standing in ``relation`` to ``object_id``
        ("what is on the table": ``subjects("on", table)``), highest confidence first,
        ties by id. NotFound for an id the index does not hold."""
        _check_relation(relation)
        self._known(object_id)
        if relation == "contains":
            bucket = self._fwd.get((object_id, "in"), {})
        else:
            bucket = self._bwd.get((object_id, relation), {})
        return sorted(((c, i) for i, c in bucket.items()), key=lambda p: (-p[0], p[1]))

    def objects(self, subject_id: int, relation: str) -> list[tuple[float, int]]:
        """``(confidence, id)`` of everything ``subject_id`` stands in ``relation`` to
        ("what is the cup on": ``objects(cup, "on")``), highest confidence first."""
        _check_relation(relation)
        self._known(subject_id)
        if relation == "contains":
            bucket = self._bwd.get((subject_id, "in"), {})
        else:
            bucket = self._fwd.get((subject_id, relation), {})
        return sorted(((c, i) for i, c in bucket.items()), key=lambda p: (-p[0], p[1]))

    def relations_of(self, object_id: int) -> list[Relation]:
        """Every stored relation ``object_id`` is part of (as subject or object), plus the
        ``contains`` view of the ``in`` relations where it is the container, sorted."""
        self._known(object_id)
        out = []
        for key in self._touch.get(object_id, ()):
            conf, since = self._rel[key]
            out.append(Relation(key[0], key[1], key[2], conf, since))
            if key[1] == "in" and key[2] == object_id:
                out.append(Relation(object_id, "contains", key[0], conf, since))
        out.sort(key=lambda r: (r.subject, RELATIONS.index(r.relation), r.object))
        return out

    def all(self) -> dict[Key, float]:
        """Every stored relation ``(subject, relation, object) -> confidence`` (symmetric
        relations once, smaller id first; ``contains`` not repeated)."""
        return {k: v[0] for k, v in self._rel.items()}
