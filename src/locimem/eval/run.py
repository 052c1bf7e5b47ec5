"""Play a simulated scenario through a memory, and score what it believed.

:func:`play` feeds every frame of a :class:`~locimem.sim.scenario.Scenario` to a memory (an
:class:`~locimem.ObjectMemory`, or anything with the same ``observe`` / ``tracked`` /
``objects`` / ``recall`` / ``close`` methods, such as :class:`NaiveTracker`), closing and
reopening it where the scenario restarts the process, and records after each scan what it
published, held without publishing (tentative, doubted, ...), and had lost. :func:`evaluate`
turns the scenario's ground truth and that record into
:func:`locimem.eval.memory_metrics.score`'s inputs.

This is the one module of :mod:`locimem.eval` that imports the rest of locimem.
"""

from __future__ import annotations

import math
import re
import tempfile
import time
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol

import numpy as np

from locimem.eval.memory_metrics import (
    HypFrame,
    Hypothesis,
    MemoryReport,
    Move,
    RecallAnswer,
    Removal,
    TruthFrame,
    recall_questions,
    score,
)
from locimem.eval.relations import SCORED, RelationScore, scan_relations
from locimem.memory import ObjectMemory
from locimem.model import Camera, Detection
from locimem.sim.furniture import (
    FurnitureBox,
    furniture_boxes,
    furniture_detections,
    relation_truth,
)
from locimem.sim.scenario import Scenario

__all__ = [
    "MemoryLike",
    "NaiveTracker",
    "Run",
    "evaluate",
    "labels_of",
    "locimem_factory",
    "naive_factory",
    "play",
    "truth_frames",
]

MEMORY = ":memory:"
_ARTICLES = {"the", "a", "an", "my", "our", "your", "this", "that"}


def _words(text: str) -> list[str]:
    return re.findall(r"[a-z0-9]+", text.lower())


class MemoryLike(Protocol):
    """What :func:`play` needs of a memory (a subset of :class:`~locimem.ObjectMemory`)."""

    def observe(self, t: float, detections: Iterable[Detection] = (),
                camera: Camera | None = None) -> Any: ...

    def tracked(self) -> Sequence[Any]: ...

    def objects(self, status: Any = None) -> Sequence[Any]: ...

    def recall(self, name: str) -> Any: ...

    def close(self) -> None: ...


MemoryFactory = Callable[[str], MemoryLike]


def locimem_factory(**open_kwargs: Any) -> MemoryFactory:
    """A factory opening an :class:`~locimem.ObjectMemory` at a path (non-durable by default:
    safe against a killed process, which is all a benchmark needs)."""
    kwargs = {"durable": False, **open_kwargs}
    return lambda path: ObjectMemory.open(path, **kwargs)


# -- the naive baseline ---------------------------------------------------------------------------
@dataclass(frozen=True)
class NaiveObject:
    """A naive track as :func:`play` reads it (the fields it shares with ``TrackedObject``)."""

    id: int
    label: str
    center: tuple[float, float, float]
    status: str = "confirmed"
    last_seen: float = 0.0


@dataclass(frozen=True)
class NaiveRecall:
    query: str
    found: bool
    status: str | None = None
    center: tuple[float, float, float] | None = None


