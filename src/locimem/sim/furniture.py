"""The home's furniture as a detector reports it, and which item stands on, in or under
which piece of it — the simulator's truth that the memory's relations are scored against.

:func:`furniture_boxes` gives each table, counter, desk and shelf one box (its parts'
bounding box) and the label a detector would give it ("table", "coffee table", "desk";
shelves "bookshelf" or "bookcase", which things are *in*). :func:`furniture_detections`
reports the pieces a scan's camera has in view, with the scenario's position and size noise
(so a table's height is as noisy as its items'). :func:`relation_truth` says, for each
object a perfect memory knows at a scan, at its known place: ``on`` a table, counter or desk
whose top it rests on, ``in`` a shelf on one of whose boards it rests, ``under`` a table
whose top is above it when it stands on the floor beneath.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from locimem.geometry import in_view
from locimem.model import Camera, Detection
from locimem.sim.perception import NoiseModel
from locimem.sim.scenario import Frame, Scenario
from locimem.sim.world import Furniture, World

__all__ = ["FurnitureBox", "furniture_boxes", "furniture_detections", "relation_truth"]

Vec3 = tuple[float, float, float]
TRACK_PREFIX = "furniture:"  # a furniture detection's track id: "furniture:kitchen/table"
REST_TOL_M = 0.01  # a box whose bottom is this close to a surface rests on it
UNDER_CLEARANCE_M = 0.1  # a thing under a table has its top this far below the table's top


@dataclass(frozen=True)
class FurnitureBox:
    """One piece of furniture as detected: its name ("kitchen/table"), the detector's label,
    the centre and size of its bounding box (metres, map frame)."""

    furniture: Furniture
    label: str
    center_m: Vec3
    size_m: Vec3

    @property
    def name(self) -> str:
        return self.furniture.name


def _label(f: Furniture) -> str:
    if f.kind == "shelf":
        return "bookcase" if f.name.endswith("bookcase") else "bookshelf"
    return f.name.split("/", 1)[1].replace("_", " ")


def furniture_boxes(world: World) -> list[FurnitureBox]:
    """Every piece of furniture with its detector label and bounding box."""
    out = []
    for f in world.furniture:
        lo = np.min([p.min_m for p in f.parts], axis=0)
        hi = np.max([p.max_m for p in f.parts], axis=0)
        out.append(FurnitureBox(f, _label(f), tuple(((lo + hi) / 2).tolist()),
                                tuple((hi - lo).tolist())))
    return out


def furniture_detections(boxes: list[FurnitureBox], camera: Camera, noise: NoiseModel,
                         rng: np.random.Generator) -> list[Detection]:
    """One detection per piece of furniture whose centre or look-at point the camera has in
    view, with ``noise``'s position error (its range term from the camera to the centre)
    and size error, at confidence 0.9 and track id ``furniture:<name>``."""
    if not boxes:
        return []
    targets = np.array([b.furniture.target_m for b in boxes])
    centers = np.array([b.center_m for b in boxes])
    seen = in_view(camera, targets) | in_view(camera, centers)
    cam = np.asarray(camera.position)
    out = []
    for b, c, v in zip(boxes, centers, seen, strict=True):
        if not v:
            continue
        sigma = noise.position_sigma_m + noise.range_sigma_per_m * float(
            np.linalg.norm(c - cam))
        at = c + rng.normal(0.0, sigma, 3)
        size = np.asarray(b.size_m) * (1 + rng.normal(0.0, noise.size_sigma_frac, 3))
        out.append(Detection(b.label, 0.9, tuple(at.tolist()),
                             tuple(np.maximum(size, 0.01).tolist()),
                             track_id=TRACK_PREFIX + b.name))
    return out


def relation_truth(scenario: Scenario, frame: Frame, boxes: list[FurnitureBox]
                   ) -> set[tuple[int, str, str]]:
    """``(object id, relation, furniture name)`` for every object a perfect memory knows at
    ``frame``, judged at its known place (see the module docstring)."""
    out: set[tuple[int, str, str]] = set()
    for oid, (x, y, z) in frame.truth.known.items():
        sz = scenario.objects[oid].size_m[2]
        bottom = z - sz / 2
        for b in boxes:
            f = b.furniture
            for s in f.surfaces:
                if (abs(bottom - s.z_m) <= REST_TOL_M
                        and s.min_xy[0] - REST_TOL_M <= x <= s.max_xy[0] + REST_TOL_M
                        and s.min_xy[1] - REST_TOL_M <= y <= s.max_xy[1] + REST_TOL_M):
                    out.add((oid, "in" if f.kind == "shelf" else "on", f.name))
            top = f.parts[0]
            if (f.kind == "table" and abs(bottom) <= REST_TOL_M
                    and top.min_m[0] <= x <= top.max_m[0] and top.min_m[1] <= y <= top.max_m[1]
                    and z + sz / 2 <= top.max_m[2] - UNDER_CLEARANCE_M):
                out.add((oid, "under", f.name))
    return out
