"""A simulated 2D detector and depth camera: each scan of a :class:`~locimem.sim.scenario.Scenario`
rendered again as what a robot without 3D detections has — 2D boxes and instance masks, a
noisy depth image, the camera's intrinsics and pose — which is what
:func:`locimem.perception.lift_frame` and ``ObjectMemory.observe_frame`` take.

Per scan, :func:`render_frame`:

1. ray-casts the home's boxes (walls, floor, furniture, the objects present, a person in the
   way) through every pixel of an ``image`` of (h, w) (240 x 320 by default) at the scan's
   camera pose and fields of view: a clean depth image (forward distance, metres) and an
   instance image (which true object, if any, each pixel sees; walls and furniture are
   background);
2. gives each detection the scan's 3D detector made of a true object
   (:class:`~locimem.sim.perception.Detector`: the same misses, label flicker, confidences,
   embeddings and track ids) a 2D box and mask: the pixels of that object, grown by
   ``mask_grow_px`` (a segmenter's mask spills a pixel over the edge), and the box around
   them. A detection whose object covers no pixel of the image gets none (listed in
   :attr:`Frame2D.unrendered`). A false positive gets the box its 3D box projects to, without
   a mask;
3. makes the depth a sensor's (:class:`DepthSensor`): Gaussian noise of ``range_sigma_frac``
   of the range, no reading (NaN) on a share of the pixels at depth edges and more on dark
   and thin objects, and *flying pixels* — depths mixed between the near and the far side —
   on a share of the rest of the edges.

The camera's pose is the body frame (x forward, y left, z up), as in
:class:`~locimem.model.Camera`; lift with ``frame="body"``. Everything random comes from
one stream seeded by the scenario's seed (:func:`frames_of`), apart from the scenario's own.
"""

from __future__ import annotations

import math
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass

import numpy as np

from locimem.geometry import intrinsics, project
from locimem.model import Camera, Detection
from locimem.perception import Box2D, Intrinsics
from locimem.sim.render import boxes_to_arrays, render_ids
from locimem.sim.scenario import Frame, Scenario
from locimem.sim.world import Box

__all__ = ["DARK_LABELS", "DepthSensor", "Frame2D", "camera_intrinsics", "frames_of",
           "instance_image", "masks_of", "render_frame", "sensor_depth"]

Vec3 = tuple[float, float, float]

DARK_LABELS = frozenset({"remote", "phone", "laptop", "keyboard"})
"""Labels of the things a depth sensor reads badly (black plastic, screens)."""

NOTHING = -1  # instance image: the ray hits nothing within range
BACKGROUND = 0  # instance image: a wall, the floor, furniture, a person (object ids are >= 1)


@dataclass(frozen=True, slots=True)
class DepthSensor:
    """How the simulated depth camera errs. Probabilities per pixel, distances in metres.

    Args:
        range_sigma_frac: standard deviation of the Gaussian depth noise, a fraction of the
            depth (0.01: 2 cm at 2 m).
        dropout: share of all pixels with no reading.
        edge_jump_m: a pixel whose 4-neighbour is farther or nearer by more than this (plus
            ``edge_jump_frac`` of its depth) lies on a depth edge.
        edge_jump_frac: the edge threshold's share of the depth.
        edge_hole_prob: share of the edge pixels with no reading.
        flying_prob: share of the other edge pixels whose depth is mixed between the near
            and the far side (uniformly): flying pixels.
        dark_dropout: share of a dark object's pixels (:data:`DARK_LABELS`) with no reading.
        thin_dropout: share of a thin object's pixels with no reading.
        thin_m: an object whose smallest extent is at most this is thin.
        mask_grow_px: pixels a detection's mask is grown by, on every side.
    """

    range_sigma_frac: float = 0.01
    dropout: float = 0.02
    edge_jump_m: float = 0.05
    edge_jump_frac: float = 0.02
    edge_hole_prob: float = 0.3
    flying_prob: float = 0.5
    dark_dropout: float = 0.25
    thin_dropout: float = 0.15
    thin_m: float = 0.03
    mask_grow_px: int = 1


@dataclass(frozen=True)
class Frame2D:
    """One scan as a 2D detector and a depth camera give it.

    Attributes:
        index, t, restart: the scenario frame's.
        boxes: the 2D detections (color image = depth image pixels).
        sources: for each box, the true object id (None: a false positive).
        depth: (h, w) float32 metres, NaN where there is no reading.
        intrinsics: the image's pinhole intrinsics.
        position, quaternion: the camera's pose, body frame (x forward, y left, z up), map
            frame, quaternion w-x-y-z.
        range_m: the camera's trusted range.
        unrendered: ``(detection index, source)`` of the scan's detections that got no box
            (the object covers no pixel, a false positive projects outside the image).
    """

    index: int
    t: float
    restart: bool
    boxes: tuple[Box2D, ...]
    sources: tuple[int | None, ...]
    depth: np.ndarray
    intrinsics: Intrinsics
    position: Vec3
    quaternion: tuple[float, float, float, float]
    range_m: float
    unrendered: tuple[tuple[int, int | None], ...] = ()


