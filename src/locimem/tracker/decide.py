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
from dataclasses import dataclass, field, replace
from typing import Any, cast

from locimem.config import TrackerConfig
from locimem.model import (
    Camera,
    Commit,
    Detection,
    EventKind,
    Held,
    ObjectState,
    Observation,
    Record,
    commit_of,
)
from locimem.tracker.apply import TOMB_KEY, new_object, update_object
from locimem.tracker.associate import _Associator, _cosine
from locimem.tracker.belief import (
    absence_credit,
    detection_probability,
    innovation_sigma,
    misses_can_lose,
    position_gain,
    settled,
    sighting_sigma,
)
from locimem.tracker.crowd import crowd_rejections
from locimem.tracker.duplicates import merges, neighbours, relocate
from locimem.tracker.frame_check import frame_warnings
from locimem.tracker.places import PlaceCheck, doubted
from locimem.tracker.relocate import relocations
from locimem.tracker.state import MemoryState
from locimem.tracker.writer import RecordWriter  # memory/base.py imports it from here

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

    @property
    def commit_id(self) -> int:
        """The id of the commit decided (its first record)."""
        return commit_of(self.records).id


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
    scan = _Scan(state, config, t, detections, camera, RecordWriter(commit, state.next_seq),
                 PlaceCheck(state, config, camera), next_oid=state.next_object_id)
    _lose_unseen(scan)
    high, low = _screen(scan)
    _associate(scan, high, low)
    _record_detections(scan)
    _look_for_absent(scan)
    _merge_duplicates(scan)
    _relocate_unwatched(scan)
    return _decision(scan)


@dataclass(slots=True, eq=False)
class _Scan:
    """One scan's decision in the making: what its phases read, and what they add."""

    state: MemoryState
    config: TrackerConfig
    t: float
    detections: Sequence[Detection]
    camera: Camera | None
    out: RecordWriter  # the records so far, the commit first
    places: PlaceCheck
    next_oid: int  # the id the next new identity takes
    gone: set[int] = field(default_factory=set)  # expired at this scan: no longer matchable
    lost_now: set[int] = field(default_factory=set)  # lost at this scan
    rejected: dict[int, str] = field(default_factory=dict)  # detection -> why
    match: dict[int, tuple[int, str, float]] = field(default_factory=dict)  # (oid, tier, dist)
    assoc: _Associator = field(init=False)
    assignments: list[int | None] = field(default_factory=list)  # detection -> object id
    after: dict[int, ObjectState] = field(default_factory=dict)  # sighted, as they will be
    suppressed: dict[int, int] = field(default_factory=dict)  # tombstone -> sightings kept out
    revived: set[int] = field(default_factory=set)  # tombstones revived in this scan
    missed: list[int] = field(default_factory=list)  # looked at and absent, in id order
    credits: list[float] = field(default_factory=list)  # the seconds of absence of each
    together: tuple[tuple[int, int], ...] = ()  # nearby pairs sighted together (new ones)
    merged: dict[int, int] = field(default_factory=dict)  # absorbed id -> survivor id

    def lose(self, obj: ObjectState, confidence: float) -> None:
        """``obj`` is LOST at this scan (EXPIRED if it was never promoted: gone for good)."""
        if obj.promoted:
            self.out.event(EventKind.LOST, obj.id, obj.label,
                           {"last_seen": obj.last_seen, "confidence": confidence})
            self.lost_now.add(obj.id)
        else:
            self.out.event(EventKind.EXPIRED, obj.id, obj.label,
                           {"last_seen": obj.last_seen, "n_detections": obj.n_detections,
                            "confidence": confidence})
            self.gone.add(obj.id)


def _lose_unseen(scan: _Scan) -> None:
    """1. Time-only belief: objects last seen without a camera and unseen for longer than the
    lost line are LOST at this scan (EXPIRED if they were never promoted) — at most
    ``losses_per_scan`` of them, the longest overdue, so that a scan after a long pause (or
    after a burst of new objects) costs what a scan costs; the rest are given up at the next
    scans. (Meanwhile they are not published: their confidence is below the lost line.)"""
    t, config, objects = scan.t, scan.config, scan.state.objects
    for oid in scan.state.indexes.due_for_loss(scan.state.objects, t, config.lost_after_s,
                                               config.losses_per_scan):
        obj = objects[oid]
        scan.lose(obj, obj.confidence(t, config.tau_s))


