"""Map epochs: one memory across SLAM sessions whose map frames differ.

A robot that starts a fresh SLAM map at each boot reports positions in a new frame, off from
the stored one by an unknown yaw and translation. ``observe(..., map_epoch=NAME)`` names the
session. The first epoch a scope sees is the memory's own frame (``base``). A new one is
*provisional*: its scans go to a scope of their own (``SCOPE/epochs/NAME``), tracked there
in the epoch's frame and never matched against the memory's objects, so nothing is
corrupted while the frames are unknown. After each scan the memory tries to align the two:
the large, stable objects (furniture-sized boxes seen several times) of the epoch against
the memory's, by :func:`locimem.align.align_landmarks` (a consensus fit of yaw and
translation that refuses too few landmarks, a large residual, and an ambiguous layout). On
success — or when :meth:`MapEpochs.align_epoch` gives the transform — a ``MAP_ALIGNED``
event records it, and the epoch's scans so far are decided again in the memory's frame, in
order and in one transaction: sightings of things the memory knows join their identities
(with their histories), new things become new objects, moved ones are ``MOVED``. From then
on the epoch's detections and cameras are transformed on the way in.
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Callable, Iterable, Sequence
from typing import Any

import numpy as np

from locimem.check import MAX_ABS_COORD_M, check_scope, check_text
from locimem.errors import InvalidInput, ScopeError
from locimem.frames import as_pair, check_transform, compose, invert, yaw_of
from locimem.memory.base import LiveMemory, Service
from locimem.memory.scans import Scans, checked_list
from locimem.model import (
    Camera,
    Commit,
    Detection,
    Event,
    EventKind,
    MapEpoch,
    Observation,
    ScanResult,
)
from locimem.tracker.state import MemoryState

LANDMARK_MIN_EXTENT_M = 0.4
"""A box this large along one axis, or more, is furniture-sized: a landmark for alignment."""
LANDMARK_MIN_SIGHTINGS = 3
"""...and seen this many times (a stable estimate, not a passing false positive)."""
_EPOCHS_PART = "epochs"  # a provisional epoch's scope: SCOPE/epochs/NAME


class MapEpochs(Service):
    """The map-epoch verbs of :class:`~locimem.memory.facade.ObjectMemory`: scans of a
    named epoch go through :meth:`observe` to ``scans`` (in the memory's frame) or to a
    provisional epoch's own scope; what an aligned epoch saw is re-anchored by
    ``correct_poses`` when its transform is corrected."""

    def __init__(self, live: LiveMemory, scans: Scans,
                 correct_poses: Callable[..., list[Event]]) -> None:
        super().__init__(live)
        self._scans, self._correct_poses = scans, correct_poses
        self.provisional: dict[str, Scans] = {}  # each provisional epoch's own scope's scans
        self._why: dict[str, str] = {}  # why a provisional epoch is not aligned yet
        self._tried: dict[str, tuple[int, ...]] = {}  # its landmarks at the last try
        self._into: dict[str, tuple[MapEpoch, np.ndarray, tuple[float, ...]]] = {}
        self._landmarks: tuple[int, list[Any]] | None = None  # the memory's, at a commit

    def map_epochs(self) -> list[MapEpoch]:
        """The map epochs this scope has seen, oldest first: the memory's own frame
        (``base``) and each later SLAM session's, with its status, transform into the
        memory's frame, fit residual and inliers, and (provisional) why it is not aligned
        yet. Empty for a scope that never named an epoch (one fixed frame)."""
        why = self._why
        return [_with_why(e, why.get(e.name)) for e in
                sorted(self._live._state.epochs.values(), key=lambda e: (e.since, e.name))]

    def align_epoch(self, epoch: str, transform: Any, *, actor: str = "operator",
                    reason: str | None = None) -> Event:
        """Set or correct the transform of map epoch ``epoch`` into the memory's frame: a
        4x4 rigid matrix or ``(translation_xyz, quaternion_wxyz)`` mapping the epoch's
        coordinates to the memory's (a map server's or an operator's word). A provisional
        epoch joins the memory as if the memory had aligned it; an epoch not seen yet is
        known before its first scan; an aligned one gets the new transform, and what was
        seen in it since it began is re-anchored by the difference (as
        :meth:`correct_poses`). Recorded as a correction (``status`` ``"given"``) with
        ``actor`` and ``reason``; a later one undoes it. Returns the MAP_ALIGNED event."""
        self._live._writable("align_epoch")
        name = check_epoch(epoch)
        matrix = check_transform(transform)
        actor = check_text(actor, "actor")
        reason = None if reason is None else check_text(reason, "reason", max_chars=1000)
        known = self._live._state.epochs.get(name)
        if known is not None and known.status == "base":
            raise InvalidInput(f"map epoch {name!r} is the memory's own frame; give the "
                               "transform of a later epoch")
        if known is not None and known.status == "provisional":
            return self._join(name, matrix, "given", None, (), actor, reason)[0]
        with self._live._turn():
            t = float(self._live._state.now or 0.0)
            event = self._aligned_commit(name, matrix, "given", None, (), t, actor, reason)
            if known is not None and known.transform is not None:
                change = compose(matrix, invert(check_transform(known.transform)))
                self._correct_poses([(known.since, t, change)], actor=actor,
                                    reason=reason or f"map epoch {name!r} realigned")
        return event

    # -- scans of a named epoch ---------------------------------------------------------------
    def observe(self, t: float, detections: Iterable[Detection], camera: Camera | None,
                source: str, name: Any) -> ScanResult:
        """One scan of map epoch ``name`` (checked time and source)."""
        name = check_epoch(name)
        epochs = self._live._state.epochs
        epoch = epochs.get(name)
        if epoch is None:
            epoch = self._begin(name, t, source)
        if epoch.status == "base":
            return self._scans.scan(t, detections, camera, source)
        if epoch.status in ("aligned", "given"):
            cache = self._into
            into = cache.get(name)
            if into is None or into[0] is not epoch:  # (a new MAP_ALIGNED: a new epoch value)
                matrix = check_transform(epoch.transform)
                into = cache[name] = (epoch, matrix, tuple(as_pair(matrix)[1]))
            dets, cam = _transformed(into[1], checked_list(detections), camera, into[2])
            return self._scans.scan(t, dets, cam, source)
        sub = self._epoch_scans(epoch)
        sync_counters(sub._live)
        result = sub.scan(t, detections, camera, source)
        sync_counters(self._live)
        joined = self._try_align(name, sub, source)
        return result if joined is None else joined

    def _begin(self, name: str, t: float, source: str) -> MapEpoch:
        """The first scan of an epoch: the memory's frame if nothing was sighted in the scope
        yet (rooms or a prior map defined first are in that frame), else a provisional epoch
        with a scope of its own."""
        state = self._live._state
        if state.now is not None and t < state.now - self._live._late_s:
            raise InvalidInput(f"t={t} is before the latest scan (t={state.now}); scans must "
                               "not go back in time")
        base = not state.epochs and self._live.store.count("observations", self._live._scope) == 0
        data: dict[str, Any] = {"epoch": name, "status": "base" if base else "provisional"}
        if not base:
            data["scope"] = _epoch_scope(self._live._scope, name)
        with self._live._turn():
            out = self._live._writer("correction", source, "a new map epoch" if base else
                               "a new map epoch, provisional", t)
            out.event(EventKind.MAP_EPOCH, 0, "", data)
            self._live._commit(out.records)
        return self._live._state.epochs[name]

    def _epoch_scans(self, epoch: MapEpoch) -> Scans:
        """The scans of a provisional epoch's own scope (sharing this memory's store)."""
        sub = self.provisional.get(epoch.name)
        if sub is None:
            assert epoch.scope is not None  # (a provisional epoch has a scope of its own)
            sub = self.provisional[epoch.name] = Scans(self._live.sibling(epoch.scope))
        return sub

    def _try_align(self, name: str, sub: Scans, source: str) -> ScanResult | None:
        """Align a provisional epoch if its landmarks changed since the last try."""
        from locimem.align import align_landmarks

        why, tried = self._why, self._tried
        new = landmarks(sub._live._state)
        key = tuple(sorted(lm.key for lm in new))
        if tried.get(name) == key:
            return None
        tried[name] = key
        # the memory's landmarks change only when it commits (not while the epoch scans)
        stored = self._landmarks
        if stored is None or stored[0] != self._live._state.next_commit:
            stored = self._landmarks = (self._live._state.next_commit,
                                        landmarks(self._live._state))
        found = align_landmarks(new, stored[1])
        if not found.ok or found.transform is None:  # (an ok fit has its transform)
            why[name] = found.reason
            return None
        why.pop(name, None)
        return self._join(name, found.transform, "aligned", found.residual_m, found.inliers,
                          source, "the memory aligned a new map epoch")[1]

    def _join(self, name: str, matrix: np.ndarray, status: str, residual: float | None,
              inliers: Sequence[tuple[int, int]], actor: str, reason: str | None
              ) -> tuple[Event, ScanResult | None]:
        """A provisional epoch joins the memory: MAP_ALIGNED, then its scans so far decided
        again in the memory's frame — one transaction."""
        epoch = self._live._state.epochs[name]
        scans = list(_scans(self._epoch_scans(epoch)._live))
        last = None
        with self._live._turn():
            t = max(float(self._live._state.now or epoch.since), epoch.since)
            event = self._aligned_commit(name, matrix, status, residual, inliers, t, actor,
                                         reason)
            for when, dets, camera, by in scans:
                moved, cam = _transformed(matrix, dets, camera)
                last = self._scans.scan(when, moved, cam, by)
        return event, last

    def _aligned_commit(self, name: str, matrix: np.ndarray, status: str,
                        residual: float | None, inliers: Sequence[tuple[int, int]], t: float,
                        actor: str, reason: str | None) -> Event:
        out = self._live._writer("correction", actor, reason, t)
        ev = out.event(EventKind.MAP_ALIGNED, 0, "", {
            "epoch": name, "status": status, "transform": list(as_pair(matrix)),
            "yaw_deg": yaw_of(matrix), "residual_m": residual,
            "inliers": [list(p) for p in inliers], "actor": actor, "reason": reason})
        self._live._commit(out.records)
        return ev


