"""A simulated 3D detector: what perception hands the memory, with the faults real ones have.

Per scan, for every true object the camera can see (``Visibility.VISIBLE``): a miss with
probability ``miss_prob``; otherwise a detection with Gaussian position noise (now and then an
outlier with a much larger error), a jittered box
size, a label that flickers to a plausible confusion (:data:`CONFUSIONS`) with probability
``flicker_prob``, a noisy copy of the object's embedding, and a perception track id that
persists while the object keeps being detected and sometimes resets. Plus false positives:
``fp_rate`` new ones per scan on average (Poisson), on whatever surface a random pixel sees,
with low confidence; each may persist for a few scans at the same place.

Which objects the detector can see is its ``visibility``:

- ``"centre"`` (the first detector, kept so that earlier figures can be reproduced bit for
  bit): an object is seen whole when the exact ray to its centre is clear
  (:func:`~locimem.sim.render.line_of_sight`) and not at all otherwise;
- ``"rays"``: a grid of ``NoiseModel.visibility_grid`` squared rays over the object's
  projected box (:func:`~locimem.sim.render.visible_share`) gives the share of it in sight,
  the detection probability falls smoothly with that share (:func:`recall_at_share`: none
  below ``share_none``, all of ``1 - miss_prob`` from ``share_full``), and the box reported
  is the part in sight (shrunk and shifted: a half-hidden glass is found sometimes, with
  half its box), jittered as before. Objects whose centre is hidden but whose edge shows can
  be found too, now and then.

All randomness comes from the ``numpy.random.Generator`` passed in.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

import numpy as np

from locimem.geometry import in_view, pixel_rays
from locimem.model import Camera, Detection
from locimem.sim.render import visible_share
from locimem.sim.world import EMBEDDING_DIM, FIRST_LABELS, ObjectSpec, unit

VISIBILITIES = ("centre", "rays")

# Plausible detector mix-ups: label -> (other label, relative weight), one row per label.
CONFUSIONS: dict[str, tuple[tuple[str, float], ...]] = {
    "cup": (("mug", 0.7), ("glass", 0.3)),
    "mug": (("cup", 0.8), ("glass", 0.2)),
    "glass": (("cup", 0.6), ("mug", 0.2), ("vase", 0.2)),
    "bottle": (("vase", 0.8), ("glass", 0.2)),
    "vase": (("bottle", 0.7), ("glass", 0.3)),
    "remote": (("phone", 1.0),),
    "phone": (("remote", 0.7), ("notebook", 0.3)),
    "book": (("notebook", 1.0),),
    "notebook": (("book", 0.8), ("laptop", 0.2)),
    "laptop": (("keyboard", 0.5), ("notebook", 0.5)),
    "keyboard": (("laptop", 1.0),),
    "chair": (("stool", 1.0),),
    "stool": (("chair", 1.0),),
    "bowl": (("plate", 0.7), ("cup", 0.3)),
    "plate": (("bowl", 1.0),),
    "apple": (("orange", 1.0),),
    "orange": (("apple", 1.0),),
    "plant": (("vase", 1.0),),
    "candle": (("glass", 0.5), ("cup", 0.5)),
    "clock": (("plate", 1.0),),
    "keys": (("remote", 0.6), ("phone", 0.4)),
    "mouse": (("phone", 0.6), ("remote", 0.4)),
    "basket": (("bowl", 1.0),),
}


@dataclass(frozen=True, slots=True)
class NoiseModel:
    """How the simulated detector errs. Distances in metres, probabilities per detection.

    Args:
        position_sigma_m: standard deviation of the position error on each map axis.
        range_sigma_per_m: extra standard deviation per metre of forward distance.
        outlier_prob: probability a detection's position error is drawn with
            ``outlier_sigma_m`` instead (a depth edge, a box fitted to the wrong points).
        outlier_sigma_m: standard deviation of an outlier's error on each map axis.
        size_sigma_frac: relative standard deviation of each box extent.
        miss_prob: probability a visible object gives no detection in a scan.
        flicker_prob: probability a detection carries a confused label from ``CONFUSIONS``.
        fp_rate: mean number of new false positives per scan (Poisson).
        fp_persist_prob: probability a false positive is reported again in the next scan.
        feature_sigma: standard deviation of the noise added to each embedding component
            before re-normalising.
        track_reset_prob: probability a detection starts a new perception track id.
        track_max_gap: scans an object may go undetected and keep its track id.
        confidence: (low, high) of the uniform confidence of a correctly labelled detection.
        flicker_confidence: (low, high) of a detection with a confused label.
        fp_confidence: (low, high) of a false positive.
        features: whether detections carry embeddings.
        track_ids: whether detections carry perception track ids.
        depth_dropout: fraction of depth pixels with no reading (NaN) in the camera's image.
        label_swaps: ``(label, other, probability)`` rows: a detection of a ``label`` object
            that did not flicker reports ``other`` with that probability, as confidently as
            a right label (a detector that systematically takes this bowl for a plate).
        visibility_grid: rays per side of the grid ``"rays"`` visibility samples.
        share_none: ``"rays"``: a share in sight at or below this is never detected.
        share_full: ``"rays"``: from this share in sight, detected with ``1 - miss_prob``.
    """

    position_sigma_m: float = 0.02
    range_sigma_per_m: float = 0.0
    outlier_prob: float = 0.03
    outlier_sigma_m: float = 0.15
    size_sigma_frac: float = 0.05
    miss_prob: float = 0.1
    flicker_prob: float = 0.1
    fp_rate: float = 0.1
    fp_persist_prob: float = 0.3
    feature_sigma: float = 0.05
    track_reset_prob: float = 0.01
    track_max_gap: int = 2
    confidence: tuple[float, float] = (0.6, 0.95)
    flicker_confidence: tuple[float, float] = (0.35, 0.7)
    fp_confidence: tuple[float, float] = (0.1, 0.45)
    features: bool = True
    track_ids: bool = True
    depth_dropout: float = 0.02
    label_swaps: tuple[tuple[str, str, float], ...] = ()
    visibility_grid: int = 5
    share_none: float = 0.15
    share_full: float = 0.75


def confused_label(label: str, rng: np.random.Generator) -> str:
    """A label drawn from ``label``'s row of :data:`CONFUSIONS` (itself if it has none)."""
    row = CONFUSIONS.get(label)
    if not row:
        return label
    weights = np.array([w for _, w in row], dtype=float)
    k = int(rng.choice(len(row), p=weights / weights.sum()))
    return row[k][0]