def _screen(scan: _Scan) -> tuple[list[int], list[int]]:
    """2a. Which detections are rejected before association (below ``min_detection_confidence``;
    duplicates and same-place crowds, tracker/crowd.py), and, of the rest, the confident ones
    (which may create an object) and the unsure ones (which may only refresh one)."""
    config, detections, rejected = scan.config, scan.detections, scan.rejected
    high: list[int] = []
    low: list[int] = []
    for i, det in enumerate(detections):
        if det.confidence < config.min_detection_confidence:
            rejected[i] = REJECT_LOW_CONFIDENCE
    rejected.update(crowd_rejections(
        detections, [i for i in range(len(detections)) if i not in rejected],
        config.tight_radius_m))
    for i, det in enumerate(detections):
        if i in rejected:
            continue
        if det.confidence < config.new_object_min_confidence:
            low.append(i)
        else:
            high.append(i)
    return high, low


def _associate(scan: _Scan, high: list[int], low: list[int]) -> None:
    """2b. Association: one assignment problem for the confident detections (against live and
    re-acquirable objects), then one for the rest (ByteTrack's second pass: against the live
    objects left unmatched only); then by embedding, anywhere, for the confident ones left and
    the most confident few unsure ones (``appearance_unsure_max``: each search reads every
    object's embedding) — an unsure detection whose embedding clearly picks out a live object
    refreshes it too (it may not create one): a bottle carried off, first seen at 0.4 as a
    "vase". A match back where a move told by its object's looks alone took it from is
    dropped (:func:`_back_where_it_was`); an unsure detection left unmatched is rejected."""
    config, detections, objects = scan.config, scan.detections, scan.state.objects
    assoc = scan.assoc = _Associator(scan.state, config, scan.t, detections, scan.lost_now,
                                     scan.gone)
    match = scan.match
    match.update(assoc.solve(high, allow_lost=True, exclude=set()))
    if low:
        match.update(assoc.solve(low, allow_lost=False,
                                 exclude={m[0] for m in match.values()}))
    unmatched = [i for i in high if i not in match and detections[i].feature is not None]
    if unmatched:
        match.update(assoc.by_appearance(unmatched, exclude={m[0] for m in match.values()}))
    weak = sorted((i for i in low if i not in match and detections[i].feature is not None),
                  key=lambda i: (-detections[i].confidence, i))[:config.appearance_unsure_max]
    if weak:
        match.update(assoc.by_appearance(weak, exclude={m[0] for m in match.values()},
                                         allow_lost=False))
    for i in [i for i, (oid, _, dist) in match.items()
              if _back_where_it_was(objects[oid], detections[i], dist, config)]:
        del match[i]
    for i in low:
        if i not in match:
            scan.rejected[i] = REJECT_NEW_LOW_CONFIDENCE


def _record_detections(scan: _Scan) -> None:
    """3. Records, detection by detection in input order: a rejected one's observation, a
    matched one's sighting (:func:`_record_match`), one a tombstone recognises
    (:func:`_record_forgotten`), or a new identity (:func:`_record_new`)."""
    out, rejected, match, assignments = scan.out, scan.rejected, scan.match, scan.assignments
    tight = scan.config.tight_radius_m
    for i, det in enumerate(scan.detections):
        if i in rejected:
            out.observation(i, det, None, None, 1.0, rejected[i], key=rejection_key(det, tight))
            assignments.append(None)
            continue
        hit = match.get(i)
        if hit is not None:
            assignments.append(_record_match(scan, i, det, hit))
            continue
        tomb_id = _tombstone_match(scan.state, scan.config, det, scan.revived)
        if tomb_id is not None:
            assignments.append(_record_forgotten(scan, i, det, tomb_id))
        else:
            assignments.append(_record_new(scan, i, det))


def _record_match(scan: _Scan, i: int, det: Detection, hit: tuple[int, str, float]) -> int:
    """A matched detection: how far it moves its object (:func:`_weight`; a near sighting of
    a live, unsettled object is simply smoothed in), then its sighting (REACQUIRED first when
    the object was lost) — or a SPLIT off a new identity. Returns the id it is assigned."""
    config, out, camera, t = scan.config, scan.out, scan.camera, scan.t
    oid, tier, dist = hit
    obj = scan.state.objects[oid]
    lost = obj.lost or oid in scan.lost_now
    if not lost and dist <= config.tight_radius_m and not settled(obj, config):  # common case
        weight, split = position_gain(config, obj, det, dist, camera), False
    else:
        weight, split = _weight(config, t, i, det, obj, dist, lost, scan.assoc, scan.places,
                                tier)
    if split:
        nid = scan.next_oid
        scan.next_oid += 1
        _split(out, config, t, i, det, obj, nid, scan.after, camera is not None)
        return nid
    if lost:
        out.event(EventKind.REACQUIRED, obj.id, obj.label,
                  {"lost_at": obj.lost_at if obj.lost else t, "gap_s": t - obj.last_seen})
    obs = out.observation(i, det, oid, tier, weight, None)
    scan.after[obj.id] = _sighting(out, config, obj, obs, camera=camera is not None)
    return obj.id


