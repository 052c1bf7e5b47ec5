"""Keyframe evidence: up to ``N_KEYFRAMES`` references per object to the frames that saw it best.

Pure and deterministic (no clock, no randomness, no config): the tracker scores a candidate
frame with :func:`visibility`, :func:`novelty` and :func:`score`, and :func:`offer` decides
whether it is kept and which kept frame, if any, it replaces. A replaced frame is returned to be
archived, never dropped; kept frames are never modified (their scores are frozen when offered).

Frames and units: positions and centres in metres, map frame, z up; quaternions (w, x, y, z)
rotate the camera body frame (x forward, y left, z up) into the map frame, as in
:class:`~locimem.model.Camera`.

The score
---------
``score = W_COVERAGE * coverage + W_NOVELTY * novelty + W_DEPTH * depth`` with weights 0.5, 0.3
and 0.2 (they sum to 1, so a score lies in [0, 1]). Without a depth image (``depth`` None) the
other two are renormalised: ``(0.5 * coverage + 0.3 * novelty) / 0.8``.

    >>> score(1.0, 0.5, 0.0)
    0.65
    >>> score(1.0, 1.0, None)
    1.0

The retention policy
--------------------
While fewer than ``n`` frames are kept, a candidate is kept. When full, the *worst* kept frame
is the one with the lowest score and, among equal scores, the most recently offered (the larger
``t``, then the larger ``seq``); the candidate replaces it only if its score is strictly higher,
and goes to the *end* of the kept tuple, so kept frames stay in the order they were offered.
With offers in log order (ascending ``(t, seq)``) the kept set is then always the top ``n`` of
every frame offered so far, by score and, among equal scores, earliest offered first: a
function of the frames offered (not of the order they came in, ties aside), and the set of
largest total score.

    >>> def frame(seq, s):
    ...     return Keyframe(t=float(seq), commit=seq, seq=seq, position=(0.0, 0.0, 1.0),
    ...                     quaternion=(1.0, 0.0, 0.0, 0.0), coverage=s, novelty=s, depth=s,
    ...                     score=s)
    >>> kept = ()
    >>> for seq, s in enumerate([0.4, 0.9, 0.2]):
    ...     kept, archived, was_kept = offer(kept, frame(seq, s), n=2)
    >>> [k.seq for k in kept], archived, was_kept
    ([0, 1], None, False)
    >>> kept, archived, was_kept = offer(kept, frame(3, 0.5), n=2)
    >>> [k.seq for k in kept], archived.seq, was_kept
    ([1, 3], 0, True)
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from locimem.check import (
    check_float,
    check_int,
    check_size,
    check_time,
    check_unit_interval,
    check_vec,
)
from locimem.errors import InvalidInput
from locimem.geometry import (
    in_view,
    intrinsics,
    pixel_rays,
    project,
    ray_box_chord,
    rotation_matrix_from_wxyz,
)
from locimem.model import Camera

__all__ = [
    "N_KEYFRAMES",
    "W_COVERAGE",
    "W_DEPTH",
    "W_NOVELTY",
    "Keyframe",
    "could_join",
    "make_candidate",
    "novelty",
    "offer",
    "sample_points",
    "score",
    "visibilities",
    "visibility",
]

N_KEYFRAMES = 5  # frames kept per object by default
_DEPTH_SAMPLES = 4096  # depth pixels tested per box at most (a grid over larger boxes)

W_COVERAGE = 0.5  # weight of the share of the object's box the frame covers
W_NOVELTY = 0.3  # weight of how new the viewpoint is among the kept frames
W_DEPTH = 0.2  # weight of the share of valid depth where the box projects

NOVELTY_FULL_DEG = 90.0  # a viewpoint this far (degrees) from every kept one is wholly new

# sample points of a box, as multiples of its half extents: the 8 corners, the 6 face centres
# and the centre (15 points, equally weighted)
_SAMPLE_SIGNS = np.array(
    [(sx, sy, sz) for sx in (-1, 1) for sy in (-1, 1) for sz in (-1, 1)]
    + [(-1, 0, 0), (1, 0, 0), (0, -1, 0), (0, 1, 0), (0, 0, -1), (0, 0, 1)]
    + [(0, 0, 0)],
    dtype=np.float64,
)


@dataclass(frozen=True, slots=True)
class Keyframe:
    """A reference to one camera frame that saw an object, and how well it saw it.

    Args:
        t: valid time of the scan, seconds.
        commit: id of the scan's commit.
        seq: sequence number of the observation that saw the object in this frame.
        position: camera origin (x, y, z), metres, map frame.
        quaternion: camera orientation (w, x, y, z), body into map frame.
        intrinsics: optional pinhole intrinsics (fx, fy, cx, cy, width, height) of the image,
            pixels.
        image: optional path (or URI) of the frame's image; the memory never reads it.
        embedding: optional small appearance embedding of the object in this frame.
        coverage: share of the object's box the frame covers, in [0, 1].
        novelty: how new the viewpoint was among the frames kept when it was offered, [0, 1].
        depth: share of valid depth readings where the box projects, in [0, 1]; None when the
            scan had no depth image.
        score: the retention score (:func:`score`), frozen when the frame was offered.

    Kept frames are immutable evidence: build a new one rather than changing one.
    """

    t: float
    commit: int
    seq: int
    position: tuple[float, float, float]
    quaternion: tuple[float, float, float, float]
    coverage: float
    novelty: float
    depth: float | None
    score: float
    intrinsics: tuple[float, float, float, float, float, float] | None = None
    image: str | None = None
    embedding: tuple[float, ...] | None = None

    def __post_init__(self) -> None:
        set_ = object.__setattr__
        set_(self, "t", check_time(self.t, "keyframe.t"))
        set_(self, "commit", check_int(self.commit, "keyframe.commit"))
        set_(self, "seq", check_int(self.seq, "keyframe.seq"))
        set_(self, "position", check_vec(self.position, "keyframe.position", 3))
        # checked, not renormalised: a frame must round-trip to the exact same floats
        set_(self, "quaternion", check_vec(self.quaternion, "keyframe.quaternion", 4))
        for name in ("coverage", "novelty", "score"):
            set_(self, name, check_unit_interval(getattr(self, name), f"keyframe.{name}"))
        if self.depth is not None:
            set_(self, "depth", check_unit_interval(self.depth, "keyframe.depth"))
        if self.intrinsics is not None:
            set_(self, "intrinsics", check_vec(self.intrinsics, "keyframe.intrinsics", 6))
        if self.image is not None and not isinstance(self.image, str):
            raise InvalidInput(f"keyframe.image must be a string path or None, "
                               f"got {type(self.image).__name__}")
        if self.embedding is not None:
            emb = self.embedding
            if isinstance(emb, np.ndarray):
                emb = emb.tolist()
            if not isinstance(emb, (tuple, list)) or not emb:
                raise InvalidInput("keyframe.embedding must be a non-empty sequence of numbers "
                                   "or None")
            set_(self, "embedding",
                 tuple(check_float(x, f"keyframe.embedding[{i}]") for i, x in enumerate(emb)))

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready form (every field; tuples as lists). :meth:`from_dict` inverts it exactly.

        >>> k = Keyframe(t=1.5, commit=2, seq=7, position=(0.0, 0.0, 1.0),
        ...              quaternion=(1.0, 0.0, 0.0, 0.0), coverage=1.0, novelty=1.0,
        ...              depth=None, score=1.0, embedding=(0.6, 0.8))
        >>> Keyframe.from_dict(k.to_dict()) == k
        True
        """
        return {
            "t": self.t,
            "commit": self.commit,
            "seq": self.seq,
            "position": list(self.position),
            "quaternion": list(self.quaternion),
            "intrinsics": None if self.intrinsics is None else list(self.intrinsics),
            "image": self.image,
            "embedding": None if self.embedding is None else list(self.embedding),
            "coverage": self.coverage,
            "novelty": self.novelty,
            "depth": self.depth,
            "score": self.score,
        }

    @classmethod
    def trusted(cls, data: dict[str, Any]) -> Keyframe:
        """The frame of a :meth:`to_dict` form this memory wrote (a KEYFRAME event, a stored
        row), read without the checks :meth:`from_dict` runs — they ran when it was made.
        Untrusted input (an imported file, a caller) goes through :meth:`from_dict`."""
        frame = object.__new__(cls)
        set_ = object.__setattr__
        for name in _PLAIN:
            set_(frame, name, data.get(name))
        for name in _TUPLES:
            value = data.get(name)
            set_(frame, name, None if value is None else tuple(value))
        return frame

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> Keyframe:
        """The frame of a :meth:`to_dict` form (missing optional keys read as None).

        Raises:
            InvalidInput: a required key is missing or a value fails the checks.
        """
        if not isinstance(data, dict):
            raise InvalidInput(f"a keyframe must be a dict, got {type(data).__name__}")
        required = ("t", "commit", "seq", "position", "quaternion", "coverage", "novelty",
                    "score")
        missing = [key for key in required if key not in data]
        if missing:
            raise InvalidInput(f"keyframe is missing {', '.join(missing)}")
        return cls(
            t=data["t"],
            commit=data["commit"],
            seq=data["seq"],
            position=data["position"],
            quaternion=data["quaternion"],
            coverage=data["coverage"],
            novelty=data["novelty"],
            depth=data.get("depth"),
            score=data["score"],
            intrinsics=data.get("intrinsics"),
            image=data.get("image"),
            embedding=data.get("embedding"),
        )


