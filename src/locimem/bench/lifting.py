"""Tracking quality from 2D boxes and depth: the simulated days fed as a 2D detector's frames
through :func:`locimem.perception.lift_frame`, beside the same days fed as 3D detections.

For each scenario and seed, :func:`run_frames_suite` renders every scan again as 2D boxes and
masks with a noisy depth image (:mod:`locimem.sim.frames2d`), lifts each frame with
``lift_frame`` and hands the memory the lifted detections with the lifted camera (its depth
image is the one absence is judged on) — what ``ObjectMemory.observe_frame`` does. The 3D
input plays the scenario's own detections and camera. Both are scored against the same ground
truth (:func:`locimem.bench.quality` 's reference: what a perfect memory fed by the 3D
detector could know), so a box the lifting loses costs the frames input.

Per scenario the tables give the worst seed's figures:

- **lifting**: the position error of the lifted detections of true objects whose centre is at
  most :data:`NEAR_M` from the camera (median and p90 over the day; the 3D detector's error
  beside it), how many detections lie *behind the object's far face* (a centre farther from
  the camera than any corner of the true box: depth from the wall or the floor behind), and
  the boxes not lifted, counted by reason (``lift_frame``'s refusals, and ``no box`` for a
  detection whose object covers no pixel of the image);
- **memory**: IDF1, duplicates and phantoms per scan, label and recall accuracy, for both
  inputs.
"""

from __future__ import annotations

import dataclasses
import math
import statistics
import time
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any, TextIO

import numpy as np

from locimem.bench.quality import seeds_for
from locimem.eval.memory_metrics import MemoryReport
from locimem.eval.run import evaluate, play
from locimem.geometry import to_camera_frame
from locimem.model import Camera, Detection
from locimem.perception import lift_frame
from locimem.sim.frames2d import DepthSensor, Frame2D, frames_of
from locimem.sim.scenario import Frame, Scenario
from locimem.sim.scenarios import build

__all__ = ["DAYS", "FAR_BEHIND_M", "NEAR_M", "Accuracy", "DayResult", "accuracy",
           "behind_far_face", "lift_day", "play_day", "run_frames_suite", "summarise"]

DAYS = ("kitchen_day", "clutter", "thin_removals", "shelf")
"""The days issue 34 names: a kitchen, clutter, thin things on tables, a shelf."""
NEAR_M = 3.0
"""Position errors are taken over objects at most this far from the camera (metres)."""
FAR_BEHIND_M = 0.10
"""A detection this far behind its object's far face stands on what is behind it (a wall)."""
NO_BOX = "no box"  # the reason given for a detection whose object covers no pixel


@dataclass(frozen=True)
class Accuracy:
    """How well one input's detections place the true objects over a day.

    Attributes:
        errors_m: distance (metres) from each detection of a true object at most
            :data:`NEAR_M` away to its true centre.
        behind: detections of true objects whose centre lies behind the object's far face.
        far_behind: of those, the ones more than :data:`FAR_BEHIND_M` behind it: on the
            wall or the furniture behind the object.
        detections: detections of true objects (any range).
        boxes: 2D boxes handed to the lifting (0 for 3D input).
        lifted: of those, the boxes lifted to a detection.
        not_lifted: reason -> how many boxes (or detections without a box) were not lifted.
    """

    errors_m: tuple[float, ...]
    behind: int
    far_behind: int
    detections: int
    boxes: int = 0
    lifted: int = 0
    not_lifted: dict[str, int] = field(default_factory=dict)

    @property
    def median_m(self) -> float:
        return statistics.median(self.errors_m) if self.errors_m else math.nan

    @property
    def p90_m(self) -> float:
        return float(np.percentile(self.errors_m, 90)) if self.errors_m else math.nan


@dataclass(frozen=True)
class DayResult:
    """One scenario at one seed, played both ways."""

    name: str
    seed: int
    accuracy: dict[str, Accuracy]  # "3d", "frames"
    reports: dict[str, MemoryReport]
    seconds: dict[str, float]  # render, lift, observe frames, observe 3d


def behind_far_face(camera: Camera, center: Sequence[float], true_center: Sequence[float],
                    size: Sequence[float]) -> float:
    """How far (metres, forward distance from the camera) ``center`` lies behind the true
    box's farthest corner; <= 0 when it does not."""
    c, s = np.asarray(true_center), np.asarray(size)
    corners = c - s / 2 + np.array(list(np.ndindex(2, 2, 2))) * s
    fwd = to_camera_frame(camera, np.vstack([corners, np.asarray(center)[None]]))[:, 0]
    return float(fwd[-1] - fwd[:-1].max())


