"""What a persistent object memory gets right and wrong, scored against ground truth.

Inputs are plain per-frame records (no locimem types): :class:`TruthFrame` (what existed,
what a perfect memory could know, what the camera saw) and :class:`HypFrame` (what the memory
published, held without publishing, and had given up as lost). Positions are centres in
metres in one map frame; ``threshold_m`` (default 0.5 m, Euclidean) decides what counts as
"at the same place".

Per frame, the published hypotheses are matched one to one to the true objects (the most
pairs within the threshold, then the least total distance). Each true object is compared at
the place a perfect memory would hold for it (``known``), or at its true place if the camera
never saw it. Then:

- a **duplicate** is an unmatched hypothesis within the threshold of some true object (a second
  identity for one thing) — unless it is *stale*: it stood for a true object in an earlier
  frame (its last partner) and that object is no longer within the threshold of it (taken
  away, or moved and seen elsewhere). A stale hypothesis is the belief not having caught up
  with a change, not a second identity, whatever happens to stand beside it;
- a **phantom** is an unmatched hypothesis with no true object within the threshold, or a
  stale one (a ghost at a moved object's old place, a false positive that got published, a
  removed thing);
- **coverage** is the fraction of ``known`` objects that have a matched hypothesis;
- **label accuracy** is the fraction of matched hypotheses whose label is the true label.

Events are scored too: the time from a far move to a *correct belief* (the object published
at its new place and no ghost left at the old one), counted from the first scan that
detected it at the new place (before that no memory fed by the detector can know of it);
the time from a *seen* removal (the first scan that saw the place empty) to the memory's
``LOST``; **wrongful losses** (a published hypothesis went ``LOST`` while its
object was still there and nothing else stood for it), split into those where the camera could
see the object in fewer than ``min_looks`` (3) scans since its last detection (*lost only
because it was out of view*: a memory cannot have judged it absent) and the rest;
and **recall answers** ("where is the cup?") at the end.
"""

from __future__ import annotations

import math
import statistics
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field

import numpy as np

from locimem.eval.mot import MotSummary, clear_mot, distance_matrix, solve_assignment

Vec3 = tuple[float, float, float]

__all__ = [
    "FrameQuality",
    "HypFrame",
    "Hypothesis",
    "MemoryReport",
    "Move",
    "MoveOutcome",
    "RecallAnswer",
    "RecallQuestion",
    "Removal",
    "RemovalOutcome",
    "TruthFrame",
    "WrongfulLoss",
    "frame_quality",
    "recall_accuracy",
    "recall_questions",
    "score",
]


@dataclass(frozen=True)
class TruthFrame:
    """Ground truth at one scan. ``present``: every object that exists (id -> centre);
    ``known``: what a perfect memory could hold (id -> the place it was last seen at, until
    that place was seen empty); ``visible``: ids the camera could see; ``detected``: ids that
    produced at least one detection in this scan."""

    t_s: float
    present: Mapping[int, Vec3]
    known: Mapping[int, Vec3]
    visible: frozenset[int] = frozenset()
    detected: frozenset[int] = frozenset()


@dataclass(frozen=True)
class Hypothesis:
    """One object as a memory holds it: its id, public label and centre (metres)."""

    id: int
    label: str
    center: Vec3


@dataclass(frozen=True)
class HypFrame:
    """A memory's state after one scan: published hypotheses, held ones (kept and matchable
    but not published: tentative, doubted, ...), and lost ones (given up; ``center`` is the
    last believed place)."""

    t_s: float
    published: tuple[Hypothesis, ...]
    held: tuple[Hypothesis, ...] = ()
    lost: tuple[Hypothesis, ...] = ()


@dataclass(frozen=True)
class Move:
    """A true object moved from ``from_m`` to ``to_m``, in effect from the scan at ``t_s``."""

    t_s: float
    object_id: int
    from_m: Vec3
    to_m: Vec3


@dataclass(frozen=True)
class Removal:
    """A true object was taken away from ``place_m``, in effect from the scan at ``t_s``."""

    t_s: float
    object_id: int
    place_m: Vec3


