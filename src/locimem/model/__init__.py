"""The data at the bottom of locimem: the values that cross its boundaries
(:mod:`~locimem.model.values`: detections, cameras, results), the append-only record
(commits, observations, events) and what the memory believes of each object
(:mod:`~locimem.model.objects`). Every other layer imports these; they import no other layer.
"""

from locimem.model.objects import (
    HELD_MAX,
    NO_IDS,
    Held,
    ObjectState,
    ObservationMeta,
    Record,
    RejectionState,
    TombstoneState,
    commit_of,
)
from locimem.model.values import (
    OBJECTLESS_KINDS,
    AuditEntry,
    Camera,
    Commit,
    CompactionReport,
    Detection,
    Event,
    EventKind,
    MapEpoch,
    ObjectStatus,
    Observation,
    Quat,
    RecallResult,
    RejectionKey,
    ScanResult,
    Tombstone,
    TrackedObject,
    Vec3,
)

__all__ = [
    "HELD_MAX", "NO_IDS", "OBJECTLESS_KINDS", "AuditEntry", "Camera", "Commit",
    "CompactionReport", "Detection", "Event", "EventKind", "Held", "MapEpoch", "ObjectState",
    "ObjectStatus", "Observation", "ObservationMeta", "Quat", "RecallResult", "Record",
    "RejectionKey", "RejectionState", "ScanResult", "Tombstone", "TombstoneState",
    "TrackedObject", "Vec3", "commit_of",
]
