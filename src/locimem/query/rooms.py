"""The scene graph: rooms, levels, relations between objects, and descriptions.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from locimem.errors import InvalidInput
from locimem.language.hedge import hedged_sentence, place_text, sanitize
from locimem.model import (
    TrackedObject,
)
from locimem.query.views import status_of
from locimem.scene.levels import level_of
from locimem.scene.relations import RELATIONS

if TYPE_CHECKING:
    pass
from locimem.query.base import (
    LIVE_STATUSES,
    ReaderBase,
    RelationInfo,
    RoomInfo,
    relabelled,
)


class RoomQueries(ReaderBase):
    """Questions about rooms and relations."""

    def rooms(self) -> list[RoomInfo]:
        """The defined rooms (name, floor polygon, z range, linked rooms), by name."""
        self.store  # noqa: B018
        rooms = self._state.scene.rooms
        return [RoomInfo(r.name, r.polygon, r.z_range, tuple(rooms.neighbors(r.name)))
                for r in rooms.rooms()]

    def path_rooms(self, a: str, b: str) -> list[str] | None:
        """Rooms from ``a`` to ``b`` through linked rooms (fewest doors; ties alphabetical),
        or None when no path exists."""
        rooms = self._state.scene.rooms
        for name in (a, b):
            self._room(name)
        return rooms.path(a, b)


    def room_of(self, object_id: int) -> str | None:
        """The room holding most of the object's footprint (None outside every room)."""
        return self._room_of(self._object(object_id))

    def level_of(self, object_id: int) -> str:
        """``furniture`` or ``item`` (a ``level`` attribute overrides what the label says)."""
        return level_of(self._object(object_id))

    def room_contents(self, room: str, *, label: str | None = None,
                      status: Any = LIVE_STATUSES) -> list[TrackedObject]:
        """Objects whose footprint lies mostly in ``room``, by id."""
        name = self._room(room)
        r = self._state.scene.rooms.get(name)
        xs = [p[0] for p in r.polygon]
        ys = [p[1] for p in r.polygon]
        z0, z1 = r.z_range if r.z_range is not None else (-1e9, 1e9)
        accept = self._filter(label, status)
        objects = self._state.objects
        return [self._view(objects[oid]) for oid in self._state.indexes.grid.within_box(
                    (min(xs), min(ys), z0), (max(xs), max(ys), z1))
                if accept(objects[oid]) and self._room_of(objects[oid]) == name]

    def relations(self, object_id: int) -> list[RelationInfo]:
        """Every relation the object is part of: on, under, in, contains, next_to, near
        (only published, present objects take part), strongest first."""
        obj = self._object(object_id)
        index = self._state.scene.relations
        if obj.id not in index:
            return []
        hidden = self._hidden()
        objects = self._state.objects

        def since(r: Any) -> float:  # it holds since both settled where they are
            return max(objects[r.subject].place_t, objects[r.object].place_t)

        out = [RelationInfo(r.subject, r.relation, r.object, r.confidence, since(r))
               for r in index.relations_of(obj.id)
               if r.subject not in hidden and r.object not in hidden]
        return sorted(out, key=lambda r: (-r.confidence, r.subject, r.relation, r.object))

    def related(self, object_id: int, relation: str = "on") -> list[TrackedObject]:
        """What stands in ``relation`` to the object: ``related(table, "on")`` is what is on
        the table; ``related(drawer, "in")`` what is in the drawer. Strongest first."""
        obj = self._object(object_id)
        if relation not in RELATIONS:
            raise InvalidInput(f"relation must be one of {', '.join(RELATIONS)}, "
                               f"got {relation!r}")
        index = self._state.scene.relations
        if obj.id not in index:
            return []
        hidden = self._hidden()
        objects = self._state.objects
        return [self._view(objects[oid]) for _, oid in index.subjects(relation, obj.id)
                if oid not in hidden and oid in objects]

    def anchors(self) -> list[TrackedObject]:
        """Landmarks marked ``anchor=True`` with :meth:`ObjectMemory.set_attributes`."""
        return [self._view(o) for o in self._visible() if o.attributes.get("anchor") is True]

    def describe(self, object_id: int) -> str:
        """One honest line: label (and color), what it is on or in, its room, when it was last
        seen — worded by its trust state ("is on the table" only when confirmed)."""
        obj = self._object(object_id)
        now = self._state.now or 0.0
        status = status_of(obj, now, self._config)
        where = []
        support = [r for r in self.relations(obj.id)
                   if r.subject == obj.id and r.relation in ("on", "in", "under")]
        if support:
            r = support[0]
            other = self._state.objects[r.object]
            where.append(f"{r.relation} the {sanitize(other.label)} (#{other.id})")
        room = self._room_of(obj)
        if room is not None:
            where.append(f"in the {sanitize(room)}")
        if not where:
            where.append(f"at {place_text(obj.center)}")
        color = obj.attributes.get("color")
        named = obj if not isinstance(color, str) else relabelled(obj, f"{color} {obj.label}")
        return hedged_sentence(named, status, now, where=" ".join(where))