def _record_forgotten(scan: _Scan, i: int, det: Detection, tomb_id: int) -> int | None:
    """A detection a tombstone recognises: the forgotten object is REVIVED by its
    ``revive_after``-th sighting kept out (returns its id); before that the sighting is
    rejected as forgotten (returns None), with a SUPPRESSED event the first time in a scan
    and ``reacquire_window_s``."""
    config, out, suppressed = scan.config, scan.out, scan.suppressed
    tomb = scan.state.tombstones[tomb_id]
    kept_out = tomb.suppressed + suppressed.get(tomb_id, 0)
    if config.revive_after is not None and kept_out + 1 >= config.revive_after:
        out.event(EventKind.REVIVED, tomb_id, tomb.obj.label,
                  {"suppressed": kept_out, "forgotten_at": tomb.forgotten_at})
        scan.revived.add(tomb_id)
        scan.after[tomb_id] = _sighting(
            out, config, tomb.obj, out.observation(i, det, tomb_id, "revive", 1.0, None),
            camera=scan.camera is not None)
        return tomb_id
    last = tomb.last_suppressed
    if tomb_id not in suppressed and (last is None or scan.t - last > config.reacquire_window_s):
        out.event(EventKind.SUPPRESSED, tomb_id, tomb.obj.label,
                  {"forgotten_at": tomb.forgotten_at, "label": det.label,
                   "center": list(det.center)})
    suppressed[tomb_id] = suppressed.get(tomb_id, 0) + 1
    scan.rejected[i] = REJECT_FORGOTTEN
    out.observation(i, det, None, None, 1.0, REJECT_FORGOTTEN, key=f"{TOMB_KEY}{tomb_id}")
    return None


def _record_new(scan: _Scan, i: int, det: Detection) -> int:
    """A detection nothing remembered matched: a new identity (APPEARED; with a camera, a far
    first sighting is worth less than one at the reference distance). Returns its id."""
    config, out, camera = scan.config, scan.out, scan.camera
    oid = scan.next_oid
    scan.next_oid += 1
    data: dict[str, Any] = {"label": det.label, "center": list(det.center),
                            "size": list(det.size)}
    if out.commit.actor != "tracker":  # the default source is left implicit
        data["source"] = out.commit.actor
    if camera is not None:
        ratio = config.position_sigma_m / sighting_sigma(config, det, camera)
        data["info"] = ratio * ratio
    ev = out.event(EventKind.APPEARED, oid, det.label, data)
    fresh = new_object(ev)
    scan.after[oid] = _sighting(out, config, fresh, out.observation(i, det, oid, "new", 1.0, None),
                                new=True, camera=camera is not None)
    return oid


def _look_for_absent(scan: _Scan) -> None:
    """4. Looked and absent: objects whose place this scan's camera had in view, not hidden,
    and which no detection matched. Each takes the evidence of absence a Bernoulli existence
    filter gives one miss, weighted by its probability of detection (see tracker/belief.py);
    those whose existence falls below the lost line are LOST (EXPIRED if never promoted) — a
    glimpse (belief.misses_can_lose) only by a look that saw through at least half of a place
    it surely stands on (visible share times belief.place_certainty): its box is a guess, and
    a look beside it proves nothing. A late scan (a fleet's, within the store's late_s) is no
    evidence against a thing sighted after its time: it may have arrived since."""
    if scan.camera is None:
        return
    config, t, objects = scan.config, scan.t, scan.state.objects
    for oid, factor, empty in scan.places.looked(set(scan.after) | scan.lost_now | scan.gone):
        obj = objects[oid]
        if obj.last_seen > t:
            continue
        credit = absence_credit(obj, detection_probability(obj, config) * factor, config, empty)
        scan.missed.append(oid)
        scan.credits.append(credit)
        if (obj.seen_camera and obj.absence_s + credit > config.lost_after_s
                and (empty >= 0.5 or misses_can_lose(obj, config))):
            absent = obj.absence_s + credit
            scan.lose(obj, math.exp(-absent / config.tau_s))


def _merge_duplicates(scan: _Scan) -> None:
    """5. Duplicates: a sighted identity and a live one with the same label, overlapping,
    never seen together in one scan, are one thing: the younger is merged into the older
    (tracker/duplicates.py). Also finds the nearby pairs sighted together, for the commit."""
    index = {oid: i for i, oid in enumerate(scan.assignments) if oid is not None}
    scan.together, close = neighbours(scan.state, scan.config, scan.detections, index,
                                      scan.after, scan.assoc)
    if close:
        scan.merged = merges(scan.out, scan.state, scan.config, scan.after,
                             scan.lost_now | scan.gone, close)


