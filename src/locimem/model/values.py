"""The plain data that crosses locimem's boundaries.

Frames and units: every position is in one *map frame*, metres, z up; sizes are box extents in
metres along the box axes; quaternions are (w, x, y, z). Times are seconds on the caller's clock
(``t`` of each scan) — locimem never reads the wall clock for what it believes.
"""

from __future__ import annotations

import enum
import math
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from locimem.check import (
    check_coordinate_domain,
    check_depth_image,
    check_distance_domain,
    check_feature,
    check_label,
    check_path_text,
    check_positive,
    check_quaternion,
    check_size_domain,
    check_track_id,
    check_unit_interval,
    check_vec,
)
from locimem.errors import InvalidInput

Vec3 = tuple[float, float, float]
Quat = tuple[float, float, float, float]


class EventKind(str, enum.Enum):
    """What an event says happened to an object."""

    APPEARED = "APPEARED"  # a new identity was created from a detection
    PROMOTED = "PROMOTED"  # enough detections: the object may now be published
    LABEL_CHANGED = "LABEL_CHANGED"  # the voted label changed
    MOVED = "MOVED"  # the object's settled place changed by more than the tight radius
    LOST = "LOST"  # belief fell below the lost line
    REACQUIRED = "REACQUIRED"  # a lost object was seen again and kept its identity
    CORRECTED = "CORRECTED"  # a person (or program) corrected label, place or attributes
    FORGOTTEN = "FORGOTTEN"  # removed from every read path; a tombstone remembers it
    SUPPRESSED = "SUPPRESSED"  # a forgotten thing was seen again and kept out
    REVIVED = "REVIVED"  # a forgotten thing came back with enough evidence to restore it
    COMPACTED = "COMPACTED"  # maintenance thinned the observation log (object id 0)
    RELATION = "RELATION"  # a relation (on, in, under, next_to …) began or ended
    ROOM_DEFINED = "ROOM_DEFINED"  # a room's floor polygon was defined (object id 0)
    ROOMS_CONNECTED = "ROOMS_CONNECTED"  # two rooms were linked for paths (object id 0)
    ROOM_REMOVED = "ROOM_REMOVED"  # a room and its links were removed (object id 0)
    EXPIRED = "EXPIRED"  # a tentative identity that was never promoted was dropped quietly
    MERGED = "MERGED"  # a duplicate identity was merged into this (older) one
    SPLIT = "SPLIT"  # part of this identity's evidence became a new identity
    PRIOR = "PRIOR"  # the long-term (prior) map's entry for this object was set or removed
    DELTA = "DELTA"  # a difference from the prior map was opened or changed status
    KEYFRAME = "KEYFRAME"  # a frame that saw the object was kept (and maybe one archived)
    SETTLED = "SETTLED"  # a thing published at its first sighting settled where more put it
    REANCHORED = "REANCHORED"  # a pose correction moved the sightings the object's place came from
    MAP_EPOCH = "MAP_EPOCH"  # a map epoch (a SLAM session's frame) began (object id 0)
    MAP_ALIGNED = "MAP_ALIGNED"  # a map epoch's transform into the memory's frame was set (id 0)

    def __str__(self) -> str:
        return self.value


OBJECTLESS_KINDS: frozenset[EventKind] = frozenset({
    EventKind.COMPACTED, EventKind.ROOM_DEFINED, EventKind.ROOMS_CONNECTED,
    EventKind.ROOM_REMOVED, EventKind.MAP_EPOCH, EventKind.MAP_ALIGNED})
"""The kinds of event about no object: they name object id 0 (every other kind a positive
id). The validator, the event lines and the audit read it from here."""