def accuracy(scenario: Scenario, frames: Sequence[Frame] | None = None,
             boxes: int = 0, lifted: int = 0, not_lifted: dict[str, int] | None = None
             ) -> Accuracy:
    """The :class:`Accuracy` of ``frames``' detections (default: the scenario's own) against
    the scenario's true objects; each frame's ``sources`` name the object a detection is of."""
    errors: list[float] = []
    behind = far = n = 0
    for frame, own in zip(frames or scenario.frames, scenario.frames, strict=True):
        for det, src in zip(frame.detections, frame.sources, strict=True):
            if src is None:
                continue
            n += 1
            true = own.truth.present[src]
            if math.dist(true, own.camera.position) <= NEAR_M:
                errors.append(math.dist(det.center, true))
            past = behind_far_face(own.camera, det.center, true, scenario.objects[src].size_m)
            behind += past > 0.0
            far += past > FAR_BEHIND_M
    return Accuracy(tuple(errors), behind, far, n, boxes, lifted, dict(not_lifted or {}))


def _lifted(frame: Frame, f2: Frame2D) -> tuple[Frame, list[str]]:
    """The scenario frame with its detections and camera replaced by what ``lift_frame``
    makes of the 2D frame, and the reasons of the boxes it did not lift."""
    lifted = lift_frame(f2.boxes, f2.depth, f2.intrinsics, f2.position, f2.quaternion,
                        frame="body", range_m=(0.1, f2.range_m))
    reasons = [r.split(":")[0] for _, r in lifted.skipped]
    reasons += [NO_BOX] * len(f2.unrendered)
    sources = tuple(f2.sources[k] for k in lifted.indices)
    detections: tuple[Detection, ...] = tuple(lifted.detections)
    return dataclasses.replace(frame, detections=detections, sources=sources,
                               camera=lifted.camera), reasons


def lift_day(scenario: Scenario, image: tuple[int, int] = (240, 320),
             sensor: DepthSensor | None = None) -> tuple[Scenario, Accuracy, dict[str, float]]:
    """The scenario with every frame's detections and camera lifted from its 2D rendering
    (truth and events unchanged), the lifted detections' :class:`Accuracy`, and the seconds
    spent rendering and lifting."""
    frames: list[Frame] = []
    reasons: Counter[str] = Counter()
    boxes = lifted = 0
    render_s = lift_s = 0.0
    rendered = frames_of(scenario, image, sensor)
    for frame in scenario.frames:
        t0 = time.perf_counter()
        f2 = next(rendered)
        t1 = time.perf_counter()
        out, why = _lifted(frame, f2)
        lift_s += time.perf_counter() - t1
        render_s += t1 - t0
        frames.append(out)
        reasons.update(why)
        boxes += len(f2.boxes)
        lifted += len(out.detections)
    day = dataclasses.replace(scenario, frames=tuple(frames))
    return (day, accuracy(scenario, frames, boxes, lifted, dict(reasons)),
            {"render": render_s, "lift": lift_s})


def play_day(name: str, seed: int, image: tuple[int, int] = (240, 320),
             sensor: DepthSensor | None = None, detector: str = "centre") -> DayResult:
    """Scenario ``name`` at ``seed``, seen by a ``detector`` (``"centre"`` or ``"rays"``),
    played as 3D detections and as lifted 2D frames."""
    scenario = build(name, seed, detector=detector)
    lifted, frames_acc, seconds = lift_day(scenario, image, sensor)
    runs = {"3d": play(scenario), "frames": play(lifted)}
    reports = {"3d": evaluate(scenario, runs["3d"]), "frames": evaluate(lifted, runs["frames"])}
    seconds |= {"observe frames": runs["frames"].observe_s, "observe 3d": runs["3d"].observe_s}
    return DayResult(name, seed, {"3d": accuracy(scenario), "frames": frames_acc}, reports,
                     seconds)


# -- the report ---------------------------------------------------------------------------------
LIFT_COLUMNS = ("scenario", "seeds", "boxes", "lifted", "error ≤ 3 m median (p90), frames",
                "3D", "behind far face (> 10 cm), frames", "3D")
MEMORY_COLUMNS = ("scenario", "IDF1 3D", "frames", "duplicates / scan 3D", "frames",
                  "phantoms / scan 3D", "frames", "label accuracy 3D", "frames",
                  "recall accuracy 3D", "frames")


def _cm(figures: dict[str, Any]) -> str:
    return (f"{100 * figures['error_median_m']:.1f} cm "
            f"({100 * figures['error_p90_m']:.1f})")


def _row(cells: Sequence[str]) -> str:
    return "| " + " | ".join(cells) + " |\n"


def _header(columns: Sequence[str]) -> str:
    return _row(columns) + "|---|" + "---:|" * (len(columns) - 1) + "\n"


