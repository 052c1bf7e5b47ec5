"""Question answering on the built-in simulated scenarios, graded against ground truth.

For each built-in scenario (and :func:`qa_removals`, one of its own, so that "is it still
there" is also asked about things that are gone), :func:`play_for_qa` plays the scans through an
:class:`~locimem.ObjectMemory` with the home's rooms defined (and linked through their doors)
and the furniture detected as a real detector would report it — one detection per visible
table, counter or desk, at its box (the simulated detector reports only the things on them;
shelves, whose items sit inside the box on boards, are left out). Then
:func:`make_questions` writes questions from the ground truth of the last scan — what a
perfect memory could know then (:attr:`locimem.sim.scenario.Truth.known`):

==================  ==========================================================================
kind                asked for, and right when the answer …
==================  ==========================================================================
where is X          each label one known object has: cites an object within 0.5 m of its
                    place that is not lost or doubted
what is on Y        each detected piece of furniture: cites it, and then exactly the known
                    objects on it (each matched one-to-one by label, within 0.5 m)
is X still there    each label one known object has, and each label one piece of furniture
                    holds once ("is the cup on the table still there": "yes"); each label
                    whose objects were all seen removed, and each label seen taken from a
                    piece of furniture that holds no other ("no"): says yes (or "probably")
                    for a yes, at the right place; no (or "probably not", or nothing by that
                    name or there) for a no
what changed        since just before each far move, removal and addition the robot could have
since T             seen: reports every such change a perfect memory would know (moved at the
                    new place; lost at the old; appeared at the new), and no move or loss of
                    an object that did not change
which room is X in  each label one known object has: names its true room, for an object
                    within 0.5 m of its place
where did X go      each label one known object has, whose object was moved (20 cm or more):
                    as "where is X", at its new place
what is X on        each label one known object has, whose object stands on a detected piece
                    of furniture: cites the object and then that furniture (within 0.5 m of
                    its centre)
==================  ==========================================================================

Every question is asked through the agent tools (``ask_memory``: the router, the retrievers
and the deterministic :class:`~locimem.agent.verbalizer.OfflineVerbalizer`), and graded by
reading the answer text and looking up the ids it cites with the ``describe_object`` tool.
"""

from __future__ import annotations

import math
import re
import tempfile
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TextIO

import numpy as np

from locimem.geometry import in_view
from locimem.memory import ObjectMemory
from locimem.model import Detection
from locimem.sim.perception import NoiseModel
from locimem.sim.scenario import Scenario, ScenarioBuilder
from locimem.sim.scenarios import NAMES, build
from locimem.sim.world import Furniture, World, build_world

__all__ = ["KINDS", "QA_NAMES", "QA_SCENARIOS", "Graded", "QAResult", "Question",
           "build_scenario", "grade", "make_questions", "play_for_qa", "qa_removals", "run_qa",
           "run_qa_suite"]

KINDS = ("where_is", "what_is_on", "still_there", "changes_since", "which_room", "where_went",
         "what_is_x_on")
KIND_TITLES = {"where_is": "where is X", "what_is_on": "what is on Y",
               "what_is_x_on": "what is X on",
               "still_there": "is X still there", "changes_since": "what changed since T",
               "which_room": "which room is X in", "where_went": "where did X go"}
THRESHOLD_M = 0.5
SCOPE = "qa"
Vec3 = tuple[float, float, float]


@dataclass(frozen=True)
class Question:
    """A question, its kind and what a right answer must say (``truth``, per kind)."""

    kind: str
    text: str
    truth: dict[str, Any] = field(compare=False)


@dataclass(frozen=True)
class Graded:
    question: Question
    answer: str
    ok: bool
    why: str = ""


@dataclass
class QAResult:
    """One scenario's graded questions."""

    scenario: str
    graded: list[Graded]

    def score(self, kind: str) -> tuple[int, int]:
        """(right, asked) for a question kind."""
        got = [g for g in self.graded if g.question.kind == kind]
        return sum(g.ok for g in got), len(got)


