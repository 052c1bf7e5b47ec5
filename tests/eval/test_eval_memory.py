"""Memory-level metrics on hand-made runs whose every figure is worked out in the test."""

from __future__ import annotations

import math

import pytest

from locimem.eval.memory_metrics import (
    HypFrame,
    Hypothesis,
    Move,
    RecallAnswer,
    RecallQuestion,
    Removal,
    TruthFrame,
    frame_quality,
    recall_accuracy,
    recall_questions,
    score,
)

A, B, C = (0.0, 0.0, 0.0), (3.0, 0.0, 0.0), (6.0, 0.0, 0.0)


def H(i, at, label="cup"):  # a hypothesis
    return Hypothesis(i, label, at)


def T(t, present, known, visible=(), detected=()):  # a truth frame
    return TruthFrame(t, present, known, frozenset(visible), frozenset(detected))


# -- one frame ------------------------------------------------------------------------------------
def test_frame_quality_matches_duplicates_and_phantoms():
    truth = T(0.0, present={1: A, 2: B, 3: C}, known={1: A, 2: (2.0, 0.0, 0.0)})
    hyps = HypFrame(0.0, (
        H(10, (0.05, 0.0, 0.0)),
        H(11, (0.2, 0.0, 0.0)),  # a second identity for object 1
        H(12, (2.1, 0.0, 0.0), "mug"),  # object 2 where it was last seen (moved unseen)
        H(13, B),  # object 2's true place, which no memory could know: a phantom
        H(14, (6.1, 0.0, 0.0), "book"),  # object 3, never seen: compared at its true place
        H(15, (9.0, 9.0, 0.0)),  # nothing anywhere near
    ))
    q = frame_quality(truth, hyps, {1: "cup", 2: "cup", 3: "book"}, threshold_m=0.5)
    assert [(o, h) for o, h, _ in q.pairs] == [(1, 10), (2, 12), (3, 14)]
    assert q.pairs[0][2] == pytest.approx(0.05)
    assert q.duplicates == ((11, 1),)
    assert q.phantoms == (13, 15)
    assert (q.n_known, q.n_known_covered, q.coverage) == (2, 2, 1.0)
    assert q.n_labels_right == 2  # 12 says mug for a cup


def test_matching_prefers_more_pairs_over_a_shorter_one():
    truth = T(0.0, present={1: A, 2: (0.6, 0.0, 0.0)}, known={1: A, 2: (0.6, 0.0, 0.0)})
    # 20 is the nearest to object 1 (0.25 m against 0.3 m), but only 20 reaches object 2:
    # taking the nearest first would leave object 2 uncovered and 21 a duplicate.
    hyps = HypFrame(0.0, (H(20, (0.25, 0.0, 0.0)), H(21, (-0.3, 0.0, 0.0))))
    q = frame_quality(truth, hyps, {1: "cup", 2: "cup"})
    assert sorted((o, h) for o, h, _ in q.pairs) == [(1, 21), (2, 20)]
    assert q.duplicates == () and q.phantoms == ()


def test_coverage_counts_only_known_objects_and_is_one_when_nothing_is_known():
    q = frame_quality(T(0.0, {1: A}, {}), HypFrame(0.0, ()), {1: "cup"})
    assert q.coverage == 1.0 and q.n_known == 0
    q = frame_quality(T(0.0, {1: A, 2: B}, {1: A, 2: B}), HypFrame(0.0, (H(5, B),)),
                      {1: "cup", 2: "cup"})
    assert q.coverage == 0.5


# -- a far move -----------------------------------------------------------------------------------
def _move_run(last_hyps):
    truths = [
        T(0, {1: A}, {1: A}, {1}, {1}),
        T(1, {1: A}, {1: A}, {1}, {1}),
        T(2, {1: B}, {1: A}),  # moved, not seen
        T(3, {1: B}, {1: B}, {1}, {1}),  # first seen at the new place
        T(4, {1: B}, {1: B}, {1}, {1}),
        T(5, {1: B}, {1: B}, {1}, {1}),
    ]
    hyps = [HypFrame(0, (H(7, A),)), HypFrame(1, (H(7, A),)), HypFrame(2, (H(7, A),)),
            HypFrame(3, (H(7, A),)),
            HypFrame(4, (H(7, A), H(8, B))),  # right place, but a ghost at the old one
            HypFrame(5, last_hyps)]
    return score(truths, hyps, {1: "cup"}, moves=[Move(2.0, 1, A, B)])