@dataclass(frozen=True)
class RecallQuestion:
    """"Where is the <label>?" ``places`` are the right answers (any one will do); empty
    means every such object was seen removed, and the right answer is that it is lost."""

    label: str
    places: tuple[Vec3, ...]


@dataclass(frozen=True)
class RecallAnswer:
    """What a memory answered: ``found`` anything by that name; is it ``lost``; where."""

    label: str
    found: bool
    lost: bool = False
    center: Vec3 | None = None


@dataclass(frozen=True)
class FrameQuality:
    """One frame's matching. ``pairs``: (true id, hypothesis id, distance m);
    ``duplicates``: (hypothesis id, the true id it duplicates); ``phantoms``: hypothesis ids."""

    t_s: float
    pairs: tuple[tuple[int, int, float], ...]
    duplicates: tuple[tuple[int, int], ...]
    phantoms: tuple[int, ...]
    n_known: int
    n_known_covered: int
    n_labels_right: int

    @property
    def coverage(self) -> float:
        return self.n_known_covered / self.n_known if self.n_known else 1.0


@dataclass(frozen=True)
class MoveOutcome:
    object_id: int
    t_move_s: float
    t_seen_s: float | None  # first scan that detected the object at its new place
    latency_s: float | None  # from t_seen_s to a correct belief; None: never
    kept_id: bool | None  # the correct belief carries the identity held before the move


@dataclass(frozen=True)
class RemovalOutcome:
    object_id: int
    t_removed_s: float
    t_seen_s: float | None  # first scan that saw the place empty
    hypothesis_id: int | None  # what the memory published for it before (None: nothing)
    to_unpublished_s: float | None
    to_lost_s: float | None


@dataclass(frozen=True)
class WrongfulLoss:
    hypothesis_id: int
    object_id: int
    t_s: float
    looks: int  # scans since the object's last detection in which the camera could see it
    unseen: bool  # looks < min_looks: lost only because it was out of view (or hidden)


@dataclass(frozen=True)
class MemoryReport:
    """Everything :func:`score` measures over one run."""

    mot: MotSummary
    frames: tuple[FrameQuality, ...]
    moves: tuple[MoveOutcome, ...]
    removals: tuple[RemovalOutcome, ...]
    wrongful_losses: tuple[WrongfulLoss, ...]
    recall: tuple[tuple[RecallQuestion, RecallAnswer | None, bool], ...]
    label_accuracy: float = field(default=math.nan)

    @property
    def end(self) -> FrameQuality:
        return self.frames[-1]

    @property
    def duplicates_end(self) -> int:
        return len(self.end.duplicates)

    @property
    def phantoms_end(self) -> int:
        return len(self.end.phantoms)

    @property
    def coverage_end(self) -> float:
        return self.end.coverage

    @property
    def duplicates_mean(self) -> float:
        return statistics.fmean(len(f.duplicates) for f in self.frames)

    @property
    def phantoms_mean(self) -> float:
        return statistics.fmean(len(f.phantoms) for f in self.frames)

    @property
    def coverage_mean(self) -> float:
        return statistics.fmean(f.coverage for f in self.frames)

    @property
    def recall_accuracy(self) -> float:
        return (sum(ok for _, _, ok in self.recall) / len(self.recall)) if self.recall \
            else math.nan

    @property
    def lost_out_of_view(self) -> int:
        return sum(1 for w in self.wrongful_losses if w.unseen)

    @property
    def lost_in_view(self) -> int:
        return sum(1 for w in self.wrongful_losses if not w.unseen)


# -- per frame ------------------------------------------------------------------------------------
def _match(a_ids: Sequence[int], a_pos: np.ndarray, b_ids: Sequence[int], b_pos: np.ndarray,
           threshold_m: float) -> list[tuple[int, int, float]]:
    """One-to-one pairs (a id, b id, distance) within the threshold: as many as possible,
    then the least total distance."""
    if not a_ids or not b_ids:
        return []
    d = distance_matrix(a_pos, b_pos, threshold_m)
    rows, cols = solve_assignment(d)
    return [(a_ids[i], b_ids[j], float(d[i, j])) for i, j in zip(rows, cols, strict=True)]