def sync_counters(mem: LiveMemory) -> None:
    """Ids after every id the store holds: a provisional epoch's scope shares the store (a
    SQLite file's ids are file-wide), and its memory and this one take turns writing."""
    state = mem._state
    state.next_object_id, state.next_seq, state.next_commit = (
        max(a, b) for a, b in zip(mem.store.counters(mem.scope),
                                  (state.next_object_id, state.next_seq, state.next_commit),
                                  strict=True))


def check_epoch(value: Any) -> str:
    """A map epoch's name: like a scope's part, 1 to 40 letters, digits, ``-``, ``_``, ``.``."""
    if not isinstance(value, str) or not 1 <= len(value) <= 40 or "/" in value:
        raise InvalidInput(f"map_epoch must be a name of 1 to 40 letters, digits, - _ or ., "
                           f"got {value!r}"[:200])
    try:
        check_scope(value)
    except ScopeError:
        raise InvalidInput(f"map_epoch may hold only letters, digits, - _ and ., got "
                           f"{value!r}") from None
    return value


def _epoch_scope(scope: str, name: str) -> str:
    out = f"{scope}/{_EPOCHS_PART}/{name}"
    if len(out) > 64:
        raise InvalidInput(f"map epoch {name!r} of scope {scope!r}: the epoch's own scope "
                           f"({out!r}) would be over 64 characters; use a shorter name")
    return out


