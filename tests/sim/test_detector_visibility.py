"""The simulated detector's visibility: ``"rays"`` loses recall and box with the share of a
thing in sight; ``"centre"`` (the first detector) is reproduced."""

from __future__ import annotations

import hashlib

import numpy as np
import pytest

from locimem.geometry import look_at
from locimem.sim.perception import Detector, NoiseModel, SceneBoxes, recall_at_share
from locimem.sim.render import visible_share
from locimem.sim.scenarios import build
from locimem.sim.world import LABEL_SIZES, ObjectSpec, unit

GLASS = LABEL_SIZES["glass"]
CENTRE = (2.0, 0.0, 1.0)
CAMERA = look_at((0.0, 0.0, 1.0), CENTRE, fov_deg=80.0, vfov_deg=60.0, range_m=4.5)
# exact boxes and places: what is found is exactly what is in sight
EXACT = NoiseModel(position_sigma_m=0.0, outlier_prob=0.0, size_sigma_frac=0.0, fp_rate=0.0)


def _scene(occluder_y: tuple[float, float] | None) -> SceneBoxes:
    """The glass (id 1) 2 m ahead of the camera and, optionally, a screen 1 m ahead covering
    ``occluder_y`` (map y, metres; the camera looks along +x, +y is its left)."""
    lo = [np.array(CENTRE) - np.array(GLASS) / 2]
    hi = [np.array(CENTRE) + np.array(GLASS) / 2]
    if occluder_y is not None:
        lo.append(np.array([1.0, occluder_y[0], 0.5]))
        hi.append(np.array([1.05, occluder_y[1], 1.5]))
    return SceneBoxes(np.array(lo), np.array(hi), {1: 0})


def _detections(scene: SceneBoxes, scans: int, noise: NoiseModel = EXACT, seed: int = 0
                ) -> list:
    spec = ObjectSpec(1, "glass", GLASS, unit(np.ones(16)))
    det = Detector(noise, np.random.default_rng(seed), visibility="rays")
    found = []
    for k in range(scans):
        dets, _ = det.detect(k, CAMERA, [1], {1: CENTRE}, {1: spec}, np.zeros((2, 2)),
                             scene=scene)
        found.extend(dets)
    return found


def test_a_fully_visible_box_is_seen_whole() -> None:
    scene = _scene(None)
    share, lo, hi = visible_share(CAMERA, scene.lo, scene.hi, np.array([0]))
    assert share.tolist() == [1.0]
    np.testing.assert_allclose(lo[0], scene.lo[0])
    np.testing.assert_allclose(hi[0], scene.hi[0])


def test_a_fully_hidden_object_is_never_detected() -> None:
    scene = _scene((-0.5, 0.5))
    share, lo, _ = visible_share(CAMERA, scene.lo, scene.hi, np.array([0]))
    assert share.tolist() == [0.0] and np.isnan(lo).all()
    assert _detections(scene, 300) == []


def test_a_half_hidden_object_is_found_sometimes_with_the_box_in_sight() -> None:
    edge = -0.001  # the screen hides what the camera sees right of this (map y < edge)
    scene = _scene((-0.5, edge))
    share, _, _ = visible_share(CAMERA, scene.lo, scene.hi, np.array([0]))
    assert share.tolist() == [0.6]  # 3 of the grid's 5 columns
    expected = float(recall_at_share(0.6, EXACT))
    found = _detections(scene, 400)
    rate = len(found) / 400
    assert 0.0 < rate < 1.0 - EXACT.miss_prob
    assert abs(rate - expected) < 0.06, (rate, expected)
    # every box lies inside the part in sight: right of the screen's shadow, within the glass
    shadow = edge * 2.0 / 1.0 - 1e-9  # the screen's edge projected onto the glass (2 m away)
    lo = np.array(CENTRE) - np.array(GLASS) / 2
    hi = np.array(CENTRE) + np.array(GLASS) / 2
    for d in found:
        c, s = np.array(d.center), np.array(d.size)
        assert np.all(c - s / 2 >= lo - 1e-9) and np.all(c + s / 2 <= hi + 1e-9)
        assert c[1] - s[1] / 2 >= shadow
        assert s[1] < GLASS[1] * 0.75  # shrunk, and its centre shifted to the left
        assert c[1] > CENTRE[1] + 0.005


def test_recall_falls_smoothly_with_the_share_in_sight() -> None:
    shares = np.linspace(0.0, 1.0, 101)
    p = recall_at_share(shares, NoiseModel())
    assert p[0] == 0.0 and p[-1] == pytest.approx(0.9)
    assert np.all(np.diff(p) >= 0.0) and np.max(np.diff(p)) < 0.05


def test_visibility_is_checked() -> None:
    with pytest.raises(ValueError, match="visibility must be one of centre, rays, got 'x'"):
        Detector(NoiseModel(), np.random.default_rng(0), visibility="x")


def _digest(name: str) -> str:
    """A digest of every detection, floats rounded to 1e-6 (embeddings to 1e-5): numpy's
    vectorised kernels differ between CPUs in the last bits, a changed detector does not."""
    def r(x: float) -> float:
        return round(float(x), 6) + 0.0  # + 0.0: -0.0 and 0.0 digest alike

    h = hashlib.sha256()
    for f in build(name).frames:
        for d, src in zip(f.detections, f.sources, strict=True):
            h.update(repr((f.index, d.label, r(d.confidence), tuple(map(r, d.center)),
                           tuple(map(r, d.size)), d.track_id, src)).encode())
            if d.feature is not None:
                h.update((np.round(np.asarray(d.feature, np.float64), 5) + 0.0).tobytes())
    return h.hexdigest()[:16]


@pytest.mark.parametrize(("name", "digest"), [("close_clutter", "f2df035d452e430a"),
                                              ("thin_removals", "c2a42a3e31c08125")])
def test_the_centre_detector_reproduces_the_first_detections(name: str, digest: str) -> None:
    """Every detection (label, confidence, box, track id, embedding, source) as the first
    detector drew them, before ``"rays"`` existed."""
    assert _digest(name) == digest


def test_rays_is_a_different_detector_on_the_same_day() -> None:
    centre, rays = build("close_clutter"), build("close_clutter", detector="rays")
    assert (centre.detector, rays.detector) == ("centre", "rays")
    assert [f.truth.visible for f in centre.frames] == [f.truth.visible for f in rays.frames]
    assert centre.n_detections != rays.n_detections
