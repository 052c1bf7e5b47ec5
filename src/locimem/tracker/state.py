"""The live state of a memory: plain data, changed only by :func:`locimem.tracker.apply.apply`.

``MemoryState`` holds the objects, the store-wide counters and the scope's other data (what
a snapshot holds). What it derives from them to answer fast — grids, embeddings, the label
index, the loss queue — is its :class:`~locimem.tracker.indexes.StateIndexes`: rebuilt on
open (when first needed), kept in step by its upkeep methods, never written to disk.
"""

from __future__ import annotations

from typing import Any

from locimem.evidence.keyframes import Keyframe
from locimem.gcpause import gc_paused
from locimem.model import MapEpoch, ObjectState, RejectionState, TombstoneState
from locimem.model.prior import Delta, PriorEntry
from locimem.scene.relations import RelationConfig
from locimem.scene.rooms import RoomMap
from locimem.scene.state import SceneState
from locimem.tracker.indexes import StateIndexes


class MemoryState:
    """All objects of one scope, the time of the latest scan, store-wide counters and the rest
    of the scope's data; and its :class:`~locimem.tracker.indexes.StateIndexes`
    (:attr:`indexes`), kept in step by the upkeep methods below."""

    def __init__(self, grid_cell_m: float = 1.0, relations: RelationConfig | None = None,
                 approximate_above: int | None = None) -> None:
        # -- the data (what a snapshot holds) ------------------------------------------------
        self.objects: dict[int, ObjectState] = {}
        self.now: float | None = None  # t of the latest commit; None before the first
        self.next_object_id = 1
        self.next_seq = 1
        self.next_commit = 1
        self.feature_dim: int | None = None
        self.tombstones: dict[int, TombstoneState] = {}
        self.rejections: dict[str, RejectionState] = {}
        self.scene = SceneState(relations)  # the rooms (data) and the relations (an index)
        # the long-term (prior) map: object id -> entry; its deltas: delta id -> delta; and
        # keyframe evidence: object id -> kept frames. Plain JSON data, set by PRIOR, DELTA
        # and KEYFRAME events (each event carries the new value whole).
        self.prior: dict[int, PriorEntry] = {}
        self.deltas: dict[int, Delta] = {}
        self.keyframes: dict[int, tuple[Keyframe, ...]] = {}
        self.epochs: dict[str, MapEpoch] = {}  # the map epochs (MAP_EPOCH, MAP_ALIGNED)
        # whether the commit being applied came with a camera (set by apply at each commit)
        self.camera_commit = False
        # -- the indexes ---------------------------------------------------------------------
        self.grid_cell_m = grid_cell_m
        self._approximate_above = approximate_above
        self._indexes: StateIndexes | None = StateIndexes(grid_cell_m, approximate_above)
        # the lost_after_s of indexes rebuild_indexes left to build on first need, or None;
        # and whether there are such (a plain flag: apply reads it every record)
        self._index_pending: float | None = None
        self.indexes_pending = False
        # a replay defers the indexes: built once at the end (rebuild_indexes), not per record
        # (read, never set, outside this class: defer_indexes and rebuild_indexes set it)
        self.indexes_deferred = False

    # -- indexes -----------------------------------------------------------------------------
    @property
    def indexes(self) -> StateIndexes:
        """The indexes (built now if :meth:`rebuild_indexes` left them to build)."""
        indexes = self._indexes
        if indexes is None:
            self.ensure_indexes()
            indexes = self._indexes
            assert indexes is not None  # (ensure_indexes built them)
        return indexes

    def defer_indexes(self) -> None:
        """Stop maintaining the indexes (the grids but the tombstones', embeddings, labels,
        loss queue, relations) until :meth:`rebuild_indexes` builds them from the objects: a
        replay applies every record, then indexes once. ``apply`` only ever writes them, so
        the objects come out the same."""
        self.indexes_deferred = True
        self.scene.deferred = True

    def schedule_loss(self, obj: ObjectState, lost_after_s: float) -> None:
        if not self.indexes_deferred:
            self.indexes.schedule_loss(obj, lost_after_s)

    def place_object(self, obj: ObjectState) -> None:
        """Index an object's position (and embedding, and label) after it changed."""
        if not self.indexes_deferred:
            self.indexes.place(obj)

    def unplace_object(self, object_id: int) -> None:
        if not self.indexes_deferred:
            self.indexes.unplace(object_id)

    def index_label(self, obj: ObjectState) -> None:
        """File the object under its voted label (after it appeared, was sighted, or its label
        or absence changed)."""
        if not self.indexes_deferred:
            self.indexes.index_label(obj)

    def note_absence(self, obj: ObjectState) -> None:
        """Keep the object among its label's absent ones while it is promoted and missed or
        lost (see :meth:`StateIndexes.absent_with_label`)."""
        if not self.indexes_deferred:
            self.indexes.note_absence(obj)

    def place_tomb(self, obj: ObjectState) -> None:
        """Index a forgotten object's place (its tombstone's)."""
        if not self.indexes_deferred:
            self.indexes.tomb_grid.set(obj.id, obj.center)

    def unplace_tomb(self, object_id: int) -> None:
        if not self.indexes_deferred:
            self.indexes.tomb_grid.remove(object_id)

    def index_delta(self, delta: Delta) -> None:
        """File a delta in the delta index (once; its keys never change)."""
        if not self.indexes_deferred:
            self.indexes.index_delta(delta)

    def rebuild_indexes(self, lost_after_s: float) -> None:
        """Index the data afresh (on open, and at the end of a replay) — on first need:
        the grids, embedding matrix, label index, delta index and loss queue when
        :attr:`indexes` is first read, or before ``apply`` applies the next record
        (:meth:`ensure_indexes`), so they are built from the objects as they are now, exactly
        as building them now would; the relations when first needed (see
        :meth:`SceneState.rebuild_lazily`). An open that asks nothing of them never builds
        them."""
        self.indexes_deferred = False
        self._indexes = None
        self._index_pending = lost_after_s
        self.indexes_pending = True
        self.scene.rebuild_lazily(self.objects.values())

    def ensure_indexes(self) -> None:
        """Build the indexes :meth:`rebuild_indexes` left to build, if it did (``apply``
        calls it before changing anything)."""
        lost_after_s = self._index_pending
        if lost_after_s is None:
            return
        with gc_paused():  # it makes objects by the thousand and frees none
            self._indexes = StateIndexes.built(self.objects, self.tombstones, self.deltas,
                                               lost_after_s, self.grid_cell_m,
                                               self._approximate_above)
        self._index_pending = None
        self.indexes_pending = False

    def snapshot(self) -> dict[str, Any]:
        """A plain, comparable picture of the whole state (indexes excluded)."""
        return {
            "now": self.now,
            "feature_dim": self.feature_dim,
            "objects": {oid: o.to_dict() for oid, o in sorted(self.objects.items())},
            "tombstones": {oid: t.to_dict() for oid, t in sorted(self.tombstones.items())},
            "rejections": {k: r.to_dict() for k, r in sorted(self.rejections.items())},
            "rooms": self.scene.rooms.to_dict(),
            "prior": {oid: e.to_dict() for oid, e in sorted(self.prior.items())},
            "deltas": {did: d.to_dict() for did, d in sorted(self.deltas.items())},
            "keyframes": {oid: [k.to_dict() for k in kept]
                          for oid, kept in sorted(self.keyframes.items())},
            # (only a scope that has map epochs has the key: older checkpoints read alike)
            **({"epochs": {n: e.to_dict() for n, e in sorted(self.epochs.items())}}
               if self.epochs else {}),
        }

    def relations_snapshot(self) -> dict[str, float]:
        """Every relation ("subject relation object" -> confidence), for comparisons."""
        return {f"{s} {r} {o}": c for (s, r, o), c in sorted(self.scene.relations.all().items())}

    @classmethod
    def from_snapshot(cls, data: dict[str, Any], grid_cell_m: float,
                      relations: RelationConfig | None = None,
                      approximate_above: int | None = None) -> MemoryState:
        """Inverse of :meth:`snapshot` (keys may have become strings in JSON)."""
        state = cls(grid_cell_m, relations, approximate_above)
        state.now = data["now"]
        state.feature_dim = data["feature_dim"]
        state.objects = {int(k): ObjectState.from_dict(v) for k, v in data["objects"].items()}
        state.tombstones = {int(k): TombstoneState.from_dict(v)
                            for k, v in data["tombstones"].items()}
        state.rejections = {k: RejectionState(**v) for k, v in data["rejections"].items()}
        state.scene.rooms = RoomMap.from_dict(data["rooms"])
        # absent from version-1 checkpoints
        state.prior = {int(k): PriorEntry.from_dict(v) for k, v in data.get("prior", {}).items()}
        state.deltas = {int(k): Delta.from_dict(v) for k, v in data.get("deltas", {}).items()}
        state.keyframes = {int(k): keyframes_of(v) for k, v in data.get("keyframes", {}).items()}
        state.epochs = {n: MapEpoch.from_dict(e) for n, e in data.get("epochs", {}).items()}
        return state


def keyframes_of(kept: list[dict[str, Any]]) -> tuple[Keyframe, ...]:
    """The frames a KEYFRAME event (or a stored row) keeps, from their JSON form. They were
    checked when they were made, so they are read without checking again (replay is hot)."""
    return tuple(Keyframe.trusted(k) for k in kept)
