"""``ObjectMemory``: the thin facade that composes the tracker, the store and the queries.

Every mutation goes the same way: the tracker *decides* records, :func:`apply` changes the live
state with them, and the store appends them — with the objects they touched — in one
transaction. Opening a store rebuilds the state before any new scan is accepted.
"""

from __future__ import annotations

import contextlib
import logging
import math
import os
import sqlite3
import time
import zlib
from collections.abc import Callable, Iterable, Iterator, Sequence
from typing import Any

from locimem.check import (
    check_attributes,
    check_coordinate_domain,
    check_label,
    check_positive,
    check_quaternion,
    check_scope,
    check_size_domain,
    check_text,
    check_time,
    check_unit_interval,
)
from locimem.config import TrackerConfig
from locimem.errors import InvalidInput, LocimemError, ReadOnly, ScopeError
from locimem.evidence.keyframes import Keyframe, make_candidate
from locimem.evidence.keyframes import could_join as could_join_keyframes
from locimem.evidence.keyframes import offer as offer_keyframe
from locimem.index.vectors import ExactIndex, VectorIndex
from locimem.model import (
    Camera,
    Commit,
    CompactionReport,
    Detection,
    Event,
    EventKind,
    ObjectState,
    Observation,
    Record,
    ScanResult,
)
from locimem.query.encoder import Encoder
from locimem.query.reader import MemoryReader
from locimem.scene.relations import RelationChange
from locimem.scene.rooms import Room, RoomMap
from locimem.store.base import RowChanges, Store
from locimem.store.open_check import corrupt
from locimem.store.sqlite import MEMORY, SQLiteStore
from locimem.tracker.apply import TOMB_KEY, apply
from locimem.tracker.decide import RecordWriter, decide
from locimem.tracker.deltas import OPEN as OPEN_DELTA
from locimem.tracker.deltas import detect as detect_deltas
from locimem.tracker.deltas import reviewed as reviewed_delta
from locimem.tracker.governance import (
    decide_attributes,
    decide_forget,
    decide_merge,
    decide_move,
    decide_relabel,
    decide_split,
)
from locimem.tracker.retention import CHANGE_KINDS, select_kept
from locimem.tracker.state import MemoryState

__all__ = ["ObjectMemory"]

# what reading a damaged record raises (a JSON column that is not JSON, a missing key, a
# column of the wrong type, a page SQLite cannot read): at open, a CorruptStore
_UNREADABLE = (sqlite3.DatabaseError, KeyError, ValueError, TypeError, IndexError,
               AttributeError, OverflowError, zlib.error, RecursionError)


logger = logging.getLogger("locimem")

