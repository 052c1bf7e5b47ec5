"""What a recording must be before locimem reads it, checked once when it is opened.

- :func:`check_sqlite_files`: every ``.db3`` file is whole (as long as its own header says).
- :func:`check_metadata`: a rosbag2 directory's ``metadata.yaml`` agrees with its storage
  files on each topic read (name, type, serialization and QoS, message count) — rosbags
  matches a topic's messages on all of them and silently yields none when they differ.
- :func:`check_definition`: a topic's message definition (embedded in the bag, or the shipped
  one) has the fields ``ros.py`` reads, of the right kinds: a bag may name a type
  ``vision_msgs/msg/Detection3DArray`` and define it as anything.
- :func:`read_messages`: the reader's own errors while reading (a damaged page) become one
  :class:`~locimem.errors.InvalidInput` naming the file and the topics.

Every error names the file, the topic and what was expected. These work on the structures
``rosbags`` gives (``Connection``, ``Typestore.fielddefs``) and touch no locimem store.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from locimem.errors import InvalidInput

__all__ = ["SHAPES", "check_definition", "check_metadata", "check_sqlite_files",
           "read_messages", "seconds_text"]

# -- message shapes -------------------------------------------------------------------------
_INTS = frozenset({"int8", "uint8", "int16", "uint16", "int32", "uint32", "int64", "uint64",
                   "byte", "char"})
_FLOATS = frozenset({"float32", "float64"})
_STRINGS = frozenset({"string", "wstring"})


@dataclass(frozen=True)
class Base:
    """A field of a ROS base type among ``kinds``; ``what`` words it in messages."""

    what: str
    kinds: frozenset[str]


@dataclass(frozen=True)
class Seq:
    """A sequence (``T[]``) or fixed array (``T[n]``) of ``item``."""

    item: Any


@dataclass(frozen=True)
class Msg:
    """A message with (at least) these fields; ``optional`` ones may be absent. ``name`` is
    the standard type it stands for (any type of this shape is read)."""

    name: str
    fields: Mapping[str, Any]
    optional: frozenset[str] = field(default_factory=frozenset)


@dataclass(frozen=True)
class OneOf:
    """One of several message shapes (a type that changed between ROS releases)."""

    options: tuple[Msg, ...]


NUMBER = Base("a number", _INTS | _FLOATS)
INTEGER = Base("an integer", _INTS)
FLAG = Base("a bool or an integer", _INTS | {"bool"})
TEXT = Base("a string", _STRINGS)
CLASS_ID = Base("a string or an integer", _STRINGS | _INTS)
BYTES = Seq(Base("bytes (uint8)", frozenset({"uint8", "byte", "char", "int8"})))

TIME = Msg("builtin_interfaces/msg/Time", {"sec": INTEGER, "nanosec": INTEGER})
HEADER = Msg("std_msgs/msg/Header", {"stamp": TIME, "frame_id": TEXT})
XYZ = {"x": NUMBER, "y": NUMBER, "z": NUMBER}
POSE = Msg("geometry_msgs/msg/Pose", {
    "position": Msg("geometry_msgs/msg/Point", XYZ),
    "orientation": Msg("geometry_msgs/msg/Quaternion", {**XYZ, "w": NUMBER})})
VECTOR3 = Msg("geometry_msgs/msg/Vector3", XYZ)
HYPOTHESIS = OneOf((
    Msg("vision_msgs/msg/ObjectHypothesisWithPose", {  # vision_msgs >= 4 (Humble)
        "hypothesis": Msg("vision_msgs/msg/ObjectHypothesis",
                          {"class_id": CLASS_ID, "score": NUMBER})}),
    Msg("vision_msgs/msg/ObjectHypothesisWithPose (vision_msgs 3)",  # Foxy
        {"id": CLASS_ID, "score": NUMBER}),
))
DETECTION = Msg("vision_msgs/msg/Detection3D", {
    "header": HEADER, "results": Seq(HYPOTHESIS),
    "bbox": Msg("vision_msgs/msg/BoundingBox3D", {"center": POSE, "size": VECTOR3}),
    "id": TEXT, "tracking_id": TEXT}, optional=frozenset({"id", "tracking_id"}))

XY = {"x": NUMBER, "y": NUMBER}
CENTER_2D = OneOf((
    Msg("vision_msgs/msg/Pose2D", {  # vision_msgs >= 4 (Humble)
        "position": Msg("vision_msgs/msg/Point2D", XY), "theta": NUMBER}),
    Msg("geometry_msgs/msg/Pose2D (vision_msgs 3)", {**XY, "theta": NUMBER}),  # Foxy
))
DETECTION_2D = Msg("vision_msgs/msg/Detection2D", {
    "header": HEADER, "results": Seq(HYPOTHESIS),
    "bbox": Msg("vision_msgs/msg/BoundingBox2D", {
        "center": CENTER_2D, "size_x": NUMBER, "size_y": NUMBER}),
    "id": TEXT, "tracking_id": TEXT}, optional=frozenset({"id", "tracking_id"}))

#: The shape of each message type locimem reads (what ``ros.py`` takes from it).
SHAPES: dict[str, Msg] = {
    "vision_msgs/msg/Detection3DArray": Msg("vision_msgs/msg/Detection3DArray", {
        "header": HEADER, "detections": Seq(DETECTION)}),
    "vision_msgs/msg/Detection2DArray": Msg("vision_msgs/msg/Detection2DArray", {
        "header": HEADER, "detections": Seq(DETECTION_2D)}),
    "tf2_msgs/msg/TFMessage": Msg("tf2_msgs/msg/TFMessage", {
        "transforms": Seq(Msg("geometry_msgs/msg/TransformStamped", {
            "header": HEADER, "child_frame_id": TEXT,
            "transform": Msg("geometry_msgs/msg/Transform", {
                "translation": VECTOR3,
                "rotation": Msg("geometry_msgs/msg/Quaternion", {**XYZ, "w": NUMBER})})}))}),
    "sensor_msgs/msg/CameraInfo": Msg("sensor_msgs/msg/CameraInfo", {
        "header": HEADER, "width": INTEGER, "height": INTEGER, "k": Seq(NUMBER)}),
    "sensor_msgs/msg/Image": Msg("sensor_msgs/msg/Image", {
        "header": HEADER, "width": INTEGER, "height": INTEGER, "step": INTEGER,
        "encoding": TEXT, "is_bigendian": FLAG, "data": BYTES}),
}


def _describe(node: Any) -> str:
    """A field's type as a .msg file writes it."""
    kind, desc = node
    name = getattr(kind, "name", str(kind))
    if name == "BASE":
        return str(desc[0] if isinstance(desc, tuple) else desc)
    if name == "NAME":
        return str(desc)
    item, size = desc
    return f"{_describe(item)}[{size or ''}]"