# -- playing ------------------------------------------------------------------------------------
def furniture_label(f: Furniture) -> str:
    """A detector's label for a piece of furniture: "kitchen/coffee_table" -> "coffee table"."""
    return f.name.split("/", 1)[1].replace("_", " ")


def detected_furniture(world: World) -> list[tuple[Furniture, str, Vec3, Vec3]]:
    """The furniture the QA detector reports (not shelves): (furniture, label, centre,
    size) of its bounding box, metres, map frame."""
    out = []
    for f in world.furniture:
        if f.kind == "shelf":
            continue
        lo = np.min([p.min_m for p in f.parts], axis=0)
        hi = np.max([p.max_m for p in f.parts], axis=0)
        out.append((f, furniture_label(f), tuple(((lo + hi) / 2).tolist()),
                    tuple((hi - lo).tolist())))
    return out


def _define_rooms(mem: ObjectMemory, world: World) -> None:
    for r in world.rooms:
        (x0, y0), (x1, y1) = r.min_xy, r.max_xy
        mem.define_room(r.name, [(x0, y0), (x1, y0), (x1, y1), (x0, y1)],
                        actor="qa-bench", reason="the simulated home's floor plan")
    for a, b in zip(world.rooms, world.rooms[1:], strict=False):
        mem.connect_rooms(a.name, b.name, actor="qa-bench", reason="a door")


def play_for_qa(scenario: Scenario, workdir: str | Path) -> ObjectMemory:
    """Play ``scenario`` into a memory (see the module) and return it, open; close it when
    done. Restarts reopen the store file in ``workdir``."""
    path = str(Path(workdir) / f"{scenario.name}.loci")
    mem = ObjectMemory.open(path, scope=SCOPE, durable=False)
    _define_rooms(mem, scenario.world)
    furniture = detected_furniture(scenario.world)
    targets = np.array([f.target_m for f, *_ in furniture]).reshape(-1, 3)
    centers = np.array([c for _, _, c, _ in furniture]).reshape(-1, 3)
    rng = np.random.default_rng(scenario.seed)
    for frame in scenario.frames:
        if frame.restart:
            mem.close()
            mem = ObjectMemory.open(path, scope=SCOPE, durable=False)
        dets = list(frame.detections)
        if furniture:
            seen = in_view(frame.camera, targets) | in_view(frame.camera, centers)
            for (f, label, c, size), v in zip(furniture, seen, strict=True):
                if v:
                    at = tuple((np.array(c) + rng.normal(0.0, 0.01, 3)).tolist())
                    dets.append(Detection(label, 0.9, at, size, track_id=f"furniture:{f.name}"))
        mem.observe(frame.t, dets, frame.camera)
    return mem


# -- a scenario for questions the built-in ones seldom let us ask ---------------------------------
def qa_removals(seed: int = 11) -> Scenario:
    """Things with labels found nowhere else in the home, so "is the laptop still there" has
    one answer: a laptop taken from the coffee table while watched, a keyboard taken from the
    counter while the robot is in the other room (then its place is seen empty), a notebook
    that stays, and a thing carried from the kitchen table to the side table while away."""
    world = build_world(seed, rooms=("kitchen", "living"))
    b = ScenarioBuilder("qa_removals", world, seed=seed)
    laptop = b.add("laptop", "living/coffee_table", setup=True)
    keyboard = b.add("keyboard", "kitchen/counter", setup=True)
    b.add("notebook", "kitchen/table", setup=True)
    b.stock("kitchen/table", 2)
    b.survey("kitchen", 8)
    b.survey("living", 8)
    b.look("living/coffee_table", 6)
    b.remove(laptop)  # watched
    b.look("living/coffee_table", 50)
    b.remove(keyboard)  # while the robot is in the living room
    b.move_to(b.objects_on("kitchen/table")[0], "living/side_table")
    b.survey("living", 8)
    b.look("kitchen/counter", 50)  # back: the keyboard's place is empty
    b.survey("kitchen", 8)
    b.survey("living", 8)
    return b.build()