class ObjectMemory(MemoryReader):
    """A persistent object memory for one scope of one store.

    Open it with :meth:`open`; use it as a context manager so it is always closed::

        with ObjectMemory.open("home.loci", scope="home") as mem:
            result = mem.observe(t=12.0, detections=[...])

    Not thread-safe: call it from one thread (or guard it with a lock).
    """

    def __init__(self, store: Store, scope: str, config: TrackerConfig,
                 clock: Callable[[], float], encoder: Encoder | None = None,
                 vector_index: Callable[[int], VectorIndex] | None = None) -> None:
        super().__init__(store, scope, config, MemoryState())  # the live memory: no owner
        self._clock = clock
        self._encoder = encoder
        self._vector_index = vector_index
        self._state = self._load_state(from_log=False)

    # -- lifecycle ----------------------------------------------------------------------------
    @classmethod
    def open(
        cls,
        path: str | os.PathLike[str] = MEMORY,
        *,
        scope: str = "default",
        config: TrackerConfig | None = None,
        read_only: bool = False,
        durable: bool = True,
        clock: Callable[[], float] = time.time,
        encoder: Encoder | str | None = None,
        vector_index: str = "exact",
        check: str = "quick",
    ) -> ObjectMemory:
        """Open (or create) the store at ``path`` and rebuild the memory of ``scope``.

        Args:
            path: a store file (created if missing), or ``":memory:"`` for a scratch memory.
            scope: whose memory this is; a memory reads and writes only its own scope.
            config: tracker thresholds (defaults from the published design).
            read_only: open without the writer lock; every mutator raises :class:`ReadOnly`.
            durable: fsync every scan (survives power loss); False survives a killed process
                but may lose the last scans on power loss.
            clock: wall clock for *record time* only (audit); beliefs use scan times.
            encoder: a text :class:`~locimem.query.encoder.Encoder` for ``find`` by meaning,
                or ``"minilm"`` for the packaged offline MiniLM (the ``text`` extra).
            vector_index: ``"exact"`` (numpy) or ``"usearch"`` (approximate; the ``vectors``
                extra) for the label embeddings.
            check: how an existing file is checked before it is read (see
                :mod:`locimem.store.open_check`): ``"quick"`` (SQLite's ``quick_check`` on
                files up to 64 MiB, the header and schema on larger ones), ``"header"``
                (header and schema only) or ``"off"``.

        Raises:
            StoreLocked: another process has the store open for writing.
            NotAStore: the file is not a locimem store.
            SchemaVersionError: the store is from a newer locimem.
            ScopeError: ``read_only`` and the store holds scopes, but not ``scope`` (the
                message names the ones it holds; ``.scopes`` lists them).
            CorruptStore: the file is damaged (the check found it, or the scope's state
                could not be read); ``locimem validate`` says where.
        """
        scope = check_scope(scope)
        if config is None:
            config = TrackerConfig()
        elif not isinstance(config, TrackerConfig):
            raise InvalidInput(f"config must be a TrackerConfig, got {type(config).__name__}")
        text_encoder = _check_encoder(encoder)
        make_index = _check_vector_index(vector_index)
        store = SQLiteStore(path, read_only=read_only, durable=durable, check=check)
        try:
            if read_only:  # a reader of a scope the store does not hold would see nothing
                _check_scope_held(store, scope)
            return cls(store, scope, config, clock, text_encoder, make_index)
        except LocimemError:
            store.close()
            raise
        except _UNREADABLE as exc:  # the file passed the open check; a record did not
            store.close()
            raise corrupt(str(path), f"the state of scope {scope!r} cannot be read "
                                     f"({type(exc).__name__}: {exc})") from exc
        except BaseException:
            store.close()
            raise

    def close(self) -> None:
        """Close the store and release the writer lock. Safe to call twice."""
        if self._store is not None:
            self._store.close()
            self._store = None

    def __enter__(self) -> ObjectMemory:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def __repr__(self) -> str:
        where = "closed" if self._store is None else self._store.path
        return f"ObjectMemory({where!r}, scope={self._scope!r})"

    @property
    def read_only(self) -> bool:
        return self.store.read_only

    def rebuild_from_log(self) -> MemoryState:
        """Replay this scope's record into a fresh state, from its newest checkpoint (if a
        compaction wrote one) — the materialised cache is not read. The live memory is
        unchanged; compare ``snapshot()`` of both to check the cache."""
        return self._load_state(from_log=True)

    # -- writing ------------------------------------------------------------------------------
    @contextlib.contextmanager
    def _all_or_nothing(self) -> Iterator[None]:
        """The one place the live state changes: inside this block. Any exception raised in
        it — while deciding, applying, deriving or appending — puts back the state the store
        holds (the last commit that landed), so a failed call leaves the memory exactly as it
        was (or, if its append had already committed, exactly as the store now says)."""
        try:
            yield
        except BaseException:
            self._restore()
            raise

    def _restore(self) -> None:
        """Reload the live state from the store (its cache of the last committed state)."""
        self._semantic_index = None
        try:
            self._state = self._load_state(from_log=False)
        except BaseException:  # the store cannot be read back: refuse further use
            self.close()
            raise

    def _commit(self, records: Sequence[Record], camera: Camera | None = None
                ) -> Sequence[Record]:
        """Apply records to the live state and append them, with the state they changed, in
        one transaction — all or nothing (see :meth:`_all_or_nothing`).

        What the records imply is recorded in the same commit: relation changes (RELATION
        events, already reflected in the state), the frames kept as evidence (KEYFRAME) and
        differences from the prior map (DELTA)."""
        with self._all_or_nothing():
            return self._apply_and_append(records, camera)

    def _apply_and_append(self, records: Sequence[Record], camera: Camera | None
                          ) -> Sequence[Record]:
        state = self._state
        lost_after = self._config.lost_after_s
        for record in records:
            apply(state, record, lost_after)
        changes = state.scene.drain()
        if changes:
            records = _with_events(state, records, _relation_events(state, records, changes))
        n_kept = self._config.keyframes_kept
        # keyframes first (a delta cites the frames kept by now); a merged identity's frames
        # are offered to the one that absorbed it
        records = self._derive(records, _merged_keyframe_events(state, records, n_kept))
        if camera is not None:
            records = self._derive(records, _keyframe_events(state, records, camera, n_kept))
        records = self._derive(records, [(EventKind.DELTA, d["object"], d["label"], d)
                                         for d in detect_deltas(state, records, self._config)])
        delta = _delta(state, records)
        self.store.append(self._scope, records, delta)
        if self._semantic_index is not None:
            for oid in sorted({*delta.touched, *delta.removed_objects}):
                obj = state.objects.get(oid)
                if obj is None or oid in state.tombstones:
                    self._semantic_index.remove(oid)
                else:
                    self._semantic_index.set(oid, obj.label)
        return records

    def _derive(self, records: Sequence[Record], items: Sequence[Derived]) -> Sequence[Record]:
        """``records`` with derived events appended to their commit and applied."""
        if not items:
            return records
        n = len(records)
        out = _with_events(self._state, records, items)
        for record in out[n:]:
            apply(self._state, record, self._config.lost_after_s)
        return out

    def _writable(self, what: str) -> None:
        if self.store.read_only:
            raise ReadOnly(f"{what}() needs a writable memory; this one was opened read-only")

    def observe(self, t: float, detections: Iterable[Detection] = (),
                camera: Camera | None = None, *, source: str = "tracker") -> ScanResult:
        """Ingest one scan: what perception saw at time ``t`` (seconds).

        Scans must come in time order (equal times are allowed). A scan with no detections
        still advances time, which is how belief in unseen objects decays. The whole scan is
        validated first and committed atomically: a rejected scan writes nothing.

        ``source`` names the sensor or pipeline that produced the scan ("head-cam/yolo"): it
        is the scan's actor in the audit, and the ``source`` of every object it creates.

        Returns:
            ScanResult with the object id given to each detection (None where the detection
            was rejected — see ``rejected`` for the reason) and the events the scan produced.
        """
        self._writable("observe")
        t = check_time(t)
        source = check_text(source, "source")
        dets = self._check_scan(t, detections, camera)
        with self._all_or_nothing():  # decide refreshes the state's loss queue
            decision = decide(self._state, self._config, t, dets, camera,
                              recorded_at=float(self._clock()), actor=source)
            records = self._commit(decision.records, camera)
        self._note_embedding_width(dets)
        events = tuple(r for r in records if isinstance(r, Event))
        for warning in decision.warnings:
            logger.warning("scan at t=%s: %s", t, warning)
        return ScanResult(commit=decision.records[0].id, t=t,  # type: ignore[union-attr]
                          assignments=decision.assignments, events=events,
                          rejected=decision.rejected, warnings=decision.warnings)

    def _check_scan(self, t: float, detections: Iterable[Detection],
                    camera: Camera | None) -> list[Detection]:
        now = self._state.now
        if now is not None and t < now:
            raise InvalidInput(
                f"t={t} is before the latest scan (t={now}); scans must not go back in time"
            )
        if camera is not None and not isinstance(camera, Camera):
            raise InvalidInput(f"camera must be a Camera or None, got {type(camera).__name__}")
        if isinstance(detections, (str, bytes, Detection)) or not hasattr(detections, "__iter__"):
            raise InvalidInput(
                f"detections must be a list of Detection, got {type(detections).__name__}"
            )
        dets = list(detections)
        dim = self._embedding_width(dets)
        for i, det in enumerate(dets):
            if not isinstance(det, Detection):
                raise InvalidInput(
                    f"detections[{i}] must be a Detection, got {type(det).__name__}"
                )
            if det.feature is not None:
                width = int(det.feature.shape[0])
                if dim is None:
                    dim = width
                elif width != dim:
                    raise InvalidInput(
                        f"detections[{i}].feature has width {width}, but this memory's "
                        f"embeddings have width {dim}"
                    )
        return dets

    _logged_width: int | None = None  # width of a rejected detection's logged embedding
    _logged_width_known = False

    def _embedding_width(self, dets: Sequence[Detection]) -> int | None:
        """The width every embedding of this scope must have: fixed by the first one recorded
        — accepted (the state knows it) or rejected (its embedding is logged too, and a scope's
        logged embeddings are one matrix when exported). Looked up in the log at most once per
        memory, and only while no accepted embedding has fixed it."""
        dim = self._state.feature_dim
        if dim is not None or all(d.feature is None for d in dets
                                  if isinstance(d, Detection)):
            return dim
        if not self._logged_width_known:
            self._logged_width = self.store.logged_feature_dim(self._scope)
            self._logged_width_known = True
        return self._logged_width

    def _note_embedding_width(self, dets: Sequence[Detection]) -> None:
        """After a scan landed: the first logged embedding fixes the width (see above)."""
        if self._logged_width is None and self._logged_width_known:
            width = next((d.feature.shape[0] for d in dets if d.feature is not None), None)
            self._logged_width = None if width is None else int(width)


    # -- governance ---------------------------------------------------------------------------
    def _correction_args(self, what: str, object_id: int, actor: str, reason: str | None,
                         t: float | None) -> tuple[ObjectState, str, str | None, float, float]:
        self._writable(what)
        obj = self._object(object_id)
        actor = check_text(actor, "actor")
        reason = None if reason is None else check_text(reason, "reason", max_chars=1000)
        now = self._state.now if self._state.now is not None else 0.0
        when = now if t is None else check_time(t)
        if when < now:
            raise InvalidInput(f"t={when} is before the latest commit (t={now}); "
                               "corrections are recorded in time order")
        return obj, actor, reason, when, float(self._clock())

    def relabel(self, object_id: int, label: str, *, actor: str = "operator",
                reason: str | None = None, t: float | None = None) -> Event:
        """Correct an object's label ("that is not a cup, it is a vase").

        The label mass the detector accumulated is kept (see ``label_votes``); by default the
        person's label is pinned so later detections do not overturn it (set
        ``TrackerConfig.human_label_weight`` to make it weighted evidence instead). Records a
        CORRECTED event with ``actor``, ``reason`` and valid time ``t`` (default: now).
        """
        label = check_label(label)
        obj, actor, reason, when, recorded = self._correction_args("relabel", object_id, actor,
                                                                    reason, t)
        records = decide_relabel(self._state, self._config, obj, label, when, actor, reason,
                                 recorded)
        self._commit(records)
        return records[-1]  # type: ignore[return-value]

    def move(self, object_id: int, center: Sequence[float], *, actor: str = "operator",
             reason: str | None = None, t: float | None = None) -> Event:
        """Correct where an object is ("the remote is in the drawer now"): centre (x, y, z),
        metres, map frame. Its sightings stay in its history; a CORRECTED event records it."""
        center = check_coordinate_domain(center, "center")
        obj, actor, reason, when, recorded = self._correction_args("move", object_id, actor,
                                                                    reason, t)
        records = decide_move(self._state, self._config, obj, center, when, actor, reason,
                              recorded)
        self._commit(records)
        return records[-1]  # type: ignore[return-value]

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
        obj, actor, reason, when, recorded = self._correction_args("set_attributes", object_id,
                                                                    actor, reason, t)
        records = decide_attributes(self._state, obj, values, removed, when, actor, reason,
                                    recorded)
        self._commit(records)
        return records[-1]  # type: ignore[return-value]

    def forget(self, object_id: int, *, actor: str = "operator", reason: str | None = None,
               t: float | None = None) -> Event:
        """Remove an object from every read path. A tombstone remembers it, so the same thing
        seen again (same place, and one of its labels or a similar embedding) is suppressed —
        or revived, with ``TrackerConfig.revive_after``. Never silent: a FORGOTTEN event with
        ``actor`` and ``reason`` is recorded and shown by :meth:`audit`."""
        obj, actor, reason, when, recorded = self._correction_args("forget", object_id, actor,
                                                                    reason, t)
        records = decide_forget(self._state, obj, when, actor, reason, recorded)
        self._commit(records)
        return records[-1]  # type: ignore[return-value]

    def merge(self, object_id: int, other_id: int, *, actor: str = "operator",
              reason: str | None = None, t: float | None = None) -> Event:
        """Say two identities are one thing: ``other_id`` is MERGED into ``object_id``, which
        keeps its id, both histories (``history()``), the summed label votes and the place of
        the one seen last. Recorded as a correction with ``actor`` and ``reason`` (see
        :meth:`audit`); undo it with :meth:`split`. Returns the MERGED event."""
        obj, actor, reason, when, recorded = self._correction_args("merge", object_id, actor,
                                                                    reason, t)
        other = self._object(other_id)
        if other.id == obj.id:
            raise InvalidInput(f"cannot merge object {obj.id} with itself")
        records = decide_merge(self._state, obj, other, when, actor, reason, recorded)
        self._commit(records)
        return records[-1]  # type: ignore[return-value]

    def split(self, object_id: int, center: Sequence[float], *, label: str | None = None,
              size: Sequence[float] | None = None, actor: str = "operator",
              reason: str | None = None, t: float | None = None) -> Event:
        """Say an identity is two things: the other one is a ``label`` (default: the
        object's) at ``center`` (x, y, z; metres, map frame) of ``size`` (default: the
        object's). It becomes a new, published object with the person's label pinned; the
        tracker will not merge the two again. Recorded as a correction (see :meth:`audit`);
        undo it with :meth:`merge`. Returns the SPLIT event (``data["into"]``: the new id)."""
        center = check_coordinate_domain(center, "center")
        obj, actor, reason, when, recorded = self._correction_args("split", object_id, actor,
                                                                    reason, t)
        label = obj.label if label is None else check_label(label)
        size = obj.size if size is None else check_size_domain(size, "size")
        records = decide_split(self._state, obj, self._state.next_object_id, label, center,
                               size, when, actor, reason, recorded)
        self._commit(records)
        return records[1]  # type: ignore[return-value]


    # -- the prior (long-term) map and its deltas ----------------------------------------------
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
        self._writable("load_prior")
        scene = check_text(scene, "scene", max_chars=128)
        actor = check_text(actor, "actor")
        reason = None if reason is None else check_text(reason, "reason", max_chars=1000)
        if self._state.prior:
            raise InvalidInput("this memory already has a prior map; consolidate() updates "
                               "it from confirmed deltas (load a new one into a new scope)")
        if self._state.objects or self._state.tombstones:
            raise InvalidInput(
                f"load_prior() needs a scope that has observed nothing yet; scope "
                f"{self._scope!r} already holds objects (load the prior map into a new scope "
                "and run the robot against it there)")
        if isinstance(entries, (str, bytes, dict)) or not hasattr(entries, "__iter__"):
            raise InvalidInput("entries must be a list of dicts with label, center and size")
        checked = [_check_prior_entry(i, e, scene) for i, e in enumerate(entries)]
        if not checked:
            raise InvalidInput("the prior map holds no entries")
        ids = [self._state.next_object_id + offset for offset in range(len(checked))]
        items: list[Derived] = []
        for oid, entry in zip(ids, checked, strict=True):
            label = entry["label"]
            items += [
                (EventKind.APPEARED, oid, label, {
                    "label": label, "center": entry["center"], "size": entry["size"],
                    "source": entry["source"], "prior": True,
                    "attributes": entry["attributes"], "orientation": entry["orientation"]}),
                (EventKind.PROMOTED, oid, label, {"to": entry["center"], "size": entry["size"]}),
                (EventKind.PRIOR, oid, label, {"entry": entry}),
            ]
        self._meta_commit("prior", actor, reason, items)
        return ids

    def confirm_delta(self, delta_id: int, *, actor: str = "operator",
                      reason: str | None = None) -> dict[str, Any]:
        """A person confirms a pending delta (it is then applied by :meth:`consolidate`)."""
        return self._review_delta("confirm_delta", delta_id, "confirmed", ("pending",), actor,
                                  reason)

    def reject_delta(self, delta_id: int, *, actor: str = "operator",
                     reason: str | None = None) -> dict[str, Any]:
        """A person rejects a pending or confirmed delta. It stays recorded, and the same
        evidence (the same place, the same loss) does not open it again."""
        return self._review_delta("reject_delta", delta_id, "rejected", OPEN_DELTA, actor,
                                  reason)

    def _review_delta(self, what: str, delta_id: int, status: str, allowed: Sequence[str],
                      actor: str, reason: str | None) -> dict[str, Any]:
        self._writable(what)
        delta = self._delta_of(delta_id)
        actor = check_text(actor, "actor")
        reason = None if reason is None else check_text(reason, "reason", max_chars=1000)
        if delta["status"] not in allowed:
            raise InvalidInput(f"delta {delta_id} is {delta['status']}; only a "
                               f"{' or '.join(allowed)} delta can be {status}")
        t = float(self._state.now or 0.0)
        new = reviewed_delta(delta, status, t, actor, reason)
        self._meta_commit("review", actor, reason,
                          [(EventKind.DELTA, new["object"], new["label"], new)])
        return new

    def consolidate(self, *, actor: str = "operator", reason: str | None = None
                    ) -> list[dict[str, Any]]:
        """Apply every confirmed delta to the prior map, in one commit: a moved object's
        prior place becomes where it was seen, a removed one leaves the map, an added one
        joins it, a reshaped one takes its new box. Each delta becomes ``applied`` and the
        PRIOR events record what changed. Returns the applied deltas (none: nothing written).
        """
        self._writable("consolidate")
        actor = check_text(actor, "actor")
        reason = None if reason is None else check_text(reason, "reason", max_chars=1000)
        state = self._state
        t = float(state.now or 0.0)
        items: list[Derived] = []
        applied = []
        entries: dict[int, dict[str, Any] | None] = {}  # the map as this commit changes it
        for did in sorted(state.deltas):
            delta = state.deltas[did]
            if delta["status"] != "confirmed":
                continue
            items += self._consolidation(delta, entries)
            done = reviewed_delta(delta, "applied", t, actor, reason)
            items.append((EventKind.DELTA, done["object"], done["label"], done))
            applied.append(done)
        if items:
            self._meta_commit("consolidate", actor, reason, items)
        return applied

    def _consolidation(self, delta: dict[str, Any], entries: dict[int, dict[str, Any] | None]
                       ) -> list[Derived]:
        """The PRIOR events that apply one confirmed delta to the prior map; ``entries``
        holds the entries earlier deltas of the same commit changed (and is updated)."""
        state = self._state
        oid, kind = delta["object"], delta["kind"]
        entry = entries[oid] if oid in entries else state.prior.get(oid)
        if kind == "removed" or (entry is None and kind != "added"):
            entries[oid] = None
            return [(EventKind.PRIOR, oid, delta["label"], {"removed": True,
                                                            "delta": delta["id"]})]
        if kind == "added":
            obj = state.objects.get(oid)
            source = obj.source if obj is not None else "tracker"
            new = {"label": delta["label"], "center": delta["observed"]["center"],
                   "size": delta["observed"]["size"], "orientation": None,
                   "attributes": dict(obj.attributes) if obj is not None else {},
                   "confidence": 1.0, "source": source, "prior_id": None}
            entries[oid] = new
            return [(EventKind.PRIOR, oid, delta["label"], {"entry": new, "delta": delta["id"]})]
        new = dict(entry)
        if kind == "moved":
            new["center"] = delta["observed"]["center"]
        else:
            new["size"] = delta["observed"]["size"]
        entries[oid] = new
        update = (EventKind.PRIOR, oid, delta["label"], {"entry": new, "delta": delta["id"]})
        live, obj = delta.get("live"), state.objects.get(oid)
        young = state.objects.get(live) if live is not None else None
        if young is None or obj is None:
            return [update]
        # the move was seen as a new identity: the prior object absorbs it (MERGED), so the
        # map keeps its id and no ghost stays behind at the old place
        return [(EventKind.MERGED, oid, young.label, {
            "absorbed": live, "center": list(young.center), "size": list(young.size),
            "to": list(young.place),
            "label_mass": dict(sorted(young.label_mass.items())),
            "n_detections": obj.n_detections + young.n_detections, "label": young.label,
            "distance_m": math.dist(obj.center, young.center), "delta": delta["id"]}), update]

    def _writer(self, kind: str, actor: str, reason: str | None) -> RecordWriter:
        """Records of a commit that is not a scan, at the latest scan's time."""
        state = self._state
        return RecordWriter(
            Commit(id=state.next_commit, kind=kind, t=float(state.now or 0.0),
                   recorded_at=float(self._clock()), actor=actor, reason=reason,
                   n_detections=0),
            state.next_seq,
        )

    def _meta_commit(self, kind: str, actor: str, reason: str | None,
                     items: Sequence[Derived]) -> list[Event]:
        """One commit of ``kind`` holding these events (checked actor and reason)."""
        out = self._writer(kind, actor, reason)
        events = [out.event(ev_kind, oid, label, data) for ev_kind, oid, label, data in items]
        self._commit(out.records)
        return events

    # -- the scene graph -----------------------------------------------------------------------
    def define_room(self, name: str, polygon_xy: Sequence[Sequence[float]],
                    z_range: Sequence[float] | None = None, *, actor: str = "operator",
                    reason: str | None = None) -> Event:
        """Define a room by its floor polygon ((x, y) vertices, metres, map frame; a simple
        polygon of positive area) and optional z range. Objects are assigned to the room
        holding most of their footprint. Recorded as a ROOM_DEFINED event."""
        self._writable("define_room")
        room = Room(check_text(name, "room name", max_chars=64), polygon_xy, z_range)
        if room.name in self._state.scene.rooms.names():  # names are normalised like labels
            raise InvalidInput(f"a room named {room.name!r} is already defined")
        return self._scene_event(EventKind.ROOM_DEFINED, room.to_dict(), actor, reason)

    def connect_rooms(self, a: str, b: str, *, actor: str = "operator",
                      reason: str | None = None) -> Event:
        """Link two rooms (a door or an opening) for :meth:`path_rooms`."""
        self._writable("connect_rooms")
        a, b = self._room(a), self._room(b)
        if a == b:
            raise InvalidInput(f"cannot connect room {a!r} to itself")
        return self._scene_event(EventKind.ROOMS_CONNECTED, {"a": a, "b": b}, actor, reason)

    def import_rooms(self, data: dict[str, Any], *, actor: str = "operator",
                     reason: str | None = None) -> list[Event]:
        """Define rooms and their links from plain data — ``{"rooms": [{"name", "polygon",
        "z_range"}, ...], "connections": [[a, b], ...]}`` (the form ``RoomMap.to_dict()``
        writes) — in one commit. Everything is validated first; nothing is written if any
        room or link is bad."""
        self._writable("import_rooms")
        if not isinstance(data, dict) or not isinstance(data.get("rooms"), list):
            raise InvalidInput('rooms data must be a dict with a "rooms" list')
        trial = RoomMap.from_dict(self._state.scene.rooms.to_dict())
        events: list[tuple[EventKind, dict[str, Any]]] = []
        for item in data["rooms"]:
            if not isinstance(item, dict):
                raise InvalidInput("each room must be a dict with name and polygon")
            name = check_text(item.get("name"), "room name", max_chars=64)
            room = trial.define(name, item.get("polygon"), item.get("z_range"))
            events.append((EventKind.ROOM_DEFINED, room.to_dict()))
        for link in data.get("connections", []):
            if not isinstance(link, (list, tuple)) or len(link) != 2:
                raise InvalidInput("each connection must be a pair of room names")
            trial.connect(link[0], link[1])
            events.append((EventKind.ROOMS_CONNECTED, {"a": link[0], "b": link[1]}))
        if not events:
            raise InvalidInput("rooms data holds no rooms")
        return self._scene_events(events, actor, reason)

    def _scene_event(self, kind: EventKind, data: dict[str, Any], actor: str,
                     reason: str | None) -> Event:
        return self._scene_events([(kind, data)], actor, reason)[0]

    def _scene_events(self, items: list[tuple[EventKind, dict[str, Any]]], actor: str,
                      reason: str | None) -> list[Event]:
        actor = check_text(actor, "actor")
        reason = None if reason is None else check_text(reason, "reason", max_chars=1000)
        return self._meta_commit("scene", actor, reason,
                                 [(kind, 0, "", data) for kind, data in items])

    # -- maintenance --------------------------------------------------------------------------
    def compact(self, *, older_than_s: float = 600.0, trail_s: float = 10.0,
                dry_run: bool = False, actor: str = "maintenance",
                reason: str | None = None) -> CompactionReport:
        """Bound the observation log: thin observations older than ``older_than_s`` (before
        the latest scan) to, per object, the first and last sighting, every sighting where its
        place or label changed, and one sighting per ``trail_s`` seconds. Events, tombstones and
        the audit trail are kept whole.

        A checkpoint of the exact state at the horizon is stored in the same transaction, so
        replay (``rebuild_from_log``, reopening, ``as_of`` at or after the horizon) stays
        exact; ``as_of`` a time inside a thinned stretch is exact for events and labels and
        accurate to the trail for positions and counts. ``dry_run`` reports without writing.
        """
        if not dry_run:
            self._writable("compact")
        older = check_positive(older_than_s, "older_than_s", allow_zero=True)
        trail = check_positive(trail_s, "trail_s")
        actor = check_text(actor, "actor")
        reason = None if reason is None else check_text(reason, "reason", max_chars=1000)
        store, scope = self.store, self._scope
        now = self._state.now
        horizon = None if now is None else store.last_commit_at(scope, t=now - older)
        previous = store.latest_checkpoint(scope)
        after = 0 if previous is None else previous[0]
        if horizon is None or horizon <= after:
            return CompactionReport(horizon, None, 0, 0, dry_run)
        rows = store.observation_meta(scope, after, horizon)
        if not rows:  # nothing new to thin: write nothing (not even a checkpoint)
            return CompactionReport(horizon, None, 0, 0, dry_run)
        changes = store.change_commits(scope, after, horizon, CHANGE_KINDS)
        kept = select_kept(rows, changes, trail)
        dropped = [row.seq for row in rows if row.seq not in kept]
        state_at = self._load_state(from_log=True, until_commit=horizon)
        report = CompactionReport(horizon, state_at.now, len(rows), len(dropped), dry_run)
        if dry_run:
            return report
        out = self._writer("maintenance", actor, reason)
        out.event(EventKind.COMPACTED, 0, "", {
            "horizon_commit": horizon, "horizon_t": state_at.now, "examined": len(rows),
            "removed": len(dropped), "trail_s": trail,
        })
        with self._all_or_nothing():
            store.compact(scope, checkpoint_commit=horizon, checkpoint_t=state_at.now or 0.0,
                          state=state_at.snapshot(), delete_seqs=dropped, records=out.records)
            for record in out.records:
                apply(self._state, record, self._config.lost_after_s)
        return report


