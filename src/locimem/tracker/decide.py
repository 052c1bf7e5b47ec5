"""The tracker: given the state and one scan, decide which records to write.

``decide`` is pure with respect to the memory: it reads the state (and refreshes its derived
indexes), and returns records; it changes no object. The caller applies the records with
:func:`locimem.tracker.apply.apply` and appends them to the store in one transaction.

Order inside a scan: the commit (with the objects the camera looked at and missed, the seconds
of absence credited to each, and the nearby pairs seen together), then ``LOST`` / ``EXPIRED``
for every object whose time-only belief ran out, then each detection in input order —
``[APPEARED | REACQUIRED | SPLIT + APPEARED]``, its observation, then any of ``PROMOTED``,
``LABEL_CHANGED``, ``MOVED`` it caused — then ``LOST`` / ``EXPIRED`` for the objects whose
looked-and-absent time ran out in this scan, then ``MERGED`` for duplicates repaired (or
``LOST`` / ``EXPIRED`` with ``replaced_by`` for a thing another has taken the place of).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, replace
from typing import Any

import numpy as np

from locimem.config import TrackerConfig
from locimem.geometry import (
    LOOKED,
    Place,
    PlaceLooks,
    place_looks,
    to_camera_frame,
    view_box,
)
from locimem.model import (
    Camera,
    Commit,
    Detection,
    Event,
    EventKind,
    ObjectState,
    Observation,
    Record,
)
from locimem.tracker.apply import TOMB_KEY, new_object, update_object
from locimem.tracker.associate import (
    _Associator,
    _cosine,
    iou_3d,
)
from locimem.tracker.belief import (
    absence_credit,
    detection_probability,
    innovation_sigma,
    look_factor,
    misses_can_lose,
    place_certainty,
    position_gain,
    settled,
    sighting_sigma,
)
from locimem.tracker.crowd import crowd_rejections
from locimem.tracker.relocate import relocations
from locimem.tracker.state import MemoryState

REJECT_LOW_CONFIDENCE = "below_min_confidence"
REJECT_NEW_LOW_CONFIDENCE = "below_new_object_confidence"  # may refresh, never create
REJECT_FORGOTTEN = "forgotten"  # a tombstone recognised it: suppressed
REFINE_MIN_M = 0.01  # a settled place re-settles on its estimate only this far or farther


@dataclass(frozen=True, slots=True)
class Decision:
    records: list[Record]
    assignments: tuple[int | None, ...]
    rejected: dict[int, str]
    warnings: tuple[str, ...] = ()


def decide(
    state: MemoryState,
    config: TrackerConfig,
    t: float,
    detections: Sequence[Detection],
    camera: Camera | None = None,
    *,
    recorded_at: float,
    actor: str = "tracker",
) -> Decision:
    """Turn one scan into records. ``t`` must be >= ``state.now`` (checked by the caller)."""
    commit = Commit(
        id=state.next_commit,
        kind="scan",
        t=t,
        recorded_at=recorded_at,
        actor=actor,
        reason=None,
        n_detections=len(detections),
        camera=camera.to_dict() if camera is not None else None,
    )
    out = RecordWriter(commit, state.next_seq)
    objects = state.objects

    # 1. Time-only belief: objects last seen without a camera and unseen for longer than the
    #    lost line are LOST at this scan (EXPIRED if they were never promoted).
    gone: set[int] = set()  # expired at this scan: no longer matchable
    lost_now: set[int] = set()
    for oid in state.due_for_loss(t, config.lost_after_s):
        obj = objects[oid]
        _lose(out, config, obj, t, obj.confidence(t, config.tau_s), lost_now, gone)

    # 2. Association: one assignment problem for the confident detections (against live and
    #    re-acquirable objects), then one for the rest (ByteTrack's second pass: against the
    #    live objects left unmatched only).
    rejected: dict[int, str] = {}
    high: list[int] = []
    low: list[int] = []
    for i, det in enumerate(detections):
        if det.confidence < config.min_detection_confidence:
            rejected[i] = REJECT_LOW_CONFIDENCE
    rejected.update(crowd_rejections(  # duplicates and same-place crowds (tracker/crowd.py)
        detections, [i for i in range(len(detections)) if i not in rejected],
        config.tight_radius_m))
    for i, det in enumerate(detections):
        if i in rejected:
            continue
        if det.confidence < config.new_object_min_confidence:
            low.append(i)
        else:
            high.append(i)
    assoc = _Associator(state, config, t, detections, lost_now, gone)
    match = assoc.solve(high, allow_lost=True, exclude=set())
    if low:
        match.update(assoc.solve(low, allow_lost=False,
                                 exclude={m[0] for m in match.values()}))
    unmatched = [i for i in high if i not in match and detections[i].feature is not None]
    if unmatched:
        match.update(assoc.by_appearance(unmatched, exclude={m[0] for m in match.values()}))
    # an unsure detection whose embedding clearly picks out a live object anywhere refreshes
    # it too (it may not create one): a bottle carried off, first seen at 0.4 as a "vase" —
    # the most confident few (each search reads every object's embedding)
    weak = sorted((i for i in low if i not in match and detections[i].feature is not None),
                  key=lambda i: (-detections[i].confidence, i))[:config.appearance_unsure_max]
    if weak:
        match.update(assoc.by_appearance(weak, exclude={m[0] for m in match.values()},
                                         allow_lost=False))
    # a sighting back where a move told by its object's looks alone took it from is another
    # thing of that make, not the object moving back: unmatched (a new identity, or for an
    # unsure detection, which never creates one, a rejection)
    for i in [i for i, (oid, _, dist) in match.items()
              if _back_where_it_was(objects[oid], detections[i], dist, config)]:
        del match[i]
    for i in low:
        if i not in match:
            rejected[i] = REJECT_NEW_LOW_CONFIDENCE

    # 3. Records, detection by detection in input order.
    assignments: list[int | None] = []
    next_oid = state.next_object_id
    suppressed: dict[int, int] = {}  # tombstone id -> sightings it kept out in this scan
    revived: set[int] = set()
    after: dict[int, ObjectState] = {}  # objects sighted in this scan, as they will be
    places = _PlaceCheck(state, config, camera)
    cam = camera is not None
    tight = config.tight_radius_m
    for i, det in enumerate(detections):
        if i in rejected:
            out.observation(i, det, None, None, 1.0, rejected[i],
                            key=rejection_key(det, config.tight_radius_m))
            assignments.append(None)
            continue
        hit = match.get(i)
        if hit is not None:
            oid, tier, dist = hit
            obj = objects[oid]
            lost = obj.lost or oid in lost_now
            if not lost and dist <= tight and not settled(obj, config):  # the common case
                weight, split = position_gain(config, obj, det, dist, camera), False
            else:
                weight, split = _weight(config, t, i, det, obj, dist, lost, assoc, places,
                                        tier)
            if split:
                nid = next_oid
                next_oid += 1
                _split(out, config, t, i, det, obj, nid, after, cam)
                assignments.append(nid)
                continue
            if lost:
                out.event(EventKind.REACQUIRED, obj.id, obj.label,
                          {"lost_at": obj.lost_at if obj.lost else t,
                           "gap_s": t - obj.last_seen})
            obs = out.observation(i, det, oid, tier, weight, None)
            after[obj.id] = _sighting(out, config, obj, obs, camera=cam)
            assignments.append(obj.id)
            continue

        tomb_id = _tombstone_match(state, config, det, revived)
        if tomb_id is not None:
            tomb = state.tombstones[tomb_id]
            kept_out = tomb.suppressed + suppressed.get(tomb_id, 0)
            if config.revive_after is not None and kept_out + 1 >= config.revive_after:
                out.event(EventKind.REVIVED, tomb_id, tomb.obj.label,
                          {"suppressed": kept_out, "forgotten_at": tomb.forgotten_at})
                revived.add(tomb_id)
                after[tomb_id] = _sighting(
                    out, config, tomb.obj, out.observation(i, det, tomb_id, "revive", 1.0, None),
                    camera=cam)
                assignments.append(tomb_id)
                continue
            last = tomb.last_suppressed
            if tomb_id not in suppressed and (last is None or t - last > config.reacquire_window_s):
                out.event(EventKind.SUPPRESSED, tomb_id, tomb.obj.label,
                          {"forgotten_at": tomb.forgotten_at, "label": det.label,
                           "center": list(det.center)})
            suppressed[tomb_id] = suppressed.get(tomb_id, 0) + 1
            rejected[i] = REJECT_FORGOTTEN
            out.observation(i, det, None, None, 1.0, REJECT_FORGOTTEN, key=f"{TOMB_KEY}{tomb_id}")
            assignments.append(None)
            continue

        oid = next_oid  # a new identity
        next_oid += 1
        data = {"label": det.label, "center": list(det.center), "size": list(det.size)}
        if commit.actor != "tracker":  # the default source is left implicit
            data["source"] = commit.actor
        if camera is not None:  # a far first sighting is worth less than one reference one
            ratio = config.position_sigma_m / sighting_sigma(config, det, camera)
            data["info"] = ratio * ratio
        ev = out.event(EventKind.APPEARED, oid, det.label, data)
        fresh = new_object(ev)
        after[oid] = _sighting(out, config, fresh, out.observation(i, det, oid, "new", 1.0, None),
                               new=True, camera=cam)
        assignments.append(oid)

    # 4. Looked and absent: objects whose place this scan's camera had in view, not hidden,
    #    and which no detection matched. Each takes the evidence of absence a Bernoulli
    #    existence filter gives one miss, weighted by its probability of detection (see
    #    tracker/belief.py); those whose existence falls below the lost line are LOST
    #    (EXPIRED if never promoted) — a glimpse (belief.misses_can_lose) only by a look
    #    that saw through at least half of a place it surely stands on (visible share times
    #    belief.place_certainty): its box is a guess, and a look beside it proves nothing.
    #    A late scan (a fleet's, within the store's late_s) is no evidence against a thing
    #    sighted after its time: it may have arrived since.
    missed: list[int] = []
    credits: list[float] = []
    if camera is not None:
        for oid, factor, empty in places.looked(set(after) | lost_now | gone):
            obj = objects[oid]
            if obj.last_seen > t:
                continue
            credit = absence_credit(obj, detection_probability(obj, config) * factor, config,
                                    empty)
            missed.append(oid)
            credits.append(credit)
            if (obj.seen_camera and obj.absence_s + credit > config.lost_after_s
                    and (empty >= 0.5 or misses_can_lose(obj, config))):
                absent = obj.absence_s + credit
                _lose(out, config, obj, t, math.exp(-absent / config.tau_s), lost_now, gone)

    # 5. Duplicates: a sighted identity and a live one with the same label, overlapping, never
    #    seen together in one scan, are one thing: the younger is merged into the older.
    index = {oid: i for i, oid in enumerate(assignments) if oid is not None}
    together, close = _neighbours(state, config, detections, index, after, assoc)
    merged = _merges(out, state, config, after, lost_now | gone, close) if close else {}
    # 6. Moves nobody watched: an identity whose place was found empty and a new one of its
    #    label elsewhere are one object that moved (tracker/relocate.py).
    settled_now = [oid for oid, a in after.items()  # promoted and settled (belief.settled)
                   if settled(a, config)
                   and not (oid in objects and settled(objects[oid], config))]
    doubted_now = {oid for oid, credit in zip(missed, credits, strict=True)
                   if _doubted(objects[oid], config, 1, credit)
                   and not _doubted(objects[oid], config)}  # became doubted in this scan
    dead = gone | set(merged) | set(merged.values())
    for old, new, by_looks in relocations(state, config, t, after, settled_now, lost_now,
                                          doubted_now, dead):
        _relocate(out, state, after, old, new, by_looks)
        merged[new] = old
    if missed or together:
        out.records[0] = replace(commit, missed=tuple(missed), miss_credits=tuple(credits),
                                 together=together)
    final = tuple(merged.get(a, a) if a is not None else None for a in assignments) \
        if merged else tuple(assignments)
    return Decision(out.records, final, rejected, _frame_warnings(camera, detections))


def _frame_warnings(camera: Camera | None, detections: Sequence[Detection]) -> tuple[str, ...]:
    """A warning when most of a scan's detections (at least three) lie outside the view its
    camera claims — behind it or outside its fields of view, whatever the range: the
    camera's pose or frame is wrong (an optical-frame quaternion given as a body one is the
    usual cause), and absence evidence from it would be wrong too."""
    n = len(detections)
    if camera is None or n < 3:
        return ()
    body = to_camera_frame(camera, [d.center for d in detections])
    x, y, z = body[:, 0], body[:, 1], body[:, 2]
    tan_h = math.tan(math.radians(camera.fov_deg) / 2) * 1.1
    tan_v = math.tan(math.radians(camera.vfov_deg) / 2) * 1.1
    outside = n - int(np.count_nonzero((x > 0) & (np.abs(y) <= tan_h * x)
                                       & (np.abs(z) <= tan_v * x)))
    if 2 * outside <= n:
        return ()
    return (f"{outside} of {n} detections lie outside the camera's field of view: check the "
            f"camera pose and its frame ({OPTICAL_HINT})",)


OPTICAL_HINT = "Camera(frame='optical') for a ROS optical-frame quaternion"
"""The fix the field-of-view warning names, in Python terms (a front end words its own)."""


def _relocate(out: RecordWriter, state: MemoryState, after: dict[int, ObjectState],
              old_id: int, new_id: int, by_looks: bool) -> None:
    """``old_id`` moved where ``new_id`` is: it absorbs the new identity (MERGED, taking its
    place) and the move is recorded (MOVED from its old place, with ``seen_there_since``: the
    new identity's first sighting, by when the move had happened — this scan only tells
    it; and ``by_looks`` when its old place was not found empty)."""
    old = after.get(old_id) or state.objects[old_id]
    new = after.get(new_id) or state.objects[new_id]
    mass, label = _merged_vote(old, new)
    distance = math.dist(old.place, new.center)
    out.event(EventKind.MERGED, old_id, label, {
        "absorbed": new_id, "center": list(new.center), "size": list(new.size),
        "label_mass": dict(sorted(mass.items())),
        "n_detections": old.n_detections + new.n_detections, "label": label,
        "distance_m": distance, "to": list(new.center), "relocated": True})
    out.event(EventKind.MOVED, old_id, label, {
        "from": list(old.place), "to": list(new.center), "distance_m": distance,
        "size": list(new.size), "relocated": True, "seen_there_since": new.first_seen,
        **({"by_looks": True} if by_looks else {})})


def _doubted(obj: ObjectState, config: TrackerConfig, misses: int = 0,
             credit: float = 0.0) -> bool:
    """Looked at and missed, and no longer confident (after ``misses`` more looks adding
    ``credit`` seconds of absence)."""
    return (obj.n_missed + misses >= config.doubt_after_misses
            and math.exp(-(obj.absence_s + credit) / config.tau_s) < config.publish_min)


def _merged_vote(survivor: ObjectState, absorbed: ObjectState) -> tuple[dict[str, float], str]:
    """The summed label mass of two identities becoming one, and the label it votes (a
    person's pinned label, from either side, wins)."""
    mass = dict(survivor.label_mass)
    for lab, m in absorbed.label_mass.items():
        mass[lab] = mass.get(lab, 0.0) + m
    probe = survivor.copy()
    probe.label_mass = mass
    probe.pinned_label = survivor.pinned_label or absorbed.pinned_label
    return mass, probe.voted_label()


def _lose(out: RecordWriter, config: TrackerConfig, obj: ObjectState, t: float,
          confidence: float, lost_now: set[int], gone: set[int]) -> None:
    if obj.promoted:
        out.event(EventKind.LOST, obj.id, obj.label,
                  {"last_seen": obj.last_seen, "confidence": confidence})
        lost_now.add(obj.id)
    else:
        out.event(EventKind.EXPIRED, obj.id, obj.label,
                  {"last_seen": obj.last_seen, "n_detections": obj.n_detections,
                   "confidence": confidence})
        gone.add(obj.id)


# -- the camera --------------------------------------------------------------------------------
class _PlaceCheck:
    """What this scan's camera says about remembered places (computed on demand)."""

    def __init__(self, state: MemoryState, config: TrackerConfig, camera: Camera | None) -> None:
        self.state, self.config, self.camera = state, config, camera
        self._cache: dict[int, int] = {}

    def _looks(self, oids: list[int], uncertainty_m: float = 0.008) -> PlaceLooks:
        objects, config = self.state.objects, self.config
        centers = np.array([objects[o].center for o in oids], dtype=np.float64).reshape(-1, 3)
        sizes = np.array([objects[o].size for o in oids], dtype=np.float64).reshape(-1, 3)
        return place_looks(self.camera, centers, sizes,  # type: ignore[arg-type]
                           see_through_m=config.see_through_m, uncertainty_m=uncertainty_m,
                           depth_noise_m=config.depth_noise_m,
                           depth_noise_per_m=config.depth_noise_per_m)

    def vacated(self, obj: ObjectState, dist: float) -> bool:
        """Whether a far sighting may move the object at once: without a camera, or when
        it is doubted (looks since its last sighting missed it, and it is no longer confident),
        yes (the design's time-only model; a move); with one, when it saw a promoted
        object's place empty (the middle third of its box: its estimate may be off by a few
        centimetres), or did not
        have it in view and the sighting is beyond the drift radius (re-identified elsewhere)
        — not when the place was in view and not seen empty (occupied, occluded, too small for
        the depth image) or, for a nearer sighting, out of view: that move waits for
        consistent sightings."""
        if self.camera is None or _doubted(obj, self.config):  # looks missed it: doubted
            return True
        if obj.id not in self._cache:  # a conservative look: only the box's middle third
            self._cache[obj.id] = int(self._looks([obj.id], uncertainty_m=math.inf).states[0])
        state = self._cache[obj.id]
        if state == Place.OUT_OF_VIEW:  # near: an outlier at the edge of view; far: moved
            return dist > self.config.drift_radius_m
        # a tentative object's place is too uncertain for its emptiness to mean much
        return obj.promoted and state in (Place.EMPTY, Place.IN_VIEW)

    def looked(self, exclude: set[int]) -> list[tuple[int, float, float]]:
        """Live objects (leaving out ``exclude``) whose place the camera had wholly in view and
        range and not hidden — seen through, showing a surface where the object would be, or,
        without a depth image, simply in view — in id order, each with the share of its
        probability of detection this look allows (:func:`~locimem.tracker.belief.look_factor`)
        and the share of it seen through (the visible share of an ``EMPTY`` place, else 0).
        Occluded, no-reading and out-of-view places are neutral."""
        camera = self.camera
        assert camera is not None
        objects = self.state.objects
        # within range and around the view (a box in view has its centre inside it): an 8 m
        # sphere holds about four times what a 90-degree view does
        lo, hi = view_box(camera)
        candidates = [oid for oid in self.state.grid.near_in_box(camera.position,
                                                                 camera.range_m, lo, hi)
                      if oid not in exclude and not objects[oid].lost]
        if not candidates:
            return []
        looks = self._looks(candidates)
        out = []
        for k, oid in enumerate(candidates):
            place = int(looks.states[k])
            if place in LOOKED:
                factor = look_factor(looks, k, camera, self.config)
                empty = (float(looks.visible[k]) * place_certainty(objects[oid], self.config)
                         if place == Place.EMPTY else 0.0)
                if factor > 0.0 or empty > 0.0:
                    out.append((oid, factor, empty))
        return out


# -- records -----------------------------------------------------------------------------------
class RecordWriter:
    """Builds one commit's records, numbering them from ``next_seq``."""

    def __init__(self, commit: Commit, next_seq: int) -> None:
        self.commit = commit
        self.records: list[Record] = [commit]
        self.seq = next_seq

    def event(self, kind: EventKind, oid: int, label: str, data: dict[str, Any]) -> Event:
        ev = Event(self.seq, self.commit.id, self.commit.t, kind, oid, label, data)
        self.seq += 1
        self.records.append(ev)
        return ev

    def observation(self, index: int, det: Detection, oid: int | None, tier: str | None,
                    weight: float, rejected: str | None, key: str | None = None) -> Observation:
        obs = Observation(
            seq=self.seq, commit=self.commit.id, t=self.commit.t, index=index, label=det.label,
            confidence=det.confidence, center=det.center, size=det.size, object_id=oid,
            tier=tier, weight=weight, rejected=rejected, track_id=det.track_id,
            orientation=det.orientation, feature=det.feature, key=key,
        )
        self.seq += 1
        self.records.append(obs)
        return obs


def _sighting(out: RecordWriter, config: TrackerConfig, obj: ObjectState,
              obs: Observation, new: bool = False, camera: bool = False) -> ObjectState:
    """Events an accepted observation causes: PROMOTED, LABEL_CHANGED, MOVED. Returns the
    object as it will be after the observation."""
    after = obj.copy()
    update_object(after, obs)
    oid = obj.id
    # with a camera: fewer detections, but together confident enough
    early = camera and config.promote_after_camera < config.promote_after and (
        sum(after.label_mass.values()) >= config.promote_camera_min_mass)
    need = config.promote_after_camera if early else config.promote_after
    if camera and obs.confidence >= config.promote_confidence:  # sure enough at once
        need = 1
    if not after.promoted and after.n_detections >= need:
        # it settles where the averaged sightings put it, not where the first one did
        out.event(EventKind.PROMOTED, oid, after.label,
                  {"n_detections": after.n_detections, "to": list(after.center),
                   "size": list(after.size)})
        after.promoted = True
        after.place, after.place_size = after.center, after.size
    if new:
        return after
    if (obj.promoted and obj.source == "tracker" and after.n_detections > obj.n_detections
            and after.center != after.place
            and (not settled(obj, config) or _refines(after, config))):
        # published before its promote_after_camera-th sighting: until then it settles
        # where its sightings so far put it, as a thing promoted at that count would
        # (relations derive from the settled box); and later, as the estimate tightens,
        # once each time its sightings double
        out.event(EventKind.SETTLED, oid, after.label,
                  {"n_detections": after.n_detections, "from": list(after.place),
                   "to": list(after.center), "size": list(after.size)})
        after.place, after.place_size = after.center, after.size
        after.place_t = obs.t
    voted = after.voted_label()
    if voted != after.label:
        out.event(EventKind.LABEL_CHANGED, oid, voted,
                  {"from": after.label, "to": voted,
                   "votes": dict(sorted(after.label_mass.items()))})
        after.label = voted
    moved = math.dist(after.center, after.place)
    if moved > config.tight_radius_m:
        by_looks = obs.tier == "appearance"  # its embedding alone placed it here
        out.event(EventKind.MOVED, oid, voted,
                  {"from": list(after.place), "to": list(after.center), "distance_m": moved,
                   "size": list(after.size), **({"by_looks": True} if by_looks else {})})
        after.moved_from = after.place if by_looks else None
        after.place = after.center
    return after


def _back_where_it_was(obj: ObjectState, det: Detection, dist: float,
                       config: TrackerConfig) -> bool:
    """A sighting matched to ``obj`` far from it (beyond the tight radius), within the tight
    radius of where a move told by its looks alone took it from: the thing there was never
    gone, so the one seen elsewhere was another of its kind (two mugs of one make), and this
    sighting is not ``obj`` moving back."""
    return (obj.moved_from is not None and dist > config.tight_radius_m
            and math.dist(det.center, obj.moved_from) <= config.tight_radius_m)


def _refines(obj: ObjectState, config: TrackerConfig) -> bool:
    """Whether this sighting (the object's ``n_detections``-th) re-settles a settled object's
    place on its estimate: at twice, four and eight times the count a promotion takes, when
    the estimate has moved a centimetre or more from the place but no farther than the tight
    radius (farther is a move: ``MOVED``). The estimate tightens with every sighting, and the
    relations read the settled box: one settled from three noisy sightings can stand 5 cm
    above the desk the object is on."""
    base = max(1, min(config.promote_after_camera, config.promote_after))
    if obj.n_detections not in (2 * base, 4 * base, 8 * base):
        return False
    return REFINE_MIN_M <= math.dist(obj.center, obj.place) <= config.tight_radius_m


def rejection_key(det: Detection, cell_m: float) -> str:
    """``label@i,j,k``: the label and the ``cell_m`` cube the detection fell in, so a repeat
    of the same rejected sighting is recognised."""
    c = det.center
    return (f"{det.label}@{math.floor(c[0] / cell_m)},{math.floor(c[1] / cell_m)},"
            f"{math.floor(c[2] / cell_m)}")


def _tombstone_match(state: MemoryState, config: TrackerConfig, det: Detection,
                     skip: set[int]) -> int | None:
    """The nearest tombstone the detection looks like: within the drift radius, and with one
    of its labels or (both having embeddings) a similar embedding."""
    if not state.tombstones:
        return None
    for _, tid in state.tomb_grid.near(det.center, config.drift_radius_m):
        if tid in skip:
            continue
        tomb = state.tombstones[tid]
        if det.label in tomb.labels():
            return tid
        cos = _cosine(tomb.obj.feature, det.feature)
        if cos is not None and cos >= config.feature_match_min:
            return tid
    return None


def _too_big(det: Detection, obj: ObjectState, ratio: float) -> bool:
    """The detection's box is more than ``ratio`` times the object's usual size on an axis."""
    d, s = det.size, obj.size
    return (d[0] > ratio * max(s[0], 0.02) or d[1] > ratio * max(s[1], 0.02)
            or d[2] > ratio * max(s[2], 0.02))


def _weight(config: TrackerConfig, t: float, i: int, det: Detection, obj: ObjectState,
            dist: float, lost: bool, assoc: _Associator, places: _PlaceCheck,
            tier: str) -> tuple[float, bool]:
    """(weight, split): how far the object's position moves toward this sighting, and whether
    it instead splits off a new identity.

    Near sightings (within the tight radius) are smoothed in; a far one jumps (the object
    moved). Either is held instead (weight 0: it refreshes the object without moving it) when
    it is suspect — a box far larger than the object's usual size, a live same-label object
    nearer to it, (with a camera) a place that was in view and not seen empty, or sightings
    held lately (it either joins them, or disagrees with them). Only promoted objects are
    judged so (a tentative one's place is too uncertain), and only sightings farther than the
    scatter of one thing seen again — half the tight radius, or three standard deviations of
    the innovation (:func:`~locimem.tracker.belief.innovation_sigma`), up to the tight radius
    — which is smoothed in; except that
    a far sighting of a tentative object seen by a camera is held too.

    The ``move_confirm_after``-th consistent held sighting (within half the tight radius of
    the others: the spread of one thing seen again, not of outliers scattered around it)
    confirms the move, or, when the object was also seen at its place meanwhile and the held
    cluster is more than the tight radius away from it (two far-apart clusters), splits off a
    new identity."""
    ema = position_gain(config, obj, det, dist, places.camera)
    tight = config.tight_radius_m
    if lost:
        return (1.0 if dist > tight else ema), False
    big = obj.promoted and _too_big(det, obj, config.suspect_size_ratio)
    near = dist <= tight
    # the scatter of one thing seen again: half the tight radius, or (up to the tight radius)
    # three standard deviations of the innovation — a young estimate seen from afar is
    # uncertain by centimetres, and its sightings must not be held as outliers
    scatter = min(tight, max(tight / 2, 3.0 * innovation_sigma(config, obj, det,
                                                                 places.camera)))
    if dist <= scatter or (near and (not settled(obj, config) or places.camera is None)):
        return (0.0 if big else ema), False
    recent = [h for h in obj.held if t - h[0] <= config.held_window_s]
    cluster = [h for h in recent if math.dist(h[1:4], det.center) <= tight / 2]
    # (a nearer object of its label is no rival to a sighting its embedding picked out)
    twin = tier != "appearance" and _nearer_twin(i, obj, dist, assoc)
    suspect = ((obj.promoted and (big or twin))
               or not places.vacated(obj, dist)
               or bool(recent))  # sightings held lately: this one joins them or disagrees
    if not suspect:
        return (ema if near else 1.0), False
    if len(cluster) + 1 < config.move_confirm_after:
        return 0.0, False
    # also seen at its place meanwhile, and the two clusters far apart: two things
    if obj.n_detections > min(h[9] for h in cluster) and math.dist(
            [sum(h[1 + k] for h in cluster) / len(cluster) for k in range(3)],
            obj.center) > tight:
        return 0.0, True
    return 1.0, False


def _nearer_twin(i: int, obj: ObjectState, dist: float, assoc: _Associator) -> bool:
    """A live object with the object's label is nearer to detection ``i`` than the object."""
    objects = assoc.state.objects
    for d, oid in assoc.near.get(i, []):
        if d >= dist:
            return False
        other = objects[oid]
        if oid != obj.id and other.label == obj.label and not assoc._is_lost(other):
            return True
    return False


def _split(out: RecordWriter, config: TrackerConfig, t: float, index: int, det: Detection,
           obj: ObjectState, nid: int, after: dict[int, ObjectState], cam: bool) -> None:
    """The held sightings near ``det`` and ``det`` itself become a new identity ``nid``."""
    tight = config.tight_radius_m
    cluster = [h for h in obj.held if t - h[0] <= config.held_window_s
               and math.dist(h[1:4], det.center) <= tight / 2]
    n = len(cluster)
    mass: dict[str, float] = {}
    for h in cluster:
        mass[h[7]] = mass.get(h[7], 0.0) + h[8]
    top = max(mass.values())
    label = min(lab for lab, m in mass.items() if m == top)
    center = [sum(h[1 + k] for h in cluster) / n for k in range(3)]
    size = [sum(h[4 + k] for h in cluster) / n for k in range(3)]
    out.event(EventKind.SPLIT, obj.id, obj.label,
              {"into": nid, "n_held": n, "center": center})
    ev = out.event(EventKind.APPEARED, nid, label, {
        "label": label, "center": center, "size": size, "split_from": obj.id,
        "label_mass": dict(sorted(mass.items())), "n_detections": n,
        "first_seen": min(h[0] for h in cluster)})
    fresh = new_object(ev)
    obs = out.observation(index, det, nid, "split", 1.0 / (n + 1), None)
    after[nid] = _sighting(out, config, fresh, obs, camera=cam)


# -- duplicates --------------------------------------------------------------------------------
def _merges(out: RecordWriter, state: MemoryState, config: TrackerConfig,
            after: dict[int, ObjectState], dead: set[int], close: dict[int, list[int]]
            ) -> dict[int, int]:
    """Two identities whose boxes overlap and that were never seen together in one scan cannot
    both be right. Looking alike (or no embeddings) with the same voted label, they are one
    thing: MERGED into the older. Looking different (embeddings), the one sighted in this scan
    (promoted) has taken the other's place: that one is LOST (EXPIRED if never promoted).
    Returns absorbed id -> survivor id."""
    objects = state.objects
    merged: dict[int, int] = {}
    touched: set[int] = set()  # merged this scan, either side
    for oid in sorted(close):
        if oid not in objects or oid in dead or oid in touched:
            continue
        a = after[oid]
        if a.lost:
            continue
        for other_id in close[oid]:
            if math.dist(a.center, objects[other_id].center) > config.tight_radius_m:
                continue
            if other_id in dead or other_id in touched:
                continue
            b = objects[other_id]
            if other_id in a.together or oid in b.together:
                continue
            if b.lost and (b.lost_at is None
                           or out.commit.t - b.lost_at > config.reacquire_window_s):
                continue  # lost long ago: its place is another thing's now
            if iou_3d(a.center, a.size, b.center, b.size) < config.merge_min_iou:
                continue
            cos = _cosine(a.feature, b.feature)
            if cos is not None and cos < config.feature_match_min:
                # another thing now stands where b was: b was taken away (replaced)
                if a.promoted and not b.lost:
                    conf = b.confidence(out.commit.t, config.tau_s, config.tau_unseen_s)
                    if b.promoted:
                        out.event(EventKind.LOST, b.id, b.label,
                                  {"last_seen": b.last_seen, "confidence": conf,
                                   "replaced_by": a.id})
                    else:
                        out.event(EventKind.EXPIRED, b.id, b.label,
                                  {"last_seen": b.last_seen, "n_detections": b.n_detections,
                                   "confidence": conf, "replaced_by": a.id})
                    dead.add(b.id)
                continue
            if b.label != a.label:
                continue
            older, younger = sorted((a, b), key=lambda o: (o.first_seen, o.id))
            newer = a  # the one seen in this scan gives the place
            mass, label = _merged_vote(older, younger)
            out.event(EventKind.MERGED, older.id, label, {
                "absorbed": younger.id, "center": list(newer.center), "size": list(newer.size),
                "label_mass": dict(sorted(mass.items())),
                "n_detections": older.n_detections + younger.n_detections,
                "label": label, "distance_m": math.dist(a.center, b.center),
            })
            merged[younger.id] = older.id
            touched.update((oid, other_id))
            break
    return merged


def _neighbours(state: MemoryState, config: TrackerConfig, detections: Sequence[Detection],
               index: dict[int, int], after: dict[int, ObjectState], assoc: _Associator
               ) -> tuple[tuple[tuple[int, int], ...], dict[int, list[int]]]:
    """For the objects sighted in this scan (``index``: id -> detection), within twice the
    tight radius of their detection: the pairs both sighted (two things, never to be merged,
    left out when already known), and per sighted object the live ones not sighted (possible
    duplicates). Looked up in the detections' neighbour lists (drift radius, nearest first)."""
    radius = 2 * config.tight_radius_m
    objects = state.objects
    pairs = set()
    close: dict[int, list[int]] = {}
    near = assoc.near
    for oid, i in index.items():
        for d, other in near.get(i, ()):
            if d > radius:
                break
            if other == oid:
                continue
            if other in index:
                pairs.add((oid, other) if oid < other else (other, oid))
            elif other not in after:
                close.setdefault(oid, []).append(other)
    fresh = [oid for oid in index if oid not in objects]  # created in this scan
    for oid in fresh:
        here = detections[index[oid]].center
        for other, j in index.items():
            if other != oid and math.dist(here, detections[j].center) <= radius:
                pairs.add((oid, other) if oid < other else (other, oid))
    together = tuple(sorted(p for p in pairs
                            if not (p[0] in objects and p[1] in objects[p[0]].together)))
    return together, close