class ObjectStatus(str, enum.Enum):
    """The band an object's belief is in.

    ``confirmed``: promoted, confidence >= ``publish_min``, and not withdrawn by the looks
    that missed it since its last sighting (``withdraw_ratio``; it is in :meth:`tracked`).
    ``tentative``: kept and still matchable (not yet promoted, or its confidence has faded).
    ``doubted``: still above the lost line, but the camera looked where it should be and did
    not see it (``doubt_after_misses`` times in a row) and it is no longer confirmed.
    ``lost``: belief fell below ``lost_below``; remembered, and re-acquirable for a while.
    ``forgotten``: removed on request; only its tombstone and the record remain.
    """

    CONFIRMED = "confirmed"
    TENTATIVE = "tentative"
    DOUBTED = "doubted"
    LOST = "lost"
    FORGOTTEN = "forgotten"

    def __str__(self) -> str:
        return self.value


@dataclass(frozen=True, slots=True)
class Detection:
    """One 3D detection from perception.

    Args:
        label: class name from the detector (case and spacing are normalised).
        confidence: detector score in [0, 1].
        center: box centre (x, y, z), metres, map frame; each |coordinate| <= 1e6 m
            (:data:`~locimem.check.MAX_ABS_COORD_M`).
        size: box extents (dx, dy, dz), metres, each >= 0 and <= 1e4 m.
        feature: optional appearance embedding (1-D, at most 4096 values); every detection in
            a store uses one width.
        track_id: optional short-term perception track id (int or str; a string is checked
            like a label: no control, format or surrogate characters).
        orientation: optional box orientation, unit quaternion (w, x, y, z), map frame.

    A ROS ``vision_msgs/Detection3D`` maps onto it without loss: ``results[0].hypothesis``
    gives label and confidence, ``bbox.center`` gives centre and orientation, ``bbox.size``
    the size, and ``id`` the track id.
    """

    label: str
    confidence: float
    center: Vec3
    size: Vec3
    feature: np.ndarray | None = None
    track_id: str | None = None
    orientation: Quat | None = None

    def __post_init__(self) -> None:
        set_ = object.__setattr__
        set_(self, "label", check_label(self.label))
        set_(self, "confidence", check_unit_interval(self.confidence, "confidence"))
        set_(self, "center", check_coordinate_domain(self.center, "center"))
        set_(self, "size", check_size_domain(self.size, "size"))
        if self.feature is not None:
            set_(self, "feature", check_feature(self.feature))
        set_(self, "track_id", check_track_id(self.track_id))
        if self.orientation is not None:
            set_(self, "orientation", check_quaternion(self.orientation))

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, Detection):
            return NotImplemented
        same_feature = (self.feature is None and other.feature is None) or (
            self.feature is not None
            and other.feature is not None
            and np.array_equal(self.feature, other.feature)
        )
        return same_feature and (
            self.label,
            self.confidence,
            self.center,
            self.size,
            self.track_id,
            self.orientation,
        ) == (other.label, other.confidence, other.center, other.size, other.track_id,
              other.orientation)

    __hash__ = None  # type: ignore[assignment]


