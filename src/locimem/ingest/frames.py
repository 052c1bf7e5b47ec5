"""Rigid transforms, a tf tree, and the camera conversions ROS data needs (pure maths, no I/O).

Conventions
-----------
- A :class:`Transform` ``T_a_b`` maps coordinates in frame ``b`` into frame ``a``:
  ``p_a = R(quat_wxyz) @ p_b + translation_m``. A ROS ``geometry_msgs/TransformStamped`` with
  ``header.frame_id = a`` and ``child_frame_id = b`` is exactly ``T_a_b``.
- Quaternions are (w, x, y, z); translations are metres.
- **Optical frame** (ROS REP 103 ``*_optical_frame``): z forward, x right, y down.
  **Camera body frame** (locimem's :class:`~locimem.model.Camera`): x forward, y left, z up.
  :data:`OPTICAL_TO_BODY` is ``T_optical_body``: composing a camera pose in its optical frame
  with it gives the body-frame pose locimem expects.
- **Depth**: a ROS depth image (REP 118) holds, per pixel, the z coordinate of the surface in
  the optical frame — the distance along the optical axis, not along the pixel's ray. That is
  exactly locimem's *forward distance* (body-frame x; see :mod:`locimem.geometry`), so depth
  values need only a unit conversion (``16UC1``: millimetres, 0 = no reading; ``32FC1``:
  metres), never a per-pixel ray correction.

    >>> t = Transform((1.0, 0.0, 0.0), (1.0, 0.0, 0.0, 0.0))
    >>> t.apply((0.5, 2.0, 0.0))
    (1.5, 2.0, 0.0)
"""

from __future__ import annotations

import bisect
import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from locimem.errors import InvalidInput

__all__ = [
    "MAX_TF_DEPTH",
    "OPTICAL_TO_BODY",
    "CameraWindow",
    "TfBuffer",
    "TfJump",
    "Transform",
    "TransformUnavailable",
    "camera_window",
    "depth_to_metres",
    "quat_multiply",
    "slerp",
]

MAX_TF_DEPTH = 1000  # frames from a frame up to its root, both counted

Vec3 = tuple[float, float, float]
Quat = tuple[float, float, float, float]


def _unit(q: Sequence[float]) -> Quat:
    w, x, y, z = (float(v) for v in q)
    n = math.sqrt(w * w + x * x + y * y + z * z)
    if not math.isfinite(n) or n < 1e-12:
        raise InvalidInput(f"quaternion must be finite and non-zero (w, x, y, z), got {tuple(q)}")
    return (w / n, x / n, y / n, z / n)


def quat_multiply(a: Quat, b: Quat) -> Quat:
    """Hamilton product ``a ⊗ b`` of (w, x, y, z) quaternions (apply ``b`` first, then ``a``)."""
    aw, ax, ay, az = a
    bw, bx, by, bz = b
    return (aw * bw - ax * bx - ay * by - az * bz,
            aw * bx + ax * bw + ay * bz - az * by,
            aw * by - ax * bz + ay * bw + az * bx,
            aw * bz + ax * by - ay * bx + az * bw)


def _rotate(q: Quat, v: Sequence[float]) -> Vec3:
    w, x, y, z = q
    vx, vy, vz = (float(c) for c in v)
    # v + 2 w (u × v) + 2 u × (u × v), u = (x, y, z)
    cx, cy, cz = y * vz - z * vy, z * vx - x * vz, x * vy - y * vx
    dx, dy, dz = y * cz - z * cy, z * cx - x * cz, x * cy - y * cx
    return (vx + 2.0 * (w * cx + dx), vy + 2.0 * (w * cy + dy), vz + 2.0 * (w * cz + dz))


def slerp(q0: Quat, q1: Quat, u: float) -> Quat:
    """Spherical linear interpolation from ``q0`` (u = 0) to ``q1`` (u = 1), the short way.

    >>> [round(v, 6) for v in slerp((1, 0, 0, 0), (0, 0, 0, 1), 0.5)]  # half of 180° about z
    [0.707107, 0.0, 0.0, 0.707107]
    """
    a, b = _unit(q0), _unit(q1)
    dot = sum(x * y for x, y in zip(a, b, strict=True))
    if dot < 0.0:
        b, dot = tuple(-v for v in b), -dot  # type: ignore[assignment]
    if dot > 0.9995:  # nearly parallel: normalised lerp is exact to rounding
        return _unit(tuple(x + u * (y - x) for x, y in zip(a, b, strict=True)))
    theta = math.acos(min(1.0, dot))
    s = math.sin(theta)
    wa, wb = math.sin((1.0 - u) * theta) / s, math.sin(u * theta) / s
    return _unit(tuple(wa * x + wb * y for x, y in zip(a, b, strict=True)))