def qa_moves(seed: int = 12) -> Scenario:
    """Things carried between rooms, seen by a detector without embeddings or track ids (so
    only the places tell the story): a candle taken from the kitchen table to the living room
    while the robot is in the office, a laptop from the office desk to the kitchen counter
    while it is in the living room, and a clock carried from the coffee table to the office
    desk while watched — each the only thing with its label, so which one went where is
    known. Asks "where did X go" (and the rest) about them."""
    world = build_world(seed, rooms=("kitchen", "living", "office"), objects_per_surface=(0, 0))
    noise = NoiseModel(range_sigma_per_m=0.01, features=False, track_ids=False)
    b = ScenarioBuilder("qa_moves", world, seed=seed, noise=noise)
    candle = b.add("candle", "kitchen/table", setup=True)
    laptop = b.add("laptop", "office/desk", setup=True)
    clock = b.add("clock", "living/coffee_table", setup=True)
    for label, furniture in (("bowl", "kitchen/counter"), ("book", "living/side_table"),
                             ("mug", "office/desk"), ("plant", "living/bookcase")):
        b.add(label, furniture, setup=True)  # things that stay
    for room in ("kitchen", "living", "office"):
        b.survey(room, 8)
    b.move_to(candle, "living/coffee_table")  # while the robot is in the office
    b.survey("living", 8)
    b.move_to(laptop, "kitchen/counter")  # while the robot is in the living room
    b.survey("kitchen", 8)
    b.survey("office", 8)
    b.look("living/coffee_table", 6)
    b.move_to(clock, "office/desk")  # watched: picked up in view
    b.look("living/coffee_table", 10)
    for room in ("office", "kitchen", "living"):
        b.survey(room, 8)
    return b.build()


QA_SCENARIOS = {"qa_removals": qa_removals, "qa_moves": qa_moves}
QA_NAMES: tuple[str, ...] = (*NAMES, *QA_SCENARIOS)


def build_scenario(name: str) -> Scenario:
    """A built-in scenario, or one of this benchmark's own (:data:`QA_SCENARIOS`)."""
    return QA_SCENARIOS[name]() if name in QA_SCENARIOS else build(name)


# -- questions ----------------------------------------------------------------------------------
def _on(world: World, f: Furniture, place: Sequence[float], height: float) -> bool:
    for s in f.surfaces:
        if (s.min_xy[0] - 0.01 <= place[0] <= s.max_xy[0] + 0.01
                and s.min_xy[1] - 0.01 <= place[1] <= s.max_xy[1] + 0.01
                and abs(place[2] - height / 2 - s.z_m) < 0.01):
            return True
    return False


