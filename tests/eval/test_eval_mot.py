"""CLEAR-MOT and IDF1: hand-computed fixtures, and exact parity with motmetrics."""

from __future__ import annotations

import math

import numpy as np
import pytest

from locimem.eval.mot import (
    MotAccumulator,
    MotSummary,
    clear_mot,
    distance_matrix,
    quiet_divide,
    solve_assignment,
)

NAN = math.nan
FIELDS = tuple(MotSummary.__dataclass_fields__)


def run(frames, **kw) -> tuple[MotAccumulator, MotSummary]:
    """frames: (object ids, hypothesis ids, distances)."""
    acc = MotAccumulator(**kw)
    for oids, hids, d in frames:
        acc.update(oids, hids, d)
    return acc, acc.summary()


def kinds(acc: MotAccumulator) -> list[tuple]:
    return [(e.frame, e.kind, e.object_id, e.hypothesis_id) for e in acc.events]


# -- hand-computed fixtures -----------------------------------------------------------------------
PERFECT = [([1, 2], [10, 20], [[0.1, NAN], [NAN, 0.2]]),
           ([1, 2], [10, 20], [[0.0, NAN], [NAN, 0.0]])]

SWITCH = [([1], [7], [[0.1]]),
          ([1], [8], [[0.0]]),
          ([1], [8], [[NAN]])]

# The previous partner is kept while in reach, even when another hypothesis is nearer.
KEEP_PARTNER = [([1], [101], [[0.4]]),
                ([1], [101, 102], [[0.45, 0.0]])]

# Object 2 inherits hypothesis 5 while object 1 is away; when both are back, the one listed
# first keeps it (motmetrics never clears an object's last partner).
INHERIT = [([1], [5], [[0.1]]),
           ([2], [5], [[0.05]]),
           ([1, 2], [5], [[0.1], [0.1]])]

# One object, followed by hypothesis 1 for four frames, then by hypothesis 2 for two.
HANDOVER = [([1], [1], [[0.0]])] * 4 + [([1], [2], [[0.0]])] * 2

FRAGMENTED = [([1], [9], [[0.0]]), ([1], [], []), ([1], [9], [[0.0]]), ([1], [], [])]

ALL_FIXTURES = [PERFECT, SWITCH, KEEP_PARTNER, INHERIT, HANDOVER, FRAGMENTED]


def test_perfect_tracking():
    acc, s = run(PERFECT)
    assert (s.num_matches, s.num_switches, s.num_false_positives, s.num_misses) == (4, 0, 0, 0)
    assert (s.mota, s.idf1, s.idp, s.idr) == (1.0, 1.0, 1.0, 1.0)
    assert s.motp == pytest.approx(0.075, abs=1e-15)
    assert (s.idtp, s.idfp, s.idfn) == (4, 0, 0)
    assert (s.num_frames, s.num_objects, s.num_predictions, s.num_unique_objects) == (2, 4, 4, 2)
    assert (s.mostly_tracked, s.partially_tracked, s.mostly_lost) == (2, 0, 0)
    assert all(e.kind == "MATCH" for e in acc.events)


def test_a_new_hypothesis_id_is_a_switch_and_a_distance_beyond_the_gate_is_miss_plus_fp():
    acc, s = run(SWITCH)
    assert kinds(acc) == [(0, "MATCH", 1, 7), (1, "SWITCH", 1, 8), (2, "MISS", 1, None),
                          (2, "FP", None, 8)]
    assert s.mota == 0.0  # 1 - (1 miss + 1 switch + 1 fp) / 3
    assert s.motp == pytest.approx(0.05, abs=1e-15)
    assert (s.idtp, s.idfp, s.idfn) == (1, 2, 2)
    assert s.idf1 == pytest.approx(1 / 3, abs=1e-15)
    assert (s.idp, s.idr) == (pytest.approx(1 / 3), pytest.approx(1 / 3))
    assert (s.precision, s.recall) == (2 / 3, 2 / 3)


