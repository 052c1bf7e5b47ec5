"""CLEAR-MOT and identity (IDF1) metrics on :func:`scipy.optimize.linear_sum_assignment`.

The semantics are those of ``motmetrics`` 1.4 (``MOTAccumulator`` + ``metrics.summarize``),
reproduced to the digit:

- **Per frame** (Bernardin & Stiefelhagen 2008, as motmetrics implements it):

  1. every object whose previous partner hypothesis is present again, at a finite distance,
     keeps it (a ``MATCH``), objects taken in the order given;
  2. the remaining objects and hypotheses are matched by a min-cost assignment on the
     distances; a pair whose object was last paired with another hypothesis is a ``SWITCH``
     (if the object was seen within ``max_switch_time`` frames), otherwise a ``MATCH``;
  3. unmatched objects are ``MISS`` es, unmatched hypotheses ``FP`` s.

  Distances that are NaN (or beyond the gate) never pair. Ties in the assignment are broken as
  motmetrics breaks them with its scipy solver: non-edges are replaced by the same large
  constant before solving.
- **Identity** (Ristani et al. 2016): one global bipartite matching between object and
  hypothesis *trajectories*, where a pair's true positives are the frames in which both are
  present at a finite distance. ``IDF1 = 2 IDTP / (objects + predictions)``.
- ``MOTA = 1 - (misses + switches + false positives) / objects``;
  ``MOTP`` = mean distance over matches and switches (metres here: see below). Divisions by
  zero give ``nan`` (0 / 0) or ``±inf``, as numpy's ``true_divide`` does.

Units: the helpers below use **Euclidean distance in metres** between 3D centres in one frame
of reference, gated at ``threshold_m`` (a pair at exactly the threshold may pair). motmetrics'
own helper ``norm2squared_matrix`` returns *squared* distances; to compare, give motmetrics the
matrix from :func:`distance_matrix`.

    >>> acc = MotAccumulator()
    >>> acc.update([1, 2], [10, 20], [[0.1, np.nan], [np.nan, 0.2]])
    >>> acc.update([1, 2], [10, 30], [[0.1, np.nan], [np.nan, 0.3]])   # object 2 -> new id 30
    >>> s = acc.summary()
    >>> s.num_switches, s.mota, round(s.idf1, 4)
    (1, 0.75, 0.75)
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Hashable, Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
from scipy.optimize import linear_sum_assignment as _scipy_lsa

__all__ = [
    "MotAccumulator",
    "MotEvent",
    "MotSummary",
    "clear_mot",
    "distance_matrix",
    "solve_assignment",
]

MATCH, SWITCH, MISS, FP = "MATCH", "SWITCH", "MISS", "FP"


def quiet_divide(a: float, b: float) -> float:
    """``a / b`` with numpy's semantics for zero: ``nan`` for 0 / 0, ``±inf`` otherwise."""
    if b == 0:
        return math.nan if a == 0 or math.isnan(a) else math.copysign(math.inf, a)
    return a / b