def camera_intrinsics(camera: Camera, image: tuple[int, int]) -> Intrinsics:
    """The :class:`~locimem.perception.Intrinsics` of an ``image`` (h, w) taken with the
    camera's fields of view (ROS convention: pixel centres at integers, so ``cx`` is
    ``w / 2 - 0.5``)."""
    h, w = image
    fx, fy, cx, cy = intrinsics(camera, image)
    return Intrinsics(fx, fy, cx - 0.5, cy - 0.5, w, h)


def instance_image(camera: Camera, objects: Mapping[int, Box], background: Sequence[Box],
                   image: tuple[int, int] = (240, 320), max_range_m: float = 12.0
                   ) -> tuple[np.ndarray, np.ndarray]:
    """The clean depth image (h, w, float32 metres, ``inf`` for no hit) and the instance
    image (h, w, int32): the id of the object (keys of ``objects``, >= 1) each pixel sees,
    :data:`BACKGROUND` (0) for a ``background`` box, :data:`NOTHING` (-1) for no hit."""
    oids = sorted(objects)
    if any(oid < 1 for oid in oids):
        raise ValueError(f"object ids must be >= 1, got {oids}")
    lo, hi = boxes_to_arrays([*background, *(objects[i] for i in oids)])
    depth, index = render_ids(camera, lo, hi, image, max_range_m=max_range_m)
    label = np.array([BACKGROUND] * len(background) + oids, dtype=np.int32)
    ids = np.where(index >= 0, label[np.maximum(index, 0)] if len(label) else 0, NOTHING)
    return depth, ids.astype(np.int32)


def masks_of(ids: np.ndarray, wanted: Sequence[int], grow_px: int = 1
             ) -> dict[int, np.ndarray]:
    """For each wanted object id (>= 1: the background has none) that covers a pixel of the
    instance image ``ids``: its mask (h, w, bool), grown by ``grow_px`` pixels on every side
    (a 3 x 3 dilation per pixel)."""
    out: dict[int, np.ndarray] = {}
    h, w = ids.shape
    for oid in wanted:
        if oid < 1:
            continue
        own = ids == oid
        rows = np.flatnonzero(own.any(axis=1))
        if rows.size == 0:
            continue
        cols = np.flatnonzero(own.any(axis=0))
        r0, r1 = max(0, rows[0] - grow_px), min(h, rows[-1] + 1 + grow_px)
        c0, c1 = max(0, cols[0] - grow_px), min(w, cols[-1] + 1 + grow_px)
        grown = own[r0:r1, c0:c1]
        for _ in range(grow_px):
            padded = np.pad(grown, 1)
            grown = np.zeros_like(grown)
            for dr in range(3):
                for dc in range(3):
                    grown |= padded[dr:dr + grown.shape[0], dc:dc + grown.shape[1]]
        mask = np.zeros((h, w), dtype=bool)
        mask[r0:r1, c0:c1] = grown
        out[oid] = mask
    return out


def _box_of(mask: np.ndarray) -> tuple[float, float, float, float]:
    """The pixel-edge box ``(x0, y0, x1, y1)`` around a mask's pixels."""
    rows = np.flatnonzero(mask.any(axis=1))
    cols = np.flatnonzero(mask.any(axis=0))
    return float(cols[0]), float(rows[0]), float(cols[-1] + 1), float(rows[-1] + 1)


def sensor_depth(clean: np.ndarray, ids: np.ndarray, poor: Mapping[int, float],
                 sensor: DepthSensor, rng: np.random.Generator) -> np.ndarray:
    """The depth image a sensor reads (float32, NaN for no reading) from the ``clean`` one
    (``inf``: no hit) and the instance image: see :class:`DepthSensor`. ``poor`` gives the
    share of an object's pixels with no reading (dark and thin things), by object id."""
    d = clean.astype(np.float64)
    near, far = _neighbour_extremes(d)
    jump = sensor.edge_jump_m + sensor.edge_jump_frac * np.where(np.isfinite(d), d, 0.0)
    edge = (far - d > jump) | (d - near > jump)
    draw = rng.random(d.shape)
    hole = draw < sensor.dropout
    hole |= edge & (draw < sensor.edge_hole_prob)
    for oid, p in poor.items():
        hole |= (ids == oid) & (draw < p)
    fly = edge & ~hole & (rng.random(d.shape) < sensor.flying_prob)
    fly &= np.isfinite(near) & np.isfinite(far)
    mixed = near + rng.random(d.shape) * (far - near)
    d = np.where(fly, mixed, d)
    d = d * (1.0 + rng.normal(0.0, sensor.range_sigma_frac, d.shape))
    d[hole | ~np.isfinite(d)] = np.nan
    return d.astype(np.float32)


