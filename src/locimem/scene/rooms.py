"""Rooms: named floor polygons, which room a point or an object is in, and paths between rooms.

Frames and units: polygons are (x, y) vertices in metres in the map frame (z up); a room may
also carry a z range (floor to ceiling, metres) so stacked floors of a building can share x-y.
A room's polygon must be simple (no self-intersection), with at least 3 distinct vertices and
a positive area; it is stored counter-clockwise without a repeated closing vertex.

:class:`RoomMap` holds the rooms of one building: point lookup and footprint assignment go
through a grid of room bounding boxes, so they cost the rooms near the point, not all rooms;
connectivity is an undirected graph whose edges are doors (``connect``), optionally found
from shared walls (``connect_adjacent``). ``path`` is the shortest path by door count, and
among equally short paths the one whose room names come first in alphabetical order.
"""

from __future__ import annotations

import math
from collections import deque
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from locimem.check import check_coordinate, check_float, check_label, check_size, check_vec
from locimem.errors import InvalidInput, NotFound
from locimem.index.boxgrid import BoxGrid

__all__ = ["MAX_VERTICES", "Room", "RoomAssignment", "RoomMap", "polygon_area"]

Vec2 = tuple[float, float]
MAX_VERTICES = 10_000
_EPS = 1e-9


# --------------------------------------------------------------------------------------------
# polygon geometry (pure functions over vertex tuples)


def polygon_area(polygon: Sequence[Vec2]) -> float:
    """Signed area (shoelace), m²: positive for counter-clockwise vertices."""
    s = 0.0
    n = len(polygon)
    for i in range(n):
        x0, y0 = polygon[i]
        x1, y1 = polygon[(i + 1) % n]
        s += x0 * y1 - x1 * y0
    return 0.5 * s


def _orient(a: Vec2, b: Vec2, c: Vec2) -> float:
    return (b[0] - a[0]) * (c[1] - a[1]) - (b[1] - a[1]) * (c[0] - a[0])


def _on_segment(a: Vec2, b: Vec2, p: Vec2, tol: float = _EPS) -> bool:
    """p lies on the closed segment ab (within ``tol`` metres)."""
    dx, dy = b[0] - a[0], b[1] - a[1]
    length2 = dx * dx + dy * dy
    if length2 == 0.0:
        return math.dist(a, p) <= tol
    t = ((p[0] - a[0]) * dx + (p[1] - a[1]) * dy) / length2
    t = min(1.0, max(0.0, t))
    return math.dist((a[0] + t * dx, a[1] + t * dy), p) <= tol


def _segments_touch(a: Vec2, b: Vec2, c: Vec2, d: Vec2) -> bool:
    """Closed segments ab and cd share at least one point."""
    o1, o2 = _orient(a, b, c), _orient(a, b, d)
    o3, o4 = _orient(c, d, a), _orient(c, d, b)
    if ((o1 > 0 > o2) or (o1 < 0 < o2)) and ((o3 > 0 > o4) or (o3 < 0 < o4)):
        return True
    return (_on_segment(a, b, c) or _on_segment(a, b, d) or _on_segment(c, d, a)
            or _on_segment(c, d, b))


def _first_self_intersection(poly: Sequence[Vec2]) -> tuple[int, int] | None:
    """Indices (i, j) of two edges that intersect improperly, or None if the polygon is
    simple. Edges are swept in order of their smallest x, so typical polygons cost far less
    than all pairs."""
    n = len(poly)
    edges = [(min(poly[i][0], poly[(i + 1) % n][0]), max(poly[i][0], poly[(i + 1) % n][0]), i)
             for i in range(n)]
    edges.sort()
    active: list[tuple[float, int]] = []  # (xmax, edge index)
    for xmin, xmax, i in edges:
        active = [(xm, j) for xm, j in active if xm >= xmin]
        a, b = poly[i], poly[(i + 1) % n]
        for _, j in active:
            c, d = poly[j], poly[(j + 1) % n]
            if (j + 1) % n == i or (i + 1) % n == j:  # neighbours share one vertex
                shared, other_i, other_j = (a, b, c) if (j + 1) % n == i else (b, a, d)
                # they may only meet there: the far ends must not lie on the other edge
                if _on_segment(shared, other_i, other_j) or _on_segment(shared, other_j, other_i):
                    return (min(i, j), max(i, j))
                continue
            if _segments_touch(a, b, c, d):
                return (min(i, j), max(i, j))
        active.append((xmax, i))
    return None


