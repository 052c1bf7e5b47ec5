"""Relations scored against the simulator's truth: precision, recall and F1 of the memory's
``on`` / ``in`` / ``under`` relations from its items to its furniture.

:func:`relation_score` is the pure count over sets of ``(subject, relation, object)``
triples; :func:`scan_relations` turns one scan's memory (its published items matched to the
true objects, its furniture to the true pieces) and the simulator's truth
(:func:`locimem.sim.furniture.relation_truth`) into those sets. A run's score pools every
scan: a relation wrong for a minute counts sixty times.

What is scored: the relations of the items the memory publishes and that match a true
object the perfect memory knows (Hungarian matching within ``threshold_m``, 0.5 m as the
rest of the scoring), to the furniture it publishes. An item it does not publish, or a
phantom, is the identity scores' business (IDF1, phantoms), not this one's.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass

import numpy as np
from scipy.optimize import linear_sum_assignment

__all__ = ["SCORED", "RelationScore", "match_ids", "relation_score", "scan_relations"]

SCORED = ("on", "in", "under")
Triple = tuple[object, str, object]
Vec3 = tuple[float, float, float]


@dataclass(frozen=True)
class RelationScore:
    """True positives, false positives and false negatives, and what they make."""

    tp: int = 0
    fp: int = 0
    fn: int = 0

    @property
    def precision(self) -> float:
        return self.tp / (self.tp + self.fp) if self.tp + self.fp else 1.0

    @property
    def recall(self) -> float:
        return self.tp / (self.tp + self.fn) if self.tp + self.fn else 1.0

    @property
    def f1(self) -> float:
        d = 2 * self.tp + self.fp + self.fn
        return 2 * self.tp / d if d else 1.0

    def __add__(self, other: RelationScore) -> RelationScore:
        return RelationScore(self.tp + other.tp, self.fp + other.fp, self.fn + other.fn)


def relation_score(truth: Iterable[Triple], predicted: Iterable[Triple]) -> RelationScore:
    """Count ``predicted`` against ``truth`` (sets of ``(subject, relation, object)``).

    >>> s = relation_score({(1, "on", "table"), (2, "on", "table")},
    ...                    {(1, "on", "table"), (2, "under", "table")})
    >>> (s.tp, s.fp, s.fn), round(s.f1, 3)
    ((1, 1, 1), 0.5)
    """
    t, p = set(truth), set(predicted)
    return RelationScore(len(t & p), len(p - t), len(t - p))


def match_ids(hyp: Mapping[int, Vec3], ref: Mapping[int, Vec3], threshold_m: float = 0.5
              ) -> dict[int, int]:
    """A one-to-one matching of hypothesis ids to reference ids minimising the summed
    distance, pairs farther than ``threshold_m`` never matched."""
    if not hyp or not ref:
        return {}
    h_ids, r_ids = list(hyp), list(ref)
    a = np.array([hyp[i] for i in h_ids], dtype=float)
    b = np.array([ref[i] for i in r_ids], dtype=float)
    d = np.linalg.norm(a[:, None, :] - b[None, :, :], axis=2)
    big = 1e6
    rows, cols = linear_sum_assignment(np.where(d <= threshold_m, d, big))
    return {h_ids[r]: r_ids[c] for r, c in zip(rows, cols, strict=True) if d[r, c] <= threshold_m}


def scan_relations(relations: Sequence[tuple[int, str, int]], items: Mapping[int, Vec3],
                   furniture: Mapping[int, str], known: Mapping[int, Vec3],
                   truth: Iterable[tuple[int, str, str]], threshold_m: float = 0.5
                   ) -> RelationScore:
    """One scan's score. ``relations``: the memory's ``(subject id, relation, object id)``;
    ``items``: its published items' centres by id; ``furniture``: its published furniture,
    id -> the true piece's name; ``known``: the perfect memory's places by true id;
    ``truth``: ``(true id, relation, furniture name)``. Only :data:`SCORED` relations from a
    matched item to published furniture count, on both sides."""
    match = match_ids(items, known, threshold_m)
    shown = set(furniture.values())
    matched = set(match.values())
    predicted = {(match[s], r, furniture[o]) for s, r, o in relations
                 if r in SCORED and s in match and o in furniture}
    wanted = {(o, r, f) for o, r, f in truth if o in matched and f in shown}
    return relation_score(wanted, predicted)
