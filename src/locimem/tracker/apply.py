"""The one function that changes a memory: ``apply(state, record)``.

Live ingest applies the records the tracker just decided; opening a store replays the same
records from disk. Both go through here, so they cannot diverge. ``apply`` reads no config and
no clock: every number it needs is in the record.
"""

from __future__ import annotations

import math
from collections.abc import Iterable

import numpy as np

from locimem.model import (
    HELD_MAX,
    NO_IDS,
    Commit,
    Event,
    EventKind,
    MapEpoch,
    ObjectState,
    Observation,
    Record,
    RejectionState,
    TombstoneState,
)
from locimem.model.prior import Delta, PriorEntry
from locimem.model.rows import RowChanges
from locimem.tracker.state import MemoryState, keyframes_of

TOMB_KEY = "tomb:"  # rejection key prefix of a sighting suppressed by a tombstone
# events that change no state: counts come from observations, relations are derived
_NO_OP = frozenset({EventKind.COMPACTED, EventKind.SUPPRESSED, EventKind.RELATION})
_ROOM_KINDS = frozenset({EventKind.ROOM_DEFINED, EventKind.ROOMS_CONNECTED,
                        EventKind.ROOM_REMOVED})
EPOCH_KINDS = frozenset({EventKind.MAP_EPOCH, EventKind.MAP_ALIGNED})


def update_object(obj: ObjectState, obs: Observation, camera: bool = False) -> None:
    """Fold one accepted observation into an object (no indexes touched). ``camera``: the
    scan it came in had a camera (the object's belief is then visibility-aware).

    A sighting with weight 0 was *held*: it refreshes the object's last sighting (it was seen)
    but changes nothing else — no position, size, label mass, count, track id or embedding,
    and not the evidence that its place was seen empty (it was not seen *there*) — and is
    kept in ``held`` so that repeated consistent held sightings can confirm a move or a
    split."""
    if _update_fields(obj, obs, camera) and obs.feature is not None:
        _update_embedding(obj, obs.feature)


def _update_fields(obj: ObjectState, obs: Observation, camera: bool) -> bool:
    """All of :func:`update_object` but the embedding; False if the sighting was held."""
    t, w = obs.t, obs.weight
    if t > obj.last_seen:
        obj.last_seen = t
    if w == 0.0:  # held: seen, but not where it is believed to be
        c, e = obs.center, obs.size
        held = (*obj.held, (t, c[0], c[1], c[2], e[0], e[1], e[2], obs.label,
                            obs.confidence, obj.n_detections))
        obj.held = held[1:] if len(held) > HELD_MAX else held
        return False
    # the looks that missed it since its last sighting were misses after all (it is here)
    if obj.n_missed:
        obj.n_looked_missed += obj.n_missed
        obj.n_missed = 0
    obj.absence_s = 0.0
    if camera:
        obj.n_looked_seen += 1
        # once seen by a camera, belief stays visibility-aware: a scan without one (a
        # dropped transform) is no evidence either way, not a switch to the time-only model
        obj.seen_camera = True
    mass = obj.label_mass
    label = obs.label
    mass[label] = mass.get(label, 0.0) + obs.confidence
    # the estimate's information, in sightings at the reference noise: a jump starts afresh;
    # a step of gain w took information i to i / (1 - w) (a Kalman update, recorded as w)
    info, n = obj.pos_info, obj.n_detections
    if w < 1.0:
        obj.pos_info = (info if info > 0.0 else float(max(n, 1))) / (1.0 - w)
    elif n > 0 or info <= 0.0:  # a first sighting keeps what it was worth
        obj.pos_info = 1.0
    (cx, cy, cz), (dx, dy, dz) = obj.center, obs.center
    obj.center = (cx + w * (dx - cx), cy + w * (dy - cy), cz + w * (dz - cz))
    (sx, sy, sz), (ex, ey, ez) = obj.size, obs.size
    obj.size = (sx + w * (ex - sx), sy + w * (ey - sy), sz + w * (ez - sz))
    obj.n_detections = n + 1
    if w == 1.0 and obj.held:  # a jump: what was held back refers to the old place
        obj.held = ()
    if obs.track_id is not None:
        obj.track_id = obs.track_id
    if obs.orientation is not None:
        obj.orientation = obs.orientation
    return True


