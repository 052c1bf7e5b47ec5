"""``ObjectMemory``: the thin facade that composes the tracker, the store and the queries.

Every mutation goes the same way: the tracker *decides* records, :func:`apply` changes the live
state with them, and the store appends them — with the objects they touched — in one
transaction. Opening a store rebuilds the state before any new scan is accepted.
"""

from __future__ import annotations

import contextlib
import logging
import os
import sqlite3
import time
import zlib
from collections.abc import Callable, Iterable, Iterator, Sequence
from typing import Any

from locimem.agent.answer import Answer
from locimem.agent.answer import answer as agent_answer
from locimem.agent.prompt import scene_prompt as agent_scene_prompt
from locimem.agent.tools import ToolRegistry
from locimem.agent.verbalizer import Verbalizer
from locimem.check import (
    check_attributes,
    check_coordinate_domain,
    check_label,
    check_positive,
    check_scope,
    check_text,
    check_time,
)
from locimem.config import TrackerConfig
from locimem.errors import InvalidInput, LocimemError, ReadOnly
from locimem.index.vectors import ExactIndex, VectorIndex
from locimem.model import (
    Camera,
    Commit,
    CompactionReport,
    Detection,
    Event,
    EventKind,
    ObjectState,
    Record,
    ScanResult,
)
from locimem.query.encoder import Encoder
from locimem.query.reader import MemoryReader
from locimem.scene.rooms import Room, RoomMap
from locimem.store.base import Store
from locimem.store.open_check import corrupt
from locimem.store.sqlite import MEMORY, SQLiteStore
from locimem.tracker.apply import apply
from locimem.tracker.commit import Derived, commit_records
from locimem.tracker.decide import RecordWriter, decide
from locimem.tracker.deltas import OPEN as OPEN_DELTA
from locimem.tracker.deltas import reviewed as reviewed_delta
from locimem.tracker.governance import (
    decide_attributes,
    decide_forget,
    decide_move,
    decide_relabel,
)
from locimem.tracker.prior import check_prior_entry, consolidation, prior_events
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
        """Complete a decided commit (:func:`~locimem.tracker.commit.commit_records`: the
        state changes, and the relation, keyframe and prior-map events they imply) and append
        it with the rows it changed, in one transaction — all or nothing (see
        :meth:`_all_or_nothing`)."""
        with self._all_or_nothing():
            done = commit_records(self._state, self._config, records, camera)
            self.store.append(self._scope, done.records, done.changes)
            if self._semantic_index is not None:
                self._semantic_index.sync(self._state, done.changes)
            return done.records

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


    # -- agents: conveniences over locimem.agent (which also takes an as-of view) ----------
    def tools(self, allow_writes: bool = False) -> ToolRegistry:
        """A :class:`~locimem.agent.tools.ToolRegistry` for a function-calling language model:
        ``.schemas(style="openai" | "anthropic")`` and ``.call(name, arguments)``. Write tools
        (correct a label, forget) only with ``allow_writes=True``, which a read-only memory
        refuses with :class:`ReadOnly` (as does an as-of view: ``ToolRegistry(mem.as_of(t))``
        serves the past read-only)."""
        return ToolRegistry(self, allow_writes=allow_writes)

    def scene_prompt(self, budget_tokens: int | None = None, focus: Any = None,
                     format: str = "text") -> str:
        """The scene as a compact, sanitised tree for a language model, within
        ``budget_tokens``, optionally focused on some object ids; ``format`` is ``"text"`` (a
        fenced untrusted-data block) or ``"json"`` (see :mod:`locimem.agent.prompt`)."""
        return agent_scene_prompt(self, budget_tokens=budget_tokens, focus=focus, format=format)

    def answer(self, question: str, verbalizer: Verbalizer | None = None) -> Answer:
        """Answer ``question`` in words (an :class:`~locimem.agent.answer.Answer`): routed by
        :meth:`query`, worded by ``verbalizer`` (default: the deterministic offline one) from
        a budgeted, focused, sanitised prompt; cites object ids, hedged by trust state."""
        return agent_answer(self, question, verbalizer)

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
        checked = [check_prior_entry(i, e, scene) for i, e in enumerate(entries)]
        if not checked:
            raise InvalidInput("the prior map holds no entries")
        ids, items = prior_events(self._state, checked)
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
        applied, items = consolidation(self._state, actor, reason)
        if items:
            self._meta_commit("consolidate", actor, reason, items)
        return applied

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
