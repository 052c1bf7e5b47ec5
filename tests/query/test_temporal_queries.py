"""Questions about time — ``recent``, ``stale``, ``last_seen``, ``changes_since`` (grouped by
object: appeared, moved, relabelled, lost) and ``where_was`` before and after a move — on the
live memory and on as-of views."""

from __future__ import annotations

import math
from collections.abc import Iterator
from pathlib import Path

import pytest

from locimem import Detection, EventKind, ObjectMemory, ObjectStatus
from locimem.errors import InvalidInput

CUP, BOOK, REMOTE, KEY = 1, 2, 3, 4
CUP_HOME, CUP_MOVED = (1.0, 0.0, 0.9), (1.5, 0.0, 0.9)


def d(label: str, x: float) -> Detection:
    return Detection(label, 0.9, (x, 0.0, 0.9), (0.1, 0.1, 0.1))


def play(mem: ObjectMemory) -> None:
    """t = 0..5: cup, book, remote (promoted at 5). t = 10..18: the cup is 0.5 m further on
    (MOVED at 10) and the book is seen as a "notebook" (LABEL_CHANGED at 16, when its votes
    overtake). The remote is not seen again (LOST at 40). A key appears at 30 (tentative)."""
    for t in range(6):
        mem.observe(float(t), [d("cup", 1.0), d("book", 3.0), d("remote", 5.0)])
    for t in range(10, 19):
        mem.observe(float(t), [d("cup", 1.5), d("notebook", 3.0)])
    for t in (20.0, 30.0, 40.0, 41.0):
        mem.observe(t, [d("cup", 1.5), d("notebook", 3.0)] + ([d("key", 7.0)] if t >= 30 else []))


@pytest.fixture(scope="module")
def story(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ObjectMemory]:
    path: Path = tmp_path_factory.mktemp("temporal") / "story.loci"
    with ObjectMemory.open(path, scope="home", durable=False) as mem:
        play(mem)
    with ObjectMemory.open(path, scope="home", read_only=True) as mem:
        yield mem


def ids(objs) -> list[int]:
    return [o.id for o in objs]


def summary(changes) -> list[tuple[int, str, tuple[str, ...]]]:
    return [(c.object_id, c.label, c.changes) for c in changes]


def test_the_story_is_as_told(story: ObjectMemory) -> None:
    events = [(e.t, e.kind, e.object_id) for e in story.events()
              if e.kind is not EventKind.PROMOTED]
    assert events == [(0.0, EventKind.APPEARED, CUP), (0.0, EventKind.APPEARED, BOOK),
                      (0.0, EventKind.APPEARED, REMOTE), (10.0, EventKind.MOVED, CUP),
                      (16.0, EventKind.LABEL_CHANGED, BOOK), (30.0, EventKind.APPEARED, KEY),
                      (40.0, EventKind.LOST, REMOTE)]
    assert [(o.id, o.label, o.status) for o in story.objects()] == [
        (CUP, "cup", ObjectStatus.CONFIRMED), (BOOK, "notebook", ObjectStatus.CONFIRMED),
        (REMOTE, "remote", ObjectStatus.LOST), (KEY, "key", ObjectStatus.TENTATIVE)]


# -- recent -------------------------------------------------------------------------------------

def test_recent(story: ObjectMemory) -> None:
    assert ids(story.recent(1)) == [CUP]  # newest first, ties by id
    assert ids(story.recent(2)) == [CUP, BOOK]
    assert ids(story.recent(3)) == [CUP, BOOK, KEY]
    assert ids(story.recent()) == [CUP, BOOK, KEY, REMOTE]  # every status, the lost one last
    assert ids(story.recent(10, status=["confirmed", "tentative"])) == [CUP, BOOK, KEY]
    assert ids(story.recent(10, label="key")) == [KEY]
    assert ids(story.recent(10, label="book")) == []  # it is a notebook now: whole words
    assert [o.last_seen for o in story.recent()] == [41.0, 41.0, 41.0, 5.0]
    with pytest.raises(InvalidInput, match=r"^n must be >= 1, got 0$"):
        story.recent(0)


