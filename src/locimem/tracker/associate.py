"""Association: which detection of a scan goes to which remembered object.

The tiers (see :class:`~locimem.config.TrackerConfig`) decide which (detection, object) pairs
are allowed; among them, one assignment problem per connected component of the candidate graph
finds the one-to-one matching of least total cost (``scipy.optimize.linear_sum_assignment``).
Candidates come from the spatial grid; a detection left unmatched may still be recognised by
its embedding anywhere (the ``appearance`` tier). Pure: reads the state, changes nothing.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence

import numpy as np

from locimem.config import TrackerConfig
from locimem.index.features import FeatureMatrix
from locimem.model import Detection, ObjectState
from locimem.tracker.state import MemoryState

TIERS = ("track", "tight", "drift", "reacquire", "appearance")

# Association cost of a (detection, object) pair the tiers allow; lower is better. Distance is
# scaled by the drift radius; the other terms are in [0, 1] (embedding: [0, 2]).
W_IOU = 0.5  # 1 - 3D IoU of the two boxes
W_FEATURE = 1.0  # 1 - cosine of the embeddings, when both have one
W_LABEL = 0.5  # 1 - the share of the object's label mass held by the detection's label
TRACK_BONUS = 1.0  # the perception track id agrees
LOST_PENALTY = 1.0  # re-acquiring a lost object costs more than keeping a live one
UNMATCHED = 10.0  # leaving a detection unmatched: any allowed pair is preferred
# Boxes whose volumes differ more than this are two things (a glass on a bookshelf is not the
# bookshelf seen again), whatever their distance and labels — unless perception's track id
# says they are one. A box cut by an occluder keeps a sixth of its volume at the least the
# simulated detector reports (a corner 0.4 x 0.4 in sight), so one thing seen again stays
# far inside this.
MAX_VOLUME_RATIO = 30.0

# A match: (object id, tier, distance). A pair the tiers allow: (object id, tier, distance,
# embedding cosine or None, same track id, object lost). Plain tuples: this is the hot path.
_Match = tuple[int, str, float]
_Pair = tuple[int, str, float, "float | None", bool, bool]


def _cosine(a: np.ndarray | None, b: np.ndarray | None) -> float | None:
    if a is None or b is None or a.shape[0] != b.shape[0]:
        return None
    return float(np.dot(a, b) / (np.linalg.norm(a) * np.linalg.norm(b)))


def iou_3d(c1: Sequence[float], s1: Sequence[float], c2: Sequence[float],
           s2: Sequence[float]) -> float:
    """Intersection over union of two axis-aligned boxes (centres and extents, metres)."""
    inter = 1.0
    for k in range(3):
        lo = max(c1[k] - s1[k] / 2, c2[k] - s2[k] / 2)
        hi = min(c1[k] + s1[k] / 2, c2[k] + s2[k] / 2)
        if hi <= lo:
            return 0.0
        inter *= hi - lo
    union = s1[0] * s1[1] * s1[2] + s2[0] * s2[1] * s2[2] - inter
    return inter / union if union > 0 else 0.0


def _unlike_sizes(a: Sequence[float], b: Sequence[float]) -> bool:
    """Whether two boxes' volumes (extents, metres) differ more than
    :data:`MAX_VOLUME_RATIO`-fold (a degenerate box, of no volume, is like any)."""
    va, vb = a[0] * a[1] * a[2], b[0] * b[1] * b[2]
    if va <= 0.0 or vb <= 0.0:
        return False
    return va > MAX_VOLUME_RATIO * vb or vb > MAX_VOLUME_RATIO * va


def _label_share(obj: ObjectState, label: str) -> float:
    """The share of the object's label mass held by ``label`` (its voted label: 1 if none)."""
    mass = obj.label_mass
    total = sum(mass.values())
    if total <= 0:
        return 1.0 if label == obj.label else 0.0
    return mass.get(label, 0.0) / total


