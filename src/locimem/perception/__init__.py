"""From a camera to the memory: 2D detections and a depth image lifted to the world-frame 3D
:class:`~locimem.model.Detection`s and the :class:`~locimem.model.Camera` that
``memory.observe`` takes.

- :class:`Intrinsics`: a pinhole camera's ``fx, fy, cx, cy, width, height``
  (:meth:`Intrinsics.from_camera_info` reads a ROS ``sensor_msgs/CameraInfo``: of a
  distorted camera, its rectified image's intrinsics, :func:`camera_matrix`).
- :class:`Box2D`: one 2D detection (box, label, score; optional mask, embedding, track id).
- :func:`lift_frame`: a frame's boxes, depth image and camera pose ->
  :class:`LiftedFrame` (``detections``, ``camera``, ``skipped``).

Only numpy: no detector, no ROS. It sits beside the simulator (layer 4): it imports the model,
the camera geometry and the checks, and nothing above.
"""

from locimem.perception.boxes import Box2D
from locimem.perception.intrinsics import Intrinsics, camera_matrix, centred_window
from locimem.perception.lift import LiftedFrame, lift_frame

__all__ = ["Box2D", "Intrinsics", "LiftedFrame", "camera_matrix", "centred_window", "lift_frame"]