def _reference(truth: TruthFrame) -> tuple[list[int], np.ndarray]:
    """Each true object once: at its known place if a perfect memory would hold one, else at
    its true place."""
    ids = sorted(set(truth.known) | set(truth.present))
    pos = np.array([truth.known[i] if i in truth.known else truth.present[i] for i in ids],
                   dtype=float).reshape(-1, 3)
    return ids, pos


def _positions(hyps: Sequence[Hypothesis]) -> np.ndarray:
    return np.array([h.center for h in hyps], dtype=float).reshape(-1, 3)


def frame_quality(truth: TruthFrame, hyps: HypFrame, labels: Mapping[int, str],
                  threshold_m: float = 0.5, last_partner: Mapping[int, int] | None = None
                  ) -> FrameQuality:
    """Match one frame's published hypotheses to the true objects (see the module docstring).
    ``last_partner``: hypothesis id -> the true object it was last matched to in an earlier
    frame (:func:`score` keeps it); an unmatched hypothesis whose last partner is no longer
    within the threshold of it is stale, a phantom, not a duplicate of whatever stands near.

    >>> truth = TruthFrame(0.0, present={1: (0, 0, 0), 2: (3, 0, 0)},
    ...                    known={1: (0, 0, 0), 2: (2, 0, 0)})   # 2 moved, unseen
    >>> hyps = HypFrame(0.0, (Hypothesis(7, "mug", (0.3, 0, 0)), Hypothesis(8, "cup", (0, 0.1, 0)),
    ...                       Hypothesis(9, "cup", (2, 0, 0)), Hypothesis(5, "cup", (5, 5, 0))))
    >>> q = frame_quality(truth, hyps, {1: "cup", 2: "cup"})
    >>> q.pairs, q.duplicates, q.phantoms, q.coverage, q.n_labels_right
    (((1, 8, 0.1), (2, 9, 0.0)), ((7, 1),), (5,), 1.0, 2)
    >>> q = frame_quality(truth, hyps, {1: "cup", 2: "cup"}, last_partner={7: 3})  # 3: gone
    >>> q.duplicates, q.phantoms
    ((), (7, 5))
    """
    ref_ids, ref_pos = _reference(truth)
    pub = list(hyps.published)
    pairs = _match(ref_ids, ref_pos, [h.id for h in pub], _positions(pub), threshold_m)
    matched_h = {h for _, h, _ in pairs}
    by_id = {h.id: h for h in pub}
    duplicates: list[tuple[int, int]] = []
    phantoms: list[int] = []
    ref_at = dict(zip(ref_ids, ref_pos.tolist(), strict=True))
    for h in pub:
        if h.id in matched_h:
            continue
        was = None if last_partner is None else last_partner.get(h.id)
        if was is not None and (was not in ref_at
                                or math.dist(ref_at[was], h.center) > threshold_m):
            phantoms.append(h.id)  # stale: what it stood for is gone from here
            continue
        if ref_ids:
            d = np.linalg.norm(ref_pos - np.asarray(h.center), axis=1)
            k = int(np.argmin(d))
            if d[k] <= threshold_m:
                duplicates.append((h.id, ref_ids[k]))
                continue
        phantoms.append(h.id)
    covered = sum(1 for o, _, _ in pairs if o in truth.known)
    right = sum(1 for o, h, _ in pairs if by_id[h].label == labels.get(o))
    return FrameQuality(truth.t_s, tuple(pairs), tuple(duplicates), tuple(phantoms),
                        len(truth.known), covered, right)


# -- events ---------------------------------------------------------------------------------------
def _partner_before(quality: Sequence[FrameQuality], k: int, object_id: int) -> int | None:
    """The hypothesis matched to the object in the last frame before index ``k``."""
    for q in reversed(quality[:k]):
        for o, h, _ in q.pairs:
            if o == object_id:
                return h
    return None


def _first_index(times: Sequence[float], t: float) -> int:
    return next((k for k, tk in enumerate(times) if tk >= t), len(times))