def _relocate_unwatched(scan: _Scan) -> None:
    """6. Moves nobody watched: an identity whose place was found empty and a new one of its
    label elsewhere are one object that moved (tracker/relocate.py): the old identity absorbs
    the new one, with a MOVED."""
    state, config, objects, merged = scan.state, scan.config, scan.state.objects, scan.merged
    settled_now = [oid for oid, a in scan.after.items()  # promoted and settled (belief.settled)
                   if settled(a, config)
                   and not (oid in objects and settled(objects[oid], config))]
    doubted_now = {oid for oid, credit in zip(scan.missed, scan.credits, strict=True)
                   if doubted(objects[oid], config, 1, credit)
                   and not doubted(objects[oid], config)}  # became doubted in this scan
    dead = scan.gone | set(merged) | set(merged.values())
    for old, new, by_looks in relocations(state, config, scan.t, scan.after, settled_now,
                                          scan.lost_now, doubted_now, dead):
        relocate(scan.out, state, scan.after, old, new, by_looks)
        merged[new] = old


def _decision(scan: _Scan) -> Decision:
    """The commit completed (the objects looked at and missed, the seconds of absence credited
    to each, the pairs seen together), and each detection's final object (a merged one's
    survivor)."""
    out, merged, assignments = scan.out, scan.merged, scan.assignments
    if scan.missed or scan.together:
        out.records[0] = replace(out.commit, missed=tuple(scan.missed),
                                 miss_credits=tuple(scan.credits), together=scan.together)
    final = tuple(merged.get(a, a) if a is not None else None for a in assignments) \
        if merged else tuple(assignments)
    return Decision(out.records, final, scan.rejected,
                    frame_warnings(scan.camera, scan.detections))


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
    for _, tid in state.indexes.tomb_grid.near(det.center, config.drift_radius_m):
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
            dist: float, lost: bool, assoc: _Associator, places: PlaceCheck,
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
               # sightings held lately that this one disagrees with (when it joins them
               # all, and the place is vacated, they were the thing seen where it now is)
               or len(cluster) < len(recent))
    if not suspect:
        return (ema if near else 1.0), False
    if len(cluster) + 1 < config.move_confirm_after:
        return 0.0, False
    # also seen at its place meanwhile, and the two clusters far apart: two things — unless
    # they are its own partial views (held, as any suspect sighting)
    if obj.n_detections > min(h[9] for h in cluster) and math.dist(
            _held_mean(cluster, 1), obj.center) > tight:
        return 0.0, not _partial_views(cluster, obj)
    return 1.0, False


PARTIAL_INSIDE = 0.4
"""The share of held sightings' mean box inside an object's box from which they are views of
part of it (a chair half hidden by the table, its box shrunk and shifted to the visible
side), not a second thing beside it: two solid things do not share that much of their
volume. (Sightings held on an object beyond the tight radius were matched under its label
or by perception's track id, so their labels say nothing more.)"""


def _partial_views(cluster: list[Held], obj: ObjectState) -> bool:
    """At least ``PARTIAL_INSIDE`` of the held sightings' mean box lies within the object's."""
    center, size = _held_mean(cluster, 1), _held_mean(cluster, 4)
    inside = 1.0
    for k in range(3):
        lo = max(center[k] - size[k] / 2, obj.center[k] - obj.size[k] / 2)
        hi = min(center[k] + size[k] / 2, obj.center[k] + obj.size[k] / 2)
        inside *= max(0.0, hi - lo) / size[k] if size[k] > 0 else 0.0
    return inside >= PARTIAL_INSIDE


def _held_mean(cluster: list[Held], first: int) -> list[float]:
    """The mean of the held sightings' three fields from ``first`` (1: centre, 4: size)."""
    return [sum(cast(float, h[first + k]) for h in cluster) / len(cluster) for k in range(3)]


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
    center, size = _held_mean(cluster, 1), _held_mean(cluster, 4)
    out.event(EventKind.SPLIT, obj.id, obj.label,
              {"into": nid, "n_held": n, "center": center})
    ev = out.event(EventKind.APPEARED, nid, label, {
        "label": label, "center": center, "size": size, "split_from": obj.id,
        "label_mass": dict(sorted(mass.items())), "n_detections": n,
        "first_seen": min(h[0] for h in cluster)})
    fresh = new_object(ev)
    obs = out.observation(index, det, nid, "split", 1.0 / (n + 1), None)
    after[nid] = _sighting(out, config, fresh, obs, camera=cam)
