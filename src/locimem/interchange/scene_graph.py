"""The scene graph as plain nodes and edges: what the Cypher script and NetworkX graph both hold.

One model, two renderings (:mod:`locimem.interchange.cypher`, :mod:`locimem.interchange.graph`),
so that a graph database and a NetworkX graph built from the same memory agree node for node and
edge for edge.

Nodes, each keyed by a ``uid`` that is stable across exports of the same store:

==============  ===========================  ====================================================
kind            uid                          properties
==============  ===========================  ====================================================
``Room``        ``<scope>:room:<name>``      ``scope``, ``name``, ``level`` ("room"),
                                             ``polygon`` (the floor: (x, y) vertices, metres,
                                             map frame, counter-clockwise), ``z_min``, ``z_max``
                                             (metres; absent when the room has no z range)
``Furniture``,  ``<scope>:object:<id>``      ``scope``, ``id``, ``label``, ``level``
``Item``                                     ("furniture" / "item"), ``pose`` (the centre
                                             (x, y, z)), ``box_min``, ``box_max`` (the
                                             axis-aligned box the relations are computed from:
                                             centre -/+ half the size), ``size`` (dx, dy, dz),
                                             ``quat_wxyz`` (orientation w-x-y-z, absent when
                                             unknown), ``status``, ``confidence`` (at the
                                             memory's ``now``), ``first_seen``, ``last_seen``
                                             (seconds, valid time), ``source`` and
                                             ``attributes`` (JSON text)
==============  ===========================  ====================================================

All coordinates are metres in the memory's frame, z up; the graph says which frame that is
(``frame``, ``"map"``, and ``map_epoch``: the memory's frame's map epoch, None when the scope
never named one — :func:`locimem.frames.memory_epoch`). Object ids are the memory's; the scope
in the uid keeps two scopes (two homes, two robots) apart in one database.

Edges (``source -[TYPE]-> target``), at most one of a type between two nodes:

- ``ON``, ``UNDER``, ``IN``, ``NEXT_TO``, ``NEAR`` between objects: exactly
  :meth:`~locimem.query.reader.MemoryReader.relations`, with ``confidence`` (0, 1] and ``since``
  (seconds). ``NEXT_TO`` and ``NEAR`` are symmetric and stored once, from the smaller id: match
  them without an arrow.
- ``CONTAINS``: a room contains the objects whose footprint lies mostly in it
  (:meth:`~locimem.query.reader.MemoryReader.room_of`; ``confidence`` is that share of the
  footprint, at least 0.5, and there is no ``since``), and a container contains what is ``IN``
  it (the memory's derived ``contains``, with the ``IN`` edge's confidence and since).
- ``CONNECTS_TO`` between linked rooms, no properties; symmetric, stored once (alphabetical).

Which objects: confirmed, doubted and lost ones (a lost object keeps its node and last place,
but takes part in no relationship, a room's ``CONTAINS`` included: the memory does not believe
it is there, and :meth:`~locimem.query.reader.MemoryReader.room_contents` leaves it out too),
tentative ones on request, forgotten ones never.
"""

from __future__ import annotations

import json
import math
from dataclasses import dataclass
from typing import Any

from locimem.errors import InvalidInput, LocimemError
from locimem.frames import FRAME_NAME, frame_note, memory_epoch
from locimem.memory import Readable, reader_of
from locimem.model import ObjectStatus, TrackedObject
from locimem.scene.rooms import Room

__all__ = [
    "EDGE_PROPERTIES",
    "EDGE_TYPES",
    "NODE_KINDS",
    "NODE_PROPERTIES",
    "GraphEdge",
    "GraphNode",
    "SceneGraph",
    "object_uid",
    "room_uid",
    "scene_graph",
]

