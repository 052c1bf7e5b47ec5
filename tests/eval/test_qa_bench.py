"""The question-answering benchmark: questions from simulated ground truth, answered through
the tools and the offline verbalizer, graded per kind."""

from __future__ import annotations

import io

import pytest

from locimem.bench import qa
from locimem.bench.qa import KINDS, Question, build_scenario, grade, make_questions, run_qa
from locimem.sim.scenarios import build


def lookup_from(objects: dict[int, dict]):
    return lambda oid: objects.get(oid)


CUP = {"id": 2, "label": "cup", "at_m": [1.0, 1.0, 0.8], "status": "confirmed",
       "room": "kitchen"}
TABLE = {"id": 1, "label": "table", "at_m": [1.0, 1.1, 0.4], "status": "confirmed"}
MUG = {"id": 3, "label": "mug", "at_m": [1.3, 1.0, 0.8], "status": "confirmed"}
LOST_CUP = dict(CUP, status="lost")
PLATE = {"id": 5, "label": "plate", "at_m": [3.0, 3.0, 0.8], "status": "confirmed"}
LOOK = lookup_from({1: TABLE, 2: CUP, 3: MUG, 4: LOST_CUP, 5: PLATE})


@pytest.mark.parametrize(("question", "answer", "ok"), [
    (Question("where_is", "Where is the cup?", {"place": (1.1, 1.0, 0.8)}),
     "The cup (#2) is on the table (#1).", True),
    (Question("where_is", "Where is the cup?", {"place": (3.0, 1.0, 0.8)}),
     "The cup (#2) is on the table (#1).", False),
    (Question("where_is", "Where is the cup?", {"place": (1.0, 1.0, 0.8)}),
     "The cup (#4) is lost.", False),
    (Question("where_is", "Where is the cup?", {"place": (1.0, 1.0, 0.8)}),
     "I have no memory of anything called 'cup'.", False),
    (Question("which_room", "Which room is the cup in?",
              {"place": (1.0, 1.0, 0.8), "room": "kitchen"}),
     "The cup (#2) is in the kitchen.", True),
    (Question("which_room", "Which room is the cup in?",
              {"place": (1.0, 1.0, 0.8), "room": "living"}),
     "The cup (#2) is in the kitchen.", False),
    (Question("still_there", "Is the cup still there?", {"yes": True, "place": (1, 1, 0.8)}),
     "Yes. The cup (#2) is on the table (#1).", True),
    (Question("still_there", "Is the cup still there?", {"yes": True, "place": (1, 1, 0.8)}),
     "Probably. The cup (#2) was last seen …", True),
    (Question("still_there", "Is the cup still there?", {"yes": True, "place": (1, 1, 0.8)}),
     "No. The cup (#4) is lost.", False),
    (Question("still_there", "Is the vase still there?", {"yes": False}),
     "Probably not. The vase (#4) was last seen …", True),
    (Question("still_there", "Is the vase still there?", {"yes": False}),
     "Yes. The vase (#2) is …", False),
    (Question("what_is_on", "What is on the table?",
              {"center": (1.0, 1.0, 0.4), "objects": [("mug", (1.3, 1.0, 0.8)),
                                                      ("cup", (1.0, 1.0, 0.8))]}),
     "On the table (#1): cup (#2), mug (#3).", True),
    (Question("what_is_on", "What is on the table?",
              {"center": (1.0, 1.0, 0.4), "objects": [("cup", (1.0, 1.0, 0.8))]}),
     "On the table (#1): cup (#2), mug (#3).", False),
    (Question("what_is_on", "What is on the table?",
              {"center": (1.0, 1.0, 0.4), "objects": [("cup", (1.0, 1.0, 0.8)),
                                                      ("cup", (1.3, 1.0, 0.8))]}),
     "On the table (#1): cup (#2), mug (#3).", False),
    (Question("what_is_on", "What is on the table?", {"center": (5.0, 1.0, 0.4),
                                                      "objects": []}),
     "On the table (#1): nothing that I know of.", False),
    (Question("what_is_x_on", "What is the cup on?",
              {"place": (1.0, 1.0, 0.8), "furniture": "table", "center": (1.0, 1.0, 0.4)}),
     "The cup (#2) is on the table (#1).", True),
    (Question("what_is_x_on", "What is the cup on?",  # names the cup, not what it is on
              {"place": (1.0, 1.0, 0.8), "furniture": "table", "center": (1.0, 1.0, 0.4)}),
     "The cup (#2) is at (1.10, 1.00, 0.80).", False),
    (Question("what_is_x_on", "What is the cup on?",  # the wrong support
              {"place": (1.0, 1.0, 0.8), "furniture": "desk", "center": (3.0, 3.0, 0.4)}),
     "The cup (#2) is on the table (#1).", False),
    (Question("what_is_x_on", "What is the cup on?",  # another object first
              {"place": (3.0, 3.0, 0.8), "furniture": "table", "center": (1.0, 1.0, 0.4)}),
     "The cup (#2) is on the table (#1).", False),
])
def test_grading(question, answer, ok):
    assert grade(question, answer, LOOK)[0] is ok


