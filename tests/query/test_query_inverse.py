"""Inverse relations answered: "what is the book on", "what is X in / under / next to",
"which shelf is the book on" — and "what is under the book" names what it rests on."""

from __future__ import annotations

import pytest

from locimem import Detection, ObjectMemory
from locimem.language.router import IntentKind

TABLE = Detection("kitchen table", 0.9, (1.0, 1.0, 0.375), (1.2, 0.8, 0.75))
BOOK = Detection("book", 0.9, (0.8, 1.0, 0.78), (0.2, 0.15, 0.05))
KEYS = Detection("keys", 0.9, (1.3, 0.9, 0.76), (0.08, 0.04, 0.02))
MUG = Detection("mug", 0.9, (3.0, 1.0, 0.9), (0.08, 0.08, 0.1))


@pytest.fixture(scope="module")
def mem():
    with ObjectMemory.open(":memory:", scope="flat") as m:
        m.define_room("kitchen", [(0, 0), (5, 0), (5, 3), (0, 3)])
        for t in range(6):
            m.observe(float(t), [TABLE, BOOK, KEYS, MUG])
        yield m


@pytest.mark.parametrize(("question", "answer", "ids"), [
    ("what is the book on", "The book (#2) is on the kitchen table (#1).", (1,)),
    ("What's the book lying on?", "The book (#2) is on the kitchen table (#1).", (1,)),
    ("what are the keys on", "The keys (#3) are on the kitchen table (#1).", (1,)),
    ("what does the book rest on", "The book (#2) is on the kitchen table (#1).", (1,)),
    ("which table is the book on", "The book (#2) is on the kitchen table (#1).", (1,)),
    ("what is under the book", "Under the book (#2): kitchen table (#1).", (1,)),
    ("what is the kitchen table under",
     "The kitchen table (#1) is under the keys (#3) and the book (#2).", (3, 2)),
    ("what is the book in", "The book (#2) is in the kitchen.", (2,)),
])
def test_inverse_questions_are_answered(mem, question, answer, ids) -> None:
    r = mem.query(question)
    assert (r.text, tuple(o.id for o in r.objects), r.found) == (answer, ids, True)


def test_what_it_is_not_on_is_said_plainly(mem) -> None:
    r = mem.query("which shelf is the book on")
    assert r.intent.kind is IntentKind.INVERSE and r.found is False
    assert r.text == ("The book (#2) is on no shelf that I know of; it is on the kitchen "
                      "table (#1).")
    r = mem.query("what is the mug under")
    assert (r.text, r.found) == ("The mug (#4): I know of nothing it is under.", False)
    r = mem.query("what is the umbrella on")
    assert (r.text, r.found) == ("I have no memory of anything called 'umbrella'.", False)
