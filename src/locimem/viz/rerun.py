"""The memory in Rerun (the ``rerun`` extra, ``rerun-sdk``): its story on a time line.

Two ways in:

- :func:`write_rerun` (``locimem rerun STORE -o memory.rrd``) writes a whole memory's story to
  an ``.rrd`` file — replayed from the record, one frame per time something happened (see
  :mod:`locimem.viz.story`) — to open with ``rerun memory.rrd``.
- :class:`RerunLogger` logs live, while a robot (or ``locimem ingest``) feeds the memory::

      viz = RerunLogger(mem, rr.RecordingStream("locimem"))   # or recording=None: rr.init's
      r = mem.observe(t, detections, camera); viz.log_scan(r)

Layout (the memory's frame, metres, z up: ``world`` is logged as right-handed z-up):

=========================  =====================================================================
``world/rooms/<name>``     ``LineStrips3D``: the room's floor outline (closed, at its z floor or
                           0), labelled with its name
``world/objects/<id>``     ``Boxes3D``: centre, half sizes, orientation, label ``"cup #3"``,
                           a colour from its belief (green confident, through yellow, to red;
                           pale while tentative, orange doubted, grey lost); plus ``AnyValues``
                           ``label``, ``status``, ``confidence``, ``room`` and ``object_id``.
                           Cleared when the identity ends (expired, merged away)
``world/moves/<id>``       ``Arrows3D``: the object's latest move, from the old place to the new
``events``                 ``TextLog``: each story event, and each status change
                           (``"STATUS #4 phone: confirmed -> tentative"``)
``frame``                  ``TextDocument`` (static): which frame the positions are in,
                           ``positions in the memory's frame "map" (map epoch 2026-12-01-boot)``
                           (:func:`locimem.frames.frame_note`; without the parenthesis for a
                           scope that never named a map epoch)
=========================  =====================================================================

Everything is logged on the ``scan_time`` timeline, at the memory's scan times: a timestamp
(the viewer shows dates and clock times, UTC) when they look like Unix time (see
:func:`locimem.times.looks_unix`), else a duration (seconds of a simulation's clock). On a
timestamp timeline, frames from before the first Unix-looking time (rooms defined at t = 0,
before the robot's first scan) are placed at that first time, so the time line does not
start in 1970. An object is logged again only when what is drawn changed (place, size,
label, status or confidence to 0.01). The ``.rrd`` file written by :func:`write_rerun` has no
wall-clock timelines, so the same memory gives the same data.

``rerun`` is imported only when these run; the core package never needs it.
"""

from __future__ import annotations

import os
import uuid
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Any

from locimem.errors import InvalidInput, LocimemError
from locimem.files import new_file
from locimem.frames import frame_note, memory_epoch
from locimem.language.hedge import sanitize
from locimem.memory import Readable, reader_of
from locimem.model import Event, EventKind, ScanResult, TrackedObject
from locimem.query.reader import MemoryReader, RoomInfo
from locimem.times import looks_unix
from locimem.viz.map import check_output_path
from locimem.viz.story import (
    STORY_KINDS,
    check_scope_has_story,
    event_text,
    iter_story,
    move_of,
    status_rgb,
)

__all__ = ["TIMELINE", "RerunLogger", "RerunReport", "RerunUnavailable", "write_rerun"]

TIMELINE = "scan_time"
APPLICATION_ID = "locimem"
RRD_SUFFIXES = (".rrd",)
MOVE_RGB = (31, 95, 191)
ROOM_RGB = (90, 107, 128)


class RerunUnavailable(LocimemError, ImportError):
    """The ``rerun`` extra (``rerun-sdk``) is not installed."""


def _import_rerun() -> Any:
    try:
        import rerun
    except ImportError as exc:
        raise RerunUnavailable(
            "Rerun output needs the rerun extra: pip install 'locimem[rerun]' (rerun-sdk); "
            f"importing rerun failed: {exc}") from None
    return rerun


class RerunReport:
    """What :func:`write_rerun` wrote: the file, its size in bytes, and how many frames
    (times on ``scan_time``), objects and rooms it holds."""

    __slots__ = ("n_bytes", "n_frames", "n_objects", "n_rooms", "path")

    def __init__(self, path: Path, n_bytes: int, n_frames: int, n_objects: int,
                 n_rooms: int) -> None:
        self.path, self.n_bytes, self.n_frames = path, n_bytes, n_frames
        self.n_objects, self.n_rooms = n_objects, n_rooms