@dataclass(frozen=True, slots=True)
class Transform:
    """A rigid transform ``T_a_b``: ``p_a = R(quat_wxyz) @ p_b + translation_m`` (metres)."""

    translation_m: Vec3
    quat_wxyz: Quat

    def __post_init__(self) -> None:
        t = tuple(float(v) for v in self.translation_m)
        if len(t) != 3 or not all(math.isfinite(v) for v in t):
            raise InvalidInput(f"translation must be 3 finite numbers, got {self.translation_m}")
        object.__setattr__(self, "translation_m", t)
        object.__setattr__(self, "quat_wxyz", _unit(self.quat_wxyz))

    @staticmethod
    def identity() -> Transform:
        return Transform((0.0, 0.0, 0.0), (1.0, 0.0, 0.0, 0.0))

    def apply(self, point: Sequence[float]) -> Vec3:
        """A point in frame ``b`` -> the same point in frame ``a`` (metres)."""
        r = _rotate(self.quat_wxyz, point)
        t = self.translation_m
        return (r[0] + t[0], r[1] + t[1], r[2] + t[2])

    def rotate(self, quat_wxyz: Quat) -> Quat:
        """An orientation in frame ``b`` -> the same orientation in frame ``a``."""
        return _unit(quat_multiply(self.quat_wxyz, _unit(quat_wxyz)))

    def compose(self, other: Transform) -> Transform:
        """``T_a_b ∘ T_b_c = T_a_c``."""
        return Transform(self.apply(other.translation_m),
                         quat_multiply(self.quat_wxyz, other.quat_wxyz))

    def inverse(self) -> Transform:
        """``T_a_b`` -> ``T_b_a``."""
        w, x, y, z = self.quat_wxyz
        conj = (w, -x, -y, -z)
        r = _rotate(conj, self.translation_m)
        return Transform((-r[0], -r[1], -r[2]), conj)

    def angle_deg(self) -> float:
        """The rotation's angle, degrees (0 to 180)."""
        return math.degrees(2.0 * math.acos(min(1.0, abs(self.quat_wxyz[0]))))

    def interpolate(self, other: Transform, u: float) -> Transform:
        """Linear in translation, slerp in rotation; ``u`` = 0 gives self, 1 gives ``other``."""
        a, b = self.translation_m, other.translation_m
        return Transform(tuple(x + u * (y - x) for x, y in zip(a, b, strict=True)),  # type: ignore[arg-type]
                         slerp(self.quat_wxyz, other.quat_wxyz, u))


#: ``T_optical_body``: locimem's camera body axes (x forward, y left, z up) expressed in the
#: optical frame (z forward, x right, y down): body x = optical z, body y = -optical x,
#: body z = -optical y. ``T_map_optical ∘ OPTICAL_TO_BODY = T_map_body``.
OPTICAL_TO_BODY = Transform((0.0, 0.0, 0.0), (0.5, 0.5, -0.5, 0.5))


class TransformUnavailable(Exception):
    """A transform the tf data cannot give without guessing; ``reason`` is short and stable
    (it groups skipped scans in the ingest summary)."""

    def __init__(self, reason: str) -> None:
        super().__init__(reason)
        self.reason = reason


