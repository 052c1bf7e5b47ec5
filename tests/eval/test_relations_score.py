"""Relations F1: exact counts on hand-made scans."""

from __future__ import annotations

import pytest

from locimem.eval.relations import RelationScore, match_ids, relation_score, scan_relations


def test_relation_score_counts_exactly() -> None:
    truth = {(1, "on", "table"), (2, "on", "table"), (3, "under", "table")}
    predicted = {(1, "on", "table"), (2, "in", "table"), (3, "under", "table"),
                 (4, "on", "desk")}
    s = relation_score(truth, predicted)
    assert (s.tp, s.fp, s.fn) == (2, 2, 1)
    assert s.precision == 0.5 and s.recall == pytest.approx(2 / 3)
    assert s.f1 == pytest.approx(2 * 2 / (2 * 2 + 2 + 1))  # 4/7
    assert RelationScore().f1 == 1.0  # nothing to get wrong
    assert (s + s).tp == 4 and (s + s).f1 == s.f1


def test_a_scan_scores_matched_items_to_published_furniture_only() -> None:
    known = {10: (1.0, 1.0, 0.8), 11: (1.2, 1.0, 0.8), 12: (3.0, 3.0, 0.5)}
    truth = {(10, "on", "kitchen/table"), (11, "on", "kitchen/table"),
             (12, "on", "living/coffee_table")}
    items = {1: (1.02, 1.0, 0.8), 2: (1.19, 1.01, 0.8), 3: (5.0, 5.0, 0.5)}  # 3: a phantom
    furniture = {7: "kitchen/table"}  # the coffee table is not published yet
    relations = [(1, "on", 7), (2, "under", 7), (3, "on", 7), (1, "next_to", 2)]
    s = scan_relations(relations, items, furniture, known, truth)
    # 1 on the table: right; 2 under it: wrong, and its "on" missed; the phantom's and
    # next_to are not scored; 12 is neither published nor on published furniture
    assert (s.tp, s.fp, s.fn) == (1, 1, 1)
    assert s.f1 == 0.5


def test_matching_is_one_to_one_within_the_threshold() -> None:
    hyp = {1: (0.0, 0.0, 0.0), 2: (0.1, 0.0, 0.0), 3: (9.0, 0.0, 0.0)}
    ref = {10: (0.09, 0.0, 0.0), 11: (0.0, 0.0, 0.0)}
    assert match_ids(hyp, ref) == {1: 11, 2: 10}
    assert match_ids(hyp, {}) == {} and match_ids({}, ref) == {}
