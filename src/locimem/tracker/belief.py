"""Existence as a Bernoulli filter: how much one look that missed an object says it is gone.

Pure functions over an object's state and one scan's :class:`~locimem.geometry.PlaceLooks`.
The tracker writes what they return onto the commit (``missed``, ``miss_credits``), so replay
applies the same numbers without reading any of this.

The filter (docs/architecture.md, "Belief"): an object's existence probability is
``r = exp(-A / tau_s)``, ``A`` being its evidence of absence in seconds of ``tau_s`` (the
time-only model's scale, so one formula reads both). A look that had its place in view, not
hidden, and did not detect it is a Bernoulli update with probability of detection ``p``::

    r' = r (1 - p) / (1 - r p)        i.e.        A' = A + tau_s * ln((1 - r p) / (1 - p))

A sighting restores ``r`` to ``existence_max`` (read as 1 until the next miss). ``p`` is the
object's own detection rate — looks in which it was seen over looks that had it in view, with
a Beta prior — times what this look allows: the visible share of its place, a fall-off beyond
``range_edge`` of the camera's range, and a fall-off for objects that subtend less than
``small_angle_deg``.
"""

from __future__ import annotations

import math

from locimem.config import TrackerConfig
from locimem.geometry import PlaceLooks
from locimem.model import Camera, Detection, ObjectState

__all__ = [
    "absence_credit",
    "detection_probability",
    "existence_cap",
    "innovation_sigma",
    "look_factor",
    "misses_can_lose",
    "place_certainty",
    "position_gain",
    "position_information",
    "settled",
    "sighting_sigma",
    "withdrawn",
]


def detection_probability(obj: ObjectState, config: TrackerConfig) -> float:
    """The object's learned probability of detection when its place is in plain view: its
    sightings in scans with a camera over those plus the looks proved to have missed it, with
    ``pd_prior_weight`` pseudo-looks at ``pd_prior``; at most ``pd_max``.

    >>> from locimem.tracker.state import ObjectState
    >>> cup = ObjectState(1, "cup", (0, 0, 0), (0.1, 0.1, 0.1), (0, 0, 0), 0.0, 0.0)
    >>> config = TrackerConfig()
    >>> detection_probability(cup, config)      # nothing learned: the prior
    0.8
    >>> cup.n_looked_seen, cup.n_looked_missed = 7, 3
    >>> round(detection_probability(cup, config), 3)   # (7 + 4) / (10 + 5)
    0.733
    """
    w = config.pd_prior_weight
    seen = obj.n_looked_seen + config.pd_prior * w
    p = seen / (obj.n_looked_seen + obj.n_looked_missed + w)
    return min(p, config.pd_max)


def look_factor(looks: PlaceLooks, k: int, camera: Camera, config: TrackerConfig) -> float:
    """How much of the object's detection probability look ``k`` allows, in [0, 1]: a ramp
    in the visible share ``v`` of its place, ``2 v - 1`` (nothing at half hidden, where the
    place counts as occluded, all when in plain view: a detector's recall falls steeply as a
    thing is hidden, and a look at a third-hidden vase says little), times a linear fall-off
    to one half from ``range_edge`` of the range to the range, times
    ``angle / small_angle_deg`` for an object that subtends less.

    >>> import numpy as np
    >>> from locimem.geometry import PlaceLooks, look_at
    >>> cam = look_at((0, 0, 1), (1, 0, 1), fov_deg=90.0, vfov_deg=90.0, range_m=5.0)
    >>> looks = PlaceLooks(np.zeros(3, np.int8), np.array([1.0, 0.75, 0.5]),
    ...                    np.array([2.0, 2.0, 2.0]), np.array([0.1, 0.1, 0.1]))
    >>> [look_factor(looks, k, cam, TrackerConfig()) for k in range(3)]
    [1.0, 0.5, 0.0]
    """
    factor = max(0.0, 2.0 * float(looks.visible[k]) - 1.0)
    forward, edge = float(looks.forward_m[k]), config.range_edge * camera.range_m
    if forward > edge:
        factor *= 1.0 - 0.5 * min(1.0, (forward - edge) / (camera.range_m - edge))
    small = math.radians(config.small_angle_deg)
    angle = float(looks.angle_rad[k])
    if angle < small:
        factor *= angle / small
    return factor