@dataclass(frozen=True, slots=True)
class Camera:
    """Where the camera was and what it could see during a scan.

    Args:
        position: camera origin (x, y, z), metres, map frame, within 1e6 m of the origin.
        quaternion: (w, x, y, z) rotating the camera body frame into the map frame. Body frame
            follows ROS REP 103: x forward (the optical axis), y left, z up.
        fov_deg: horizontal field of view in degrees, in (0, 180).
        range_m: how far the detector is trusted to see, metres, > 0.
        vfov_deg: vertical field of view in degrees, in (0, 180).
        depth: optional (h, w) array of forward distances (metres, along pinhole rays), top row
            first, left column first; non-finite or <= 0 means "no reading".
        image: optional path (or URI) of the image this scan came from, kept with the
            object's keyframe evidence, exactly as given (spaces kept; no control characters).
        intrinsics: optional pinhole intrinsics (fx, fy, cx, cy, width, height) in pixels.
        frame: which camera frame ``quaternion`` rotates into the map: ``"body"`` (REP 103:
            x forward, y left, z up; the default) or ``"optical"`` (the ROS optical frame of
            ``*_optical_frame`` and ``sensor_msgs/CameraInfo``: z forward, x right, y down).
            An optical quaternion is converted at construction, so ``quaternion`` always
            holds the body frame's rotation (and ``frame`` reads ``"body"``).

    >>> facing_x = Camera((0, 0, 1), (0.5, -0.5, 0.5, -0.5), 90.0, 4.0, frame="optical")
    >>> facing_x.quaternion, facing_x.frame   # an optical frame looking along map +x
    ((1.0, 0.0, 0.0, 0.0), 'body')
    """

    position: Vec3
    quaternion: Quat
    fov_deg: float
    range_m: float
    vfov_deg: float = 60.0
    depth: np.ndarray | None = field(default=None, compare=False)
    image: str | None = None
    intrinsics: tuple[float, float, float, float, float, float] | None = None
    frame: str = "body"

    def __post_init__(self) -> None:
        set_ = object.__setattr__
        set_(self, "position", check_coordinate_domain(self.position, "camera.position"))
        set_(self, "quaternion", check_quaternion(self.quaternion, "camera.quaternion"))
        if self.frame not in ("body", "optical"):
            raise InvalidInput(f"camera.frame must be 'body' (x forward, y left, z up) or "
                               f"'optical' (z forward, x right, y down), got {self.frame!r}")
        if self.frame == "optical":
            set_(self, "quaternion", _optical_to_body(self.quaternion))
            set_(self, "frame", "body")
        for name in ("fov_deg", "vfov_deg"):
            value = check_positive(getattr(self, name), f"camera.{name}")
            if value >= 180.0:
                raise InvalidInput(f"camera.{name} must be < 180 degrees, got {value}")
            set_(self, name, value)
        set_(self, "range_m", check_distance_domain(self.range_m, "camera.range_m"))
        if self.depth is not None:
            set_(self, "depth", check_depth_image(self.depth, "camera.depth"))
        if self.image is not None:
            set_(self, "image", check_path_text(self.image, "camera.image", max_chars=4096))
        if self.intrinsics is not None:
            values = check_vec(self.intrinsics, "camera.intrinsics", 6)
            if min(values) < 0 or values[0] <= 0 or values[1] <= 0:
                raise InvalidInput("camera.intrinsics must be (fx, fy, cx, cy, width, height) "
                                   "in pixels, with fx, fy > 0")
            set_(self, "intrinsics", values)

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready form (the depth image is summarised by its shape, not stored)."""
        out: dict[str, Any] = {
            "position": list(self.position),
            "quaternion": list(self.quaternion),
            "fov_deg": self.fov_deg,
            "range_m": self.range_m,
            "vfov_deg": self.vfov_deg,
        }
        if self.depth is not None:
            out["depth_shape"] = list(self.depth.shape)
        if self.image is not None:
            out["image"] = self.image
        if self.intrinsics is not None:
            out["intrinsics"] = list(self.intrinsics)
        return out


# The body frame (x forward, y left, z up) expressed in the optical frame (z forward, x right,
# y down), as a quaternion (w, x, y, z): body x = optical z, body y = -optical x, body z =
# -optical y.
_BODY_IN_OPTICAL = (0.5, 0.5, -0.5, 0.5)


def _optical_to_body(q: Quat) -> Quat:
    """The rotation of the body frame into the map, given that of the optical frame."""
    w1, x1, y1, z1 = q
    w2, x2, y2, z2 = _BODY_IN_OPTICAL
    out = (w1 * w2 - x1 * x2 - y1 * y2 - z1 * z2, w1 * x2 + x1 * w2 + y1 * z2 - z1 * y2,
           w1 * y2 - x1 * z2 + y1 * w2 + z1 * x2, w1 * z2 + x1 * y2 - y1 * x2 + z1 * w2)
    return check_quaternion(tuple(round(v, 15) + 0.0 for v in out), "camera.quaternion")


@dataclass(frozen=True, slots=True)
class TrackedObject:
    """A read-only view of one remembered object at the memory's current time."""

    id: int
    label: str
    center: Vec3
    size: Vec3
    confidence: float
    status: ObjectStatus
    first_seen: float
    last_seen: float
    n_detections: int
    label_votes: dict[str, float]
    track_id: str | None = None
    orientation: Quat | None = None
    lost_at: float | None = None
    attributes: dict[str, Any] = field(default_factory=dict)
    corrected_label: str | None = None  # a person's label, which the vote does not overturn
    source: str = "tracker"  # who first reported it (a pipeline, a prior map, a person)
    label_by: str | None = None  # who set ``corrected_label``
    level: str = "item"  # in the scene graph: "furniture" or "item" (rooms are not objects)

    def distance_to(self, point: Vec3) -> float:
        """Euclidean distance in metres from the object's centre to ``point``."""
        return math.dist(self.center, point)