def _update_embedding(obj: ObjectState, feature: np.ndarray) -> None:
    """Fold one sighting's embedding into the object's running mean (unit vectors)."""
    x = feature.astype(np.float64)
    x /= math.sqrt(x.dot(x))  # np.linalg.norm's own sum, without its checks: same bits
    if obj.feature is None:
        mean = x
    else:  # (feature * n + x) / (n + 1), in place in one new array: the same operations
        n = obj.n_features
        mean = obj.feature * n
        mean += x
        mean /= n + 1
    norm = math.sqrt(mean.dot(mean))
    if norm > 0:
        mean /= norm  # mean is a new array (or x, made above): nobody else holds it
        obj.feature = mean
    else:
        obj.feature = x
    obj.n_features += 1


def replay(state: MemoryState, records: Iterable[Record], lost_after_s: float) -> None:
    """:func:`apply` of each of ``records`` in order, into a state whose indexes are deferred
    (:meth:`MemoryState.defer_indexes`: a replay), with the embeddings' running means kept in
    one matrix while the sightings come (:class:`_RunningMeans`: the same operations on the
    same values, in arrays) rather than one object at a time — the same state to the bit.

    A sighting's other fields never depend on its embedding, and only events read or change
    an object's embedding — a merge averages two, a forget keeps it, each naming the objects
    it reads — so the sightings between two events are folded in together (a batch ends
    early at an object's second sighting: its running mean needs the first), and an object's
    mean is written back to it only before an event names it, and at the end."""
    if not state.indexes_deferred:  # a live state: its indexes follow every record
        for record in records:
            apply(state, record, lost_after_s)
        return
    objects = state.objects
    means = _RunningMeans()
    batch: list[ObjectState] = []
    features: list[np.ndarray] = []
    waiting: set[int] = set()  # ids of the objects with an embedding in the batch
    camera = state.camera_commit  # (set by each commit's record)
    try:
        for record in records:
            if type(record) is Observation:
                seq = record.seq
                if seq >= state.next_seq:
                    state.next_seq = seq + 1
                oid = record.object_id
                if oid is None:
                    _apply_rejection(state, record, None)
                    continue
                obj = objects[oid]
                feature = record.feature
                if _update_fields(obj, record, camera) and feature is not None:
                    if oid in waiting:  # its running mean needs the sighting before
                        means.fold(batch, features)
                        batch, features, waiting = [], [], set()
                    batch.append(obj)
                    features.append(feature)
                    waiting.add(oid)
                if feature is not None and state.feature_dim is None:
                    state.feature_dim = int(feature.shape[0])
                continue
            if type(record) is not Commit:  # an event: it may read the embeddings it names
                if batch:
                    means.fold(batch, features)
                    batch, features, waiting = [], [], set()
                means.release(record.object_id)
                if record.kind is EventKind.MERGED:
                    means.release(record.data.get("absorbed"))
            apply(state, record, lost_after_s)
            camera = state.camera_commit
        if batch:
            means.fold(batch, features)
    finally:  # an object's embedding is its own again, whatever stopped the replay
        means.release_all()


