"""``keyframes.visibilities`` scores a scan's boxes at once; it must give exactly what
``keyframes.visibility`` gives box by box (coverage and depth share are compared with kept
frames' scores), on random cameras, boxes and depth images — boxes out of view, reaching
behind the camera, larger than the image — at the belief tests' coarse resolutions too."""

from __future__ import annotations

import numpy as np
import pytest

from locimem.evidence.keyframes import visibilities, visibility
from locimem.geometry import look_at

SHAPES = [None, (12, 16), (13, 17), (24, 32), (60, 80), (480, 640)]


@pytest.mark.parametrize("shape", SHAPES)
def test_all_boxes_at_once_equal_one_by_one(shape) -> None:
    rng = np.random.default_rng(7 if shape is None else sum(shape))
    shares = set()
    for _ in range(40 if shape != (480, 640) else 6):
        eye = rng.uniform([-1, -1, 0.3], [1, 1, 2.0])
        target = eye + rng.normal(size=3) * [3, 3, 1] + np.array([0.3, 0.0, 0.0])
        depth = None
        if shape is not None:
            depth = rng.uniform(0.2, 9.0, shape)
            depth[rng.random(shape) < 0.3] = np.nan
            depth[rng.random(shape) < 0.1] = 0.0
            if rng.random() < 0.5:
                depth = depth.astype(np.float32)
        fov = float(rng.uniform(40, 110))
        cam = look_at(eye, target, fov_deg=fov, vfov_deg=fov * float(rng.uniform(0.5, 0.9)),
                      range_m=float(rng.uniform(2, 9)), depth=depth)
        n = int(rng.integers(1, 40))
        centers = eye + rng.normal(size=(n, 3)) * 3  # some behind, some around the camera
        sizes = (rng.choice([0.01, 0.05, 0.1, 0.5, 2.0, 8.0], size=(n, 3))
                 * rng.uniform(0.5, 1.5, (n, 3)))
        together = visibilities(cam, centers, sizes)
        alone = [visibility(cam, c, s) for c, s in zip(centers.tolist(), sizes.tolist(),
                                                       strict=True)]
        assert together == alone  # floats equal bit for bit (== on Python floats)
        shares.update(d for _, d in alone)
    if shape is not None:  # the scenes reach no pixel, some, and all valid
        assert 0.0 in shares and any(0.0 < d < 1.0 for d in shares)
    assert visibilities(cam, np.zeros((0, 3)), np.zeros((0, 3))) == []


@pytest.mark.parametrize("shape", [None, (24, 32)])
def test_the_trackers_unchecked_candidate_is_the_public_one(shape) -> None:
    """``sighted_candidate`` (the tracker's, without re-checking) builds the frame
    ``make_candidate`` builds, field by field: with and without kept frames, intrinsics, an
    image path and an embedding."""
    from locimem import Camera
    from locimem.evidence.keyframes import make_candidate, offer, sighted_candidate

    rng = np.random.default_rng(11)
    kept: tuple = ()
    for k in range(30):
        eye = rng.uniform([-1, -1, 0.3], [1, 1, 2.0])
        depth = None if shape is None else rng.uniform(0.2, 9.0, shape)
        bare = look_at(eye, eye + np.array([3.0, rng.normal(), rng.normal() * 0.3]),
                       fov_deg=70.0, vfov_deg=50.0, range_m=6.0, depth=depth)
        cam = Camera(bare.position, bare.quaternion, bare.fov_deg, bare.range_m, bare.vfov_deg,
                     depth=depth, image=f"frames/{k}.png" if k % 2 else None,
                     intrinsics=(300.0, 300.0, 160.0, 120.0, 320.0, 240.0) if k % 3 else None)
        center = tuple((eye + np.array([2.5, rng.normal() * 0.5, 0.0])).tolist())
        size = (0.1, 0.1, 0.12)
        (view,) = visibilities(cam, [center], [size])
        emb = tuple(rng.normal(size=4).tolist()) if k % 4 else None
        ours = sighted_candidate(cam, center, kept, view, t=float(k), commit=k + 1, seq=3 * k,
                                 embedding=emb)
        public = make_candidate(cam, center, size, kept, t=float(k), commit=k + 1, seq=3 * k,
                                intrinsics=cam.intrinsics, image=cam.image, embedding=emb,
                                seen=view)
        assert ours == public and ours.to_dict() == public.to_dict()
        kept, _, _ = offer(kept, public)
    assert len(kept) > 1  # later candidates were scored against kept frames