def _neighbour_extremes(d: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Per pixel, the nearest and the farthest depth among itself and its 4-neighbours
    (``inf`` counts as farthest: an edge against nothing)."""
    near, far = d.copy(), d.copy()
    for sl_a, sl_b in (((slice(1, None),), (slice(None, -1),)),
                       ((slice(None, -1),), (slice(1, None),)),
                       ((slice(None), slice(1, None)), (slice(None), slice(None, -1))),
                       ((slice(None), slice(None, -1)), (slice(None), slice(1, None)))):
        np.minimum(near[sl_a], d[sl_b], out=near[sl_a])
        np.maximum(far[sl_a], d[sl_b], out=far[sl_a])
    return near, far


def _poor_reading(scenario: Scenario, oids: Sequence[int], sensor: DepthSensor
                  ) -> dict[int, float]:
    """Share of no reading per object: dark things and thin things read badly."""
    out = {}
    for oid in oids:
        spec = scenario.objects[oid]
        p = 0.0
        if spec.label in DARK_LABELS:
            p = sensor.dark_dropout
        if min(spec.size_m) <= sensor.thin_m:
            p = 1.0 - (1.0 - p) * (1.0 - sensor.thin_dropout)
        if p > 0.0:
            out[oid] = p
    return out


def _fp_box(camera: Camera, det: Detection, image: tuple[int, int]
            ) -> tuple[float, float, float, float] | None:
    """The image box a false positive's 3D box projects to, clipped; None if it does not
    lie ahead of the camera and on the image."""
    h, w = image
    size = np.asarray(det.size)
    corners = np.asarray(det.center) - size / 2 + np.array(list(np.ndindex(2, 2, 2))) * size
    rows, cols = project(camera, corners, image)
    if not np.all(np.isfinite(rows)):
        return None
    x0, x1 = max(0.0, float(cols.min())), min(float(w), float(cols.max()))
    y0, y1 = max(0.0, float(rows.min())), min(float(h), float(rows.max()))
    if x1 - x0 < 1.0 or y1 - y0 < 1.0:
        return None
    return math.floor(x0), math.floor(y0), math.ceil(x1), math.ceil(y1)


def render_frame(scenario: Scenario, frame: Frame, image: tuple[int, int] = (240, 320),
                 sensor: DepthSensor | None = None,
                 rng: np.random.Generator | None = None) -> Frame2D:
    """One scan of ``scenario`` as a 2D detector and a depth camera of ``image`` (h, w)
    pixels give it (see the module docstring)."""
    sensor = DepthSensor(dropout=scenario.noise.depth_dropout) if sensor is None else sensor
    rng = np.random.default_rng(0) if rng is None else rng
    camera = frame.camera
    objects = {oid: Box.around(c, scenario.objects[oid].size_m)
               for oid, c in frame.truth.present.items()}
    background = [*scenario.world.static_boxes(), *frame.occluders]
    clean, ids = instance_image(camera, objects, background, image,
                                max_range_m=3 * camera.range_m)
    wanted = sorted({s for s in frame.sources if s is not None})
    masks = masks_of(ids, wanted, sensor.mask_grow_px)
    depth = sensor_depth(clean, ids, _poor_reading(scenario, wanted, sensor), sensor, rng)
    boxes: list[Box2D] = []
    sources: list[int | None] = []
    unrendered: list[tuple[int, int | None]] = []
    for i, (det, src) in enumerate(zip(frame.detections, frame.sources, strict=True)):
        mask = None if src is None else masks.get(src)
        bounds = _fp_box(camera, det, image) if src is None else (
            None if mask is None else _box_of(mask))
        if bounds is None:
            unrendered.append((i, src))
            continue
        boxes.append(Box2D(*bounds, det.label, det.confidence, mask=mask,
                           embedding=det.feature, track_id=det.track_id))
        sources.append(src)
    return Frame2D(frame.index, frame.t, frame.restart, tuple(boxes), tuple(sources), depth,
                   camera_intrinsics(camera, image), camera.position, camera.quaternion,
                   camera.range_m, tuple(unrendered))


def frames_of(scenario: Scenario, image: tuple[int, int] = (240, 320),
              sensor: DepthSensor | None = None) -> Iterator[Frame2D]:
    """Every scan of ``scenario`` rendered by :func:`render_frame`, in order; the depth
    sensor's noise is drawn from a stream seeded by the scenario's seed (the same frames
    every time)."""
    rng = np.random.default_rng(np.random.SeedSequence([scenario.seed, 2]))
    for frame in scenario.frames:
        yield render_frame(scenario, frame, image, sensor, rng)
