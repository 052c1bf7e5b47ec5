"""What one scan's camera says about remembered places.

:class:`PlaceCheck` answers, on demand and once per object, whether a place the camera had in
view was found empty (a far sighting may then move its object at once) and which live objects
it looked at and missed (the evidence of absence); :func:`doubted` is whether looks since an
object's last sighting have made it no longer confident.
"""

from __future__ import annotations

import math

import numpy as np

from locimem.config import TrackerConfig
from locimem.geometry import LOOKED, Place, PlaceLooks, bordered_share, place_looks, view_box
from locimem.model import Camera, ObjectState
from locimem.tracker.belief import look_factor, place_certainty, position_information
from locimem.tracker.state import MemoryState

BORDER_SIGMAS = 2.0
"""A look at a place whose estimate is worth less than one sighting at the reference noise
judges, for the object's probability of detection, the pixels around its box out to this many
standard deviations of the estimate (:meth:`PlaceCheck.looked`)."""


def doubted(obj: ObjectState, config: TrackerConfig, misses: int = 0,
             credit: float = 0.0) -> bool:
    """Looked at and missed, and no longer confident (after ``misses`` more looks adding
    ``credit`` seconds of absence)."""
    return (obj.n_missed + misses >= config.doubt_after_misses
            and math.exp(-(obj.absence_s + credit) / config.tau_s) < config.publish_min)


class PlaceCheck:
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
        — or, beyond the drift radius, saw it "occupied" when the object is too flat for the
        depth image to tell it from what it lies on (that verdict says nothing) —
        not when the place was in view and not seen empty (occupied, occluded, too small for
        the depth image) or, for a nearer sighting, out of view: that move waits for
        consistent sightings."""
        if self.camera is None or doubted(obj, self.config):  # looks missed it: doubted
            return True
        if obj.id not in self._cache:  # a conservative look: only the box's middle third
            self._cache[obj.id] = int(self._looks([obj.id], uncertainty_m=math.inf).states[0])
        state = self._cache[obj.id]
        if state == Place.OUT_OF_VIEW:  # near: an outlier at the edge of view; far: moved
            return dist > self.config.drift_radius_m
        if state == Place.OCCUPIED and dist > self.config.drift_radius_m and self._flat(obj):
            state = Place.IN_VIEW  # the surface under it reads "occupied" whether it is there
        # a tentative object's place is too uncertain for its emptiness to mean much
        return obj.promoted and state in (Place.EMPTY, Place.IN_VIEW)

    def _flat(self, obj: ObjectState) -> bool:
        """Whether the object is too flat for the depth image to tell it from what it lies
        on: half its height within the see-through margin and the depth noise at its range
        (keys, a phone, a plate on a desk: its place reads occupied, there or not)."""
        camera, config = self.camera, self.config
        assert camera is not None
        noise = config.depth_noise_m + config.depth_noise_per_m * math.dist(obj.center,
                                                                           camera.position)
        return obj.size[2] / 2 <= config.see_through_m + noise

    def _bordered(self, oids: list[int], looks: PlaceLooks) -> PlaceLooks:
        """``looks`` with the visible share of each uncertain place — a box in plain view
        whose estimate is worth less than one sighting at the reference noise
        (``position_sigma_m``) — taken as at most the share in sight of the pixels around it
        out to :data:`BORDER_SIGMAS` standard deviations of the estimate
        (:func:`~locimem.geometry.bordered_share`). Such a box is often only the part of a
        thing that was in sight — a book on a shelf seen over the shelf's lip, a glass behind
        another — and the rest of it may reach on behind what borders it: a look that sees
        the part clearly says little when the detector's recall falls with the share of the
        whole thing hidden. A place whose estimate is sure is judged as it is."""
        config, objects = self.config, self.state.objects
        picked, grow = [], []
        for k, oid in enumerate(oids):
            if int(looks.states[k]) not in LOOKED or float(looks.visible[k]) <= 0.5:
                continue
            info = min(position_information(objects[oid]), config.position_info_max)
            if info >= 1.0:
                continue
            picked.append(k)
            grow.append(BORDER_SIGMAS * config.position_sigma_m / math.sqrt(info))
        if not picked or self.camera is None or self.camera.depth is None:
            return looks
        centers = np.array([objects[oids[k]].center for k in picked], dtype=np.float64)
        sizes = np.array([objects[oids[k]].size for k in picked], dtype=np.float64)
        share = bordered_share(self.camera, centers, sizes, np.array(grow),
                               depth_noise_m=config.depth_noise_m,
                               depth_noise_per_m=config.depth_noise_per_m,
                               states=looks.states[picked])  # (the looks made already)
        visible = looks.visible.copy()
        visible[picked] = np.minimum(visible[picked], share)
        return PlaceLooks(looks.states, visible, looks.forward_m, looks.angle_rad)

    def looked(self, exclude: set[int]) -> list[tuple[int, float, float]]:
        """Live objects (leaving out ``exclude``) whose place the camera had wholly in view and
        range and not hidden — seen through, showing a surface where the object would be, or,
        without a depth image, simply in view — in id order, each with the share of its
        probability of detection this look allows (:func:`~locimem.tracker.belief.look_factor`;
        an uncertain place bordered by something nearer allows less, :meth:`_bordered`)
        and the share of it seen through (the visible share of an ``EMPTY`` place, else 0).
        Occluded, no-reading and out-of-view places are neutral."""
        camera = self.camera
        assert camera is not None
        objects = self.state.objects
        # within range and around the view (a box in view has its centre inside it): an 8 m
        # sphere holds about four times what a 90-degree view does
        lo, hi = view_box(camera)
        candidates = [oid for oid in self.state.indexes.grid.near_in_box(camera.position,
                                                                 camera.range_m, lo, hi)
                      if oid not in exclude and not objects[oid].lost]
        if not candidates:
            return []
        looks = self._looks(candidates)
        bordered = self._bordered(candidates, looks)
        out = []
        for k, oid in enumerate(candidates):
            place = int(looks.states[k])
            if place in LOOKED:
                factor = look_factor(bordered, k, camera, self.config)
                empty = (float(looks.visible[k]) * place_certainty(objects[oid], self.config)
                         if place == Place.EMPTY else 0.0)
                if factor > 0.0 or empty > 0.0:
                    out.append((oid, factor, empty))
        return out