def absence_credit(obj: ObjectState, p: float, config: TrackerConfig,
                   empty: float = 0.0) -> float:
    """Seconds of absence (of ``tau_s``) one miss adds: ``tau_s * ln(r / r')`` with ``r`` the
    object's existence (at most ``existence_max``) and ``r'`` its Bayes update by the look's
    likelihood ratio ``L = (1 - p) * e``: the detector's (a miss with probability of detection
    ``p``) times the depth image's, ``e = 1 - empty * (1 - empty_likelihood)`` when an
    ``empty`` share of the place was seen through (the depth reads nothing where the object
    would be), 1 otherwise::

        r' = r L / (1 - r + r L)

    >>> from locimem.tracker.state import ObjectState
    >>> cup = ObjectState(1, "cup", (0, 0, 0), (0.1, 0.1, 0.1), (0, 0, 0), 0.0, 0.0)
    >>> cup.n_looked_seen = 20
    >>> config = TrackerConfig()
    >>> def looks_to_lose(empty):
    ...     cup.absence_s, n = 0.0, 0
    ...     while math.exp(-cup.absence_s / config.tau_s) >= config.lost_below:
    ...         cup.absence_s += absence_credit(cup, 0.92, config, empty)
    ...         n += 1
    ...     return n
    >>> looks_to_lose(0.0)   # the detector alone (p = 0.92): lost at the fifth look
    5
    >>> looks_to_lose(1.0)   # its place also seen through: at the third
    3
    """
    if p <= 0.0 and empty <= 0.0:
        return 0.0
    r = min(math.exp(-obj.absence_s / config.tau_s), existence_cap(obj, config))
    ratio = (1.0 - p) * (1.0 - empty * (1.0 - config.empty_likelihood))
    return config.tau_s * math.log((1.0 - r + r * ratio) / ratio)


def existence_cap(obj: ObjectState, config: TrackerConfig) -> float:
    """The existence a sighting restores: its log-odds grow by ``evidence_per_sighting`` with
    each sighting in a scan with a camera, up to ``existence_max`` — a thing seen three times
    is not as certain as one seen three hundred times — scaled by how sure the detector was:
    its sightings' mean confidence over ``promote_confidence``, at most 1 (five sightings
    40-55 % sure, a detector's persistent false positive on clutter, are worth about three
    sure ones). (Read as 1 until the first miss.) An object never seen by a camera — a
    prior-map entry — is believed at ``existence_max``.

    >>> from locimem.tracker.state import ObjectState
    >>> cup = ObjectState(1, "cup", (0, 0, 0), (0.1, 0.1, 0.1), (0, 0, 0), 0.0, 0.0)
    >>> config = TrackerConfig()
    >>> [round(existence_cap(cup, config), 4) for cup.n_looked_seen in (1, 2, 3, 4, 50)]
    [0.9241, 0.9933, 0.9994, 0.9999, 0.9999]
    >>> cup.n_looked_seen = cup.n_detections = 4
    >>> cup.label_mass = {"cup": 4 * 0.35}      # half as sure as a sure detection
    >>> round(existence_cap(cup, config), 4)    # as two sure sightings
    0.9933
    """
    if obj.n_looked_seen == 0:  # never seen by a camera: a prior-map entry, believed whole
        return config.existence_max
    cap = math.log(config.existence_max / (1.0 - config.existence_max))
    sure = 1.0
    if obj.n_detections > 0:
        mean_confidence = sum(obj.label_mass.values()) / obj.n_detections
        sure = min(1.0, mean_confidence / config.promote_confidence)
    logit = min(cap, config.evidence_per_sighting * obj.n_looked_seen * sure)
    return 1.0 / (1.0 + math.exp(-logit))


