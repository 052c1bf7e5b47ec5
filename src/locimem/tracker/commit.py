"""The commit step: one decided commit in, the whole commit and the rows it changed out.

Every change to a memory — a scan, a correction, a room, a prior map, a review — is decided
as records (a :class:`~locimem.model.Commit` followed by observations and events). This step
applies them to the live state and adds, to the same commit, what they imply:

1. **relation changes** the scene index reports after the records moved boxes (RELATION
   events; relations are an index derived from the boxes, like the spatial grid, so applying
   them changes nothing more);
2. **keyframes**: frames kept as evidence of an object — an absorbed identity's frames
   offered to the one that absorbed it, then, for a scan with a camera, this scan's view of
   each object it saw (KEYFRAME events);
3. **prior-map deltas**: differences between live evidence and the prior map (DELTA events;
   they cite the keyframes kept by then, so they come last).

Each derived event is applied like any other. ``apply`` reports what each record touched, so
the rows to write (:class:`~locimem.store.base.RowChanges`) come out of the same pass: the
caller only appends them — nothing here reads a clock or a store.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from locimem.config import TrackerConfig
from locimem.evidence.keyframes import could_join, offer, sighted_candidate, visibilities
from locimem.model import Camera, Event, EventKind, Observation, Record, commit_of
from locimem.model.rows import RowChanges
from locimem.scene.relations import RelationChange
from locimem.tracker.apply import Touched, apply
from locimem.tracker.deltas import detect as detect_deltas
from locimem.tracker.state import MemoryState

__all__ = ["Committed", "Derived", "commit_records"]

Derived = tuple[EventKind, int, str, dict[str, Any]]  # kind, object id, label, data
_SMALL_EMBEDDING = 128  # keyframes keep a sighting's embedding up to this width


@dataclass(frozen=True, slots=True)
class Committed:
    """A commit ready to append: its records (decided and derived, numbered in order) and
    the materialised rows they changed."""

    records: Sequence[Record]
    changes: RowChanges


def commit_records(state: MemoryState, config: TrackerConfig, records: Sequence[Record],
                   camera: Camera | None = None) -> Committed:
    """Apply a decided commit's ``records`` to ``state`` and complete the commit with the
    events they imply (see the module docstring). ``state`` is changed in place; on an
    exception it is half-changed, and the caller must reload it (the memory reloads it from
    the store)."""
    touched = Touched()
    lost_after = config.lost_after_s
    for record in records:
        apply(state, record, lost_after, touched)
    step = _Step(state, lost_after, touched, list(records))
    changes = state.scene.drain()
    if changes:
        step.add(_relation_events(state, step.records, changes))
    n_kept = config.keyframes_kept
    step.add(_merged_keyframe_events(state, step.records, n_kept))
    if camera is not None:
        step.add(_keyframe_events(state, step.records, camera, n_kept))
    step.add([(EventKind.DELTA, d.object, d.label, d.to_dict())
              for d in detect_deltas(state, step.records, config)])
    return Committed(step.records, touched.rows(state))


class _Step:
    """A commit's records as derived events are appended (numbered after its last record)
    and applied."""

    def __init__(self, state: MemoryState, lost_after: float, touched: Touched,
                 records: list[Record]) -> None:
        self.state, self.lost_after, self.touched, self.records = (state, lost_after, touched,
                                                                   records)

    def add(self, items: Sequence[Derived]) -> None:
        if not items:
            return
        state, commit = self.state, commit_of(self.records)
        seq = max(r.seq for r in self.records[1:] if isinstance(r, (Observation, Event))) + 1 \
            if len(self.records) > 1 else state.next_seq
        for kind, oid, label, data in items:
            event = Event(seq, commit.id, commit.t, kind, oid, label, data)
            self.records.append(event)
            apply(state, event, self.lost_after, self.touched)
            seq += 1
        state.next_seq = max(state.next_seq, seq)


def _relation_events(state: MemoryState, records: Sequence[Record],
                     changes: Sequence[RelationChange]) -> list[Derived]:
    """RELATION events for the changes the scene index reported. An object this commit ended
    (forgotten, expired, merged away) is named by the label its event gave."""
    ended: dict[int, str] = {}
    for r in records:
        if isinstance(r, Event) and r.kind in (EventKind.FORGOTTEN, EventKind.EXPIRED):
            ended[r.object_id] = r.label
        elif isinstance(r, Event) and r.kind is EventKind.MERGED:
            ended[r.data["absorbed"]] = r.label

    def label(oid: int) -> str:
        obj = state.objects.get(oid)
        return obj.label if obj is not None else ended.get(oid, "")

    return [(EventKind.RELATION, c.subject, label(c.subject), {
        "relation": c.relation, "object": c.object, "object_label": label(c.object),
        "added": c.kind == "added", "confidence": c.confidence}) for c in changes]


def _merged_keyframe_events(state: MemoryState, records: Sequence[Record],
                            n_kept: int) -> list[Derived]:
    """When an identity is MERGED into another, its kept frames are offered to the survivor,
    oldest first; each one kept is a KEYFRAME event (with the frame it replaced, if any)."""
    out: list[Derived] = []
    for r in records:
        if not isinstance(r, Event) or r.kind is not EventKind.MERGED:
            continue
        frames = state.keyframes.get(r.data["absorbed"])
        survivor = state.objects.get(r.object_id)
        if not frames or survivor is None:
            continue
        kept = state.keyframes.get(survivor.id, ())
        for frame in sorted(frames, key=lambda k: (k.t, k.seq)):
            if any(k.seq == frame.seq for k in kept):
                continue
            kept, archived, was_kept = offer(kept, frame, n_kept)
            if was_kept:
                out.append((EventKind.KEYFRAME, survivor.id, survivor.label, {
                    "kept": [k.to_dict() for k in kept],
                    "archived": None if archived is None else archived.to_dict(),
                    "merged_from": r.data["absorbed"]}))
    return out


def _keyframe_events(state: MemoryState, records: Sequence[Record], camera: Camera,
                     n_kept: int) -> list[Derived]:
    """Offer each object's first sighting in this scan as a keyframe (see
    :mod:`locimem.evidence.keyframes`); a KEYFRAME event records each frame kept, with the
    frame it replaced (archived in the log, never dropped)."""
    commit = commit_of(records)
    out: list[Derived] = []
    offered: set[int] = set()
    joining = []
    for r in records:
        if not isinstance(r, Observation) or r.object_id is None or r.weight == 0.0:
            continue
        obj = state.objects.get(r.object_id)
        if obj is None or obj.id in offered:
            continue
        offered.add(obj.id)
        kept = state.keyframes.get(obj.id, ())
        if not could_join(camera, obj.center, kept, n_kept):
            continue  # not even a perfect view from here would be kept: skip the image work
        joining.append((r, obj, kept))
    if not joining:
        return out
    # every joining object's view at once (one projection, the depth windows end to end)
    seen = visibilities(camera, [obj.center for _, obj, _ in joining],
                        [obj.size for _, obj, _ in joining])
    for (r, obj, kept), view in zip(joining, seen, strict=True):
        feature = r.feature
        small = feature is not None and feature.shape[0] <= _SMALL_EMBEDDING
        candidate = sighted_candidate(
            camera, obj.center, kept, view, t=commit.t, commit=commit.id, seq=r.seq,
            embedding=tuple(float(x) for x in feature) if small else None)  # type: ignore[union-attr]
        if candidate.coverage == 0.0:  # the frame does not cover the object: no view of it
            continue
        new_kept, archived, was_kept = offer(kept, candidate, n_kept)
        if was_kept:
            out.append((EventKind.KEYFRAME, obj.id, obj.label, {
                "kept": [k.to_dict() for k in new_kept],
                "archived": None if archived is None else archived.to_dict()}))
    return out