def make_questions(scenario: Scenario) -> list[Question]:
    """The questions a perfect memory could answer at the end of ``scenario`` (see the
    module), in a fixed order."""
    final = scenario.frames[-1].truth
    known = final.known
    label = scenario.label_of
    world = scenario.world
    ever_known: set[int] = set()
    first_known: dict[int, float] = {}
    seen_after: dict[int, float] = {}
    for fr in scenario.frames:
        for oid in fr.truth.known:
            ever_known.add(oid)
            first_known.setdefault(oid, fr.t)
        for oid in fr.truth.visible:
            seen_after[oid] = fr.t  # the last time each object was seen
    by_label: dict[str, list[int]] = {}
    for oid in known:
        by_label.setdefault(label(oid), []).append(oid)
    present_by_label: dict[str, list[int]] = {}
    for oid in final.present:
        present_by_label.setdefault(label(oid), []).append(oid)
    unique = sorted(lab for lab, ids in by_label.items()
                    if len(ids) == 1 and len(present_by_label.get(lab, [])) <= 1)
    out: list[Question] = []
    for lab in unique:
        oid = by_label[lab][0]
        out.append(Question("where_is", f"Where is the {lab}?",
                            {"label": lab, "place": known[oid]}))
    # things moved (20 cm or more, the simulator's far moves): where did each go
    moved = sorted({e.object_id for e in scenario.events
                    if e.kind == "move_far" and e.object_id in known})
    for oid in moved:
        if label(oid) in unique:
            out.append(Question("where_went", f"Where did the {label(oid)} go?",
                                {"label": label(oid), "place": known[oid]}))
    for f, flabel, center, _ in detected_furniture(world):
        on = [(label(o), p) for o, p in sorted(known.items())
              if _on(world, f, p, scenario.objects[o].size_m[2])]
        out.append(Question("what_is_on", f"What is on the {flabel}?",
                            {"furniture": flabel, "center": center, "objects": on}))
        # the inverse: what each thing on it (a label one known object has) stands on
        for lab, place in on:
            if lab in unique:
                out.append(Question("what_is_x_on", f"What is the {lab} on?",
                                    {"label": lab, "place": place, "furniture": flabel,
                                     "center": center}))
    for lab in unique:
        oid = by_label[lab][0]
        out.append(Question("still_there", f"Is the {lab} still there?",
                            {"yes": True, "label": lab, "place": known[oid]}))
    gone_labels = sorted({label(o) for o in ever_known - set(known)}
                         - set(by_label) - set(present_by_label))
    for lab in gone_labels:
        out.append(Question("still_there", f"Is the {lab} still there?",
                            {"yes": False, "label": lab}))
    # on a piece of furniture: what is still on it (a label it holds once), and what was
    # seen taken from it (a label it no longer holds)
    removed_from = {e.object_id: e.from_m for e in scenario.events
                    if e.kind == "remove" and e.object_id in ever_known
                    and e.object_id not in known}
    for f, flabel, _, _ in detected_furniture(world):
        on_now: dict[str, list[int]] = {}
        for o, p in sorted(known.items()):
            if _on(world, f, p, scenario.objects[o].size_m[2]):
                on_now.setdefault(label(o), []).append(o)
        for lab, ids in sorted(on_now.items()):
            if len(ids) == 1:
                out.append(Question("still_there", f"Is the {lab} on the {flabel} still there?",
                                    {"yes": True, "label": lab, "place": known[ids[0]]}))
        taken = sorted({label(o) for o, p in removed_from.items()
                        if p is not None and _on(world, f, p, scenario.objects[o].size_m[2])}
                       - set(on_now))
        for lab in taken:
            out.append(Question("still_there", f"Is the {lab} on the {flabel} still there?",
                                {"yes": False, "label": lab}))
    last_t = scenario.frames[-1].t
    changes = []
    for e in scenario.events:
        if e.kind not in ("move_far", "remove", "add") or e.object_id is None:
            continue
        oid = e.object_id
        if e.kind == "remove":
            knowable = oid in ever_known and oid not in known
        else:
            knowable = seen_after.get(oid, -math.inf) >= e.t
        if knowable and e.t <= last_t:
            changes.append((oid, e))
    for since in sorted({round(e.t - 0.5, 1) for _, e in changes}):
        expected = []
        for oid, c in changes:
            if c.t >= since:
                expected.append({"kind": c.kind, "object": oid, "label": label(oid),
                                 "from": c.from_m, "to": c.to_m})
        # objects a perfect memory knew before T and that did not change: no move or loss
        changed = {c["object"] for c in expected}
        steady = [(label(o), p) for o, p in known.items()
                  if first_known.get(o, math.inf) < since and o not in changed]
        new_since = [(label(o), known.get(o, final.present.get(o)))
                     for o in ever_known if first_known[o] >= since]
        out.append(Question("changes_since", f"What changed since t={since:.1f}?",
                            {"since": since, "expected": expected, "steady": steady,
                             "new": [n for n in new_since if n[1] is not None]}))
    for lab in unique:
        oid = by_label[lab][0]
        out.append(Question("which_room", f"Which room is the {lab} in?",
                            {"label": lab, "place": known[oid],
                             "room": world.room_of(known[oid])}))
    return out


# -- grading ------------------------------------------------------------------------------------
class _Lookup:
    """Cited objects, looked up through the tools."""

    def __init__(self, tools: Any) -> None:
        self._tools = tools
        self._cache: dict[int, dict[str, Any] | None] = {}

    def __call__(self, oid: int) -> dict[str, Any] | None:
        if oid not in self._cache:
            try:
                self._cache[oid] = self._tools.call("describe_object",
                                                    {"object_id": oid})["object"]
            except Exception:
                self._cache[oid] = None
        return self._cache[oid]