def test_far_move_latency_counts_from_first_sight_and_needs_the_ghost_gone():
    (m,) = _move_run((H(8, B),)).moves
    assert (m.t_move_s, m.t_seen_s, m.latency_s, m.kept_id) == (2.0, 3.0, 2.0, False)
    (m,) = _move_run((H(7, B),)).moves
    assert (m.latency_s, m.kept_id) == (2.0, True)
    (m,) = _move_run((H(7, A), H(8, B))).moves
    assert m.latency_s is None and m.kept_id is None


# -- a removal ------------------------------------------------------------------------------------
def test_removal_latency_runs_from_seeing_the_place_empty_to_lost():
    truths = [T(0, {1: A, 2: B}, {1: A, 2: B}, {1, 2}, {1, 2}),
              T(1, {1: A, 2: B}, {1: A, 2: B}, {1, 2}, {1, 2}),
              T(2, {2: B}, {1: A, 2: B}, {2}, {2}),  # removed while the camera looks away
              T(3, {2: B}, {2: B}, {2}, {2}),  # the place is seen empty
              T(4, {2: B}, {2: B}, {2}, {2}),
              T(5, {2: B}, {2: B}, {2}, {2}),
              T(6, {2: B}, {2: B}, {2}, {2}),
              T(7, {2: B}, {2: B}, {2}, {2})]
    held = {5: (H(7, A),), 6: (H(7, A),)}
    hyps = []
    for k in range(8):
        pub = (H(7, A), H(9, B)) if k < 5 else (H(9, B),)
        hyps.append(HypFrame(k, pub, held.get(k, ()), (H(7, A),) if k == 7 else ()))
    report = score(truths, hyps, {1: "cup", 2: "vase"}, removals=[Removal(2.0, 1, A)])
    (r,) = report.removals
    assert (r.t_seen_s, r.hypothesis_id, r.to_unpublished_s, r.to_lost_s) == (3.0, 7, 2.0, 4.0)
    assert [len(f.phantoms) for f in report.frames] == [0, 0, 0, 1, 1, 0, 0, 0]
    assert report.wrongful_losses == ()  # losing a removed thing is right


def test_a_removal_the_memory_never_published_has_no_latency():
    truths = [T(0, {1: A}, {1: A}, {1}, {1}), T(1, {}, {})]
    report = score(truths, [HypFrame(0, ()), HypFrame(1, ())], {1: "cup"},
                   removals=[Removal(1.0, 1, A)])
    (r,) = report.removals
    assert (r.t_seen_s, r.hypothesis_id, r.to_unpublished_s, r.to_lost_s) == (1.0, None, None,
                                                                               None)


# -- wrongful losses ------------------------------------------------------------------------------
def _loss_run(visible_after: int, *, also_held=(), removed=False, published=True):
    """Object 1 detected at t=0, then visible (undetected) in ``visible_after`` scans, and its
    hypothesis 7 lost at t=4."""
    truths = []
    for k in range(5):
        vis = {1} if k == 0 or 1 <= k <= visible_after else set()
        present = {} if removed and k >= 1 else {1: A}
        truths.append(T(k, present, dict(present), vis & set(present), {1} if k == 0 else ()))
    hyps = [HypFrame(0, (H(7, A),) if published else (), () if published else (H(7, A),))]
    hyps += [HypFrame(k, (), (H(7, A), *also_held)) for k in (1, 2, 3)]
    hyps.append(HypFrame(4, (), also_held, (H(7, A),)))
    return score(truths, hyps, {1: "cup"}, min_looks=3).wrongful_losses


def test_a_loss_while_out_of_view_is_wrongful_and_unseen():
    (w,) = _loss_run(0)
    assert (w.hypothesis_id, w.object_id, w.t_s, w.looks, w.unseen) == (7, 1, 4.0, 0, True)
    (w,) = _loss_run(2)
    assert (w.looks, w.unseen) == (2, True)


def test_a_loss_after_enough_looks_is_wrongful_but_not_unseen():
    (w,) = _loss_run(3)
    assert (w.looks, w.unseen) == (3, False)


def test_losses_that_are_right_or_harmless_are_not_counted():
    assert _loss_run(0, removed=True) == ()  # nothing there any more
    assert _loss_run(0, also_held=(H(8, (0.1, 0.0, 0.0)),)) == ()  # another id stands for it
    assert _loss_run(0, published=False) == ()  # never published: a tentative false start


