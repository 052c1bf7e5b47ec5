"""2D boxes and a depth image -> the 3D :class:`~locimem.model.Detection`s the memory takes.

How one box is lifted (every box of a frame at once, in a few array operations):

1. **Its depth pixels.** The box (color image pixels) is carried to the depth image through
   both cameras' intrinsics (a depth image registered to the color one: the same optical
   centre and axes, another resolution or principal point), and the depth pixels whose
   centres lie inside it are read — all of them, or an even grid of at most
   :data:`MAX_SAMPLES` (each sample then stands for ``stride ** 2`` pixels in the counts
   ``min_pixels`` is compared with). With a mask, the rectangle around the pixels it marks
   inside the box is read, and only the pixels it marks count. A reading is *valid* when it
   is finite, > 0 (0 and NaN: no return) and within ``range_m``.
2. **Its depth.** The median of the valid depths inside the mask or, without one, inside the
   box's inner region (the central :data:`INNER` of its width and height, where the object
   rather than what is behind it is likeliest; the whole box if that has too few readings).
   Readings farther from the median than a band — :data:`BAND_M` plus :data:`BAND_PER_M`
   per metre of depth, :data:`BAND_FRAC` of the box's larger side at that depth, or
   :data:`NOISE_BAND` sigmas of the sensor's noise there (``range_sigma_frac`` of the depth),
   whichever is wider — are the background or the floor, and dropped. The noise is then taken
   out of the rest, symmetrically (so that it moves the centre neither nearer nor farther):
   each reading is averaged with the pairs of the object's readings on either side of it on
   the sample grid (along its row, then its column: a plane's depth is kept, at the edges
   too), and then drawn towards the box's mean depth by the share that leaves their variance
   less the noise left. Without that, the noise spreads a densely seen near face towards the
   camera farther than the few readings of the far edges reach away from it, and it gives a
   face seen square-on a false depth of its own, so that step 3 does not extend it enough —
   both put the centre nearer the camera than it is.
3. **Its box.** The rest are lifted to the world frame (``p = R @ p_optical + position``);
   on each world axis the box spans the lifted points' :data:`QUANTILE` to
   ``1 - QUANTILE`` quantiles, and on to the farthest points within :data:`REACH` of that
   range beyond them (the object's edges, where points thin out, but not a stray reading),
   plus one sample's footprint (what pixel centres miss at the edges). A camera sees only
   the near surface: a horizontal axis spanned less than the smaller of the other two (a box
   seen square-on shows its front face only) is extended to that, away from the camera;
   every axis is at least ``min_size_m``. The box is axis-aligned in the world frame (``z``
   up), which is how the memory keeps objects.

Without a mask, what surrounds the object in its box at its depth — the floor it stands on,
a wall it touches — counts as the object: give instance masks for tight boxes. And without a
mask, a box whose inner region is large enough to hold ``min_pixels`` pixels but has fewer
readings than that (a black or glass object, no return) is refused as *background depth
only*: its margin shows the wall or the floor behind it, and lifting that would place the
object there. (A box too small for its inner region to count is read whole.)

**A box cut by the image's edge** (an object partly out of the frame) is lifted from what
the image shows: the visible part's centre and extent, as if it were the whole thing — no
guess at what lies beyond the edge, and no flag (a :class:`~locimem.model.Detection` has
none). That is safe for the memory: the scan's camera never counts a place it does not see
whole as looked at (:func:`locimem.geometry.place_looks`: out of view), so a cut view is no
evidence that the rest is gone, and the memory's averaging of a thing's place and size over
its sightings lets whole views outweigh the cut ones. A large object half out of the frame
(furniture) is lifted up to half its size from its centre, which can be more than the
association radius: give such boxes a lower confidence, or drop them, upstream.

A box that cannot be lifted — too few readings, out of range, an empty mask — is reported in
:attr:`LiftedFrame.skipped` with the reason, never dropped silently. A box that is wrong (outside
the image, a mask of another size) raises :class:`~locimem.errors.InvalidInput`: that is a bug
upstream, not a hard frame.

**Pose.** ``position`` and ``quaternion`` (w, x, y, z) are the camera's pose in the world:
``frame="optical"`` (the default) for the ROS optical frame (``*_optical_frame``: z forward,
x right, y down — a tf lookup of the camera info's ``frame_id``), ``frame="body"`` for
locimem's camera body frame (REP 103: x forward, y left, z up; what
:class:`~locimem.model.Camera` holds). The depth image holds z in the optical frame (a
forward distance), which is what both a ROS depth image and ``Camera.depth`` hold.
"""

