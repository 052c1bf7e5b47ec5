"""``ObjectMemory``: the facade over the tracker, the store and the queries (see
:mod:`locimem.memory.facade`; each concern's verbs are a service beside it, writing through
the live memory of :mod:`locimem.memory.base`)."""

from locimem.memory.facade import ObjectMemory, Readable, reader_of

__all__ = ["ObjectMemory", "Readable", "reader_of"]
