"""The check a scan's camera gets before its absence evidence is trusted: most detections
outside the view the camera claims means its pose or frame is wrong."""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np

from locimem.geometry import to_camera_frame
from locimem.model import Camera, Detection

__all__ = ["OPTICAL_HINT", "frame_warnings"]


def frame_warnings(camera: Camera | None, detections: Sequence[Detection]) -> tuple[str, ...]:
    """A warning when most of a scan's detections (at least three) lie outside the view its
    camera claims — behind it or outside its fields of view, whatever the range: the
    camera's pose or frame is wrong (an optical-frame quaternion given as a body one is the
    usual cause), and absence evidence from it would be wrong too."""
    n = len(detections)
    if camera is None or n < 3:
        return ()
    body = to_camera_frame(camera, [d.center for d in detections])
    x, y, z = body[:, 0], body[:, 1], body[:, 2]
    tan_h = math.tan(math.radians(camera.fov_deg) / 2) * 1.1
    tan_v = math.tan(math.radians(camera.vfov_deg) / 2) * 1.1
    outside = n - int(np.count_nonzero((x > 0) & (np.abs(y) <= tan_h * x)
                                       & (np.abs(z) <= tan_v * x)))
    if 2 * outside <= n:
        return ()
    return (f"{outside} of {n} detections lie outside the camera's field of view: check the "
            f"camera pose and its frame ({OPTICAL_HINT})",)


OPTICAL_HINT = "Camera(frame='optical') for a ROS optical-frame quaternion"
"""The fix the field-of-view warning names, in Python terms (a front end words its own)."""
