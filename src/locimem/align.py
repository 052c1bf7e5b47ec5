"""Aligning two map frames by what does not move: a consensus fit of yaw and translation.

:func:`align_landmarks` takes the large, stable objects of a new SLAM session's frame and of
the memory's, and finds the 4-DoF rigid transform (a rotation about z, gravity being shared,
and a translation) that maps the first onto the second. Hypotheses come from pairs of
label- and size-compatible correspondences among the heaviest landmarks (two points fix yaw
and translation): at most a fixed number, shared evenly among the seed pairs so that no
pair starves, each pair's best-agreeing distances first. All are ranked in one vectorised
pass by a cheap score — the weight of the new landmarks a hypothesis moves within
``inlier_m`` of a stored one of their label — which bounds the exact score from above; only
the few best distinct ones are scored exactly (one-to-one matches within ``inlier_m``) and
refined by weighted least squares over their inliers, so the search stays bounded however
many landmarks look alike (a lattice of identical chairs is the worst case). It refuses —
``ok`` False, with the reason — when too few landmarks agree, when the residual is large,
and when a materially different transform, refined too, explains nearly as much (two
identical rooms, one table, a square of chairs): a memory that guesses a frame corrupts
every identity it then matches.
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from locimem.check import check_float, check_int, check_positive
from locimem.errors import InvalidInput
from locimem.frames import yaw_of, yaw_transform

__all__ = ["Alignment", "Landmark", "align_landmarks"]

_SEEDS = 14  # hypotheses come from pairs of this many heaviest landmarks
_MAX_HYPOTHESES = 2000  # and are at most this many, shared evenly among the pairs
_FINALISTS = 8  # at most this many distinct hypotheses are scored exactly and refined
_MAX_CELLS = 1 << 18  # the cheap score's grid has at most this many cells
_MIN_BASELINE_M = 0.5  # two landmarks closer than this fix no yaw
_DIFFERENT_DEG = 5.0  # transforms this far apart in yaw (or 2 inlier_m apart) differ


@dataclass(frozen=True, slots=True)
class Landmark:
    """An object alignment may rest on: its id, label, box centre and size, and weight."""

    key: int
    label: str
    center: tuple[float, float, float]
    size: tuple[float, float, float]
    weight: float = 1.0


@dataclass(frozen=True, slots=True)
class Alignment:
    """The fit: ``transform`` (4x4) maps the new frame's coordinates into the old frame's;
    ``inliers`` are (new key, old key) pairs; ``reason`` says why not, or sums it up."""

    ok: bool
    transform: np.ndarray | None
    yaw_deg: float | None
    translation: tuple[float, float, float] | None
    residual_m: float | None
    inliers: tuple[tuple[int, int], ...]
    reason: str


def align_landmarks(new: Sequence[Landmark], old: Sequence[Landmark], *,
                    inlier_m: float = 0.15, min_inliers: int = 4,
                    max_residual_m: float = 0.05, size_ratio: float = 1.6,
                    ambiguity: float = 0.8) -> Alignment:
    """The transform taking ``new`` landmarks onto ``old`` ones, or why there is none.

    ``inlier_m`` is how near its counterpart a moved landmark must come, ``min_inliers`` how
    many must agree, ``max_residual_m`` the largest weighted RMS distance of the fit,
    ``size_ratio`` how much a counterpart's extents may differ, and ``ambiguity`` the share
    of the fit's landmark weight a different transform may explain before the fit is
    refused. However alike the landmarks, at most :data:`_MAX_HYPOTHESES` hypotheses are
    ranked and :data:`_FINALISTS` scored exactly. Raises
    :class:`~locimem.errors.InvalidInput` on a setting out of range, or a landmark whose
    centre or size is not three finite numbers or, in ``new``, whose weight is not finite
    and > 0.
    """
    inlier_m = check_positive(inlier_m, "inlier_m")
    min_inliers = check_int(min_inliers, "min_inliers", lo=2)  # two points fix a transform
    max_residual_m = check_positive(max_residual_m, "max_residual_m")
    size_ratio = check_float(size_ratio, "size_ratio")
    if size_ratio < 1.0:
        raise InvalidInput(f"size_ratio must be >= 1, got {size_ratio}")
    ambiguity = check_float(ambiguity, "ambiguity")
    if not 0.0 < ambiguity <= 1.0:
        raise InvalidInput(f"ambiguity must be in (0, 1], got {ambiguity}")
    p, new_size = _boxes(new, "new")
    q, old_size = _boxes(old, "old")
    w = np.array([lm.weight for lm in new], dtype=float)
    if not np.all(np.isfinite(w) & (w > 0.0)):
        raise InvalidInput("new landmarks' weights must be finite and > 0")
    codes: dict[str, int] = {}
    new_label = np.array([codes.setdefault(lm.label, len(codes)) for lm in new], dtype=int)
    old_label = np.array([codes.get(lm.label, -1) for lm in old], dtype=int)
    compatible = _compatible(new_label, old_label, new_size, old_size, size_ratio)
    matched = np.flatnonzero(compatible.any(axis=1))
    if len(matched) < min_inliers:
        return _refused(f"only {len(matched)} landmarks of this frame have a counterpart "
                        f"of the same label and size (needs {min_inliers})")
    # hypotheses rest on the heaviest landmarks with a counterpart (big, often seen)
    mass = w * np.prod(np.maximum(new_size, 0.05), axis=1)
    seeds = matched[np.lexsort((matched, -mass[matched]))][:_SEEDS]
    i1, i2, j1, j2 = _hypotheses(p, q, compatible, seeds, inlier_m)
    if len(i1) == 0:
        return _refused("no two landmarks of this frame are far enough apart and matched at "
                        "the same distance in the memory")
    yaw, t = _seed_transforms(p, q, i1, i2, j1, j2)
    rough = _rough_scores(yaw, t, p, q, w, new_label, old_label, matched, inlier_m)
    finalists = _finalists(yaw, t, rough, p, q, w, compatible, inlier_m, ambiguity)
    best_score, matrix, pairs = max(finalists, key=lambda f: f[0])  # the first on ties
    if len(pairs) < min_inliers:
        return _refused(f"only {len(pairs)} landmarks agree on one transform "
                        f"(needs {min_inliers})")
    # the best refined transform that differs from the fit's is its rival
    apart = _differs(matrix, np.array([yaw_of(f[1]) for f in finalists]),
                     np.array([f[1][:3, 3] for f in finalists]), inlier_m)
    rivals = [f for f, far in zip(finalists, apart, strict=True) if far]
    if rivals:
        score, other, _ = max(rivals, key=lambda f: f[0])
        if score >= ambiguity * best_score:
            yaw_deg, shift = yaw_of(other), other[:3, 3]
            return _refused(f"ambiguous: another transform (yaw {yaw_deg:.1f} deg, "
                            f"t=({shift[0]:.2f}, {shift[1]:.2f}, {shift[2]:.2f}) m) explains "
                            f"{score:.0f} of {best_score:.0f} landmark weight nearly as well")
    moved = p[[i for i, _ in pairs]] @ matrix[:3, :3].T + matrix[:3, 3]
    dist = np.linalg.norm(moved - q[[j for _, j in pairs]], axis=1)
    weights = w[[i for i, _ in pairs]]
    residual = float(math.sqrt(np.sum(weights * dist ** 2) / np.sum(weights)))
    if residual > max_residual_m:
        return _refused(f"residual {residual:.3f} m above {max_residual_m} m over "
                        f"{len(pairs)} landmarks")
    keyed = tuple(sorted((new[i].key, old[j].key) for i, j in pairs))
    shift = matrix[:3, 3]
    return Alignment(True, matrix, yaw_of(matrix),
                     (float(shift[0]), float(shift[1]), float(shift[2])), residual, keyed,
                     f"aligned on {len(keyed)} landmarks, residual {residual:.3f} m")


def _refused(reason: str) -> Alignment:
    return Alignment(False, None, None, None, None, (), reason)


def _boxes(marks: Sequence[Landmark], name: str) -> tuple[np.ndarray, np.ndarray]:
    """Centres and sizes, shape (n, 3) each; InvalidInput unless three finite numbers."""
    if not marks:
        return np.empty((0, 3)), np.empty((0, 3))
    try:
        centers = np.array([lm.center for lm in marks], dtype=float)
        sizes = np.array([lm.size for lm in marks], dtype=float)
    except (TypeError, ValueError):  # ragged, or not numbers
        centers = sizes = np.empty(0)
    if centers.shape != (len(marks), 3) or sizes.shape != (len(marks), 3):
        raise InvalidInput(f"{name} landmarks' centres and sizes must be three numbers each")
    if not (np.isfinite(centers).all() and np.isfinite(sizes).all()):
        raise InvalidInput(f"{name} landmarks' centres and sizes must be finite")
    return centers, sizes


def _compatible(new_label: np.ndarray, old_label: np.ndarray, new_size: np.ndarray,
                old_size: np.ndarray, ratio: float) -> np.ndarray:
    """(n, m): the same label, and extents within ``ratio`` of each other (xy sorted: a yaw
    swaps a box's x and y)."""
    a = np.column_stack([np.sort(new_size[:, :2], axis=1), new_size[:, 2]])[:, None, :]
    b = np.column_stack([np.sort(old_size[:, :2], axis=1), old_size[:, 2]])[None, :, :]
    fits = np.all(np.maximum(a, b) <= ratio * np.maximum(np.minimum(a, b), 1e-3), axis=2)
    return (new_label[:, None] == old_label[None, :]) & fits


def _hypotheses(p: np.ndarray, q: np.ndarray, compatible: np.ndarray, seeds: np.ndarray,
                inlier_m: float) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """Correspondences (i1, i2) -> (j1, j2) of two seeds to two stored landmarks at their
    distance apart, within ``inlier_m``: at most :data:`_MAX_HYPOTHESES`, shared evenly
    among the seed pairs (what a pair with fewer leaves goes to the others), each pair's
    closest distances first.

    The stored landmarks any seed may match are paired once and sorted by distance, so each
    seed pair looks up only the stored pairs at its own distance; all in one numpy pass."""
    ends = np.flatnonzero(compatible[seeds].any(axis=0))
    a, b = np.triu_indices(len(ends), k=1)
    a, b = ends[a], ends[b]
    d2 = np.sum((q[a, :2] - q[b, :2]) ** 2, axis=1)
    by_distance = np.argsort(d2)
    a, b, d2 = a[by_distance], b[by_distance], d2[by_distance]
    first, second = np.triu_indices(len(seeds), k=1)  # the seed pairs, heaviest first
    s1, s2 = seeds[first], seeds[second]
    lp = np.hypot(p[s2, 0] - p[s1, 0], p[s2, 1] - p[s1, 1])
    lo = np.searchsorted(d2, np.maximum(lp - inlier_m, 0.0) ** 2, side="left")
    hi = np.searchsorted(d2, (lp + inlier_m) ** 2, side="right")
    count = np.where(lp >= _MIN_BASELINE_M, hi - lo, 0)  # closer seeds fix no yaw
    pair = np.repeat(np.arange(len(lp)), count)  # each stored pair in a seed pair's window
    at = np.arange(len(pair)) + np.repeat(lo - np.cumsum(count) + count, count)
    wa, wb = a[at], b[at]
    gap = np.abs(np.sqrt(d2[at]) - lp[pair])  # at most inlier_m: the window
    forward = compatible[s1[pair], wa] & compatible[s2[pair], wb]  # s1 -> a, s2 -> b
    backward = compatible[s1[pair], wb] & compatible[s2[pair], wa]  # s1 -> b, s2 -> a
    pair = np.concatenate([pair[forward], pair[backward]])
    j1 = np.concatenate([wa[forward], wb[backward]])
    j2 = np.concatenate([wb[forward], wa[backward]])
    gap = np.concatenate([gap[forward], gap[backward]])
    order = np.lexsort((gap, pair))  # by seed pair, heaviest first; closest distance first
    pair, j1, j2 = pair[order], j1[order], j2[order]
    per_pair = np.bincount(pair, minlength=len(lp))
    rank = np.arange(len(pair)) - np.repeat(np.cumsum(per_pair) - per_pair, per_pair)
    kept = np.flatnonzero(rank < _share(per_pair[per_pair > 0].tolist(), _MAX_HYPOTHESES))
    return s1[pair[kept]], s2[pair[kept]], j1[kept], j2[kept]


def _share(counts: Sequence[int], cap: int) -> int:
    """How many hypotheses each seed pair may keep so that together they keep at most
    ``cap``: a pair with fewer keeps them all and leaves the rest to the others.

    >>> _share([3, 50, 50], 60), _share([3, 5], 60)
    (28, 5)
    """
    left = cap
    for k, count in enumerate(sorted(counts)):
        share = left // (len(counts) - k)
        if count > share:
            return share
        left -= count
    return max(counts, default=0)


def _seed_transforms(p: np.ndarray, q: np.ndarray, i1: np.ndarray, i2: np.ndarray,
                     j1: np.ndarray, j2: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Each hypothesis's yaw (radians) and translation (H, 3): the rotation turning the
    direction p[i1] -> p[i2] onto q[j1] -> q[j2], then the shift mapping the mean of the two
    new points onto the mean of the two stored ones."""
    dp, dq = p[i2] - p[i1], q[j2] - q[j1]
    yaw = np.arctan2(dq[:, 1], dq[:, 0]) - np.arctan2(dp[:, 1], dp[:, 0])
    c, s = np.cos(yaw), np.sin(yaw)
    pm, qm = (p[i1] + p[i2]) / 2, (q[j1] + q[j2]) / 2
    t = np.column_stack([qm[:, 0] - (c * pm[:, 0] - s * pm[:, 1]),
                         qm[:, 1] - (s * pm[:, 0] + c * pm[:, 1]), qm[:, 2] - pm[:, 2]])
    return yaw, t


def _rough_scores(yaw: np.ndarray, t: np.ndarray, p: np.ndarray, q: np.ndarray,
                  w: np.ndarray, new_label: np.ndarray, old_label: np.ndarray,
                  rows: np.ndarray, inlier_m: float) -> np.ndarray:
    """Every hypothesis's cheap score, in one pass: the weight of the new landmarks ``rows``
    it moves within ``inlier_m`` of a stored landmark of their label. Sizes and one-to-one
    are left to the exact score, so this is never below it.

    A grid of square cells at least ``inlier_m`` wide (wider on a large map: at most
    :data:`_MAX_CELLS` of them) lists each stored landmark in every cell its ``inlier_m``
    disc reaches, so a moved point looks in its own cell only."""
    origin = q[:, :2].min(axis=0) - inlier_m
    extent = q[:, :2].max(axis=0) + inlier_m - origin
    cell = max(inlier_m, math.sqrt(float(extent[0] * extent[1]) / _MAX_CELLS))
    nx, ny = (int(v) + 1 for v in np.floor(extent / cell))
    first = np.floor((q[:, :2] - inlier_m - origin) / cell).astype(int)
    last = np.floor((q[:, :2] + inlier_m - origin) / cell).astype(int)
    cells, owners = [], []
    for dx, dy in itertools.product(range(3), repeat=2):  # a disc reaches 3 x 3 cells at most
        reach = (first[:, 0] + dx <= last[:, 0]) & (first[:, 1] + dy <= last[:, 1])
        cells.append((first[reach, 0] + dx) * ny + first[reach, 1] + dy)
        owners.append(np.flatnonzero(reach))
    listed = np.concatenate(cells)
    by_cell = np.argsort(listed, kind="stable")
    owner = np.concatenate(owners)[by_cell]
    count = np.bincount(listed, minlength=nx * ny)
    start = np.cumsum(count) - count
    # every row moved by every hypothesis, flattened (hypothesis-major)
    c, s = np.cos(yaw)[:, None], np.sin(yaw)[:, None]
    px, py, pz = p[rows, 0], p[rows, 1], p[rows, 2]
    mx = (c * px - s * py + t[:, 0:1]).ravel()
    my = (s * px + c * py + t[:, 1:2]).ravel()
    mz = (pz + t[:, 2:3]).ravel()
    ix = np.floor((mx - origin[0]) / cell).astype(int)
    iy = np.floor((my - origin[1]) / cell).astype(int)
    inside = np.flatnonzero((ix >= 0) & (ix < nx) & (iy >= 0) & (iy < ny))
    home = ix[inside] * ny + iy[inside]
    looks = count[home]
    point = np.repeat(inside, looks)  # each moved point against each landmark of its cell
    j = owner[np.arange(len(point)) + np.repeat(start[home] - np.cumsum(looks) + looks, looks)]
    i = rows[point % len(rows)]
    d2 = (mx[point] - q[j, 0]) ** 2 + (my[point] - q[j, 1]) ** 2 + (mz[point] - q[j, 2]) ** 2
    hit = np.zeros(len(mx), dtype=bool)
    hit[point[(d2 <= inlier_m * inlier_m) & (new_label[i] == old_label[j])]] = True
    return hit.reshape(len(yaw), len(rows)) @ w[rows]


def _finalists(yaw: np.ndarray, t: np.ndarray, rough: np.ndarray, p: np.ndarray,
               q: np.ndarray, w: np.ndarray, compatible: np.ndarray, inlier_m: float,
               ambiguity: float) -> list[tuple[float, np.ndarray, list[tuple[int, int]]]]:
    """The best hypotheses by cheap score that differ from one another, each scored exactly
    and refined: (score, transform, pairs). The search stops after :data:`_FINALISTS`, or
    when the next cheap score falls below ``ambiguity`` times the best refined score: as a
    cheap score bounds its hypothesis's exact one, none left explains enough to win or to
    rival the winner."""
    degrees = np.degrees(yaw)
    order = np.argsort(-rough, kind="stable")
    alive = np.ones(len(order), dtype=bool)
    out: list[tuple[float, np.ndarray, list[tuple[int, int]]]] = []
    for _ in range(_FINALISTS):
        live = order[alive[order]]
        if len(live) == 0 or (out and rough[live[0]] < ambiguity * max(f[0] for f in out)):
            break
        h = int(live[0])
        seed = yaw_transform(float(degrees[h]), float(t[h, 0]), float(t[h, 1]),
                             float(t[h, 2]))
        score, pairs = _score(seed, p, q, w, compatible, inlier_m)
        matrix = seed
        for _ in range(2):  # refine on the inliers, then match again
            if len(pairs) < 2:  # one landmark fixes no yaw: keep the seed's
                break
            matrix = _refit(p, q, w, pairs)
            score, pairs = _score(matrix, p, q, w, compatible, inlier_m)
        out.append((score, matrix, pairs))
        # what the seed or its refinement already stands for is not tried again
        alive &= (_differs(seed, degrees, t, inlier_m)
                  & _differs(matrix, degrees, t, inlier_m))
    return out


def _score(matrix: np.ndarray, p: np.ndarray, q: np.ndarray, w: np.ndarray,
           compatible: np.ndarray, inlier_m: float) -> tuple[float, list[tuple[int, int]]]:
    """One-to-one matches within ``inlier_m`` (nearest first) and their summed weight."""
    moved = p @ matrix[:3, :3].T + matrix[:3, 3]
    d2 = ((moved[:, None, 0] - q[None, :, 0]) ** 2 + (moved[:, None, 1] - q[None, :, 1]) ** 2
          + (moved[:, None, 2] - q[None, :, 2]) ** 2)
    close = np.argwhere(compatible & (d2 <= inlier_m * inlier_m))
    if len(close) == 0:
        return 0.0, []
    order = np.argsort(d2[close[:, 0], close[:, 1]], kind="stable")
    used_i: set[int] = set()
    used_j: set[int] = set()
    pairs = []
    for k in order:
        i, j = int(close[k, 0]), int(close[k, 1])
        if i in used_i or j in used_j:
            continue
        used_i.add(i)
        used_j.add(j)
        pairs.append((i, j))
    return float(sum(w[i] for i, _ in pairs)), sorted(pairs)


def _refit(p: np.ndarray, q: np.ndarray, w: np.ndarray, pairs: list[tuple[int, int]]
           ) -> np.ndarray:
    """Weighted least squares of a yaw and translation over ``pairs`` (2D Procrustes)."""
    a = p[[i for i, _ in pairs]]
    b = q[[j for _, j in pairs]]
    ww = w[[i for i, _ in pairs]]
    ca = np.average(a, axis=0, weights=ww)
    cb = np.average(b, axis=0, weights=ww)
    da, db = a[:, :2] - ca[:2], b[:, :2] - cb[:2]
    sxx = float(np.sum(ww * (da[:, 0] * db[:, 0] + da[:, 1] * db[:, 1])))
    sxy = float(np.sum(ww * (da[:, 0] * db[:, 1] - da[:, 1] * db[:, 0])))
    yaw = math.atan2(sxy, sxx)
    c, s = math.cos(yaw), math.sin(yaw)
    rot = np.array([[c, -s, 0.0], [s, c, 0.0], [0.0, 0.0, 1.0]])
    t = cb - rot @ ca
    return yaw_transform(math.degrees(yaw), float(t[0]), float(t[1]), float(t[2]))


def _differs(matrix: np.ndarray, yaw_deg: np.ndarray, t: np.ndarray, inlier_m: float
             ) -> np.ndarray:
    """Which of the transforms (yaws in degrees, translations (k, 3)) differ materially from
    ``matrix``: turned more than :data:`_DIFFERENT_DEG` or shifted more than 2 inlier_m."""
    turn = np.abs((yaw_of(matrix) - yaw_deg + 180.0) % 360.0 - 180.0)
    return (turn > _DIFFERENT_DEG) | (np.linalg.norm(t - matrix[:3, 3], axis=1) > 2 * inlier_m)
