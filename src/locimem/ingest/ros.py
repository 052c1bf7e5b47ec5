"""Scans from a ROS 2 recording (rosbag2: a directory, or a ``.db3`` / ``.mcap`` file).

Needs the ``ros`` extra (``rosbags``: reads rosbag2 without a ROS install). What is read:

- **Detections**: ``vision_msgs/msg/Detection3DArray`` on ``detections_topic`` (``"auto"``:
  the bag's only Detection3DArray or Detection2DArray topic; a ``Detection2DArray`` topic is
  read by :mod:`locimem.ingest.ros2d`, which lifts its boxes with the depth image). The array's
  header stamp is the scan time (seconds). Each ``Detection3D`` gives the box centre pose and
  size (``bbox``), its best hypothesis (highest ``score``; ``class_id`` through an optional
  label map) and ``id`` as the perception track id. A detection's own ``header.frame_id``
  (else the array's) names its frame; it is transformed into the map frame at the stamp.
  The vision_msgs types ship with locimem (``ingest/msg``), for bags that carry none.
- **Frames**: ``tf2_msgs/msg/TFMessage`` on ``/tf`` and ``/tf_static``, chained through the
  tree and interpolated at the stamp (see :class:`~locimem.ingest.frames.TfBuffer`). A scan
  whose detections or camera cannot be put in the map frame is skipped and counted by reason.
- **Camera** (optional): ``sensor_msgs/msg/CameraInfo`` gives the frame (``header.frame_id``,
  unless overridden) and, from ``K``, ``width`` and ``height``, the fields of view (see
  :func:`~locimem.ingest.frames.camera_window`); the camera pose is the tf of that frame at
  the stamp. A frame whose name ends in ``_optical_frame`` (or ``optical=True``) is z
  forward, x right, y down, and is turned into locimem's body frame (x forward, y left, z
  up). The latest camera info at or before the stamp is used (else the first one after).
- **Depth** (optional): ``sensor_msgs/msg/Image`` (``16UC1`` millimetres or ``32FC1`` metres,
  registered to the camera: same frame and size as its camera info), the image whose stamp is
  nearest the scan's within ``depth_tolerance_s``. ROS depth is z-depth in the optical frame,
  which is locimem's forward distance, so only units change. A scan with no depth image in
  tolerance is skipped (counted): a camera without depth would count everything in view as
  absent.
- **Map jumps**: a step of a time-varying tf edge right below the map frame (``map -> odom``)
  between two consecutive samples of ``jump_m`` metres or ``jump_deg`` degrees or more is a
  loop closure or a relocalisation: scans before it are placed with the value before it (not
  interpolated across it), and everything seen since the previous jump (or the recording's
  start) is corrected by the step (``after ∘ before⁻¹``: SLAM's own correction of its map
  frame), applied as one :meth:`~locimem.memory.ObjectMemory.correct_poses` stretch. It
  assumes the jump corrects that whole stretch rigidly (exact for a relocalisation; for a
  loop closure whose error grew along the way, the stretch's early sightings are moved by
  the error of its end), and that the scope holds one robot (the correction moves whatever
  was seen in the stretch).
"""

from __future__ import annotations

import math
import os
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import numpy as np

from locimem.errors import InvalidInput
from locimem.ingest.bagcheck import check_sqlite_files
from locimem.ingest.feed import IngestError, PlannedScan, Scan, SkipScan
from locimem.ingest.frames import OPTICAL_TO_BODY, Transform, depth_to_metres
from locimem.ingest.ros2d import Reader2D
from locimem.ingest.rosbag import BagOptions, BagReader, CameraInfoSample
from locimem.ingest.rosmsg import (
    DETECTIONS_2D_TYPE,
    DETECTIONS_3D_TYPE,
    DETECTIONS_TYPES,
    RawScan3D,
    RosUnavailable,
    cli_warning,
    load_label_map,
    raw_scan_3d,
    ros_typestore,
    rosbags_module,
    stamp_text,
    vision_msgs_types,
)
from locimem.model import Camera, Detection

__all__ = [
    "BagOptions",
    "Reader3D",
    "RosUnavailable",
    "cli_warning",
    "load_label_map",
    "open_bag",
    "ros_typestore",
    "vision_msgs_types",
]