# -- association -------------------------------------------------------------------------------
class _Associator:
    """Gates and costs (detection, object) pairs, and solves the assignment problems."""

    def __init__(self, state: MemoryState, config: TrackerConfig, t: float,
                 detections: Sequence[Detection], lost_now: set[int], gone: set[int]) -> None:
        self.state, self.config, self.t = state, config, t
        self.detections = detections
        self.lost_now, self.gone = lost_now, gone
        self.near: dict[int, list[tuple[float, int]]] = {}  # detection -> objects within drift

    def _is_lost(self, obj: ObjectState) -> bool:
        return obj.lost or obj.id in self.lost_now

    def _reacquirable(self, obj: ObjectState, cos: float | None) -> bool:
        config = self.config
        lost_at = obj.lost_at if obj.lost and obj.lost_at is not None else self.t
        age = self.t - lost_at
        if age <= config.reacquire_window_s:
            return True
        return cos is not None and cos >= config.feature_match_min and (
            age <= config.feature_reacquire_window_s)

    def candidates(self, i: int, allow_lost: bool, skip: set[int]) -> list[_Pair]:
        """Every (detection i, object) pair the tiers allow, leaving out the ids in ``skip``."""
        config, det, objects = self.config, self.detections[i], self.state.objects
        near = self.near.get(i)
        if near is None:
            near = self.near[i] = self.state.indexes.grid.near(det.center, config.drift_radius_m)
        if not near:
            return []
        tight = config.tight_radius_m
        fmin = config.feature_match_min
        feature = det.feature
        cosines: dict[int, float] = {}
        best_oid, second = None, -2.0
        if feature is not None:
            norm = float(np.sqrt(feature.dot(feature)))  # np.linalg.norm's arithmetic
            best = -2.0
            for _, oid in near:
                f = objects[oid].feature
                if f is not None and f.shape[0] == feature.shape[0]:
                    c = cosines[oid] = float(np.dot(f, feature)) / norm
                    if oid in skip:
                        continue
                    if c > best:
                        best_oid, best, second = oid, c, best
                    elif c > second:
                        second = c
        lost_now = self.lost_now
        label, track = det.label, det.track_id
        out = []
        for d, oid in near:
            obj = objects[oid]
            label_ok = label == obj.label
            same_track = track is not None and track == obj.track_id
            if not (label_ok or d <= tight or same_track or cosines):
                continue  # the common case: a neighbour of another kind, out of reach
            if skip and oid in skip:
                continue
            if not same_track and _unlike_sizes(det.size, obj.size):
                continue
            lost = obj.lost or (oid in lost_now if lost_now else False)
            if lost and not allow_lost:
                continue
            cos = cosines.get(oid)
            looks_like = (cos is not None and oid == best_oid
                          and cos >= fmin + (0.0 if label_ok else config.feature_label_strict)
                          and cos - second >= config.feature_margin)
            # embeddings weigh in the cost; they rule a pair out only against weaker spatial
            # evidence: not for a live object with the same label within half the tight radius
            # (one thing seen again, whatever a noisy embedding says) unless they are nearer
            # orthogonal than alike (a new neighbour: the assignment takes any allowed pair
            # before leaving a detection unmatched) — and a lost one that comes back looking
            # different is another thing put in its place
            unlike = (cos is not None and cos < fmin and not same_track
                      and (lost or not (label_ok and d <= tight / 2)
                           or cos < config.feature_unlike_max))
            if lost:
                if unlike or not self._reacquirable(obj, cos):
                    continue
                if not (same_track or d <= tight or label_ok or looks_like):
                    continue
                tier = "track" if same_track else "reacquire"
            elif same_track:
                tier = "track"
            elif unlike:  # both have embeddings, and they say it is another thing
                continue
            elif d <= tight:
                tier = "tight"
            elif label_ok or looks_like:
                tier = "drift"
            else:
                continue
            out.append((oid, tier, d, cos, same_track, lost))
        return out

    def cost(self, i: int, pair: _Pair) -> float:
        """The cost of a pair: lower is better (see the weights at the top of the module)."""
        oid, _, dist, cos, same_track, lost = pair
        det, obj = self.detections[i], self.state.objects[oid]
        cost = dist / self.config.drift_radius_m
        cost += W_IOU * (1.0 - iou_3d(det.center, det.size, obj.center, obj.size))
        cost += W_LABEL * (1.0 - _label_share(obj, det.label))
        if cos is not None:
            cost += W_FEATURE * (1.0 - cos)
        if same_track:
            cost -= TRACK_BONUS
        if lost:
            cost += LOST_PENALTY
        return cost

    def solve(self, rows: list[int], *, allow_lost: bool, exclude: set[int]
              ) -> dict[int, _Match]:
        """Minimum-cost one-to-one matching of detections ``rows`` to the objects the tiers
        allow them, solved per connected component (costs are only computed where there is a
        choice)."""
        if not rows:
            return {}
        skip = exclude | self.gone
        pairs = {i: self.candidates(i, allow_lost, skip) for i in rows}
        # the common case: no detection has a choice and no object is wanted twice
        if all(len(p) <= 1 for p in pairs.values()):
            wanted = [p[0][0] for p in pairs.values() if p]
            if len(wanted) == len(set(wanted)):
                return {i: p[0][:3] for i, p in pairs.items() if p}
        # connected components over shared candidate objects (union-find on detections)
        parent = {i: i for i in rows}

        def find(i: int) -> int:
            while parent[i] != i:
                parent[i] = parent[parent[i]]
                i = parent[i]
            return i

        owner: dict[int, int] = {}
        for i in rows:
            for p in pairs[i]:
                j = owner.setdefault(p[0], i)
                if j != i:
                    a, b = find(i), find(j)
                    if a != b:
                        parent[max(a, b)] = min(a, b)
        groups: dict[int, list[int]] = {}
        for i in rows:
            if pairs[i]:
                groups.setdefault(find(i), []).append(i)
        match: dict[int, _Match] = {}
        for members in groups.values():
            if len(members) == 1:
                i = members[0]
                options = pairs[i]
                if len(options) == 1:
                    p = options[0]
                else:
                    p = min(options, key=lambda q: (self.cost(i, q), q[0]))
                match[i] = p[:3]
                continue
            costed = {i: [(self.cost(i, p), p) for p in pairs[i]] for i in members}
            match.update(_assign(members, costed))
        return match

    def by_appearance(self, rows: list[int], exclude: set[int], *, allow_lost: bool = True
                      ) -> dict[int, _Match]:
        """Detections left unmatched whose embedding clearly picks out one remembered object
        anywhere (moved out of the drift radius while unwatched, or lost within the feature
        window): cosine >= ``feature_match_min + feature_label_strict`` and ``feature_margin``
        above every other object — twice that when the detection's label is one the object
        was never seen under (a flickering label does not hide a clear likeness, but only a
        clear one). ``allow_lost=False``: live objects only (for detections too unsure to
        bring back a lost one)."""
        config, objects = self.config, self.state.objects
        features = self.state.indexes.features
        dim = features.dim
        rows = [i for i in rows if self.detections[i].feature is not None]
        if not rows or dim is None:
            return {}

        def eligible(oid: int) -> bool:
            o = objects[oid]
            return (oid not in exclude and oid not in self.gone
                    and (not self._is_lost(o) or (allow_lost and self._reacquirable(o, 1.0))))

        match: dict[int, _Match] = {}
        taken: set[int] = set()
        need = config.feature_match_min + config.feature_label_strict
        # only what can be the best, or close enough to it to matter: every detection's
        # search at once (one matrix product for many: a scan of new things)
        floor = need - config.feature_margin
        queries: dict[int, np.ndarray] = {}
        for i in rows:
            f = self.detections[i].feature
            q = unit_query(f) if f is not None and f.shape[0] == dim else None
            if q is not None:
                queries[i] = q
        found = dict(zip(queries, features.above_many(list(queries.values()), floor),
                         strict=True))
        for i in rows:
            det = self.detections[i]
            f = det.feature
            if i not in found or f is None:  # (f: for the second search below)
                continue
            best_oid, best, second = best_of(*found[i], eligible)
            if best_oid is None:
                continue
            obj = objects[best_oid]
            # a label the object was never seen under (a detector's confusion) asks for twice
            # the margin: the embedding alone must set it apart (its runner-up may then lie
            # below the search's floor: searched again, lower, only then)
            strange = det.label not in obj.label_mass and det.label != obj.label
            if strange and second < floor:
                best_oid, best, second = best_two(
                    features, f, need - 2.0 * config.feature_margin, eligible)
            margin = config.feature_margin * (2.0 if strange else 1.0)
            if best_oid is None or best < need or best - second < margin or best_oid in taken:
                continue
            taken.add(best_oid)
            tier = "reacquire" if self._is_lost(obj) else "appearance"
            match[i] = (best_oid, tier, math.dist(det.center, obj.center))
        return match


