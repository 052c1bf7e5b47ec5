"""The prior (long-term) map, its deltas, and the keyframes kept as evidence.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import TYPE_CHECKING, Any

from locimem.errors import InvalidInput, NotFound
from locimem.evidence.keyframes import Keyframe
from locimem.model import (
    EventKind,
)
from locimem.model.prior import Delta
from locimem.tracker.deltas import DELTA_KINDS, DELTA_STATUSES

if TYPE_CHECKING:
    pass
from locimem.query.base import (
    ReaderBase,
    check_choice,
)


class PriorQueries(ReaderBase):
    """Questions about the prior map and evidence."""

    def prior_map(self) -> dict[int, dict[str, Any]]:
        """The prior (long-term) map: object id -> entry (``label``, ``center``, ``size``,
        ``orientation``, ``attributes``, ``confidence``, ``source``, ``prior_id``); empty until
        :meth:`ObjectMemory.load_prior`. Copies: changing them changes nothing."""
        hidden = self._hidden()
        return {oid: e.to_dict() for oid, e in sorted(self._state.prior.items())
                if oid not in hidden}

    def deltas(self, status: str | Iterable[str] | None = None, *, kind: str | None = None
               ) -> list[dict[str, Any]]:
        """Differences between live evidence and the prior map, oldest first: each a dict
        with ``id``, ``kind`` (moved, removed, added, geometry), ``status`` (pending,
        confirmed, rejected, applied), ``object`` (the prior object; ``live``: the identity
        the evidence came to, when the tracker gave it a new one), ``label``, ``prior`` and
        ``observed`` boxes, ``evidence`` (``n`` sightings or misses, ``first_t``, ``last_t``,
        ``keyframes``: the seqs of the frames kept for it — see :meth:`keyframes`)
        and ``history`` (each status, by whom, why). Copies."""
        wanted = check_choice(status, DELTA_STATUSES, "status")
        kinds = check_choice(kind, DELTA_KINDS, "kind")
        hidden = self._hidden()
        return [d.to_dict() for _, d in sorted(self._state.deltas.items())
                if (wanted is None or d.status in wanted) and (kinds is None or d.kind in kinds)
                and d.object not in hidden and d.live not in hidden]

    def delta(self, delta_id: int) -> dict[str, Any]:
        """One delta by id (NotFound if there is none)."""
        return self._delta_of(delta_id).to_dict()

    def _delta_of(self, delta_id: int) -> Delta:
        if isinstance(delta_id, bool) or not isinstance(delta_id, int):
            raise InvalidInput(f"delta id must be an integer, got {delta_id!r}")
        delta = self._state.deltas.get(delta_id)
        if delta is None:
            raise NotFound(f"no delta {delta_id} in scope {self._scope!r}")
        return delta

    def keyframes(self, object_id: int) -> list[Keyframe]:
        """The frames kept as evidence that the object was seen (at most
        ``TrackerConfig.keyframes_kept``), in the order they were kept."""
        obj = self._object(object_id)
        return list(self._state.keyframes.get(obj.id, ()))

    def archived_keyframes(self, object_id: int) -> list[Keyframe]:
        """The frames that were kept for the object and later replaced by better ones, oldest
        first (read from the log's KEYFRAME events: nothing is dropped)."""
        obj = self._object(object_id)
        return [Keyframe.from_dict(ev.data["archived"]) for ev in self.store.events(
            self._scope, kind=[EventKind.KEYFRAME.value], object_id=obj.id,
            until_commit=self._until_commit) if ev.data.get("archived") is not None]