def test_recent_orders_by_last_sighting(mem: ObjectMemory) -> None:
    mem.observe(0.0, [d("a", 0.0), d("b", 2.0), d("c", 4.0)])
    mem.observe(1.0, [d("c", 4.0)])
    mem.observe(2.0, [d("a", 0.0)])
    assert ids(mem.recent(3)) == [1, 3, 2]
    assert ids(mem.recent(2)) == [1, 3]


# -- stale --------------------------------------------------------------------------------------

def test_stale(story: ObjectMemory) -> None:
    assert story.stale(before=41.0) == []  # the only stale one, the remote, is lost
    assert ids(story.stale(before=41.0, status="lost")) == [REMOTE]
    assert ids(story.stale(before=41.0, status=None)) == [REMOTE]
    assert ids(story.stale(before=41.5)) == [CUP, BOOK, KEY]  # "before" is strict
    assert ids(story.stale(before=41.5, status=None)) == [REMOTE, CUP, BOOK, KEY]  # oldest first
    assert ids(story.stale(before=41.5, label="cup")) == [CUP]
    with pytest.raises(InvalidInput, match=r"^before must be a finite number, got nan$"):
        story.stale(before=math.nan)


def test_stale_on_an_as_of_view(story: ObjectMemory) -> None:
    then = story.as_of(30.0)  # the remote is not lost yet
    assert then.get(REMOTE).status is ObjectStatus.TENTATIVE
    assert ids(then.stale(before=20.0)) == [REMOTE]
    assert ids(then.stale(before=30.0)) == [REMOTE]
    assert ids(then.stale(before=30.5)) == [REMOTE, CUP, BOOK, KEY]


# -- last_seen ----------------------------------------------------------------------------------

def test_last_seen(story: ObjectMemory) -> None:
    assert story.last_seen("cup").id == CUP
    assert story.last_seen("cups").id == CUP
    assert story.last_seen("the remote").id == REMOTE  # any status, lost included
    assert story.last_seen("notebook").id == BOOK
    assert story.last_seen("book") is None  # whole words: not "notebook"
    assert story.last_seen("sofa") is None
    assert story.as_of(12.0).last_seen("book").id == BOOK  # it was a book then
    assert story.as_of(12.0).last_seen("key") is None  # not seen yet
    assert story.as_of(35.0).last_seen("key").last_seen == 30.0


# -- changes_since ------------------------------------------------------------------------------

def test_changes_since_groups_by_object(story: ObjectMemory) -> None:
    assert summary(story.changes_since(6.0)) == [
        (CUP, "cup", ("moved",)), (BOOK, "notebook", ("relabelled",)),
        (KEY, "key", ("appeared",)), (REMOTE, "remote", ("lost",))]
    assert [c.text() for c in story.changes_since(6.0)] == [
        "#1 cup: moved", "#2 notebook: relabelled", "#4 key: appeared", "#3 remote: lost"]
    assert summary(story.changes_since(0.0)) == [
        (CUP, "cup", ("appeared", "confirmed", "moved")),
        (BOOK, "notebook", ("appeared", "confirmed", "relabelled")),
        (REMOTE, "remote", ("appeared", "confirmed", "lost")),
        (KEY, "key", ("appeared",))]
    (book,) = [c for c in story.changes_since(6.0) if c.object_id == BOOK]
    assert [(e.kind, e.data["from"], e.data["to"]) for e in book.events] == [
        (EventKind.LABEL_CHANGED, "book", "notebook")]
    assert (book.first_t, book.last_t) == (16.0, 16.0)


def test_changes_since_bounds(story: ObjectMemory) -> None:
    assert [c.object_id for c in story.changes_since(16.0)] == [BOOK, KEY, REMOTE]  # inclusive
    assert [c.object_id for c in story.changes_since(16.5)] == [KEY, REMOTE]
    assert [c.object_id for c in story.changes_since(40.0)] == [REMOTE]
    assert story.changes_since(40.5) == []
    assert story.changes_since(1e9) == []
    with pytest.raises(InvalidInput, match=r"^t must be a finite number, got inf$"):
        story.changes_since(math.inf)