def landmarks(state: MemoryState) -> list[Any]:
    """The objects alignment may rest on: published, present, furniture-sized, seen often."""
    from locimem.align import Landmark

    out = []
    for oid, obj in sorted(state.objects.items()):
        if not obj.promoted or obj.lost or obj.n_detections < LANDMARK_MIN_SIGHTINGS:
            continue
        if max(obj.size) < LANDMARK_MIN_EXTENT_M:
            continue
        out.append(Landmark(oid, obj.label, obj.center, obj.size,
                            float(min(obj.n_detections, 20))))
    return out


def _scans(sub: LiveMemory) -> Iterable[tuple[float, list[Detection], Camera | None, str]]:
    """The scans of a provisional epoch's scope as they came in (detections by index, the
    camera without its depth image, which is not stored)."""
    commit: Commit | None = None
    dets: list[tuple[int, Detection]] = []
    for record in sub.store.iter_log(sub.scope):
        if isinstance(record, Commit):
            if commit is not None and commit.kind == "scan":
                yield commit.t, [d for _, d in sorted(dets)], _camera(commit), commit.actor
            commit, dets = record, []
        elif isinstance(record, Observation):
            dets.append((record.index, Detection(
                record.label, record.confidence, record.center, record.size,
                feature=record.feature, track_id=record.track_id,
                orientation=record.orientation)))
    if commit is not None and commit.kind == "scan":
        yield commit.t, [d for _, d in sorted(dets)], _camera(commit), commit.actor