from __future__ import annotations

import math
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from locimem.check import (
    MAX_SIZE_M,
    check_coordinate_domain,
    check_distance_domain,
    check_float,
    check_int,
    check_positive,
    check_quaternion,
)
from locimem.errors import InvalidInput
from locimem.geometry import rotation_matrix_from_wxyz
from locimem.model import Camera, Detection
from locimem.perception.boxes import Box2D
from locimem.perception.intrinsics import Intrinsics, centred_window

__all__ = ["BAND_FRAC", "BAND_M", "BAND_PER_M", "INNER", "MAX_SAMPLES", "NOISE_BAND", "QUANTILE",
           "RANGE_SIGMA_FRAC", "REACH", "LiftedFrame", "lift_frame"]

MAX_SAMPLES = 768
"""Depth pixels read per box at most: a larger box is read on an even grid."""
INNER = 0.5
"""Without a mask, the box's depth is the median over its central half (of width and height)."""
BAND_M = 0.05
BAND_PER_M = 0.01
BAND_FRAC = 0.5
"""Readings within ``max(BAND_M + BAND_PER_M * d, BAND_FRAC * side)`` of the median depth
``d`` (``side``: the box's larger side in metres at ``d``) are the object's."""
RANGE_SIGMA_FRAC = 0.01
"""The default depth noise: a reading's standard deviation is 1 % of its depth."""
MAX_SIGMA_FRAC = 0.2
NOISE_BAND = 3.0
"""The band around the median depth is at least this many noise sigmas wide, each way."""
QUANTILE = 0.05
REACH = 0.15
"""On each axis the box spans the lifted points from the ``QUANTILE`` to the ``1 - QUANTILE``
quantile, and on to the farthest points within ``REACH`` of that range beyond it."""
SLACK_PX = 1.0
"""A box may overshoot the image by this many pixels (detector rounding); it is clipped."""
_SIDE_TURN = 0.3  # |view direction| along an axis from which a box grows on its far side only
_NAN = np.float32(np.nan)

# optical (z forward, x right, y down) -> body (x forward, y left, z up) coordinates
_OPTICAL_TO_BODY = np.array([[0.0, 0.0, 1.0], [-1.0, 0.0, 0.0], [0.0, -1.0, 0.0]])


@dataclass(frozen=True, slots=True)
class LiftedFrame:
    """What :func:`lift_frame` made of one frame.

    Attributes:
        detections: the lifted boxes, in the boxes' order, as world-frame
            :class:`~locimem.model.Detection`s (label, score as confidence, embedding as
            feature, track id).
        camera: the scan's :class:`~locimem.model.Camera` (pose, fields of view, the depth
            image in metres, ``range_m``'s far end as its range), for
            ``memory.observe(t, detections, camera)`` to judge what was looked at and missed.
        skipped: ``(box index, reason)`` for every box that was not lifted.
        indices: the box index of each detection (``detections[i]`` is ``boxes[indices[i]]``).
    """

    detections: list[Detection]
    camera: Camera
    skipped: list[tuple[int, str]] = field(default_factory=list)
    indices: list[int] = field(default_factory=list)