# -- recall ---------------------------------------------------------------------------------------
def test_recall_questions_ask_for_known_places_and_for_removed_labels():
    labels = {1: "cup", 2: "cup", 3: "vase", 4: "book", 5: "glass", 6: "glass"}
    first = T(0, {1: A, 2: B, 3: C, 4: C, 5: A, 6: B}, {3: C, 4: C, 5: A, 6: B})
    last = T(1, {1: A, 2: B, 4: (9.0, 0, 0), 6: B}, {1: A, 2: B, 6: B})
    qs = recall_questions([first, last], labels)
    assert qs == [RecallQuestion("cup", (A, B)), RecallQuestion("glass", (B,)),
                  RecallQuestion("vase", ())]  # no question about the book: moved, unseen


def test_recall_answers_are_graded_by_place_and_by_honesty_about_loss():
    qs = [RecallQuestion("cup", (A, B)), RecallQuestion("mug", (A,)),
          RecallQuestion("vase", ()), RecallQuestion("book", ()), RecallQuestion("pen", (A,)),
          RecallQuestion("bowl", (A,))]
    answers = {
        "cup": RecallAnswer("cup", True, False, (3.2, 0.0, 0.0)),  # near the second cup
        "mug": RecallAnswer("mug", True, True, A),  # right place, but calls it lost
        "vase": RecallAnswer("vase", True, True, C),  # removed, and it says lost
        "book": RecallAnswer("book", True, False, C),  # removed, but it says it is there
        "pen": RecallAnswer("pen", False),
    }
    graded = recall_accuracy(qs, answers)
    assert [ok for _, _, ok in graded] == [True, False, True, False, False, False]
    assert graded[-1][1] is None


# -- the whole run --------------------------------------------------------------------------------
def test_score_puts_it_together():
    truths = [T(0, {1: A, 2: B}, {1: A}, {1}, {1}), T(1, {1: A, 2: B}, {1: A, 2: B}, {1, 2},
                                                    {1, 2})]
    hyps = [HypFrame(0, (H(5, A), H(6, C, "vase"))), HypFrame(1, (H(5, A), H(7, B, "mug")))]
    report = score(truths, hyps, {1: "cup", 2: "book"},
                   answers={"cup": RecallAnswer("cup", True, False, A)})
    mot = report.mot
    assert (mot.num_objects, mot.num_predictions, mot.num_matches, mot.num_false_positives) == (
        3, 4, 3, 1)
    assert mot.mota == pytest.approx(1 - 1 / 3)
    assert (report.duplicates_end, report.phantoms_end, report.coverage_end) == (0, 0, 1.0)
    assert report.phantoms_mean == 0.5
    assert report.label_accuracy == 2 / 3  # 5 is a cup twice; 7 calls the book a mug
    assert [q.label for q, _, _ in report.recall] == ["book", "cup"]
    assert report.recall_accuracy == 0.5
    assert (report.lost_out_of_view, report.lost_in_view) == (0, 0)


def test_score_refuses_misaligned_or_empty_runs():
    with pytest.raises(ValueError, match="2 truth frames but 1 hypothesis frames"):
        score([T(0, {}, {}), T(1, {}, {})], [HypFrame(0, ())], {})
    with pytest.raises(ValueError, match="no frames"):
        score([], [], {})
    assert math.isnan(score([T(0, {}, {})], [HypFrame(0, ())], {}).label_accuracy)


def test_the_metrics_import_nothing_of_locimem_but_each_other():
    import ast
    import importlib.util
    from pathlib import Path

    for module in ("locimem.eval.mot", "locimem.eval.memory_metrics"):
        tree = ast.parse(Path(importlib.util.find_spec(module).origin).read_text("utf-8"))
        imported = {n.module for n in ast.walk(tree) if isinstance(n, ast.ImportFrom)}
        imported |= {a.name for n in ast.walk(tree) if isinstance(n, ast.Import)
                     for a in n.names}
        ours = {m for m in imported if m and m.split(".")[0] == "locimem"}
        assert ours <= {"locimem.eval.mot"}, (module, ours)
        assert {m.split(".")[0] for m in imported} <= {"__future__", "collections", "dataclasses",
                                                       "itertools", "math", "numpy", "scipy",
                                                       "statistics", "typing", "locimem"}
