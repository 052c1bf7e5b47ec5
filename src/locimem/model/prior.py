"""The prior (long-term) map's entries and the deltas live evidence opens against it.

Plain, immutable data. Each has a JSON form (:meth:`to_dict`, what PRIOR and DELTA events
carry and the store keeps) that :meth:`from_dict` reads back exactly — same keys, same order —
so a state rebuilt from the record writes the same rows as the live one did.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Any

from locimem.model.values import Quat, Vec3

__all__ = ["Box", "Delta", "DeltaEvidence", "PriorEntry", "Review"]


@dataclass(frozen=True, slots=True)
class Box:
    """An axis-aligned box: centre and extents, metres, map frame."""

    center: Vec3
    size: Vec3

    def to_dict(self) -> dict[str, Any]:
        return {"center": list(self.center), "size": list(self.size)}

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> Box:
        return cls(tuple(data["center"]), tuple(data["size"]))


@dataclass(frozen=True, slots=True)
class PriorEntry:
    """One object of the prior map: what the survey says is there.

    ``source`` is ``"prior:<scene>"`` for a loaded map (or the tracker's source for an object
    a consolidation added); ``prior_id`` is the map's own id, if it had one.
    """

    label: str
    center: Vec3
    size: Vec3
    orientation: Quat | None
    attributes: dict[str, Any]
    confidence: float
    source: str
    prior_id: str | int | None

    @property
    def box(self) -> Box:
        return Box(self.center, self.size)

    def to_dict(self) -> dict[str, Any]:
        return {
            "label": self.label, "center": list(self.center), "size": list(self.size),
            "orientation": None if self.orientation is None else list(self.orientation),
            "attributes": dict(self.attributes), "confidence": self.confidence,
            "source": self.source, "prior_id": self.prior_id,
        }

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> PriorEntry:
        orientation = data.get("orientation")
        return cls(
            label=data["label"], center=tuple(data["center"]),
            size=tuple(data["size"]),
            orientation=None if orientation is None else tuple(orientation),
            attributes=dict(data.get("attributes") or {}),
            confidence=data.get("confidence", 1.0), source=data["source"],
            prior_id=data.get("prior_id"),
        )


@dataclass(frozen=True, slots=True)
class Review:
    """One status a delta took: when, which, by whom (``"evidence"`` or a person), why."""

    t: float
    status: str
    by: str
    reason: str | None

    def to_dict(self) -> dict[str, Any]:
        return {"t": self.t, "status": self.status, "by": self.by, "reason": self.reason}

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> Review:
        return cls(data["t"], data["status"], data["by"], data.get("reason"))


@dataclass(frozen=True, slots=True)
class DeltaEvidence:
    """What supports a delta: ``n`` sightings (or misses, for ``removed``) between
    ``first_t`` and ``last_t``, the seqs of the keyframes kept of it, and for a removal the
    time the object was lost (so the same loss never opens a delta twice)."""

    n: int
    first_t: float
    last_t: float
    keyframes: tuple[int, ...]
    lost_at: float | None = None

    def to_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {"n": self.n, "first_t": self.first_t, "last_t": self.last_t,
                               "keyframes": list(self.keyframes)}
        if self.lost_at is not None:
            out["lost_at"] = self.lost_at
        return out

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> DeltaEvidence:
        return cls(data["n"], data["first_t"], data["last_t"], tuple(data["keyframes"]),
                   data.get("lost_at"))


@dataclass(frozen=True, slots=True)
class Delta:
    """A difference between live evidence and the prior map (see
    :mod:`locimem.tracker.deltas`): ``kind`` (moved, removed, added, geometry) about prior
    object ``object``, the ``prior`` and ``observed`` boxes, its ``status`` (pending,
    confirmed, rejected, applied) with the ``history`` of every status it took, and, when a
    move was seen as a new identity, that identity (``live``)."""

    id: int
    kind: str
    object: int
    label: str
    prior: Box | None
    observed: Box | None
    status: str
    opened_at: float
    evidence: DeltaEvidence
    history: tuple[Review, ...]
    live: int | None = None

    @property
    def evidence_id(self) -> int:
        """The identity whose sightings are the evidence: ``live`` if set, else ``object``."""
        return self.live if self.live is not None else self.object

    def reviewed(self, status: str, t: float, by: str, reason: str | None) -> Delta:
        """This delta with a new status, and a history line saying who and why."""
        return replace(self, status=status, history=(*self.history,
                                                     Review(t, status, by, reason)))

    def to_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {
            "id": self.id, "kind": self.kind, "object": self.object, "label": self.label,
            "prior": None if self.prior is None else self.prior.to_dict(),
            "observed": None if self.observed is None else self.observed.to_dict(),
            "status": self.status, "opened_at": self.opened_at,
            "evidence": self.evidence.to_dict(),
            "history": [r.to_dict() for r in self.history],
        }
        if self.live is not None:
            out["live"] = self.live
        return out

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> Delta:
        prior, observed = data.get("prior"), data.get("observed")
        return cls(
            id=data["id"], kind=data["kind"], object=data["object"], label=data["label"],
            prior=None if prior is None else Box.from_dict(prior),
            observed=None if observed is None else Box.from_dict(observed),
            status=data["status"], opened_at=data["opened_at"],
            evidence=DeltaEvidence.from_dict(data["evidence"]),
            history=tuple(Review.from_dict(r) for r in data["history"]),
            live=data.get("live"),
        )
