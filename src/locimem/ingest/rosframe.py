"""One camera frame of ROS 2 messages -> what :meth:`~locimem.memory.ObjectMemory.observe`
takes: a node's callback calls :func:`frame_from_messages` and observes the result.

The messages are read by their attributes, so ``rclpy`` messages, ``rosbags`` ones (the bag
reader, :mod:`locimem.ingest.ros2d`, calls the same function) and stand-ins read alike; no
ROS install is needed to import this module. What is read:

- ``vision_msgs/msg/Detection2DArray`` (4.x, Humble; 3.x's ``center.x`` too): the header
  stamp is the frame's time; each ``Detection2D``'s ``bbox`` is a box in the colour image,
  ``center`` and ``size_x``, ``size_y`` in pixels with pixel ``(row i, column j)`` covering
  ``[j, j + 1) x [i, i + 1)`` (a box of the whole image is centred at ``(width / 2,
  height / 2)``); a rotated box (``theta`` != 0) is taken as the upright box around it. Its
  best hypothesis (highest ``score``; ``class_id`` through an optional label map) is the
  label, ``id`` the track id. A box reaching past the image is clipped to it.
- ``sensor_msgs/msg/CameraInfo`` of the colour image (the boxes' pixels): ``k``, ``width``,
  ``height`` (:meth:`~locimem.perception.Intrinsics.from_camera_info`).
- ``sensor_msgs/msg/Image`` depth, aligned to the colour image (a RealSense's
  ``aligned_depth_to_color``: same optical centre and axes): ``16UC1`` millimetres or
  ``32FC1`` metres, 0 or NaN for no reading. At another resolution than the colour image it
  is taken as the same view resampled (intrinsics scaled by the size ratio).
- Optionally an instance image: ``mono8`` / ``8UC1`` / ``16UC1`` / ``mono16`` at the colour
  image's size, pixel value ``k`` marking ``detections[k - 1]`` (0: no object).
- The camera's pose in the map frame: a ``geometry_msgs/TransformStamped`` (what
  ``tf2_ros.Buffer.lookup_transform("map", camera_info.header.frame_id, stamp)`` returns), a
  ``geometry_msgs/Transform``, a :class:`~locimem.ingest.frames.Transform`, or
  ``(position, quaternion_wxyz)``; of the optical frame (z forward, x right, y down) when the
  camera info's frame is named ``*_optical_frame`` (or ``optical=True``), else of locimem's
  camera body frame (x forward, y left, z up).

The boxes are lifted by :func:`~locimem.perception.lift_frame`, whose camera is the frame's:
absence is judged on the same depth image.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from locimem.errors import InvalidInput
from locimem.ingest.frames import Transform, depth_to_metres
from locimem.ingest.rosmsg import hypotheses
from locimem.model import Camera, Detection
from locimem.perception import Box2D, Intrinsics, lift_frame

__all__ = ["RosFrame", "frame_from_messages", "instance_image", "pose_of", "stamp_of"]

MASK_ENCODINGS = {"mono8": "u1", "8UC1": "u1", "mono16": "u2", "16UC1": "u2"}


@dataclass(frozen=True, slots=True)
class RosFrame:
    """One frame, lifted: ``mem.observe(frame.t, frame.detections, frame.camera)``.

    Attributes:
        t: the detections' header stamp, seconds.
        detections: the lifted boxes, map frame; ``detections[i]`` is the message's
            ``detections[indices[i]]``.
        camera: the frame's :class:`~locimem.model.Camera` (pose, fields of view, the depth
            image in metres), so the memory judges what the camera looked at and missed.
        skipped: ``(index in the message's detections, reason)`` for each box not lifted
            (no hypothesis, outside the image, too few depth readings, background depth...).
        indices: see ``detections``.
    """

    t: float
    detections: list[Detection]
    camera: Camera
    skipped: list[tuple[int, str]] = field(default_factory=list)
    indices: list[int] = field(default_factory=list)

    @property
    def dropped(self) -> dict[str, int]:
        """The skipped boxes counted by the kind of reason (the text before its first
        ``:``), as an ingest summary counts them."""
        out: dict[str, int] = {}
        for _, reason in self.skipped:
            kind = f"not lifted: {reason.split(':', 1)[0]}"
            out[kind] = out.get(kind, 0) + 1
        return out


def frame_from_messages(detections: Any, depth: Any, camera_info: Any, camera_pose: Any, *,
                        masks: Any = None, optical: bool | None = None,
                        label_map: Mapping[str, str] | None = None,
                        range_m: tuple[float, float] = (0.1, 8.0),
                        min_pixels: int = 16) -> RosFrame:
    """Lift one frame of ROS messages (see the module's text for what each is).

    Args:
        detections: a ``vision_msgs/msg/Detection2DArray``.
        depth: its aligned depth ``sensor_msgs/msg/Image`` (``16UC1`` mm, ``32FC1`` m).
        camera_info: the colour image's ``sensor_msgs/msg/CameraInfo``.
        camera_pose: the camera's pose in the map frame at the stamp (a tf
            ``TransformStamped``, a ``Transform``, or ``(position, quaternion_wxyz)``).
        masks: optional instance image (value ``k`` marks ``detections[k - 1]``).
        optical: the pose is of the optical frame; default: the camera info's frame name
            ends in ``_optical_frame``.
        label_map: class id -> label (``class_id`` itself when None).
        range_m: ``(near, far)`` metres of trusted depth; ``far`` is the camera's range.
        min_pixels: depth readings a box needs to be lifted.

    Raises:
        InvalidInput: a malformed message (a stamp, an unknown depth or mask encoding, a
            payload shorter than its size says, a mask of another size than the colour
            image, a class id missing from the label map, a score outside [0, 1]), or a
            depth image in another frame than the camera's.
    """
    t = stamp_of(detections.header, "detections")
    k = Intrinsics.from_camera_info(camera_info)
    info_frame = str(camera_info.header.frame_id).lstrip("/")
    depth_frame = str(depth.header.frame_id).lstrip("/")
    if info_frame and depth_frame and depth_frame != info_frame:
        raise InvalidInput(f"the depth image is in frame {depth_frame!r}, the camera info in "
                           f"{info_frame!r}: give a depth image aligned to the colour image "
                           "(aligned_depth_to_color)")
    metres = depth_to_metres(depth.data, str(depth.encoding), int(depth.width),
                             int(depth.height), int(depth.step), bool(depth.is_bigendian))
    depth_k = None if metres.shape == (k.height, k.width) else k.scaled(metres.shape[1],
                                                                        metres.shape[0])
    instances = None if masks is None else instance_image(masks, k.width, k.height)
    boxes, box_index, skipped = _boxes(detections.detections, k, instances, label_map)
    position, quat = pose_of(camera_pose)
    if optical is None:
        optical = info_frame.endswith("_optical_frame")
    lifted = lift_frame(boxes, metres, k, position, quat,
                        frame="optical" if optical else "body", depth_intrinsics=depth_k,
                        range_m=range_m, min_pixels=min_pixels)
    skipped += [(box_index[i], why) for i, why in lifted.skipped]
    return RosFrame(t, lifted.detections, lifted.camera, sorted(skipped),
                    [box_index[i] for i in lifted.indices])


def stamp_of(header: Any, what: str) -> float:
    """A ``std_msgs/Header``'s stamp in seconds (``sec`` + ``nanosec``; a nanosec outside
    0..999999999 is refused: a broken publisher)."""
    sec, nanosec = int(header.stamp.sec), int(header.stamp.nanosec)
    if not 0 <= nanosec < 1_000_000_000:
        raise InvalidInput(f"{what}: header.stamp.nanosec is {nanosec}, expected 0 to "
                           "999999999")
    return sec + nanosec * 1e-9


def pose_of(pose: Any) -> tuple[tuple[float, float, float], tuple[float, float, float, float]]:
    """``(position, quaternion_wxyz)`` of a ``TransformStamped``, a ``Transform`` (ROS or
    :class:`~locimem.ingest.frames.Transform`) or a ``(position, quaternion_wxyz)`` pair."""
    if isinstance(pose, Transform):
        return pose.translation_m, pose.quat_wxyz
    inner = getattr(pose, "transform", pose)
    if hasattr(inner, "translation") and hasattr(inner, "rotation"):
        a, r = inner.translation, inner.rotation
        return ((float(a.x), float(a.y), float(a.z)),
                (float(r.w), float(r.x), float(r.y), float(r.z)))
    try:
        position, quat = pose
        p = tuple(float(v) for v in position)
        q = tuple(float(v) for v in quat)
    except (TypeError, ValueError):
        raise InvalidInput("camera_pose must be a TransformStamped, a Transform or "
                           f"(position, quaternion_wxyz), got {type(pose).__name__}") from None
    if len(p) != 3 or len(q) != 4:
        raise InvalidInput(f"camera_pose must be (x, y, z) and (w, x, y, z), got {len(p)} and "
                           f"{len(q)} numbers")
    return (p[0], p[1], p[2]), (q[0], q[1], q[2], q[3])


def instance_image(msg: Any, width: int, height: int) -> np.ndarray:
    """An instance ``sensor_msgs/Image`` as a (height, width) integer array; it must be at
    the colour image's size (``width`` x ``height``)."""
    encoding = str(msg.encoding)
    if encoding not in MASK_ENCODINGS:
        raise InvalidInput(f"unknown instance mask encoding {encoding!r} (expected mono8, "
                           "8UC1, mono16 or 16UC1: pixel value k marks detections[k - 1])")
    w, h, step = int(msg.width), int(msg.height), int(msg.step)
    if (w, h) != (width, height):
        raise InvalidInput(f"the instance mask is {w}x{h}, the colour image {width}x{height}: "
                           "masks must be at the boxes' image size")
    dtype = np.dtype(("<" if not msg.is_bigendian else ">") + MASK_ENCODINGS[encoding])
    payload: Any = msg.data
    buf = np.frombuffer(memoryview(payload).cast("B"), dtype=np.uint8)
    row = w * dtype.itemsize
    if step < row or buf.size < step * (h - 1) + row:
        raise InvalidInput(f"instance mask of {w}x{h} {encoding} with step {step} needs "
                           f"{step * h} bytes, got {buf.size}")
    rows = np.lib.stride_tricks.as_strided(buf, shape=(h, row), strides=(step, 1))
    return np.ascontiguousarray(rows).view(dtype).reshape(h, w)