def _contains(poly: Sequence[Vec2], p: Vec2) -> bool:
    """Point in polygon, boundary included (crossing number)."""
    x, y = p
    inside = False
    n = len(poly)
    j = n - 1
    for i in range(n):
        xi, yi = poly[i]
        xj, yj = poly[j]
        if _on_segment((xi, yi), (xj, yj), p):
            return True
        if (yi > y) != (yj > y):
            x_cross = xi + (y - yi) * (xj - xi) / (yj - yi)
            if x < x_cross:
                inside = not inside
        j = i
    return inside


def _clip_to_rect(poly: Sequence[Vec2], lo: Vec2, hi: Vec2) -> list[Vec2]:
    """Sutherland-Hodgman: the part of ``poly`` inside the rectangle [lo, hi]. The result may
    have degenerate bridges when the room is concave, but its area is exact."""
    out = list(poly)
    for axis, bound, keep_above in ((0, lo[0], True), (0, hi[0], False),
                                    (1, lo[1], True), (1, hi[1], False)):
        if not out:
            break
        src, out = out, []
        for k in range(len(src)):
            cur, nxt = src[k], src[(k + 1) % len(src)]
            cur_in = cur[axis] >= bound if keep_above else cur[axis] <= bound
            nxt_in = nxt[axis] >= bound if keep_above else nxt[axis] <= bound
            if cur_in:
                out.append(cur)
            if cur_in != nxt_in:
                t = (bound - cur[axis]) / (nxt[axis] - cur[axis])
                out.append((cur[0] + t * (nxt[0] - cur[0]), cur[1] + t * (nxt[1] - cur[1])))
    return out


def _shared_length(p: Sequence[Vec2], q: Sequence[Vec2], tol: float) -> float:
    """Total length (m) of boundary of ``p`` that runs along boundary of ``q`` within ``tol``
    metres (parallel edges, overlapping along their direction)."""
    total = 0.0
    np_, nq = len(p), len(q)
    for i in range(np_):
        a, b = p[i], p[(i + 1) % np_]
        dx, dy = b[0] - a[0], b[1] - a[1]
        length = math.hypot(dx, dy)
        ux, uy = dx / length, dy / length
        for j in range(nq):
            c, d = q[j], q[(j + 1) % nq]
            # both ends of cd within tol of the line through ab
            dc = abs((c[0] - a[0]) * uy - (c[1] - a[1]) * ux)
            dd = abs((d[0] - a[0]) * uy - (d[1] - a[1]) * ux)
            if dc > tol or dd > tol:
                continue
            tc = (c[0] - a[0]) * ux + (c[1] - a[1]) * uy
            td = (d[0] - a[0]) * ux + (d[1] - a[1]) * uy
            overlap = min(length, max(tc, td)) - max(0.0, min(tc, td))
            if overlap > 0.0:
                total += overlap
    return total


# --------------------------------------------------------------------------------------------
# rooms