def _expected(spec: Any) -> str:
    if isinstance(spec, Base):
        return spec.what
    if isinstance(spec, Seq):
        return f"a sequence of {_expected(spec.item)}"
    if isinstance(spec, OneOf):
        return " or ".join(_expected(o) for o in spec.options)
    return f"{spec.name} ({', '.join(f for f in spec.fields if f not in spec.optional)})"


def _mismatch(fielddefs: Mapping[str, Any], node: Any, spec: Any, where: str) -> str | None:
    """Why the field ``node`` (a rosbags field description) at ``where`` is not ``spec``,
    or None when it is."""
    kind, desc = node
    name = getattr(kind, "name", str(kind))
    if isinstance(spec, Seq):
        if name not in ("SEQUENCE", "ARRAY"):
            return f"{where} is {_describe(node)}, expected {_expected(spec)}"
        return _mismatch(fielddefs, desc[0], spec.item, f"{where}[]")
    if isinstance(spec, Base):
        base = desc[0] if isinstance(desc, tuple) else desc
        if name != "BASE" or base not in spec.kinds:
            return f"{where} is {_describe(node)}, expected {spec.what}"
        return None
    if name != "NAME":
        return f"{where} is {_describe(node)}, expected {_expected(spec)}"
    return _message_mismatch(fielddefs, str(desc), spec, where)


