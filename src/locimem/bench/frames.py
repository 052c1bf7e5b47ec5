"""Map frames: what alignment costs once, and what an aligned epoch costs a scan.

``align`` rows time :func:`locimem.align.align_landmarks` on furnished layouts (``n`` new
landmarks against ``m`` stored ones, a random rigid transform between them, a fifth of the
stored ones absent from the new frame): median and p95 of repeated runs. The ``worst case``
rows time the same on identical chairs (every landmark a counterpart of every other, so
hypotheses are as many as they can be), scattered at random — one transform is right — and
on a 1 m lattice, where a shift by one step explains nearly as much and alignment must
refuse; they count the runs aligned, refused and aligned wrong. The ``scan`` row
ingests the same scans of 10 detections and a camera twice, side by side in one run —
in the memory's own frame and in an aligned epoch, whose detections and camera are
transformed on the way in — into non-durable in-memory stores, and prints both medians and
their difference (the transform's cost per scan). The ``lift`` rows time
:func:`locimem.perception.lift_frame` on one 640x480 depth image (float metres, noisy, with
dropouts) and 20 boxes of 30 to 150 pixels, without and with instance masks: what turning a 2D
detector's frame into the memory's detections and camera costs.
"""

from __future__ import annotations

import math
import statistics
import time
from typing import Any, TextIO

import numpy as np

from locimem.align import Landmark, align_landmarks
from locimem.frames import invert, transform_points, yaw_of, yaw_transform
from locimem.memory import ObjectMemory
from locimem.model import Camera, Detection
from locimem.perception import Box2D, Intrinsics, lift_frame

LABELS = ("sofa", "table", "bed", "desk", "fridge", "shelf", "wardrobe", "tv", "chair",
          "cabinet", "bench", "dresser")


def _vec3(values: Any) -> tuple[float, float, float]:
    """Three numbers (an array's, say) as a tuple of floats."""
    x, y, z = (float(v) for v in np.asarray(values, dtype=float).reshape(3))
    return x, y, z


def _layout(m: int, rng: np.random.Generator) -> list[Landmark]:
    side = max(8.0, (m * 4.0) ** 0.5)
    return [Landmark(k + 1, LABELS[k % len(LABELS)],
                     (float(rng.uniform(0, side)), float(rng.uniform(0, side)), 0.5),
                     (0.6 + 0.1 * (k % 7), 0.5 + 0.05 * (k % 5), 0.8)) for k in range(m)]