class _RunningMeans:
    """A replay's embedding running means, one row per object in a float64 matrix (with the
    count of sightings folded into each), updated a batch of distinct objects at a time.

    :meth:`fold` is :func:`_update_embedding` of each ``(object, embedding)`` pair computed
    over all of them at once: the conversion, the norms (:func:`_row_dots` and a correctly
    rounded square root, as ``math.sqrt``), the running mean's product, sum and quotient are
    elementwise, so each row gets exactly the floats its own update gives. While an object
    has a row its ``feature`` and ``n_features`` are stale: :meth:`release` writes them back
    (an array of the object's own, not a view of the matrix) and frees the row. A batch that
    does not fit the matrix — embeddings of another width, a mean that is not float64, a
    sighting that is not a vector — is folded one by one, as ``apply`` does it (and refused
    as it refuses)."""

    __slots__ = ("count", "free", "has_mean", "means", "owner", "slot")

    def __init__(self) -> None:
        self.slot: dict[int, int] = {}  # object id -> its row
        self.owner: list[ObjectState | None] = []  # row -> the object it holds
        self.free: list[int] = []  # rows released
        self.means: np.ndarray | None = None  # (rows, width) float64
        self.count = np.zeros(0, dtype=np.int64)  # n_features of each row's object
        self.has_mean = np.zeros(0, dtype=bool)  # False: the object had no embedding yet

    def fold(self, batch: list[ObjectState], features: list[np.ndarray]) -> None:
        """Fold ``features[k]`` into ``batch[k]``'s running mean (distinct objects)."""
        try:  # each f.astype(float64); a ragged batch does not stack
            x = np.array(features, dtype=np.float64)
        except ValueError:
            x = None
        if x is None or x.ndim != 2 or x.shape[1] == 0 or (
                self.means is not None and x.shape[1] != self.means.shape[1]):
            self._one_by_one(batch, features)
            return
        if self.means is None:
            self.means = np.empty((0, x.shape[1]))
        slot = self.slot
        rows = [slot.get(obj.id, -1) for obj in batch]
        if -1 in rows:  # objects not yet held: their means (if any) come in
            width = x.shape[1]
            for k, obj in enumerate(batch):
                if rows[k] < 0:
                    f = obj.feature
                    if f is not None and (f.dtype != _F64 or f.shape != (width,)):
                        self._one_by_one(batch, features)
                        return
            for k, obj in enumerate(batch):
                if rows[k] < 0:
                    rows[k] = self._take(obj)
        x /= np.sqrt(_row_dots(x))[:, None]
        at = np.array(rows, dtype=np.intp)
        old = self.has_mean[at]
        if old.all():  # the common case: every object has a mean (no masks, no copy)
            n = self.count[at].astype(np.float64)[:, None]
            mean = self.means[at] * n
            mean += x
            mean /= n + 1.0
        else:  # a first embedding's mean is the sighting's own vector
            mean = x.copy()
            if old.any():
                held = at[old]
                n = self.count[held].astype(np.float64)[:, None]
                m = self.means[held] * n
                m += x[old]
                m /= n + 1.0
                mean[old] = m
        norms = np.sqrt(_row_dots(mean))
        # each row over its own norm (elementwise: the quotients of ``mean[k] / norm``); a
        # zero norm leaves the sighting's own vector
        zero = ~(norms > 0.0)
        mean /= np.where(zero, 1.0, norms)[:, None]
        if zero.any():
            mean[zero] = x[zero]
        self.means[at] = mean
        self.count[at] += 1
        self.has_mean[at] = True

    def _take(self, obj: ObjectState) -> int:
        """A row for ``obj``, holding its mean and count."""
        if not self.free:
            self._grow()
        row = self.free.pop()
        self.slot[obj.id] = row
        self.owner[row] = obj
        self.count[row] = obj.n_features
        if obj.feature is None:
            self.has_mean[row] = False
        else:
            self.has_mean[row] = True
            self.means[row] = obj.feature  # type: ignore[index]
        return row

    def _grow(self) -> None:
        assert self.means is not None
        have = len(self.owner)
        more = max(64, have)
        self.means = np.concatenate([self.means, np.empty((more, self.means.shape[1]))])
        self.count = np.concatenate([self.count, np.zeros(more, dtype=np.int64)])
        self.has_mean = np.concatenate([self.has_mean, np.zeros(more, dtype=bool)])
        self.owner.extend([None] * more)
        self.free.extend(range(have + more - 1, have - 1, -1))  # lowest rows first

    def _one_by_one(self, batch: list[ObjectState], features: list[np.ndarray]) -> None:
        for obj, feature in zip(batch, features, strict=True):
            self.release(obj.id)
            _update_embedding(obj, feature)

    def release(self, object_id: int | None) -> None:
        """Write ``object_id``'s mean and count back to it and free its row (if it has one)."""
        row = self.slot.pop(object_id, None)  # type: ignore[arg-type]
        if row is None:
            return
        obj = self.owner[row]
        self.owner[row] = None
        self.free.append(row)
        assert obj is not None and self.means is not None
        if self.has_mean[row]:
            obj.feature = self.means[row].copy()
        obj.n_features = int(self.count[row])

    def release_all(self) -> None:
        for oid in list(self.slot):
            self.release(oid)