def _delta(state: MemoryState, records: Sequence[Record]) -> RowChanges:
    """The materialised rows one commit changed, derived from its records."""
    delta = RowChanges()
    objects: set[int] = set()
    tombs: set[int] = set()
    keys: set[str] = set()
    for r in records:
        if isinstance(r, Observation):
            if r.object_id is not None:
                objects.add(r.object_id)
            elif r.key is not None:
                if r.key.startswith(TOMB_KEY):
                    tombs.add(int(r.key[len(TOMB_KEY):]))
                else:
                    keys.add(r.key)
        elif isinstance(r, Event):
            if r.kind in (EventKind.ROOM_DEFINED, EventKind.ROOMS_CONNECTED):
                delta.rooms = state.scene.rooms.to_dict()
            elif r.kind is EventKind.PRIOR:
                delta.prior[r.object_id] = state.prior.get(r.object_id)
            elif r.kind is EventKind.DELTA:
                delta.deltas[r.data["id"]] = state.deltas[r.data["id"]]
            elif r.kind is EventKind.KEYFRAME:
                delta.keyframes[r.object_id] = state.keyframes[r.object_id]
            elif r.kind is EventKind.FORGOTTEN:
                delta.removed_objects.append(r.object_id)
                tombs.add(r.object_id)
            elif r.kind is EventKind.REVIVED:
                delta.removed_tombstones.append(r.object_id)
                objects.add(r.object_id)
            elif r.kind in (EventKind.EXPIRED, EventKind.MERGED):  # an identity ends
                gone = r.object_id if r.kind is EventKind.EXPIRED else r.data["absorbed"]
                delta.removed_objects.append(gone)
                objects.update((gone, r.object_id))  # touched; only live ones are upserted
            elif r.object_id in state.objects:
                objects.add(r.object_id)
        else:
            objects.update(r.missed)
    delta.touched = sorted(objects | tombs)
    delta.objects = [state.objects[i] for i in sorted(objects) if i in state.objects]
    delta.tombstones = {i: state.tombstones[i] for i in sorted(tombs) if i in state.tombstones}
    delta.rejections = {k: state.rejections[k] for k in sorted(keys)}
    return delta


