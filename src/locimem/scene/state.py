"""The scene graph as part of a memory's state: rooms (from records) and relations (derived).

Rooms are defined and connected by records (``ROOM_DEFINED``, ``ROOMS_CONNECTED``). Relations
are a pure function of the objects' settled boxes — their place and the size they had when they
settled there — and are maintained incrementally as objects appear, move, are corrected, lost,
reacquired or forgotten. Each change is kept in ``pending`` so the memory can record it as a
``RELATION`` event in the commit that caused it (apply ignores those events: the relation index
rebuilds itself from the objects, and tests check it equals the incremental one).
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import TYPE_CHECKING

from locimem.scene.levels import level_of, role_of
from locimem.scene.relations import Box, RelationChange, RelationConfig, RelationIndex
from locimem.scene.rooms import RoomMap

if TYPE_CHECKING:
    from locimem.model import ObjectState

RECORDED_RELATIONS = ("on", "under", "in", "contains", "next_to")  # "near" is too chatty


class SceneState:
    """Rooms, and the relation index over the live objects."""

    def __init__(self, relations: RelationConfig | None = None) -> None:
        self.rooms = RoomMap()
        self.relations = RelationIndex(relations)
        self.pending: list[RelationChange] = []
        self.deferred = False  # a replay: relations are built once, by rebuild, at its end

    def place(self, obj: ObjectState) -> None:
        """(Re)index an object at its settled box."""
        if self.deferred:
            return
        changes = self.relations.update(obj.id, obj.place, obj.place_size, level_of(obj),
                                        role_of(obj))
        self.pending.extend(c for c in changes if c.kind != "changed")

    def remove(self, object_id: int) -> None:
        if object_id in self.relations and not self.deferred:
            self.pending.extend(self.relations.remove(object_id))

    def rebuild(self, objects: Iterable[ObjectState]) -> None:
        """Index every live object from scratch, as if placed one by one in the order they
        settled (in bulk: :meth:`RelationIndex.built`; their boxes were checked when they
        were recorded)."""
        live = sorted((o for o in objects if o.promoted and not o.lost),
                      key=lambda o: (o.place_t, o.id))
        self.relations = RelationIndex.built(
            ((o.id, Box.trusted(o.place, o.place_size, level_of(o), role_of(o))) for o in live),
            self.relations.config)
        self.pending = []
        self.deferred = False

    def drain(self) -> list[RelationChange]:
        """The recordable relation changes since the last drain (and forget the rest)."""
        out = [c for c in self.pending if c.relation in RECORDED_RELATIONS]
        self.pending = []
        return out
