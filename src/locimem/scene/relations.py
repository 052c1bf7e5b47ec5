"""Spatial relations between objects, from their boxes, kept up to date incrementally.

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

:class:`RelationIndex` keeps every relation between the objects it holds. ``update`` of one
object recomputes only the pairs that object is part of, against the candidates a box grid
returns near it, and returns what changed.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal

import numpy as np

from locimem.check import check_float, check_int, check_size, check_vec
from locimem.config import RelationConfig
from locimem.errors import InvalidInput, NotFound
from locimem.index.boxgrid import BoxGrid

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


# --------------------------------------------------------------------------------------------
# candidate pairs in bulk

_JOIN_CELL_M = 2.0  # the x-y cells the bulk join buckets boxes in (any size is exact)
_JOIN_MAX_CELLS = 64  # a box or reach over more cells is tested against every other box


def _reach_of(lo: np.ndarray, hi: np.ndarray, center: np.ndarray, config: RelationConfig
              ) -> tuple[np.ndarray, np.ndarray]:
    """Every box's reach (rows of :meth:`RelationIndex._reach`, the same floats)."""
    exy, ez, n = config.reach_xy_m, config.reach_z_m, config.near_m
    grow = np.array([exy, exy, ez])
    return np.minimum(lo - grow, center - n), np.maximum(hi + grow, center + n)