Derived = tuple[EventKind, int, str, dict[str, Any]]  # kind, object id, label, data


def _with_events(state: MemoryState, records: Sequence[Record],
                 items: Sequence[Derived]) -> list[Record]:
    """``records`` with events appended to their commit, numbered after its last record."""
    commit = records[0]
    seq = max(r.seq for r in records[1:] if isinstance(r, (Observation, Event))) + 1 \
        if len(records) > 1 else state.next_seq
    out = list(records)
    for kind, oid, label, data in items:
        out.append(Event(seq, commit.id, commit.t, kind, oid, label, data))
        seq += 1
    state.next_seq = max(state.next_seq, seq)
    return out


def _relation_events(state: MemoryState, records: Sequence[Record],
                     changes: Sequence[RelationChange]) -> list[Derived]:
    """RELATION events (already reflected in the state: apply ignores them). An object this
    commit ended (forgotten, expired, merged away) is named by the label its event gave."""
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


_SMALL_EMBEDDING = 128  # keyframes keep a sighting's embedding up to this width


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
        kept = tuple(Keyframe.from_dict(k) for k in state.keyframes.get(survivor.id, ()))
        for frame in sorted((Keyframe.from_dict(k) for k in frames), key=lambda k: (k.t, k.seq)):
            if any(k.seq == frame.seq for k in kept):
                continue
            kept, archived, was_kept = offer_keyframe(kept, frame, n_kept)
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
    commit = records[0]
    out: list[Derived] = []
    offered: set[int] = set()
    for r in records:
        if not isinstance(r, Observation) or r.object_id is None or r.weight == 0.0:
            continue
        obj = state.objects.get(r.object_id)
        if obj is None or obj.id in offered:
            continue
        offered.add(obj.id)
        frames = state.keyframes.get(obj.id, ())
        if not could_join_keyframes(camera, obj.center, frames, n_kept):
            continue  # not even a perfect view from here would be kept: skip the image work
        kept = tuple(Keyframe.from_dict(k) for k in frames)
        feature = r.feature
        small = feature is not None and feature.shape[0] <= _SMALL_EMBEDDING
        candidate = make_candidate(
            camera, obj.center, obj.size, kept, t=commit.t, commit=commit.id, seq=r.seq,
            intrinsics=camera.intrinsics, image=camera.image,
            embedding=[float(x) for x in feature] if small else None)  # type: ignore[union-attr]
        if candidate.coverage == 0.0:  # the frame does not cover the object: no view of it
            continue
        new_kept, archived, was_kept = offer_keyframe(kept, candidate, n_kept)
        if was_kept:
            out.append((EventKind.KEYFRAME, obj.id, obj.label, {
                "kept": [k.to_dict() for k in new_kept],
                "archived": None if archived is None else archived.to_dict()}))
    return out


