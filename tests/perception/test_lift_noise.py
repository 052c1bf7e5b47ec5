"""lift_frame under a depth sensor's range noise: the centre is not drawn towards the camera,
a face seen square-on is not deepened by the noise."""

from __future__ import annotations

import numpy as np
import pytest

from locimem.errors import InvalidInput
from locimem.perception import Box2D, lift_frame

from .test_lift import CUBE, K, box_of, scene

POS = (0.0, 0.0, 0.7)  # 2 m in front of the cube's front face, looking along +x


def _noisy_lifts(sigma_frac: float, seeds: int = 12, mask: bool = True):
    _, q, depth, which = scene(POS, floor=None)
    box = box_of(K, POS, q, *CUBE)
    out = []
    for seed in range(seeds):
        rng = np.random.default_rng(seed)
        noisy = depth * (1.0 + rng.normal(0.0, sigma_frac, depth.shape)).astype(np.float32)
        b = Box2D(*box, "box", 0.9, mask=which == 0 if mask else None)
        (det,) = lift_frame([b], noisy, K, POS, q, range_sigma_frac=sigma_frac).detections
        out.append(det)
    return out


@pytest.mark.parametrize("mask", [True, False])
def test_range_noise_moves_the_centre_neither_nearer_nor_farther(mask):
    dets = _noisy_lifts(0.01, mask=mask)
    true_x = 0.5 * (CUBE[0][0] + CUBE[1][0])
    err_x = np.array([d.center[0] for d in dets]) - true_x  # + is away from the camera
    assert abs(err_x.mean()) < 0.01, err_x
    assert np.all(np.abs(err_x) < 0.02), err_x
    np.testing.assert_allclose([d.center[1:] for d in dets], [[0.0, 0.7]] * len(dets),
                               atol=0.01)


def test_a_face_seen_square_on_is_not_deepened_by_the_noise():
    for det in _noisy_lifts(0.01):
        assert 0.36 < det.size[0] < 0.43, det.size  # the cube's depth, 0.4 m, not more
        assert det.center[0] - det.size[0] / 2 > 2.0 - 0.02  # its front face, not nearer


def test_exact_depth_is_lifted_alike_with_or_without_a_noise_model():
    (exact,) = _noisy_lifts(0.0, seeds=1)
    _, q, depth, which = scene(POS, floor=None)
    b = Box2D(*box_of(K, POS, q, *CUBE), "box", 0.9, mask=which == 0)
    (modelled,) = lift_frame([b], depth, K, POS, q).detections
    np.testing.assert_allclose(modelled.center, exact.center, atol=0.005)


@pytest.mark.parametrize("bad", [-0.01, 0.5, float("nan")])
def test_a_bad_noise_model_raises(bad):
    _, q, depth, _ = scene(POS, floor=None)
    with pytest.raises(InvalidInput, match="range_sigma_frac must be"):
        lift_frame([], depth, K, POS, q, range_sigma_frac=bad)


def test_a_far_box_keeps_the_readings_its_noise_spreads():
    # 4.5 m away, 1 % noise is 4.5 cm: a band narrower than the noise (9.5 cm, 2.1 sigma, before
    # NOISE_BAND) dropped 4 % of the readings, and a box at the image's edge with few of them was
    # refused as "scattered depth" (moves_across_rooms' stale cup)
    cube = ((4.46, -0.04, 0.66), (4.54, 0.04, 0.74))  # 8 cm, 9 px wide
    pos = (0.0, 0.0, 0.7)
    _, q, depth, which = scene(pos, np.mean(cube, axis=0), boxes=(cube,), floor=None,
                               wall_x=None)
    mask = which == 0
    box = Box2D(*box_of(K, pos, q, *cube), "box", 0.9, mask=mask)
    for seed in range(10):
        noisy = depth * (1.0 + np.random.default_rng(seed).normal(0.0, 0.01, depth.shape)
                         ).astype(np.float32)
        lifted = lift_frame([box], noisy, K, pos, q, min_pixels=int(0.98 * mask.sum()))
        assert lifted.skipped == [], seed
        (det,) = lifted.detections
        np.testing.assert_allclose(det.center, np.mean(cube, axis=0), atol=0.03)
