"""The reader of a rosbag2 recording that the kinds of detections share: the options, the
camera infos, the tf tree, topic checks, and the two passes (see :mod:`locimem.ingest.ros`
for what is read; :class:`~locimem.ingest.ros.Reader3D` and
:class:`~locimem.ingest.ros2d.Reader2D` are its kinds)."""

from __future__ import annotations

import bisect
import math
from abc import ABC, abstractmethod
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from locimem.errors import InvalidInput
from locimem.ingest.bagcheck import check_definition, check_metadata, read_messages
from locimem.ingest.feed import IngestError, MapJump, PlannedScan, Scan, SkipScan
from locimem.ingest.frames import (
    CameraWindow,
    TfBuffer,
    Transform,
    TransformUnavailable,
    camera_window,
)
from locimem.ingest.rosmsg import (
    CAMERA_INFO_TYPE,
    DETECTIONS_3D_TYPE,
    IMAGE_TYPE,
    TF_TYPE,
    message_where,
    pick_topic,
    preferred_root,
    stamp_s,
    stamp_where,
)
from locimem.perception import camera_matrix

__all__ = ["STREAM_WAIT_S", "BagOptions", "BagReader", "CameraInfoSample"]

STREAM_WAIT_S = 1.0
"""Pass 2 streams several topics (depth, masks) in record order: a scan waits for a
message on each until every stream has passed its window, or one is this far past it."""

@dataclass(frozen=True)
class BagOptions:
    """How to read a recording. Topics: ``"auto"`` picks the only topic of the right type
    (for detections: a Detection3DArray or a Detection2DArray; for depth: the only Image
    topic with ``depth`` in its name; for masks: the only Image topic with ``mask`` in its
    name), ``None`` reads none. ``masks_topic`` and ``min_pixels`` concern 2D detections
    only (see :mod:`locimem.ingest.ros2d`)."""

    detections_topic: str = "auto"
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
    masks_topic: str | None = "auto"
    min_pixels: int = 16


@dataclass(frozen=True, slots=True)
class CameraInfoSample:
    """One ``CameraInfo`` message, as the readers keep it."""

    t: float
    frame: str
    window: CameraWindow
    width: int
    height: int
    k: tuple[float, ...]