def _check_prior_entry(i: int, entry: Any, scene: str) -> dict[str, Any]:
    """One prior-map entry, validated and in its stored form."""
    if not isinstance(entry, dict):
        raise InvalidInput(f"prior entry {i} must be a dict with label, center and size")
    unknown = sorted(set(entry) - {"label", "center", "size", "orientation", "attributes",
                                   "confidence", "id"})
    if unknown:
        raise InvalidInput(f"prior entry {i} has unknown field(s): {', '.join(unknown)}")
    orientation = entry.get("orientation")
    prior_id = entry.get("id")
    if prior_id is not None and not isinstance(prior_id, (str, int)):
        raise InvalidInput(f"prior entry {i}: id must be a string or an integer")
    return {
        "label": check_label(entry.get("label")),
        "center": list(check_coordinate_domain(entry.get("center"), f"prior entry {i} center")),
        "size": list(check_size_domain(entry.get("size"), f"prior entry {i} size")),
        "orientation": None if orientation is None else list(
            check_quaternion(orientation, f"prior entry {i} orientation")),
        "attributes": check_attributes(entry.get("attributes") or {}),
        "confidence": check_unit_interval(entry.get("confidence", 1.0),
                                          f"prior entry {i} confidence"),
        "source": f"prior:{scene}",
        "prior_id": prior_id,
    }


def _check_scope_held(store: Store, scope: str) -> None:
    """A read-only open names a scope the store holds (any scope of an empty store)."""
    scopes = store.scopes()
    if scopes and scope not in scopes:
        error = ScopeError(f"{store.path} holds no scope {scope!r}; its scopes: "
                           f"{', '.join(repr(s) for s in scopes)}")
        error.scopes = scopes  # type: ignore[attr-defined]
        raise error


def _check_encoder(encoder: Any) -> Encoder | None:
    if encoder is None:
        return None
    if encoder == "minilm":
        from locimem.query.encoder import MiniLMEncoder

        return MiniLMEncoder()
    if isinstance(encoder, str) or not hasattr(encoder, "encode") or not hasattr(encoder, "dim"):
        raise InvalidInput("encoder must be an Encoder (with dim and encode()), 'minilm' or None")
    return encoder


def _check_vector_index(name: Any) -> Callable[[int], VectorIndex]:
    if name == "exact":
        return ExactIndex
    if name == "usearch":
        from locimem.index.vectors import UsearchIndex

        return UsearchIndex
    raise InvalidInput(f"vector_index must be 'exact' or 'usearch', got {name!r}")