def lift_frame(
    boxes: Iterable[Box2D],
    depth: Any,
    intrinsics: Intrinsics,
    position: Any,
    quaternion: Any,
    *,
    frame: str = "optical",
    depth_intrinsics: Intrinsics | None = None,
    depth_scale: float = 1.0,
    range_m: tuple[float, float] = (0.1, 10.0),
    min_pixels: int = 16,
    min_size_m: float = 0.05,
    range_sigma_frac: float = RANGE_SIGMA_FRAC,
) -> LiftedFrame:
    """Lift one frame's 2D boxes to world-frame 3D detections with its depth image (see the
    module docstring for how).

    Args:
        boxes: the frame's :class:`Box2D`s, in color image pixels.
        depth: (h, w) depth image: float metres, or integers (``uint16`` millimetres with
            ``depth_scale=0.001``); 0 or NaN is no return. z in the optical frame.
        intrinsics: the color image's intrinsics (the boxes' and masks' image).
        position: the camera's position in the world, metres.
        quaternion: (w, x, y, z) rotating the camera ``frame`` into the world.
        frame: ``"optical"`` (z forward, x right, y down) or ``"body"`` (x forward, y left,
            z up).
        depth_intrinsics: the depth image's intrinsics when it differs from the color image
            (another resolution: ``intrinsics.scaled(w, h)``); registered to it.
        depth_scale: metres per depth unit.
        range_m: ``(near, far)``: readings outside are not used; ``far`` is the camera's
            range.
        min_pixels: a box needs at least this many depth pixels with a valid reading.
        min_size_m: the smallest extent of a lifted box, metres, on every axis.
        range_sigma_frac: the depth sensor's noise: the standard deviation of a reading, a
            share of its depth (:data:`RANGE_SIGMA_FRAC`, 1 %: 2 cm at 2 m, a structured-light
            or stereo camera's order); 0 for exact depth. It widens the band and is taken
            out of the depths' spread (see the module docstring).

    Raises:
        InvalidInput: a bad argument: intrinsics, a depth image of another size than its
            intrinsics, a box outside the image, a mask of another size than the color image,
            a non-finite pose.
    """
    boxes = list(boxes)
    for i, b in enumerate(boxes):
        if not isinstance(b, Box2D):
            raise InvalidInput(f"boxes[{i}] must be a Box2D, got {type(b).__name__}")
    ci = _check_intrinsics(intrinsics, "intrinsics")
    di = ci if depth_intrinsics is None else _check_intrinsics(depth_intrinsics,
                                                               "depth_intrinsics")
    depth = _check_depth(depth, di, depth_intrinsics is None)
    scale = check_positive(depth_scale, "depth_scale")
    near, far = _check_range(range_m)
    min_pixels = check_int(min_pixels, "min_pixels", lo=1)
    min_size = check_positive(min_size_m, "min_size_m")
    sigma = check_float(range_sigma_frac, "range_sigma_frac")
    if not 0.0 <= sigma <= MAX_SIGMA_FRAC:
        raise InvalidInput(f"range_sigma_frac must be in [0, {MAX_SIGMA_FRAC:g}] (a share of the "
                           f"depth: 0.01 is 2 cm at 2 m), got {range_sigma_frac!r}")
    if min_size > MAX_SIZE_M:
        raise InvalidInput(f"min_size_m must be at most {MAX_SIZE_M:g} m, got {min_size:g}")
    pos = check_coordinate_domain(position, "position")
    quat = check_quaternion(quaternion, "quaternion")
    if frame not in ("optical", "body"):
        raise InvalidInput(f"frame must be 'optical' (z forward, x right, y down) or 'body' "
                           f"(x forward, y left, z up), got {frame!r}")
    rot = rotation_matrix_from_wxyz(quat)  # the frame's axes in the world
    if frame == "body":
        rot = rot @ _OPTICAL_TO_BODY
    bounds = _check_boxes(boxes, ci)
    camera = _scan_camera(depth, scale, di, ci, pos, quat, frame, far)
    if not boxes:
        return LiftedFrame([], camera)
    lifted, skipped = _lift(boxes, bounds, depth, scale, ci, di, np.asarray(pos), rot, near,
                            far, min_pixels, min_size, sigma)
    detections, indices = [], []
    for k, (center, size) in lifted:
        b = boxes[k]
        try:
            detections.append(Detection(b.label, b.score, center, size, feature=b.embedding,
                                        track_id=b.track_id))
        except InvalidInput as exc:  # outside the map's domain, say
            skipped.append((k, f"invalid detection: {exc}"))
            continue
        indices.append(k)
    skipped.sort()
    return LiftedFrame(detections, camera, skipped, indices)


def _check_intrinsics(value: Any, name: str) -> Intrinsics:
    if not isinstance(value, Intrinsics):
        raise InvalidInput(f"{name} must be an Intrinsics (Intrinsics.from_camera_info(msg) "
                           f"reads a CameraInfo), got {type(value).__name__}")
    return value