class BagReader(ABC):
    """One open recording: pass 1 (tf, camera info, detections) done on construction, pass 2
    (the image topics, streamed once) by :meth:`plan`. A subclass reads one kind of
    detections: :class:`Reader3D` here, :class:`~locimem.ingest.ros2d.Reader2D`."""

    detections_type = DETECTIONS_3D_TYPE

    def __init__(self, reader: Any, path: Path, options: BagOptions, det_topic: str) -> None:
        self.reader = reader
        self.path = path
        self.options = options
        self.det_topic = det_topic
        topics = reader.topics
        self.info_topic = pick_topic(topics, options.camera_info_topic, CAMERA_INFO_TYPE,
                                     "CameraInfo", "--camera-info")
        self.depth_topic = pick_topic(topics, options.depth_topic, IMAGE_TYPE,
                                      "depth Image", "--depth",
                                      name_hint="depth" if options.depth_topic == "auto"
                                      else None)
        self._check_topics(topics)
        self.tf = TfBuffer()
        self.infos: list[CameraInfoSample] = []
        self.scans: list[Any] = []
        wanted = {det_topic, options.tf_topic, options.tf_static_topic}
        if self.info_topic:
            wanted.add(self.info_topic)
        check_metadata(reader, wanted | set(self.streams), path)
        conns = [c for c in reader.connections if c.topic in wanted
                 and (c.topic in (det_topic, self.info_topic) or c.msgtype == TF_TYPE)]
        stream_conns = [c for c in reader.connections if c.topic in self.streams]
        self._check_definitions(conns + stream_conns)
        seen: dict[str, int] = {}
        for order, (conn, ns, raw) in enumerate(read_messages(reader, conns, path)):
            index = seen[conn.topic] = seen.get(conn.topic, -1) + 1
            where = message_where(path, conn.topic, index, ns)
            msg = self._decode(raw, conn.msgtype, where)
            if conn.topic == det_topic:
                self.scans.append(self._raw_scan(msg, order, where))
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
            "path": str(path), "detections": det_topic,
            "detections_type": self.detections_type, "map_frame": options.map_frame,
            "camera_info": self.info_topic, "depth": self.depth_topic,
            "camera_frame": self._camera_frame(self.infos[0]) if self.infos else None,
            "optical": self._optical(self._camera_frame(self.infos[0])) if self.infos else None,
            "tf_frames": sorted(self.tf.frames),
            "map_jumps": [{"t": j.t, "since": j.since, "translation": list(j.correction[0]),
                           "quaternion": list(j.correction[1])} for j in self.jumps],
            "topics": {t: f"{i.msgtype} ({i.msgcount})" for t, i in sorted(topics.items())},
            **self._more_inputs(),
        }

    # -- what a kind of detections reads --------------------------------------------------
    @property
    def streams(self) -> tuple[str, ...]:
        """The image topics streamed in pass 2, each paired with the scans by stamp."""
        return () if self.depth_topic is None else (self.depth_topic,)

    def _check_topics(self, topics: dict[str, Any]) -> None:
        if self.depth_topic is not None and self.info_topic is None:
            raise IngestError("bag", f"depth topic {self.depth_topic!r} needs a camera info "
                              "topic (--camera-info) for its intrinsics")

    def _more_inputs(self) -> dict[str, Any]:
        """What a kind reads beyond the shared inputs (``inputs`` of the summary)."""
        return {}

    @abstractmethod
    def _raw_scan(self, msg: Any, order: int, where: str) -> Any:
        """A detections message as plain values (an object with ``t``, ``order``, ``where``)."""

    @abstractmethod
    def _build(self, raw: Any, paired: dict[str, Any], where: str) -> Scan:
        """The scan of ``raw``, given the message ``paired`` on each stream (or None)."""

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
            t = stamp_s(tr.header, where, f"transforms[{i}].header")
            a, r = tr.transform.translation, tr.transform.rotation
            try:
                self.tf.add(str(tr.header.frame_id), str(tr.child_frame_id), t,
                            Transform((a.x, a.y, a.z), (r.w, r.x, r.y, r.z)), static=static)
            except InvalidInput as exc:
                raise IngestError(stamp_where(topic, tr.header), str(exc)) from None

    def _add_info(self, msg: Any, topic: str, where: str) -> None:
        t = stamp_s(msg.header, where)
        try:
            k = camera_matrix(msg)  # (a distorted camera info: its rectified image's)
            window = camera_window(list(k), int(msg.width), int(msg.height))
        except InvalidInput as exc:
            raise IngestError(stamp_where(topic, msg.header), str(exc)) from None
        self.infos.append(CameraInfoSample(t, str(msg.header.frame_id), window, int(msg.width),
                                           int(msg.height), k))

    def _camera_frame(self, info: CameraInfoSample) -> str:
        return (self.options.camera_frame or info.frame).lstrip("/")

    def _optical(self, frame: str) -> bool:
        if self.options.optical is None:
            return frame.endswith("_optical_frame")
        return self.options.optical

    def _info_at(self, t: float) -> CameraInfoSample:
        i = bisect.bisect_right(self.info_times, t)
        return self.infos[i - 1] if i > 0 else self.infos[0]


    # -- planning -----------------------------------------------------------------------------
    def plan(self) -> Iterator[PlannedScan]:
        """The scans in stamp order, each with the message of each stream nearest its stamp
        within the depth tolerance (None when there is none)."""
        if not self.streams:
            for raw in self.scans:
                yield self._planned(raw, {})
            return
        yield from self._plan_streams()

    def _plan_streams(self) -> Iterator[PlannedScan]:
        """Stream the image topics once, giving each scan the message nearest its stamp on
        each within the tolerance; a scan is released once no later message can be nearer
        (every stream past its window, or one :data:`STREAM_WAIT_S` past it)."""
        tol = self.options.depth_tolerance_s
        ts = [s.t for s in self.scans]
        best: dict[tuple[int, str], tuple[float, Any]] = {}
        latest = dict.fromkeys(self.streams, -math.inf)
        i, n = 0, len(ts)
        conns = [c for c in self.reader.connections if c.topic in self.streams]
        seen: dict[str, int] = {}
        for conn, ns, raw in read_messages(self.reader, conns, self.path):
            k = seen[conn.topic] = seen.get(conn.topic, -1) + 1
            where = message_where(self.path, conn.topic, k, ns)
            msg = self._decode(raw, conn.msgtype, where)
            s = stamp_s(msg.header, where)
            latest[conn.topic] = max(latest[conn.topic], s)
            for j in range(max(i, bisect.bisect_left(ts, s - tol)),
                           bisect.bisect_right(ts, s + tol)):
                dt = abs(ts[j] - s)
                key = (j, conn.topic)
                if key not in best or dt < best[key][0]:
                    best[key] = (dt, msg)
            slowest, fastest = min(latest.values()), max(latest.values())
            while i < n and (ts[i] + tol < slowest or ts[i] + tol + STREAM_WAIT_S < fastest):
                yield self._planned(self.scans[i], self._take(best, i))
                i += 1
        while i < n:
            yield self._planned(self.scans[i], self._take(best, i))
            i += 1

    def _take(self, best: dict[tuple[int, str], tuple[float, Any]], i: int) -> dict[str, Any]:
        return {topic: best.pop((i, topic), (0.0, None))[1] for topic in self.streams}

    def _planned(self, raw: Any, paired: dict[str, Any]) -> PlannedScan:
        where = raw.where
        return PlannedScan(raw.t, where, lambda: self._build(raw, paired, where))

    # -- building one scan --------------------------------------------------------------------
    def _lookup(self, frame: str, t: float, where: str, role: str = "detections") -> Transform:
        if not frame:
            what = ("the camera info has no frame_id: pass --camera-frame FRAME"
                    if role == "camera" else
                    "a detection has no frame_id (neither its own header nor the array's)")
            raise IngestError(where, what)
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
            fix = (f"pass --map-frame {preferred_root(roots)}" if roots
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