class _Edge:
    """One parent <- child edge: static, or a time series (seconds) interpolated between
    samples and never extrapolated."""

    __slots__ = ("_items", "_steps", "_times", "parent", "static")

    def __init__(self, parent: str, static: bool) -> None:
        self.parent = parent
        self.static = static
        self._items: list[tuple[float, Transform]] = []
        self._times: list[float] | None = None
        self._steps: set[float] = set()  # sample times the edge jumps to, not glides to

    def add(self, t_s: float, transform: Transform) -> None:
        if self.static:
            self._items = [(t_s, transform)]  # a later static transform replaces the earlier
        else:
            self._items.append((t_s, transform))
            self._times = None

    def at(self, t_s: float, child: str) -> Transform:
        if self.static:
            return self._items[0][1]
        times = self.times()
        if t_s < times[0] or t_s > times[-1]:
            raise TransformUnavailable(
                f"tf {self.parent} <- {child}: no data around the stamp (would extrapolate)")
        i = bisect.bisect_left(times, t_s)
        t1, tr1 = self._items[i]
        if t1 == t_s:
            return tr1
        t0, tr0 = self._items[i - 1]
        if t1 in self._steps:  # a jump: what held before it holds until it
            return tr0
        return tr0.interpolate(tr1, (t_s - t0) / (t1 - t0))

    def times(self) -> list[float]:
        if self._times is None:
            self._items.sort(key=lambda item: item[0])
            self._times = [item[0] for item in self._items]
        return self._times

    def jumps(self, min_m: float, min_deg: float) -> list[tuple[float, Transform, Transform]]:
        """(time, before, after) of each step between consecutive samples that moves the
        child by ``min_m`` or more, or turns it by ``min_deg`` or more; from now on
        :meth:`at` holds the value before a jump until the jump's sample."""
        if self.static:
            return []
        self.times()
        out = []
        for (_, a), (t1, b) in zip(self._items, self._items[1:], strict=False):
            step = b.compose(a.inverse())
            if math.hypot(*step.translation_m) >= min_m or step.angle_deg() >= min_deg:
                out.append((t1, a, b))
                self._steps.add(t1)
        return out


@dataclass(frozen=True, slots=True)
class TfJump:
    """A step of a time-varying edge below the map frame (how SLAM publishes a loop closure
    or a relocalisation on ``map -> odom``): at ``t_s`` the edge ``map_frame <- child`` went
    from ``before`` to ``after``. ``correction`` is the map-frame correction of what was seen
    with ``before`` (``after ∘ before⁻¹``: a point placed at ``x`` belongs at
    ``correction · x``)."""

    t_s: float
    child: str
    before: Transform
    after: Transform

    @property
    def correction(self) -> Transform:
        return self.after.compose(self.before.inverse())