def withdrawn(obj: ObjectState, config: TrackerConfig) -> bool:
    """Whether the looks that missed the object since its last sighting (at least
    ``doubt_after_misses`` of them) have multiplied the odds of its existence by less than
    ``withdraw_ratio`` — from the odds a sighting restores (:func:`existence_cap`) to the odds
    its evidence of absence leaves. Such an object is not published (``doubted``) though not
    lost: publication says "it is there now", and two plain misses of a thing the detector
    sees 95 % of the time make that unlikely (the odds fall 400-fold), while losing it — which
    ends its identity's claim to be matched and is the slower verdict — waits for
    ``lost_below``. The time out of view does not count (it is not evidence of absence).

    >>> from locimem.tracker.state import ObjectState
    >>> cup = ObjectState(1, "cup", (0, 0, 0), (0.1, 0.1, 0.1), (0, 0, 0), 0.0, 0.0)
    >>> cup.seen_camera, cup.n_looked_seen, cup.n_missed = True, 20, 2
    >>> config = TrackerConfig()
    >>> # no evidence yet; odds 49 (a 200-fold fall from the ceiling's 9999); odds 24 (400-fold)
    >>> [withdrawn(cup, config) for cup.absence_s in (0.0, 0.3, 0.6)]
    [False, False, True]
    """
    if (config.withdraw_ratio <= 0.0 or not obj.seen_camera or obj.absence_s <= 0.0
            or obj.n_missed < config.doubt_after_misses):
        return False
    r = math.exp(-obj.absence_s / config.tau_s)
    cap = existence_cap(obj, config)
    return r / (1.0 - r) < config.withdraw_ratio * cap / (1.0 - cap)


def misses_can_lose(obj: ObjectState, config: TrackerConfig) -> bool:
    """Whether looks that missed the object can prove it gone (``LOST``, or moved away): not
    for a promoted object the camera has seen in fewer than ``lost_min_sightings`` scans —
    its box, from so few sightings, may not be where it stands, so a look "at" it may have
    been beside it; such an object is only doubted by misses (a look that sees through at
    least half of a place it surely stands on still loses it: the decision's step 4). Objects
    never seen by a camera follow the time-only model.

    >>> from locimem.tracker.state import ObjectState
    >>> book = ObjectState(1, "book", (0, 0, 0), (0.16, 0.23, 0.04), (0, 0, 0), 0.0, 0.0)
    >>> book.promoted = True
    >>> config = TrackerConfig()
    >>> [misses_can_lose(book, config) for book.n_looked_seen in (0, 1, 2)]
    [True, False, True]
    """
    return not obj.promoted or obj.n_looked_seen == 0 or \
        obj.n_looked_seen >= config.lost_min_sightings


def settled(obj: ObjectState, config: TrackerConfig) -> bool:
    """Promoted from as many sightings as a promotion takes (``promote_after_camera``, or
    ``promote_after`` if lower): its box is where its sightings settled. A thing published at
    its first sighting (``promote_confidence``) is not settled yet — its sightings within the
    tight radius are smoothed in (not held as outliers), its place follows them (``SETTLED``),
    and it is not yet taken as the new self of a move nobody watched.

    >>> from locimem.tracker.state import ObjectState
    >>> cup = ObjectState(1, "cup", (0, 0, 0), (0.1, 0.1, 0.1), (0, 0, 0), 0.0, 0.0)
    >>> cup.promoted = True
    >>> [settled(cup, TrackerConfig()) for cup.n_detections in (1, 2, 3)]
    [False, False, True]
    """
    return obj.promoted and obj.n_detections >= min(config.promote_after_camera,
                                                     config.promote_after)


def place_certainty(obj: ObjectState, config: TrackerConfig) -> float:
    """How surely the object's estimated box lies on the object itself, in [0, 1]:
    ``1 - (sigma / h)^2``, with ``sigma = position_sigma_m / sqrt(information)`` the estimate's
    position uncertainty and ``h`` the box's smallest half-extent. A place seen through is
    evidence of absence only as far as the box is where the object would be: a 4 cm book
    whose height is known to 2 cm may be seen "through" just above itself.

    >>> from locimem.tracker.state import ObjectState
    >>> book = ObjectState(1, "book", (0, 0, 0), (0.16, 0.23, 0.04), (0, 0, 0), 0.0, 0.0)
    >>> config = TrackerConfig()
    >>> [round(place_certainty(book, config), 2) for book.pos_info in (1, 4, 16, 50)]
    [0.0, 0.75, 0.94, 0.98]
    """
    info = min(position_information(obj), config.position_info_max)
    half = 0.5 * min(obj.size)
    if half <= 0.0:
        return 0.0
    ratio = config.position_sigma_m / math.sqrt(info) / half
    return max(0.0, 1.0 - ratio * ratio)