def _message_mismatch(fielddefs: Mapping[str, Any], typename: str, spec: Msg | OneOf,
                      where: str) -> str | None:
    if isinstance(spec, OneOf):
        whys = [_message_mismatch(fielddefs, typename, o, where) for o in spec.options]
        return None if None in whys else whys[0]
    if typename not in fielddefs:
        return f"{where} is {typename}, which the bag does not define"
    fields = dict(fielddefs[typename][1])
    for fname, fspec in spec.fields.items():
        inner = f"{where}.{fname}" if where else fname
        if fname not in fields:
            if fname in spec.optional:
                continue
            have = ", ".join(fields) or "none"
            return (f"{where or 'the message'} is {typename}, which has no field {fname!r} "
                    f"(its fields: {have}; expected {_expected(spec)})")
        why = _mismatch(fielddefs, fields[fname], fspec, inner)
        if why is not None:
            return why
    return None


def check_definition(fielddefs: Mapping[str, Any], msgtype: str) -> str | None:
    """Why ``msgtype``'s definition in ``fielddefs`` (a rosbags ``Typestore.fielddefs``) lacks
    the shape locimem reads, or None when it has it (or locimem reads no such type).

    >>> from locimem.ingest.ros import ros_typestore
    >>> check_definition(ros_typestore().fielddefs, "vision_msgs/msg/Detection3DArray") is None
    True
    """
    spec = SHAPES.get(msgtype)
    if spec is None:
        return None
    return _message_mismatch(fielddefs, msgtype, spec, "")


# -- storage files ----------------------------------------------------------------------------
_SQLITE_MAGIC = b"SQLite format 3\x00"


def check_sqlite_files(path: Path) -> None:
    """Refuse a ``.db3`` file (``path`` itself, or those in a rosbag2 directory) shorter than
    its header says: a copy cut short, or a recorder killed mid-write. Cheap (reads 100 bytes
    a file); damage elsewhere is caught while reading (:func:`read_messages`)."""
    files = sorted(path.glob("*.db3")) if path.is_dir() else [path]
    for f in files:
        if f.suffix.lower() != ".db3" or not f.is_file():
            continue
        try:
            with f.open("rb") as fh:
                head = fh.read(100)
            size = f.stat().st_size
        except OSError as exc:
            raise InvalidInput(f"cannot read {f}: {exc}") from None
        if len(head) < 100 or not head.startswith(_SQLITE_MAGIC):
            if size > 0:
                raise InvalidInput(f"{f} is not a SQLite file (a rosbag2 .db3 starts with "
                                   "'SQLite format 3'): the recording is damaged or not a "
                                   "ROS 2 bag")
            continue  # an empty file: rosbags says it lacks the tables
        page = int.from_bytes(head[16:18], "big")
        page = 65536 if page == 1 else page
        pages = int.from_bytes(head[28:32], "big")
        valid = head[24:28] == head[92:96] and pages > 0  # the in-header size is current
        if valid and size < pages * page:
            raise InvalidInput(
                f"{f} is truncated: its header says {pages} pages of {page} bytes "
                f"({pages * page} bytes), the file has {size} bytes; expected a whole "
                "rosbag2 SQLite file: copy it again from the robot (or recover what is left "
                "with `sqlite3 FILE .recover`)")


def _storages(reader: Any) -> list[Any]:
    """The storage readers (one per ``.db3`` / ``.mcap`` file) of a rosbags ``Reader`` over a
    rosbag2 directory; [] for a single file (it has no separate metadata)."""
    storage = getattr(reader, "storage", None)
    return list(getattr(storage, "storages", None) or [])


