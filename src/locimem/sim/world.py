"""A seeded home: rooms in a row joined by doors, furniture along the walls and in the middle,
small objects placed on the furniture's surfaces, each with a true id, label and embedding.

Frames and units: map frame, metres, z up; the floor is z = 0. Rooms are laid out along +x,
each ``ROOM_DEPTH_M`` deep in y, and share a wall with a door with their neighbour. Every
solid thing (walls, floor, ceiling, furniture parts, objects) is an axis-aligned :class:`Box`,
which is what the depth renderer (:mod:`locimem.sim.render`) ray-casts.

Nothing here reads global random state: :func:`build_world` takes a seed and draws everything
from ``numpy.random.default_rng(seed)``.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

import numpy as np

Vec3 = tuple[float, float, float]

ROOM_DEPTH_M = 4.0
WALL_THICKNESS_M = 0.1
WALL_HEIGHT_M = 2.5
DOOR_WIDTH_M = 1.0
CAMERA_HEIGHT_M = 1.3
STANDOFF_M = 1.6  # how far in front of a piece of furniture the robot stands to look at it
EMBEDDING_DIM = 16

# Box extents (dx, dy, dz) in metres of each label the simulated detector knows.
LABEL_SIZES: dict[str, Vec3] = {
    "cup": (0.08, 0.08, 0.10),
    "mug": (0.11, 0.08, 0.10),
    "glass": (0.07, 0.07, 0.12),
    "bottle": (0.07, 0.07, 0.26),
    "vase": (0.12, 0.12, 0.25),
    "bowl": (0.16, 0.16, 0.07),
    "plate": (0.24, 0.24, 0.03),
    "apple": (0.08, 0.08, 0.08),
    "orange": (0.08, 0.08, 0.08),
    "remote": (0.05, 0.18, 0.03),
    "phone": (0.08, 0.15, 0.02),
    "book": (0.16, 0.23, 0.04),
    "notebook": (0.15, 0.21, 0.02),
    "laptop": (0.33, 0.23, 0.03),
    "keyboard": (0.44, 0.14, 0.03),
    "plant": (0.20, 0.20, 0.35),
    "candle": (0.07, 0.07, 0.10),
    "clock": (0.20, 0.06, 0.20),
    "chair": (0.45, 0.45, 0.90),
    "stool": (0.35, 0.35, 0.65),
}
# The labels of the first worlds, in the order their class directions and a false positive's
# label are drawn. Labels added later (:data:`LATER_LABEL_SIZES`) take their directions from
# a stream of their own, so that every earlier day is drawn exactly as it was.
FIRST_LABELS: tuple[str, ...] = tuple(sorted(LABEL_SIZES))
LATER_LABEL_SIZES: dict[str, Vec3] = {
    "keys": (0.06, 0.08, 0.02),
    "mouse": (0.06, 0.11, 0.04),
    "basket": (0.35, 0.25, 0.25),
}
LABEL_SIZES.update(LATER_LABEL_SIZES)

# What each room's surfaces tend to hold.
ROOM_VOCABULARY: dict[str, tuple[str, ...]] = {
    "kitchen": ("cup", "mug", "glass", "bottle", "bowl", "plate", "apple", "orange"),
    "living": ("remote", "phone", "book", "vase", "plant", "candle", "cup", "clock"),
    "office": ("laptop", "keyboard", "notebook", "book", "mug", "phone", "plant"),
    "bedroom": ("book", "phone", "clock", "glass", "candle", "notebook"),
}


@dataclass(frozen=True, slots=True)
class Box:
    """An axis-aligned box, map frame, metres: ``min_m`` and ``max_m`` are opposite corners."""

    min_m: Vec3
    max_m: Vec3

    @staticmethod
    def around(center: Sequence[float], size: Sequence[float]) -> Box:
        c, s = np.asarray(center, dtype=float), np.asarray(size, dtype=float) / 2.0
        return Box(tuple((c - s).tolist()), tuple((c + s).tolist()))

    @property
    def center_m(self) -> Vec3:
        return tuple((a + b) / 2.0 for a, b in zip(self.min_m, self.max_m, strict=True))  # type: ignore[return-value]


@dataclass(frozen=True, slots=True)
class Room:
    """A rectangle of floor, ``min_xy`` to ``max_xy`` (metres, map frame), inside the walls."""

    name: str
    min_xy: tuple[float, float]
    max_xy: tuple[float, float]

    @property
    def center_m(self) -> Vec3:
        return ((self.min_xy[0] + self.max_xy[0]) / 2, (self.min_xy[1] + self.max_xy[1]) / 2,
                CAMERA_HEIGHT_M)

    def contains(self, point: Sequence[float]) -> bool:
        return (self.min_xy[0] <= point[0] <= self.max_xy[0]
                and self.min_xy[1] <= point[1] <= self.max_xy[1])


@dataclass(frozen=True, slots=True)
class Surface:
    """A horizontal rectangle things can rest on: top at ``z_m``, from ``min_xy`` to
    ``max_xy`` (metres, map frame). ``id`` is unique in the world."""

    id: int
    furniture: str
    z_m: float
    min_xy: tuple[float, float]
    max_xy: tuple[float, float]


@dataclass(frozen=True, slots=True)
class Furniture:
    """A table, counter, shelf, desk, ...: the boxes it is drawn with, its surfaces, and where
    the robot stands (``viewpoint_m``) and looks (``target_m``) to see them."""

    name: str  # "kitchen/table"
    kind: str
    room: str
    parts: tuple[Box, ...]
    surfaces: tuple[Surface, ...]
    viewpoint_m: Vec3
    target_m: Vec3


@dataclass(frozen=True, slots=True)
class ObjectSpec:
    """One true object: its id, true label, box size (metres) and appearance embedding (a
    read-only unit vector of ``EMBEDDING_DIM`` floats)."""

    id: int
    label: str
    size_m: Vec3
    embedding: np.ndarray = field(compare=False)


@dataclass(frozen=True)
class World:
    """The static home plus its initial objects (``placements``: id -> (surface id, centre))."""

    rooms: tuple[Room, ...]
    furniture: tuple[Furniture, ...]
    structure: tuple[Box, ...]  # walls, floor, ceiling
    doors: tuple[Vec3, ...]  # door centres (camera height) between room i and i + 1
    objects: dict[int, ObjectSpec]
    placements: dict[int, tuple[int, Vec3]]
    class_embeddings: dict[str, np.ndarray] = field(compare=False)

    def room(self, name: str) -> Room:
        for r in self.rooms:
            if r.name == name:
                return r
        raise KeyError(f"no room {name!r}; rooms are {[r.name for r in self.rooms]}")

    def room_of(self, point: Sequence[float]) -> str | None:
        for r in self.rooms:
            if r.contains(point):
                return r.name
        return None

    def furniture_named(self, name: str) -> Furniture:
        for f in self.furniture:
            if f.name == name:
                return f
        raise KeyError(f"no furniture {name!r}")

    def furniture_in(self, room: str) -> list[Furniture]:
        return [f for f in self.furniture if f.room == room]

    def surface(self, surface_id: int) -> Surface:
        return self._surfaces[surface_id]

    @property
    def _surfaces(self) -> dict[int, Surface]:
        return {s.id: s for f in self.furniture for s in f.surfaces}

    def surfaces_in(self, room: str) -> list[Surface]:
        return [s for f in self.furniture_in(room) for s in f.surfaces]

    def static_boxes(self) -> list[Box]:
        return [*self.structure, *(p for f in self.furniture for p in f.parts)]


# -- building -----------------------------------------------------------------------------------
def unit(v: np.ndarray) -> np.ndarray:
    return v / np.linalg.norm(v)


def make_embedding(rng: np.random.Generator, class_vec: np.ndarray,
                   instance_weight: float = 0.8) -> np.ndarray:
    """An instance embedding: its class direction plus an instance direction (two cups look
    alike, cosine about 0.6; one cup against itself, about 1), normalised, read-only."""
    vec = unit(class_vec + instance_weight * unit(rng.normal(size=EMBEDDING_DIM)))
    vec.setflags(write=False)
    return vec


def _table(room: str, name: str, kind: str, x0: float, y0: float, dx: float, dy: float,
           height: float, facing: tuple[float, float], sid: int) -> Furniture:
    top = Box((x0, y0, height - 0.04), (x0 + dx, y0 + dy, height))
    leg = 0.05
    legs = tuple(
        Box((x, y, 0.0), (x + leg, y + leg, height - 0.04))
        for x in (x0, x0 + dx - leg) for y in (y0, y0 + dy - leg)
    )
    surface = Surface(sid, f"{room}/{name}", height, (x0 + 0.04, y0 + 0.04),
                      (x0 + dx - 0.04, y0 + dy - 0.04))
    return _furniture(room, name, kind, (top, *legs), (surface,), facing,
                      (x0 + dx / 2, y0 + dy / 2, height))


def _counter(room: str, name: str, x0: float, y0: float, dx: float, dy: float,
             height: float, facing: tuple[float, float], sid: int) -> Furniture:
    body = Box((x0, y0, 0.0), (x0 + dx, y0 + dy, height))
    surface = Surface(sid, f"{room}/{name}", height, (x0 + 0.05, y0 + 0.05),
                      (x0 + dx - 0.05, y0 + dy - 0.05))
    return _furniture(room, name, "counter", (body,), (surface,), facing,
                      (x0 + dx / 2, y0 + dy / 2, height))


def _shelf(room: str, name: str, x0: float, y0: float, dx: float, dy: float,
           facing: tuple[float, float], sid: int, levels: Sequence[float] = (0.45, 0.85, 1.25),
           height: float = 1.6) -> Furniture:
    """A bookcase open towards ``facing``: sides, back, top and boards at ``levels``."""
    t = 0.02
    parts = [Box((x0, y0, 0.0), (x0 + dx, y0 + dy, t)), Box((x0, y0, height - t),
                                                            (x0 + dx, y0 + dy, height))]
    fx, fy = facing
    if fx == 0:  # open towards +-y: sides at x0 and x0 + dx, back on the far y side
        parts += [Box((x0, y0, 0.0), (x0 + t, y0 + dy, height)),
                  Box((x0 + dx - t, y0, 0.0), (x0 + dx, y0 + dy, height))]
        back_y = y0 if fy > 0 else y0 + dy - t
        parts.append(Box((x0, back_y, 0.0), (x0 + dx, back_y + t, height)))
    else:
        parts += [Box((x0, y0, 0.0), (x0 + dx, y0 + t, height)),
                  Box((x0, y0 + dy - t, 0.0), (x0 + dx, y0 + dy, height))]
        back_x = x0 if fx > 0 else x0 + dx - t
        parts.append(Box((back_x, y0, 0.0), (back_x + t, y0 + dy, height)))
    surfaces = []
    for k, z in enumerate(levels):
        parts.append(Box((x0, y0, z - t), (x0 + dx, y0 + dy, z)))
        surfaces.append(Surface(sid + k, f"{room}/{name}", z, (x0 + 0.04, y0 + 0.04),
                                (x0 + dx - 0.04, y0 + dy - 0.04)))
    return _furniture(room, name, "shelf", tuple(parts), tuple(surfaces), facing,
                      (x0 + dx / 2, y0 + dy / 2, (levels[0] + levels[-1]) / 2 + 0.1))


def _furniture(room: str, name: str, kind: str, parts: tuple[Box, ...],
               surfaces: tuple[Surface, ...], facing: tuple[float, float], top: Vec3
               ) -> Furniture:
    viewpoint = (top[0] + facing[0] * STANDOFF_M, top[1] + facing[1] * STANDOFF_M,
                 CAMERA_HEIGHT_M)
    return Furniture(f"{room}/{name}", kind, room, parts, surfaces, viewpoint, top)


def _room_furniture(room: Room, rng: np.random.Generator, sid: int) -> list[Furniture]:
    """A template per room kind, jittered by ``rng``; surfaces numbered from ``sid``."""
    (x0, y0), (x1, y1) = room.min_xy, room.max_xy
    w = x1 - x0
    j = float(rng.uniform(-0.3, 0.3))
    name = room.name
    if name == "kitchen":
        return [
            _counter(name, "counter", x0 + 0.6 + j, y1 - 0.6, 2.2, 0.6, 0.9, (0, -1), sid),
            _table(name, "table", "table", x0 + w / 2 - 0.6 + j, y0 + 0.9, 1.2, 0.8, 0.75,
                   (0, 1), sid + 1),
            _shelf(name, "shelf", x0, y0 + 1.2 + j / 2, 0.35, 1.0, (1, 0), sid + 2),
        ]
    if name == "living":
        return [
            _table(name, "coffee_table", "table", x0 + w / 2 - 0.5 + j, y0 + 1.5, 1.0, 0.6,
                   0.45, (0, -1), sid),
            _shelf(name, "bookcase", x0 + 1.0 + j, y1 - 0.35, 1.2, 0.35, (0, -1), sid + 1,
                   levels=(0.45, 0.85, 1.25, 1.65), height=1.9),
            _table(name, "side_table", "table", x1 - 0.6, y0 + 2.6 + j / 2, 0.5, 0.5, 0.6,
                   (-1, 0), sid + 5),
        ]
    if name == "office":
        return [
            _table(name, "desk", "table", x0 + 1.0 + j, y1 - 0.75, 1.6, 0.7, 0.75, (0, -1),
                   sid),
            _shelf(name, "shelf", x1 - 0.35, y0 + 0.8 + j / 2, 0.35, 1.0, (-1, 0), sid + 1),
        ]
    return [  # bedroom and anything else
        _counter(name, "dresser", x0 + 1.0 + j, y1 - 0.55, 1.4, 0.5, 0.8, (0, -1), sid),
        _table(name, "nightstand", "table", x1 - 0.6, y0 + 0.6, 0.45, 0.45, 0.55, (-1, 0),
               sid + 1),
    ]


def _walls(rooms: Sequence[Room]) -> tuple[list[Box], list[Vec3]]:
    t, h = WALL_THICKNESS_M, WALL_HEIGHT_M
    x_start, x_end = rooms[0].min_xy[0], rooms[-1].max_xy[0]
    boxes = [
        Box((x_start - t, -t, -0.05), (x_end + t, ROOM_DEPTH_M + t, 0.0)),  # floor
        Box((x_start - t, -t, h), (x_end + t, ROOM_DEPTH_M + t, h + 0.05)),  # ceiling
        Box((x_start - t, -t, 0.0), (x_end + t, 0.0, h)),  # south
        Box((x_start - t, ROOM_DEPTH_M, 0.0), (x_end + t, ROOM_DEPTH_M + t, h)),  # north
        Box((x_start - t, 0.0, 0.0), (x_start, ROOM_DEPTH_M, h)),  # west
        Box((x_end, 0.0, 0.0), (x_end + t, ROOM_DEPTH_M, h)),  # east
    ]
    doors = []
    door_y = ROOM_DEPTH_M / 2
    for a in rooms[:-1]:
        x = a.max_xy[0]
        lo, hi = door_y - DOOR_WIDTH_M / 2, door_y + DOOR_WIDTH_M / 2
        boxes.append(Box((x, 0.0, 0.0), (x + t, lo, h)))
        boxes.append(Box((x, hi, 0.0), (x + t, ROOM_DEPTH_M, h)))
        boxes.append(Box((x, lo, 2.1), (x + t, hi, h)))  # lintel
        doors.append((x + t / 2, door_y, CAMERA_HEIGHT_M))
    return boxes, doors


def place_on(surface: Surface, size: Sequence[float], rng: np.random.Generator,
             occupied: Sequence[tuple[Vec3, Vec3]], gap_m: float = 0.03, tries: int = 60,
             near: Sequence[float] | None = None, near_radius_m: float = 0.0) -> Vec3 | None:
    """A centre for an object of ``size`` resting on ``surface`` whose footprint keeps
    ``gap_m`` from every ``(centre, size)`` in ``occupied``; optionally within
    ``near_radius_m`` of ``near`` (xy). None when nothing fits in ``tries`` draws."""
    sx, sy, sz = size
    lo = np.array(surface.min_xy) + np.array([sx, sy]) / 2
    hi = np.array(surface.max_xy) - np.array([sx, sy]) / 2
    if np.any(hi < lo):
        return None
    for _ in range(tries):
        if near is not None:
            ang = rng.uniform(0, 2 * np.pi)
            r = rng.uniform(0.5, 1.0) * near_radius_m
            xy = np.array(near[:2]) + r * np.array([np.cos(ang), np.sin(ang)])
            if np.any(xy < lo) or np.any(xy > hi):
                continue
        else:
            xy = rng.uniform(lo, hi)
        ok = True
        for c, s in occupied:
            if abs(c[2] - (surface.z_m + sz / 2)) > (s[2] + sz) / 2:
                continue  # a different level
            if (abs(xy[0] - c[0]) < (sx + s[0]) / 2 + gap_m
                    and abs(xy[1] - c[1]) < (sy + s[1]) / 2 + gap_m):
                ok = False
                break
        if ok:
            return (float(xy[0]), float(xy[1]), surface.z_m + sz / 2)
    return None


def build_world(
    seed: int,
    rooms: Sequence[str] = ("kitchen", "living", "office"),
    objects_per_surface: tuple[int, int] = (1, 3),
    room_width_m: float = 5.0,
    chairs: bool = True,
    bare: Sequence[str] = (),
) -> World:
    """A home of ``rooms`` (each ``room_width_m`` x ``ROOM_DEPTH_M``), its furniture, and
    objects drawn from each room's vocabulary: ``objects_per_surface`` (low, high inclusive)
    on each surface except those of the furniture named in ``bare`` ("kitchen/table"), plus
    two chairs by the kitchen table. Deterministic for a seed."""
    rng = np.random.default_rng(seed)
    room_list = []
    for i, name in enumerate(rooms):
        x0 = i * (room_width_m + WALL_THICKNESS_M)
        room_list.append(Room(name, (x0, 0.0), (x0 + room_width_m, ROOM_DEPTH_M)))
    furniture: list[Furniture] = []
    sid = 0
    for room in room_list:
        made = _room_furniture(room, rng, sid)
        sid = max(s.id for f in made for s in f.surfaces) + 1
        furniture += made
    structure, doors = _walls(room_list)
    class_embeddings = {label: unit(rng.normal(size=EMBEDDING_DIM)) for label in FIRST_LABELS}
    later = np.random.default_rng(np.random.SeedSequence([seed, 35]))
    class_embeddings.update({label: unit(later.normal(size=EMBEDDING_DIM))
                             for label in sorted(LATER_LABEL_SIZES)})
    for v in class_embeddings.values():
        v.setflags(write=False)

    objects: dict[int, ObjectSpec] = {}
    placements: dict[int, tuple[int, Vec3]] = {}
    occupied: list[tuple[Vec3, Vec3]] = []
    next_id = 1
    for f in furniture:
        vocab = ROOM_VOCABULARY.get(f.room, ROOM_VOCABULARY["bedroom"])
        for s in f.surfaces:
            n = int(rng.integers(objects_per_surface[0], objects_per_surface[1] + 1))
            for _ in range(0 if f.name in bare else n):
                label = str(vocab[int(rng.integers(len(vocab)))])
                size = LABEL_SIZES[label]
                at = place_on(s, size, rng, occupied)
                if at is None:
                    continue
                objects[next_id] = ObjectSpec(next_id, label, size,
                                              make_embedding(rng, class_embeddings[label]))
                placements[next_id] = (s.id, at)
                occupied.append((at, size))
                next_id += 1
    if chairs and "kitchen" in rooms:
        table = next(f for f in furniture if f.name == "kitchen/table")
        top = table.surfaces[0]
        y = (top.min_xy[1] + top.max_xy[1]) / 2
        for label, x in (("chair", top.min_xy[0] - 0.35), ("chair", top.max_xy[0] + 0.35)):
            size = LABEL_SIZES[label]
            at = (x, y, size[2] / 2)
            objects[next_id] = ObjectSpec(next_id, label, size,
                                          make_embedding(rng, class_embeddings[label]))
            placements[next_id] = (-1, at)  # -1: on the floor
            next_id += 1
    return World(tuple(room_list), tuple(furniture), tuple(structure), tuple(doors), objects,
                 placements, class_embeddings)
