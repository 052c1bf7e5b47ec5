"""Reading an object's belief at a time: its status band and its public view."""

from __future__ import annotations

from locimem.config import TrackerConfig
from locimem.model import ObjectState, ObjectStatus, TrackedObject
from locimem.scene.levels import level_of
from locimem.tracker.belief import withdrawn


def status_of(obj: ObjectState, now: float, config: TrackerConfig) -> ObjectStatus:
    """``lost`` once a LOST event was applied; ``confirmed`` when promoted, confident
    enough to publish and not withdrawn by the looks since its last sighting
    (:func:`~locimem.tracker.belief.withdrawn`); ``doubted`` when not, and the camera looked
    and missed it ``doubt_after_misses`` times since its last sighting; ``tentative``
    otherwise (kept, and still matchable)."""
    if obj.lost:
        return ObjectStatus.LOST
    if obj.promoted and (obj.confidence(now, config.tau_s, config.tau_unseen_s)
                         >= config.publish_min) and not withdrawn(obj, config):
        return ObjectStatus.CONFIRMED
    if obj.n_missed >= config.doubt_after_misses:
        return ObjectStatus.DOUBTED
    return ObjectStatus.TENTATIVE


def view(obj: ObjectState, now: float, config: TrackerConfig) -> TrackedObject:
    """The read-only public view of ``obj`` as believed at time ``now``."""
    return TrackedObject(
        id=obj.id,
        label=obj.label,
        center=obj.center,
        size=obj.size,
        confidence=obj.confidence(now, config.tau_s, config.tau_unseen_s),
        status=status_of(obj, now, config),
        first_seen=obj.first_seen,
        last_seen=obj.last_seen,
        n_detections=obj.n_detections,
        label_votes=dict(sorted(obj.label_mass.items(), key=lambda kv: (-kv[1], kv[0]))),
        track_id=obj.track_id,
        orientation=obj.orientation,
        lost_at=obj.lost_at,
        attributes=dict(obj.attributes),
        corrected_label=obj.pinned_label,
        source=obj.source,
        label_by=obj.label_by,
        level=level_of(obj),
    )