def solve_assignment(costs: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Min-cost assignment where NaN / inf mark pairs that must not be made.

    Non-edges are replaced by a constant larger than any solution could gain from avoiding
    them (as motmetrics' scipy solver does, so ties break identically); pairs on a non-edge
    are then dropped. Returns ``(rows, cols)`` index arrays, rows ascending.
    """
    costs = np.asarray(costs, dtype=np.float64)
    if costs.size == 0:
        return np.zeros(0, dtype=int), np.zeros(0, dtype=int)
    valid = np.isfinite(costs)
    if valid.all():
        finite = costs.copy()
    elif not valid.any():
        finite = np.zeros_like(costs)
    else:
        r = min(costs.shape)
        c = np.abs(costs[valid]).max() + 1
        finite = np.where(valid, costs, 2 * r * c + 1)
    rows, cols = _scipy_lsa(finite)
    keep = valid[rows, cols]
    return rows[keep].astype(int), cols[keep].astype(int)


def distance_matrix(objects_m: Any, hypotheses_m: Any, threshold_m: float = 0.5) -> np.ndarray:
    """Euclidean distances (metres) between object centres (n, 3) and hypothesis centres
    (m, 3); pairs farther than ``threshold_m`` are NaN (they may not pair). Shape (n, m).

    >>> distance_matrix([[0, 0, 0]], [[0.3, 0.4, 0], [1, 0, 0]]).tolist()
    [[0.5, nan]]
    """
    a = np.asarray(objects_m, dtype=np.float64).reshape(-1, 3)
    b = np.asarray(hypotheses_m, dtype=np.float64).reshape(-1, 3)
    if math.isnan(threshold_m) or threshold_m < 0:
        raise ValueError(f"threshold_m must be >= 0, got {threshold_m}")
    d = np.sqrt(((a[:, None, :] - b[None, :, :]) ** 2).sum(axis=-1))
    d[d > threshold_m] = np.nan
    return d


@dataclass(frozen=True, slots=True)
class MotEvent:
    """One per-frame event: ``kind`` is MATCH, SWITCH, MISS or FP; ``distance`` is NaN for
    MISS and FP."""

    frame: float
    kind: str
    object_id: Hashable | None
    hypothesis_id: Hashable | None
    distance: float


@dataclass(frozen=True, slots=True)
class MotSummary:
    """motmetrics' summary fields (same names). Counts are ints; ratios floats."""

    num_frames: int
    num_objects: int
    num_predictions: int
    num_unique_objects: int
    num_matches: int
    num_switches: int
    num_false_positives: int
    num_misses: int
    num_detections: int
    num_fragmentations: int
    mostly_tracked: int
    partially_tracked: int
    mostly_lost: int
    mota: float
    motp: float
    precision: float
    recall: float
    idtp: int
    idfp: int
    idfn: int
    idp: float
    idr: float
    idf1: float

    def as_dict(self) -> dict[str, float]:
        return {name: getattr(self, name) for name in self.__dataclass_fields__}


@dataclass
class MotAccumulator:
    """Frame-by-frame CLEAR-MOT bookkeeping (motmetrics' ``MOTAccumulator``, without pandas).

    Args:
        max_switch_time: an object unseen for more than this many frames may change partner
            without a SWITCH (motmetrics' parameter; default: never).
    """

    max_switch_time: float = math.inf
    events: list[MotEvent] = field(default_factory=list, init=False, repr=False)
    # object -> its last partner hypothesis (never cleared, as in motmetrics)
    _pair: dict[Any, Any] = field(default_factory=dict, init=False, repr=False)
    _last_occurrence: dict[Any, float] = field(default_factory=dict, init=False, repr=False)
    _frame_count: int = field(default=0, init=False)
    _last_frame: float | None = field(default=None, init=False, repr=False)
    # frames each object / hypothesis is present in, and frames each pair is within reach
    _ocs: dict[Any, int] = field(default_factory=dict, init=False, repr=False)
    _hcs: dict[Any, int] = field(default_factory=dict, init=False, repr=False)
    _tps: dict[tuple[Any, Any], int] = field(default_factory=dict, init=False, repr=False)
    # per object, whether it was tracked (MATCH or SWITCH) at each of its appearances
    _per_object: dict[Any, list[bool]] = field(default_factory=dict, init=False, repr=False)

    def update(self, object_ids: Sequence[Hashable], hypothesis_ids: Sequence[Hashable],
               distances: Any, frame_id: float | None = None) -> None:
        """Add one frame: ids of the objects and hypotheses present, and their (n, m) distance
        matrix (NaN = may not pair). ``frame_id`` defaults to the frame's index and must
        increase; it only matters for ``max_switch_time``."""
        oids = list(object_ids)
        hids = list(hypothesis_ids)
        if len(set(oids)) != len(oids) or len(set(hids)) != len(hids):
            raise ValueError("object and hypothesis ids must be unique within a frame")
        n, m = len(oids), len(hids)
        dists = np.asarray(distances, dtype=np.float64)
        if n * m == 0:
            dists = np.zeros((n, m))
        elif dists.shape != (n, m):
            raise ValueError(f"distances must have shape ({n}, {m}), got {dists.shape}")
        dists = dists.copy()
        frame = float(self._frame_count if frame_id is None else frame_id)
        if self._last_frame is not None and frame <= self._last_frame:
            raise ValueError(f"frame_id must increase: {frame} after {self._last_frame}")
        self._last_frame = frame
        self._frame_count += 1

        finite = np.isfinite(dists)
        for o in oids:
            self._ocs[o] = self._ocs.get(o, 0) + 1
        for h in hids:
            self._hcs[h] = self._hcs.get(h, 0) + 1
        for i, j in zip(*np.nonzero(finite), strict=True):
            key = (oids[i], hids[j])
            self._tps[key] = self._tps.get(key, 0) + 1

        o_done = np.zeros(n, dtype=bool)
        h_done = np.zeros(m, dtype=bool)
        tracked: dict[int, bool] = {}
        if n * m > 0:
            # 1. keep last frame's pairs that are still in reach, objects in the given order
            h_index = {h: j for j, h in enumerate(hids)}
            for i, o in enumerate(oids):
                if o not in self._pair:
                    continue
                j = h_index.get(self._pair[o])
                if j is None or h_done[j] or not finite[i, j]:
                    continue
                o_done[i] = h_done[j] = True
                self._emit(frame, MATCH, o, hids[j], dists[i, j])
                tracked[i] = True
            # 2. min-cost assignment over the rest
            dists[o_done, :] = np.nan
            dists[:, h_done] = np.nan
            rows, cols = solve_assignment(dists)
            for i, j in zip(rows, cols, strict=True):
                o, h = oids[i], hids[j]
                switch = (o in self._pair and self._pair[o] != h
                          and abs(frame - self._last_occurrence[o]) <= self.max_switch_time)
                self._emit(frame, SWITCH if switch else MATCH, o, h, dists[i, j])
                o_done[i] = h_done[j] = True
                self._pair[o] = h
                tracked[i] = True
        # 3. misses, 4. false positives
        for i in np.flatnonzero(~o_done):
            self._emit(frame, MISS, oids[i], None, math.nan)
        for j in np.flatnonzero(~h_done):
            self._emit(frame, FP, None, hids[j], math.nan)
        for i, o in enumerate(oids):
            self._last_occurrence[o] = frame
            self._per_object.setdefault(o, []).append(tracked.get(i, False))

    def _emit(self, frame: float, kind: str, o: Any, h: Any, d: float) -> None:
        self.events.append(MotEvent(frame, kind, o, h, float(d)))

    def summary(self) -> MotSummary:
        """The metrics over every frame added so far."""
        kinds = [e.kind for e in self.events]
        matches, switches = kinds.count(MATCH), kinds.count(SWITCH)
        fps, misses = kinds.count(FP), kinds.count(MISS)
        n_obj = sum(self._ocs.values())
        n_pred = sum(self._hcs.values())
        detections = matches + switches
        frag = mt = pt = ml = 0
        for seq in self._per_object.values():
            ratio = sum(seq) / len(seq)
            if ratio >= 0.8:
                mt += 1
            elif ratio >= 0.2:
                pt += 1
            else:
                ml += 1
            hits = [k for k, v in enumerate(seq) if v]
            if hits:
                span = seq[hits[0]:hits[-1] + 1]
                frag += sum(1 for a, b in itertools.pairwise(span) if a and not b)
        idtp, idfp, idfn = self._identity()
        # Summed as motmetrics (pandas) sums: every event in order, MISS / FP counting 0, so
        # numpy's pairwise summation groups the terms identically and MOTP agrees to the bit.
        d_sum = float(np.sum(np.nan_to_num(np.array([e.distance for e in self.events]))))
        return MotSummary(
            num_frames=self._frame_count,
            num_objects=n_obj,
            num_predictions=n_pred,
            num_unique_objects=len(self._ocs),
            num_matches=matches,
            num_switches=switches,
            num_false_positives=fps,
            num_misses=misses,
            num_detections=detections,
            num_fragmentations=frag,
            mostly_tracked=mt,
            partially_tracked=pt,
            mostly_lost=ml,
            mota=1.0 - quiet_divide(misses + switches + fps, n_obj),
            motp=quiet_divide(d_sum, detections),
            precision=quiet_divide(detections, fps + detections),
            recall=quiet_divide(detections, n_obj),
            idtp=idtp,
            idfp=idfp,
            idfn=idfn,
            idp=quiet_divide(idtp, idtp + idfp),
            idr=quiet_divide(idtp, idtp + idfn),
            idf1=quiet_divide(2 * idtp, n_obj + n_pred),
        )

    def _identity(self) -> tuple[int, int, int]:
        """IDTP, IDFP, IDFN from the global trajectory matching (motmetrics' construction: each
        object and hypothesis also has a private 'unmatched' partner)."""
        oids = sorted(self._ocs, key=_sort_key)
        hids = sorted(self._hcs, key=_sort_key)
        no, nh = len(oids), len(hids)
        if no + nh == 0:
            return 0, 0, 0
        o_idx = {o: i for i, o in enumerate(oids)}
        h_idx = {h: j for j, h in enumerate(hids)}
        fp = np.zeros((no + nh, no + nh))
        fn = np.zeros((no + nh, no + nh))
        fp[no:, :nh] = np.nan
        fn[:no, nh:] = np.nan
        for o, count in self._ocs.items():
            r = o_idx[o]
            fn[r, :nh] = count
            fn[r, nh + r] = count
        for h, count in self._hcs.items():
            c = h_idx[h]
            fp[:no, c] = count
            fp[c + no, c] = count
        for (o, h), count in self._tps.items():
            fp[o_idx[o], h_idx[h]] -= count
            fn[o_idx[o], h_idx[h]] -= count
        rows, cols = solve_assignment(fp + fn)
        idfp = round(float(fp[rows, cols].sum()))
        idfn = round(float(fn[rows, cols].sum()))
        return sum(self._ocs.values()) - idfn, idfp, idfn


def _sort_key(x: Any) -> tuple[int, Any]:
    # Numbers sort numerically, then everything else by its text (ids may mix types).
    if isinstance(x, (int, float, np.integer, np.floating)) and not isinstance(x, bool):
        return (0, float(x))
    return (1, str(x))


FrameInput = tuple[Sequence[Hashable], Any, Sequence[Hashable], Any]


def clear_mot(frames: Iterable[FrameInput], threshold_m: float = 0.5,
              max_switch_time: float = math.inf) -> MotSummary:
    """Score a run from per-frame ``(object_ids, object_centres_m (n, 3), hypothesis_ids,
    hypothesis_centres_m (m, 3))``, pairing within ``threshold_m`` metres (Euclidean).

    >>> frames = [([1], [[0, 0, 0]], [7], [[0.1, 0, 0]]),
    ...           ([1], [[0, 0, 0]], [8], [[0.0, 0, 0]]),     # the id changes: a switch
    ...           ([1], [[0, 0, 0]], [8], [[0.9, 0, 0]])]     # too far: a miss and a FP
    >>> s = clear_mot(frames)
    >>> (s.num_matches, s.num_switches, s.num_misses, s.num_false_positives, s.mota)
    (1, 1, 1, 1, 0.0)
    """
    acc = MotAccumulator(max_switch_time=max_switch_time)
    for oids, opos, hids, hpos in frames:
        acc.update(oids, hids, distance_matrix(opos, hpos, threshold_m))
    return acc.summary()