def _check_polygon(value: Any, name: str) -> tuple[Vec2, ...]:
    if isinstance(value, np.ndarray):
        if value.ndim != 2 or value.shape[1] != 2:
            raise InvalidInput(f"{name} must be an (n, 2) array of (x, y) vertices, "
                               f"got shape {value.shape}")
        value = value.tolist()
    if isinstance(value, (str, bytes)) or not isinstance(value, Sequence):
        raise InvalidInput(f"{name} must be a sequence of (x, y) vertices, got "
                           f"{type(value).__name__}")
    pts: list[Vec2] = []
    for i, v in enumerate(value):
        if isinstance(v, (str, bytes)) or not isinstance(v, (Sequence, np.ndarray)) \
                or len(v) != 2:
            raise InvalidInput(f"{name}[{i}] must be an (x, y) pair, got {v!r}")
        pts.append((check_coordinate(v[0], f"{name}[{i}].x"),
                    check_coordinate(v[1], f"{name}[{i}].y")))
    if len(pts) >= 2 and pts[0] == pts[-1]:
        pts.pop()  # an explicitly closed ring
    if len(pts) < 3:
        raise InvalidInput(f"{name} must have at least 3 distinct vertices, got {len(pts)}")
    if len(pts) > MAX_VERTICES:
        raise InvalidInput(f"{name} must have at most {MAX_VERTICES} vertices, got {len(pts)}")
    for i in range(len(pts)):
        if pts[i] == pts[(i + 1) % len(pts)]:
            raise InvalidInput(f"{name} repeats vertex {i} ({pts[i][0]}, {pts[i][1]}) "
                               "consecutively; vertices must be distinct")
    area = polygon_area(pts)
    flat = all(abs(_orient(pts[0], pts[1], p)) <= _EPS for p in pts[2:])
    if not flat:
        bad = _first_self_intersection(pts)
        if bad is not None:
            i, j = bad
            raise InvalidInput(f"{name} must be a simple polygon: edge {i} "
                               f"({pts[i]} -> {pts[(i + 1) % len(pts)]}) crosses or touches "
                               f"edge {j} ({pts[j]} -> {pts[(j + 1) % len(pts)]})")
    if abs(area) <= _EPS:
        raise InvalidInput(f"{name} must enclose a positive area, got {abs(area):.3g} m²")
    if area < 0:
        pts.reverse()
    return tuple(pts)


def _check_z_range(value: Any, name: str) -> tuple[float, float] | None:
    if value is None:
        return None
    if isinstance(value, (str, bytes)) or not isinstance(value, (Sequence, np.ndarray)) \
            or len(value) != 2:
        raise InvalidInput(f"{name} must be a (z_min, z_max) pair in metres, got {value!r}")
    lo, hi = check_coordinate(value[0], f"{name}[0]"), check_coordinate(value[1], f"{name}[1]")
    if not lo < hi:
        raise InvalidInput(f"{name} must have z_min < z_max, got ({lo}, {hi})")
    return (lo, hi)