NODE_KINDS = ("Room", "Furniture", "Item")
OBJECT_RELATIONS = ("on", "under", "in", "contains", "next_to", "near")  # the memory's words
EDGE_TYPES = ("CONTAINS", "ON", "IN", "UNDER", "NEXT_TO", "NEAR", "CONNECTS_TO")
# Property name -> type, per node kind, in the order they are written. Types: "string", "int",
# "float", "point3" ((x, y, z) metres), "points2" (a list of (x, y)), "floats" (a list).
_OBJECT_PROPERTIES: dict[str, str] = {
    "uid": "string", "scope": "string", "id": "int", "label": "string", "level": "string",
    "pose": "point3", "box_min": "point3", "box_max": "point3", "size": "floats",
    "quat_wxyz": "floats", "status": "string", "confidence": "float", "first_seen": "float",
    "last_seen": "float", "source": "string", "attributes": "string",
}
NODE_PROPERTIES: dict[str, dict[str, str]] = {
    "Room": {"uid": "string", "scope": "string", "name": "string", "level": "string",
             "polygon": "points2", "z_min": "float", "z_max": "float"},
    "Furniture": _OBJECT_PROPERTIES,
    "Item": _OBJECT_PROPERTIES,
}
EDGE_PROPERTIES: dict[str, dict[str, str]] = {
    **{t: {"confidence": "float", "since": "float"} for t in EDGE_TYPES if t != "CONNECTS_TO"},
    "CONNECTS_TO": {},
}
_EXPORTED = (ObjectStatus.CONFIRMED, ObjectStatus.DOUBTED, ObjectStatus.LOST)
_KIND_OF_LEVEL = {"furniture": "Furniture", "item": "Item"}


@dataclass(frozen=True, slots=True)
class GraphNode:
    """A node: its uid, kind (``Room``, ``Furniture`` or ``Item``) and properties (None-valued
    properties are left out)."""

    uid: str
    kind: str
    properties: dict[str, Any]


@dataclass(frozen=True, slots=True)
class GraphEdge:
    """A directed edge ``source -[type]-> target`` (uids) with its properties."""

    source: str
    type: str
    target: str
    properties: dict[str, Any]


@dataclass(frozen=True, slots=True)
class SceneGraph:
    """The scene graph of one scope: nodes (rooms by name, then objects by id) and edges (in a
    fixed order), with the scope, the memory time (seconds) the confidences were read at, and
    the frame the positions are in (its name, and its map epoch or None)."""

    scope: str
    now: float | None
    nodes: tuple[GraphNode, ...]
    edges: tuple[GraphEdge, ...]
    frame: str = FRAME_NAME
    map_epoch: str | None = None

    @property
    def note(self) -> str:
        """What the positions are in (:func:`locimem.frames.frame_note`)."""
        return frame_note(self.map_epoch, self.frame)

    def node_uids(self, kind: str) -> list[str]:
        """The uids of the nodes of one kind, in order."""
        return [n.uid for n in self.nodes if n.kind == kind]


def room_uid(scope: str, name: str) -> str:
    """``<scope>:room:<name>`` ("home:room:kitchen")."""
    return f"{scope}:room:{name}"


def object_uid(scope: str, object_id: int) -> str:
    """``<scope>:object:<id>`` ("home:object:12"); never equal to a room's uid."""
    return f"{scope}:object:{object_id}"