def sample_points(center: Sequence[float], size: Sequence[float]) -> np.ndarray:
    """The 15 points of an axis-aligned box that :func:`visibility` tests, shape (15, 3),
    metres, map frame: the 8 corners, then the 6 face centres (-x, +x, -y, +y, -z, +z), then
    the centre.

    >>> sample_points((0, 0, 1), (2, 2, 2))[[0, 8, 14]].tolist()
    [[-1.0, -1.0, 0.0], [-1.0, 0.0, 1.0], [0.0, 0.0, 1.0]]
    """
    c = np.asarray(check_vec(center, "center", 3))
    half = np.asarray(check_size(size, "size")) / 2.0
    return c + _SAMPLE_SIGNS * half


def visibility(camera: Camera, center: Sequence[float], size: Sequence[float]
               ) -> tuple[float, float | None]:
    """How well ``camera`` saw the axis-aligned box ``center``, ``size`` (metres, map frame):
    ``(coverage, depth)``, each in [0, 1].

    ``coverage`` is the share of the box's 15 :func:`sample_points` inside the field of view
    and within range (:func:`locimem.geometry.in_view`; occlusion is not considered).
    ``depth`` is the share of valid readings (finite, > 0) among the depth pixels the box
    projects to — those whose central ray crosses the box ahead of the camera, at any
    distance — 0.0 when none does, and None when the camera has no depth image.

    >>> from locimem.geometry import look_at
    >>> cam = look_at((0, 0, 1), (2, 0, 1), fov_deg=90.0, vfov_deg=60.0, range_m=4.0)
    >>> visibility(cam, (2.0, 0.0, 1.0), (0.2, 0.2, 0.2))
    (1.0, None)
    >>> visibility(cam, (-2.0, 0.0, 1.0), (0.2, 0.2, 0.2))
    (0.0, None)
    """
    points = sample_points(center, size)
    coverage = float(np.count_nonzero(in_view(camera, points))) / len(points)
    if camera.depth is None:
        return coverage, None
    return coverage, _depth_share(camera, points[:8])