def _chairs(m: int, rng: np.random.Generator, lattice: bool) -> list[Landmark]:
    """``m`` identical chairs: on a 1 m lattice, or scattered like :func:`_layout`'s."""
    if lattice:
        cols = math.ceil(math.sqrt(m))
        spots = [(float(k % cols), float(k // cols)) for k in range(m)]
    else:
        side = max(8.0, (m * 4.0) ** 0.5)
        spots = [(float(rng.uniform(0, side)), float(rng.uniform(0, side))) for _ in range(m)]
    return [Landmark(k + 1, "chair", (x, y, 0.45), (0.5, 0.5, 0.9))
            for k, (x, y) in enumerate(spots)]


def _runs(n: int, m: int, runs: int, seed: int, layout: str
          ) -> tuple[list[float], int, int, int]:
    """(sorted ms, aligned, refused, aligned wrong) over ``runs`` fits of ``n`` new landmarks
    picked from ``m`` stored ones (``layout`` "furnished", "scattered" or "lattice") and
    moved by a random rigid transform."""
    rng = np.random.default_rng(seed)
    times, aligned, wrong = [], 0, 0
    for _ in range(runs):
        old = (_layout(m, rng) if layout == "furnished"
               else _chairs(m, rng, lattice=layout == "lattice"))
        frame = yaw_transform(float(rng.uniform(-180, 180)), *rng.uniform(-5, 5, 2))
        picked = rng.choice(m, size=n, replace=False)
        new = [Landmark(1000 + i, old[i].label, _vec3(transform_points(frame, old[i].center)),
                        old[i].size) for i in picked]
        start = time.perf_counter()
        found = align_landmarks(new, old)
        times.append((time.perf_counter() - start) * 1000)
        if found.ok and found.transform is not None:
            aligned += 1
            back = invert(frame)
            turn = abs((yaw_of(found.transform) - yaw_of(back) + 180.0) % 360.0 - 180.0)
            shift = float(np.linalg.norm(found.transform[:3, 3] - back[:3, 3]))
            wrong += int(turn > 0.5 or shift > 0.05)
    return sorted(times), aligned, runs - aligned, wrong


def _p95(times: list[float]) -> float:
    return times[int(0.95 * (len(times) - 1))]


def bench_align(n: int, m: int, runs: int = 15, seed: int = 0) -> tuple[float, float, bool]:
    """(median ms, p95 ms, every run aligned) for ``n`` new landmarks against ``m``."""
    times, aligned, _, _ = _runs(n, m, runs, seed, "furnished")
    return statistics.median(times), _p95(times), aligned == runs


def bench_worst(n: int, m: int, lattice: bool, runs: int = 15, seed: int = 0
                ) -> tuple[float, float, int, int, int]:
    """(median ms, p95 ms, aligned, refused, aligned wrong) for ``n`` identical chairs
    against ``m``, scattered or on a lattice."""
    times, aligned, refused, wrong = _runs(n, m, runs, seed,
                                           "lattice" if lattice else "scattered")
    return statistics.median(times), _p95(times), aligned, refused, wrong


def bench_scan(scans: int = 300) -> tuple[float, float]:
    """Median ms of a scan in the memory's frame and in an aligned epoch: the same scans,
    interleaved (one to each memory in turn) so the machine's noise falls on both alike."""
    rng = np.random.default_rng(1)
    # ten boxes 2-6 m ahead of a camera at the origin looking along +x
    centers = np.column_stack([rng.uniform(2, 6, 10), rng.uniform(-1, 1, 10),
                               rng.uniform(0.8, 1.4, 10)])
    frame = yaw_transform(35.0, 2.0, -1.3)
    turn = (math.cos(math.radians(17.5)), 0.0, 0.0, math.sin(math.radians(17.5)))
    runs: list[tuple[ObjectMemory, list[Detection], Camera, str | None, list[float]]] = []
    with ObjectMemory.open(":memory:", durable=False) as base, \
            ObjectMemory.open(":memory:", durable=False) as epoch:
        epoch.observe(0.0, [])
        epoch.align_epoch("day2", invert(frame))
        for mem, where, name, q in ((base, np.eye(4), None, (1.0, 0.0, 0.0, 0.0)),
                                    (epoch, frame, "day2", turn)):
            cam = Camera(_vec3(transform_points(where, (0.0, 0.0, 1.1))), q, 90.0, 10.0, 60.0)
            dets = [Detection("box", 0.9, _vec3(transform_points(where, c)), (0.3, 0.3, 0.3))
                    for c in centers]
            runs.append((mem, dets, cam, name, []))
        for k in range(scans):
            for mem, dets, cam, name, times in runs:
                start = time.perf_counter()
                mem.observe(1.0 + k, dets, cam, map_epoch=name)
                times.append((time.perf_counter() - start) * 1000)
    return statistics.median(runs[0][4][10:]), statistics.median(runs[1][4][10:])


def lift_scene(n_boxes: int = 20, seed: int = 2, masks: bool = False
               ) -> tuple[list[Box2D], np.ndarray, Intrinsics]:
    """A 640x480 depth image (metres: a wall at 4 m, 1 cm of noise, 2 % of the pixels without
    a return) with ``n_boxes`` objects on a grid, each 30 to 150 pixels across at 1 to 3.5 m,
    and a detector's box around each (a margin of background inside), optionally masked."""
    rng = np.random.default_rng(seed)
    k = Intrinsics(525.0, 525.0, 319.5, 239.5, 640, 480)
    depth = np.full((480, 640), 4.0)
    boxes = []
    cols = math.ceil(math.sqrt(n_boxes * 4 / 3))
    cell_w, cell_h = 640 // cols, 480 // math.ceil(n_boxes / cols)
    for i in range(n_boxes):
        side = int(rng.integers(30, min(150, cell_w - 6, cell_h - 6)))
        c0 = (i % cols) * cell_w + (cell_w - side) // 2
        r0 = (i // cols) * cell_h + (cell_h - side) // 2
        depth[r0:r0 + side, c0:c0 + side] = rng.uniform(1.0, 3.5)
        mask = None
        if masks:
            mask = np.zeros((480, 640), bool)
            mask[r0:r0 + side, c0:c0 + side] = True
        pad = side // 8
        boxes.append(Box2D(max(0, c0 - pad), max(0, r0 - pad), min(640, c0 + side + pad),
                           min(480, r0 + side + pad), "box", 0.9, mask=mask))
    depth += rng.normal(0.0, 0.01, depth.shape)
    depth[rng.random(depth.shape) < 0.02] = 0.0
    return boxes, depth.astype(np.float32), k


def bench_lift(frames: int = 300, masks: bool = False) -> tuple[float, float, int]:
    """(median ms, p95 ms, detections) of ``lift_frame`` on :func:`lift_scene`'s frame."""
    boxes, depth, k = lift_scene(masks=masks)
    facing_x = (0.5, -0.5, 0.5, -0.5)  # an optical frame looking along map +x
    times = []
    for _ in range(frames):
        start = time.perf_counter()
        lifted = lift_frame(boxes, depth, k, (0.0, 0.0, 1.2), facing_x)
        times.append((time.perf_counter() - start) * 1000)
    times.sort()
    return statistics.median(times), _p95(times), len(lifted.detections)


def run_frames_suite(out: TextIO, scans: int = 300) -> None:
    out.write("# locimem map-frame benchmark\n\n| align | median ms | p95 ms | aligned |\n"
              "|---|---:|---:|---|\n")
    for n, m in ((20, 60), (60, 200)):
        med, p95, ok = bench_align(n, m)
        out.write(f"| {n} new vs {m} stored | {med:.1f} | {p95:.1f} | "
                  f"{'all' if ok else 'not all'} |\n")
    out.write("\n| worst case | median ms | p95 ms | aligned / refused / wrong |\n"
              "|---|---:|---:|---|\n")
    for lattice in (False, True):
        med, p95, aligned, refused, wrong = bench_worst(60, 200, lattice)
        where = "on a 1 m lattice" if lattice else "scattered"
        out.write(f"| 60 vs 200 identical chairs, {where} | {med:.1f} | {p95:.1f} | "
                  f"{aligned} / {refused} / {wrong} |\n")
    out.write("\n| lift (640x480 depth, 20 boxes) | median ms | p95 ms | lifted |\n"
              "|---|---:|---:|---:|\n")
    for masks in (False, True):
        med, p95, n = bench_lift(max(scans, 20), masks=masks)
        out.write(f"| {'with' if masks else 'without'} masks | {med:.2f} | {p95:.2f} | "
                  f"{n} |\n")
    base, epoch = bench_scan(scans)
    out.write(f"\n| scan of 10 detections + camera | median ms |\n|---|---:|\n"
              f"| memory's own frame | {base:.3f} |\n| aligned epoch (transformed on the way "
              f"in) | {epoch:.3f} |\n| difference | {(epoch - base) * 1000:+.0f} us |\n")
