"""Deltas: where live evidence disagrees with the prior (long-term) map.

A prior map is loaded once (:meth:`ObjectMemory.load_prior`): each entry also becomes a live
object with the same id, so the tracker matches live detections to it as to any object. After
each scan, :func:`detect` compares what the scan changed with the prior map and opens or
advances deltas:

- ``moved``: a prior object settled more than ``delta_move_m`` from its prior place — or, when
  the tracker gave the sighting a new identity (the place was too far for association), a new
  object with the label of a prior object that has no live support (never seen live, or
  lost); the new identity is then the delta's ``live`` object.
- ``removed``: a prior object was LOST (the camera looked where it should be and missed it).
- ``added``: an object with no prior entry was promoted, and no unsupported prior object has
  its label.
- ``geometry``: a prior object's box differs from its prior box by more than
  ``delta_size_ratio`` on some axis.

A delta is ``pending`` until ``delta_confirm_after`` supporting sightings (for ``removed``: the
misses that lost it) make it ``confirmed``; contrary evidence (the object seen back at its
prior place, or seen again after it was lost; for ``added``, its identity merged into
another) or a person makes it ``rejected``; and
:meth:`ObjectMemory.consolidate` turns confirmed deltas into ``applied`` by updating the prior
map. Every change is a DELTA event carrying the delta whole, so replay restores it exactly. A
rejected delta stays recorded, and the same evidence (the same place, the same loss) does not
open it again.

Everything here is pure: the same state and records give the same deltas.
"""

from __future__ import annotations

import math
from collections import defaultdict
from collections.abc import Sequence
from dataclasses import replace
from typing import Any

from locimem.config import TrackerConfig
from locimem.model import Commit, Event, EventKind, ObjectState, Observation
from locimem.model.prior import Box, Delta, DeltaEvidence, Review
from locimem.tracker.indexes import delta_keys
from locimem.tracker.state import MemoryState

__all__ = ["DELTA_KINDS", "DELTA_STATUSES", "OPEN", "detect"]

DELTA_KINDS = ("moved", "removed", "added", "geometry")
DELTA_STATUSES = ("pending", "confirmed", "rejected", "applied")
OPEN = ("pending", "confirmed")


def detect(state: MemoryState, records: Sequence[Any], config: TrackerConfig) -> list[Delta]:
    """The deltas one applied commit opens or changes (each a whole new value)."""
    if not state.prior or not records or not isinstance(records[0], Commit):
        return []
    t = records[0].t
    seen: dict[int, int] = defaultdict(int)  # sightings that moved the object, per object
    kinds: dict[int, set[EventKind]] = defaultdict(set)
    absorbed: dict[int, int] = {}  # identity merged away -> the one it was merged into
    for r in records:
        if isinstance(r, Observation) and r.object_id is not None and r.weight > 0.0:
            seen[r.object_id] += 1
        elif isinstance(r, Event):
            kinds[r.object_id].add(r.kind)
            if r.kind is EventKind.MERGED:
                absorbed[int(r.data["absorbed"])] = r.object_id
    run = _Detector(state, config, t)
    for oid in sorted(set(seen) | set(kinds)):
        run.object(oid, seen.get(oid, 0), kinds.get(oid, set()))
    for gone, into in sorted(absorbed.items()):
        run.merged(gone, into)
    return run.out


def _box(obj: ObjectState) -> Box:
    return Box(obj.place, obj.size)


