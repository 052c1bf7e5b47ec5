"""Rooms of the scene graph: define them, link them, import a whole floor plan.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, cast

from locimem.check import (
    check_text,
)
from locimem.errors import InvalidInput
from locimem.memory.base import Service, in_turn
from locimem.model import (
    Event,
    EventKind,
)
from locimem.scene.rooms import Room, RoomMap


class RoomWrites(Service):
    """The room verbs of :class:`~locimem.memory.facade.ObjectMemory`."""

    @in_turn
    def define_room(self, name: str, polygon_xy: Sequence[Sequence[float]],
                    z_range: Sequence[float] | None = None, *, actor: str = "operator",
                    reason: str | None = None) -> Event:
        """Define a room by its floor polygon ((x, y) vertices, metres, map frame; a simple
        polygon of positive area) and optional z range. Objects are assigned to the room
        holding most of their footprint. Recorded as a ROOM_DEFINED event."""
        self._live._writable("define_room")
        room = Room(check_text(name, "room name", max_chars=64),  # (Room checks the rest)
                    cast(Any, polygon_xy), cast(Any, z_range))
        if room.name in self._live._state.scene.rooms.names():  # names are normalised like labels
            raise InvalidInput(f"a room named {room.name!r} is already defined")
        return self._scene_event(EventKind.ROOM_DEFINED, room.to_dict(), actor, reason)

    @in_turn
    def connect_rooms(self, a: str, b: str, *, actor: str = "operator",
                      reason: str | None = None) -> Event:
        """Link two rooms (a door or an opening) for :meth:`path_rooms`."""
        self._live._writable("connect_rooms")
        a, b = self._live._room(a), self._live._room(b)
        if a == b:
            raise InvalidInput(f"cannot connect room {a!r} to itself")
        return self._scene_event(EventKind.ROOMS_CONNECTED, {"a": a, "b": b}, actor, reason)

    @in_turn
    def remove_room(self, name: str, *, actor: str = "operator",
                    reason: str | None = None) -> Event:
        """Remove a room and its links (NotFound if there is none by that name): the way to
        redefine one drawn wrong. Its objects belong to whichever room now holds most of
        their footprint. Recorded as a ROOM_REMOVED event; ``as_of`` an earlier time still
        shows the room."""
        self._live._writable("remove_room")
        return self._scene_event(EventKind.ROOM_REMOVED, {"name": self._live._room(name)}, actor,
                                 reason)

    @in_turn
    def import_rooms(self, data: dict[str, Any], *, actor: str = "operator",
                     reason: str | None = None) -> list[Event]:
        """Define rooms and their links from plain data — ``{"rooms": [{"name", "polygon",
        "z_range"}, ...], "connections": [[a, b], ...]}`` (the form ``RoomMap.to_dict()``
        writes) — in one commit. Everything is validated first; nothing is written if any
        room or link is bad."""
        self._live._writable("import_rooms")
        if not isinstance(data, dict) or not isinstance(data.get("rooms"), list):
            raise InvalidInput('rooms data must be a dict with a "rooms" list')
        trial = RoomMap.from_dict(self._live._state.scene.rooms.to_dict())
        events: list[tuple[EventKind, dict[str, Any]]] = []
        for item in data["rooms"]:
            if not isinstance(item, dict):
                raise InvalidInput("each room must be a dict with name and polygon")
            name = check_text(item.get("name"), "room name", max_chars=64)
            room = trial.define(name, item.get("polygon"), item.get("z_range"))
            events.append((EventKind.ROOM_DEFINED, room.to_dict()))
        for link in data.get("connections", []):
            if not isinstance(link, (list, tuple)) or len(link) != 2:
                raise InvalidInput("each connection must be a pair of room names")
            trial.connect(link[0], link[1])
            events.append((EventKind.ROOMS_CONNECTED, {"a": link[0], "b": link[1]}))
        if not events:
            raise InvalidInput("rooms data holds no rooms")
        return self._scene_events(events, actor, reason)

    def _scene_event(self, kind: EventKind, data: dict[str, Any], actor: str,
                     reason: str | None) -> Event:
        return self._scene_events([(kind, data)], actor, reason)[0]

    def _scene_events(self, items: list[tuple[EventKind, dict[str, Any]]], actor: str,
                      reason: str | None) -> list[Event]:
        actor = check_text(actor, "actor")
        reason = None if reason is None else check_text(reason, "reason", max_chars=1000)
        return self._live._meta_commit("scene", actor, reason,
                                 [(kind, 0, "", data) for kind, data in items])