def test_grading_changes():
    q = Question("changes_since", "What changed since t=10.0?", {
        "since": 10.0, "expected": [
            {"kind": "move_far", "label": "cup", "from": (5, 5, 0.8), "to": (1.0, 1.0, 0.8)},
            {"kind": "remove", "label": "cup", "from": (1.0, 1.0, 0.8), "to": None}],
        "steady": [("mug", (1.3, 1.0, 0.8)), ("plate", (3.0, 3.1, 0.8))], "new": []})
    assert grade(q, "Since t=10.0 s: cup (#2) moved; cup (#4) lost.", LOOK)[0] is True
    assert grade(q, "Since t=10.0 s: cup (#2) moved.", LOOK) == (False, "misses cup remove")
    assert grade(q, "Since t=10.0 s: cup (#2) moved; cup (#4) lost; plate (#5) lost.",
                 LOOK) == (False, "says #5 plate lost")
    # a new relation of a steady object is no false claim
    assert grade(q, "Since t=10.0 s: cup (#2) moved; cup (#4) lost; plate (#5) now on #1 "
                    "table.", LOOK)[0] is True


@pytest.fixture(scope="module")
def kitchen(tmp_path_factory):
    return run_qa(build("kitchen_day"), tmp_path_factory.mktemp("qa"))


def test_kitchen_day_questions_and_answers(kitchen):
    asked = {k: kitchen.score(k)[1] for k in KINDS}
    # (its moved things share their label with others: "where did X go" is asked elsewhere)
    assert all(n > 0 for k, n in asked.items() if k != "where_went"), asked
    # every answer came through the tools and cites what it speaks of
    for g in kitchen.graded:
        assert g.answer and "\n" not in g.answer
    for kind in ("where_is", "which_room", "still_there"):
        right, n = kitchen.score(kind)
        assert right == n, [(g.question.text, g.answer, g.why) for g in kitchen.graded
                            if g.question.kind == kind and not g.ok]


def test_questions_come_from_ground_truth():
    s = build("removals")
    questions = make_questions(s)
    assert questions == make_questions(s)  # deterministic
    changes = [q for q in questions if q.kind == "changes_since"]
    assert {e["kind"] for q in changes for e in q.truth["expected"]} == {"remove", "add"}
    texts = [q.text for q in questions]
    assert len(texts) == len(set(texts))
    own = make_questions(build_scenario("qa_removals"))
    assert sorted(q.text for q in own if q.kind == "still_there" and not q.truth["yes"]) == [
        "Is the keyboard on the counter still there?", "Is the keyboard still there?",
        "Is the laptop on the coffee table still there?", "Is the laptop still there?"]


def test_the_cli_prints_the_table(monkeypatch, capsys):
    from locimem.cli import main

    monkeypatch.setattr(qa, "QA_NAMES", ("kitchen_day",))
    assert main(["bench", "qa"]) == 0
    out = capsys.readouterr().out
    assert "| scenario | where is X | what is on Y | is X still there | what changed since T |" \
           " which room is X in |" in out
    assert "| kitchen_day |" in out and "| all | **" in out


def test_format_table(kitchen):
    text = qa.format_table([kitchen])
    assert text.count("\n") == 4
    buf = io.StringIO()
    buf.write(text)
    assert "%" in buf.getvalue()


def test_where_did_it_go_is_asked_about_things_moved_far():
    s = build("moves_across_rooms")
    went = [q for q in make_questions(s) if q.kind == "where_went"]
    moved = {e.object_id for e in s.events if e.kind == "move_far"}
    assert went and all(q.text == f"Where did the {q.truth['label']} go?" for q in went)
    assert {q.truth["label"] for q in went} <= {s.label_of(o) for o in moved}