class _FrameLogger:
    """Logs frames (the memory at a time) to a recording, each entity only when it changed."""

    def __init__(self, rr: Any, recording: Any, first_unix: float | None = None) -> None:
        self._rr = rr
        self._rec = recording
        self._first_unix = first_unix  # a timestamp timeline from here (None: not chosen)
        self._objects: dict[int, tuple[Any, ...]] = {}  # what was last drawn per object
        self._status: dict[int, str] = {}
        self._rooms: dict[str, tuple[Any, ...]] = {}
        self._started = False
        self._note: str | None = None  # the frame's line, as last logged
        self.seen_objects: set[int] = set()
        self.seen_rooms: set[str] = set()

    def _log(self, path: str, *entity: Any, static: bool = False) -> None:
        self._rr.log(path, *entity, static=static, recording=self._rec)

    def log_note(self, memory: MemoryReader) -> None:
        """Log which frame ``memory``'s positions are in (static ``frame``), when it changed."""
        note = frame_note(memory_epoch(memory.state.epochs))
        if note != self._note:
            self._log("frame", self._rr.TextDocument(note), static=True)
            self._note = note

    def log_frame(self, t: float, objects: Sequence[TrackedObject], rooms: Sequence[RoomInfo],
                  room_of: dict[int, str | None], events: Iterable[Event]) -> None:
        rr = self._rr
        if not self._started:
            self._log("world", rr.ViewCoordinates.RIGHT_HAND_Z_UP, static=True)
            self._started = True
        self._set_time(float(t))
        self._log_rooms(rooms)
        present = set()
        for obj in objects:
            present.add(obj.id)
            self.seen_objects.add(obj.id)
            self._log_object(obj, room_of.get(obj.id))
        for oid in [o for o in self._objects if o not in present]:  # the identity ended
            self._log(f"world/objects/{oid}", rr.Clear(recursive=False))
            self._log(f"world/moves/{oid}", rr.Clear(recursive=False))
            del self._objects[oid]
            self._status.pop(oid, None)
        for ev in events:
            if ev.kind not in STORY_KINDS:
                continue
            level = "WARN" if ev.kind in (EventKind.LOST, EventKind.EXPIRED) else "INFO"
            self._log("events", rr.TextLog(event_text(ev), level=level))
            move = move_of(ev)
            if move is not None and ev.object_id in present:
                (a, b), label = move, sanitize(ev.label)
                dist = sum((q - p) ** 2 for p, q in zip(a, b, strict=True)) ** 0.5
                self._log(f"world/moves/{ev.object_id}", rr.Arrows3D(
                    origins=[a], vectors=[[q - p for p, q in zip(a, b, strict=True)]],
                    labels=[f"{label} #{ev.object_id} moved {dist:.2f} m"],
                    colors=[MOVE_RGB]))

    def _set_time(self, t: float) -> None:
        """``t`` on ``scan_time``: the timeline's kind is chosen at the first frame (a
        timestamp when the memory's times look like Unix time) and kept, as Rerun requires."""
        if self._first_unix is None and looks_unix(t):
            self._first_unix = t
        if self._first_unix is None:
            self._rr.set_time(TIMELINE, duration=t, recording=self._rec)
        else:
            self._rr.set_time(TIMELINE, timestamp=max(t, self._first_unix),
                              recording=self._rec)

    def _log_rooms(self, rooms: Sequence[RoomInfo]) -> None:
        rr = self._rr
        names = set()
        for room in rooms:
            names.add(room.name)
            self.seen_rooms.add(room.name)
            key = (room.polygon, room.z_range)
            if self._rooms.get(room.name) == key:
                continue
            self._rooms[room.name] = key
            z = 0.0 if room.z_range is None else float(room.z_range[0])
            strip = [[float(x), float(y), z] for x, y in room.polygon]
            strip.append(strip[0])
            self._log(_room_path(rr, room.name), rr.LineStrips3D(
                [strip], labels=[sanitize(room.name)], colors=[ROOM_RGB]))
        for name in [n for n in self._rooms if n not in names]:
            self._log(_room_path(rr, name), rr.Clear(recursive=False))
            del self._rooms[name]

    def _log_object(self, obj: TrackedObject, room: str | None) -> None:
        rr = self._rr
        conf = round(float(obj.confidence), 2)
        key = (obj.label, obj.center, obj.size, obj.orientation, obj.status.value, conf, room)
        if self._objects.get(obj.id) == key:
            return
        self._objects[obj.id] = key
        before = self._status.get(obj.id)
        if before is not None and before != obj.status.value:
            self._log("events", rr.TextLog(
                f"STATUS #{obj.id} {sanitize(obj.label)}: {before} -> {obj.status.value}",
                level="WARN" if obj.status.value in ("lost", "doubted") else "INFO"))
        self._status[obj.id] = obj.status.value
        label = sanitize(obj.label)
        boxes: dict[str, Any] = {
            "centers": [list(obj.center)],
            "half_sizes": [[s / 2.0 for s in obj.size]],
            "labels": [f"{label} #{obj.id}"],
            "colors": [status_rgb(obj.status, obj.confidence)],
        }
        if obj.orientation is not None:
            w, x, y, z = obj.orientation  # locimem: w-x-y-z; Rerun: x-y-z-w
            boxes["quaternions"] = [rr.Quaternion(xyzw=[x, y, z, w])]
        self._log(f"world/objects/{obj.id}", rr.Boxes3D(**boxes), rr.AnyValues(
            label=obj.label, status=obj.status.value, confidence=conf,
            room="" if room is None else room, object_id=obj.id))