@dataclass(slots=True)  # not frozen: frozen init costs ~3 us a record on the hot path
class Observation:
    """One detection as recorded: the evidence stream.

    ``object_id`` is the object it was given to (None when rejected, with ``rejected`` giving
    the reason); ``tier`` says how it was matched: ``new``, ``track``, ``tight``, ``drift``,
    ``reacquire``, ``appearance`` (its embedding picked the object out), ``split`` (it and
    held sightings became a new identity) or ``revive``. ``weight`` is the step the object's
    centre and size took toward this sighting (1 = jump to it; 0 = *held*: it refreshed the
    object without moving it), so replay needs no tracker config. Records are read-only by
    contract: the store never rewrites them, and neither should you.
    """

    seq: int
    commit: int
    t: float
    index: int
    label: str
    confidence: float
    center: Vec3
    size: Vec3
    object_id: int | None
    tier: str | None
    weight: float = 1.0
    rejected: str | None = None
    track_id: str | None = None
    orientation: Quat | None = None
    feature: np.ndarray | None = field(default=None, compare=False)
    key: str | None = None  # rejected ones: "label@cell", or "tomb:<id>" when suppressed


@dataclass(slots=True)
class Event:
    """One lifecycle event: the story stream. ``data`` carries the state it changed."""

    seq: int
    commit: int
    t: float
    kind: EventKind
    object_id: int
    label: str
    data: dict[str, Any]


@dataclass(frozen=True, slots=True)
class Commit:
    """One atomic append: a scan (or, later, a correction). Record time lives here.

    ``t`` is valid (world) time; ``recorded_at`` is when the store wrote it (wall clock, kept
    for audit only — nothing the memory believes depends on it).
    """

    id: int
    kind: str
    t: float
    recorded_at: float
    actor: str
    reason: str | None
    n_detections: int
    camera: dict[str, Any] | None = None
    missed: tuple[int, ...] = ()  # objects the camera looked at and did not see
    together: tuple[tuple[int, int], ...] = ()  # pairs of nearby objects both seen in this scan
    # the evidence of absence each missed object took, in seconds of the belief's time scale
    # (aligned with ``missed``; see docs/architecture.md, "Belief")
    miss_credits: tuple[float, ...] = ()


