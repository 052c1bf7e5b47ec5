"""The scene graph as part of a memory's state: rooms (from records) and relations (derived).

Rooms are defined and connected by records (``ROOM_DEFINED``, ``ROOMS_CONNECTED``). Relations
are a pure function of the objects' settled boxes — their place and the size they had when they
settled there — and are maintained incrementally as objects appear, move, are corrected, lost,
reacquired or forgotten. Each change is kept in ``pending`` so the memory can record it as a
``RELATION`` event in the commit that caused it (apply ignores those events: the relation index
rebuilds itself from the objects, and tests check it equals the incremental one).

On open the index is built *lazily* (:meth:`SceneState.rebuild_lazily`): from the objects as
they were opened, the first time anything needs it — a relation query, or the first event a
memory applies (``apply`` calls :meth:`SceneState.ensure_built` before any event: events are
the only records that change what relations are computed from — an object's settled box, its
label, attributes, promotion and loss), so the index built later is the one an eager build at
open would have given, and every change after it is recorded as before.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import TYPE_CHECKING

from locimem.gcpause import gc_paused
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
        self._relations = RelationIndex(relations)
        # the live objects the index is still to be built from (rebuild_lazily), or None
        self._unbuilt: Iterable[ObjectState] | None = None
        self.pending: list[RelationChange] = []
        self.deferred = False  # a replay: relations are built once, by rebuild, at its end

    @property
    def relations(self) -> RelationIndex:
        """The relation index over the live objects (built now if it was left to build)."""
        if self._unbuilt is not None:
            self.ensure_built()
        return self._relations

    @relations.setter
    def relations(self, index: RelationIndex) -> None:
        self._relations = index
        self._unbuilt = None

    @property
    def built(self) -> bool:
        """Whether the relation index is built (not left to :meth:`rebuild_lazily`)."""
        return self._unbuilt is None

    def ensure_built(self) -> None:
        """Build the index now if :meth:`rebuild_lazily` left it to build (before anything
        changes the objects it is built from)."""
        objects = self._unbuilt
        if objects is None:
            return
        self._unbuilt = None
        with gc_paused():  # it makes objects by the thousand and frees none (as on open)
            self._relations = _built(objects, self._relations.config)

    def warm(self) -> None:
        """Build the index and the grid its updates search (:meth:`ensure_built` leaves the
        grid to the first update): what a writable memory's open builds before the scans."""
        self.ensure_built()
        with gc_paused():
            self._relations.ensure_grid()

    def place(self, obj: ObjectState) -> None:
        """(Re)index an object at its settled box."""
        if self.deferred:
            return
        # the box from the state's own values, checked when they were recorded (as on open)
        changes = self.relations.update_box(
            obj.id, Box.trusted(obj.place, obj.place_size, level_of(obj), role_of(obj)))
        self.pending.extend(c for c in changes if c.kind != "changed")

    def remove(self, object_id: int) -> None:
        if not self.deferred and object_id in self.relations:
            self.pending.extend(self.relations.remove(object_id))

    def rebuild(self, objects: Iterable[ObjectState]) -> None:
        """Index every live object from scratch, as if placed one by one in the order they
        settled (in bulk: :meth:`RelationIndex.built`; their boxes were checked when they
        were recorded)."""
        self._unbuilt = None
        self._relations = _built(objects, self._relations.config)
        self.pending = []
        self.deferred = False

    def rebuild_lazily(self, objects: Iterable[ObjectState]) -> None:
        """:meth:`rebuild` from ``objects`` — a live view, such as the state's
        ``objects.values()``, iterated when the index is first needed (see the module docs):
        an open that asks no relation question never builds it. The objects must not change
        before then but through ``apply``, which builds it first."""
        self._unbuilt = objects
        self.pending = []
        self.deferred = False

    def drain(self) -> list[RelationChange]:
        """The recordable relation changes since the last drain (and forget the rest)."""
        out = [c for c in self.pending if c.relation in RECORDED_RELATIONS]
        self.pending = []
        return out


def _built(objects: Iterable[ObjectState], config: RelationConfig) -> RelationIndex:
    """The index of every live object, as if placed one by one in the order they settled."""
    live = sorted((o for o in objects if o.promoted and not o.lost),
                  key=lambda o: (o.place_t, o.id))
    return RelationIndex.built(
        ((o.id, Box.trusted(o.place, o.place_size, level_of(o), role_of(o))) for o in live),
        config)