def _check_depth(value: Any, k: Intrinsics, same: bool) -> np.ndarray:
    try:
        arr = value if isinstance(value, np.ndarray) else np.asarray(value)
    except (TypeError, ValueError) as exc:
        raise InvalidInput(f"depth must be a (h, w) array of numbers: {exc}") from None
    if arr.dtype.kind not in "fiu":
        raise InvalidInput(f"depth must hold numbers (float metres or integer units), got "
                           f"dtype {arr.dtype}")
    if arr.ndim != 2:
        raise InvalidInput(f"depth must be a (h, w) array, got shape {arr.shape}")
    if arr.shape != (k.height, k.width):
        hint = (" (a depth image at another resolution needs depth_intrinsics, e.g. "
                f"intrinsics.scaled({arr.shape[1] if arr.ndim == 2 else '?'}, "
                f"{arr.shape[0]}))") if same else ""
        raise InvalidInput(f"depth is {arr.shape[1]}x{arr.shape[0]} but its intrinsics are "
                           f"{k.width}x{k.height}{hint}")
    return arr


def _check_range(value: Any) -> tuple[float, float]:
    try:
        near, far = value
    except (TypeError, ValueError):
        raise InvalidInput(f"range_m must be (near, far) in metres, got {value!r}") from None
    near = check_float(near, "range_m near")
    far = check_distance_domain(far, "range_m far")
    if not 0.0 <= near < far:
        raise InvalidInput(f"range_m must have 0 <= near < far, got ({near}, {far})")
    return near, far


def _check_boxes(boxes: list[Box2D], ci: Intrinsics) -> np.ndarray:
    """The boxes' bounds (n, 4), clipped to the color image; a box beyond it by more than
    :data:`SLACK_PX`, or a mask of another size, is an error."""
    w, h = ci.width, ci.height
    out = np.empty((len(boxes), 4))
    for i, b in enumerate(boxes):
        if (b.x0 < -SLACK_PX or b.y0 < -SLACK_PX or b.x1 > w + SLACK_PX
                or b.y1 > h + SLACK_PX):
            raise InvalidInput(f"boxes[{i}] ({b.x0:g}, {b.y0:g}, {b.x1:g}, {b.y1:g}) lies "
                               f"outside the {w}x{h} color image: clip it to the image")
        if b.mask is not None and b.mask.shape != (h, w):
            raise InvalidInput(f"boxes[{i}].mask is {b.mask.shape[1]}x{b.mask.shape[0]}, the "
                               f"color image {w}x{h}")
        out[i] = (min(max(b.x0, 0.0), w), min(max(b.y0, 0.0), h),
                  min(max(b.x1, 0.0), w), min(max(b.y1, 0.0), h))
    return out


def _scan_camera(depth: np.ndarray, scale: float, di: Intrinsics, ci: Intrinsics,
                 pos: tuple[float, float, float], quat: tuple[float, float, float, float],
                 frame: str, far: float) -> Camera:
    """The scan's camera: the depth image's window centred on its principal point (what
    locimem's centred pinhole describes exactly), in metres."""
    r0, r1, c0, c1, fov, vfov = centred_window(di)
    crop = depth[r0:r1, c0:c1]
    if scale != 1.0:
        crop = np.multiply(crop, np.float32(scale), dtype=np.float32)
    return Camera(pos, quat, fov, far, vfov_deg=vfov, depth=crop, intrinsics=ci.as_tuple(),
                  frame=frame)


