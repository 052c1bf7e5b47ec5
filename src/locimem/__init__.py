"""locimem: a persistent object memory for robots and embodied agents.

Feed it 3D detections scan by scan; it keeps stable identities, voted labels, a decaying
belief in each object, and an append-only record that survives crashes and restarts.

    >>> from locimem import Detection, ObjectMemory
    >>> with ObjectMemory.open(":memory:", scope="home") as mem:
    ...     cup = Detection("cup", 0.9, center=(0.4, 0.1, 0.9), size=(0.08, 0.08, 0.1))
    ...     r = mem.observe(t=0.0, detections=[cup])
    ...     mem.get(r.assignments[0]).label
    'cup'

The front door is small on purpose: result types live in :mod:`locimem.model`, every error
class in :mod:`locimem.errors` (all rooted in :class:`LocimemError`).
"""

from locimem.config import TrackerConfig
from locimem.errors import InvalidInput, LocimemError, NotFound
from locimem.memory import ObjectMemory
from locimem.model import Camera, Detection, EventKind, ObjectStatus
from locimem.version import __version__

__all__ = [
    "Camera",
    "Detection",
    "EventKind",
    "InvalidInput",
    "LocimemError",
    "NotFound",
    "ObjectMemory",
    "ObjectStatus",
    "TrackerConfig",
    "__version__",
]