def unit_query(vector: np.ndarray) -> np.ndarray | None:
    """``vector`` scaled to unit length, in float64 (None for a zero vector)."""
    norm = float(np.linalg.norm(vector))
    return None if norm <= 0.0 else np.asarray(vector, dtype=np.float64) / norm


def best_two(features: FeatureMatrix, vector: np.ndarray, floor: float,
             eligible: Callable[[int], bool]) -> tuple[int | None, float, float]:
    """(id, cosine) of the eligible row most like ``vector`` (any length but zero) and the
    cosine of the next, among the rows scoring at least ``floor`` (a missing one reads -1)."""
    query = unit_query(vector)
    if query is None:
        return None, -1.0, -1.0
    return best_of(*features.above(query, floor), eligible)


def best_of(ids: np.ndarray, cos: np.ndarray, eligible: Callable[[int], bool]
            ) -> tuple[int | None, float, float]:
    """:func:`best_two` of a search's answer (ids and cosines, best first)."""
    best_oid, best = None, -1.0
    for oid, c in zip(ids.tolist(), cos.tolist(), strict=True):  # best first
        if not eligible(oid):
            continue
        if best_oid is not None:
            return best_oid, best, c
        best_oid, best = oid, c
    return best_oid, best, -1.0


def import_solver() -> None:
    """Import the assignment solver now: ``scipy.optimize`` takes tens of milliseconds to
    import, which the first scan with an ambiguous match would otherwise pay (a warm open
    calls this). Until then it is not imported: ``import locimem`` stays light."""
    from scipy.optimize import linear_sum_assignment  # noqa: F401


def _assign(members: list[int], pairs: dict[int, list[tuple[float, _Pair]]]
            ) -> dict[int, _Match]:
    """One component: a rectangular assignment with a 'stay unmatched' column per detection."""
    from scipy.optimize import linear_sum_assignment

    oids = sorted({p[0] for i in members for _, p in pairs[i]})
    col = {oid: k for k, oid in enumerate(oids)}
    n, m = len(members), len(oids)
    cost = np.full((n, m + n), 1e9)
    info: dict[tuple[int, int], _Pair] = {}
    for r, i in enumerate(members):
        cost[r, m + r] = UNMATCHED
        for c, p in pairs[i]:
            cost[r, col[p[0]]] = c
            info[(r, col[p[0]])] = p
    rows, cols = linear_sum_assignment(cost)
    out = {}
    for r, k in zip(rows.tolist(), cols.tolist(), strict=True):
        if k < m and (r, k) in info:
            out[members[r]] = info[(r, k)][:3]
    return out


# -- position ----------------------------------------------------------------------------------
