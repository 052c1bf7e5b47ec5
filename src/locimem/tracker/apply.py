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
    Commit,
    Event,
    EventKind,
    ObjectState,
    Observation,
    Record,
    RejectionState,
)
from locimem.tracker.effects import (  # (re-exported: the tracker's users read them here)
    EFFECTS,
    EPOCH_KINDS,
    Touched,
    apply_epoch,
    new_object,
)
from locimem.tracker.state import MemoryState

__all__ = ["EPOCH_KINDS", "TOMB_KEY", "Touched", "apply", "apply_epoch", "new_object", "replay",
           "update_object"]

TOMB_KEY = "tomb:"  # rejection key prefix of a sighting suppressed by a tombstone


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
            if type(record) is Event:  # an event: it may read the embeddings it names
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
        if not state.indexes_deferred:  # (place_object's own check, one call fewer a sighting)
            state.indexes.place(obj)
        if touched is not None:
            touched.objects.add(obj.id)
        return
    if isinstance(record, Event):
        if record.seq >= state.next_seq:
            state.next_seq = record.seq + 1
        # events alone change what relations derive from: a relation index left to build
        # on first need is built from the objects as they were before this one
        state.scene.ensure_built()
        effect = EFFECTS[record.kind]
        effect.apply(state, record, lost_after_s)  # the meaning, then the indexes
        effect.index(state, record, lost_after_s)
        if touched is not None:
            effect.touch(touched, record)
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
