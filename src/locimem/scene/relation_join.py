"""The relations of a whole map at once: candidate pairs bucketed by x-y cell, and the
predicates of :mod:`locimem.scene.predicates` vectorised over them (the same confidences,
tested against the pair-at-a-time rules)."""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np

from locimem.config import RelationConfig
from locimem.scene.predicates import _RANK, Box, Key

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
