"""``ObjectMemory``: the facade over the tracker, the store and the queries (see
:mod:`locimem.memory.facade`; each concern's verbs are a mixin beside it)."""

from locimem.memory.facade import ObjectMemory

__all__ = ["ObjectMemory"]