def _move_outcomes(truths: Sequence[TruthFrame], hyps: Sequence[HypFrame],
                   quality: Sequence[FrameQuality], moves: Sequence[Move],
                   threshold_m: float) -> list[MoveOutcome]:
    times = [t.t_s for t in truths]
    out = []
    for mv in moves:
        start = _first_index(times, mv.t_s)
        later = [m.t_s for m in moves if m.object_id == mv.object_id and m.t_s > mv.t_s]
        stop = _first_index(times, min(later)) if later else len(times)
        before = _partner_before(quality, start, mv.object_id)
        seen = next((k for k in range(start, stop) if mv.object_id in truths[k].detected), None)
        latency = kept = None
        if seen is not None:
            for k in range(seen, stop):
                partner = next((h for o, h, _ in quality[k].pairs if o == mv.object_id), None)
                if partner is None:
                    continue
                centre = next(h.center for h in hyps[k].published if h.id == partner)
                if math.dist(centre, mv.to_m) > threshold_m:
                    continue
                stray = {h for h, _ in quality[k].duplicates} | set(quality[k].phantoms)
                ghost = any(h.id in stray and math.dist(h.center, mv.from_m) <= threshold_m
                            for h in hyps[k].published)
                if ghost:
                    continue
                latency = times[k] - times[seen]
                kept = before is not None and partner == before
                break
        out.append(MoveOutcome(mv.object_id, mv.t_s, None if seen is None else times[seen],
                               latency, kept))
    return out


def _removal_outcomes(truths: Sequence[TruthFrame], hyps: Sequence[HypFrame],
                      quality: Sequence[FrameQuality], removals: Sequence[Removal]
                      ) -> list[RemovalOutcome]:
    times = [t.t_s for t in truths]
    out = []
    for rm in removals:
        start = _first_index(times, rm.t_s)
        seen = next((k for k in range(start, len(truths))
                     if rm.object_id not in truths[k].known), None)
        h = _partner_before(quality, start, rm.object_id)
        unpub = lost = None
        if seen is not None and h is not None:
            for k in range(seen, len(hyps)):
                if unpub is None and all(x.id != h for x in hyps[k].published):
                    unpub = times[k] - times[seen]
                held = any(x.id == h for x in (*hyps[k].published, *hyps[k].held))
                if any(x.id == h for x in hyps[k].lost) or not held:
                    lost = times[k] - times[seen]
                    break
        out.append(RemovalOutcome(rm.object_id, rm.t_s, None if seen is None else times[seen],
                                  h, unpub, lost))
    return out


def _wrongful_losses(truths: Sequence[TruthFrame], hyps: Sequence[HypFrame],
                     threshold_m: float, min_looks: int) -> list[WrongfulLoss]:
    out = []
    ever_published: set[int] = set()
    was_lost: set[int] = set()
    last_detected: dict[int, int] = {}
    for k, (truth, hf) in enumerate(zip(truths, hyps, strict=True)):
        for o in truth.detected:
            last_detected[o] = k
        lost_now = {h.id: h for h in hf.lost}
        fresh = [h for i, h in lost_now.items() if i not in was_lost and i in ever_published]
        if fresh and truth.present:
            ids = sorted(truth.present)
            pos = np.array([truth.present[i] for i in ids], dtype=float)
            alive = [*hf.published, *hf.held]
            covered = {o for o, _, _ in _match(ids, pos, [h.id for h in alive],
                                               _positions(alive), threshold_m)}
            for h in fresh:
                d = np.linalg.norm(pos - np.asarray(h.center), axis=1)
                j = int(np.argmin(d))
                if d[j] > threshold_m or ids[j] in covered:
                    continue  # nothing there any more, or something else stands for it
                o = ids[j]
                since = last_detected.get(o, -1)
                looks = sum(1 for i in range(since + 1, k + 1) if o in truths[i].visible)
                out.append(WrongfulLoss(h.id, o, truth.t_s, looks, looks < min_looks))
        was_lost = set(lost_now)
        ever_published.update(h.id for h in hf.published)
    return out