@dataclass(frozen=True, slots=True)
class Room:
    """A named floor region.

    Args:
        name: the room's name (normalised like a label: stripped, lower-case).
        polygon: (x, y) vertices in metres, map frame; at least 3, simple, positive area.
            Stored counter-clockwise, without a repeated closing vertex.
        z_range: optional (z_min, z_max) in metres; a point is in the room only if its z lies
            in this range (when the point has a z).
    """

    name: str
    polygon: tuple[Vec2, ...]
    z_range: tuple[float, float] | None = None
    area_m2: float = field(init=False, compare=False)
    bbox: tuple[float, float, float, float] = field(init=False, compare=False)

    def __post_init__(self) -> None:
        set_ = object.__setattr__
        set_(self, "name", check_label(self.name, "room name"))
        poly = _check_polygon(self.polygon, f"polygon of room {self.name!r}")
        set_(self, "polygon", poly)
        set_(self, "z_range", _check_z_range(self.z_range, f"z_range of room {self.name!r}"))
        set_(self, "area_m2", polygon_area(poly))
        xs, ys = [p[0] for p in poly], [p[1] for p in poly]
        set_(self, "bbox", (min(xs), min(ys), max(xs), max(ys)))

    def contains(self, point: Sequence[float]) -> bool:
        """True when ``point`` ((x, y) or (x, y, z), metres, map frame) is inside the room or
        on its boundary, and within its z range when both have one."""
        if len(point) >= 3 and self.z_range is not None \
                and not self.z_range[0] <= point[2] <= self.z_range[1]:
            return False
        x0, y0, x1, y1 = self.bbox
        if not (x0 <= point[0] <= x1 and y0 <= point[1] <= y1):
            return False
        return _contains(self.polygon, (float(point[0]), float(point[1])))

    def footprint_fraction(self, center: Sequence[float], size: Sequence[float]) -> float:
        """Fraction in [0, 1] of an axis-aligned footprint (centre (x, y[, z]), extents
        (dx, dy[, dz]), metres) that lies inside the room. A footprint with no area counts as
        its centre point: 1.0 or 0.0. The z range, if any, is tested on the centre."""
        if len(center) >= 3 and self.z_range is not None \
                and not self.z_range[0] <= center[2] <= self.z_range[1]:
            return 0.0
        hx, hy = 0.5 * size[0], 0.5 * size[1]
        rect_area = 4.0 * hx * hy
        if rect_area <= _EPS:
            return 1.0 if _contains(self.polygon, (center[0], center[1])) else 0.0
        lo, hi = (center[0] - hx, center[1] - hy), (center[0] + hx, center[1] + hy)
        x0, y0, x1, y1 = self.bbox
        if hi[0] < x0 or lo[0] > x1 or hi[1] < y0 or lo[1] > y1:
            return 0.0
        inter = abs(polygon_area(_clip_to_rect(self.polygon, lo, hi)))
        return min(1.0, inter / rect_area)

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready form, the inverse of :meth:`from_dict`."""
        return {"name": self.name, "polygon": [list(p) for p in self.polygon],
                "z_range": list(self.z_range) if self.z_range is not None else None}

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> Room:
        """A room from ``{"name": str, "polygon": [[x, y], ...], "z_range": [lo, hi] | null}``."""
        if not isinstance(data, Mapping):
            raise InvalidInput(f"a room must be a mapping, got {type(data).__name__}")
        unknown = set(data) - {"name", "polygon", "z_range"}
        if unknown:
            raise InvalidInput(f"unknown room fields {sorted(unknown)}; expected name, polygon, "
                               "z_range")
        for key in ("name", "polygon"):
            if key not in data:
                raise InvalidInput(f"a room needs a {key!r} field")
        return cls(data["name"], data["polygon"], data.get("z_range"))


@dataclass(frozen=True, slots=True)
class RoomAssignment:
    """The room an object's footprint mostly lies in, and the fraction that lies there."""

    room: str
    fraction: float


def _check_point(point: Any, name: str = "point") -> tuple[float, ...]:
    """(x, y) or (x, y, z): finite numbers, metres."""
    n = len(point) if isinstance(point, (Sequence, np.ndarray)) \
        and not isinstance(point, (str, bytes)) else 0
    if n not in (2, 3):
        raise InvalidInput(f"{name} must be (x, y) or (x, y, z) in metres, got {point!r}")
    return check_vec(point, name, n)


def _z_overlap(a: tuple[float, float] | None, b: tuple[float, float] | None) -> bool:
    return a is None or b is None or (a[0] < b[1] and b[0] < a[1])