class _Detector:
    """One commit's delta decisions. Deltas are found through ``state.indexes.delta_index`` (by
    evidence identity and kind, and by prior object), never by scanning them all."""

    def __init__(self, state: MemoryState, config: TrackerConfig, t: float) -> None:
        self.state, self.config, self.t = state, config, t
        self.changed: dict[int, Delta] = {}  # delta id -> its new value, in order of change
        self.added: dict[tuple, list[int]] = defaultdict(list)  # index entries of new deltas
        self.next_id = next(reversed(state.deltas), 0) + 1  # ids ascend with insertion

    @property
    def out(self) -> list[Delta]:
        return list(self.changed.values())

    # -- finding ------------------------------------------------------------------------------
    def _deltas(self, key: tuple) -> list[Delta]:
        ids = [*self.state.indexes.delta_index.get(key, ()), *self.added.get(key, ())]
        return [self.changed.get(did) or self.state.deltas[did] for did in ids]

    def _open(self, evidence: int, kind: str) -> Delta | None:
        return next((d for d in reversed(self._deltas((kind, evidence)))
                     if d.status in OPEN), None)

    def _rejected(self, evidence: int, kind: str) -> list[Delta]:
        return [d for d in self._deltas((kind, evidence)) if d.status == "rejected"]

    def _open_moves_of(self, prior_id: int) -> list[Delta]:
        """Open ``moved`` deltas about a prior object (under its own id or a new one)."""
        return [d for d in self._deltas(("object", prior_id))
                if d.kind == "moved" and d.status in OPEN]

    # -- writing ------------------------------------------------------------------------------
    def _frames(self, oid: int) -> tuple[int, ...]:
        """The evidence's keyframes: the seqs of the frames kept for ``oid`` by now."""
        return tuple(k.seq for k in self.state.keyframes.get(oid, ()))

    def _new(self, kind: str, oid: int, label: str, prior: Box | None, observed: Box | None,
             n: int, why: str, live: int | None = None, lost_at: float | None = None) -> Delta:
        status = "confirmed" if n >= self.config.delta_confirm_after else "pending"
        evidence = live if live is not None else oid
        delta = Delta(
            id=self.next_id, kind=kind, object=oid, label=label, prior=prior,
            observed=observed, status=status, opened_at=self.t,
            evidence=DeltaEvidence(n, self.t, self.t, self._frames(evidence), lost_at),
            history=(Review(self.t, status, "evidence", why),),
            live=None if evidence == oid else evidence,
        )
        self.next_id += 1
        self.changed[delta.id] = delta
        for key in delta_keys(delta):
            self.added[key].append(delta.id)
        return delta

    def _support(self, d: Delta, n: int, observed: Box | None = None) -> None:
        ev = replace(d.evidence, n=d.evidence.n + n, last_t=self.t,
                     keyframes=self._frames(d.evidence_id))
        new = replace(d, evidence=ev, observed=observed if observed is not None else d.observed)
        if d.status == "pending" and ev.n >= self.config.delta_confirm_after:
            new = new.reviewed("confirmed", self.t, "evidence", f"{ev.n} supporting sightings")
        self.changed[new.id] = new

    def _reject(self, d: Delta, why: str) -> None:
        self.changed[d.id] = d.reviewed("rejected", self.t, "evidence", why)

    # -- rules --------------------------------------------------------------------------------
    def object(self, oid: int, n_seen: int, kinds: set[EventKind]) -> None:
        state, config = self.state, self.config
        obj = state.objects.get(oid)
        entry = state.prior.get(oid)
        if entry is None:
            if obj is not None:
                self._unmapped(obj, n_seen, kinds)
            return
        prior_box = entry.box
        removed = self._open(oid, "removed")
        if EventKind.LOST in kinds and obj is not None and removed is None:
            if not any(d.evidence.lost_at == obj.lost_at
                       for d in self._rejected(oid, "removed")):
                self._new("removed", oid, obj.label, prior_box, None, max(1, obj.n_missed),
                          "the camera looked and it was not there", lost_at=obj.lost_at)
        elif removed is not None and (n_seen or EventKind.REACQUIRED in kinds):
            self._reject(removed, "seen again")
        if obj is None or obj.lost or not n_seen:
            return
        # seen at its own identity: is it still where the prior map has it?
        far = math.dist(obj.place, entry.center) > config.delta_move_m
        moved = self._open(oid, "moved")
        if far:
            if moved is None:
                if not self._same_as_rejected(oid, "moved", obj.place):
                    self._new("moved", oid, obj.label, prior_box, _box(obj), n_seen,
                              "settled away from its prior place")
            elif moved.observed is not None and \
                    math.dist(obj.place, moved.observed.center) <= config.delta_move_m:
                self._support(moved, n_seen)
            else:  # moved again: the evidence starts over at the new place
                restart = replace(moved, observed=_box(obj), evidence=DeltaEvidence(
                    n_seen, self.t, self.t, self._frames(oid)))
                self.changed[moved.id] = restart.reviewed("pending", self.t, "evidence",
                                                          "settled at another place")
        else:
            # seen where the map has it: contradicts any claim that it moved (under its own
            # identity, or seen as a new one elsewhere)
            for d in self._open_moves_of(oid):
                self._reject(d, "seen at its prior place" if d.live is None
                             else "the prior object was seen at its prior place")
        ratio = max((max(a / b, b / a) for a, b in zip(obj.size, entry.size, strict=True)
                     if a > 0 and b > 0), default=1.0)  # a flat (zero) extent has no ratio
        reshaped = self._open(oid, "geometry")
        if ratio > config.delta_size_ratio:
            if reshaped is None:
                if not self._same_as_rejected(oid, "geometry", obj.place):
                    self._new("geometry", oid, obj.label, prior_box, _box(obj), n_seen,
                              f"its box differs from the prior box by {ratio:.2f}x")
            else:
                self._support(reshaped, n_seen, _box(obj))
        elif reshaped is not None:
            self._reject(reshaped, "its box matches the prior box again")

    def merged(self, gone: int, into: int) -> None:
        """Identity ``gone`` was merged into ``into`` in this commit: no open delta whose
        evidence is ``gone``'s stands any more — an addition, a move, a reshape or a removal
        (what it saw is now ``into``'s evidence, judged as such from the next scan on) — and
        none *about* ``gone`` as a prior object either (a move seen as another identity: the
        prior object it is about no longer exists, so later sightings cannot support it).
        They are settled here, so no delta waits on, or names, an identity that is gone."""
        why = f"merged into #{into}"
        for kind in DELTA_KINDS:
            d = self._open(gone, kind)
            if d is not None:
                self._reject(d, why)
        for d in self._deltas(("object", gone)):
            if d.status in OPEN:
                self._reject(d, why)

    def _unmapped(self, obj: ObjectState, n_seen: int, kinds: set[EventKind]) -> None:
        """An object the prior map does not have: an addition, or a prior object that moved
        too far for the tracker to keep its identity."""
        for kind in ("moved", "added"):
            d = self._open(obj.id, kind)
            if d is not None:
                if n_seen and not obj.lost:
                    self._support(d, n_seen, _box(obj))
                return
        if EventKind.PROMOTED not in kinds or obj.lost:
            return
        twin = self._unsupported_twin(obj)
        if twin is not None:
            if not self._same_as_rejected(obj.id, "moved", obj.place):
                self._new("moved", twin, obj.label, self.state.prior[twin].box, _box(obj),
                          n_seen, f"a new sighting of its label, #{obj.id}, "
                          "while it has not been seen at its prior place", live=obj.id)
        elif not self._rejected(obj.id, "added"):
            self._new("added", obj.id, obj.label, None, _box(obj), n_seen,
                      "not in the prior map")

    def _unsupported_twin(self, obj: ObjectState) -> int | None:
        """The nearest prior object with this label that live evidence does not support
        (never seen live, or lost), and that no open delta already explains. (A scan over the
        prior map, paid once per newly promoted object.)"""
        best: tuple[float, int] | None = None
        for pid, entry in self.state.prior.items():
            if entry.label != obj.label or pid == obj.id:
                continue
            live = self.state.objects.get(pid)
            if live is None:  # merged into another identity (or forgotten): no longer a thing
                continue
            if live.n_detections > 0 and not live.lost:
                continue
            d = math.dist(entry.center, obj.place)
            if (best is None or (d, pid) < best) and not self._open_moves_of(pid):
                best = (d, pid)
        return None if best is None else best[1]

    def _same_as_rejected(self, live: int, kind: str, place: Sequence[float]) -> bool:
        """A person (or evidence) rejected this kind of delta for this object at this place."""
        return any(d.observed is not None and math.dist(d.observed.center, place)
                   <= self.config.delta_move_m for d in self._rejected(live, kind))
