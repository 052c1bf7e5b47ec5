"""A day through the frames path: lifted positions within 3 cm, nothing on the wall, the
memory as good as with 3D detections; and ``locimem bench quality --input frames``."""

from __future__ import annotations

import json
import math
import re

import pytest

from locimem.bench.lifting import accuracy, lift_day
from locimem.cli import main
from locimem.eval.run import evaluate, play
from locimem.sim.scenario import ScenarioBuilder
from locimem.sim.world import build_world


@pytest.fixture(scope="module")
def day():
    world = build_world(7, rooms=("kitchen",))
    b = ScenarioBuilder("small", world, seed=7)
    b.stock("kitchen/table", 3)
    b.survey("kitchen", 6)
    b.look("kitchen/table", 10)
    scenario = b.build()
    lifted, acc, _ = lift_day(scenario)
    return scenario, lifted, acc


def test_lifted_positions_are_within_3_cm_and_none_on_the_wall(day):
    scenario, _, acc = day
    assert acc.boxes > 50 and acc.lifted >= 0.95 * acc.boxes
    assert len(acc.errors_m) > 30
    assert acc.median_m <= 0.03
    assert acc.far_behind == 0
    refused = sum(n for why, n in acc.not_lifted.items() if why != "no box")
    assert acc.lifted + refused == acc.boxes  # every box lifted or refused with a reason
    assert acc.detections <= accuracy(scenario).detections


def test_the_memory_fed_frames_believes_what_it_believes_fed_3d(day):
    scenario, lifted, _ = day
    three_d = evaluate(scenario, play(scenario))
    frames = evaluate(lifted, play(lifted))
    assert frames.mot.idf1 >= three_d.mot.idf1 - 0.02
    assert frames.duplicates_end == 0 and frames.phantoms_end == 0
    truth = scenario.frames[-1].truth.present
    off = sorted(min(math.dist(h.center, c) for c in truth.values())
                 for h in play(lifted).frames[-1].published)
    assert len(off) == len(truth)
    # a plate on the top board, at the camera's height, shows its front rim only: its depth
    # is unseen and lift_frame puts it 13 cm short of its centre; the rest are close (the
    # median one 3.0 cm, the six below it 0.8-1.6 cm)
    assert off[len(off) // 2] <= 0.035 and off[-2] <= 0.07 and off[-1] <= 0.15


def test_bench_quality_frames_prints_both_inputs_side_by_side(capsys):
    assert main(["bench", "quality", "--input", "frames", "--seeds", "1", "--scenario",
                 "close_clutter", "--image", "60x80"]) == 0
    text = capsys.readouterr().out
    assert text.startswith("# locimem quality from 2D boxes and depth (60x80)")
    assert ("| scenario | seeds | boxes | lifted | error ≤ 3 m median (p90), frames | 3D | "
            "behind far face (> 10 cm), frames | 3D |") in text
    assert ("| scenario | IDF1 3D | frames | duplicates / scan 3D | frames | phantoms / scan 3D "
            "| frames | label accuracy 3D | frames | recall accuracy 3D | frames |") in text
    assert re.search(r"^\| close_clutter \| 1 \| \d+ \| \d+ \| \d+\.\d cm \(\d+\.\d\) \| "
                     r"\d+\.\d cm \(\d+\.\d\) \| \d+ \(\d+\) \| \d+ \(\d+\) \|$", text, re.M)
    assert "Boxes not lifted, by reason" in text and re.search(r"^Wall time \d+ s", text, re.M)


def test_bench_quality_frames_json_holds_the_figures(capsys):
    assert main(["bench", "quality", "--input", "frames", "--seeds", "1", "--scenario",
                 "close_clutter", "--image", "60x80", "--json"]) == 0
    doc = json.loads(capsys.readouterr().out)
    figures = doc["figures"]["close_clutter"]
    assert doc["suite"] == "quality" and doc["exit_status"] == 0
    assert set(figures) == {"scenario", "seeds", "3d", "frames", "seconds"}
    assert {"idf1", "error_median_m", "behind_far_face", "far_behind"} <= set(figures["frames"])
    assert figures["frames"]["boxes"] >= figures["frames"]["lifted"] > 0


def test_bench_quality_names_an_unknown_scenario(capsys):
    assert main(["bench", "quality", "--input", "frames", "--scenario", "attic"]) != 0
    assert "built-in scenarios are kitchen_day" in capsys.readouterr().err