def test_the_previous_partner_is_kept_over_a_nearer_hypothesis():
    acc, s = run(KEEP_PARTNER)
    assert kinds(acc) == [(0, "MATCH", 1, 101), (1, "MATCH", 1, 101), (1, "FP", None, 102)]
    assert (s.num_switches, s.mota) == (0, 0.5)
    assert s.motp == pytest.approx(0.425, abs=1e-15)
    assert (s.idtp, s.idfp, s.idfn) == (2, 1, 0)
    assert s.idf1 == 0.8


def test_an_inherited_partner_goes_to_the_object_listed_first():
    acc, s = run(INHERIT)
    assert kinds(acc) == [(0, "MATCH", 1, 5), (1, "MATCH", 2, 5), (2, "MATCH", 1, 5),
                          (2, "MISS", 2, None)]
    assert (s.num_matches, s.num_misses, s.num_switches, s.mota) == (3, 1, 0, 0.75)
    assert (s.idtp, s.idfp, s.idfn) == (2, 1, 2)
    assert s.idf1 == 4 / 7
    swapped = [([1], [5], [[0.1]]), ([2], [5], [[0.05]]), ([2, 1], [5], [[0.1], [0.1]])]
    acc, _ = run(swapped)
    assert kinds(acc)[2:] == [(2, "MATCH", 2, 5), (2, "MISS", 1, None)]


def test_idf1_charges_a_handover_for_the_whole_tail_while_mota_charges_one_switch():
    _, s = run(HANDOVER)
    assert (s.num_matches, s.num_switches) == (5, 1)
    assert s.mota == 1 - 1 / 6
    assert (s.idtp, s.idfp, s.idfn) == (4, 2, 2)
    assert (s.idf1, s.idp, s.idr) == (8 / 12, 4 / 6, 4 / 6)


def test_fragmentations_and_track_ratios():
    _, s = run(FRAGMENTED)
    assert (s.num_matches, s.num_misses, s.num_fragmentations) == (2, 2, 1)
    assert (s.mostly_tracked, s.partially_tracked, s.mostly_lost) == (0, 1, 0)


def test_max_switch_time_forgives_a_partner_change_after_a_long_absence():
    frames = [([1], [1], [[0.0]]), ([], [], []), ([], [], []), ([1], [2], [[0.0]])]
    assert run(frames)[1].num_switches == 1
    assert run(frames, max_switch_time=2)[1].num_switches == 0
    assert run(frames, max_switch_time=3)[1].num_switches == 1


def test_degenerate_runs_divide_like_numpy():
    s = MotAccumulator().summary()
    assert s.num_frames == 0 and math.isnan(s.mota) and math.isnan(s.idf1)
    _, s = run([([], [3], np.zeros((0, 1)))])
    assert (s.num_false_positives, s.mota, s.idp, s.idf1) == (1, -math.inf, 0.0, 0.0)
    assert math.isnan(s.idr) and math.isnan(s.motp)
    assert quiet_divide(0.0, 0.0) != quiet_divide(0.0, 0.0)  # nan
    assert quiet_divide(-2.0, 0.0) == -math.inf


def test_distance_matrix_gates_beyond_the_threshold_inclusive_of_it():
    d = distance_matrix([[0, 0, 0], [5, 0, 0]], [[0.3, 0.4, 0.0], [0.0, 0.0, 0.50001]], 0.5)
    assert d[0, 0] == 0.5
    assert np.isnan(d[0, 1])
    assert np.isnan(d[1]).all()
    assert d.shape == (2, 2)
    assert distance_matrix(np.zeros((0, 3)), [[1, 2, 3]]).shape == (0, 1)


def test_solve_assignment_maximises_the_number_of_pairs_before_the_distance():
    # Greedy or plain min-distance on (0,0) would leave object 1 unmatched.
    costs = np.array([[0.1, 0.2], [0.15, NAN]])
    rows, cols = solve_assignment(costs)
    assert sorted(zip(rows.tolist(), cols.tolist(), strict=True)) == [(0, 1), (1, 0)]
    rows, cols = solve_assignment(np.full((2, 2), NAN))
    assert rows.size == 0 and cols.size == 0


