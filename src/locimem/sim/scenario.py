"""Scenarios: a robot's scans through a simulated home, with the ground truth to score them.

A :class:`Scenario` is a list of :class:`Frame` s. Each frame has the scan time ``t`` (seconds),
the :class:`~locimem.model.Camera` (pose, fields of view, range, and a depth image with the
sensor's holes), the detections (:class:`~locimem.model.Detection`), and the truth:

- ``truth.present``: every object that exists, id -> centre (metres, map frame);
- ``truth.visible`` / ``truth.occluded``: ids the camera could see / that were in view but
  hidden (behind furniture, another object, or a person) — judged on the exact ray to the
  object's centre (:func:`~locimem.sim.render.line_of_sight`), whatever the depth image's
  resolution; the detector reports only visible objects;
- ``truth.known``: what a *perfect memory* could believe at this scan — for each object
  detected at least once, the last place it was detected at, until the camera has seen that
  place empty (an object the detector never reported cannot be known by any memory fed by it);
- ``sources[i]``: the true object that produced detection ``i`` (None for a false positive);
- ``restart``: the process restarts before this scan;
- ``occluders``: boxes that hid things besides the home's own (a person in front of the
  camera), so that the scan can be rendered again (:mod:`locimem.sim.frames2d`).

Scenarios are built with :class:`ScenarioBuilder`, a script of what the robot does (walk, look,
survey a room, go away for hours) and what happens in the home (moves, removals, additions,
people walking in front). Everything random comes from one seed, split into independent
streams for the camera's jitter, the world's changes, the depth sensor and the detector.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, field

import numpy as np

from locimem.geometry import Visibility, in_view, look_at, visibility
from locimem.model import Camera, Detection
from locimem.sim.perception import Detector, NoiseModel, SceneBoxes
from locimem.sim.render import boxes_to_arrays, line_of_sight, render_depth
from locimem.sim.world import (
    CAMERA_HEIGHT_M,
    LABEL_SIZES,
    ROOM_VOCABULARY,
    Box,
    ObjectSpec,
    World,
    make_embedding,
    place_on,
)

Vec3 = tuple[float, float, float]

NEAR_MOVE_M = 0.2  # a move shorter than this is "near" (inside the tracker's tight radius)
PLACE_SEEN_MARGIN_M = 0.05  # a remembered place counts as seen empty within this depth margin


@dataclass(frozen=True)
class Truth:
    """Ground truth at one scan (see the module docstring). Centres in metres, map frame."""

    present: dict[int, Vec3]
    known: dict[int, Vec3]
    visible: frozenset[int]
    occluded: frozenset[int]


@dataclass(frozen=True)
class Frame:
    """One scan: what the memory is given (``t``, ``detections``, ``camera``, ``restart``)
    and what was true (``sources``, ``truth``)."""

    index: int
    t: float
    camera: Camera
    detections: tuple[Detection, ...]
    sources: tuple[int | None, ...]
    truth: Truth
    restart: bool = False
    note: str | None = None
    occluders: tuple[Box, ...] = ()  # what stood in the way besides the home (a person)


@dataclass(frozen=True)
class WorldEvent:
    """Something that happened in the home, in effect from the scan at time ``t``.

    ``kind``: ``move_near`` (< 0.2 m), ``move_far``, ``remove``, ``add``, ``occlusion_start``,
    ``occlusion_end``, ``gap`` (no scans for a while) or ``restart``.
    """

    t: float
    kind: str
    object_id: int | None = None
    from_m: Vec3 | None = None
    to_m: Vec3 | None = None
    watched: bool = False  # the object was visible in the scan before and the scan after


@dataclass(frozen=True)
class Scenario:
    """A seeded scan stream with ground truth. ``objects`` holds every object that ever
    existed in it (including ones added along the way)."""

    name: str
    seed: int
    world: World
    noise: NoiseModel
    objects: dict[int, ObjectSpec]
    frames: tuple[Frame, ...]
    events: tuple[WorldEvent, ...]
    detector: str = "centre"  # the detector's visibility: "centre" or "rays"

    @property
    def duration_s(self) -> float:
        return self.frames[-1].t - self.frames[0].t if self.frames else 0.0

    @property
    def n_detections(self) -> int:
        return sum(len(f.detections) for f in self.frames)

    def label_of(self, object_id: int) -> str:
        return self.objects[object_id].label


@dataclass
class ScenarioBuilder:
    """Script a scenario step by step; :meth:`build` returns it.

    Args:
        name: the scenario's name.
        world: the home (see :func:`locimem.sim.world.build_world`).
        seed: seeds every random stream of the scenario.
        noise: the detector's error model.
        dt_s: seconds between scans while the robot is active.
        depth_shape: (h, w) of the depth image handed to the memory.
        fov_deg, vfov_deg, range_m: the camera's fields of view and trusted range.
        detector: the detector's visibility, ``"centre"`` (the first one: a thing is seen
            whole or not at all by the ray to its centre) or ``"rays"`` (recall and box fall
            with the share in sight; :mod:`locimem.sim.perception`).

    >>> from locimem.sim.world import build_world
    >>> b = ScenarioBuilder("demo", build_world(0, rooms=("kitchen",)), seed=0)
    >>> b.look("kitchen/table", 3)
    >>> cup = b.add("cup", "kitchen/table")
    >>> b.look("kitchen/table", 2)
    >>> s = b.build()
    >>> [cup in f.truth.present for f in s.frames], s.events[-1].kind
    ([False, False, False, True, True], 'add')
    """

    name: str
    world: World
    seed: int = 0
    noise: NoiseModel = field(default_factory=NoiseModel)
    dt_s: float = 1.0
    depth_shape: tuple[int, int] = (24, 32)
    fov_deg: float = 80.0
    vfov_deg: float = 60.0
    range_m: float = 4.5
    speed_m_s: float = 1.0
    detector: str = "centre"

    def __post_init__(self) -> None:
        streams = np.random.SeedSequence(self.seed).spawn(4)
        self._rng_camera = np.random.default_rng(streams[0])
        self._rng_world = np.random.default_rng(streams[1])
        self._rng_depth = np.random.default_rng(streams[2])
        self._detector = Detector(self.noise, np.random.default_rng(streams[3]),
                                  visibility=self.detector)
        self.t = 0.0
        self.position: Vec3 = self.world.rooms[0].center_m
        self.specs: dict[int, ObjectSpec] = dict(self.world.objects)
        self.positions: dict[int, Vec3] = {i: p for i, (_, p) in self.world.placements.items()}
        self.known: dict[int, Vec3] = {}
        self.frames: list[Frame] = []
        self.events: list[WorldEvent] = []
        self._next_id = max(self.specs, default=0) + 1
        self._restart_next = False
        self._occluder: Box | None = None
        self._static_min, self._static_max = boxes_to_arrays(self.world.static_boxes())
        self._last_visible: frozenset[int] = frozenset()
        self._pending_watch: list[int] = []  # event indices whose 'watched' flag is pending

    # -- the robot ------------------------------------------------------------------------------
    def scan(self, target: Sequence[float] | np.ndarray, note: str | None = None,
             position: Sequence[float] | np.ndarray | None = None) -> Frame:
        """One scan from the robot's position (or ``position``) looking at ``target``, with a
        little jitter of both; time then advances by ``dt_s``."""
        if position is not None:
            self.position = tuple(float(v) for v in position)  # type: ignore[assignment]
        frame = self._make_frame(target, note)
        self.t += self.dt_s
        return frame

    def walk_to(self, point: Sequence[float]) -> None:
        """Walk at ``speed_m_s`` (through the doors between rooms), scanning every ``dt_s``
        and looking where it goes."""
        goal = (float(point[0]), float(point[1]), CAMERA_HEIGHT_M)
        for waypoint in [*self._door_waypoints(self.position, goal), goal]:
            start = np.array(self.position)
            end = np.array(waypoint)
            dist = float(np.linalg.norm(end[:2] - start[:2]))
            step = self.speed_m_s * self.dt_s
            n = math.floor(dist / step) if dist > 1e-9 else 0
            heading = (end - start) / dist if dist > 1e-9 else np.array([1.0, 0.0, 0.0])
            for k in range(1, n + 1):
                p = start + heading * step * k
                self.scan(p + 2.0 * heading + np.array([0, 0, -0.2]), position=p)
            self.position = tuple(end.tolist())

    def _door_waypoints(self, a: Vec3, b: Vec3) -> list[Vec3]:
        ra = self._room_index(a)
        rb = self._room_index(b)
        if ra == rb:
            return []
        out: list[Vec3] = []
        step = 1 if rb > ra else -1
        for i in range(ra, rb, step):
            door = self.world.doors[min(i, i + step)]
            out.append((door[0] - 0.6 * step, door[1], CAMERA_HEIGHT_M))
            out.append((door[0] + 0.6 * step, door[1], CAMERA_HEIGHT_M))
        return out

    def _room_index(self, p: Sequence[float]) -> int:
        for i, r in enumerate(self.world.rooms):
            if p[0] <= r.max_xy[0] + 0.05:
                return i
        return len(self.world.rooms) - 1

    def look(self, furniture: str, seconds: float, note: str | None = None,
             sweep_m: float = 0.35) -> None:
        """Go to the furniture's viewpoint and look at it for ``seconds``, sweeping the gaze
        along it by up to ``sweep_m`` either side of its centre."""
        f = self.world.furniture_named(furniture)
        if math.dist(self.position[:2], f.viewpoint_m[:2]) > 0.3:
            self.walk_to(f.viewpoint_m)
        self.position = f.viewpoint_m
        n = max(1, round(seconds / self.dt_s))
        across = np.array([-(f.target_m[1] - f.viewpoint_m[1]), f.target_m[0] - f.viewpoint_m[0],
                           0.0])
        across /= np.linalg.norm(across)
        for k in range(n):
            target = np.array(f.target_m) + across * sweep_m * math.sin(0.9 * k)
            self.scan(target, note=note if k == 0 else None)

    def survey(self, room: str, dwell_s: float = 6.0) -> None:
        """Look at every piece of furniture in ``room`` in turn."""
        for f in self.world.furniture_in(room):
            self.look(f.name, dwell_s)

    def away(self, room: str, seconds: float, scan_every_s: float = 60.0) -> None:
        """Spend ``seconds`` in ``room``, scanning its furniture in turn every
        ``scan_every_s`` (a robot idling elsewhere for hours)."""
        items = self.world.furniture_in(room)
        self.walk_to(items[0].viewpoint_m)
        end = self.t + seconds
        k = 0
        saved = self.dt_s
        self.dt_s = scan_every_s
        try:
            while self.t < end:
                f = items[k % len(items)]
                self.scan(f.target_m, position=f.viewpoint_m)
                k += 1
        finally:
            self.dt_s = saved

    def gap(self, seconds: float) -> None:
        """No scans for ``seconds`` (the robot is docked, or perception is off)."""
        self.events.append(WorldEvent(self.t, "gap", to_m=None))
        self.t += seconds

    def restart(self) -> None:
        """The memory's process restarts before the next scan."""
        self._restart_next = True
        self.events.append(WorldEvent(self.t, "restart"))

    def occluded_look(self, furniture: str, seconds: float) -> None:
        """Look at the furniture while a person stands between it and the camera."""
        f = self.world.furniture_named(furniture)
        if math.dist(self.position[:2], f.viewpoint_m[:2]) > 0.3:
            self.walk_to(f.viewpoint_m)
        vp, tg = np.array(f.viewpoint_m), np.array(f.target_m)
        heading = (tg - vp)[:2] / np.linalg.norm((tg - vp)[:2])
        c = vp[:2] + 0.8 * heading
        self._occluder = Box((c[0] - 0.25, c[1] - 0.25, 0.0), (c[0] + 0.25, c[1] + 0.25, 1.75))
        self.events.append(WorldEvent(self.t, "occlusion_start"))
        try:
            self.look(furniture, seconds, note="a person stands in front of the camera")
        finally:
            self._occluder = None
            self.events.append(WorldEvent(self.t, "occlusion_end"))

    # -- the home -------------------------------------------------------------------------------
    def objects_on(self, furniture: str) -> list[int]:
        """Ids of the objects now on the furniture (by surface), ascending."""
        f = self.world.furniture_named(furniture)
        out = []
        for oid, p in sorted(self.positions.items()):
            for s in f.surfaces:
                if (s.min_xy[0] - 0.01 <= p[0] <= s.max_xy[0] + 0.01
                        and s.min_xy[1] - 0.01 <= p[1] <= s.max_xy[1] + 0.01
                        and abs(p[2] - self.specs[oid].size_m[2] / 2 - s.z_m) < 0.01):
                    out.append(oid)
                    break
        return out

    def free_place(self, furniture: str, size: Sequence[float],
                   near: Sequence[float] | None = None, near_radius_m: float = 0.0,
                   gap_m: float = 0.03) -> Vec3:
        """A free spot for ``size`` on any surface of the furniture (optionally near a
        point). Raises RuntimeError if none is found (a scenario script error)."""
        f = self.world.furniture_named(furniture)
        occupied = [(p, self.specs[i].size_m) for i, p in self.positions.items()]
        order = self._rng_world.permutation(len(f.surfaces))
        for k in order:
            at = place_on(f.surfaces[int(k)], size, self._rng_world, occupied, gap_m=gap_m,
                          near=near, near_radius_m=near_radius_m, tries=200)
            if at is not None:
                return at
        raise RuntimeError(f"no free place for a {tuple(size)} box on {furniture}")

    def move(self, object_id: int, to: Sequence[float], keep_track: bool = False) -> WorldEvent:
        """Move an object to ``to`` (its new centre). ``keep_track``: perception keeps its
        track id (it watched the object being carried)."""
        src = self.positions[object_id]
        dst = tuple(float(v) for v in to)
        kind = "move_near" if math.dist(src, dst) < NEAR_MOVE_M else "move_far"
        self.positions[object_id] = dst  # type: ignore[assignment]
        if not keep_track:
            self._detector.reset_track(object_id)
        return self._event(kind, object_id, src, dst)  # type: ignore[arg-type]

    def move_near(self, object_id: int, distance_m: float = 0.12,
                  keep_track: bool = True) -> WorldEvent:
        """Nudge an object ``distance_m`` (< 0.2) along its surface; perception keeps its
        track by default."""
        if distance_m >= NEAR_MOVE_M:
            raise ValueError(f"a near move is shorter than {NEAR_MOVE_M} m, got {distance_m}")
        return self.move_by(object_id, distance_m, keep_track=keep_track)

    def move_by(self, object_id: int, distance_m: float, keep_track: bool = False
                ) -> WorldEvent:
        """Slide an object exactly ``distance_m`` along its surface, in a direction where it
        fits. Raises RuntimeError when there is no room (a scenario script error)."""
        src = self.positions[object_id]
        size = self.specs[object_id].size_m
        occupied = [(p, self.specs[i].size_m) for i, p in self.positions.items()
                    if i != object_id]
        start = self._rng_world.uniform(0, 2 * np.pi)
        for k in range(72):
            ang = start + k * 2 * np.pi / 72
            dst = (src[0] + distance_m * math.cos(ang), src[1] + distance_m * math.sin(ang),
                   src[2])
            if self._fits(dst, size, occupied):
                return self.move(object_id, dst, keep_track=keep_track)
        raise RuntimeError(f"object {object_id} has no room to slide {distance_m} m")

    def _fits(self, at: Vec3, size: Vec3, occupied: list[tuple[Vec3, Vec3]]) -> bool:
        on = None
        for f in self.world.furniture:
            for s in f.surfaces:
                if abs(at[2] - size[2] / 2 - s.z_m) < 0.01 and (
                    s.min_xy[0] + size[0] / 2 <= at[0] <= s.max_xy[0] - size[0] / 2
                    and s.min_xy[1] + size[1] / 2 <= at[1] <= s.max_xy[1] - size[1] / 2
                ):
                    on = s
        if on is None:
            return False
        return all(
            not (abs(at[0] - c[0]) < (size[0] + s[0]) / 2 + 0.02
                 and abs(at[1] - c[1]) < (size[1] + s[1]) / 2 + 0.02
                 and abs(at[2] - c[2]) < (size[2] + s[2]) / 2)
            for c, s in occupied
        )

    def move_to(self, object_id: int, furniture: str, keep_track: bool = False,
                near: Sequence[float] | None = None, near_radius_m: float = 0.0
                ) -> WorldEvent:
        """Move an object to a free spot on another piece of furniture."""
        size = self.specs[object_id].size_m
        saved = self.positions.pop(object_id)
        try:
            at = self.free_place(furniture, size, near=near, near_radius_m=near_radius_m)
        finally:
            self.positions[object_id] = saved
        return self.move(object_id, at, keep_track=keep_track)

    def remove(self, object_id: int) -> WorldEvent:
        """Take an object out of the home."""
        src = self.positions.pop(object_id)
        self._detector.reset_track(object_id)
        return self._event("remove", object_id, src, None)

    def add(self, label: str, furniture: str, at: Sequence[float] | None = None,
            embedding: np.ndarray | None = None, setup: bool = False) -> int:
        """Put a new object of ``label`` on the furniture (at a free spot, or at ``at``);
        returns its id. ``embedding`` defaults to a new instance of the label's class.
        ``setup``: it was there before the day began (no ``add`` event)."""
        size = LABEL_SIZES[label]
        where = tuple(float(v) for v in at) if at is not None else self.free_place(
            furniture, size)
        oid = self._next_id
        self._next_id += 1
        if embedding is None:
            embedding = make_embedding(self._rng_world, self.world.class_embeddings[label])
        self.specs[oid] = ObjectSpec(oid, label, size, embedding)
        self.positions[oid] = where  # type: ignore[assignment]
        if not setup:
            self._event("add", oid, None, where)  # type: ignore[arg-type]
        return oid

    def stock(self, furniture: str, at_least: int) -> None:
        """Before the day begins, make sure the furniture holds ``at_least`` objects, adding
        things from its room's vocabulary (so a script can pick them for any seed)."""
        if self.frames:
            raise RuntimeError("stock() sets the home up; call it before the first scan")
        room = self.world.furniture_named(furniture).room
        vocab = ROOM_VOCABULARY.get(room, ROOM_VOCABULARY["bedroom"])
        while len(self.objects_on(furniture)) < at_least:
            label = str(vocab[int(self._rng_world.integers(len(vocab)))])
            self.add(label, furniture, setup=True)

    def _event(self, kind: str, oid: int, src: Vec3 | None, dst: Vec3 | None) -> WorldEvent:
        event = WorldEvent(self.t, kind, oid, src, dst, watched=False)
        self.events.append(event)
        if kind.startswith("move"):
            self._pending_watch.append(len(self.events) - 1)
        return event

    # -- one frame ------------------------------------------------------------------------------
    def _make_frame(self, target: Sequence[float] | np.ndarray, note: str | None) -> Frame:
        rng = self._rng_camera
        pos = np.array(self.position) + np.r_[rng.normal(0, 0.03, 2), 0.0]
        tgt = np.asarray(target, dtype=float) + rng.normal(0, 0.05, 3)
        bare = look_at(pos.tolist(), tgt.tolist(), fov_deg=self.fov_deg, vfov_deg=self.vfov_deg,
                       range_m=self.range_m)
        ids = sorted(self.positions)
        centers = np.array([self.positions[i] for i in ids]).reshape(-1, 3)
        sizes = np.array([self.specs[i].size_m for i in ids]).reshape(-1, 3)
        lo = [self._static_min, centers - sizes / 2]
        hi = [self._static_max, centers + sizes / 2]
        if self._occluder is not None:
            lo.append(np.array([self._occluder.min_m]))
            hi.append(np.array([self._occluder.max_m]))
        depth = render_depth(bare, np.vstack(lo), np.vstack(hi), self.depth_shape,
                             max_range_m=3 * self.range_m)
        clean = Camera(bare.position, bare.quaternion, bare.fov_deg, bare.range_m,
                       bare.vfov_deg, depth=depth)
        seen = in_view(clean, centers)
        n_static = len(self._static_min)
        clear = line_of_sight(clean, centers, sizes, np.vstack(lo), np.vstack(hi),
                              own=np.arange(n_static, n_static + len(ids)))
        visible = frozenset(i for i, s, c in zip(ids, seen, clear, strict=True) if s and c)
        occluded = frozenset(i for i, s, c in zip(ids, seen, clear, strict=True)
                             if s and not c)
        self._settle_watch(visible)

        holes = self._rng_depth.random(depth.shape) < self.noise.depth_dropout
        sensed = np.where(holes, np.nan, depth).astype(np.float32)
        camera = Camera(bare.position, bare.quaternion, bare.fov_deg, bare.range_m,
                        bare.vfov_deg, depth=sensed)
        order = [i for i in ids if i in visible]
        scene = SceneBoxes(np.vstack(lo), np.vstack(hi),
                           {oid: n_static + k for k, oid in enumerate(ids)})
        dets, sources = self._detector.detect(len(self.frames), clean, order, self.positions,
                                              self.specs, depth, scene=scene)
        self._update_known(clean, frozenset(s for s in sources if s is not None))
        frame = Frame(
            index=len(self.frames), t=self.t, camera=camera, detections=tuple(dets),
            sources=tuple(sources),
            truth=Truth(present=dict(self.positions), known=dict(self.known), visible=visible,
                        occluded=occluded),
            restart=self._restart_next, note=note,
            occluders=() if self._occluder is None else (self._occluder,),
        )
        self._restart_next = False
        self._last_visible = visible
        self.frames.append(frame)
        return frame

    def _update_known(self, camera: Camera, detected: frozenset[int]) -> None:
        """A perfect memory learns an object's place from a detection (a memory fed by this
        detector cannot know a thing it never reported), and drops a remembered place once
        the camera sees it empty."""
        for oid in detected:
            self.known[oid] = self.positions[oid]
        stale = [oid for oid, place in self.known.items()
                 if oid not in detected and (oid not in self.positions
                                            or math.dist(self.positions[oid], place)
                                            >= NEAR_MOVE_M)]
        if not stale:
            return
        places = np.array([self.known[oid] for oid in stale])
        states = visibility(camera, places, margin_m=PLACE_SEEN_MARGIN_M)
        for oid, s in zip(stale, states, strict=True):
            if s == Visibility.VISIBLE:  # looked at the place, and it is empty
                del self.known[oid]

    def _settle_watch(self, visible: frozenset[int]) -> None:
        """A move is *watched* when the object was visible in the scan before and in the first
        scan after it."""
        for k in self._pending_watch:
            e = self.events[k]
            watched = e.object_id in visible and e.object_id in self._last_visible
            self.events[k] = WorldEvent(e.t, e.kind, e.object_id, e.from_m, e.to_m, watched)
        self._pending_watch.clear()

    def build(self) -> Scenario:
        """The scenario scripted so far."""
        return Scenario(self.name, self.seed, self.world, self.noise, dict(self.specs),
                        tuple(self.frames), tuple(self.events), self.detector)