def test_changes_since_on_as_of_views(story: ObjectMemory) -> None:
    assert summary(story.as_of(35.0).changes_since(6.0)) == [
        (CUP, "cup", ("moved",)), (BOOK, "notebook", ("relabelled",)),
        (KEY, "key", ("appeared",))]  # the remote is lost only later
    assert summary(story.as_of(12.0).changes_since(6.0)) == [(CUP, "cup", ("moved",))]
    assert story.as_of(9.0).changes_since(6.0) == []


def test_corrections_and_forgetting_in_changes(mem: ObjectMemory) -> None:
    play(mem)
    mem.relabel(KEY, "car key", t=42.0)
    mem.forget(BOOK, t=42.0, reason="private")
    assert summary(mem.changes_since(41.5)) == [(KEY, "car key", ("corrected",))]
    assert BOOK not in [c.object_id for c in mem.changes_since(0.0)]  # forgotten: left out


# -- where_was ----------------------------------------------------------------------------------

def test_where_was_before_and_after_the_move(story: ObjectMemory) -> None:
    before = story.where_was("cup", 5.0)
    assert (before.found, before.object_id, before.center) == (True, CUP, CUP_HOME)
    assert before.status is ObjectStatus.CONFIRMED
    assert before.text == "The cup (#1) is at (1.00, 0.00, 0.90); last seen just now (t=5.0 s)."
    assert story.where_was("cup", 9.0).center == CUP_HOME  # nothing was seen in between
    after = story.where_was("cup", 12.0)
    assert (after.found, after.object_id, after.center) == (True, CUP, CUP_MOVED)
    assert after.text == "The cup (#1) is at (1.50, 0.00, 0.90); last seen just now (t=12.0 s)."
    assert story.where_was(CUP, 5.0).center == CUP_HOME  # by id
    assert story.where_was(CUP, 12.0).center == CUP_MOVED
    assert story.recall("cup").center == CUP_MOVED


def test_where_was_names_and_ids_as_they_were(story: ObjectMemory) -> None:
    assert story.where_was("book", 12.0).object_id == BOOK  # its label then
    assert story.where_was("notebook", 20.0).object_id == BOOK  # its label now
    assert story.where_was("notebook", 12.0).object_id == BOOK  # two "notebook" votes by then
    assert not story.where_was("notebook", 5.0).found  # never called that yet
    key = story.where_was("key", 12.0)
    assert (key.found, key.text) == (False, "I have no memory of anything called 'key'.")
    assert story.where_was("key", 30.0).object_id == KEY
    missing = story.where_was(KEY, 12.0)
    assert (missing.found, missing.text) == (False, "I knew of no object #4 at t=12.0.")
    lost = story.where_was("remote", 41.0)
    assert lost.status is ObjectStatus.LOST and lost.lost_at == 40.0
    assert lost.text == ("The remote (#3) is lost: last seen 36 s ago (t=5.0 s) at (5.00, 0.00, "
                         "0.90) and not seen since; I gave it up at t=40.0 s.")
    assert story.where_was("remote", 30.0).status is ObjectStatus.TENTATIVE
    with pytest.raises(InvalidInput, match=r"^label_or_id must be an integer, got 1.5$"):
        story.where_was(1.5, 3.0)
    with pytest.raises(InvalidInput, match=r"^t must be a finite number, got nan$"):
        story.where_was("cup", math.nan)


def test_where_was_on_as_of_views(story: ObjectMemory) -> None:
    then = story.as_of(12.0)
    assert then.where_was("cup", 5.0).center == CUP_HOME
    assert then.where_was("cup", 12.0).center == CUP_MOVED
    # a view never looks past its own time
    early = story.as_of(8.0)
    assert early.where_was("cup", 12.0).center == CUP_HOME
    assert early.where_was("cup", 12.0).last_seen == 5.0
    assert not early.where_was("key", 35.0).found


def test_the_live_memory_and_the_reopened_one_agree(story: ObjectMemory, mem: ObjectMemory
                                                    ) -> None:
    play(mem)
    for reader in (story, mem):
        assert summary(reader.changes_since(6.0)) == summary(story.changes_since(6.0))
        assert ids(reader.recent()) == [CUP, BOOK, KEY, REMOTE]
        assert reader.where_was("cup", 5.0).center == CUP_HOME