def summarise(name: str, days: Sequence[DayResult]) -> dict[str, Any]:
    """The worst seed's figures of one scenario, both inputs, as plain data."""
    out: dict[str, Any] = {"scenario": name, "seeds": [d.seed for d in days]}
    for key in ("3d", "frames"):
        acc = [d.accuracy[key] for d in days]
        reps = [d.reports[key] for d in days]
        out[key] = {
            "error_median_m": max(a.median_m for a in acc),
            "error_p90_m": max(a.p90_m for a in acc),
            "behind_far_face": max(a.behind for a in acc),
            "far_behind": max(a.far_behind for a in acc),
            "idf1": min(r.mot.idf1 for r in reps),
            "duplicates_per_scan": max(r.duplicates_mean for r in reps),
            "phantoms_per_scan": max(r.phantoms_mean for r in reps),
            "label_accuracy": min(r.label_accuracy for r in reps),
            "recall_accuracy": min(r.recall_accuracy for r in reps),
        }
    frames = [d.accuracy["frames"] for d in days]
    reasons: Counter[str] = Counter()
    for a in frames:
        reasons.update(a.not_lifted)
    out["frames"] |= {"boxes": sum(a.boxes for a in frames),
                      "lifted": sum(a.lifted for a in frames),
                      "not_lifted": dict(sorted(reasons.items()))}
    out["seconds"] = {k: sum(d.seconds[k] for d in days) for k in days[0].seconds}
    return out


def run_frames_suite(out: TextIO, seeds: int = 5, scenarios: Sequence[str] | None = None,
                     image: tuple[int, int] = (240, 320), sensor: DepthSensor | None = None,
                     detector: str = "centre") -> dict[str, dict[str, Any]]:
    """Play each scenario (default :data:`DAYS`) with ``seeds`` seeds
    (:func:`~locimem.bench.quality.seeds_for`), seen by a ``detector`` (``"centre"``, the
    default here, or ``"rays"``: ``locimem bench quality --input frames`` passes its
    ``--detector``), as 3D detections and as lifted 2D frames of ``image`` (h, w) pixels,
    print the tables (worst seed), and return each scenario's :func:`summarise`."""
    names = list(DAYS if scenarios is None else scenarios)
    sensor = sensor or DepthSensor()
    out.write(f"# locimem quality from 2D boxes and depth ({image[0]}x{image[1]}), beside 3D "
              f"detections ({seeds} seeds per scenario, worst seed)\n\n"
              f"Depth noise {100 * sensor.range_sigma_frac:g} % of range, "
              f"{100 * sensor.dropout:g} % holes, {100 * sensor.edge_hole_prob:g} % holes "
              f"and {100 * sensor.flying_prob:g} % flying pixels at depth edges; masks grown "
              f"{sensor.mask_grow_px} px.\n\n")
    out.flush()
    start = time.perf_counter()
    found: dict[str, dict[str, Any]] = {}
    for name in names:
        days = [play_day(name, seed, image, sensor, detector)
                for seed in seeds_for(name, seeds)]
        found[name] = summarise(name, days)
    lift_rows, memory_rows, reason_rows = [], [], []
    for name, s in found.items():
        f, d = s["frames"], s["3d"]
        lift_rows.append(_row([
            name, str(len(s["seeds"])), str(f["boxes"]), str(f["lifted"]),
            _cm(f), _cm(d),
            f"{f['behind_far_face']} ({f['far_behind']})",
            f"{d['behind_far_face']} ({d['far_behind']})"]))
        memory_rows.append(_row([name] + [
            cell for metric in ("idf1", "duplicates_per_scan", "phantoms_per_scan",
                                "label_accuracy", "recall_accuracy")
            for cell in (f"{d[metric]:.3f}", f"{f[metric]:.3f}")]))
        for reason, n in f["not_lifted"].items():
            reason_rows.append(_row([name, reason, str(n)]))
    out.write("Lifting (position error of true objects at ≤ 3 m: the worst seed's median and "
              "p90; detections behind the object's far face, and more than 10 cm behind it — "
              "on the wall: the worst seed's counts):\n\n"
              + _header(LIFT_COLUMNS) + "".join(lift_rows))
    out.write("\nMemory (worst seed of each input):\n\n" + _header(MEMORY_COLUMNS)
              + "".join(memory_rows))
    out.write("\nBoxes not lifted, by reason (all seeds):\n\n"
              + _header(("scenario", "reason", "boxes"))
              + ("".join(reason_rows) or _row(["—", "none", "0"])))
    total = {k: sum(s["seconds"][k] for s in found.values())
             for k in next(iter(found.values()))["seconds"]} if found else {}
    out.write(f"\nWall time {time.perf_counter() - start:.0f} s: "
              + ", ".join(f"{k} {v:.0f} s" for k, v in total.items()) + ".\n")
    out.flush()
    return found