@dataclass
class NaiveTracker:
    """The baseline the issue asks for: each detection (in input order) goes to the nearest
    track within ``radius_m`` that no earlier detection of the same scan took, else starts a
    new id; a track takes the latest detection's centre and label; nothing is ever forgotten;
    and every track is published. It ignores confidences, embeddings, track ids and cameras.
    """

    radius_m: float = 0.2
    _tracks: dict[int, NaiveObject] = field(default_factory=dict, init=False, repr=False)
    _next_id: int = field(default=1, init=False, repr=False)

    def observe(self, t: float, detections: Iterable[Detection] = (),
                camera: Camera | None = None) -> None:
        taken: set[int] = set()
        for det in detections:
            best, best_d = None, math.inf
            for tr in self._tracks.values():
                if tr.id in taken:
                    continue
                d = math.dist(tr.center, det.center)
                if d <= self.radius_m and d < best_d:
                    best, best_d = tr.id, d
            if best is None:
                best = self._next_id
                self._next_id += 1
            self._tracks[best] = NaiveObject(best, det.label, det.center, "confirmed", t)
            taken.add(best)

    def tracked(self) -> list[NaiveObject]:
        return [self._tracks[i] for i in sorted(self._tracks)]

    def objects(self, status: Any = None) -> list[NaiveObject]:
        wanted = None if status is None else {str(status)}
        return [o for o in self.tracked() if wanted is None or o.status in wanted]

    def recall(self, name: str) -> NaiveRecall:
        """The most recently seen track whose label holds the name's words, whole and in
        order ("the cup" finds "coffee cup", never "cupboard")."""
        words = _words(name)
        while words and words[0] in _ARTICLES:
            words.pop(0)
        n = len(words)
        hits = [o for o in self._tracks.values()
                if n and any(_words(o.label)[i:i + n] == words
                             for i in range(len(_words(o.label)) - n + 1))]
        if not hits:
            return NaiveRecall(name, False)
        best = max(hits, key=lambda o: (o.last_seen, -o.id))
        return NaiveRecall(name, True, best.status, best.center)

    def close(self) -> None:
        """Nothing to close: the baseline keeps its tracks across a restart (never forgets)."""


def naive_factory(radius_m: float = 0.2) -> MemoryFactory:
    """A factory returning the same :class:`NaiveTracker` for the same path, so it survives
    the scenario's restarts (the baseline never forgets)."""
    trackers: dict[str, NaiveTracker] = {}

    def make(path: str) -> MemoryLike:
        return trackers.setdefault(path, NaiveTracker(radius_m=radius_m))

    return make


# -- playing --------------------------------------------------------------------------------------
@dataclass(frozen=True)
class Run:
    """What a memory believed after each scan of a scenario, and its final recall answers."""

    scenario: str
    tracker: str
    frames: tuple[HypFrame, ...]
    answers: dict[str, RecallAnswer]
    observe_s: float  # total seconds spent in observe()
    relations: RelationScore | None = None  # pooled over scans, when furniture was fed


def _hyps(objs: Iterable[Any]) -> tuple[Hypothesis, ...]:
    return tuple(Hypothesis(int(o.id), str(o.label), _xyz(o.center)) for o in objs)


def _xyz(point: Any) -> tuple[float, float, float]:
    x, y, z = point
    return float(x), float(y), float(z)


def _snapshot(t: float, mem: MemoryLike, hide: frozenset[int] = frozenset()) -> HypFrame:
    published = _hyps(o for o in mem.tracked() if int(o.id) not in hide)
    shown = {h.id for h in published}
    held, lost = [], []
    for o in mem.objects():
        status = str(o.status)
        if status == "lost":
            lost.append(o)
        elif status != "forgotten" and o.id not in shown and int(o.id) not in hide:
            held.append(o)
    return HypFrame(t, published, _hyps(held), _hyps(lost))


@dataclass
class _Furniture:
    """What :func:`play` keeps to feed the furniture and score relations."""

    boxes: list[FurnitureBox]
    rng: Any
    ids: dict[int, str] = field(default_factory=dict)  # memory id -> furniture name
    score: RelationScore = field(default_factory=RelationScore)

    def learn(self, mem: MemoryLike) -> None:
        """Name the memory's furniture objects: each new one by its label and the nearest
        piece of that label."""
        for o in mem.objects():
            oid = int(o.id)
            if oid in self.ids:
                continue
            near = [(math.dist(b.center_m, _xyz(o.center)), b.name) for b in self.boxes
                    if b.label == str(o.label)]
            if near and min(near)[0] <= 1.0:
                self.ids[oid] = min(near)[1]

    def score_scan(self, scenario: Scenario, frame: Any, mem: MemoryLike,
                   hyps: HypFrame) -> None:
        relations_of = getattr(mem, "relations", None)
        if relations_of is None:
            return
        items = {h.id: h.center for h in hyps.published}
        triples = [(int(r.subject), str(r.relation), int(r.object))
                   for i in items for r in relations_of(i)
                   if r.subject == i and r.relation in SCORED]
        shown = {int(o.id) for o in mem.tracked()}
        furniture = {i: name for i, name in self.ids.items() if i in shown}
        self.score = self.score + scan_relations(
            triples, items, furniture, frame.truth.known,
            relation_truth(scenario, frame, self.boxes))