def recall_at_share(share: float | np.ndarray, noise: NoiseModel) -> np.ndarray:
    """The probability a ``"rays"`` detector finds an object of which ``share`` is in sight:
    0 up to ``share_none``, ``1 - miss_prob`` from ``share_full``, a smoothstep between.

    >>> [round(float(p), 3) for p in recall_at_share(np.array([0.0, 0.45, 1.0]), NoiseModel())]
    [0.0, 0.45, 0.9]
    """
    x = np.clip((np.asarray(share, dtype=float) - noise.share_none)
                / (noise.share_full - noise.share_none), 0.0, 1.0)
    return (1.0 - noise.miss_prob) * x * x * (3.0 - 2.0 * x)


@dataclass(frozen=True)
class SceneBoxes:
    """What a ``"rays"`` detector casts its rays against: every solid box of the scan
    (``lo``, ``hi``: (n, 3) metres, map frame — the home, the objects present, a person in
    the way) and, per object id, the index of its own box."""

    lo: np.ndarray
    hi: np.ndarray
    own: dict[int, int]


def noisy_feature(embedding: np.ndarray, sigma: float, rng: np.random.Generator) -> np.ndarray:
    return unit(embedding + rng.normal(0.0, sigma, size=embedding.shape)).astype(np.float32)


@dataclass
class _FalsePositive:
    center: tuple[float, float, float]
    size: tuple[float, float, float]
    label: str
    feature: np.ndarray
    track: int