_DOT_CHECKED: dict[int, bool] = {}
_F64 = np.dtype(np.float64)


def _row_dots(a: np.ndarray) -> np.ndarray:
    """``row.dot(row)`` of each row of ``a`` (n × d), bit for bit: one ``matmul`` of the rows
    as 1 × d by d × 1 products (numpy takes each as a dot, the BLAS ``ddot`` ``x.dot(x)``
    calls), checked once per width against ``x.dot(x)`` on random rows — where a numpy or
    BLAS would sum otherwise, each row's own ``dot`` is taken instead."""
    d = a.shape[1]
    same = _DOT_CHECKED.get(d)
    if same is None:
        probe = np.random.default_rng(d).standard_normal((64, d))
        same = _DOT_CHECKED[d] = bool(np.array_equal(
            np.matmul(probe[:, None, :], probe[:, :, None])[:, 0, 0].view(np.int64),
            np.array([x.dot(x) for x in probe]).view(np.int64)))
    if same:
        return np.matmul(a[:, None, :], a[:, :, None])[:, 0, 0]
    return np.array([x.dot(x) for x in a])


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


def apply(state: MemoryState, record: Record, lost_after_s: float,
          touched: Touched | None = None) -> None:
    """Change ``state`` by one record. ``lost_after_s`` only schedules the loss-queue index;
    ``touched`` (when given) collects what the record changed, for the rows to write."""
    if state.indexes_pending:  # an open left them to build: from the objects before this
        state.ensure_indexes()
    if isinstance(record, Observation):  # the hot path: a replay applies millions
        if record.seq >= state.next_seq:
            state.next_seq = record.seq + 1
        if record.object_id is None:
            _apply_rejection(state, record, touched)
            return
        obj = state.objects[record.object_id]
        update_object(obj, record, state.camera_commit)
        if record.feature is not None and state.feature_dim is None:
            state.feature_dim = int(record.feature.shape[0])
        if not state.indexes_deferred:
            state.place_object(obj)
        if touched is not None:
            touched.objects.add(obj.id)
        return
    if isinstance(record, Event):
        if record.seq >= state.next_seq:
            state.next_seq = record.seq + 1
        # events alone change what relations derive from: a relation index left to build
        # on first need is built from the objects as they were before this one
        state.scene.ensure_built()
        _apply_event(state, record, lost_after_s)
        if touched is not None:
            _touch(touched, record)
        return
    if isinstance(record, Commit):
        state.scene.pending.clear()  # relation changes belong to the commit that caused them
        state.next_commit = max(state.next_commit, record.id + 1)
        state.now = record.t if state.now is None else max(state.now, record.t)
        state.camera_commit = record.camera is not None
        objects = state.objects
        for oid, credit in zip(record.missed, record.miss_credits, strict=True):
            obj = objects[oid]
            obj.n_missed += 1
            obj.absence_s += credit
            state.note_absence(obj)
        for a, b in record.together:
            if a in objects:
                objects[a].together |= {b}
            if b in objects:
                objects[b].together |= {a}
        if touched is not None:  # (the pairs together were both sighted: their rows are written)
            touched.missed.update(record.missed)
        return
    raise TypeError(f"not a record: {type(record).__name__}")


def _touch(touched: Touched, ev: Event) -> None:
    """The rows an applied event changed (the one place, beside :func:`_apply_event`, that
    knows what each kind of event does to the materialised state)."""
    kind, oid = ev.kind, ev.object_id
    if kind in _ROOM_KINDS:
        touched.rooms = True
    elif kind in EPOCH_KINDS:  # no row: the events are the record (see load_state)
        return
    elif kind is EventKind.PRIOR:
        touched.prior.add(oid)
    elif kind is EventKind.DELTA:
        touched.deltas.add(ev.data["id"])
    elif kind is EventKind.KEYFRAME:
        touched.keyframes.add(oid)
    elif kind is EventKind.FORGOTTEN:
        touched.removed_objects.append(oid)
        touched.tombs.add(oid)
    elif kind is EventKind.REVIVED:
        touched.removed_tombstones.append(oid)
        touched.objects.add(oid)
    elif kind in (EventKind.EXPIRED, EventKind.MERGED):  # an identity ends
        gone = oid if kind is EventKind.EXPIRED else ev.data["absorbed"]
        touched.removed_objects.append(gone)
        touched.objects.update((gone, oid))  # only the live ones are written
    elif kind is not EventKind.COMPACTED:  # the object changed (relations: its row's room)
        touched.objects.add(oid)


