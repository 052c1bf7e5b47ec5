"""A camera info's intrinsics: the rectified image's (``p``) when the camera is distorted."""

from __future__ import annotations

from types import SimpleNamespace

import pytest

from locimem.errors import InvalidInput
from locimem.perception import Intrinsics, camera_matrix

K = [600.0, 0.0, 320.0, 0.0, 600.0, 240.0, 0.0, 0.0, 1.0]
P = [580.0, 0.0, 318.0, 0.0, 0.0, 585.0, 236.0, 0.0, 0.0, 0.0, 1.0, 0.0]
D = [-0.12, 0.03, 0.001, -0.0005, 0.0]


def _info(**fields):
    return SimpleNamespace(width=640, height=480, **fields)


def test_an_undistorted_camera_reads_k():
    for info in (_info(k=K), _info(k=K, d=[0.0] * 5, p=P), _info(k=K, d=[])):
        assert camera_matrix(info) == tuple(K)
    k = Intrinsics.from_camera_info(_info(k=K, d=[0.0] * 5, p=P))
    assert (k.fx, k.fy, k.cx, k.cy) == (600.0, 600.0, 320.0, 240.0)


def test_a_distorted_camera_reads_its_rectified_images_p_not_k():
    k = Intrinsics.from_camera_info(_info(k=K, d=D, p=P))
    assert (k.fx, k.fy, k.cx, k.cy, k.width, k.height) == (580.0, 585.0, 318.0, 236.0, 640, 480)
    as_dict = Intrinsics.from_camera_info({"k": K, "d": D, "p": P, "width": 640, "height": 480})
    assert as_dict == k


@pytest.mark.parametrize("p", [None, [0.0] * 12, P[:9]])
def test_a_distorted_camera_without_a_projection_matrix_is_refused(p):
    with pytest.raises(InvalidInput, match=r"distortion .* lifting needs rectified images"):
        Intrinsics.from_camera_info(_info(k=K, d=D, p=p))


def test_bad_distortion_and_projection_values_are_refused():
    with pytest.raises(InvalidInput, match="'d' must be numbers"):
        camera_matrix(_info(k=K, d=["x"]))
    with pytest.raises(InvalidInput, match="must be finite"):
        camera_matrix(_info(k=K, d=D, p=[float("nan")] * 12))
    with pytest.raises(InvalidInput, match="no skew"):
        camera_matrix(_info(k=K, d=D, p=[580.0, 2.0, *P[2:]]))