def _camera(commit: Commit) -> Camera | None:
    c = commit.camera
    if c is None:
        return None
    return Camera(tuple(c["position"]), tuple(c["quaternion"]),
                  c["fov_deg"], c["range_m"], c.get("vfov_deg", 60.0), image=c.get("image"),
                  intrinsics=None if c.get("intrinsics") is None else tuple(c["intrinsics"]))


def _transformed(matrix: np.ndarray, detections: Sequence[Detection],
                 camera: Camera | None, turn: Sequence[float] | None = None
                 ) -> tuple[list[Detection], Camera | None]:
    """Detections and camera of an epoch in the memory's frame. They were checked when made;
    only their positions and rotations change, so they are copied without checking again
    (but for the position domain): microseconds a scan."""
    if turn is None:
        turn = tuple(as_pair(matrix)[1])
    (a, b, c, tx), (d, e, f, ty), (g, h, k, tz) = matrix[:3].tolist()
    put = object.__setattr__
    out: list[Detection] = []
    for det in detections:
        x, y, z = det.center
        center = (a * x + b * y + c * z + tx, d * x + e * y + f * z + ty,
                  g * x + h * y + k * z + tz)
        if max(abs(center[0]), abs(center[1]), abs(center[2])) > MAX_ABS_COORD_M:
            raise InvalidInput("a detection's centre, in the memory's frame, is outside the "
                               f"position domain (|coordinate| <= {MAX_ABS_COORD_M:g} m)")
        copy = object.__new__(Detection)
        for name in _DETECTION_FIELDS:
            put(copy, name, getattr(det, name))
        put(copy, "center", center)
        if det.orientation is not None:
            put(copy, "orientation", _qmul(turn, det.orientation))
        out.append(copy)
    if camera is None:
        return out, None
    x, y, z = camera.position
    cam = object.__new__(Camera)
    for name in _CAMERA_FIELDS:
        put(cam, name, getattr(camera, name))
    put(cam, "position", (a * x + b * y + c * z + tx, d * x + e * y + f * z + ty,
                          g * x + h * y + k * z + tz))
    put(cam, "quaternion", _qmul(turn, camera.quaternion))
    return out, cam


_DETECTION_FIELDS = tuple(f.name for f in dataclasses.fields(Detection))
_CAMERA_FIELDS = tuple(f.name for f in dataclasses.fields(Camera))


def _qmul(a: Sequence[float], b: Sequence[float]) -> tuple[float, float, float, float]:
    """The quaternion product ``a * b`` (w, x, y, z), normalised."""
    w1, x1, y1, z1 = a
    w2, x2, y2, z2 = b
    q = (w1 * w2 - x1 * x2 - y1 * y2 - z1 * z2, w1 * x2 + x1 * w2 + y1 * z2 - z1 * y2,
         w1 * y2 - x1 * z2 + y1 * w2 + z1 * x2, w1 * z2 + x1 * y2 - y1 * x2 + z1 * w2)
    n = math.sqrt(sum(v * v for v in q))
    return (q[0] / n, q[1] / n, q[2] / n, q[3] / n)


def _with_why(epoch: MapEpoch, why: str | None) -> MapEpoch:
    if epoch.status != "provisional":
        return epoch
    from dataclasses import replace

    return replace(epoch, why=why or "not tried yet: no landmarks seen in this epoch")