class Reader3D(BagReader):
    """``vision_msgs/msg/Detection3DArray`` detections, in any tf frame."""

    detections_type = DETECTIONS_3D_TYPE

    def _raw_scan(self, msg: Any, order: int, where: str) -> RawScan3D:
        return raw_scan_3d(msg, order, self.det_topic, where)

    def _build(self, raw: RawScan3D, paired: dict[str, Any], where: str) -> Scan:
        t = raw.t
        depth_msg = paired.get(self.depth_topic) if self.depth_topic else None
        want_depth = self.depth_topic is not None
        to_map: dict[str, Transform] = {}
        dets: list[Detection] = []
        dropped: dict[str, int] = {}
        label_map = self.options.label_map
        for i, d in enumerate(raw.detections):
            if not d.hypotheses:
                dropped["no hypothesis"] = dropped.get("no hypothesis", 0) + 1
                continue
            class_id, score = max(d.hypotheses, key=lambda h: h[1])  # first of equal scores
            if label_map is not None:
                if class_id not in label_map:
                    raise IngestError(where, f"detections[{i}]: class id {class_id!r} is not in "
                                      "the label map")
                label = label_map[class_id]
            else:
                label = class_id
            if d.frame not in to_map:
                to_map[d.frame] = self._lookup(d.frame, t, where)
            tr = to_map[d.frame]
            q = d.orientation if any(d.orientation) else (1.0, 0.0, 0.0, 0.0)
            try:
                orientation = tr.rotate(q)
                dets.append(Detection(label, score, tr.apply(d.center), d.size,
                                      track_id=d.track_id or None, orientation=orientation))
            except InvalidInput as exc:
                raise IngestError(where, f"detections[{i}]: {exc}") from None
        camera = self._camera(t, depth_msg, want_depth, where) if self.infos else None
        return Scan(t, dets, camera, dropped)

    def _camera(self, t: float, depth_msg: Any, want_depth: bool, where: str) -> Camera:
        info = self._info_at(t)
        frame = self._camera_frame(info)
        pose = self._lookup(frame, t, where, role="camera")
        if self._optical(frame):
            pose = pose.compose(OPTICAL_TO_BODY)
        win = info.window
        depth = None
        if want_depth:
            if depth_msg is None:
                raise SkipScan(f"no depth image within {self.options.depth_tolerance_s} s "
                               f"on {self.depth_topic}",
                               "pass a larger --depth-tolerance S, or --depth none to ingest "
                               "without depth (then a camera look counts only what is in view)")
            depth = self._depth(depth_msg, info, frame, where)[win.row0:win.row1,
                                                              win.col0:win.col1]
        try:
            return Camera(pose.translation_m, pose.quat_wxyz, win.fov_deg, self.options.range_m,
                          vfov_deg=win.vfov_deg, depth=depth)
        except InvalidInput as exc:
            raise IngestError(where, f"camera: {exc}") from None

    def _depth(self, msg: Any, info: CameraInfoSample, frame: str, where: str) -> np.ndarray:
        dwhere = f"{where} (depth image stamp {stamp_text(msg.header)} s)"
        dframe = str(msg.header.frame_id).lstrip("/")
        if dframe and dframe != frame:
            raise IngestError(dwhere, f"depth image is in frame {dframe!r}, the camera in "
                              f"{frame!r}: use a depth image registered to the camera")
        if (int(msg.width), int(msg.height)) != (info.width, info.height):
            raise IngestError(dwhere, f"depth image is {msg.width}x{msg.height}, its camera "
                              f"info {info.width}x{info.height}: pass the depth camera's info "
                              "topic (--camera-info)")
        try:
            return depth_to_metres(msg.data, str(msg.encoding), int(msg.width), int(msg.height),
                                   int(msg.step), bool(msg.is_bigendian))
        except InvalidInput as exc:
            raise IngestError(dwhere, str(exc)) from None


