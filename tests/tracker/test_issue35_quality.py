"""Issue 35's failures under the rays detector, each fixed with exact outcomes: what the
memory holds, and what must be absent (a second identity, a phantom at an old place)."""

from __future__ import annotations

import collections

from locimem import Detection, ObjectMemory
from locimem.eval.run import evaluate, play
from locimem.sim.scenarios import build

SHELF = Detection("bookshelf", 0.9, (0.21, 1.67, 0.76), (0.36, 1.1, 1.59))
GLASS = Detection("glass", 0.9, (0.23, 1.54, 0.89), (0.07, 0.07, 0.12))  # 19 cm from its centre


def test_a_glass_on_a_bookshelf_is_not_the_bookshelf_seen_again() -> None:
    with ObjectMemory.open(":memory:") as mem:
        for t in range(2):
            mem.observe(float(t), [SHELF])
        r = mem.observe(2.0, [GLASS])  # the shelf not detected in this scan
        assert r.assignments == (2,)  # a new identity, not the shelf's
        for t in range(3, 9):
            mem.observe(float(t), [SHELF, GLASS])
        shelf, glass = mem.get(1), mem.get(2)
        assert (shelf.label, glass.label) == ("bookshelf", "glass")
        assert shelf.size[2] > 1.5 and glass.size[2] < 0.13  # neither box dragged
        assert sorted(o.label for o in mem.objects()) == ["bookshelf", "glass"]


def test_thin_removals_204_the_glass_on_the_shelf_keeps_its_own_identity() -> None:
    # (a tuning day) the shelf's identity took the glass's sightings, 0.19 m off its centre,
    # became "glass" and was then taken for the furniture: the glass unpublished 212 scans
    s = build("thin_removals", 204, detector="rays")
    run = play(s, furniture=True)
    glass = [o for o, spec in s.objects.items() if spec.label == "glass"
             and abs(s.frames[-1].truth.present[o][2] - 0.91) < 0.01]
    assert len(glass) == 1
    place = s.frames[-1].truth.present[glass[0]]
    near = collections.Counter(
        h.id for f in run.frames[30:] for h in f.published
        if sum((a - b) ** 2 for a, b in zip(h.center, place, strict=True)) < 0.1 ** 2)
    assert len(near) == 1 and min(near.values()) == len(run.frames) - 30  # one, every scan


def _published_at(run, place, radius_m: float = 0.2) -> list[set[int]]:
    """Per scan, the ids published within ``radius_m`` of ``place``."""
    return [{h.id for h in f.published
             if sum((a - b) ** 2 for a, b in zip(h.center, place, strict=True)) < radius_m ** 2}
            for f in run.frames]


def test_long_absence_202_a_book_seen_over_the_shelfs_lip_stays_published() -> None:
    # (a tuning day) a book on a high shelf is detected from its front face alone (a box
    # 1 cm deep), 20-40 % of it in sight; later looks saw that face clearly and counted
    # full misses while the detector, seeing a fifth of the book, found it seldom: doubted
    # at its second look, and unpublished through the two hours away (180 scans). Its
    # estimate is worth a fifth of a sighting, and the shelf's lip borders it.
    s = build("long_absence", 202, detector="rays")
    run = play(s, furniture=True)
    (book,) = [o for o, spec in s.objects.items() if spec.label == "book"
               and abs(s.frames[0].truth.present[o][2] - 1.67) < 0.01]
    first = next(k for k, f in enumerate(s.frames) if book in f.sources)
    near = _published_at(run, s.frames[0].truth.present[book])
    assert first == 40
    assert all(len(ids) == 1 for ids in near[first:])  # one identity, every scan after
    assert len(set().union(*near[first:])) == 1


def test_thin_desk_205_keys_carried_along_the_desk_leave_no_phantom() -> None:
    # (a tuning day) keys 2 cm thick, carried 1.2 m while the robot was away: their old
    # place on the desk reads "occupied" whether they are there or not, and their far
    # sightings (picked out by their embedding) were held as outliers for two scans more
    s = build("thin_desk", 205, detector="rays")
    run = play(s, furniture=True)
    report = evaluate(s, run)
    assert report.phantoms_mean == 0.0 and report.duplicates_mean == 0.0
    (keys,) = [o for o, spec in s.objects.items() if spec.label == "keys"]
    (move,) = [e for e in s.events if e.object_id == keys]
    k = next(i for i, f in enumerate(s.frames) if f.t >= move.t and keys in f.sources)
    assert not _published_at(run, move.from_m, 0.1)[k]  # gone from the old place at once
    assert len(set().union(*_published_at(run, move.to_m, 0.1))) == 1  # one keys identity
