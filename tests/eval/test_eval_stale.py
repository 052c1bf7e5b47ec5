"""A stale belief is a phantom, not a duplicate: a hypothesis that stood for a thing since
taken away (or moved and seen elsewhere) is not a second identity of whatever stands beside
its old place. A second identity that never stood for anything else still is one."""

from __future__ import annotations

from locimem.eval.memory_metrics import HypFrame, Hypothesis, TruthFrame, frame_quality, score

CUP, BOWL = (0.0, 0.0, 0.8), (0.3, 0.0, 0.8)  # 30 cm apart: within the 0.5 m threshold
LABELS = {1: "cup", 2: "bowl"}


def T(t, present, known):
    return TruthFrame(t, present, known, frozenset(present), frozenset(known))


def test_a_removed_things_belief_beside_another_is_a_phantom():
    truths = [T(0, {1: CUP, 2: BOWL}, {1: CUP, 2: BOWL}),
              T(1, {2: BOWL}, {2: BOWL}),  # the cup taken away, its place seen empty
              T(2, {2: BOWL}, {2: BOWL})]
    both = (Hypothesis(10, "cup", CUP), Hypothesis(11, "bowl", BOWL))
    hyps = [HypFrame(0, both), HypFrame(1, both), HypFrame(2, both[1:])]
    report = score(truths, hyps, LABELS)
    assert [f.duplicates for f in report.frames] == [(), (), ()]
    assert [f.phantoms for f in report.frames] == [(), (10,), ()]
    # frame by frame without the history, the old rule: a "duplicate" of the bowl
    alone = frame_quality(truths[1], hyps[1], LABELS)
    assert alone.duplicates == ((10, 2),) and alone.phantoms == ()


def test_a_moved_things_old_identity_is_a_phantom_once_it_is_seen_elsewhere():
    far = (3.0, 0.0, 0.8)
    truths = [T(0, {1: CUP, 2: BOWL}, {1: CUP, 2: BOWL}),
              T(1, {1: far, 2: BOWL}, {1: far, 2: BOWL})]
    hyps = [HypFrame(0, (Hypothesis(10, "cup", CUP), Hypothesis(11, "bowl", BOWL))),
            HypFrame(1, (Hypothesis(10, "cup", CUP), Hypothesis(11, "bowl", BOWL),
                         Hypothesis(12, "cup", far)))]
    report = score(truths, hyps, LABELS)
    assert report.frames[1].pairs[0][:2] == (1, 12)
    assert report.frames[1].duplicates == () and report.frames[1].phantoms == (10,)


def test_a_second_identity_of_one_thing_is_still_a_duplicate():
    truths = [T(0, {1: CUP, 2: BOWL}, {1: CUP, 2: BOWL})] * 3
    one = (Hypothesis(10, "cup", CUP), Hypothesis(11, "bowl", BOWL))
    twin = Hypothesis(12, "cup", (0.05, 0.0, 0.8))
    hyps = [HypFrame(0, one), HypFrame(1, (*one, twin)), HypFrame(2, (*one, twin))]
    report = score(truths, hyps, LABELS)
    assert [f.duplicates for f in report.frames] == [(), ((12, 1),), ((12, 1),)]
    assert all(f.phantoms == () for f in report.frames)


def test_an_identity_that_took_over_still_stands_for_its_object():
    # 10 stood for the cup, then 12 took the match (nearer); 10 stays beside the cup: it is
    # a second identity of the cup (its partner is still there), not a stale one
    truths = [T(0, {1: CUP}, {1: CUP})] * 2
    hyps = [HypFrame(0, (Hypothesis(10, "cup", (0.1, 0.0, 0.8)),)),
            HypFrame(1, (Hypothesis(10, "cup", (0.1, 0.0, 0.8)), Hypothesis(12, "cup", CUP)))]
    report = score(truths, hyps, {1: "cup"})
    assert report.frames[1].duplicates == ((10, 1),) and report.frames[1].phantoms == ()
