"""Corrections a person (or a program) makes: relabel, move, set attributes, forget.

Each is recorded as a correction commit with its actor and reason, decided by
:mod:`locimem.tracker.governance` and shown by ``audit()``.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Any

from locimem.check import (
    check_attributes,
    check_coordinate_domain,
    check_label,
    check_size_domain,
    check_text,
)
from locimem.errors import InvalidInput
from locimem.memory.base import Service, in_turn
from locimem.model import (
    Event,
    Record,
)
from locimem.tracker.governance import (
    decide_attributes,
    decide_forget,
    decide_merge,
    decide_move,
    decide_relabel,
    decide_split,
)


class Corrections(Service):
    """The correction verbs of :class:`~locimem.memory.facade.ObjectMemory`."""

    @in_turn
    def relabel(self, object_id: int, label: str, *, actor: str = "operator",
                reason: str | None = None, t: float | None = None) -> Event:
        """Correct an object's label ("that is not a cup, it is a vase").

        The label mass the detector accumulated is kept (see ``label_votes``); by default the
        person's label is pinned so later detections do not overturn it (set
        ``TrackerConfig.human_label_weight`` to make it weighted evidence instead). Records a
        CORRECTED event with ``actor``, ``reason`` and valid time ``t`` (default: now).
        """
        label = check_label(label)
        live = self._live
        obj, actor, reason, when, recorded = live._correction_args("relabel", object_id, actor,
                                                                   reason, t)
        records = decide_relabel(live._state, live._config, obj, label, when, actor, reason,
                                 recorded)
        live._commit(records)
        return _event(records[-1])

    @in_turn
    def move(self, object_id: int, center: Sequence[float], *, actor: str = "operator",
             reason: str | None = None, t: float | None = None) -> Event:
        """Correct where an object is ("the remote is in the drawer now"): centre (x, y, z),
        metres, map frame. Its sightings stay in its history; a CORRECTED event records it."""
        center = check_coordinate_domain(center, "center")
        live = self._live
        obj, actor, reason, when, recorded = live._correction_args("move", object_id, actor,
                                                                   reason, t)
        records = decide_move(live._state, live._config, obj, center, when, actor, reason,
                              recorded)
        live._commit(records)
        return _event(records[-1])

    @in_turn
    def set_attributes(self, object_id: int, values: dict[str, Any] | None = None, *,
                       remove: Iterable[str] = (), actor: str = "operator",
                       reason: str | None = None, t: float | None = None) -> Event:
        """Set attributes (``{"color": "red", "mobile": True}``) and remove others. Keys are
        short names; values are strings, numbers or booleans."""
        values = check_attributes(values or {})
        if isinstance(remove, str) or not hasattr(remove, "__iter__"):
            raise InvalidInput("remove must be a list of attribute names")
        removed = sorted({check_text(k, "attribute name", max_chars=64) for k in remove})
        if not values and not removed:
            raise InvalidInput("set_attributes() needs values to set or names to remove")
        live = self._live
        obj, actor, reason, when, recorded = live._correction_args("set_attributes", object_id,
                                                                    actor, reason, t)
        records = decide_attributes(live._state, obj, values, removed, when, actor, reason,
                                    recorded)
        live._commit(records)
        return _event(records[-1])

    @in_turn
    def forget(self, object_id: int, *, actor: str = "operator", reason: str | None = None,
               t: float | None = None) -> Event:
        """Remove an object from every read path. A tombstone remembers it, so the same thing
        seen again (same place, and one of its labels or a similar embedding) is suppressed —
        or revived, with ``TrackerConfig.revive_after``. Never silent: a FORGOTTEN event with
        ``actor`` and ``reason`` is recorded and shown by :meth:`audit`."""
        live = self._live
        obj, actor, reason, when, recorded = live._correction_args("forget", object_id, actor,
                                                                   reason, t)
        records = decide_forget(live._state, obj, when, actor, reason, recorded)
        live._commit(records)
        return _event(records[-1])

    @in_turn
    def merge(self, object_id: int, other_id: int, *, actor: str = "operator",
              reason: str | None = None, t: float | None = None) -> Event:
        """Say two identities are one thing: ``other_id`` is MERGED into ``object_id``, which
        keeps its id, both histories (``history()``), the summed label votes and the place of
        the one seen last. Recorded as a correction with ``actor`` and ``reason`` (see
        :meth:`audit`); undo it with :meth:`split`. Returns the MERGED event."""
        live = self._live
        obj, actor, reason, when, recorded = live._correction_args("merge", object_id, actor,
                                                                   reason, t)
        other = live._object(other_id)
        if other.id == obj.id:
            raise InvalidInput(f"cannot merge object {obj.id} with itself")
        records = decide_merge(live._state, obj, other, when, actor, reason, recorded)
        live._commit(records)
        return _event(records[-1])

    @in_turn
    def split(self, object_id: int, center: Sequence[float], *, label: str | None = None,
              size: Sequence[float] | None = None, actor: str = "operator",
              reason: str | None = None, t: float | None = None) -> Event:
        """Say an identity is two things: the other one is a ``label`` (default: the
        object's) at ``center`` (x, y, z; metres, map frame) of ``size`` (default: the
        object's). It becomes a new, published object with the person's label pinned; the
        tracker will not merge the two again. Recorded as a correction (see :meth:`audit`);
        undo it with :meth:`merge`. Returns the SPLIT event (``data["into"]``: the new id)."""
        center = check_coordinate_domain(center, "center")
        live = self._live
        obj, actor, reason, when, recorded = live._correction_args("split", object_id, actor,
                                                                   reason, t)
        label = obj.label if label is None else check_label(label)
        size = obj.size if size is None else check_size_domain(size, "size")
        records = decide_split(live._state, obj, live._state.next_object_id, label, center,
                               size, when, actor, reason, recorded)
        live._commit(records)
        return _event(records[1])


def _event(record: Record) -> Event:
    """The event a correction returns (one of the records it committed)."""
    if type(record) is not Event:
        raise TypeError(f"a correction returns one of its events, not a {type(record).__name__}")
    return record