def _room_path(rr: Any, name: str) -> str:
    return f"world/rooms/{rr.escape_entity_path_part(name)}"


def write_rerun(memory: Readable, path: str | os.PathLike[str], *,
                recording_id: str | None = None) -> RerunReport:
    """Write ``memory``'s story (an :class:`ObjectMemory` or an ``as_of`` view) to the Rerun
    file ``path`` (``.rrd``; replaced if it exists, written whole or not at all).

    ``recording_id`` defaults to one derived from the store's path and the scope, so files
    written again from the same memory open as the same recording. Raises
    :class:`RerunUnavailable` without ``rerun-sdk``, :class:`InvalidInput` for a bad path and
    :class:`NotFound` for a scope with nothing recorded.
    """
    memory = reader_of(memory)
    out = check_output_path(path, RRD_SUFFIXES, "Rerun recording")
    if recording_id is not None and (not isinstance(recording_id, str) or not recording_id):
        raise InvalidInput(f"recording_id must be a non-empty string, got {recording_id!r}")
    rr = _import_rerun()
    check_scope_has_story(memory)
    rid = recording_id or str(uuid.uuid5(uuid.NAMESPACE_URL,
                                         f"locimem:{memory.store.path}:{memory.scope}"))
    rec = rr.RecordingStream(APPLICATION_ID, recording_id=rid, send_properties=False)
    rec.set_log_time_enabled(False)
    rec.set_log_tick_enabled(False)
    tmp = new_file(out.parent, f".{out.name}.", ".rrd")
    n_frames = 0
    try:
        rec.save(tmp)
        until = memory.until_commit
        unix = [c.t for c in memory.store.commits(memory.scope)
                if looks_unix(c.t) and (until is None or c.id <= until)]
        logger = _FrameLogger(rr, rec, first_unix=min(unix) if unix else None)
        logger.log_note(memory)
        for frame in iter_story(memory):
            logger.log_frame(frame.t, frame.objects, frame.rooms, frame.room_of, frame.events)
            n_frames += 1
        rec.flush()
        rec.disconnect()  # closes the file sink: the file is complete
        os.replace(tmp, out)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
    return RerunReport(out, out.stat().st_size, n_frames, len(logger.seen_objects),
                       len(logger.seen_rooms))


class RerunLogger:
    """Log a memory to Rerun live: call :meth:`log_scan` after each ``observe`` (and after
    corrections, if you like); it logs, at the memory's ``now`` on ``scan_time``, the events
    of that scan and every object or room whose drawing changed (see the module docstring).

    ``recording``: a ``rerun.RecordingStream``, or None for the global one that ``rr.init``
    set up (e.g. ``rr.init("locimem", spawn=True)`` to watch in the viewer).
    """

    def __init__(self, memory: Readable, recording: Any = None) -> None:
        memory = reader_of(memory)
        rr = _import_rerun()
        if recording is not None and not isinstance(recording, rr.RecordingStream):
            raise InvalidInput(f"recording must be a rerun.RecordingStream or None, got "
                               f"{type(recording).__name__}")
        self._memory = memory
        self._logger = _FrameLogger(rr, recording)

    def log_scan(self, result: ScanResult | None = None) -> None:
        """Log the memory as it is now, with ``result``'s events (the :class:`ScanResult`
        that ``observe`` returned; None logs the state alone)."""
        if result is not None and not isinstance(result, ScanResult):
            raise InvalidInput(f"result must be the ScanResult that observe() returned, got "
                               f"{type(result).__name__}")
        mem = self._memory
        if mem.now is None:  # nothing observed yet: nothing to place on the time line
            return
        objects = mem.objects()
        room_of = {o.id: mem.room_of(o.id) for o in objects} if mem.rooms() else {}
        self._logger.log_note(mem)
        self._logger.log_frame(mem.now, objects, mem.rooms(), room_of,
                               () if result is None else result.events)