# -- position ----------------------------------------------------------------------------------
def position_information(obj: ObjectState) -> float:
    """How many sightings at the reference noise (``position_sigma_m``) the object's position
    estimate is worth: ``pos_info``, or, for an object from a store that did not keep it, its
    detection count."""
    return obj.pos_info if obj.pos_info > 0.0 else float(max(obj.n_detections, 1))


def position_gain(config: TrackerConfig, obj: ObjectState, det: Detection, dist: float,
                  camera: Camera | None) -> float:
    """The step (Kalman gain) the object's centre and size take toward a sighting ``dist``
    metres away: a constant-position filter whose measurement noise grows with range
    (``position_sigma_m + position_sigma_per_m * range`` from the camera; the first term alone
    without one). The estimate's information is counted in sightings at the reference noise
    and capped at ``position_info_max`` (so a slow drift is still followed); a sighting more
    than three standard deviations of the innovation away takes at least ``position_alpha``
    (something nudged it: the estimate follows instead of averaging two places).

    >>> from locimem.tracker.state import ObjectState
    >>> cup = ObjectState(1, "cup", (0, 0, 0), (0.1, 0.1, 0.1), (0, 0, 0), 0.0, 0.0)
    >>> det = Detection("cup", 0.9, (0.01, 0, 0), (0.1, 0.1, 0.1))
    >>> config = TrackerConfig()
    >>> [round(position_gain(config, cup, det, 0.01, None), 3) for cup.pos_info in (1, 9, 99)]
    [0.5, 0.1, 0.02]
    """
    sigma = sighting_sigma(config, det, camera)
    ratio = config.position_sigma_m / sigma
    gain_info = ratio * ratio  # this sighting's information, in reference sightings
    info = min(position_information(obj), config.position_info_max)
    gain = gain_info / (info + gain_info)
    if dist > 3.0 * innovation_sigma(config, obj, det, camera):
        gain = max(gain, config.position_alpha)
    return gain


def sighting_sigma(config: TrackerConfig, det: Detection, camera: Camera | None) -> float:
    """A sighting's position noise (metres): ``position_sigma_m`` plus ``position_sigma_per_m``
    per metre from the camera (the first term alone without one)."""
    sigma = config.position_sigma_m
    if camera is not None:
        sigma += config.position_sigma_per_m * math.dist(det.center, camera.position)
    return sigma


def innovation_sigma(config: TrackerConfig, obj: ObjectState, det: Detection,
                     camera: Camera | None) -> float:
    """The standard deviation (metres) of a sighting's distance from the object's estimate if
    both are of one thing: ``sqrt(sigma_sighting^2 + position_sigma_m^2 / info)``, the
    sighting's noise and the estimate's (its information counted in reference sightings).
    A fresh identity seen from 3 m is uncertain by centimetres; one seen fifty times, by
    millimetres.

    >>> from locimem.tracker.state import ObjectState
    >>> cup = ObjectState(1, "cup", (0, 0, 0), (0.1, 0.1, 0.1), (0, 0, 0), 0.0, 0.0)
    >>> det = Detection("cup", 0.9, (0.01, 0, 0), (0.1, 0.1, 0.1))
    >>> cam = Camera((3.0, 0.0, 0.0), (1.0, 0.0, 0.0, 0.0), fov_deg=60.0, range_m=8.0)
    >>> config = TrackerConfig()
    >>> [round(innovation_sigma(config, cup, det, cam), 3) for cup.pos_info in (0.3, 50)]
    [0.062, 0.05]
    """
    sigma = sighting_sigma(config, det, camera)
    info = min(position_information(obj), config.position_info_max)
    return math.sqrt(sigma * sigma + config.position_sigma_m ** 2 / info)