def play(scenario: Scenario, memory_factory: MemoryFactory | None = None,
         tracker: str = "locimem", workdir: str | Path | None = None,
         furniture: bool = False) -> Run:
    """Feed every frame of ``scenario`` to a memory opened by ``memory_factory(path)``.

    ``path`` is ``":memory:"`` unless the scenario restarts, in which case it is a file in a
    temporary directory (inside ``workdir`` if given): before a frame flagged ``restart`` the
    memory is closed and opened again on the same path. Default factory:
    :func:`locimem_factory`.

    ``furniture``: each scan also carries the furniture in view, detected with the
    scenario's noise (:func:`locimem.sim.furniture.furniture_detections`, from a stream of
    its own seeded by the scenario's seed); the furniture objects are left out of what the
    run records as published or held, and, for a memory with ``relations``, each scan's
    ``on`` / ``in`` / ``under`` relations are scored against the simulator's truth
    (:mod:`locimem.eval.relations`), pooled into :attr:`Run.relations`.
    """
    factory = memory_factory or locimem_factory()
    fed = None
    if furniture:
        fed = _Furniture(furniture_boxes(scenario.world),
                         np.random.default_rng(np.random.SeedSequence([scenario.seed, 36])))
    restarts = any(f.restart for f in scenario.frames)
    with tempfile.TemporaryDirectory(dir=workdir) as tmp:
        path = str(Path(tmp) / f"{scenario.name}.loci") if restarts else MEMORY
        mem = factory(path)
        frames: list[HypFrame] = []
        spent = 0.0
        try:
            for frame in scenario.frames:
                if frame.restart:
                    mem.close()
                    mem = factory(path)
                dets = list(frame.detections)
                if fed is not None:
                    dets += furniture_detections(fed.boxes, frame.camera, scenario.noise,
                                                 fed.rng)
                t0 = time.perf_counter()
                mem.observe(frame.t, dets, frame.camera)
                spent += time.perf_counter() - t0
                if fed is not None:
                    fed.learn(mem)
                hyps = _snapshot(frame.t, mem, frozenset(fed.ids) if fed else frozenset())
                if fed is not None:
                    fed.score_scan(scenario, frame, mem, hyps)
                frames.append(hyps)
            answers = {}
            for q in recall_questions(truth_frames(scenario), labels_of(scenario)):
                r = mem.recall(q.label)
                center = None if r.center is None else _xyz(r.center)
                answers[q.label] = RecallAnswer(q.label, bool(r.found),
                                                str(r.status) == "lost", center)
        finally:
            mem.close()
    return Run(scenario.name, tracker, tuple(frames), answers, spent,
               None if fed is None or not hasattr(mem, "relations") else fed.score)


# -- scoring --------------------------------------------------------------------------------------
def labels_of(scenario: Scenario) -> dict[int, str]:
    """True label of every object that ever existed in the scenario."""
    return {oid: spec.label for oid, spec in scenario.objects.items()}


def truth_frames(scenario: Scenario) -> list[TruthFrame]:
    """The scenario's ground truth as :class:`~locimem.eval.memory_metrics.TruthFrame` s."""
    return [
        TruthFrame(f.t, f.truth.present, f.truth.known, f.truth.visible,
                   frozenset(s for s in f.sources if s is not None))
        for f in scenario.frames
    ]


def evaluate(scenario: Scenario, run: Run, threshold_m: float = 0.5) -> MemoryReport:
    """Score ``run`` against ``scenario``'s ground truth (far moves and removals from its
    events)."""
    moves = [Move(e.t, e.object_id, e.from_m, e.to_m) for e in scenario.events  # type: ignore[arg-type]
             if e.kind == "move_far"]
    removals = [Removal(e.t, e.object_id, e.from_m) for e in scenario.events  # type: ignore[arg-type]
                if e.kind == "remove"]
    return score(truth_frames(scenario), list(run.frames), labels_of(scenario), moves,
                 removals, run.answers, threshold_m)
