"""Camera geometry: which map points a camera could see, and where they land in its image.

Pure functions over :class:`~locimem.model.Camera` and numpy arrays, shared by the simulator and
the tracker's visibility-aware belief (:func:`place_states`).

Frames and units
----------------
- **Map frame**: metres, z up. Points cross this module's boundary as array-likes of shape
  ``(n, 3)`` (a single ``(3,)`` point is accepted and treated as ``(1, 3)``).
- **Camera body frame** (ROS REP 103): origin at ``camera.position``; x forward along the optical
  axis, y left, z up. ``camera.quaternion`` (w, x, y, z) rotates body-frame vectors into the map
  frame: ``p_map = R @ p_body + position``.
- **Forward distance**: the body-frame x of a point, in metres (what a depth camera's z-buffer
  holds). ``camera.range_m`` and the depth image are forward distances.
- **Pinhole image**: the field of view is the rectangle ``|y / x| <= tan(fov_deg / 2)``,
  ``|z / x| <= tan(vfov_deg / 2)`` in the body frame. An image of shape ``(h, w)`` has focal
  lengths ``fx = (w / 2) / tan(fov / 2)``, ``fy = (h / 2) / tan(vfov / 2)`` (pixels) and centre
  ``(cx, cy) = (w / 2, h / 2)``; continuous pixel coordinates are
  ``col = cx - fx * y / x`` and ``row = cy - fy * z / x``, so row 0 is the top, column 0 the
  left, and pixel ``(i, j)`` covers ``[i, i + 1) x [j, j + 1)`` with its centre at
  ``(i + 0.5, j + 0.5)``.

    >>> import numpy as np
    >>> cam = look_at((0.0, 0.0, 1.0), (2.0, 0.0, 1.0), fov_deg=90.0, vfov_deg=60.0,
    ...               range_m=4.0)
    >>> to_camera_frame(cam, [[2.0, 1.0, 1.5]]).round(6).tolist()   # 2 m ahead, 1 m left, 0.5 up
    [[2.0, 1.0, 0.5]]
    >>> in_view(cam, [[2.0, 0.0, 1.0], [-1.0, 0.0, 1.0], [5.0, 0.0, 1.0]]).tolist()
    [True, False, False]
"""

from locimem.geometry.camera import (
    Visibility,
    check_points,
    in_view,
    intrinsics,
    look_at,
    pixel_index,
    pixel_rays,
    project,
    quaternion_wxyz_from_matrix,
    rotation_matrix_from_wxyz,
    to_camera_frame,
    view_box,
    visibility,
)
from locimem.geometry.places import (
    LARGE_PLACE_M,
    LOOKED,
    MAX_PLACE_PIXELS,
    PARTLY_IN_VIEW,
    Place,
    PlaceLooks,
    bordered_share,
    place_looks,
    place_states,
    ray_box_chord,
)

__all__ = [
    "LARGE_PLACE_M",
    "LOOKED",
    "MAX_PLACE_PIXELS",
    "PARTLY_IN_VIEW",
    "Place",
    "PlaceLooks",
    "Visibility",
    "bordered_share",
    "check_points",
    "in_view",
    "intrinsics",
    "look_at",
    "pixel_index",
    "pixel_rays",
    "place_looks",
    "place_states",
    "project",
    "quaternion_wxyz_from_matrix",
    "ray_box_chord",
    "rotation_matrix_from_wxyz",
    "to_camera_frame",
    "view_box",
    "visibility",
]
