"""The pure core: association, belief and lifecycle over plain data (no I/O, no clock)."""

from locimem.model import ObjectState
from locimem.tracker.apply import apply
from locimem.tracker.decide import Decision, decide
from locimem.tracker.state import MemoryState

__all__ = ["Decision", "MemoryState", "ObjectState", "apply", "decide"]