def _boxes(msgs: Any, k: Intrinsics, instances: np.ndarray | None,
           label_map: Mapping[str, str] | None
           ) -> tuple[list[Box2D], list[int], list[tuple[int, str]]]:
    """The array's boxes, the message index of each, and the ones left out, with why."""
    boxes: list[Box2D] = []
    index: list[int] = []
    skipped: list[tuple[int, str]] = []
    for i, d in enumerate(msgs):
        hyps = hypotheses(d.results)
        if not hyps:
            skipped.append((i, "no hypothesis: the detection has no results"))
            continue
        class_id, score = max(hyps, key=lambda h: h[1])  # the first of equal scores
        if label_map is not None and class_id not in label_map:
            raise InvalidInput(f"detections[{i}]: class id {class_id!r} is not in the label "
                               "map")
        label = label_map[class_id] if label_map is not None else class_id
        bounds = _bounds(d.bbox, i)
        if bounds[0] == bounds[2] or bounds[1] == bounds[3]:
            skipped.append((i, "empty box: its size is 0"))
            continue
        x0, y0 = max(bounds[0], 0.0), max(bounds[1], 0.0)
        x1, y1 = min(bounds[2], float(k.width)), min(bounds[3], float(k.height))
        if not (x0 < x1 and y0 < y1):
            skipped.append((i, f"outside the image: the box ({bounds[0]:g}, {bounds[1]:g}, "
                            f"{bounds[2]:g}, {bounds[3]:g}) misses the {k.width}x{k.height} "
                            "image"))
            continue
        mask = None if instances is None else instances == i + 1
        track = str(getattr(d, "id", None) or getattr(d, "tracking_id", "") or "") or None
        try:
            boxes.append(Box2D(x0, y0, x1, y1, label, score, mask=mask, track_id=track))
        except InvalidInput as exc:
            raise InvalidInput(f"detections[{i}]: {exc}") from None
        index.append(i)
    return boxes, index, skipped


def _bounds(bbox: Any, i: int) -> tuple[float, float, float, float]:
    """A ``BoundingBox2D``'s upright bounds ``(x0, y0, x1, y1)`` in pixel-edge coordinates."""
    c = bbox.center
    at = getattr(c, "position", c)  # vision_msgs 4: center.position.x; 3: center.x
    cx, cy, theta = float(at.x), float(at.y), float(getattr(c, "theta", 0.0))
    sx, sy = float(bbox.size_x), float(bbox.size_y)
    if not all(math.isfinite(v) for v in (cx, cy, theta, sx, sy)) or sx < 0 or sy < 0:
        raise InvalidInput(f"detections[{i}].bbox must be finite with sizes >= 0, got centre "
                           f"({cx}, {cy}), size ({sx}, {sy}), theta {theta}")
    cos, sin = abs(math.cos(theta)), abs(math.sin(theta))
    half_w, half_h = (sx * cos + sy * sin) / 2, (sx * sin + sy * cos) / 2
    return cx - half_w, cy - half_h, cx + half_w, cy + half_h
