"""The prior (long-term) map: load it, review its deltas, consolidate confirmed ones.

The decisions are :mod:`locimem.tracker.prior`'s and :mod:`locimem.tracker.deltas`'.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Any

from locimem.check import (
    check_text,
)
from locimem.errors import InvalidInput
from locimem.memory.base import Service, in_turn
from locimem.model import (
    EventKind,
)
from locimem.tracker.deltas import OPEN as OPEN_DELTA
from locimem.tracker.prior import check_prior_entry, consolidation, prior_events


class PriorMapWrites(Service):
    """The prior-map verbs of :class:`~locimem.memory.facade.ObjectMemory`."""

    @in_turn
    def load_prior(self, entries: Iterable[dict[str, Any]], *, scene: str,
                   actor: str = "operator", reason: str | None = None) -> list[int]:
        """Load a prior (long-term) map — a building scanned once, a simulator's scene — in one
        commit. Each entry is ``{"label", "center", "size"}`` with optional ``"orientation"``
        (w, x, y, z), ``"attributes"``, ``"confidence"`` (default 1) and ``"id"`` (the map's
        own id, kept as ``prior_id``). Every entry becomes a confirmed object whose ``source``
        is ``"prior:<scene>"`` and which is believed until the camera looks and misses it;
        live evidence that disagrees opens deltas (see :meth:`deltas`). Returns the new ids.

        A memory holds one prior map, loaded before anything is observed (rooms may be
        defined first): :meth:`consolidate` updates it from confirmed deltas.
        """
        self._live._writable("load_prior")
        scene = check_text(scene, "scene", max_chars=128)
        actor = check_text(actor, "actor")
        reason = None if reason is None else check_text(reason, "reason", max_chars=1000)
        if self._live._state.prior:
            raise InvalidInput("this memory already has a prior map; consolidate() updates "
                               "it from confirmed deltas (load a new one into a new scope)")
        if self._live._state.objects or self._live._state.tombstones:
            raise InvalidInput(
                f"load_prior() needs a scope that has observed nothing yet; scope "
                f"{self._live._scope!r} already holds objects (load the prior map into a new scope "
                "and run the robot against it there)")
        if isinstance(entries, (str, bytes, dict)) or not hasattr(entries, "__iter__"):
            raise InvalidInput("entries must be a list of dicts with label, center and size")
        checked = [check_prior_entry(i, e, scene) for i, e in enumerate(entries)]
        if not checked:
            raise InvalidInput("the prior map holds no entries")
        ids, items = prior_events(self._live._state, checked)
        self._live._meta_commit("prior", actor, reason, items)
        return ids

    @in_turn
    def confirm_delta(self, delta_id: int, *, actor: str = "operator",
                      reason: str | None = None) -> dict[str, Any]:
        """A person confirms a pending delta (it is then applied by :meth:`consolidate`)."""
        return self._review_delta("confirm_delta", delta_id, "confirmed", ("pending",), actor,
                                  reason)

    @in_turn
    def reject_delta(self, delta_id: int, *, actor: str = "operator",
                     reason: str | None = None) -> dict[str, Any]:
        """A person rejects a pending or confirmed delta. It stays recorded, and the same
        evidence (the same place, the same loss) does not open it again."""
        return self._review_delta("reject_delta", delta_id, "rejected", OPEN_DELTA, actor,
                                  reason)

    def _review_delta(self, what: str, delta_id: int, status: str, allowed: Sequence[str],
                      actor: str, reason: str | None) -> dict[str, Any]:
        self._live._writable(what)
        delta = self._live._delta_of(delta_id)
        actor = check_text(actor, "actor")
        reason = None if reason is None else check_text(reason, "reason", max_chars=1000)
        if delta.status not in allowed:
            raise InvalidInput(f"delta {delta_id} is {delta.status}; only a "
                               f"{' or '.join(allowed)} delta can be {status}")
        new = delta.reviewed(status, float(self._live._state.now or 0.0), actor, reason).to_dict()
        self._live._meta_commit("review", actor, reason,
                          [(EventKind.DELTA, new["object"], new["label"], new)])
        return new

    @in_turn
    def consolidate(self, *, actor: str = "operator", reason: str | None = None
                    ) -> list[dict[str, Any]]:
        """Apply every confirmed delta to the prior map, in one commit: a moved object's
        prior place becomes where it was seen, a removed one leaves the map, an added one
        joins it, a reshaped one takes its new box. Each delta becomes ``applied`` and the
        PRIOR events record what changed. Returns the applied deltas (none: nothing written).
        """
        self._live._writable("consolidate")
        actor = check_text(actor, "actor")
        reason = None if reason is None else check_text(reason, "reason", max_chars=1000)
        applied, items = consolidation(self._live._state, actor, reason)
        if items:
            self._live._meta_commit("consolidate", actor, reason, items)
        return [d.to_dict() for d in applied]