def _apply_rejection(state: MemoryState, obs: Observation, touched: Touched | None) -> None:
    key = obs.key
    if key is None:
        return
    if key.startswith(TOMB_KEY):
        if touched is not None:
            touched.tombs.add(int(key[len(TOMB_KEY):]))
        tomb = state.tombstones[int(key[len(TOMB_KEY):])]
        tomb.suppressed += 1
        tomb.last_suppressed = obs.t
        return
    if touched is not None:
        touched.keys.add(key)
    seen = state.rejections.get(key)
    if seen is None:
        state.rejections[key] = RejectionState(obs.rejected or "", 1, obs.seq, obs.seq, obs.t)
    else:
        seen.count += 1
        seen.last_seq = obs.seq
        seen.last_t = obs.t
        seen.reason = obs.rejected or seen.reason


def _apply_event(state: MemoryState, ev: Event, lost_after_s: float) -> None:
    kind, data = ev.kind, ev.data
    if kind in _NO_OP:
        return
    if kind is EventKind.PRIOR:  # each carries the new value whole
        if data.get("removed"):
            state.prior.pop(ev.object_id, None)
        else:
            state.prior[ev.object_id] = PriorEntry.from_dict(data["entry"])
        return
    if kind is EventKind.DELTA:
        delta = Delta.from_dict(data)
        new = delta.id not in state.deltas
        state.deltas[delta.id] = delta
        if new:
            state.index_delta(delta)
        return
    if kind is EventKind.KEYFRAME:
        state.keyframes[ev.object_id] = keyframes_of(data["kept"])
        return
    if kind in EPOCH_KINDS:
        apply_epoch(state, ev)
        return
    if kind is EventKind.ROOM_DEFINED:
        state.scene.rooms.define(data["name"], data["polygon"], data.get("z_range"))
        return
    if kind is EventKind.ROOMS_CONNECTED:
        state.scene.rooms.connect(data["a"], data["b"])
        return
    if kind is EventKind.ROOM_REMOVED:
        state.scene.rooms.remove(data["name"])
        return
    if kind is EventKind.REVIVED:
        tomb = state.tombstones.pop(ev.object_id)
        state.tomb_grid.remove(ev.object_id)
        obj = tomb.obj
        obj.lost = False
        obj.lost_at = None
        state.objects[obj.id] = obj
        state.place_object(obj)
        state.schedule_loss(obj, lost_after_s)
        return
    if kind is EventKind.APPEARED:
        obj = new_object(ev)
        state.objects[obj.id] = obj
        state.next_object_id = max(state.next_object_id, obj.id + 1)
        state.place_object(obj)
        state.schedule_loss(obj, lost_after_s)
        return
    obj = state.objects[ev.object_id]
    if kind is EventKind.PROMOTED:
        obj.promoted = True
        if "to" in data:  # the settled box, refined from the averaged sightings
            _settle(obj, data, ev.t)
        # the label index files only promoted objects as absent; nothing is absent when it
        # is promoted today (a sighting or a new object comes with it), but that rule
        # should not rest on who emits PROMOTED
        state.note_absence(obj)
        _reindex(state, obj)
    elif kind is EventKind.LABEL_CHANGED:
        obj.label = data["to"]
        state.index_label(obj)
        _reindex(state, obj)
    elif kind in (EventKind.MOVED, EventKind.SETTLED):
        _settle(obj, data, ev.t)
        if kind is EventKind.MOVED:  # told by its looks alone: remember where from
            obj.moved_from = tuple(data["from"]) if data.get("by_looks") else None
        _reindex(state, obj)
    elif kind is EventKind.LOST:
        obj.lost = True
        obj.lost_at = ev.t
        state.note_absence(obj)
        state.scene.remove(obj.id)
    elif kind is EventKind.REACQUIRED:
        obj.lost = False
        obj.lost_at = None
        state.note_absence(obj)
        state.schedule_loss(obj, lost_after_s)
        _reindex(state, obj)
    elif kind is EventKind.REANCHORED:  # a pose correction: the place it was seen at moved
        obj.center = tuple(data["to"])  # type: ignore[assignment]
        obj.place = tuple(data["place"])  # type: ignore[assignment]
        obj.held = ()  # held sightings were placed with the poses before the correction
        state.place_object(obj)
        _reindex(state, obj)
    elif kind is EventKind.CORRECTED:
        _apply_correction(state, obj, data, ev.t)
        state.index_label(obj)
        _reindex(state, obj)
    elif kind is EventKind.EXPIRED:
        _drop(state, obj.id)
    elif kind is EventKind.MERGED:
        _apply_merge(state, obj, data, lost_after_s, ev.t)
    elif kind is EventKind.SPLIT:
        obj.held = ()
        obj.together |= {data["into"]}
    elif kind is EventKind.FORGOTTEN:
        del state.objects[obj.id]
        state.unplace_object(obj.id)
        state.scene.remove(obj.id)
        state.tombstones[obj.id] = TombstoneState(obj, ev.t, data["actor"], data["reason"])
        state.tomb_grid.set(obj.id, obj.center)
    else:  # pragma: no cover - every kind is handled above
        raise ValueError(f"unknown event kind {kind}")


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
        (tuple(pair[0]), tuple(pair[1])),  # type: ignore[arg-type]
        data.get("yaw_deg"), data.get("residual_m"), len(data.get("inliers", ())),
        None if before is None else before.scope)