def _check_options(options: BagOptions) -> None:
    if not options.map_frame.strip("/"):
        raise InvalidInput("map frame must be a non-empty frame name")
    if not (math.isfinite(options.range_m) and options.range_m > 0):
        raise InvalidInput(f"camera range must be > 0 metres, got {options.range_m}")
    if not (math.isfinite(options.depth_tolerance_s) and options.depth_tolerance_s >= 0):
        raise InvalidInput(f"depth tolerance must be >= 0 s, got {options.depth_tolerance_s}")
    if options.jump_m is not None and not (math.isfinite(options.jump_m) and options.jump_m > 0):
        raise InvalidInput(f"a map jump must be > 0 metres, got {options.jump_m}")
    if isinstance(options.min_pixels, bool) or not isinstance(options.min_pixels, int) \
            or options.min_pixels < 1:
        raise InvalidInput(f"min_pixels must be an integer >= 1, got {options.min_pixels!r}")
    if not (math.isfinite(options.jump_deg) and 0 < options.jump_deg <= 180):
        raise InvalidInput(f"a map jump's turn must be > 0 and <= 180 degrees, got "
                           f"{options.jump_deg}")


@contextmanager
def open_bag(path: str | os.PathLike[str], options: BagOptions | None = None
             ) -> Iterator[tuple[Iterator[PlannedScan], int, dict[str, Any]]]:
    """Open a rosbag2 recording (directory, ``.db3`` or ``.mcap``) and yield
    ``(planned scans in stamp order, number of scans, inputs used)``; the recording stays open
    while the scans are consumed."""
    options = options or BagOptions()
    _check_options(options)
    rb = rosbags_module()
    path = Path(path)
    if not path.exists():
        raise InvalidInput(f"no such recording: {path}")
    if path.suffix == ".bag":
        raise InvalidInput(f"{path} is a ROS 1 bag; locimem reads ROS 2 recordings (rosbag2)")
    check_sqlite_files(path)
    fallback = ros_typestore()
    try:
        reader = rb.highlevel.AnyReader([path], default_typestore=fallback)
        reader.open()
    except Exception as exc:  # rosbags' reader errors: not a bag, unknown storage, corrupt
        raise InvalidInput(f"cannot read {path} as a ROS 2 recording: {exc}") from None
    try:
        missing = {c.msgtype for c in reader.connections} - set(reader.typestore.fielddefs)
        if missing:  # connections without embedded definitions (older recorders)
            reader.typestore.register({k: v for k, v in fallback.fielddefs.items()
                                       if k not in reader.typestore.fielddefs})
        bag = _reader_for(reader, path, options)
        yield bag.plan(), len(bag.scans), bag.inputs
    finally:
        reader.close()


def _reader_for(reader: Any, path: Path, options: BagOptions) -> BagReader:
    """The reader of the detections topic's kind (3D boxes, or 2D boxes to lift)."""
    topic, msgtype = _detections_topic(reader.topics, options.detections_topic)
    if msgtype == DETECTIONS_2D_TYPE:
        return Reader2D(reader, path, options, topic)
    return Reader3D(reader, path, options, topic)


def _detections_topic(topics: dict[str, Any], wanted: str) -> tuple[str, str]:
    """``(topic, message type)`` of the detections: ``wanted``, or with ``"auto"`` the only
    Detection3DArray or Detection2DArray topic (the only one holding messages, if several)."""
    listed = ", ".join(f"{t} ({i.msgtype})" for t, i in sorted(topics.items())) or "none"
    of_type = sorted(t for t, i in topics.items() if i.msgtype in DETECTIONS_TYPES)
    if wanted == "auto":
        found = of_type if len(of_type) <= 1 else [t for t in of_type
                                                   if topics[t].msgcount > 0]
        if len(found) > 1:
            raise IngestError("bag", f"several detection topics {found}: choose one with "
                              "--detections TOPIC")
        if not found:
            raise IngestError("bag", "no vision_msgs/msg/Detection3DArray or Detection2DArray "
                              f"topic (--detections); its topics: {listed}")
        return found[0], topics[found[0]].msgtype
    info = topics.get(wanted)
    if info is None or info.msgtype not in DETECTIONS_TYPES:
        have = {kind: [t for t in of_type if topics[t].msgtype == f"vision_msgs/msg/{kind}"]
                for kind in ("Detection3DArray", "Detection2DArray")}
        raise IngestError("bag", f"no {DETECTIONS_3D_TYPE} or Detection2DArray topic "
                          f"{wanted!r} (--detections); Detection3DArray topics in the bag: "
                          f"{have['Detection3DArray']}; Detection2DArray topics: "
                          f"{have['Detection2DArray']}; its topics: {listed}")
    return wanted, info.msgtype