def scene_graph(memory: Readable, *, include_tentative: bool = False) -> SceneGraph:
    """The memory's scene graph (see the module docstring) as plain nodes and edges.

    ``memory`` is an :class:`~locimem.ObjectMemory` or an ``as_of`` view. Raises
    :class:`InvalidInput` for anything else.
    """
    memory = reader_of(memory)
    if not isinstance(include_tentative, bool):
        raise InvalidInput(f"include_tentative must be a bool, got "
                           f"{type(include_tentative).__name__}")
    scope = memory.scope
    statuses = (*_EXPORTED, ObjectStatus.TENTATIVE) if include_tentative else _EXPORTED
    rooms = memory.rooms()
    objects = memory.objects(status=statuses)

    nodes = [_room_node(scope, r.name, r.polygon, r.z_range) for r in rooms]
    kinds: dict[int, str] = {}
    for obj in objects:
        node = _object_node(scope, obj, memory.level_of(obj.id))
        kinds[obj.id] = node.kind
        nodes.append(node)

    edges: list[GraphEdge] = []
    room_shapes = {r.name: Room(r.name, r.polygon, r.z_range) for r in rooms}
    for obj in objects:  # a room contains what lies mostly in it (and is believed there)
        if obj.status is ObjectStatus.LOST:
            continue
        name = memory.room_of(obj.id)
        if name is not None:
            share = room_shapes[name].footprint_fraction(obj.center, obj.size)
            edges.append(GraphEdge(room_uid(scope, name), "CONTAINS", object_uid(scope, obj.id),
                                   {"confidence": _finite(share, "a room share")}))
    seen: set[tuple[int, str, int]] = set()
    relations = []
    for obj in objects:
        for r in memory.relations(obj.id):
            key = (r.subject, r.relation, r.object)
            if key in seen or r.subject not in kinds or r.object not in kinds:
                continue
            seen.add(key)
            relations.append(r)
    relations.sort(key=lambda r: (OBJECT_RELATIONS.index(r.relation), r.subject, r.object))
    for r in relations:
        edges.append(GraphEdge(object_uid(scope, r.subject), r.relation.upper(),
                               object_uid(scope, r.object),
                               {"confidence": _finite(r.confidence, "a relation confidence"),
                                "since": _finite(r.since, "a relation's since")}))
    for room in rooms:
        for other in room.connected:
            if room.name < other:
                edges.append(GraphEdge(room_uid(scope, room.name), "CONNECTS_TO",
                                       room_uid(scope, other), {}))
    return SceneGraph(scope, memory.now, tuple(nodes), tuple(edges), FRAME_NAME,
                      memory_epoch(memory.state.epochs))


def _room_node(scope: str, name: str, polygon: tuple[tuple[float, float], ...],
               z_range: tuple[float, float] | None) -> GraphNode:
    props: dict[str, Any] = {
        "uid": room_uid(scope, name), "scope": scope, "name": name, "level": "room",
        "polygon": tuple((_finite(x, "a vertex"), _finite(y, "a vertex")) for x, y in polygon),
    }
    if z_range is not None:
        props["z_min"], props["z_max"] = (_finite(z, "a z range") for z in z_range)
    return GraphNode(props["uid"], "Room", props)


def _object_node(scope: str, obj: TrackedObject, level: str) -> GraphNode:
    center = tuple(_finite(c, "a centre") for c in obj.center)
    size = tuple(_finite(s, "a size") for s in obj.size)
    props: dict[str, Any] = {
        "uid": object_uid(scope, obj.id), "scope": scope, "id": obj.id, "label": obj.label,
        "level": level, "pose": center,
        "box_min": tuple(c - s / 2 for c, s in zip(center, size, strict=True)),
        "box_max": tuple(c + s / 2 for c, s in zip(center, size, strict=True)),
        "size": size,
    }
    if obj.orientation is not None:
        props["quat_wxyz"] = tuple(_finite(q, "a quaternion") for q in obj.orientation)
    props.update({
        "status": obj.status.value, "confidence": _finite(obj.confidence, "a confidence"),
        "first_seen": _finite(obj.first_seen, "a time"),
        "last_seen": _finite(obj.last_seen, "a time"),
        "source": obj.source,
        "attributes": json.dumps(obj.attributes, sort_keys=True, ensure_ascii=False,
                                 default=str),
    })
    return GraphNode(props["uid"], _KIND_OF_LEVEL[level], props)


def _finite(value: Any, what: str) -> float:
    x = float(value)
    if not math.isfinite(x):  # the memory checks its inputs, so this is a damaged store
        raise LocimemError(f"cannot export {what} of {x}: not a finite number")
    return x
