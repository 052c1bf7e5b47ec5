"""Scans from a ROS 2 recording (rosbag2: a directory, or a ``.db3`` / ``.mcap`` file).

Needs the ``ros`` extra (``rosbags``: reads rosbag2 without a ROS install). What is read:

- **Detections**: ``vision_msgs/msg/Detection3DArray`` on ``detections_topic``. The array's
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

import bisect
import json
import math
import os
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from locimem.errors import InvalidInput, LocimemError
from locimem.ingest.bagcheck import (
    check_definition,
    check_metadata,
    check_sqlite_files,
    read_messages,
    seconds_text,
)
from locimem.ingest.feed import IngestError, MapJump, PlannedScan, Scan, SkipScan
from locimem.ingest.frames import (
    OPTICAL_TO_BODY,
    CameraWindow,
    TfBuffer,
    Transform,
    TransformUnavailable,
    camera_window,
    depth_to_metres,
)
from locimem.model import Camera, Detection
from locimem.tracker.decide import OPTICAL_HINT

__all__ = [
    "BagOptions",
    "RosUnavailable",
    "cli_warning",
    "load_label_map",
    "open_bag",
    "ros_typestore",
    "vision_msgs_types",
]

MSG_DIR = Path(__file__).resolve().parent / "msg"
DETECTIONS_TYPE = "vision_msgs/msg/Detection3DArray"
CAMERA_INFO_TYPE = "sensor_msgs/msg/CameraInfo"
IMAGE_TYPE = "sensor_msgs/msg/Image"
TF_TYPE = "tf2_msgs/msg/TFMessage"


class RosUnavailable(LocimemError):
    """The ``ros`` extra (``rosbags``) is not installed."""


def _rosbags() -> Any:
    try:
        import rosbags.highlevel
        import rosbags.typesys
    except ImportError:
        raise RosUnavailable('reading ROS 2 recordings needs rosbags: '
                             'pip install "locimem[ros]"') from None
    return rosbags


def vision_msgs_types() -> dict[str, Any]:
    """The ``vision_msgs`` (ROS 2, 4.x) message types locimem reads, parsed from the ``.msg``
    files shipped in the package, ready for ``Typestore.register``."""
    typesys = _rosbags().typesys
    types: dict[str, Any] = {}
    for path in sorted(MSG_DIR.glob("*/msg/*.msg")):
        name = f"{path.parent.parent.name}/msg/{path.stem}"
        types.update(typesys.get_types_from_msg(path.read_text(encoding="utf-8"), name))
    return types


def ros_typestore() -> Any:
    """A rosbags typestore with ROS 2 Humble's standard messages and the vision_msgs types
    (for bags that carry no definitions, and for writing test bags)."""
    typesys = _rosbags().typesys
    store = typesys.get_typestore(typesys.Stores.ROS2_HUMBLE)
    store.register(vision_msgs_types())
    return store


def load_label_map(path: str | Path) -> dict[str, str]:
    """A map from numeric class ids to labels: a ``.json`` object (``{"0": "person", ...}``)
    or a text file with one label per line, line *n* (from 0) naming class id ``n``."""
    from locimem.files import MIB, read_regular

    path = Path(path)
    try:
        text = read_regular(path, "the label map", 64 * MIB,
                            "expected a .json or text file of labels").decode("utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise InvalidInput(f"cannot read label map {path}: {exc}") from None
    if path.suffix.lower() == ".json":
        try:
            doc = json.loads(text)
        except json.JSONDecodeError as exc:
            raise InvalidInput(f"label map {path} is not valid JSON: {exc.msg} "
                               f"(line {exc.lineno})") from None
        except RecursionError:  # json recurses once a nesting level
            raise InvalidInput(f"label map {path} nests too deeply: expected a flat JSON "
                               'object of class id -> label, like {"41": "cup"}') from None
        if not isinstance(doc, dict) or not all(isinstance(v, str) for v in doc.values()):
            raise InvalidInput(f"label map {path} must be a JSON object of class id -> label, "
                               'like {"41": "cup"}')
        return {str(k): v for k, v in doc.items()}
    return {str(i): line.strip() for i, line in enumerate(text.splitlines()) if line.strip()}


@dataclass(frozen=True)
class BagOptions:
    """How to read a recording. Topics: ``"auto"`` picks the only topic of the right type
    (for depth: the only Image topic with ``depth`` in its name), ``None`` reads none."""

    detections_topic: str = "/detections"
    map_frame: str = "map"
    camera_info_topic: str | None = "auto"
    depth_topic: str | None = "auto"
    camera_frame: str | None = None  # default: the camera info's header.frame_id
    optical: bool | None = None  # None: from the frame name (``*_optical_frame``)
    range_m: float = 8.0
    depth_tolerance_s: float = 0.02
    label_map: dict[str, str] | None = None
    tf_topic: str = "/tf"
    tf_static_topic: str = "/tf_static"
    jump_m: float | None = 0.05  # None: no map jumps (tf interpolated across every step)
    jump_deg: float = 1.0


def _stamp(header: Any, where: str, field: str = "header") -> float:
    """A header's stamp in seconds; a nanosec outside 0..999999999 (a broken recorder: read
    as is it would shift the time) is an :class:`IngestError` at ``where``."""
    sec, nanosec = int(header.stamp.sec), int(header.stamp.nanosec)
    if not 0 <= nanosec < 1_000_000_000:
        raise IngestError(where, f"{field}.stamp.nanosec is {nanosec}, expected 0 to "
                          "999999999 (whole seconds belong in stamp.sec): a malformed stamp; "
                          "fix the recorder or the node that published it")
    return sec + nanosec * 1e-9


def _message_where(path: Path, topic: str, index: int, recorded_ns: int) -> str:
    """A message as errors name it: the file, the topic, its index on the topic (from 0) and
    the time it was recorded (the bag's own clock, not the header stamp)."""
    return f"{path}: {topic} message {index} (recorded at {seconds_text(recorded_ns)} s)"


def _stamp_text(header: Any) -> str:
    """The stamp as ROS prints it, exact: ``sec.nanosec`` seconds."""
    return f"{int(header.stamp.sec)}.{int(header.stamp.nanosec):09d}"


def _where(topic: str, header: Any) -> str:
    return f"{topic} stamp {_stamp_text(header)} s"


@dataclass(frozen=True, slots=True)
class _RawDetection:
    frame: str
    hypotheses: tuple[tuple[str, float], ...]
    center: tuple[float, float, float]
    orientation: tuple[float, float, float, float]  # w, x, y, z
    size: tuple[float, float, float]
    track_id: str


@dataclass(frozen=True, slots=True)
class _RawScan:
    t: float
    order: int
    where: str
    detections: tuple[_RawDetection, ...]


@dataclass(frozen=True, slots=True)
class _CameraInfo:
    t: float
    frame: str
    window: CameraWindow
    width: int
    height: int


def _hypotheses(results: Any) -> tuple[tuple[str, float], ...]:
    out = []
    for r in results:
        hyp = getattr(r, "hypothesis", None)
        if hyp is not None:  # vision_msgs >= 4 (Humble)
            out.append((str(hyp.class_id), float(hyp.score)))
        else:  # vision_msgs 3 (Foxy): ObjectHypothesisWithPose{id, score, pose}
            out.append((str(r.id), float(r.score)))
    return tuple(out)


def _raw_scan(msg: Any, order: int, topic: str, where: str) -> _RawScan:
    t = _stamp(msg.header, where)
    array_frame = str(msg.header.frame_id)
    dets = []
    for d in msg.detections:
        c = d.bbox.center
        q = c.orientation
        dets.append(_RawDetection(
            frame=str(d.header.frame_id) or array_frame,
            hypotheses=_hypotheses(d.results),
            center=(float(c.position.x), float(c.position.y), float(c.position.z)),
            orientation=(float(q.w), float(q.x), float(q.y), float(q.z)),
            size=(float(d.bbox.size.x), float(d.bbox.size.y), float(d.bbox.size.z)),
            # vision_msgs >= 4: ``id``; 3 (Foxy): ``tracking_id``
            track_id=str(getattr(d, "id", None) or getattr(d, "tracking_id", "") or ""),
        ))
    return _RawScan(t, order, _where(topic, msg.header), tuple(dets))


def _pick_topic(topics: dict[str, Any], wanted: str | None, msgtype: str, what: str,
                option: str, name_hint: str | None = None) -> str | None:
    if wanted is None:
        return None
    if wanted != "auto":
        info = topics.get(wanted)
        if info is None:
            raise IngestError("bag", f"no topic {wanted!r} ({option}); it has "
                              f"{sorted(topics)}")
        if info.msgtype != msgtype:
            raise IngestError("bag", f"topic {wanted!r} is {info.msgtype}, not {msgtype}")
        return wanted
    found = sorted(t for t, info in topics.items()  # auto: topics that hold messages
                   if info.msgtype == msgtype and info.msgcount > 0
                   and (name_hint is None or name_hint in t))
    if len(found) > 1:
        raise IngestError("bag", f"several {what} topics {found}: choose one with {option}")
    return found[0] if found else None


class _Reader:
    """One open recording: pass 1 (tf, camera info, detections) done on construction."""

    def __init__(self, reader: Any, path: Path, options: BagOptions) -> None:
        self.reader = reader
        self.path = path
        self.options = options
        topics = reader.topics
        det_topic = options.detections_topic
        if det_topic not in topics or topics[det_topic].msgtype != DETECTIONS_TYPE:
            have = sorted(t for t, i in topics.items() if i.msgtype == DETECTIONS_TYPE)
            listed = ", ".join(f"{t} ({i.msgtype})" for t, i in sorted(topics.items()))
            raise IngestError("bag", f"no {DETECTIONS_TYPE} topic {det_topic!r} "
                              f"(--detections); Detection3DArray topics in the bag: {have}; "
                              f"its topics: {listed or 'none'}")
        self.info_topic = _pick_topic(topics, options.camera_info_topic, CAMERA_INFO_TYPE,
                                      "CameraInfo", "--camera-info")
        self.depth_topic = _pick_topic(topics, options.depth_topic, IMAGE_TYPE,
                                       "depth Image", "--depth",
                                       name_hint="depth" if options.depth_topic == "auto"
                                       else None)
        if self.depth_topic is not None and self.info_topic is None:
            raise IngestError("bag", f"depth topic {self.depth_topic!r} needs a camera info "
                              "topic (--camera-info) for its intrinsics")
        self.tf = TfBuffer()
        self.infos: list[_CameraInfo] = []
        self.scans: list[_RawScan] = []
        wanted = {det_topic, options.tf_topic, options.tf_static_topic}
        if self.info_topic:
            wanted.add(self.info_topic)
        read = wanted if self.depth_topic is None else wanted | {self.depth_topic}
        check_metadata(reader, read, path)
        conns = [c for c in reader.connections if c.topic in wanted
                 and (c.topic in (det_topic, self.info_topic) or c.msgtype == TF_TYPE)]
        depth_conns = [c for c in reader.connections if c.topic == self.depth_topic]
        self._check_definitions(conns + depth_conns)
        seen: dict[str, int] = {}
        for order, (conn, ns, raw) in enumerate(read_messages(reader, conns, path)):
            index = seen[conn.topic] = seen.get(conn.topic, -1) + 1
            where = _message_where(path, conn.topic, index, ns)
            msg = self._decode(raw, conn.msgtype, where)
            if conn.topic == det_topic:
                self.scans.append(_raw_scan(msg, order, det_topic, where))
            elif conn.topic == self.info_topic:
                self._add_info(msg, conn.topic, where)
            else:
                self._add_tf(msg, conn.topic, where,
                             static=conn.topic == options.tf_static_topic)
        try:
            self.tf.check()
        except InvalidInput as exc:
            raise IngestError(f"{path}: {options.tf_topic}, {options.tf_static_topic}",
                              str(exc)) from None
        if self.info_topic is not None and not self.infos:
            raise IngestError("bag", f"camera info topic {self.info_topic!r} holds no "
                              "messages; pass --camera-info none to ingest without a camera")
        self.scans.sort(key=lambda s: (s.t, s.order))
        self.jumps = self._map_jumps()
        self.infos.sort(key=lambda c: c.t)
        self.info_times = [c.t for c in self.infos]
        self.has_static_tf = any(c.topic == options.tf_static_topic and c.msgcount > 0
                                 for c in reader.connections)
        self.inputs = {
            "path": str(path), "detections": det_topic, "map_frame": options.map_frame,
            "camera_info": self.info_topic, "depth": self.depth_topic,
            "camera_frame": self._camera_frame(self.infos[0]) if self.infos else None,
            "optical": self._optical(self._camera_frame(self.infos[0])) if self.infos else None,
            "tf_frames": sorted(self.tf.frames),
            "map_jumps": [{"t": j.t, "since": j.since, "translation": list(j.correction[0]),
                           "quaternion": list(j.correction[1])} for j in self.jumps],
            "topics": {t: f"{i.msgtype} ({i.msgcount})" for t, i in sorted(topics.items())},
        }

    def _map_jumps(self) -> list[MapJump]:
        """The map frame's jumps (see the module's text), each with the stretch it corrects."""
        o = self.options
        if o.jump_m is None:
            return []
        start = self.scans[0].t if self.scans else -math.inf
        out: list[MapJump] = []
        since: dict[str, float] = {}
        for jump in self.tf.split_jumps(o.map_frame, min_m=o.jump_m, min_deg=o.jump_deg):
            fix = jump.correction
            t_from = min(since.get(jump.child, start), jump.t_s)
            since[jump.child] = jump.t_s
            if self.scans and jump.t_s > start:  # (a jump before the first scan corrects none)
                out.append(MapJump(jump.t_s, t_from, (fix.translation_m, fix.quat_wxyz)))
        return out

    def _check_definitions(self, conns: list[Any]) -> None:
        """Each topic's message definition has the fields this reader reads (once a topic, not
        once a message): a bag may give a standard type's name to any definition."""
        fielddefs = self.reader.typestore.fielddefs
        for topic, msgtype in sorted({(c.topic, c.msgtype) for c in conns}):
            why = check_definition(fielddefs, msgtype)
            if why is not None:
                raise IngestError(f"{self.path}: topic {topic}",
                                  f"the bag's definition of {msgtype} is not the one locimem "
                                  f"reads: {why}")

    def _decode(self, raw: bytes, msgtype: str, where: str) -> Any:
        try:
            return self.reader.deserialize(raw, msgtype)
        except Exception as exc:  # rosbags raises its own errors for corrupt payloads
            raise IngestError(where, f"cannot decode {msgtype}: {exc}") from None

    def _add_tf(self, msg: Any, topic: str, where: str, static: bool) -> None:
        for i, tr in enumerate(msg.transforms):
            t = _stamp(tr.header, where, f"transforms[{i}].header")
            a, r = tr.transform.translation, tr.transform.rotation
            try:
                self.tf.add(str(tr.header.frame_id), str(tr.child_frame_id), t,
                            Transform((a.x, a.y, a.z), (r.w, r.x, r.y, r.z)), static=static)
            except InvalidInput as exc:
                raise IngestError(_where(topic, tr.header), str(exc)) from None

    def _add_info(self, msg: Any, topic: str, where: str) -> None:
        t = _stamp(msg.header, where)
        try:
            window = camera_window(list(msg.k), int(msg.width), int(msg.height))
        except InvalidInput as exc:
            raise IngestError(_where(topic, msg.header), str(exc)) from None
        self.infos.append(_CameraInfo(t, str(msg.header.frame_id), window, int(msg.width),
                                      int(msg.height)))

    def _camera_frame(self, info: _CameraInfo) -> str:
        return (self.options.camera_frame or info.frame).lstrip("/")

    def _optical(self, frame: str) -> bool:
        if self.options.optical is None:
            return frame.endswith("_optical_frame")
        return self.options.optical

    def _info_at(self, t: float) -> _CameraInfo:
        i = bisect.bisect_right(self.info_times, t)
        return self.infos[i - 1] if i > 0 else self.infos[0]

    # -- planning -----------------------------------------------------------------------------
    def plan(self) -> Iterator[PlannedScan]:
        if self.depth_topic is None:
            for raw in self.scans:
                yield self._planned(raw, None, False)
            return
        yield from self._plan_with_depth()

    def _plan_with_depth(self) -> Iterator[PlannedScan]:
        """Stream the depth topic once, giving each scan the image nearest its stamp within
        the tolerance; a scan is released once no later image can be nearer."""
        tol = self.options.depth_tolerance_s
        ts = [s.t for s in self.scans]
        best: dict[int, tuple[float, Any]] = {}
        i, n = 0, len(ts)
        conns = [c for c in self.reader.connections if c.topic == self.depth_topic]
        for k, (conn, ns, raw) in enumerate(read_messages(self.reader, conns, self.path)):
            where = _message_where(self.path, conn.topic, k, ns)
            msg = self._decode(raw, conn.msgtype, where)
            s = _stamp(msg.header, where)
            for j in range(max(i, bisect.bisect_left(ts, s - tol)),
                           bisect.bisect_right(ts, s + tol)):
                dt = abs(ts[j] - s)
                if j not in best or dt < best[j][0]:
                    best[j] = (dt, msg)
            while i < n and ts[i] + tol < s:
                yield self._planned(self.scans[i], best.pop(i, (0.0, None))[1], True)
                i += 1
        while i < n:
            yield self._planned(self.scans[i], best.pop(i, (0.0, None))[1], True)
            i += 1

    def _planned(self, raw: _RawScan, depth_msg: Any, want_depth: bool) -> PlannedScan:
        where = raw.where
        return PlannedScan(raw.t, where, lambda: self._build(raw, depth_msg, want_depth, where))

    # -- building one scan --------------------------------------------------------------------
    def _lookup(self, frame: str, t: float, where: str, role: str = "detections") -> Transform:
        if not frame:
            raise IngestError(where, "a detection has no frame_id (neither its own header "
                              "nor the array's)")
        try:
            return self.tf.lookup(self.options.map_frame, frame, t)
        except TransformUnavailable as exc:
            raise SkipScan(exc.reason, self._tf_hint(frame, role)) from None

    def _tf_hint(self, frame: str, role: str) -> str:
        """What to do about a transform the bag cannot give, in command-line terms."""
        tf, target = self.tf, self.options.map_frame.lstrip("/")
        frames = tf.frames
        roots = tf.roots()
        listed = ", ".join(sorted(frames)) or "none"
        depth = " --depth none" if self.depth_topic is not None else ""
        camera = (f" — or pass --camera-info none{depth} to ingest without a camera"
                  if role == "camera" else "")
        static = "" if self.has_static_tf else (
            f"; the bag has no {self.options.tf_static_topic} messages (record it too: "
            "robot_state_publisher's fixed frames live there)")
        what = "the camera's frame" if role == "camera" else "the detections' frame"
        known = frame.lstrip("/") in frames
        if target not in frames and (known or not roots):
            fix = (f"pass --map-frame {_preferred_root(roots)}" if roots
                   else "the bag has no tf data")
            return f"the bag's tf has no frame {target!r} (its frames: {listed}): {fix}"
        if not known:
            flag = " (--camera-frame names another)" if role == "camera" else ""
            also = "" if target in frames else f", nor the map frame {target!r}"
            return (f"{what} {frame!r} is not in the bag's tf{also} (its frames: {listed})"
                    f"{flag}{static}{camera}")
        if tf.root_of(frame) != tf.root_of(target):
            return (f"no transform joins {tf.root_of(frame)!r} (above {frame!r}) to "
                    f"{tf.root_of(target)!r} (above {target!r}){static}{camera}")
        return ("the transform's samples do not cover the scan's stamp (tf started later or "
                f"stopped earlier than the detections){camera}")

    def _build(self, raw: _RawScan, depth_msg: Any, want_depth: bool, where: str) -> Scan:
        t = raw.t
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

    def _depth(self, msg: Any, info: _CameraInfo, frame: str, where: str) -> np.ndarray:
        dwhere = f"{where} (depth image stamp {_stamp_text(msg.header)} s)"
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


def cli_warning(warning: str) -> str:
    """A scan's warning in the command line's terms: the camera an ingest builds is fixed by
    its flags, not by ``Camera(frame=...)``.

    >>> cli_warning("3 of 4 detections lie outside the camera's field of view: check the "
    ...             "camera pose and its frame (" + OPTICAL_HINT + ")")[-70:]
    'frame (--optical yes|no: is it an optical frame; --camera-frame FRAME)'
    """
    return warning.replace(OPTICAL_HINT, "--optical yes|no: is it an optical frame; "
                                         "--camera-frame FRAME")


def _preferred_root(roots: list[str]) -> str:
    """The tf root a memory most likely lives in: ``map``, ``world``, ``odom`` first."""
    for name in ("map", "world", "odom"):
        if name in roots:
            return name
    return roots[0]


def _check_options(options: BagOptions) -> None:
    if not options.map_frame.strip("/"):
        raise InvalidInput("map frame must be a non-empty frame name")
    if not (math.isfinite(options.range_m) and options.range_m > 0):
        raise InvalidInput(f"camera range must be > 0 metres, got {options.range_m}")
    if not (math.isfinite(options.depth_tolerance_s) and options.depth_tolerance_s >= 0):
        raise InvalidInput(f"depth tolerance must be >= 0 s, got {options.depth_tolerance_s}")
    if options.jump_m is not None and not (math.isfinite(options.jump_m) and options.jump_m > 0):
        raise InvalidInput(f"a map jump must be > 0 metres, got {options.jump_m}")
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
    rb = _rosbags()
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
        bag = _Reader(reader, path, options)
        yield bag.plan(), len(bag.scans), bag.inputs
    finally:
        reader.close()