def _lift(boxes: list[Box2D], bounds: np.ndarray, depth: np.ndarray, scale: float,
          ci: Intrinsics, di: Intrinsics, pos: np.ndarray, rot: np.ndarray, near: float,
          far: float, min_pixels: int, min_size: float, sigma_frac: float
          ) -> tuple[list[tuple[int, tuple[Any, Any]]], list[tuple[int, str]]]:
    """Every box at once: ``([(box index, (centre, size))], [(box index, reason)])``."""
    skipped: list[tuple[int, str]] = []
    hd, wd = depth.shape
    same = di == ci
    bounds = _mask_bounds(boxes, bounds)
    # the boxes in depth image pixel-edge coordinates (pixel j covers [j, j + 1))
    edges = bounds.copy()
    if not same:
        edges[:, 0::2] = (edges[:, 0::2] - (0.5 + ci.cx)) * (di.fx / ci.fx) + (di.cx + 0.5)
        edges[:, 1::2] = (edges[:, 1::2] - (0.5 + ci.cy)) * (di.fy / ci.fy) + (di.cy + 0.5)
        np.clip(edges, 0.0, (wd, hd, wd, hd), out=edges)
    # the depth pixels whose centres lie inside: columns [c_lo, c_hi), rows [r_lo, r_hi)
    px = np.ceil(edges - 0.5).astype(np.intp)
    n_cf, n_rf = px[:, 2] - px[:, 0], px[:, 3] - px[:, 1]
    empty = (n_cf <= 0) | (n_rf <= 0)
    for k in np.flatnonzero(empty).tolist():
        if boxes[k].mask is not None and bounds[k, 0] == bounds[k, 2]:
            skipped.append((k, "empty mask: the mask marks no pixel inside the box"))
        else:
            skipped.append((k, "too small: the box covers no pixel centre of the depth "
                            "image"))
    live = np.flatnonzero(~empty)
    if live.size == 0:
        return [], skipped
    with np.errstate(invalid="ignore", divide="ignore"):
        out = _lift_live(boxes, live, edges[live], px[live], n_cf[live], n_rf[live], depth,
                         scale, ci, di, same, pos, rot, near, far, min_pixels, min_size,
                         sigma_frac, skipped)
    return out, skipped