def _ids(text: str) -> list[int]:
    return [int(m) for m in dict.fromkeys(re.findall(r"#(\d+)", text))]


def _near(obj: dict[str, Any] | None, place: Sequence[float] | None) -> bool:
    return obj is not None and place is not None and \
        math.dist(obj["at_m"], place) <= THRESHOLD_M


def _match(answered: list[dict[str, Any]], truth: list[tuple[str, Sequence[float]]]) -> bool:
    """A one-to-one matching of answered objects to true (label, place) pairs."""
    if len(answered) != len(truth):
        return False
    pairs = [[j for j, (lab, p) in enumerate(truth)
              if a["label"] == lab and math.dist(a["at_m"], p) <= THRESHOLD_M]
             for a in answered]
    used: dict[int, int] = {}

    def augment(i: int, seen: set[int]) -> bool:
        for j in pairs[i]:
            if j in seen:
                continue
            seen.add(j)
            if j not in used or augment(used[j], seen):
                used[j] = i
                return True
        return False

    return all(augment(i, set()) for i in range(len(answered)))


def _segments(text: str) -> list[tuple[int, list[str]]]:
    """A change answer's "label (#id) words" segments as (id, words)."""
    body = text.split(": ", 1)[1] if ": " in text else text
    out = []
    for seg in body.rstrip(".").split("; "):
        m = re.search(r"\(#(\d+)\)\s*(.*)$", seg)
        if m:
            out.append((int(m.group(1)), [w.strip() for w in m.group(2).split(",")]))
    return out


def grade(q: Question, text: str, lookup: Any) -> tuple[bool, str]:
    """Whether answer ``text`` is right for ``q`` (and why not); ``lookup(id)`` gives a cited
    object's fact (``at_m``, ``label``, ``status``, ``room``) or None."""
    t = q.truth
    ids = _ids(text)
    first = lookup(ids[0]) if ids else None
    if q.kind in ("where_is", "where_went"):
        if first is None:
            return False, "cites no object"
        if first["status"] in ("lost", "doubted"):
            return False, f"says it is {first['status']}"
        if not _near(first, t["place"]):
            return False, f"#{first['id']} is {math.dist(first['at_m'], t['place']):.2f} m off"
        return True, ""
    if q.kind == "which_room":
        if first is None:
            return False, "cites no object"
        if not _near(first, t["place"]):
            return False, f"#{first['id']} is {math.dist(first['at_m'], t['place']):.2f} m off"
        if t["room"] is None or f"in the {t['room']}" not in text:
            return False, f"does not say 'in the {t['room']}'"
        return True, ""
    if q.kind == "still_there":
        says_yes = re.match(r"(Yes|Probably)\.", text) is not None
        if t["yes"]:
            if not says_yes:
                return False, "says no"
            if not _near(first, t["place"]):
                return False, "wrong place"
            return True, ""
        return (not says_yes), ("says yes" if says_yes else "")
    if q.kind == "what_is_on":
        if first is None or not _near(first, t["center"]):
            return False, "wrong or no furniture"
        answered = [lookup(i) for i in ids[1:]]
        if any(a is None for a in answered):
            return False, "cites an unknown id"
        if not _match(answered, t["objects"]):
            got = sorted(a["label"] for a in answered)
            want = sorted(lab for lab, _ in t["objects"])
            return False, f"answered {got}, truth {want}"
        return True, ""
    if q.kind == "what_is_x_on":
        if not _near(first, t["place"]):
            return False, "cites the wrong object first" if first else "cites no object"
        support = [lookup(i) for i in ids[1:]]
        if not any(_near(s, t["center"]) for s in support):
            return False, f"does not name the {t['furniture']} it is on"
        return True, ""
    if q.kind == "changes_since":
        claims = [(lookup(i), words) for i, words in _segments(text)]
        for exp in t["expected"]:
            word, place = {"move_far": ("moved", exp["to"]), "remove": ("lost", exp["from"]),
                           "add": ("appeared", exp["to"])}[exp["kind"]]
            if not any(word in words and _near(obj, place) for obj, words in claims):
                return False, f"misses {exp['label']} {exp['kind']}"
        expected_places = [e["to"] for e in t["expected"] if e["to"] is not None] + \
                          [e["from"] for e in t["expected"] if e["from"] is not None]
        for obj, words in claims:
            if obj is None:
                continue
            if (("moved" in words or "lost" in words)
                    and not any(_near(obj, p) for p in expected_places)
                    and any(obj["label"] == lab and _near(obj, p) for lab, p in t["steady"])):
                what = "moved" if "moved" in words else "lost"
                return False, f"says #{obj['id']} {obj['label']} {what}"
        return True, ""
    raise ValueError(f"unknown question kind {q.kind!r}")