# -- recall ---------------------------------------------------------------------------------------
def recall_questions(truths: Sequence[TruthFrame], labels: Mapping[int, str]
                     ) -> list[RecallQuestion]:
    """The questions worth asking at the end: for every label of an object a perfect memory
    holds, its places; for every label whose objects were all seen removed, "lost"."""
    if not truths:
        return []
    final = truths[-1]
    ever_known = set().union(*(set(t.known) for t in truths))
    places: dict[str, list[Vec3]] = {}
    for o, p in sorted(final.known.items()):
        places.setdefault(labels[o], []).append(p)
    gone = sorted({labels[o] for o in ever_known - set(final.present) - set(final.known)}
                  - set(places))
    return ([RecallQuestion(lab, tuple(ps)) for lab, ps in sorted(places.items())]
            + [RecallQuestion(lab, ()) for lab in gone])


def recall_accuracy(questions: Iterable[RecallQuestion], answers: Mapping[str, RecallAnswer],
                    threshold_m: float = 0.5
                    ) -> list[tuple[RecallQuestion, RecallAnswer | None, bool]]:
    """Grade each answer: right when it names a place within the threshold of one of the
    question's places and does not call it lost; or, for a removed thing, calls it lost.

    >>> q = [RecallQuestion("cup", ((0, 0, 0),)), RecallQuestion("vase", ())]
    >>> a = {"cup": RecallAnswer("cup", True, False, (0.1, 0, 0)),
    ...      "vase": RecallAnswer("vase", True, False, (4, 0, 0))}
    >>> [ok for _, _, ok in recall_accuracy(q, a)]
    [True, False]
    """
    graded = []
    for q in questions:
        a = answers.get(q.label)
        if a is None or not a.found:
            ok = False
        elif not q.places:
            ok = a.lost
        else:
            ok = (not a.lost and a.center is not None
                  and any(math.dist(a.center, p) <= threshold_m for p in q.places))
        graded.append((q, a, ok))
    return graded


# -- everything -----------------------------------------------------------------------------------
def score(truths: Sequence[TruthFrame], hyps: Sequence[HypFrame], labels: Mapping[int, str],
          moves: Sequence[Move] = (), removals: Sequence[Removal] = (),
          answers: Mapping[str, RecallAnswer] | None = None, threshold_m: float = 0.5,
          min_looks: int = 3) -> MemoryReport:
    """Score a whole run: CLEAR-MOT / IDF1 of the published hypotheses against what a perfect
    memory would hold (``known``) per frame, and the memory metrics of the module docstring.
    ``truths`` and ``hyps`` are aligned frame by frame; ``min_looks`` is the number of scans
    that could see an object after its last detection from which a loss is no longer "only
    because it was out of view"."""
    if len(truths) != len(hyps):
        raise ValueError(f"{len(truths)} truth frames but {len(hyps)} hypothesis frames")
    if not truths:
        raise ValueError("nothing to score: no frames")
    mot = clear_mot(
        ((sorted(t.known), [t.known[i] for i in sorted(t.known)],
          [h.id for h in hf.published], [h.center for h in hf.published])
         for t, hf in zip(truths, hyps, strict=True)),
        threshold_m=threshold_m,
    )
    quality = []
    last_partner: dict[int, int] = {}  # hypothesis -> the true object it last stood for
    for t, hf in zip(truths, hyps, strict=True):
        q = frame_quality(t, hf, labels, threshold_m, last_partner)
        quality.append(q)
        last_partner.update((h, o) for o, h, _ in q.pairs)
    n_pairs = sum(len(q.pairs) for q in quality)
    questions = recall_questions(truths, labels)
    return MemoryReport(
        mot=mot,
        frames=tuple(quality),
        moves=tuple(_move_outcomes(truths, hyps, quality, moves, threshold_m)),
        removals=tuple(_removal_outcomes(truths, hyps, quality, removals)),
        wrongful_losses=tuple(_wrongful_losses(truths, hyps, threshold_m, min_looks)),
        recall=tuple(recall_accuracy(questions, answers or {}, threshold_m)),
        label_accuracy=(sum(q.n_labels_right for q in quality) / n_pairs) if n_pairs
        else math.nan,
    )