def _lift_live(boxes: list[Box2D], live: np.ndarray, edges: np.ndarray, px: np.ndarray,
               n_cf: np.ndarray, n_rf: np.ndarray, depth: np.ndarray, scale: float,
               ci: Intrinsics, di: Intrinsics, same: bool, pos: np.ndarray, rot: np.ndarray,
               near: float, far: float, min_pixels: int, min_size: float,
               sigma_frac: float, skipped: list[tuple[int, str]]
               ) -> list[tuple[int, tuple[Any, Any]]]:
    """:func:`_lift` for the ``m`` boxes that cover depth pixels."""
    m = live.size
    rows = np.arange(m)
    wd = depth.shape[1]
    # an even grid of at most MAX_SAMPLES pixel centres per box, centred in it
    stride = np.maximum(1, np.ceil(np.sqrt(n_cf * n_rf / MAX_SAMPLES))).astype(np.int32)
    n_c, n_r = (n_cf - 1) // stride + 1, (n_rf - 1) // stride + 1
    c0 = px[:, 0] + (n_cf - 1 - (n_c - 1) * stride) // 2
    r0 = px[:, 1] + (n_rf - 1 - (n_r - 1) * stride) // 2
    count = (n_c * n_r).astype(np.int32)
    weight = stride.astype(np.int64) ** 2  # pixels a sample stands for
    # samples laid out one box a row, padded to the longest: a padded slot repeats its box's
    # last sample and counts for nothing
    lm = np.arange(int(count.max()), dtype=np.int32)[None, :]
    slot = lm < count[:, None]
    grid_r, grid_c = np.divmod(np.minimum(lm, (count - 1)[:, None]),
                               n_c.astype(np.int32)[:, None])
    cc = grid_c * stride[:, None] + c0.astype(np.int32)[:, None]
    rr = grid_r * stride[:, None] + r0.astype(np.int32)[:, None]
    pixel = rr * np.int32(wd) + cc  # each sample's pixel in the flat depth image
    d = np.take(depth.reshape(-1), pixel)
    d = d.astype(np.float32) if scale == 1.0 else np.multiply(d, np.float32(scale),
                                                               dtype=np.float32)
    ret = (d > 0.0) & slot  # NaN compares false
    inr = ret & (d >= near) & (d <= far)
    # which samples count: the mask's, or the whole box's (its inner region seeds the median)
    masked = np.array([boxes[k].mask is not None for k in live.tolist()])
    sel = slot
    if masked.any():
        sel = slot.copy()
        for j in np.flatnonzero(masked).tolist():
            mask = boxes[int(live[j])].mask
            assert mask is not None
            n = int(count[j])
            if same:
                pixels = pixel[j, :n]
            else:  # the color pixel nearest each depth pixel's centre
                uc = np.clip(np.rint((cc[j, :n] - di.cx) * (ci.fx / di.fx) + ci.cx), 0,
                             ci.width - 1).astype(np.intp)
                vr = np.clip(np.rint((rr[j, :n] - di.cy) * (ci.fy / di.fy) + ci.cy), 0,
                             ci.height - 1).astype(np.intp)
                pixels = vr * ci.width + uc
            sel[j, :n] &= np.take(mask.reshape(-1), pixels)
        ret &= sel
        inr &= sel
    # the inner region: pixel centres within INNER / 2 of the box's middle, each way
    size_px = edges[:, 2:] - edges[:, :2]  # (m, 2): width, height
    middle = 0.5 * (edges[:, :2] + edges[:, 2:]) - 0.5
    inner_lo = np.ceil(middle - INNER / 2 * size_px).astype(np.int32)
    inner_hi = np.floor(middle + INNER / 2 * size_px).astype(np.int32)
    seed = ((cc >= inner_lo[:, :1]) & (cc <= inner_hi[:, :1]) & (rr >= inner_lo[:, 1:])
            & (rr <= inner_hi[:, 1:]))
    n_inner = (seed & slot).sum(axis=1) * weight
    seed |= masked[:, None]
    seed &= inr
    n_sel = sel.sum(axis=1)
    n_ret = ret.sum(axis=1) * weight
    n_inr = inr.sum(axis=1) * weight
    n_seed = seed.sum(axis=1)
    thin = ~masked & (n_seed * weight < min_pixels)
    # an inner region large enough to judge but without readings: what the box's margin
    # shows is what lies around or behind the object, never the object itself
    blind = thin & (n_inner >= min_pixels)
    n_seed_inner = n_seed
    if thin.any():
        seed[thin] = inr[thin]
        n_seed = seed.sum(axis=1)
    ordered = np.sort(np.where(seed, d, np.float32(np.inf)), axis=1)
    half = np.maximum(n_seed, 1)
    med = 0.5 * (ordered[rows, (half - 1) // 2].astype(np.float64) + ordered[rows, half // 2])
    med[n_seed == 0] = near
    side = np.maximum(size_px[:, 0] / di.fx, size_px[:, 1] / di.fy) * med
    band = np.maximum(BAND_M + BAND_PER_M * med, BAND_FRAC * side)
    noise = sigma_frac * med  # the sensor's range noise at the box's depth (1 sigma)
    band = np.maximum(band, NOISE_BAND * noise)
    inl = np.abs(d - med.astype(np.float32)[:, None]) <= band.astype(np.float32)[:, None]
    inl &= inr
    n_in = inl.sum(axis=1)
    if sigma_frac > 0.0:
        d, share = _smoothed(d, inl, grid_c, n_c, count)
        d = _denoised(d, inl, n_in, noise * np.sqrt(share))
    # the samples lifted to the world frame (less the camera's position); the others sort last
    ray = np.empty((3, *d.shape), dtype=np.float32)
    np.multiply(cc - np.float32(di.cx), np.float32(1.0 / di.fx), out=ray[0])
    np.multiply(rr - np.float32(di.cy), np.float32(1.0 / di.fy), out=ray[1])
    ray[2] = 1.0
    ray *= np.where(inl, d, np.float32(np.nan))  # NaN sorts last, compares false
    world = (rot.astype(np.float32) @ ray.reshape(3, -1)).reshape(ray.shape)
    world.sort(axis=2)  # (3, m, M)
    # each axis from the QUANTILE to the 1 - QUANTILE quantile (linear interpolation) ...
    last = np.maximum(n_in - 1, 0)
    at = np.array([QUANTILE, 1.0 - QUANTILE])[:, None] * last  # (2, m)
    i0 = at.astype(np.intp)
    frac = at - i0
    a = world[:, rows, i0].astype(np.float64)  # (3, 2, m)
    b = world[:, rows, np.minimum(i0 + 1, last)].astype(np.float64)
    q = np.where(frac > 0.0, a + frac * (b - a), a)
    q[:, :, n_in == 0] = 0.0  # skipped below
    # ... and out to the last points within REACH of that range past it: the object's edges,
    # where the points thin out, but not strays
    # (only the tails need looking at: below the low quantile's index, above the high one's)
    reach = REACH * (q[:, 1] - q[:, 0]) + 1e-6
    head = world[:, :, :int(i0[0].max()) + 1]
    i_lo = (head < (q[:, 0] - reach).astype(np.float32)[..., None]).sum(axis=2)
    tail_n = int((last - i0[1]).max())
    i_hi = np.broadcast_to(i0[1], (3, m)).copy()
    if tail_n > 0:
        at_tail = i0[1][:, None] + 1 + np.arange(tail_n)
        past = at_tail > last[:, None]
        tail = world[:, rows[:, None], np.minimum(at_tail, world.shape[2] - 1)]
        near_tail = tail <= (q[:, 1] + reach).astype(np.float32)[..., None]
        near_tail &= ~past
        i_hi += near_tail.sum(axis=2)
    axes = np.arange(3)[:, None]
    lo = world[axes, rows, i_lo].astype(np.float64)
    hi = world[axes, rows, i_hi].astype(np.float64)
    lo[:, n_in == 0] = hi[:, n_in == 0] = 0.0
    # a sample's footprint (stride pixels square, at the median depth) along each world axis
    spacing = (stride * med / math.sqrt(di.fx * di.fy))[None, :] * (
        np.abs(rot[:, 0]) + np.abs(rot[:, 1]))[:, None]
    extent = hi - lo + spacing  # (3, m)
    mid = 0.5 * (lo + hi) + pos[:, None]
    # the near surface only: the unseen depth, away from the camera
    target = np.minimum(extent[[1, 0, 0]], extent[[2, 2, 1]])
    target[2] = 0.0
    grow = np.maximum(np.maximum(target, min_size) - extent, 0.0)
    view = mid - pos[:, None]
    view /= np.maximum(np.sqrt((view * view).sum(axis=0)), 1e-12)
    far_share = 0.5 + 0.5 * np.clip(view / _SIDE_TURN, -1.0, 1.0)
    centers = (mid + grow * (far_share - 0.5)).T.tolist()
    sizes = (extent + grow).T.tolist()
    out: list[tuple[int, tuple[Any, Any]]] = []
    for j, k in enumerate(live.tolist()):
        reason = None
        if masked[j] and n_sel[j] == 0:
            reason = "empty mask: no depth pixel inside the box falls on the mask"
        elif n_ret[j] < min_pixels:
            reason = (f"no depth: {int(n_ret[j])} of {int(n_sel[j] * weight[j])} pixels have "
                      f"a return (min_pixels={min_pixels})")
        elif n_inr[j] < min_pixels:
            reason = (f"out of range: {int(n_inr[j])} of {int(n_ret[j])} returns lie within "
                      f"range_m ({near:g}, {far:g}) (min_pixels={min_pixels})")
        elif blind[j]:
            reason = (f"background depth only: {int(n_seed_inner[j] * weight[j])} of "
                      f"{int(n_inner[j])} pixels of the box's centre have a reading in range, "
                      f"its margin's depth is what lies behind or around the object "
                      f"(min_pixels={min_pixels})")
        elif n_in[j] * weight[j] < min_pixels:
            reason = (f"scattered depth: {int(n_in[j] * weight[j])} pixels lie near the median "
                      f"depth {med[j]:.3f} m (min_pixels={min_pixels})")
        if reason is None:
            out.append((k, (tuple(centers[j]), tuple(sizes[j]))))
        else:
            skipped.append((k, reason))
    return out


def _smoothed(d: np.ndarray, inl: np.ndarray, grid_c: np.ndarray, n_c: np.ndarray,
              count: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Each inlier's depth averaged with its neighbours on the box's sample grid (``d``,
    ``inl``: (m, M), laid out row by row, ``n_c`` columns and ``count`` samples a box): along
    the row with the left and right ones when both are inliers, then along the column with
    the ones above and below when both are — pairs on either side, so a plane's depth is kept
    exactly, at the object's edges too (a one-sided mean would pull an edge off its plane).
    The depths off the inliers come back NaN. Also, per box, the mean over its inliers of the
    share of a reading's noise variance left (1/9 inside a face, 1 where no pair is whole; a
    column pair's taken as its middle's)."""
    m, width = d.shape
    nc = n_c.astype(np.int32)[:, None]
    h = np.where(inl, d, _NAN)  # NaN off the inliers: a sum over a pair is finite when whole
    # along the rows: the neighbours are the next slots, within the same grid row
    total = h[:, :-2] + h[:, 1:-1]
    total += h[:, 2:]
    row = np.isfinite(total)
    gc = grid_c[:, 1:-1]
    row &= gc > 0
    row &= gc < nc - 1
    total /= np.float32(3.0)
    np.copyto(h[:, 1:-1], total, where=row)
    # along the columns: n_c slots away (a slot beyond the box's rows reads another box's, or
    # a clipped one, and is masked)
    at = np.arange(width, dtype=np.int32)[None, :]
    slots = (np.arange(m, dtype=np.int32) * np.int32(width))[:, None] + at
    flat = h.reshape(-1)
    total = np.take(flat, slots - nc, mode="clip")
    total += h
    total += np.take(flat, slots + nc, mode="clip")
    col = np.isfinite(total)
    col &= at >= nc
    col &= at < count[:, None] - nc
    total *= np.float32(1.0 / 3.0)
    np.copyto(h, total, where=col)
    # each reading's share: 1/3 per whole pair, so 1, 1/3 or 1/9
    n_in = inl.sum(axis=1)
    n_row, n_col = row.sum(axis=1), col.sum(axis=1)
    n_both = (row & col[:, 1:-1]).sum(axis=1)
    left = (n_in - n_row - n_col + n_both) + (n_row + n_col - 2 * n_both) / 3.0 + n_both / 9.0
    return h, left / np.maximum(n_in, 1)


def _denoised(d: np.ndarray, inl: np.ndarray, n_in: np.ndarray, noise: np.ndarray
              ) -> np.ndarray:
    """The depths ``d`` (m, M) with the sensor's noise taken out of each box's spread: every
    reading drawn towards the mean of its box's inliers by the share that leaves their
    variance less the noise's (``noise``, metres, one sigma per box) — a face seen square-on
    collapses to its mean depth (its true depth spread is nil), a deep surface keeps its
    spread. Symmetric: the mean, and so the box's centre, does not move."""
    n = np.maximum(n_in, 1).astype(np.float32)
    mean = np.where(inl, d, np.float32(0.0)).sum(axis=1) / n
    dev = d - mean[:, None]
    sq = np.where(inl, dev, np.float32(0.0))
    sq *= sq
    var = sq.sum(axis=1) / n
    with np.errstate(invalid="ignore", divide="ignore"):
        keep = np.sqrt(np.clip(1.0 - (noise * noise).astype(np.float32) / var, 0.0, 1.0))
    keep = np.where(var > 0.0, keep, np.float32(1.0)).astype(np.float32)
    dev *= keep[:, None]
    dev += mean[:, None]
    return dev


def _mask_bounds(boxes: list[Box2D], bounds: np.ndarray) -> np.ndarray:
    """The bounds to read: a masked box's shrunk to the pixels its mask marks inside it (so
    its samples fall on the object), an empty one's to nothing."""
    out = bounds
    inside = np.ceil(bounds - 0.5).astype(np.intp).tolist()  # pixel centres: [lo, hi) each way
    for k, b in enumerate(boxes):
        if b.mask is None:
            continue
        if out is bounds:
            out = bounds.copy()
        c0, r0, c1, r1 = inside[k]
        window = b.mask[r0:r1, c0:c1]
        rows = np.asarray(window.any(axis=1))
        if not rows.any():
            out[k] = (bounds[k, 0], bounds[k, 1], bounds[k, 0], bounds[k, 1])
            continue
        top, bottom = int(rows.argmax()), rows.size - int(rows[::-1].argmax())
        cols = np.asarray(window[top:bottom].any(axis=0))
        left, right = int(cols.argmax()), cols.size - int(cols[::-1].argmax())
        x0, y0, x1, y1 = bounds[k]
        out[k] = (max(x0, c0 + left), max(y0, r0 + top), min(x1, c0 + right),
                  min(y1, r0 + bottom))
    return out