def check_metadata(any_reader: Any, topics: Iterable[str], path: Path) -> None:
    """Refuse a rosbag2 directory whose ``metadata.yaml`` contradicts its storage files on
    one of ``topics``. rosbags reads the topic list from ``metadata.yaml`` and a topic's
    messages from the files, matched on name, type, serialization and QoS: without this
    check a contradiction reads as a topic with no messages."""
    wanted = set(topics)
    for reader in getattr(any_reader, "readers", []):
        storages = _storages(reader)
        if not storages:
            continue
        stored = [(s, c) for s in storages for c in s.connections]
        for conn in reader.connections:
            if conn.topic not in wanted:
                continue
            listed = f"{conn.topic} ({conn.msgtype}, {conn.msgcount} messages)"
            same_name = [(s, c) for s, c in stored if c.topic == conn.topic]
            if not same_name:
                names = ", ".join(sorted({c.topic for _, c in stored})) or "none"
                raise _contradiction(path, f"its metadata.yaml lists {listed}, its storage "
                                     f"files have no topic {conn.topic} (their topics: "
                                     f"{names})")
            matching = [(s, c) for s, c in same_name if _same_topic(conn, c)]
            if not matching:
                s, c = same_name[0]
                differs = "types" if c.msgtype != conn.msgtype else (
                    "type hashes" if c.digest and conn.digest and c.digest != conn.digest
                    else "serialization formats or QoS profiles")
                raise _contradiction(path, f"its metadata.yaml lists {listed}, "
                                     f"{Path(str(s.path)).name}'s topics table has "
                                     f"{c.topic} as {c.msgtype} (the {differs} differ)")
            held = sum(c.msgcount for _, c in matching)
            if held != conn.msgcount:
                raise _contradiction(path, f"its metadata.yaml counts {conn.msgcount} "
                                     f"messages on {conn.topic}, its storage files hold "
                                     f"{held}")


def _same_topic(meta: Any, stored: Any) -> bool:
    """rosbags' own rule for the messages of a metadata topic (``DirectoryReader.messages``)."""
    return (stored.topic == meta.topic and stored.msgtype == meta.msgtype
            and stored.ext == meta.ext
            and (not stored.digest or not meta.digest or stored.digest == meta.digest))


def _contradiction(path: Path, what: str) -> InvalidInput:
    return InvalidInput(f"{path}: the recording contradicts itself: {what}; expected the "
                        "metadata to describe the files: regenerate it with `ros2 bag reindex "
                        f"{path}` (ROS 2 Humble or later), or copy the recording again")


# -- reading ----------------------------------------------------------------------------------
def seconds_text(ns: int) -> str:
    """Nanoseconds as exact seconds: ``seconds_text(1_700_000_000_250_000_000)`` is
    ``'1700000000.250000000'``."""
    return f"{ns // 1_000_000_000}.{ns % 1_000_000_000:09d}"


def read_messages(reader: Any, connections: list[Any], path: Path
                  ) -> Iterator[tuple[Any, int, bytes]]:
    """``reader.messages(connections=...)``, with the storage's own errors (``apsw`` /
    ``sqlite3`` / mcap errors from a damaged file) as one :class:`InvalidInput` naming the
    file, the topics being read and how far it got."""
    done = 0
    last: tuple[str, int] | None = None
    it = iter(reader.messages(connections=connections))
    while True:
        try:
            item = next(it)
        except StopIteration:
            return
        except (KeyboardInterrupt, SystemExit, GeneratorExit):
            raise
        except Exception as exc:
            topics = ", ".join(sorted({c.topic for c in connections}))
            after = (f" after {done} messages (the last on {last[0]}, recorded at "
                     f"{seconds_text(last[1])} s)" if last else " before the first message")
            raise InvalidInput(
                f"{path}: cannot read {topics}: the recording is damaged "
                f"({type(exc).__name__}: {exc}){after}; expected a whole rosbag2 file: copy "
                "it again from the robot") from None
        done += 1
        last = (item[0].topic, item[1])
        yield item
