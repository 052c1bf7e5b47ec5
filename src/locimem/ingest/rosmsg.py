"""ROS 2 messages as locimem reads them: the message types and their typestore, stamps, the
label map, topic choice, and ``vision_msgs/Detection3DArray`` as plain tuples.

Nothing here opens a recording (that is :mod:`locimem.ingest.ros`); ``rosbags`` is imported
only by :func:`vision_msgs_types` and :func:`ros_typestore`. The messages are read by their
attributes, so a ``rosbags`` message and an ``rclpy`` one read alike.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from locimem.errors import InvalidInput, LocimemError
from locimem.ingest.bagcheck import seconds_text
from locimem.ingest.feed import IngestError
from locimem.tracker.frame_check import OPTICAL_HINT

__all__ = [
    "CAMERA_INFO_TYPE", "DETECTIONS_2D_TYPE", "DETECTIONS_3D_TYPE", "DETECTIONS_TYPES",
    "IMAGE_TYPE", "TF_TYPE", "RawDetection3D", "RawScan3D", "RosUnavailable", "cli_warning",
    "hypotheses", "load_label_map", "message_where", "pick_topic", "preferred_root",
    "raw_scan_3d", "ros_typestore", "rosbags_module", "stamp_s", "stamp_text", "stamp_where",
    "vision_msgs_types",
]

MSG_DIR = Path(__file__).resolve().parent / "msg"
DETECTIONS_3D_TYPE = "vision_msgs/msg/Detection3DArray"
DETECTIONS_2D_TYPE = "vision_msgs/msg/Detection2DArray"
DETECTIONS_TYPES = (DETECTIONS_3D_TYPE, DETECTIONS_2D_TYPE)
CAMERA_INFO_TYPE = "sensor_msgs/msg/CameraInfo"
IMAGE_TYPE = "sensor_msgs/msg/Image"
TF_TYPE = "tf2_msgs/msg/TFMessage"


class RosUnavailable(LocimemError):
    """The ``ros`` extra (``rosbags``) is not installed."""


def rosbags_module() -> Any:
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
    typesys = rosbags_module().typesys
    types: dict[str, Any] = {}
    for path in sorted(MSG_DIR.glob("*/msg/*.msg")):
        name = f"{path.parent.parent.name}/msg/{path.stem}"
        types.update(typesys.get_types_from_msg(path.read_text(encoding="utf-8"), name))
    return types


def ros_typestore() -> Any:
    """A rosbags typestore with ROS 2 Humble's standard messages and the vision_msgs types
    (for bags that carry no definitions, and for writing test bags)."""
    typesys = rosbags_module().typesys
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



def stamp_s(header: Any, where: str, field: str = "header") -> float:
    """A header's stamp in seconds; a nanosec outside 0..999999999 (a broken recorder: read
    as is it would shift the time) is an :class:`IngestError` at ``where``."""
    sec, nanosec = int(header.stamp.sec), int(header.stamp.nanosec)
    if not 0 <= nanosec < 1_000_000_000:
        raise IngestError(where, f"{field}.stamp.nanosec is {nanosec}, expected 0 to "
                          "999999999 (whole seconds belong in stamp.sec): a malformed stamp; "
                          "fix the recorder or the node that published it")
    return sec + nanosec * 1e-9


def message_where(path: Path, topic: str, index: int, recorded_ns: int) -> str:
    """A message as errors name it: the file, the topic, its index on the topic (from 0) and
    the time it was recorded (the bag's own clock, not the header stamp)."""
    return f"{path}: {topic} message {index} (recorded at {seconds_text(recorded_ns)} s)"


def stamp_text(header: Any) -> str:
    """The stamp as ROS prints it, exact: ``sec.nanosec`` seconds."""
    return f"{int(header.stamp.sec)}.{int(header.stamp.nanosec):09d}"


def stamp_where(topic: str, header: Any) -> str:
    return f"{topic} stamp {stamp_text(header)} s"



@dataclass(frozen=True, slots=True)
class RawDetection3D:
    frame: str
    hypotheses: tuple[tuple[str, float], ...]
    center: tuple[float, float, float]
    orientation: tuple[float, float, float, float]  # w, x, y, z
    size: tuple[float, float, float]
    track_id: str


@dataclass(frozen=True, slots=True)
class RawScan3D:
    t: float
    order: int
    where: str
    detections: tuple[RawDetection3D, ...]



def hypotheses(results: Any) -> tuple[tuple[str, float], ...]:
    out = []
    for r in results:
        hyp = getattr(r, "hypothesis", None)
        if hyp is not None:  # vision_msgs >= 4 (Humble)
            out.append((str(hyp.class_id), float(hyp.score)))
        else:  # vision_msgs 3 (Foxy): ObjectHypothesisWithPose{id, score, pose}
            out.append((str(r.id), float(r.score)))
    return tuple(out)


def raw_scan_3d(msg: Any, order: int, topic: str, where: str) -> RawScan3D:
    t = stamp_s(msg.header, where)
    array_frame = str(msg.header.frame_id)
    dets = []
    for d in msg.detections:
        c = d.bbox.center
        q = c.orientation
        dets.append(RawDetection3D(
            frame=str(d.header.frame_id) or array_frame,
            hypotheses=hypotheses(d.results),
            center=(float(c.position.x), float(c.position.y), float(c.position.z)),
            orientation=(float(q.w), float(q.x), float(q.y), float(q.z)),
            size=(float(d.bbox.size.x), float(d.bbox.size.y), float(d.bbox.size.z)),
            # vision_msgs >= 4: ``id``; 3 (Foxy): ``tracking_id``
            track_id=str(getattr(d, "id", None) or getattr(d, "tracking_id", "") or ""),
        ))
    return RawScan3D(t, order, stamp_where(topic, msg.header), tuple(dets))


def pick_topic(topics: dict[str, Any], wanted: str | None, msgtype: str, what: str,
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



def cli_warning(warning: str) -> str:
    """A scan's warning in the command line's terms: the camera an ingest builds is fixed by
    its flags, not by ``Camera(frame=...)``.

    >>> cli_warning("3 of 4 detections lie outside the camera's field of view: check the "
    ...             "camera pose and its frame (" + OPTICAL_HINT + ")")[-70:]
    'frame (--optical yes|no: is it an optical frame; --camera-frame FRAME)'
    """
    return warning.replace(OPTICAL_HINT, "--optical yes|no: is it an optical frame; "
                                         "--camera-frame FRAME")


def preferred_root(roots: list[str]) -> str:
    """The tf root a memory most likely lives in: ``map``, ``world``, ``odom`` first."""
    for name in ("map", "world", "odom"):
        if name in roots:
            return name
    return roots[0]