def test_clear_mot_from_positions():
    frames = [([1, 2], [[0, 0, 0], [2, 0, 0]], [4], [[0.1, 0, 0]]),
              ([1, 2], [[0, 0, 0], [2, 0, 0]], [4, 5], [[0.0, 0, 0], [2.55, 0, 0]])]
    s = clear_mot(frames, threshold_m=0.5)
    assert (s.num_matches, s.num_misses, s.num_false_positives) == (2, 2, 1)
    assert clear_mot(frames, threshold_m=0.6).num_misses == 1


def test_bad_input_is_refused():
    acc = MotAccumulator()
    with pytest.raises(ValueError, match="unique"):
        acc.update([1, 1], [2], [[0.1], [0.1]])
    with pytest.raises(ValueError, match=r"shape \(1, 2\)"):
        acc.update([1], [2, 3], [[0.1]])
    acc.update([1], [2], [[0.1]], frame_id=5)
    with pytest.raises(ValueError, match="must increase"):
        acc.update([1], [2], [[0.1]], frame_id=5)


# -- parity with motmetrics -----------------------------------------------------------------------
def _reference(frames, max_switch_time=math.inf) -> dict:
    mm = pytest.importorskip("motmetrics")
    acc = mm.MOTAccumulator(auto_id=True, max_switch_time=max_switch_time)
    for oids, hids, d in frames:
        acc.update(oids, hids, np.asarray(d, dtype=float).reshape(len(oids), len(hids)))
    return mm.metrics.create().compute(acc, metrics=list(FIELDS), return_dataframe=False)


def _assert_same(ours: MotSummary, ref: dict) -> None:
    for name in FIELDS:
        a, b = getattr(ours, name), float(ref[name])
        if math.isnan(b):
            assert math.isnan(a), name
        else:
            assert a == b, (name, a, b)  # to the bit, MOTP's float sum included


@pytest.mark.parametrize("frames", ALL_FIXTURES, ids=["perfect", "switch", "keep_partner",
                                                      "inherit", "handover", "fragmented"])
def test_fixtures_match_motmetrics(frames):
    _assert_same(run(frames)[1], _reference(frames))


def test_max_switch_time_matches_motmetrics():
    frames = [([1], [1], [[0.0]]), ([], [], np.zeros((0, 0))), ([1], [2], [[0.0]]),
              ([1, 2], [2, 1], [[0.3, 0.1], [0.2, NAN]])]
    for mst in (math.inf, 0, 1, 2):
        _assert_same(run(frames, max_switch_time=mst)[1], _reference(frames, mst))


def _random_frames(seed: int) -> list:
    rng = np.random.default_rng(seed)
    n_obj, n_hyp = int(rng.integers(1, 6)), int(rng.integers(1, 8))
    home = rng.uniform(0, 2, (n_obj, 3))
    frames = []
    for _ in range(int(rng.integers(1, 14))):
        oids = [int(o) for o in rng.permutation(n_obj)[: rng.integers(0, n_obj + 1)]]
        hids = [100 + int(h) for h in rng.permutation(n_hyp)[: rng.integers(0, n_hyp + 1)]]
        opos = home[oids] + rng.normal(0, 0.05, (len(oids), 3))
        hpos = rng.uniform(0, 2, (len(hids), 3))
        for k in range(min(len(oids), len(hids))):
            if rng.random() < 0.7:
                hpos[k] = opos[k] + rng.normal(0, 0.2, 3)
        if rng.random() < 0.3:  # coarse positions: many exact ties for the assignment
            opos, hpos = np.round(opos, 1), np.round(hpos, 1)
        frames.append((oids, hids, distance_matrix(opos, hpos, 0.5)))
    return frames


@pytest.mark.parametrize("block", range(4))
def test_random_runs_match_motmetrics(block):
    pytest.importorskip("motmetrics")
    for seed in range(block * 40, block * 40 + 40):
        frames = _random_frames(seed)
        _assert_same(run(frames)[1], _reference(frames))
