"""The pure maths of ingest: transforms, the tf tree, the optical frame, intrinsics, depth."""

from __future__ import annotations

import math

import numpy as np
import pytest

from locimem import Camera
from locimem.errors import InvalidInput
from locimem.geometry import to_camera_frame
from locimem.ingest.frames import (
    OPTICAL_TO_BODY,
    TfBuffer,
    Transform,
    TransformUnavailable,
    camera_window,
    depth_to_metres,
    slerp,
)


def _yaw(deg: float) -> tuple[float, float, float, float]:
    h = math.radians(deg) / 2
    return (math.cos(h), 0.0, 0.0, math.sin(h))


def _close(a, b, tol=1e-12):
    assert np.allclose(np.asarray(a, float), np.asarray(b, float), atol=tol), (a, b)


def test_compose_inverse_and_apply():
    a = Transform((1.0, 2.0, 0.5), _yaw(90))
    _close(a.apply((1.0, 0.0, 0.0)), (1.0, 3.0, 0.5))  # x turned to y, then shifted
    _close(a.inverse().apply(a.apply((0.3, -0.7, 2.0))), (0.3, -0.7, 2.0))
    b = Transform((0.0, 0.0, 1.0), _yaw(-30))
    p = (0.2, 0.4, 0.6)
    _close(a.compose(b).apply(p), a.apply(b.apply(p)))
    _close(a.rotate((1, 0, 0, 0)), _yaw(90))


def test_optical_frame_axes_become_body_axes():
    # the optical frame's z (forward) is the body's x, its x (right) is -y, its y (down) is -z
    _close(OPTICAL_TO_BODY.apply((1, 0, 0)), (0, 0, 1))
    _close(OPTICAL_TO_BODY.inverse().apply((0, 0, 1)), (1, 0, 0))
    _close(OPTICAL_TO_BODY.inverse().apply((1, 0, 0)), (0, -1, 0))
    _close(OPTICAL_TO_BODY.inverse().apply((0, 1, 0)), (0, 0, -1))
    # a camera posed from an optical-frame tf sees a point 2 m down its optical axis ahead
    t_map_optical = Transform((1.0, 0.0, 1.5), (0.5, -0.5, 0.5, -0.5))  # REP 103 mount
    body = t_map_optical.compose(OPTICAL_TO_BODY)
    _close(body.quat_wxyz, (1.0, 0.0, 0.0, 0.0))  # the usual mount: body = map axes
    cam = Camera(body.translation_m, body.quat_wxyz, 60.0, 5.0)
    ahead = t_map_optical.apply((0.0, 0.0, 2.0))
    _close(to_camera_frame(cam, [ahead])[0], (2.0, 0.0, 0.0))
    right_down = t_map_optical.apply((0.5, 0.25, 2.0))  # optical x right, y down
    _close(to_camera_frame(cam, [right_down])[0], (2.0, -0.5, -0.25))


def test_slerp_is_constant_rate_and_takes_the_short_way():
    for u in (0.0, 0.25, 0.5, 1.0):
        _close(slerp(_yaw(10), _yaw(50), u), _yaw(10 + 40 * u))
    q = slerp(_yaw(170), tuple(-v for v in _yaw(-170)), 0.5)  # sign-flipped: still short
    _close(np.abs(q), np.abs(_yaw(180)), 1e-9)


def test_tf_chain_interpolates_and_never_extrapolates():
    tf = TfBuffer()
    tf.add("map", "odom", 0.0, Transform((1.0, 0.0, 0.0), _yaw(90)), static=True)
    tf.add("odom", "base", 10.0, Transform((0.0, 0.0, 0.0), _yaw(0)))
    tf.add("odom", "base", 12.0, Transform((2.0, 0.0, 0.0), _yaw(20)))
    tf.add("base", "cam", 0.0, Transform((0.0, 0.0, 1.0), (1, 0, 0, 0)), static=True)
    got = tf.lookup("map", "cam", 11.0)
    _close(got.translation_m, (1.0, 1.0, 1.0))
    _close(got.quat_wxyz, _yaw(100))
    _close(tf.lookup("cam", "map", 11.0).compose(got).quat_wxyz, (1, 0, 0, 0))
    _close(tf.lookup("map", "cam", 12.0).translation_m, (1.0, 2.0, 1.0))  # the last sample
    with pytest.raises(TransformUnavailable, match=r"^tf odom <- base: no data around"):
        tf.lookup("map", "cam", 12.001)
    with pytest.raises(TransformUnavailable, match=r"^tf map <- elsewhere: frames not "):
        tf.lookup("map", "elsewhere", 11.0)
    assert tf.lookup("base", "base", 99.0) == Transform.identity()
    # siblings resolve through their common parent, static edges need no time
    tf.add("base", "lidar", 0.0, Transform((0.5, 0.0, 0.0), (1, 0, 0, 0)), static=True)
    _close(tf.lookup("cam", "lidar", 1e9).translation_m, (0.5, 0.0, -1.0))
    with pytest.raises(InvalidInput, match=r"frame 'cam' has two parents"):
        tf.add("odom", "cam", 0.0, Transform.identity(), static=True)


def test_camera_window_centres_the_principal_point():
    w = camera_window([500.0, 0, 319.5, 0, 500.0, 239.5, 0, 0, 1], 640, 480)
    assert (w.row0, w.row1, w.col0, w.col1) == (0, 480, 0, 640)
    assert w.fov_deg == pytest.approx(math.degrees(2 * math.atan(320 / 500)))
    off = camera_window([500.0, 0, 339.5, 0, 400.0, 199.5, 0, 0, 1], 640, 480)
    assert (off.col0, off.col1, off.row0, off.row1) == (40, 640, 0, 400)  # centred: 340, 200
    assert off.fov_deg == pytest.approx(math.degrees(2 * math.atan(300 / 500)))
    assert off.vfov_deg == pytest.approx(math.degrees(2 * math.atan(200 / 400)))
    with pytest.raises(InvalidInput, match="fx, fy > 0"):
        camera_window([0.0, 0, 1, 0, 1, 1, 0, 0, 1], 4, 4)


def test_depth_units_padding_and_byte_order():
    mm = np.array([[1000, 0, 2500], [65535, 1, 7]], dtype=">u2")
    padded = np.zeros((2, 8), np.uint8)  # step 8 > 3 pixels * 2 bytes
    padded[:, :6] = mm.view(np.uint8).reshape(2, 6)
    got = depth_to_metres(padded.tobytes(), "16UC1", 3, 2, 8, True)
    assert got.dtype == np.float32
    _close(got[np.isfinite(got)], np.array([1.0, 2.5, 65.535, 0.001, 0.007], np.float32), 1e-6)
    assert np.isnan(got[0, 1])
    f = np.array([[1.25, np.inf, -1.0, 0.0]], dtype="<f4")
    got = depth_to_metres(f.tobytes(), "32FC1", 4, 1, 16, False)
    assert got[0, 0] == np.float32(1.25) and np.isnan(got[0, 1:]).all()
    with pytest.raises(InvalidInput, match=r"unknown depth encoding 'bgr8'"):
        depth_to_metres(b"\0" * 12, "bgr8", 2, 2, 6, False)
