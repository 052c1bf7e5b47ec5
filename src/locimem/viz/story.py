"""The memory's story as a sequence of frames: what it believed at each time something happened.

A *frame* is the memory as of one valid time ``t`` at which a story event happened (an object
appeared, was published, moved, changed its label, was lost, re-acquired, merged, split,
expired or corrected; a room was defined or linked), plus one last frame at the memory's
``now`` (the latest scan), so that the story ends with the memory as it is. Each frame holds
exactly what ``memory.as_of(t)`` would answer: every visible object with its belief at that
time (status and confidence read at the latest scan up to ``t``), the rooms, and the story
events recorded at ``t``.

:func:`iter_story` replays the record once, from the start (or from a compaction checkpoint,
where ``as_of`` would), instead of calling ``as_of`` per frame: the cost is one replay plus,
per frame, one view per object. Objects forgotten since are hidden, as from every read path.

Positions are metres in the map frame, z up; times are seconds of valid (world) time.
"""

from __future__ import annotations

import colorsys
import math
from collections.abc import Iterator
from dataclasses import dataclass

from locimem.errors import NotFound
from locimem.language.events import short_line as event_text
from locimem.memory import Readable, reader_of
from locimem.model import Commit, Event, EventKind, ObjectStatus, TrackedObject
from locimem.query.reader import MemoryReader, RoomInfo
from locimem.query.views import view
from locimem.tracker.apply import apply
from locimem.tracker.state import MemoryState

__all__ = ["STORY_KINDS", "StoryFrame", "check_scope_has_story", "event_text", "iter_story",
           "move_of", "status_rgb", "yaw_of"]

# Events that change what a map of the memory shows. Left out: KEYFRAME (image evidence),
# RELATION (derived from places, which MOVED already tells), SETTLED (a box published at its
# first sighting settling by centimetres over the next two), PRIOR and DELTA (the prior map's
# bookkeeping) and COMPACTED (maintenance).
STORY_KINDS: frozenset[EventKind] = frozenset({
    EventKind.APPEARED, EventKind.PROMOTED, EventKind.LABEL_CHANGED, EventKind.MOVED,
    EventKind.LOST, EventKind.REACQUIRED, EventKind.CORRECTED, EventKind.SUPPRESSED,
    EventKind.REVIVED, EventKind.ROOM_DEFINED, EventKind.ROOMS_CONNECTED, EventKind.ROOM_REMOVED,
    EventKind.EXPIRED, EventKind.MERGED, EventKind.SPLIT, EventKind.REANCHORED,
})

LOST_RGB = (150, 150, 150)
DOUBTED_RGB = (235, 130, 30)


@dataclass(frozen=True, slots=True)
class StoryFrame:
    """The memory as of valid time ``t`` (seconds).

    ``objects``: every visible object as ``as_of(t).objects()`` returns it (by id);
    ``rooms``: the rooms defined by then (by name); ``room_of``: object id -> the room holding
    most of its footprint (None outside every room); ``events``: the story events recorded at
    ``t`` (empty for the closing frame at ``now`` when nothing happened then).
    """

    t: float
    events: tuple[Event, ...]
    objects: tuple[TrackedObject, ...]
    rooms: tuple[RoomInfo, ...]
    room_of: dict[int, str | None]


def iter_story(memory: Readable) -> Iterator[StoryFrame]:
    """The frames of ``memory``'s story, oldest first (see the module docstring).

    ``memory`` is an :class:`~locimem.ObjectMemory` or an ``as_of`` view (the story then ends
    at the view's time). A scope with no commits yields nothing.
    """
    memory = reader_of(memory)
    store, scope, config = memory.store, memory.scope, memory.config
    until = memory.until_commit  # an as-of view reads the record only up to here
    hidden = memory.hidden_ids()  # forgotten now: hidden from every read, past ones too
    checkpoints = _checkpoint_ids(memory, until)
    lost_after = config.lost_after_s
    state = MemoryState(grid_cell_m=config.drift_radius_m, relations=config.relations)
    frame_t: float | None = None
    pending: list[Event] = []
    last_commit = 0
    last_yielded: float | None = None
    for record in store.iter_log(scope, until_commit=until):
        if isinstance(record, Commit):
            state = _at_checkpoint(state, last_commit, checkpoints, memory)
            if frame_t is not None and record.t > frame_t and pending:
                yield _frame(state, frame_t, pending, hidden, memory)
                last_yielded, pending = frame_t, []
            frame_t, last_commit = record.t, record.id
        elif (isinstance(record, Event) and record.kind in STORY_KINDS
              and record.object_id not in hidden):
            pending.append(record)
        apply(state, record, lost_after)
    state = _at_checkpoint(state, last_commit, checkpoints, memory)
    if frame_t is not None and pending:
        yield _frame(state, frame_t, pending, hidden, memory)
        last_yielded = frame_t
    if state.now is not None and (last_yielded is None or state.now > last_yielded):
        yield _frame(state, state.now, [], hidden, memory)