@dataclass(frozen=True, slots=True)
class MapEpoch:
    """One SLAM session's map frame, as the memory knows it (:meth:`map_epochs`).

    ``status``: ``"base"`` (the memory's own frame: the first epoch), ``"provisional"`` (not
    aligned yet: its scans are tracked apart, in ``scope``, and not matched to the memory's
    objects), ``"aligned"`` (the memory found the transform) or ``"given"`` (a person or a
    map server set it). ``transform`` maps the epoch's coordinates into the memory's frame
    (``(translation_xyz, quaternion_wxyz)``; None while provisional); ``residual_m`` and
    ``inliers`` are the fit's (an automatic alignment), ``since`` the valid time it began,
    ``why`` the latest attempt's word on a provisional epoch ("only 2 landmarks agree ...").
    """

    name: str
    status: str
    since: float
    transform: tuple[tuple[float, float, float], tuple[float, float, float, float]] | None = None
    yaw_deg: float | None = None
    residual_m: float | None = None
    inliers: int = 0
    scope: str | None = None
    why: str | None = None

    def to_dict(self) -> dict[str, Any]:
        return {"name": self.name, "status": self.status, "since": self.since,
                "transform": None if self.transform is None else [list(v) for v in
                                                                  self.transform],
                "yaw_deg": self.yaw_deg, "residual_m": self.residual_m,
                "inliers": self.inliers, "scope": self.scope}

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> MapEpoch:
        pair = d.get("transform")
        return cls(d["name"], d["status"], float(d["since"]),
                   None if pair is None else (tuple(pair[0]), tuple(pair[1])),
                   d.get("yaw_deg"), d.get("residual_m"), int(d.get("inliers", 0)),
                   d.get("scope"))


@dataclass(frozen=True, slots=True)
class ScanResult:
    """What one :meth:`ObjectMemory.observe` call did.

    ``assignments[i]`` is the object id given to detection ``i`` (None if it was rejected);
    ``events`` are the lifecycle events the scan produced, in order.
    """

    commit: int
    t: float
    assignments: tuple[int | None, ...]
    events: tuple[Event, ...]
    rejected: dict[int, str] = field(default_factory=dict)
    # what looked wrong with the scan itself (also logged on the ``locimem`` logger), e.g.
    # most detections outside the view the camera claims: a wrong frame or pose
    warnings: tuple[str, ...] = ()


@dataclass(frozen=True, slots=True)
class RecallResult:
    """The answer to ``recall(name)``: what the memory knows about the named thing.

    ``found`` is False when nothing by that name was ever remembered (then ``text`` says so and
    the other fields are None). ``others`` lists further ids that also answer to the name.
    """

    query: str
    found: bool
    text: str
    object_id: int | None = None
    label: str | None = None
    status: ObjectStatus | None = None
    center: Vec3 | None = None
    last_seen: float | None = None
    confidence: float | None = None
    lost_at: float | None = None
    others: tuple[int, ...] = ()


@dataclass(frozen=True, slots=True)
class AuditEntry:
    """One mutation of the memory: who, why, valid time, record time, and what it changed."""

    commit: int
    kind: str  # scan | correction | forget | maintenance
    actor: str
    reason: str | None
    t: float  # valid (world) time
    recorded_at: float  # record time: when the store wrote it
    events: tuple[Event, ...]


@dataclass(frozen=True, slots=True)
class Tombstone:
    """What remains of a forgotten object: enough to recognise it if it comes back."""

    object_id: int
    label: str
    labels: tuple[str, ...]  # every label it was ever seen under
    center: Vec3
    size: Vec3
    forgotten_at: float
    reason: str | None
    actor: str
    suppressed: int  # sightings kept out since it was forgotten
    last_suppressed: float | None


@dataclass(frozen=True, slots=True)
class RejectionKey:
    """Rejected evidence grouped by key, so a repeat is recognised rather than re-scored."""

    key: str
    reason: str
    count: int
    first_seq: int
    last_seq: int
    last_t: float


@dataclass(frozen=True, slots=True)
class CompactionReport:
    """What ``compact()`` did (or, with ``dry_run``, would do): the observations examined up
    to the horizon and those removed, and the store's size before and after (after the space
    was reclaimed, with ``reclaim=True``; both None on a dry run)."""

    horizon_commit: int | None  # observations at or before this commit were examined
    horizon_t: float | None
    examined: int
    removed: int
    dry_run: bool
    bytes_before: int | None = None
    bytes_after: int | None = None
    reclaimed: bool = False  # the store gave the freed space back

    @property
    def kept(self) -> int:
        return self.examined - self.removed