def _cells(x0: np.ndarray, x1: np.ndarray, y0: np.ndarray, y1: np.ndarray, rows: np.ndarray
           ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(row, cell x, cell y) for every cell of the given rows' cell ranges."""
    wx = x1[rows] - x0[rows] + 1
    counts = wx * (y1[rows] - y0[rows] + 1)
    owner = np.repeat(rows, counts)
    k = np.arange(int(counts.sum())) - np.repeat(np.cumsum(counts) - counts, counts)
    w = np.repeat(wx, counts)
    return owner, np.repeat(x0[rows], counts) + k % w, np.repeat(y0[rows], counts) + k // w


def _later_meeting_earlier(placed: Sequence[tuple[int, Box]], config: RelationConfig
                           ) -> tuple[list[int], list[int]]:
    """Positions ``(q, b)``, ``b < q``, in ``placed`` where box ``b`` meets (closed) the reach
    of box ``q``: the pairs sequential ``update`` calls examine, sorted by ``(q, b)``."""
    n = len(placed)
    if n < 2:
        return [], []
    lo = np.array([box.lo for _, box in placed])
    hi = np.array([box.hi for _, box in placed])
    rlo, rhi = _reach_of(lo, hi, np.array([box.center for _, box in placed]), config)
    inv = 1.0 / _JOIN_CELL_M
    cb = [np.floor(a * inv).astype(np.int64) for a in (lo[:, 0], hi[:, 0], lo[:, 1], hi[:, 1])]
    cq = [np.floor(a * inv).astype(np.int64) for a in (rlo[:, 0], rhi[:, 0], rlo[:, 1],
                                                       rhi[:, 1])]
    nb = (cb[1] - cb[0] + 1) * (cb[3] - cb[2] + 1)
    nq = (cq[1] - cq[0] + 1) * (cq[3] - cq[2] + 1)
    big_b, big_q = nb > _JOIN_MAX_CELLS, nq > _JOIN_MAX_CELLS
    bo, bx, by = _cells(cb[0], cb[1], cb[2], cb[3], np.flatnonzero(~big_b))
    qo, qx, qy = _cells(cq[0], cq[1], cq[2], cq[3], np.flatnonzero(~big_q))
    parts_q, parts_b = [], []
    if len(bo) and len(qo):
        x_min, y_min = min(bx.min(), qx.min()), min(by.min(), qy.min())
        span = max(by.max(), qy.max()) - y_min + 1
        bkey = (bx - x_min) * span + (by - y_min)
        qkey = (qx - x_min) * span + (qy - y_min)
        order = np.argsort(bkey, kind="stable")
        bkey, bo = bkey[order], bo[order]
        left = np.searchsorted(bkey, qkey, "left")
        count = np.searchsorted(bkey, qkey, "right") - left
        q = np.repeat(qo, count)
        b = bo[np.arange(int(count.sum())) + np.repeat(left - (np.cumsum(count) - count),
                                                       count)]
        keep = b < q
        parts_q.append(q[keep])
        parts_b.append(b[keep])
    everyone = np.arange(n)
    for r in np.flatnonzero(big_b):  # a huge box: every later reach may meet it
        parts_q.append(everyone[r + 1:])
        parts_b.append(np.full(n - r - 1, r))
    for r in np.flatnonzero(big_q):  # a huge reach: every earlier box may meet it
        parts_q.append(np.full(r, r))
        parts_b.append(everyone[:r])
    if not parts_q:
        return [], []
    code = np.unique(np.concatenate(parts_q).astype(np.int64) * n
                     + np.concatenate(parts_b).astype(np.int64))
    q, b = code // n, code % n
    meets = np.all((lo[b] <= rhi[q]) & (rlo[q] <= hi[b]), axis=1)
    return q[meets].tolist(), b[meets].tolist()


def _fractions(alo: np.ndarray, ahi: np.ndarray, ac: np.ndarray, blo: np.ndarray,
               bhi: np.ndarray, axes: Sequence[int]) -> np.ndarray:
    """:func:`_fraction_inside` of rows of boxes (the same products in the same order)."""
    frac = np.ones(len(alo))
    for i in axes:
        length = ahi[:, i] - alo[:, i]
        flat = length <= 0.0
        with np.errstate(divide="ignore", invalid="ignore"):
            part = np.maximum(0.0, np.minimum(ahi[:, i], bhi[:, i])
                              - np.maximum(alo[:, i], blo[:, i])) / length
        inside = (blo[:, i] <= ac[:, i]) & (ac[:, i] <= bhi[:, i])
        frac = frac * np.where(flat, np.where(inside, 1.0, 0.0), part)
    return frac


def _directed(a: dict[str, np.ndarray], b: dict[str, np.ndarray], config: RelationConfig
              ) -> list[tuple[str, np.ndarray, np.ndarray]]:
    """``(relation, holds, confidence)`` of ``on``, ``under`` and ``in_`` for rows of pairs
    (A, B): the module's predicates, vectorised with the same operations in the same order
    (the one power is taken in Python, as ``on`` takes it)."""
    cfg = config
    ranked = a["rank"] <= b["rank"]
    foot = _fractions(a["lo"], a["hi"], a["c"], b["lo"], b["hi"], (0, 1))
    out = []
    # on
    gap = a["lo"][:, 2] - b["hi"][:, 2]
    holds = ranked & ~((np.abs(gap) > cfg.on_gap_m)
                       | (a["c"][:, 2] <= b["hi"][:, 2] - cfg.on_gap_m)) \
        & ~(foot < cfg.on_min_overlap)
    conf = np.zeros(len(gap))
    if holds.any():
        square = np.array([(g / cfg.on_gap_m) ** 2 for g in gap[holds].tolist()])
        conf[holds] = foot[holds] * (1.0 - 0.5 * square)
    out.append(("on", holds, conf))
    # under
    gap = b["lo"][:, 2] - a["hi"][:, 2]
    below = (-cfg.on_gap_m <= gap) & (gap <= cfg.under_max_gap_m) & (a["c"][:, 2] < b["lo"][:, 2])
    shelter = b["surface"] & (a["hi"][:, 2] <= b["hi"][:, 2] - cfg.under_clearance_m) \
        & (a["lo"][:, 2] >= b["lo"][:, 2] - cfg.on_gap_m)
    fits = ranked & ~(foot < cfg.under_min_overlap)
    conf = np.where(below, foot * (1.0 - 0.5 * np.maximum(0.0, gap) / cfg.under_max_gap_m),
                    foot)
    out.append(("under", fits & (below | shelter), conf))
    # in
    holds = ranked & ~b["surface"] & ~(np.any(a["s"] > b["s"], axis=1)
                                       | np.all(a["s"] == b["s"], axis=1))
    frac = _fractions(a["lo"], a["hi"], a["c"], b["lo"], b["hi"], (0, 1, 2))
    out.append(("in", holds & (frac >= cfg.in_min_fraction), frac))
    return out


def _bulk_relations(placed: Sequence[tuple[int, Box]], config: RelationConfig
                    ) -> list[tuple[Key, float]]:
    """Every relation :func:`pair_relations` gives for the pairs ``update`` calls would
    examine, inserting ``placed`` in order (none a room): the same keys and confidences."""
    q, b = _later_meeting_earlier(placed, config)
    if not q:
        return []
    cfg = config
    ids = np.array([oid for oid, _ in placed])
    boxes = [box for _, box in placed]
    table = {"lo": np.array([x.lo for x in boxes]), "hi": np.array([x.hi for x in boxes]),
             "c": np.array([x.center for x in boxes]), "s": np.array([x.size for x in boxes]),
             "rank": np.array([_RANK[x.level] for x in boxes]),
             "surface": np.array([x.role == "surface" for x in boxes])}
    qa, ba = np.array(q), np.array(b)
    later = {k: v[qa] for k, v in table.items()}  # "a" of pair_relations (the one updated)
    earlier = {k: v[ba] for k, v in table.items()}
    ida, idb = ids[qa], ids[ba]
    found: list[tuple[np.ndarray, str, np.ndarray, np.ndarray]] = []  # subject, rel, object, c
    there = _directed(later, earlier, cfg)
    back = _directed(earlier, later, cfg)
    for (name, holds, conf), (_, holds_back, conf_back) in zip(there, back, strict=True):
        found.append((ida[holds], name, idb[holds], conf[holds]))
        found.append((idb[holds_back], name, ida[holds_back], conf_back[holds_back]))
    low, high = np.minimum(ida, idb), np.maximum(ida, idb)
    # next_to (symmetric: the smaller id first)
    alo, ahi, blo, bhi = later["lo"], later["hi"], earlier["lo"], earlier["hi"]
    level = np.abs(alo[:, 2] - blo[:, 2]) <= cfg.support_tol_m
    gx = np.maximum(0.0, np.maximum(alo[:, 0], blo[:, 0]) - np.minimum(ahi[:, 0], bhi[:, 0]))
    gy = np.maximum(0.0, np.maximum(alo[:, 1], blo[:, 1]) - np.minimum(ahi[:, 1], bhi[:, 1]))
    gap = np.full(len(gx), math.inf)
    gap[level] = list(map(math.hypot, gx[level].tolist(), gy[level].tolist()))
    overlapping = (gap == 0.0) & (np.maximum(
        _fractions(alo, ahi, later["c"], blo, bhi, (0, 1)),
        _fractions(blo, bhi, earlier["c"], alo, ahi, (0, 1))) > cfg.next_to_max_overlap)
    holds = level & (gap <= cfg.next_to_gap_m) & ~overlapping
    conf = 1.0 - 0.5 * np.where(holds, gap, 0.0) / cfg.next_to_gap_m
    found.append((low[holds], "next_to", high[holds], conf[holds]))
    # near
    d = np.array(list(map(math.dist, later["c"].tolist(), earlier["c"].tolist())))
    holds = d < cfg.near_m
    found.append((low[holds], "near", high[holds], (1.0 - d / cfg.near_m)[holds]))
    out: list[tuple[Key, float]] = []
    for subjects, name, objects, confs in found:
        kept = confs > 0.0  # as pair_relations keeps them
        subjects, objects, confs = subjects[kept], objects[kept], confs[kept]
        out.extend(((s, name, o), c) for s, o, c in zip(subjects.tolist(), objects.tolist(),
                                                       confs.tolist(), strict=True))
    return out


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
