"""Spatial relations between two objects' boxes: the predicates, one pair at a time.

Frames and units: boxes are axis-aligned in the map frame, given by their centre (x, y, z)
and extents (dx, dy, dz) in metres, z up. Each predicate returns a confidence in [0, 1];
0 means the relation does not hold.

============  ===================================================================================
relation      holds when (thresholds from :class:`RelationConfig`)
============  ===================================================================================
``on``        A's bottom is within ``on_gap_m`` of B's top, A's centre is above B's top minus
              the gap, and at least ``on_min_overlap`` of A's footprint is over B's.
``under``     at least ``under_min_overlap`` of A's footprint is beneath B, and either A lies
              wholly below B (A's top at most ``under_max_gap_m`` below B's bottom), or B is a
              *surface* (a table, a bed: its box spans the floor to its top) and A stands within
              B's height with its top ``under_clearance_m`` or more below B's top.
``in``        at least ``in_min_fraction`` of A's volume is inside B, A fits inside B and is
              strictly smaller, and B is not a *surface*.
``contains``  the inverse of ``in`` (derived, never stored twice).
``next_to``   A and B stand on the same level (bottoms within ``support_tol_m``), their
              footprints are at most ``next_to_gap_m`` apart and overlap by at most
              ``next_to_max_overlap`` of the smaller one. Symmetric.
``near``      the centres are less than ``near_m`` apart. Symmetric.
============  ===================================================================================

Levels: ``item`` < ``furniture``. ``on``, ``under`` and ``in`` relate an item to furniture
or to another item, and furniture to furniture — never furniture to an item. ``room`` level
objects take no part (rooms are :mod:`locimem.scene.rooms`' business).

Roles say what a box is for things placed at it: ``"surface"`` (things are on it or under
it, never in it), ``"container"`` (things are in it; its box is no shelter for ``under``),
or None (unknown: both ``in`` and the strict form of ``under`` apply).
:func:`locimem.language.text.support_role` derives a role from a label.

:mod:`locimem.scene.relation_join` finds the same relations for a whole map at once;
:mod:`locimem.scene.relations` keeps them up to date as objects move.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Literal

from locimem.check import check_size, check_vec
from locimem.config import RelationConfig
from locimem.errors import InvalidInput

__all__ = ["LEVELS", "RELATIONS", "ROLES", "STORED", "SYMMETRIC", "Box", "compute_relations",
           "contains", "in_", "near", "next_to", "on", "pair_relations", "under"]


Vec3 = tuple[float, float, float]
Level = Literal["room", "furniture", "item"]
Role = Literal["surface", "container"]
LEVELS: tuple[str, ...] = ("room", "furniture", "item")
ROLES: tuple[str | None, ...] = (None, "surface", "container")
RELATIONS: tuple[str, ...] = ("on", "under", "in", "contains", "next_to", "near")
STORED = ("on", "under", "in", "next_to", "near")
SYMMETRIC = frozenset({"next_to", "near"})
_RANK = {"item": 0, "furniture": 1}


# --------------------------------------------------------------------------------------------
# configuration and boxes


@dataclass(frozen=True, slots=True)
class Box:
    """An object's axis-aligned box: centre (x, y, z) and extents (dx, dy, dz), metres, map
    frame; its level (``item``, ``furniture`` or ``room``) and role (see module docs)."""

    center: Vec3
    size: Vec3
    level: str = "item"
    role: str | None = None
    lo: Vec3 = field(init=False, repr=False, compare=False)
    hi: Vec3 = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        set_ = object.__setattr__
        c = check_vec(self.center, "center", 3)
        s = check_size(self.size, "size")
        if self.level not in LEVELS:
            raise InvalidInput(f"level must be one of {', '.join(LEVELS)}, got {self.level!r}")
        if self.role not in ROLES:
            raise InvalidInput(f"role must be 'surface', 'container' or None, got {self.role!r}")
        set_(self, "center", c)
        set_(self, "size", s)
        set_(self, "lo", tuple(c[i] - 0.5 * s[i] for i in range(3)))
        set_(self, "hi", tuple(c[i] + 0.5 * s[i] for i in range(3)))

    @classmethod
    def trusted(cls, center: Sequence[float], size: Sequence[float], level: str = "item",
                role: str | None = None) -> Box:
        """A box from values already checked (a stored state's settled box): the same box
        the checked constructor makes, without checking again (open is hot)."""
        box = object.__new__(cls)
        set_ = object.__setattr__
        c = (float(center[0]), float(center[1]), float(center[2]))
        s = (float(size[0]), float(size[1]), float(size[2]))
        set_(box, "center", c)
        set_(box, "size", s)
        set_(box, "level", level)
        set_(box, "role", role)
        set_(box, "lo", (c[0] - 0.5 * s[0], c[1] - 0.5 * s[1], c[2] - 0.5 * s[2]))
        set_(box, "hi", (c[0] + 0.5 * s[0], c[1] + 0.5 * s[1], c[2] + 0.5 * s[2]))
        return box

    @property
    def bottom(self) -> float:
        return self.lo[2]

    @property
    def top(self) -> float:
        return self.hi[2]


# --------------------------------------------------------------------------------------------
# the predicates


def _overlap_1d(a0: float, a1: float, b0: float, b1: float) -> float:
    return max(0.0, min(a1, b1) - max(a0, b0))


def _fraction_inside(a: Box, b: Box, axes: Iterable[int]) -> float:
    """The fraction of A's extent (over ``axes``) inside B's; an axis where A has no extent
    counts as 1 if A's centre lies within B's range on it, else 0."""
    frac = 1.0
    for i in axes:
        length = a.hi[i] - a.lo[i]
        if length <= 0.0:
            if not b.lo[i] <= a.center[i] <= b.hi[i]:
                return 0.0
            continue
        frac *= _overlap_1d(a.lo[i], a.hi[i], b.lo[i], b.hi[i]) / length
        if frac == 0.0:
            return 0.0
    return frac


def _footprint_fraction(a: Box, b: Box) -> float:
    """Fraction of A's footprint (x-y) that lies over B's footprint."""
    return _fraction_inside(a, b, (0, 1))


def _ranked(a: Box, b: Box) -> bool:
    """Neither is a room, and A's level is not above B's (no furniture on an item)."""
    ra, rb = _RANK.get(a.level), _RANK.get(b.level)
    return ra is not None and rb is not None and ra <= rb


def on(a: Box, b: Box, config: RelationConfig) -> float:
    """Confidence that A rests on B (see the module table)."""
    if not _ranked(a, b):
        return 0.0
    gap = a.bottom - b.top
    if abs(gap) > config.on_gap_m or a.center[2] <= b.top - config.on_gap_m:
        return 0.0
    f = _footprint_fraction(a, b)
    if f < config.on_min_overlap:
        return 0.0
    return f * (1.0 - 0.5 * (gap / config.on_gap_m) ** 2)


def under(a: Box, b: Box, config: RelationConfig) -> float:
    """Confidence that A is under B (see the module table)."""
    if not _ranked(a, b):
        return 0.0
    f = _footprint_fraction(a, b)
    if f < config.under_min_overlap:
        return 0.0
    gap = b.bottom - a.top
    if -config.on_gap_m <= gap <= config.under_max_gap_m and a.center[2] < b.bottom:
        # wholly below B (up to noise)
        return f * (1.0 - 0.5 * max(0.0, gap) / config.under_max_gap_m)
    if (b.role == "surface" and a.top <= b.top - config.under_clearance_m
            and a.bottom >= b.bottom - config.on_gap_m):  # sheltered beneath a table top
        return f
    return 0.0


def in_(a: Box, b: Box, config: RelationConfig) -> float:
    """Confidence that A is in B (see the module table)."""
    if not _ranked(a, b) or b.role == "surface":
        return 0.0
    if any(a.size[i] > b.size[i] for i in range(3)) or a.size == b.size:
        return 0.0
    f = _fraction_inside(a, b, (0, 1, 2))
    return f if f >= config.in_min_fraction else 0.0


def contains(a: Box, b: Box, config: RelationConfig) -> float:
    """Confidence that A contains B: ``in_(b, a)``."""
    return in_(b, a, config)


def next_to(a: Box, b: Box, config: RelationConfig) -> float:
    """Confidence that A and B stand next to each other (symmetric)."""
    if a.level == "room" or b.level == "room":
        return 0.0
    if abs(a.bottom - b.bottom) > config.support_tol_m:
        return 0.0
    gx = max(0.0, max(a.lo[0], b.lo[0]) - min(a.hi[0], b.hi[0]))
    gy = max(0.0, max(a.lo[1], b.lo[1]) - min(a.hi[1], b.hi[1]))
    gap = math.hypot(gx, gy)
    if gap > config.next_to_gap_m:
        return 0.0
    if gap == 0.0 and max(_footprint_fraction(a, b), _footprint_fraction(b, a)) \
            > config.next_to_max_overlap:
        return 0.0
    return 1.0 - 0.5 * gap / config.next_to_gap_m


def near(a: Box, b: Box, config: RelationConfig) -> float:
    """Confidence that the centres of A and B are near (symmetric): ``1 - d / near_m``."""
    if a.level == "room" or b.level == "room":
        return 0.0
    d = math.dist(a.center, b.center)
    return 1.0 - d / config.near_m if d < config.near_m else 0.0


_DIRECTED = (("on", on), ("under", under), ("in", in_))
Key = tuple[int, str, int]


def pair_relations(ida: int, a: Box, idb: int, b: Box, config: RelationConfig
                   ) -> dict[Key, float]:
    """Every relation between two objects, keyed ``(subject, relation, object)``: directed
    relations both ways, symmetric ones once with the smaller id as subject."""
    out: dict[Key, float] = {}
    alo, ahi, blo, bhi = a.lo, a.hi, b.lo, b.hi
    # the directed relations all need the footprints to meet (a share of one over the other,
    # or a flat side's centre within the other's range): apart in x or y, none holds
    if not (ahi[0] < blo[0] or bhi[0] < alo[0] or ahi[1] < blo[1] or bhi[1] < alo[1]):
        for name, pred in _DIRECTED:
            c = pred(a, b, config)
            if c > 0.0:
                out[(ida, name, idb)] = c
            c = pred(b, a, config)
            if c > 0.0:
                out[(idb, name, ida)] = c
    lo, hi = (ida, idb) if ida < idb else (idb, ida)
    c = next_to(a, b, config)
    if c > 0.0:
        out[(lo, "next_to", hi)] = c
    c = near(a, b, config)
    if c > 0.0:
        out[(lo, "near", hi)] = c
    return out


def compute_relations(boxes: Mapping[int, Box], config: RelationConfig | None = None
                      ) -> dict[Key, float]:
    """Every relation among ``boxes``, from scratch (all pairs: O(n²)). The reference the
    incremental :class:`RelationIndex` must always agree with."""
    config = config or RelationConfig()
    ids = sorted(boxes)
    out: dict[Key, float] = {}
    for i, ida in enumerate(ids):
        for idb in ids[i + 1:]:
            out.update(pair_relations(ida, boxes[ida], idb, boxes[idb], config))
    return out