class TfBuffer:
    """The tf tree of a recording: static edges (``/tf_static``) and time series (``/tf``).

    :meth:`lookup` chains edges through the tree to the common ancestor and interpolates each
    time-varying edge at the stamp (translation linearly, rotation by slerp). Frames that are
    not connected, or a stamp outside an edge's data, raise :class:`TransformUnavailable` —
    a transform is never extrapolated or guessed.

    >>> tf = TfBuffer()
    >>> tf.add("map", "odom", 0.0, Transform((1.0, 0.0, 0.0), (1, 0, 0, 0)), static=True)
    >>> tf.add("odom", "base", 0.0, Transform((0.0, 0.0, 0.0), (1, 0, 0, 0)))
    >>> tf.add("odom", "base", 2.0, Transform((2.0, 0.0, 0.0), (1, 0, 0, 0)))
    >>> tf.lookup("map", "base", 1.0).translation_m
    (2.0, 0.0, 0.0)
    """

    def __init__(self) -> None:
        self._edges: dict[str, _Edge] = {}  # child -> edge to its parent

    def add(self, parent: str, child: str, t_s: float, transform: Transform,
            static: bool = False) -> None:
        """Record ``T_parent_child`` at time ``t_s`` (seconds). A frame keeps its first parent;
        a static edge wins over a time series for the same child."""
        parent, child = parent.lstrip("/"), child.lstrip("/")
        if not parent or not child or parent == child:
            raise InvalidInput(f"a tf edge needs two distinct frame names, got {parent!r} <- "
                               f"{child!r}")
        edge = self._edges.get(child)
        if edge is None or (static and not edge.static):
            edge = self._edges[child] = _Edge(parent, static)
        elif edge.static and not static:
            return
        if edge.parent != parent:
            raise InvalidInput(f"frame {child!r} has two parents in the tf data: "
                               f"{edge.parent!r} and {parent!r}")
        edge.add(t_s, transform)

    @property
    def frames(self) -> set[str]:
        return set(self._edges) | {e.parent for e in self._edges.values()}

    def roots(self) -> list[str]:
        """The frames without a parent (each the top of one tree), sorted."""
        return sorted(f for f in self.frames if f not in self._edges)

    def root_of(self, frame: str) -> str:
        """The top of the tree ``frame`` is in (itself when it has no parent)."""
        return self._chain(frame.lstrip("/"))[-1]

    def _chain(self, frame: str) -> list[str]:
        """``frame`` and its ancestors up to the root. A cycle, or a chain longer than
        :data:`MAX_TF_DEPTH` frames, is an :class:`InvalidInput` saying which."""
        chain = [frame]
        seen = {frame}
        while chain[-1] in self._edges:
            parent = self._edges[chain[-1]].parent
            if parent in seen:
                loop = [*chain[chain.index(parent):], parent]
                raise InvalidInput("the tf data has a cycle: " + " <- ".join(
                    repr(f) for f in reversed(loop)) + " (each frame must have one parent "
                    "and the parents must end at a root)")
            chain.append(parent)
            seen.add(parent)
            if len(chain) > MAX_TF_DEPTH:
                raise InvalidInput(
                    f"the tf chain from {frame!r} up to its root is longer than "
                    f"{MAX_TF_DEPTH} frames (a robot's tf tree is well under 100 deep): the "
                    "tf data is broken")
        return chain

    def check(self) -> None:
        """Raise :class:`InvalidInput` if the edges do not form trees: a cycle, or a chain
        deeper than :data:`MAX_TF_DEPTH` frames (checked once for every frame)."""
        depth: dict[str, int] = {}  # frame -> frames from it up to its root, itself included
        for start in sorted(self._edges):
            path: list[str] = []
            on_path: set[str] = set()
            f = start
            while f not in depth and f in self._edges and len(path) <= MAX_TF_DEPTH:
                path.append(f)
                on_path.add(f)
                f = self._edges[f].parent
                if f in on_path:
                    self._chain(start)  # raises, naming the cycle
            base = depth.get(f, 1)
            for i, g in enumerate(reversed(path)):
                depth[g] = base + i + 1
            if path and depth[path[0]] > MAX_TF_DEPTH:
                self._chain(start)  # raises, naming the chain

    def split_jumps(self, parent: str, *, min_m: float, min_deg: float) -> list[TfJump]:
        """The jumps of the time-varying edges right below ``parent`` (the map frame), in
        time order: consecutive samples of one edge that differ by ``min_m`` metres or more,
        or ``min_deg`` degrees or more. From then on a lookup between the sample before a
        jump and the jump holds the value before it (interpolating across a jump would place
        the scans just before a loop closure halfway between two beliefs)."""
        parent = parent.lstrip("/")
        out = [TfJump(t, child, a, b)
               for child, edge in sorted(self._edges.items()) if edge.parent == parent
               for t, a, b in edge.jumps(min_m, min_deg)]
        return sorted(out, key=lambda j: (j.t_s, j.child))

    def _to_ancestor(self, chain: list[str], t_s: float) -> Transform:
        out = Transform.identity()
        for child in chain[:-1]:  # T_root_child = T_root_parent ∘ T_parent_child, built upward
            out = self._edges[child].at(t_s, child).compose(out)
        return out

    def lookup(self, target: str, source: str, t_s: float) -> Transform:
        """``T_target_source`` at ``t_s`` (seconds): maps source-frame coordinates into the
        target frame."""
        target, source = target.lstrip("/"), source.lstrip("/")
        if target == source:
            return Transform.identity()
        up_s, up_t = self._chain(source), self._chain(target)
        common = next((f for f in up_s if f in set(up_t)), None)
        if common is None:
            raise TransformUnavailable(f"tf {target} <- {source}: frames not connected")
        s_part = up_s[:up_s.index(common) + 1]
        t_part = up_t[:up_t.index(common) + 1]
        return self._to_ancestor(t_part, t_s).inverse().compose(self._to_ancestor(s_part, t_s))


@dataclass(frozen=True, slots=True)
class CameraWindow:
    """The part of a camera image locimem's centred pinhole model describes exactly.

    locimem's camera has its principal point at the image centre; a real one (``K``) rarely
    does. The window is the largest block of whole pixels centred on the principal point
    (within half a pixel): the fields of view follow from it and ``fx``, ``fy``, and a depth
    image is cropped to it. It lies inside the real view, so no absence is ever credited for a
    place the camera could not see.
    """

    row0: int
    row1: int  # exclusive
    col0: int
    col1: int  # exclusive
    fov_deg: float
    vfov_deg: float