def check_scope_has_story(memory: Readable) -> None:
    """Raise :class:`NotFound` when ``memory``'s scope holds no commits (nothing to draw),
    naming the scopes the store does hold."""
    store = reader_of(memory).store
    if store.count("commits", memory.scope) == 0:
        scopes = ", ".join(repr(s) for s in store.scopes()) or "none: the store is empty"
        raise NotFound(f"scope {memory.scope!r} has no records to draw (scopes in this store: "
                       f"{scopes}); pick one with --scope")


def _checkpoint_ids(memory: MemoryReader, until: int | None) -> dict[int, None]:
    """The commit ids at which the store keeps a compaction checkpoint (up to ``until``)."""
    ids: dict[int, None] = {}
    found = memory.store.latest_checkpoint(memory.scope, until)
    while found is not None:
        ids[found[0]] = None
        found = memory.store.latest_checkpoint(memory.scope, found[0] - 1) if found[0] > 1 \
            else None
    return ids


def _at_checkpoint(state: MemoryState, commit: int, checkpoints: dict[int, None],
                   memory: MemoryReader) -> MemoryState:
    """After a checkpointed commit, the checkpoint's exact state (what ``as_of`` starts
    from): the log before it may have been thinned, the checkpoint was not."""
    if commit not in checkpoints:
        return state
    found = memory.store.latest_checkpoint(memory.scope, commit)
    assert found is not None and found[0] == commit
    config = memory.config
    out = MemoryState.from_snapshot(found[1], config.drift_radius_m, config.relations)
    out.rebuild_indexes(config.lost_after_s)
    return out


def _frame(state: MemoryState, t: float, events: list[Event], hidden: set[int],
           memory: MemoryReader) -> StoryFrame:
    config = memory.config
    now = state.now or 0.0
    rooms = state.scene.rooms
    objects = tuple(view(state.objects[oid], now, config) for oid in sorted(state.objects)
                    if oid not in hidden)
    room_of: dict[int, str | None] = {}
    for obj in objects:
        hit = rooms.assign(obj.center, obj.size) if rooms.names() else None
        room_of[obj.id] = None if hit is None else hit.room
    room_infos = tuple(RoomInfo(r.name, r.polygon, r.z_range, tuple(rooms.neighbors(r.name)))
                       for r in rooms.rooms())
    return StoryFrame(t=t, events=tuple(events), objects=objects, rooms=room_infos,
                      room_of=room_of)


# -- shared by the map and the Rerun recording ----------------------------------------------------
def status_rgb(status: ObjectStatus, confidence: float) -> tuple[int, int, int]:
    """The colour of an object's belief (0-255 RGB): lost grey, doubted orange; otherwise a hue
    from red (confidence 0) through yellow to green (confidence 1), pale while tentative."""
    if status is ObjectStatus.LOST:
        return LOST_RGB
    if status is ObjectStatus.DOUBTED:
        return DOUBTED_RGB
    c = min(1.0, max(0.0, float(confidence)))
    saturation = 0.75 if status is ObjectStatus.CONFIRMED else 0.35
    r, g, b = colorsys.hsv_to_rgb(c / 3.0, saturation, 0.85)
    return round(r * 255), round(g * 255), round(b * 255)


def yaw_of(orientation: tuple[float, float, float, float] | None) -> float:
    """The heading (radians, about z, counter-clockwise from the map's x axis) of a w-x-y-z
    quaternion; 0 without one."""
    if orientation is None:
        return 0.0
    w, x, y, z = orientation
    return math.atan2(2.0 * (w * z + x * y), 1.0 - 2.0 * (y * y + z * z))


def move_of(ev: Event) -> tuple[tuple[float, float, float], tuple[float, float, float]] | None:
    """(from, to) centres of a move: a MOVED or REANCHORED event, or a CORRECTED event of the
    centre."""
    d = ev.data
    if ev.kind in (EventKind.MOVED, EventKind.REANCHORED) or (ev.kind is EventKind.CORRECTED
                                      and d.get("field") == "center"):
        try:
            a = tuple(float(v) for v in d["from"])
            b = tuple(float(v) for v in d["to"])
        except (KeyError, TypeError, ValueError):
            return None
        if len(a) == 3 and len(b) == 3:
            return a, b
    return None