def visibilities(camera: Camera, centers: Any, sizes: Any
                 ) -> list[tuple[float, float | None]]:
    """:func:`visibility` of many boxes at once (centres and sizes, array-likes (k, 3), metres,
    map frame, valid: checked by the caller): one projection of every sample point, the boxes'
    depth windows laid end to end. The same elementwise arithmetic as :func:`visibility` box by
    box, so the same floats (tested)."""
    centers = np.asarray(centers, dtype=np.float64).reshape(-1, 3)
    sizes = np.asarray(sizes, dtype=np.float64).reshape(-1, 3)
    k = centers.shape[0]
    if k == 0:
        return []
    points = centers[:, None, :] + _SAMPLE_SIGNS[None, :, :] * (sizes / 2.0)[:, None, :]
    inside = in_view(camera, points.reshape(-1, 3)).reshape(k, len(_SAMPLE_SIGNS))
    coverage = (np.count_nonzero(inside, axis=1) / len(_SAMPLE_SIGNS)).tolist()
    if camera.depth is None:
        return [(c, None) for c in coverage]
    return list(zip(coverage, _depth_shares(camera, points[:, :8, :]), strict=True))


def _depth_shares(camera: Camera, corners: np.ndarray) -> list[float]:
    """:func:`_depth_share` of ``k`` boxes at once (``corners`` (k, 8, 3))."""
    depth = camera.depth
    assert depth is not None
    h, w = depth.shape
    k = corners.shape[0]
    rows, cols = project(camera, corners.reshape(-1, 3), (h, w))
    rows, cols = rows.reshape(k, 8), cols.reshape(k, 8)
    ahead = np.isfinite(rows).all(axis=1) & np.isfinite(cols).all(axis=1)
    with np.errstate(invalid="ignore"):
        # all corners ahead: the pixels whose centres fall in the corners' bounding rectangle;
        # a box reaching behind the camera projects without bound: every pixel
        # (clipped to one beyond the image first, so far-off values fit an integer)
        r0 = np.where(ahead, np.clip(np.ceil(rows.min(axis=1) - 0.5), 0, h), 0)
        r1 = np.where(ahead, np.clip(np.floor(rows.max(axis=1) - 0.5), -1, h - 1), h - 1)
        c0 = np.where(ahead, np.clip(np.ceil(cols.min(axis=1) - 0.5), 0, w), 0)
        c1 = np.where(ahead, np.clip(np.floor(cols.max(axis=1) - 0.5), -1, w - 1), w - 1)
    r0, r1, c0, c1 = (v.astype(np.intp) for v in (r0, r1, c0, c1))
    some = (r0 <= r1) & (c0 <= c1)
    shares = np.zeros(k)
    if not some.any():
        return shares.tolist()
    r0, r1, c0, c1 = np.where(some, r0, 0), np.where(some, r1, 0), np.where(some, c0, 0), \
        np.where(some, c1, 0)
    step = np.maximum(1, np.ceil(np.sqrt((r1 - r0 + 1) * (c1 - c0 + 1) / _DEPTH_SAMPLES))
                      ).astype(np.intp)
    n_rows = np.where(some, (r1 - r0) // step + 1, 0)
    n_cols = (c1 - c0) // step + 1
    counts = n_rows * n_cols
    box = np.repeat(np.arange(k), counts)
    local = np.arange(box.size) - np.repeat(np.cumsum(counts) - counts, counts)
    pr = r0[box] + (local // n_cols[box]) * step[box]
    pc = c0[box] + (local % n_cols[box]) * step[box]
    fx, fy, cx, cy = intrinsics(camera, (h, w))
    body = np.empty((box.size, 3))  # the rays through the pixel centres, as pixel_rays does
    body[:, 0] = 1.0
    body[:, 1] = -((pc + 0.5 - cx) / fx)
    body[:, 2] = -((pr + 0.5 - cy) / fy)
    rays = body @ rotation_matrix_from_wxyz(camera.quaternion).T
    t_in, _ = ray_box_chord(np.asarray(camera.position, dtype=np.float64), rays,
                            corners.min(axis=1)[box], corners.max(axis=1)[box])
    crossed = np.isfinite(t_in)
    d = depth[pr, pc].astype(np.float64)
    n = np.bincount(box[crossed], minlength=k)
    good = crossed & np.isfinite(d) & (d > 0.0)
    n_good = np.bincount(box[good], minlength=k)
    hit = n > 0
    shares[hit] = n_good[hit] / n[hit]
    return shares.tolist()


def _depth_share(camera: Camera, corners: np.ndarray) -> float:
    """Share of valid readings among the depth pixels whose central ray crosses the box with
    these ``corners`` (the first 8 sample points)."""
    depth = camera.depth
    assert depth is not None
    h, w = depth.shape
    rows, cols = project(camera, corners, (h, w))
    if np.all(np.isfinite(rows)) and np.all(np.isfinite(cols)):
        # all corners ahead: the box projects inside its corners' bounding rectangle; take the
        # pixels whose centres fall in it
        r0 = max(0, math.ceil(rows.min() - 0.5))
        r1 = min(h - 1, math.floor(rows.max() - 0.5))
        c0 = max(0, math.ceil(cols.min() - 0.5))
        c1 = min(w - 1, math.floor(cols.max() - 0.5))
    else:  # the box reaches behind the camera: its projection is unbounded, try every pixel
        r0, r1, c0, c1 = 0, h - 1, 0, w - 1
    if r0 > r1 or c0 > c1:
        return 0.0
    # a large box is sampled on a grid of at most ~_DEPTH_SAMPLES pixels: a share needs no more
    step = max(1, math.ceil(math.sqrt((r1 - r0 + 1) * (c1 - c0 + 1) / _DEPTH_SAMPLES)))
    rays = pixel_rays(camera, (h, w), (r0, r1, c0, c1), step).reshape(-1, 3)
    t_in, _ = ray_box_chord(np.asarray(camera.position, dtype=np.float64), rays,
                     corners.min(axis=0), corners.max(axis=0))
    crossed = np.isfinite(t_in)
    n = int(np.count_nonzero(crossed))
    if n == 0:
        return 0.0
    d = depth[r0:r1 + 1:step, c0:c1 + 1:step].reshape(-1)[crossed].astype(np.float64)
    return int(np.count_nonzero(np.isfinite(d) & (d > 0.0))) / n


def novelty(position: Sequence[float], center: Sequence[float],
            kept: Sequence[Keyframe]) -> float:
    """How new the viewpoint from ``position`` (the camera, metres, map frame) onto the object
    at ``center`` is among the ``kept`` frames: the smallest angle between this direction
    (centre to camera) and any kept frame's, divided by 90 degrees and clipped to [0, 1]; 1.0
    when nothing is kept. All directions are taken from ``center``.

    A camera at the centre itself has no direction: it scores 0.0 (when anything is kept),
    and a kept frame taken from there is not compared.

    >>> def at(p):
    ...     return Keyframe(t=0.0, commit=1, seq=1, position=p, quaternion=(1.0, 0.0, 0.0, 0.0),
    ...                     coverage=1.0, novelty=1.0, depth=None, score=1.0)
    >>> novelty((0, 2, 0), (0, 0, 0), [at((3.0, 0.0, 0.0))])
    1.0
    >>> novelty((1, 1, 0), (0, 0, 0), [at((3.0, 0.0, 0.0))])
    0.5
    """
    center_ = check_vec(center, "center", 3)
    position_ = check_vec(position, "position", 3)
    return _novelty(position_, center_, [frame.position for frame in kept])


def _novelty(position: Sequence[float], center: Sequence[float],
             kept_positions: Sequence[Sequence[float]]) -> float:
    """:func:`novelty` on plain (checked) coordinates, in plain float arithmetic: it runs for
    every object sighted with a camera."""
    if not kept_positions:
        return 1.0
    cx, cy, cz = center
    ax, ay, az = position[0] - cx, position[1] - cy, position[2] - cz
    if math.sqrt(ax * ax + ay * ay + az * az) <= 1e-12:
        return 0.0
    best = math.inf
    for p in kept_positions:
        bx, by, bz = p[0] - cx, p[1] - cy, p[2] - cz
        if math.sqrt(bx * bx + by * by + bz * bz) <= 1e-12:
            continue
        # atan2 of |a x b| and a . b: accurate at small and at large angles alike
        cross = math.sqrt((ay * bz - az * by) ** 2 + (az * bx - ax * bz) ** 2
                          + (ax * by - ay * bx) ** 2)
        best = min(best, math.degrees(math.atan2(cross, ax * bx + ay * by + az * bz)))
    if best == math.inf:
        return 1.0
    return min(1.0, max(0.0, best / NOVELTY_FULL_DEG))


def could_join(camera: Camera, center: Sequence[float], kept: Sequence[Keyframe],
               n: int = N_KEYFRAMES) -> bool:
    """Whether a frame from ``camera`` of the object at ``center`` could be kept beside
    ``kept``: fewer than ``n`` are kept, or a
    perfect view from here (full coverage and depth) would beat the worst kept frame. Cheap
    (no image work): it spares scoring frames that cannot win, e.g. from a camera that has
    not moved."""
    if len(kept) < n:
        return True
    new = _novelty(camera.position, center, [k.position for k in kept])
    best = score(1.0, new, None if camera.depth is None else 1.0)
    return best > min(k.score for k in kept)


def score(coverage: float, novelty: float, depth: float | None) -> float:
    """The retention score in [0, 1]: ``W_COVERAGE * coverage + W_NOVELTY * novelty +
    W_DEPTH * depth``, or, when ``depth`` is None (no depth image), the first two renormalised
    to sum to 1. Each input must lie in [0, 1]."""
    return _score(check_unit_interval(coverage, "coverage"),
                  check_unit_interval(novelty, "novelty"),
                  None if depth is None else check_unit_interval(depth, "depth"))


def _score(coverage: float, novelty: float, depth: float | None) -> float:
    """:func:`score` of checked floats."""
    if depth is None:
        value = (W_COVERAGE * coverage + W_NOVELTY * novelty) / (W_COVERAGE + W_NOVELTY)
    else:
        value = W_COVERAGE * coverage + W_NOVELTY * novelty + W_DEPTH * depth
    return min(1.0, max(0.0, value))


def make_candidate(camera: Camera, center: Sequence[float], size: Sequence[float],
                   kept: Sequence[Keyframe], *, t: float, commit: int, seq: int,
                   intrinsics: Sequence[float] | None = None, image: str | None = None,
                   embedding: Sequence[float] | None = None,
                   seen: tuple[float, float | None] | None = None) -> Keyframe:
    """The keyframe ``camera`` would make for the object at ``center``, ``size`` (metres, map
    frame), scored against the frames already ``kept`` for it: :func:`visibility`,
    :func:`novelty` and :func:`score` in one call. Offer it with :func:`offer`. ``seen``: its
    :func:`visibility`, when the caller has it already (from :func:`visibilities`)."""
    coverage, depth = visibility(camera, center, size) if seen is None else seen
    new = novelty(camera.position, center, kept)
    return Keyframe(
        t=t, commit=commit, seq=seq, position=camera.position, quaternion=camera.quaternion,
        coverage=coverage, novelty=new, depth=depth, score=score(coverage, new, depth),
        intrinsics=None if intrinsics is None else tuple(intrinsics),  # type: ignore[arg-type]
        image=image, embedding=None if embedding is None else tuple(embedding),
    )


def sighted_candidate(camera: Camera, center: tuple[float, float, float],
                      kept: Sequence[Keyframe], seen: tuple[float, float | None], *, t: float,
                      commit: int, seq: int, embedding: tuple[float, ...] | None = None
                      ) -> Keyframe:
    """:func:`make_candidate` for the tracker, which offers a frame for every object sighted
    with a camera: the same frame (equal field by field, tested), built from values that are
    valid by construction — a checked camera, a remembered centre, its :func:`visibilities`,
    a record's time and numbers, a float embedding — without checking them again."""
    coverage, depth = float(seen[0]), None if seen[1] is None else float(seen[1])
    new = _novelty(camera.position, center, [frame.position for frame in kept])
    return Keyframe.trusted({
        "t": t, "commit": commit, "seq": seq, "position": camera.position,
        "quaternion": camera.quaternion, "intrinsics": camera.intrinsics, "image": camera.image,
        "embedding": embedding, "coverage": coverage, "novelty": new, "depth": depth,
        "score": _score(coverage, new, depth)})


def _worst(kept: tuple[Keyframe, ...]) -> int:
    """Index of the worst kept frame: the lowest score; among equal scores the most recently
    offered (larger ``t``, then larger ``seq``)."""
    return min(range(len(kept)), key=lambda i: (kept[i].score, -kept[i].t, -kept[i].seq))


def offer(kept: tuple[Keyframe, ...], candidate: Keyframe, n: int = N_KEYFRAMES
          ) -> tuple[tuple[Keyframe, ...], Keyframe | None, bool]:
    """Offer ``candidate`` to the frames ``kept`` for one object (at most ``n``):
    ``(new kept tuple, the frame to archive or None, whether the candidate was kept)``.

    Below ``n`` the candidate is appended. When full it replaces the worst kept frame (lowest
    score; among equal scores the most recently offered) only if its score is strictly
    higher: the replaced frame is removed, returned for the archive, and the candidate goes to
    the end, so ``kept`` stays in offer order. Frames are never copied or changed.

    Raises:
        InvalidInput: ``n`` < 1, more than ``n`` frames are kept already, or the candidate's
            observation (``seq``) is kept already.
    """
    n = check_int(n, "n", lo=1)
    kept = tuple(kept)
    if len(kept) > n:
        raise InvalidInput(f"at most n={n} keyframes may be kept, got {len(kept)}")
    if any(frame.seq == candidate.seq for frame in kept):
        raise InvalidInput(f"observation seq={candidate.seq} already has a kept keyframe")
    if len(kept) < n:
        return (*kept, candidate), None, True
    worst = _worst(kept)
    if candidate.score > kept[worst].score:
        return (*kept[:worst], *kept[worst + 1:], candidate), kept[worst], True
    return kept, None, False


# the fields of a Keyframe as its JSON form holds them: plain values, and lists read as tuples
_PLAIN = ("t", "commit", "seq", "coverage", "novelty", "depth", "score", "image")
_TUPLES = ("position", "quaternion", "intrinsics", "embedding")