def _centred(c_ros: float, n: int) -> tuple[int, int]:
    """Pixel range [a, b) of an axis of ``n`` pixels centred on the ROS principal point
    coordinate ``c_ros`` (ROS/OpenCV: pixel centres at integers; locimem: at i + 0.5)."""
    c = c_ros + 0.5
    half = math.floor(min(c, n - c))  # symmetric to within half a pixel
    if half < 1:
        raise InvalidInput(f"principal point {c_ros} leaves no image around it (size {n})")
    a = round(c - half)
    return max(0, a), min(n, a + 2 * half)


def camera_window(k: Sequence[float], width: int, height: int) -> CameraWindow:
    """The centred window of a ``sensor_msgs/CameraInfo`` (``K`` row-major 3x3, pixels).

    >>> w = camera_window([320.0, 0, 319.5, 0, 320.0, 239.5, 0, 0, 1], 640, 480)
    >>> (w.col0, w.col1, w.row0, w.row1, round(w.fov_deg, 6), round(w.vfov_deg, 4))
    (0, 640, 0, 480, 90.0, 73.7398)
    """
    if len(k) != 9:
        raise InvalidInput(f"camera K must have 9 entries, got {len(k)}")
    fx, cx, fy, cy = float(k[0]), float(k[2]), float(k[4]), float(k[5])
    if not all(math.isfinite(v) for v in (fx, cx, fy, cy)) or fx <= 0 or fy <= 0:
        raise InvalidInput(f"camera K must have finite fx, fy > 0, got fx={fx}, fy={fy}")
    if int(width) < 1 or int(height) < 1:
        raise InvalidInput(f"camera info must have width and height >= 1, got "
                           f"{width}x{height}")
    c0, c1 = _centred(cx, int(width))
    r0, r1 = _centred(cy, int(height))
    fov = math.degrees(2.0 * math.atan((c1 - c0) / 2.0 / fx))
    vfov = math.degrees(2.0 * math.atan((r1 - r0) / 2.0 / fy))
    return CameraWindow(r0, r1, c0, c1, fov, vfov)


def depth_to_metres(data: bytes | np.ndarray, encoding: str, width: int, height: int,
                    step: int, bigendian: bool) -> np.ndarray:
    """A ``sensor_msgs/Image`` depth payload -> float32 (height, width) metres, NaN where
    there is no reading. ``16UC1`` (and its alias ``mono16``) is millimetres with 0 meaning no
    reading; ``32FC1`` is metres (non-finite or <= 0: no reading). Values are z-depth in the
    optical frame, which is locimem's forward distance (see the module docstring).

    >>> raw = np.array([[1500, 0]], dtype="<u2").tobytes()
    >>> depth_to_metres(raw, "16UC1", 2, 1, 4, False).tolist()
    [[1.5, nan]]
    """
    dtype: np.dtype[Any]
    if encoding in ("16UC1", "mono16"):
        dtype, unit = np.dtype(">u2" if bigendian else "<u2"), 0.001
    elif encoding == "32FC1":
        dtype, unit = np.dtype(">f4" if bigendian else "<f4"), 1.0
    else:
        raise InvalidInput(f"unknown depth encoding {encoding!r} (expected 16UC1 millimetres "
                           "or 32FC1 metres)")
    payload: Any = data  # bytes, or the uint8 array rosbags decodes ``data`` to
    buf = np.frombuffer(memoryview(payload).cast("B"), dtype=np.uint8)
    row_bytes = width * dtype.itemsize
    if width < 1 or height < 1 or step < row_bytes or buf.size < step * (height - 1) + row_bytes:
        raise InvalidInput(f"depth image of {width}x{height} {encoding} with step {step} "
                           f"needs {step * height} bytes, got {buf.size}")
    rows = np.lib.stride_tricks.as_strided(buf, shape=(height, row_bytes), strides=(step, 1))
    values = np.ascontiguousarray(rows).view(dtype).reshape(height, width)
    metres = values.astype(np.float64) * unit
    metres[~np.isfinite(metres) | (metres <= 0.0)] = np.nan
    return metres.astype(np.float32)
