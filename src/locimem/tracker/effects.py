"""What each kind of event does, one table entry per kind (:data:`EFFECTS`): its meaning for
the state's data (``apply``), the upkeep of the state's indexes that follows it (``index``)
and the materialised rows it changes (``touch``), side by side.
:func:`locimem.tracker.apply.apply` looks the kind up; nothing else in the tracker switches on
an event's kind to change a state. A kind new to :class:`~locimem.model.EventKind` must come
with its entry (a test checks the table is whole).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

from locimem.model import (
    NO_IDS,
    Event,
    EventKind,
    MapEpoch,
    ObjectState,
    TombstoneState,
)
from locimem.model.prior import Delta, PriorEntry
from locimem.model.rows import RowChanges
from locimem.tracker.state import MemoryState, keyframes_of

__all__ = ["EFFECTS", "EPOCH_KINDS", "Effect", "Touched", "apply_epoch", "new_object"]

EPOCH_KINDS = frozenset({EventKind.MAP_EPOCH, EventKind.MAP_ALIGNED})


class Touched:
    """What records changed in a state, collected by :func:`apply` as it applies them; at the
    end of a commit :meth:`rows` turns it into the materialised rows to write."""

    __slots__ = (
        "deltas",
        "keyframes",
        "keys",
        "missed",
        "objects",
        "prior",
        "removed_objects",
        "removed_tombstones",
        "rooms",
        "tombs",
    )

    def __init__(self) -> None:
        self.objects: set[int] = set()  # upserted if still live at the end
        self.missed: set[int] = set()  # missed by a look (a narrow update, unless upserted)
        self.tombs: set[int] = set()
        self.keys: set[str] = set()  # rejection keys
        self.removed_objects: list[int] = []
        self.removed_tombstones: list[int] = []
        self.rooms = False
        self.prior: set[int] = set()
        self.deltas: set[int] = set()
        self.keyframes: set[int] = set()

    def rows(self, state: MemoryState) -> RowChanges:
        live = sorted(i for i in self.objects if i in state.objects)
        missed = sorted(i for i in self.missed if i not in self.objects and i in state.objects)
        tombs = self.tombs
        return RowChanges(
            objects=[state.objects[i] for i in live],
            missed=[state.objects[i] for i in missed],
            removed_objects=self.removed_objects,
            tombstones={i: state.tombstones[i] for i in sorted(tombs) if i in state.tombstones},
            removed_tombstones=self.removed_tombstones,
            rejections={k: state.rejections[k] for k in sorted(self.keys)},
            rooms=state.scene.rooms.to_dict() if self.rooms else None,
            touched=sorted({*live, *self.removed_objects, *tombs}),
            prior={i: None if i not in state.prior else state.prior[i].to_dict()
                   for i in self.prior},
            deltas={i: state.deltas[i].to_dict() for i in self.deltas},
            keyframes={i: [k.to_dict() for k in state.keyframes[i]] for i in self.keyframes},
        )


@dataclass(frozen=True, slots=True)
class Effect:
    """One event kind's effect: ``apply(state, event, lost_after_s)`` changes the state's
    data as the event says; ``index(state, event, lost_after_s)``, called right after, keeps
    the state's indexes (grids, embeddings, labels, loss queue, relations) in step with that
    change; ``touch(touched, event)`` notes the rows that changed."""

    apply: Callable[[MemoryState, Event, float], None]
    index: Callable[[MemoryState, Event, float], None]
    touch: Callable[[Touched, Event], None]


# -- rows -----------------------------------------------------------------------------------------
def _object_row(touched: Touched, ev: Event) -> None:  # the object changed (relations: its room)
    touched.objects.add(ev.object_id)


def _no_row(touched: Touched, ev: Event) -> None:  # no row: the events are the record
    pass


def _rooms_row(touched: Touched, ev: Event) -> None:
    touched.rooms = True


def _identity_ends(touched: Touched, ev: Event) -> None:  # EXPIRED, MERGED
    gone = ev.object_id if ev.kind is EventKind.EXPIRED else ev.data["absorbed"]
    touched.removed_objects.append(gone)
    touched.objects.update((gone, ev.object_id))  # only the live ones are written


def _forgotten_rows(touched: Touched, ev: Event) -> None:
    touched.removed_objects.append(ev.object_id)
    touched.tombs.add(ev.object_id)


def _revived_rows(touched: Touched, ev: Event) -> None:
    touched.removed_tombstones.append(ev.object_id)
    touched.objects.add(ev.object_id)


# -- meanings ---------------------------------------------------------------------------------
def _nothing(state: MemoryState, ev: Event, lost_after_s: float) -> None:
    """Counts come from observations; relations are derived; compaction changes no belief."""


def _prior(state: MemoryState, ev: Event, lost_after_s: float) -> None:
    if ev.data.get("removed"):  # each carries the new value whole
        state.prior.pop(ev.object_id, None)
    else:
        state.prior[ev.object_id] = PriorEntry.from_dict(ev.data["entry"])


def _delta(state: MemoryState, ev: Event, lost_after_s: float) -> None:
    delta = Delta.from_dict(ev.data)
    state.deltas[delta.id] = delta


def _keyframe(state: MemoryState, ev: Event, lost_after_s: float) -> None:
    state.keyframes[ev.object_id] = keyframes_of(ev.data["kept"])


def _room_defined(state: MemoryState, ev: Event, lost_after_s: float) -> None:
    state.scene.rooms.define(ev.data["name"], ev.data["polygon"], ev.data.get("z_range"))


def _rooms_connected(state: MemoryState, ev: Event, lost_after_s: float) -> None:
    state.scene.rooms.connect(ev.data["a"], ev.data["b"])


def _room_removed(state: MemoryState, ev: Event, lost_after_s: float) -> None:
    state.scene.rooms.remove(ev.data["name"])


def _revived(state: MemoryState, ev: Event, lost_after_s: float) -> None:
    obj = state.tombstones.pop(ev.object_id).obj
    obj.lost = False
    obj.lost_at = None
    state.objects[obj.id] = obj


def _appeared(state: MemoryState, ev: Event, lost_after_s: float) -> None:
    obj = new_object(ev)
    state.objects[obj.id] = obj
    state.next_object_id = max(state.next_object_id, obj.id + 1)


def _promoted(state: MemoryState, ev: Event, lost_after_s: float) -> None:
    obj = state.objects[ev.object_id]
    obj.promoted = True
    if "to" in ev.data:  # the settled box, refined from the averaged sightings
        _settle(obj, ev.data, ev.t)


def _label_changed(state: MemoryState, ev: Event, lost_after_s: float) -> None:
    obj = state.objects[ev.object_id]
    obj.label = ev.data["to"]


def _moved(state: MemoryState, ev: Event, lost_after_s: float) -> None:  # MOVED, SETTLED
    obj = state.objects[ev.object_id]
    _settle(obj, ev.data, ev.t)
    if ev.kind is EventKind.MOVED:  # told by its looks alone: remember where from
        obj.moved_from = tuple(ev.data["from"]) if ev.data.get("by_looks") else None


def _lost(state: MemoryState, ev: Event, lost_after_s: float) -> None:
    obj = state.objects[ev.object_id]
    obj.lost = True
    obj.lost_at = ev.t


def _reacquired(state: MemoryState, ev: Event, lost_after_s: float) -> None:
    obj = state.objects[ev.object_id]
    obj.lost = False
    obj.lost_at = None


def _reanchored(state: MemoryState, ev: Event, lost_after_s: float) -> None:
    obj = state.objects[ev.object_id]  # a pose correction: the place it was seen at moved
    obj.center = tuple(ev.data["to"])
    obj.place = tuple(ev.data["place"])
    obj.held = ()  # held sightings were placed with the poses before the correction


def _corrected(state: MemoryState, ev: Event, lost_after_s: float) -> None:
    obj = state.objects[ev.object_id]
    _apply_correction(obj, ev.data, ev.t)


def _expired(state: MemoryState, ev: Event, lost_after_s: float) -> None:
    del state.objects[ev.object_id]


def _merged(state: MemoryState, ev: Event, lost_after_s: float) -> None:
    _apply_merge(state, state.objects[ev.object_id], ev.data, ev.t)


def _split(state: MemoryState, ev: Event, lost_after_s: float) -> None:
    obj = state.objects[ev.object_id]
    obj.held = ()
    obj.together |= {ev.data["into"]}


def _forgotten(state: MemoryState, ev: Event, lost_after_s: float) -> None:
    obj = state.objects.pop(ev.object_id)
    state.tombstones[obj.id] = TombstoneState(obj, ev.t, ev.data["actor"], ev.data["reason"])


def _epoch(state: MemoryState, ev: Event, lost_after_s: float) -> None:
    apply_epoch(state, ev)


# -- index upkeep (right after a meaning) --------------------------------------------------------
def _no_index(state: MemoryState, ev: Event, lost_after_s: float) -> None:
    """Nothing indexed changed (or only rows: the prior map, keyframes, rooms)."""


def _placed(state: MemoryState, ev: Event, lost_after_s: float) -> None:  # APPEARED
    obj = state.objects[ev.object_id]
    state.place_object(obj)
    state.schedule_loss(obj, lost_after_s)


def _revived_index(state: MemoryState, ev: Event, lost_after_s: float) -> None:
    state.unplace_tomb(ev.object_id)
    _placed(state, ev, lost_after_s)


def _absence_and_relations(state: MemoryState, ev: Event, lost_after_s: float) -> None:
    # PROMOTED. The label index files only promoted objects as absent; nothing is absent when
    # it is promoted today (a sighting or a new object comes with it), but that rule should
    # not rest on who emits PROMOTED
    obj = state.objects[ev.object_id]
    state.note_absence(obj)
    _reindex(state, obj)


def _label_and_relations(state: MemoryState, ev: Event, lost_after_s: float) -> None:
    obj = state.objects[ev.object_id]  # LABEL_CHANGED
    state.index_label(obj)
    _reindex(state, obj)


def _relations(state: MemoryState, ev: Event, lost_after_s: float) -> None:
    _reindex(state, state.objects[ev.object_id])  # MOVED, SETTLED


def _lost_index(state: MemoryState, ev: Event, lost_after_s: float) -> None:
    state.note_absence(state.objects[ev.object_id])
    state.scene.remove(ev.object_id)


def _reacquired_index(state: MemoryState, ev: Event, lost_after_s: float) -> None:
    obj = state.objects[ev.object_id]
    state.note_absence(obj)
    state.schedule_loss(obj, lost_after_s)
    _reindex(state, obj)


def _place_and_relations(state: MemoryState, ev: Event, lost_after_s: float) -> None:
    obj = state.objects[ev.object_id]  # REANCHORED
    state.place_object(obj)
    _reindex(state, obj)


def _corrected_index(state: MemoryState, ev: Event, lost_after_s: float) -> None:
    obj = state.objects[ev.object_id]
    if ev.data["field"] == "center":
        state.place_object(obj)
    state.index_label(obj)
    _reindex(state, obj)


def _unindexed(state: MemoryState, oid: int) -> None:
    """An identity left the live state (expired, merged into another, forgotten)."""
    state.unplace_object(oid)
    state.scene.remove(oid)


def _expired_index(state: MemoryState, ev: Event, lost_after_s: float) -> None:
    _unindexed(state, ev.object_id)


def _merged_index(state: MemoryState, ev: Event, lost_after_s: float) -> None:
    _unindexed(state, ev.data["absorbed"])
    obj = state.objects[ev.object_id]
    state.place_object(obj)
    state.schedule_loss(obj, lost_after_s)
    _reindex(state, obj)


def _forgotten_index(state: MemoryState, ev: Event, lost_after_s: float) -> None:
    _unindexed(state, ev.object_id)
    state.place_tomb(state.tombstones[ev.object_id].obj)


def _delta_index(state: MemoryState, ev: Event, lost_after_s: float) -> None:
    state.index_delta(state.deltas[ev.data["id"]])


EFFECTS: dict[EventKind, Effect] = {
    EventKind.APPEARED: Effect(_appeared, _placed, _object_row),
    EventKind.PROMOTED: Effect(_promoted, _absence_and_relations, _object_row),
    EventKind.LABEL_CHANGED: Effect(_label_changed, _label_and_relations, _object_row),
    EventKind.MOVED: Effect(_moved, _relations, _object_row),
    EventKind.LOST: Effect(_lost, _lost_index, _object_row),
    EventKind.REACQUIRED: Effect(_reacquired, _reacquired_index, _object_row),
    EventKind.CORRECTED: Effect(_corrected, _corrected_index, _object_row),
    EventKind.FORGOTTEN: Effect(_forgotten, _forgotten_index, _forgotten_rows),
    EventKind.SUPPRESSED: Effect(_nothing, _no_index, _object_row),
    EventKind.REVIVED: Effect(_revived, _revived_index, _revived_rows),
    EventKind.COMPACTED: Effect(_nothing, _no_index, _no_row),
    EventKind.RELATION: Effect(_nothing, _no_index, _object_row),
    EventKind.ROOM_DEFINED: Effect(_room_defined, _no_index, _rooms_row),
    EventKind.ROOMS_CONNECTED: Effect(_rooms_connected, _no_index, _rooms_row),
    EventKind.ROOM_REMOVED: Effect(_room_removed, _no_index, _rooms_row),
    EventKind.EXPIRED: Effect(_expired, _expired_index, _identity_ends),
    EventKind.MERGED: Effect(_merged, _merged_index, _identity_ends),
    EventKind.SPLIT: Effect(_split, _no_index, _object_row),
    EventKind.PRIOR: Effect(_prior, _no_index,
                            lambda touched, ev: touched.prior.add(ev.object_id)),
    EventKind.DELTA: Effect(_delta, _delta_index,
                            lambda touched, ev: touched.deltas.add(ev.data["id"])),
    EventKind.KEYFRAME: Effect(_keyframe, _no_index,
                               lambda touched, ev: touched.keyframes.add(ev.object_id)),
    EventKind.SETTLED: Effect(_moved, _relations, _object_row),
    EventKind.REANCHORED: Effect(_reanchored, _place_and_relations, _object_row),
    EventKind.MAP_EPOCH: Effect(_epoch, _no_index, _no_row),
    EventKind.MAP_ALIGNED: Effect(_epoch, _no_index, _no_row),
}


# -- the parts several kinds share ------------------------------------------------------------
def apply_epoch(state: MemoryState, ev: Event) -> None:
    """A map epoch began (MAP_EPOCH) or its transform was set (MAP_ALIGNED)."""
    data = ev.data
    name = data["epoch"]
    if ev.kind is EventKind.MAP_EPOCH:
        state.epochs[name] = MapEpoch(name, data["status"], ev.t, scope=data.get("scope"))
        return
    before = state.epochs.get(name)
    pair = data["transform"]
    state.epochs[name] = MapEpoch(
        name, data["status"], ev.t if before is None else before.since,
        (tuple(pair[0]), tuple(pair[1])),
        data.get("yaw_deg"), data.get("residual_m"), len(data.get("inliers", ())),
        None if before is None else before.scope)


def new_object(ev: Event) -> ObjectState:
    """The object an APPEARED event creates (before its first observation)."""
    data = ev.data
    center = tuple(data["center"])
    obj = ObjectState(
        id=ev.object_id,
        label=data["label"],
        center=center,
        size=tuple(data["size"]),
        place=center,
        first_seen=data.get("first_seen", ev.t),
        last_seen=ev.t,
        place_size=tuple(data["size"]),
        place_t=ev.t,
        source=data.get("source", "tracker"),
        attributes=dict(data.get("attributes", {})),
        orientation=None if data.get("orientation") is None else tuple(data["orientation"]),
        # a prior-map entry: believed until the camera looks and misses it, not timed out
        seen_camera=bool(data.get("prior", False)),
        pos_info=float(data.get("info", 0.0)),  # the first sighting's worth, if recorded
    )
    if "split_from" in data:  # born from another identity's held sightings
        obj.label_mass = dict(data["label_mass"])
        obj.n_detections = data["n_detections"]
        obj.together = frozenset((data["split_from"],))
    return obj


def _apply_merge(state: MemoryState, obj: ObjectState, data: dict, ev_t: float) -> None:
    """``obj`` (the older identity) absorbs ``data["absorbed"]``: it takes the state the event
    carries, and keeps the absorbed id so its history reads as one."""
    gone = state.objects[data["absorbed"]]
    obj.center = tuple(data["center"])
    obj.size = tuple(data["size"])
    obj.label_mass = dict(data["label_mass"])
    obj.n_detections = data["n_detections"]
    newer = gone if gone.last_seen >= obj.last_seen else obj  # the one seen last speaks
    obj.track_id = newer.track_id if newer.track_id is not None else obj.track_id
    obj.seen_camera, obj.absence_s, obj.n_missed = (newer.seen_camera, newer.absence_s,
                                                    newer.n_missed)
    obj.pos_info = max(obj.pos_info, gone.pos_info)
    obj.n_looked_seen += gone.n_looked_seen
    obj.n_looked_missed += gone.n_looked_missed
    obj.first_seen = min(obj.first_seen, gone.first_seen)
    obj.last_seen = max(obj.last_seen, gone.last_seen)
    obj.promoted = obj.promoted or gone.promoted
    if obj.feature is None or (gone.feature is not None
                               and gone.feature.shape == obj.feature.shape):
        if obj.feature is None:
            obj.feature, obj.n_features = gone.feature, gone.n_features
        elif gone.feature is not None:
            mean = obj.feature * obj.n_features + gone.feature * gone.n_features
            norm = float(np.linalg.norm(mean))
            if norm > 0:
                obj.feature = mean / norm
            obj.n_features += gone.n_features
    if obj.pinned_label is None and gone.pinned_label is not None:
        obj.pinned_label, obj.label_by = gone.pinned_label, gone.label_by
    obj.held = ()
    obj.together = (obj.together | gone.together) - {obj.id} or NO_IDS
    obj.merged_from = (*obj.merged_from, gone.id, *gone.merged_from)
    obj.lost, obj.lost_at = False, None
    if data.get("label") is not None:
        obj.label = data["label"]
    if "to" in data:  # the survivor settles where the absorbed one was (a consolidated move)
        _settle(obj, data, ev_t)
    del state.objects[gone.id]


def _settle(obj: ObjectState, data: dict, t: float) -> None:
    """The object settled at a new place (a move or a correction)."""
    obj.place = tuple(data["to"])
    obj.place_size = tuple(data.get("size", obj.size))
    obj.place_t = t


def _reindex(state: MemoryState, obj: ObjectState) -> None:
    """Published, present objects take part in relations."""
    if obj.promoted and not obj.lost:
        state.scene.place(obj)


def _apply_correction(obj: ObjectState, data: dict, t: float) -> None:
    field = data["field"]
    if field == "label":
        if data.get("mass"):
            obj.label_mass[data["to"]] = obj.label_mass.get(data["to"], 0.0) + data["mass"]
        if data.get("pin"):
            obj.pinned_label = data["to"]
            obj.label_by = data.get("actor")
        obj.label = data["label_after"]
    elif field == "center":
        obj.center = tuple(data["to"])
        _settle(obj, data, t)
        obj.moved_from = None  # a person said where it is
    elif field == "attributes":
        obj.attributes.update(data.get("set", {}))
        for key in data.get("removed", []):
            obj.attributes.pop(key, None)
    else:  # pragma: no cover - decide only writes the fields above
        raise ValueError(f"unknown corrected field {field!r}")