@dataclass
class Detector:
    """A stateful simulated detector (it owns the perception track ids).

    ``visibility``: ``"centre"`` or ``"rays"`` (see the module docstring). Call
    :meth:`detect` once per scan, in time order.
    """

    noise: NoiseModel
    rng: np.random.Generator
    next_track: int = 1
    visibility: str = "centre"
    # object id -> its current track id, and the scan it was last detected in
    _track: dict[int, int] = field(default_factory=dict, init=False, repr=False)
    _last_detected: dict[int, int] = field(default_factory=dict, init=False, repr=False)
    _fps: list[_FalsePositive] = field(default_factory=list, init=False, repr=False)
    _labels: tuple[str, ...] = field(default=FIRST_LABELS, init=False, repr=False)

    def __post_init__(self) -> None:
        if self.visibility not in VISIBILITIES:
            raise ValueError(f"visibility must be one of {', '.join(VISIBILITIES)}, got "
                             f"{self.visibility!r}")

    def reset_track(self, object_id: int) -> None:
        """Forget the object's perception track (e.g. it was picked up and carried off)."""
        self._track.pop(object_id, None)

    def _new_track(self) -> int:
        self.next_track += 1
        return self.next_track - 1

    def detect(
        self,
        scan: int,
        camera: Camera,
        visible: Sequence[int],
        positions: dict[int, tuple[float, float, float]],
        specs: dict[int, ObjectSpec],
        clean_depth: np.ndarray,
        scene: SceneBoxes | None = None,
    ) -> tuple[list[Detection], list[int | None]]:
        """Detections for one scan and, for each, the true object id that produced it (None
        for a false positive). ``visible`` are the ids of the objects the camera can see
        (``"centre"`` visibility reports only those), ``clean_depth`` the depth image without
        dropout (for placing false positives), ``scene`` the scan's boxes (needed by
        ``"rays"`` visibility, which judges every object in ``scene.own`` itself)."""
        nz, rng = self.noise, self.rng
        dets: list[Detection] = []
        sources: list[int | None] = []
        cam_pos = np.asarray(camera.position)
        for oid, true, extent, p_miss in self._candidates(camera, visible, positions,
                                                          specs, scene):
            if rng.random() < p_miss:
                continue
            spec = specs[oid]
            sigma = nz.position_sigma_m + nz.range_sigma_per_m * float(
                np.linalg.norm(np.asarray(positions[oid]) - cam_pos))
            if rng.random() < nz.outlier_prob:
                sigma = nz.outlier_sigma_m
            center = true + rng.normal(0.0, sigma, size=3)
            size = np.maximum(extent * (1 + rng.normal(0, nz.size_sigma_frac, size=3)), 0.01)
            confused = rng.random() < nz.flicker_prob
            label = confused_label(spec.label, rng) if confused else self._swapped(spec.label)
            lo, hi = (nz.confidence if label == spec.label or not confused
                      else nz.flicker_confidence)
            conf = float(rng.uniform(lo, hi))
            feature = noisy_feature(spec.embedding, nz.feature_sigma, rng) if nz.features else None
            track = None
            if nz.track_ids:
                last = self._last_detected.get(oid)
                if (oid not in self._track or last is None or scan - last > nz.track_max_gap + 1
                        or rng.random() < nz.track_reset_prob):
                    self._track[oid] = self._new_track()
                track = self._track[oid]
            self._last_detected[oid] = scan
            dets.append(Detection(label, conf, tuple(center.tolist()), tuple(size.tolist()),
                                  feature=feature,
                                  track_id=None if track is None else str(track)))
            sources.append(oid)
        for fp in self._false_positives(camera, clean_depth):
            lo, hi = nz.fp_confidence
            dets.append(Detection(fp.label, float(rng.uniform(lo, hi)), fp.center, fp.size,
                                  feature=fp.feature if nz.features else None,
                                  track_id=str(fp.track) if nz.track_ids else None))
            sources.append(None)
        return dets, sources

    def _candidates(self, camera: Camera, visible: Sequence[int],
                    positions: dict[int, tuple[float, float, float]],
                    specs: dict[int, ObjectSpec], scene: SceneBoxes | None
                    ) -> list[tuple[int, np.ndarray, np.ndarray, float]]:
        """(object id, centre and size of what is seen of it, probability it is missed), in
        the order detections are drawn."""
        if self.visibility == "centre":
            miss = self.noise.miss_prob
            return [(oid, np.asarray(positions[oid]), np.asarray(specs[oid].size_m), miss)
                    for oid in visible]
        if scene is None:
            raise ValueError("'rays' visibility needs the scan's boxes (scene)")
        ids = sorted(scene.own)
        share, lo, hi = visible_share(camera, scene.lo, scene.hi,
                                      np.array([scene.own[i] for i in ids], dtype=np.intp),
                                      grid=self.noise.visibility_grid)
        found = recall_at_share(share, self.noise)
        return [(oid, (lo[k] + hi[k]) / 2, hi[k] - lo[k], 1.0 - float(found[k]))
                for k, oid in enumerate(ids) if found[k] > 0.0]

    def _swapped(self, label: str) -> str:
        """``label``, or what a ``label_swaps`` row makes of it (one draw per row that
        applies; none when there are no rows, so the old stream is untouched)."""
        for source, other, p in self.noise.label_swaps:
            if source == label and self.rng.random() < p:
                return other
        return label

    def _false_positives(self, camera: Camera, depth: np.ndarray) -> list[_FalsePositive]:
        nz, rng = self.noise, self.rng
        kept = [fp for fp in self._fps if rng.random() < nz.fp_persist_prob]
        # A persisting false positive must still be in front of the camera to be reported.
        if kept:
            seen = in_view(camera, np.array([fp.center for fp in kept]))
            kept = [fp for fp, s in zip(kept, seen, strict=True) if s]
        n_new = int(rng.poisson(nz.fp_rate))
        if n_new:
            rays = pixel_rays(camera, depth.shape)
            for _ in range(n_new):
                r = int(rng.integers(depth.shape[0]))
                c = int(rng.integers(depth.shape[1]))
                d = float(depth[r, c])
                if not np.isfinite(d) or d > camera.range_m:
                    d = float(rng.uniform(0.8, camera.range_m))
                d = max(0.3, d - 0.05)
                center = np.asarray(camera.position) + d * rays[r, c]
                label = self._labels[int(rng.integers(len(self._labels)))]
                size = tuple(float(v) for v in rng.uniform(0.04, 0.25, size=3))
                feature = unit(rng.normal(size=EMBEDDING_DIM)).astype(np.float32)
                kept.append(_FalsePositive(tuple(center.tolist()), size, label,  # type: ignore[arg-type]
                                           feature, self._new_track()))
        self._fps = kept
        return kept
