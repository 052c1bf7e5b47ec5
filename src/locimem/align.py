"""Aligning two map frames by what does not move: a consensus fit of yaw and translation.

:func:`align_landmarks` takes the large, stable objects of a new SLAM session's frame and of
the memory's, and finds the 4-DoF rigid transform (a rotation about z, gravity being shared,
and a translation) that maps the first onto the second. Hypotheses come from pairs of
label- and size-compatible correspondences (two points fix yaw and translation); each is
scored by the one-to-one matches it explains within ``inlier_m``; the best is refined by
weighted least squares over its inliers. It refuses — ``ok`` False, with the reason — when
too few landmarks agree, when the residual is large, and when a materially different
transform explains nearly as much (two identical rooms, one table, a square of chairs):
a memory that guesses a frame corrupts every identity it then matches.
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

_SEEDS = 8  # hypotheses come from pairs of this many heaviest landmarks
_MAX_HYPOTHESES = 400  # and are at most this many
_MIN_BASELINE_M = 0.5  # two landmarks closer than this fix no yaw


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
    refused. Raises :class:`~locimem.errors.InvalidInput` on a setting out of range, or a
    landmark whose centre or size is not three finite numbers or, in ``new``, whose weight
    is not finite and > 0.
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
    p, _ = _boxes(new, "new")
    q, _ = _boxes(old, "old")
    w = np.array([lm.weight for lm in new], dtype=float)
    if not np.all(np.isfinite(w) & (w > 0.0)):
        raise InvalidInput("new landmarks' weights must be finite and > 0")
    cands = [(i, j) for i, a in enumerate(new) for j, b in enumerate(old)
             if a.label == b.label and _sizes_match(a.size, b.size, size_ratio)]
    if len({i for i, _ in cands}) < min_inliers:
        return _refused(f"only {len({i for i, _ in cands})} landmarks of this frame have a "
                        f"counterpart of the same label and size (needs {min_inliers})")
    compatible = np.zeros((len(new), len(old)), dtype=bool)
    for i, j in cands:
        compatible[i, j] = True
    by_new: dict[int, list[int]] = {}
    for i, j in cands:
        by_new.setdefault(i, []).append(j)
    # hypotheses rest on the heaviest landmarks with a counterpart (big, often seen)
    heavy = sorted(by_new, key=lambda i: (-new[i].weight * _volume(new[i].size), i))
    heavy = heavy[:_SEEDS]
    hypotheses: list[tuple[float, np.ndarray, list[tuple[int, int]]]] = []
    for i1, i2 in itertools.combinations(heavy, 2):
        dp = p[i2, :2] - p[i1, :2]
        lp = math.hypot(*dp)
        if lp < _MIN_BASELINE_M:
            continue
        js1, js2 = np.array(by_new[i1]), np.array(by_new[i2])
        dq = q[js2, None, :2] - q[None, js1, :2]  # (j2, j1) offsets in the stored frame
        lq = np.hypot(dq[..., 0], dq[..., 1])
        for a, b in np.argwhere(np.abs(lq - lp) <= inlier_m):
            j1, j2 = int(js1[b]), int(js2[a])
            if j1 == j2:
                continue
            yaw = math.atan2(dq[a, b, 1], dq[a, b, 0]) - math.atan2(dp[1], dp[0])
            matrix = _yaw_matrix(yaw, p[[i1, i2]], q[[j1, j2]])
            score, pairs = _score(matrix, p, q, w, compatible, inlier_m)
            hypotheses.append((score, matrix, pairs))
            if len(hypotheses) >= _MAX_HYPOTHESES:
                break
        if len(hypotheses) >= _MAX_HYPOTHESES:
            break
    if not hypotheses:
        return _refused("no two landmarks of this frame are far enough apart and matched at "
                        "the same distance in the memory")
    hypotheses.sort(key=lambda h: -h[0])
    best_score, matrix, pairs = hypotheses[0]
    for _ in range(2):  # refine on the inliers, then match again
        matrix = _refit(p, q, w, pairs)
        best_score, pairs = _score(matrix, p, q, w, compatible, inlier_m)
    if len(pairs) < min_inliers:
        return _refused(f"only {len(pairs)} landmarks agree on one transform "
                        f"(needs {min_inliers})")
    for score, other, _ in hypotheses[1:]:
        if score < ambiguity * best_score:
            break
        if _differs(matrix, other, inlier_m):
            yaw, t = yaw_of(other), other[:3, 3]
            return _refused(f"ambiguous: another transform (yaw {yaw:.1f} deg, t=({t[0]:.2f}, "
                            f"{t[1]:.2f}, {t[2]:.2f}) m) explains {score:.0f} of "
                            f"{best_score:.0f} landmark weight nearly as well")
    moved = p[[i for i, _ in pairs]] @ matrix[:3, :3].T + matrix[:3, 3]
    dist = np.linalg.norm(moved - q[[j for _, j in pairs]], axis=1)
    weights = w[[i for i, _ in pairs]]
    residual = float(math.sqrt(np.sum(weights * dist ** 2) / np.sum(weights)))
    if residual > max_residual_m:
        return _refused(f"residual {residual:.3f} m above {max_residual_m} m over "
                        f"{len(pairs)} landmarks")
    keyed = tuple(sorted((new[i].key, old[j].key) for i, j in pairs))
    t = matrix[:3, 3]
    return Alignment(True, matrix, yaw_of(matrix), (float(t[0]), float(t[1]), float(t[2])),
                     residual, keyed, f"aligned on {len(keyed)} landmarks, residual "
                                      f"{residual:.3f} m")


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


def _sizes_match(a: Sequence[float], b: Sequence[float], ratio: float) -> bool:
    """Extents within ``ratio`` of each other (xy sorted: a yaw swaps a box's x and y)."""
    ea = (*sorted(a[:2]), a[2])
    eb = (*sorted(b[:2]), b[2])
    return all(max(x, y) <= ratio * max(min(x, y), 1e-3) for x, y in zip(ea, eb, strict=True))


def _volume(size: Sequence[float]) -> float:
    return max(size[0], 0.05) * max(size[1], 0.05) * max(size[2], 0.05)


def _yaw_matrix(yaw: float, p: np.ndarray, q: np.ndarray) -> np.ndarray:
    """The transform rotating by ``yaw`` about z that maps the mean of ``p`` onto ``q``'s."""
    c, s = math.cos(yaw), math.sin(yaw)
    rot = np.array([[c, -s, 0.0], [s, c, 0.0], [0.0, 0.0, 1.0]])
    t = q.mean(axis=0) - rot @ p.mean(axis=0)
    return yaw_transform(math.degrees(yaw), float(t[0]), float(t[1]), float(t[2]))


def _score(matrix: np.ndarray, p: np.ndarray, q: np.ndarray, w: np.ndarray,
           compatible: np.ndarray, inlier_m: float) -> tuple[float, list[tuple[int, int]]]:
    """One-to-one matches within ``inlier_m`` (nearest first) and their summed weight."""
    moved = p @ matrix[:3, :3].T + matrix[:3, 3]
    d2 = ((moved[:, None, :] - q[None, :, :]) ** 2).sum(axis=2)
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


def _differs(a: np.ndarray, b: np.ndarray, inlier_m: float) -> bool:
    turn = abs((yaw_of(a) - yaw_of(b) + 180.0) % 360.0 - 180.0)
    return turn > 5.0 or float(np.linalg.norm(a[:3, 3] - b[:3, 3])) > 2 * inlier_m