def new_object(ev: Event) -> ObjectState:
    """The object an APPEARED event creates (before its first observation)."""
    data = ev.data
    center = tuple(data["center"])
    obj = ObjectState(
        id=ev.object_id,
        label=data["label"],
        center=center,  # type: ignore[arg-type]
        size=tuple(data["size"]),  # type: ignore[arg-type]
        place=center,  # type: ignore[arg-type]
        first_seen=data.get("first_seen", ev.t),
        last_seen=ev.t,
        place_size=tuple(data["size"]),  # type: ignore[arg-type]
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


def _drop(state: MemoryState, oid: int) -> None:
    """Remove an identity from the live state (expired, or merged into another)."""
    del state.objects[oid]
    state.unplace_object(oid)
    state.scene.remove(oid)


def _apply_merge(state: MemoryState, obj: ObjectState, data: dict, lost_after_s: float,
                 ev_t: float) -> None:
    """``obj`` (the older identity) absorbs ``data["absorbed"]``: it takes the state the event
    carries, and keeps the absorbed id so its history reads as one."""
    gone = state.objects[data["absorbed"]]
    obj.center = tuple(data["center"])  # type: ignore[assignment]
    obj.size = tuple(data["size"])  # type: ignore[assignment]
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
    _drop(state, gone.id)
    state.place_object(obj)
    state.schedule_loss(obj, lost_after_s)
    _reindex(state, obj)


def _settle(obj: ObjectState, data: dict, t: float) -> None:
    """The object settled at a new place (a move or a correction)."""
    obj.place = tuple(data["to"])  # type: ignore[assignment]
    obj.place_size = tuple(data.get("size", obj.size))  # type: ignore[assignment]
    obj.place_t = t


def _reindex(state: MemoryState, obj: ObjectState) -> None:
    """Published, present objects take part in relations."""
    if obj.promoted and not obj.lost:
        state.scene.place(obj)


def _apply_correction(state: MemoryState, obj: ObjectState, data: dict, t: float) -> None:
    field = data["field"]
    if field == "label":
        if data.get("mass"):
            obj.label_mass[data["to"]] = obj.label_mass.get(data["to"], 0.0) + data["mass"]
        if data.get("pin"):
            obj.pinned_label = data["to"]
            obj.label_by = data.get("actor")
        obj.label = data["label_after"]
    elif field == "center":
        obj.center = tuple(data["to"])  # type: ignore[assignment]
        _settle(obj, data, t)
        obj.moved_from = None  # a person said where it is
        state.place_object(obj)
    elif field == "attributes":
        obj.attributes.update(data.get("set", {}))
        for key in data.get("removed", []):
            obj.attributes.pop(key, None)
    else:  # pragma: no cover - decide only writes the fields above
        raise ValueError(f"unknown corrected field {field!r}")