class RoomMap:
    """The rooms of one building, their lookup grid and their connectivity graph.

    Args:
        rooms: rooms to add at once.
        cell_m: side of the lookup grid's cells, metres (about a small room's width).
        auto_connect: connect each added room to the rooms it shares a wall with
            (see :meth:`adjacent`).
        wall_tolerance_m: how far apart two walls may be and still count as shared (set it to
            the wall thickness when polygons follow the inside of the walls).
        min_shared_m: how long a shared wall must be for the rooms to count as adjacent.
    """

    def __init__(self, rooms: Iterable[Room] = (), *, cell_m: float = 2.0,
                 auto_connect: bool = False, wall_tolerance_m: float = 0.1,
                 min_shared_m: float = 0.5) -> None:
        if not (isinstance(cell_m, (int, float)) and math.isfinite(cell_m) and cell_m > 0):
            raise InvalidInput(f"cell_m must be a finite number > 0, got {cell_m!r}")
        self.auto_connect = bool(auto_connect)
        self.wall_tolerance_m = check_float(wall_tolerance_m, "wall_tolerance_m")
        self.min_shared_m = check_float(min_shared_m, "min_shared_m")
        if self.wall_tolerance_m < 0 or self.min_shared_m < 0:
            raise InvalidInput("wall_tolerance_m and min_shared_m must be >= 0, got "
                               f"{self.wall_tolerance_m} and {self.min_shared_m}")
        self._rooms: dict[str, Room] = {}
        self._grid: BoxGrid[str] = BoxGrid(cell_m, dims=2)
        self._links: dict[str, set[str]] = {}
        for room in rooms:
            self.add(room)

    # -- rooms ---------------------------------------------------------------------------

    def __len__(self) -> int:
        return len(self._rooms)

    def __contains__(self, name: object) -> bool:
        return isinstance(name, str) and " ".join(name.split()).lower() in self._rooms

    def _key(self, name: str) -> str:
        key = check_label(name, "room name")
        if key not in self._rooms:
            raise NotFound(f"no room named {key!r}")
        return key

    def names(self) -> list[str]:
        """Room names, sorted."""
        return sorted(self._rooms)

    def rooms(self) -> list[Room]:
        """Rooms, sorted by name."""
        return [self._rooms[n] for n in sorted(self._rooms)]

    def get(self, name: str) -> Room:
        return self._rooms[self._key(name)]

    def add(self, room: Room) -> Room:
        """Add a room (InvalidInput if its name is taken). Returns it."""
        if not isinstance(room, Room):
            raise InvalidInput(f"expected a Room, got {type(room).__name__}")
        if room.name in self._rooms:
            raise InvalidInput(f"a room named {room.name!r} already exists; remove it first")
        self._rooms[room.name] = room
        x0, y0, x1, y1 = room.bbox
        self._grid.set(room.name, (x0, y0), (x1, y1))
        self._links[room.name] = set()
        if self.auto_connect:
            for other, _ in self.adjacent(room.name):
                self.connect(room.name, other)
        return room

    def define(self, name: str, polygon_xy: Any, z_range: Any = None) -> Room:
        """Validate and add a room from plain data. Returns it."""
        return self.add(Room(name, polygon_xy, z_range))

    def remove(self, name: str) -> None:
        """Remove a room and its connections (NotFound if absent)."""
        key = self._key(name)
        del self._rooms[key]
        self._grid.remove(key)
        for other in self._links.pop(key):
            self._links[other].discard(key)

    # -- where -------------------------------------------------------------------------

    def rooms_at(self, point: Sequence[float]) -> list[str]:
        """Names of every room containing ``point`` ((x, y) or (x, y, z), metres, map frame;
        boundaries included), sorted by area then name (the most specific room first)."""
        point = _check_point(point)
        x, y = point[0], point[1]
        hits = [self._rooms[k] for k in self._grid.candidates((x, y), (x, y))]
        hits = [r for r in hits if r.contains(point)]
        hits.sort(key=lambda r: (r.area_m2, r.name))
        return [r.name for r in hits]

    def room_at(self, point: Sequence[float]) -> str | None:
        """The room containing ``point`` (the smallest if several do), or None."""
        hits = self.rooms_at(point)
        return hits[0] if hits else None

    def footprint_fractions(self, center: Sequence[float], size: Sequence[float]
                            ) -> dict[str, float]:
        """For every room the footprint touches, the fraction of the footprint inside it.
        ``center`` is (x, y, z) and ``size`` (dx, dy, dz), metres, map frame."""
        center = check_vec(center, "center", 3)
        size = check_size(size, "size")
        hx, hy = 0.5 * size[0], 0.5 * size[1]
        lo, hi = (center[0] - hx, center[1] - hy), (center[0] + hx, center[1] + hy)
        out = {}
        for key in self._grid.candidates(lo, hi):
            f = self._rooms[key].footprint_fraction(center, size)
            if f > 0.0:
                out[key] = f
        return dict(sorted(out.items()))

    def assign(self, center: Sequence[float], size: Sequence[float], *,
               min_fraction: float = 0.5) -> RoomAssignment | None:
        """The room holding the largest part of an object's footprint, if that part is at
        least ``min_fraction`` (ties go to the alphabetically first room), else None."""
        fractions = self.footprint_fractions(center, size)
        if not fractions:
            return None
        room, frac = min(fractions.items(), key=lambda kv: (-kv[1], kv[0]))
        if frac + 1e-12 < min_fraction:
            return None
        return RoomAssignment(room, frac)

    # -- connectivity ------------------------------------------------------------------

    def connect(self, a: str, b: str) -> None:
        """Link two rooms (a door, an opening). Idempotent."""
        ka, kb = self._key(a), self._key(b)
        if ka == kb:
            raise InvalidInput(f"cannot connect room {ka!r} to itself")
        self._links[ka].add(kb)
        self._links[kb].add(ka)

    def disconnect(self, a: str, b: str) -> None:
        """Remove the link between two rooms (no-op if they are not linked)."""
        ka, kb = self._key(a), self._key(b)
        self._links[ka].discard(kb)
        self._links[kb].discard(ka)

    def neighbors(self, name: str) -> list[str]:
        """Rooms linked to ``name``, sorted."""
        return sorted(self._links[self._key(name)])

    def connections(self) -> list[tuple[str, str]]:
        """Every link once, as ``(a, b)`` with ``a < b``, sorted."""
        return sorted((a, b) for a, others in self._links.items() for b in others if a < b)

    def path(self, a: str, b: str) -> list[str] | None:
        """The rooms from ``a`` to ``b`` (both included) through the fewest doors, or None
        when no path exists. Among equally short paths, the alphabetically first sequence."""
        ka, kb = self._key(a), self._key(b)
        dist = {kb: 0}
        queue = deque([kb])
        while queue and ka not in dist:
            cur = queue.popleft()
            for nxt in self._links[cur]:
                if nxt not in dist:
                    dist[nxt] = dist[cur] + 1
                    queue.append(nxt)
        if ka not in dist:
            return None
        route = [ka]
        while route[-1] != kb:
            d = dist[route[-1]]
            route.append(min(n for n in self._links[route[-1]] if dist.get(n) == d - 1))
        return route

    def adjacent(self, name: str) -> list[tuple[str, float]]:
        """Rooms sharing at least ``min_shared_m`` of wall with ``name`` (walls within
        ``wall_tolerance_m`` of each other, overlapping z ranges), with the shared length in
        metres, sorted by name."""
        room = self._rooms[self._key(name)]
        tol = self.wall_tolerance_m
        x0, y0, x1, y1 = room.bbox
        out = []
        for key in self._grid.overlapping((x0 - tol, y0 - tol), (x1 + tol, y1 + tol)):
            other = self._rooms[key]
            if key == room.name or not _z_overlap(room.z_range, other.z_range):
                continue
            shared = _shared_length(room.polygon, other.polygon, tol)
            if shared >= self.min_shared_m and shared > 0.0:
                out.append((key, shared))
        return sorted(out)

    def connect_adjacent(self) -> list[tuple[str, str]]:
        """Connect every pair of adjacent rooms; returns the links that were new, sorted."""
        new = []
        for name in sorted(self._rooms):
            for other, _ in self.adjacent(name):
                if other not in self._links[name]:
                    self.connect(name, other)
                    new.append((min(name, other), max(name, other)))
        return sorted(new)

    # -- interchange -------------------------------------------------------------------

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready form: rooms and links."""
        return {"rooms": [r.to_dict() for r in self.rooms()],
                "connections": [list(c) for c in self.connections()]}

    @classmethod
    def from_dict(cls, data: Mapping[str, Any], **options: Any) -> RoomMap:
        """Rebuild from :meth:`to_dict` output (``options`` go to the constructor)."""
        if not isinstance(data, Mapping) or not isinstance(data.get("rooms"), list):
            raise InvalidInput('a room map must be a mapping with a "rooms" list')
        out = cls((Room.from_dict(r) for r in data["rooms"]), **options)
        for i, pair in enumerate(data.get("connections", [])):
            if not isinstance(pair, (list, tuple)) or len(pair) != 2:
                raise InvalidInput(f"connections[{i}] must be a pair of room names, got {pair!r}")
            out.connect(pair[0], pair[1])
        return out