# -- running ------------------------------------------------------------------------------------
def run_qa(scenario: Scenario, workdir: str | Path) -> QAResult:
    """Play ``scenario``, ask its questions through the tools, grade the answers."""
    mem = play_for_qa(scenario, workdir)
    try:
        tools = mem.tools()
        lookup = _Lookup(tools)
        graded = []
        for q in make_questions(scenario):
            text = tools.call("ask_memory", {"question": q.text})["answer"]
            ok, why = grade(q, text, lookup)
            graded.append(Graded(q, text, ok, why))
    finally:
        mem.close()
    return QAResult(scenario.name, graded)


def _cell(right: int, asked: int) -> str:
    return "—" if asked == 0 else f"{right}/{asked}"


def _total(results: Sequence[QAResult], kind: str) -> str:
    right = sum(r.score(kind)[0] for r in results)
    asked = sum(r.score(kind)[1] for r in results)
    return "—" if asked == 0 else f"**{100 * right / asked:.1f} %** ({right}/{asked})"


def format_table(results: Sequence[QAResult], builtin: Sequence[str] | None = None) -> str:
    """A markdown table: rows are scenarios and the totals (also over the ``builtin``
    scenarios alone when some results are not among them), columns the question kinds."""
    lines = ["| scenario | " + " | ".join(KIND_TITLES[k] for k in KINDS) + " |",
             "|---|" + "---:|" * len(KINDS)]
    for r in results:
        lines.append(f"| {r.scenario} | " + " | ".join(_cell(*r.score(k)) for k in KINDS)
                     + " |")
    if builtin is not None and any(r.scenario not in builtin for r in results):
        inside = [r for r in results if r.scenario in builtin]
        lines.append("| built-in scenarios | " + " | ".join(_total(inside, k) for k in KINDS)
                     + " |")
    lines.append("| all | " + " | ".join(_total(results, k) for k in KINDS) + " |")
    return "\n".join(lines) + "\n"


def run_qa_suite(out: TextIO, scenarios: Sequence[str] | None = None,
                 show_failures: int = 3) -> list[QAResult]:
    """Run every named built-in scenario (default: all), print the accuracy table and a few
    wrong answers per kind to ``out``, and return the results."""
    names = list(QA_NAMES if scenarios is None else scenarios)
    out.write("# locimem question answering (simulated scenarios; agent tools + offline "
              "verbalizer)\n\nQuestions written from each scenario's ground truth at its last "
              "scan, asked through the `ask_memory` tool, graded against what a perfect "
              f"memory could know (places within {THRESHOLD_M} m).\n\n")
    out.flush()
    results = []
    with tempfile.TemporaryDirectory(prefix="locimem-qa-") as tmp:
        for name in names:
            results.append(run_qa(build_scenario(name), tmp))
    out.write(format_table(results, builtin=NAMES))
    if show_failures:
        wrong = [(r.scenario, g) for r in results for g in r.graded if not g.ok]
        if wrong:
            out.write("\nWrong answers (first few per kind):\n\n")
        for k in KINDS:
            for scenario, g in [w for w in wrong if w[1].question.kind == k][:show_failures]:
                out.write(f"- {scenario}: {g.question.text!r} -> {g.answer!r} ({g.why})\n")
    out.flush()
    return results
