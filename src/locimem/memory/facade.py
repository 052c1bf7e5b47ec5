"""``ObjectMemory``: the facade over the tracker, the store and the queries.

It is a thin object: it opens a store into one :class:`~locimem.memory.base.LiveMemory`
(the scope's state, its store and the one commit path, and the
:class:`~locimem.query.reader.MemoryReader` every read goes to) and hands each verb to the
service of its concern — :mod:`~locimem.memory.scans`, :mod:`~locimem.memory.corrections`,
:mod:`~locimem.memory.poses`, :mod:`~locimem.memory.epochs`, :mod:`~locimem.memory.prior`,
:mod:`~locimem.memory.rooms`, :mod:`~locimem.memory.maintenance` — and the language-model
conveniences to :mod:`locimem.agent`. The members are one-line delegations (``_Via``),
so ``help(ObjectMemory.relabel)`` shows the service's own signature and text. Every mutation
goes the same way: check the input, let the tracker decide records, then
:meth:`~locimem.memory.base.LiveMemory._commit` completes the commit and appends it in one
transaction. Opening a store rebuilds the state before any new scan is accepted.

The state and the store are not on the facade's surface; the package's front ends (exports,
maps, benchmarks) reach the reader under a memory with :func:`reader_of`.
"""

from __future__ import annotations

import os
import sqlite3
import time
import zlib
from collections.abc import Callable, Iterable
from typing import Any, Concatenate, Generic, ParamSpec, TypeVar, overload

from locimem.agent.answer import Answer
from locimem.agent.answer import answer as agent_answer
from locimem.agent.prompt import scene_prompt as agent_scene_prompt
from locimem.agent.tools import ToolRegistry
from locimem.agent.verbalizer import Verbalizer
from locimem.check import check_int, check_scope, check_text, check_valid_time
from locimem.config import TrackerConfig
from locimem.errors import InvalidInput, LocimemError, ScopeError
from locimem.index.vectors import ExactIndex, VectorIndex
from locimem.language.encoder import Encoder
from locimem.memory.base import LiveMemory
from locimem.memory.corrections import Corrections
from locimem.memory.epochs import MapEpochs, sync_counters
from locimem.memory.maintenance import Maintenance
from locimem.memory.poses import PoseCorrections
from locimem.memory.prior import PriorMapWrites
from locimem.memory.rooms import RoomWrites
from locimem.memory.scans import SCAN_WARNING, Scans, by_box
from locimem.model import Camera, Detection, ScanResult
from locimem.perception import Box2D, Intrinsics, lift_frame
from locimem.query.reader import MemoryReader
from locimem.store import open_store
from locimem.store.base import Store, is_postgres_url
from locimem.store.sqlite import MEMORY
from locimem.store.sqlite.open_check import corrupt
from locimem.threads import limit_blas
from locimem.tracker.load import replay_stale_cache

__all__ = ["FREEZE_ABOVE", "SCAN_WARNING", "ObjectMemory", "Readable", "reader_of"]

FREEZE_ABOVE = 5_000
"""Objects a state must hold for ``ObjectMemory.open(freeze_gc=True)`` to freeze the garbage
collector's view of it (a smaller state's full collection costs little)."""

# what reading a damaged record raises (a JSON column that is not JSON, a missing key, a
# column of the wrong type, a page SQLite cannot read): at open, a CorruptStore
_UNREADABLE = (sqlite3.DatabaseError, KeyError, ValueError, TypeError, IndexError,
               AttributeError, OverflowError, zlib.error, RecursionError)

_P = ParamSpec("_P")
_R = TypeVar("_R")


class _Via(Generic[_P, _R]):
    """A facade member that is a service's method: ``relabel = _Via("_corrections",
    Corrections.relabel)`` makes ``mem.relabel`` the bound ``mem._corrections.relabel``
    (and ``ObjectMemory.relabel`` the service's function, for ``help``)."""

    def __init__(self, service: str, method: Callable[Concatenate[Any, _P], _R]) -> None:
        self._service, self._name = service, method.__name__
        self.__doc__, self.__wrapped__ = method.__doc__, method

    @overload
    def __get__(self, obj: None, owner: type[Any]) -> Callable[..., _R]: ...
    @overload
    def __get__(self, obj: ObjectMemory, owner: type[Any]) -> Callable[_P, _R]: ...
    def __get__(self, obj: ObjectMemory | None, owner: type[Any]) -> Callable[..., _R]:
        if obj is None:
            return self.__wrapped__
        return getattr(getattr(obj, self._service), self._name)


class ObjectMemory:
    """A persistent object memory for one scope of one store.

    Open it with :meth:`open`; use it as a context manager so it is always closed::

        with ObjectMemory.open("home.loci", scope="home") as mem:
            result = mem.observe(t=12.0, detections=[...])

    Not thread-safe: call it from one thread (or guard it with a lock).
    """

    def __init__(self, live: LiveMemory) -> None:
        """Not called directly: :meth:`open` a memory."""
        if not isinstance(live, LiveMemory):
            example = repr(os.fspath(live)) if isinstance(live, (str, os.PathLike)) else "path"
            raise InvalidInput(f"open a memory with ObjectMemory.open({example}, scope=...); "
                               f"ObjectMemory() is not called directly (got a "
                               f"{type(live).__name__})")
        self._live = live
        self._scans = Scans(live)
        self._corrections = Corrections(live)
        self._poses = PoseCorrections(live)
        self._epochs = MapEpochs(live, self._scans, self._poses.correct_poses)
        self._prior = PriorMapWrites(live)
        self._rooms = RoomWrites(live)
        self._maintenance = Maintenance(live)

    # -- lifecycle ----------------------------------------------------------------------------
    def __enter__(self) -> ObjectMemory:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def __repr__(self) -> str:
        return repr(self._live)

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
        late_s: float | None = None,
        threads: int | None = 1,
        warm: bool | None = None,
        freeze_gc: bool = True,
    ) -> ObjectMemory:
        """Open (or create) the store at ``path`` and rebuild the memory of ``scope``.

        Args:
            path: a store file (created if missing), ``":memory:"`` for a scratch memory, or
                a PostgreSQL URL, ``postgresql://USER@HOST:PORT/DB?schema=NAME`` (the
                ``postgres`` extra; the schema, default ``locimem``, is created if missing),
                which many writers — robots of one fleet — may open at once.
            scope: whose memory this is; a memory reads and writes only its own scope.
            config: tracker thresholds (defaults from the published design).
            read_only: open without the writer lock; every mutator raises :class:`ReadOnly`.
            durable: fsync every scan (survives power loss); False survives a killed process
                but may lose the last scans on power loss.
            clock: wall clock for *record time* only (audit); beliefs use scan times.
            encoder: a text :class:`~locimem.language.encoder.Encoder` for ``find`` by meaning,
                or ``"minilm"`` for the packaged offline MiniLM (the ``text`` extra).
            vector_index: ``"exact"`` (numpy) or ``"usearch"`` (approximate; the ``vectors``
                extra) for the label embeddings.
            check: how an existing file is checked before it is read (see
                :mod:`locimem.store.sqlite.open_check`): ``"quick"`` (SQLite's ``quick_check`` on
                files up to 64 MiB, the header and schema on larger ones), ``"header"``
                (header and schema only) or ``"off"``. (SQLite only.)
            late_s: how far (seconds) a scan may trail the latest scan *another* writer or
                source landed in the scope — the store's late-scan tolerance, shared by
                every writer and by ``validate``. None keeps the store's (a new SQLite file:
                0, a new PostgreSQL schema: 1 s, or the URL's ``?late_s=``); a number sets a
                new store's and raises an existing one's (never lowers it: scans it holds
                may trail by that much). Raise it for robots whose clocks disagree by more,
                or to ingest a recording that overlaps another source's.
            threads: the threads the process's BLAS library may use for matrix products
                (:func:`locimem.threads.limit_blas`; a setting of the process, not of this
                memory). 1, the default, keeps a scan on one core of the robot's computer;
                None leaves the library as it is.
            warm: build now what the first scan and the first ``find`` would otherwise build
                (the spatial and label indexes, the relations, and with an encoder the
                label embeddings ``find`` searches), so they cost what the next ones do.
                None, the default: yes for a writable memory, no for a read-only one. A
                one-shot write (the command line's corrections) passes False.
            freeze_gc: once a state of ``FREEZE_ABOVE`` (5,000) objects or more is built, move
                everything the process holds into the garbage collector's permanent
                generation (``gc.freeze()``), so its full collections no longer walk the
                state: at 100,000 objects each took 0.2-0.3 s, a stalled scan every few
                seconds. While the memory is open, each full collection also freezes what
                it left alive, and everything is walked again once the frozen heap has
                doubled (:func:`locimem.gcpause.keep_frozen`): the scans' replaced boxes and
                frames no longer age into ever longer full collections. Process-wide;
                cyclic garbage among frozen objects waits for that doubling, and after the
                memory closes is never collected (a process that opens and closes many
                large memories should pass False).

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
        if threads is not None:
            threads = check_int(threads, "threads", lo=1, hi=1024)
        if warm is not None and not isinstance(warm, bool):
            raise InvalidInput(f"warm must be True, False or None, got {warm!r}")
        if not isinstance(freeze_gc, bool):
            raise InvalidInput(f"freeze_gc must be True or False, got {freeze_gc!r}")
        shared = is_postgres_url(path)
        store = open_store(path, read_only=read_only, durable=durable, check=check,
                           late_s=late_s)
        try:
            if not store.read_only and store.cache_stale():  # a migration left it to replay
                replay_stale_cache(store)
            if read_only:  # a reader of a scope the store does not hold would see nothing
                _check_scope_held(store, scope)
            # a scan may trail another writer's commit by the store's late_s (SQLite: 0)
            live = LiveMemory(store, scope, config, clock, text_encoder, make_index,
                              shared=shared, late_s=store.late_s)
            if threads is not None:
                limit_blas(threads)
            if warm if warm is not None else not store.read_only:
                live.warm()
            if freeze_gc and len(live._state.objects) >= FREEZE_ABOVE:
                live.keep_gc_frozen()
            return cls(live)
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

    def observe(self, t: float, detections: Iterable[Detection] = (),
                camera: Camera | None = None, *, source: str = "tracker",
                map_epoch: str | None = None) -> ScanResult:
        """Ingest one scan: what perception saw at time ``t`` (seconds).

        Scans must come in time order (equal times are allowed). A scan with no detections
        still advances time, which is how belief in unseen objects decays. The whole scan is
        validated first and committed atomically: a rejected scan writes nothing.

        ``source`` names the sensor or pipeline that produced the scan ("head-cam/yolo"): it
        is the scan's actor in the audit, and the ``source`` of every object it creates.

        ``map_epoch`` names the SLAM session whose map frame the scan's positions are in
        ("2026-12-04-boot"; see :meth:`map_epochs`). None — and the first epoch a scope sees
        — is the memory's own frame. A new epoch is provisional: its scans are tracked apart
        until the memory finds the transform into its frame (or one is given with
        :meth:`align_epoch`); then they join the memory, and later scans are transformed on
        the way in. (A provisional epoch's results name the ids of its own scope.)

        Returns:
            ScanResult with the object id given to each detection (None where the detection
            was rejected — see ``rejected`` for the reason) and the events the scan produced.
        """
        self._live._writable("observe", catch_up=False)  # (the turn catches up)
        t = check_valid_time(t)
        source = check_text(source, "source")
        if map_epoch is not None:
            return self._epochs.observe(t, detections, camera, source, map_epoch)
        if self._epochs.provisional:  # an epoch's own scope took ids meanwhile
            sync_counters(self._live)
        return self._scans.scan(t, detections, camera, source)

    def observe_frame(self, t: float, boxes: Iterable[Box2D], depth: Any,
                      intrinsics: Intrinsics, position: Any, quaternion: Any, *,
                      frame: str = "optical", depth_intrinsics: Intrinsics | None = None,
                      depth_scale: float = 1.0, range_m: tuple[float, float] = (0.1, 10.0),
                      source: str = "tracker", map_epoch: str | None = None) -> ScanResult:
        """Ingest one camera frame: a 2D detector's boxes (and masks) lifted with the depth
        image (:func:`locimem.perception.lift_frame`, whose arguments these are), then
        :meth:`observe`-d at ``t`` with the frame's camera, so that what the camera looked
        at and did not see counts too.

        The result is indexed by box: ``assignments[i]`` is the object box ``i`` became
        (None if it did not), and a box that could not be lifted is ``rejected`` with
        ``"not lifted: "`` and the reason. Bad input (a box outside the image, a mask of
        another size, a bad pose) raises :class:`~locimem.errors.InvalidInput` and writes
        nothing.
        """
        boxes = list(boxes)
        lifted = lift_frame(boxes, depth, intrinsics, position, quaternion, frame=frame,
                            depth_intrinsics=depth_intrinsics, depth_scale=depth_scale,
                            range_m=range_m)
        result = self.observe(t, lifted.detections, lifted.camera, source=source,
                              map_epoch=map_epoch)
        return by_box(len(boxes), lifted, result)

    # -- agents: conveniences over locimem.agent (which also takes an as-of view) ----------
    def tools(self, allow_writes: bool = False) -> ToolRegistry:
        """A :class:`~locimem.agent.tools.ToolRegistry` for a function-calling language model:
        ``.schemas(style="openai" | "anthropic")`` and ``.call(name, arguments)``. Write tools
        (correct a label, forget) only with ``allow_writes=True``, which a read-only memory
        refuses with :class:`ReadOnly` (as does an as-of view: ``ToolRegistry(mem.as_of(t))``
        serves the past read-only)."""
        return ToolRegistry(self._live, allow_writes=allow_writes, writer=self)

    def scene_prompt(self, budget_tokens: int | None = None, focus: Any = None,
                     format: str = "text") -> str:
        """The scene as a compact, sanitised tree for a language model, within
        ``budget_tokens``, optionally focused on some object ids; ``format`` is ``"text"`` (a
        fenced untrusted-data block) or ``"json"`` (see :mod:`locimem.agent.prompt`)."""
        return agent_scene_prompt(self._live, budget_tokens=budget_tokens, focus=focus,
                                  format=format)

    def answer(self, question: str, verbalizer: Verbalizer | None = None) -> Answer:
        """Answer ``question`` in words (an :class:`~locimem.agent.answer.Answer`): routed by
        :meth:`query`, worded by ``verbalizer`` (default: the deterministic offline one) from
        a budgeted, focused, sanitised prompt; cites object ids, hedged by trust state."""
        return agent_answer(self._live, question, verbalizer)


    # -- the lifecycle and the reads: the live memory's (locimem.query) --------------------
    close = _Via("_live", LiveMemory.close)
    refresh = _Via("_live", LiveMemory.refresh)
    rebuild_from_log = _Via("_live", LiveMemory.rebuild_from_log)

    @property
    def scope(self) -> str:
        """The scope this memory reads and writes."""
        return self._live.scope

    @property
    def config(self) -> TrackerConfig:
        """The tracker's settings this memory decides with."""
        return self._live.config

    @property
    def now(self) -> float | None:
        """Time of the latest scan (None before the first)."""
        return self._live.now

    @property
    def read_only(self) -> bool:
        """Whether this memory was opened read-only (every write verb raises ReadOnly)."""
        return self._live.read_only

    tracked = _Via("_live", MemoryReader.tracked)
    objects = _Via("_live", MemoryReader.objects)
    get = _Via("_live", MemoryReader.get)
    recall = _Via("_live", MemoryReader.recall)
    near = _Via("_live", MemoryReader.near)
    nearest = _Via("_live", MemoryReader.nearest)
    within = _Via("_live", MemoryReader.within)
    recent = _Via("_live", MemoryReader.recent)
    stale = _Via("_live", MemoryReader.stale)
    last_seen = _Via("_live", MemoryReader.last_seen)
    find = _Via("_live", MemoryReader.find)
    query = _Via("_live", MemoryReader.query)
    where_was = _Via("_live", MemoryReader.where_was)
    as_of = _Via("_live", MemoryReader.as_of)
    snapshot = _Via("_live", MemoryReader.snapshot)
    hidden_ids = _Via("_live", MemoryReader.hidden_ids)
    history = _Via("_live", MemoryReader.history)
    iter_history = _Via("_live", MemoryReader.iter_history)
    events = _Via("_live", MemoryReader.events)
    iter_events = _Via("_live", MemoryReader.iter_events)
    changes_since = _Via("_live", MemoryReader.changes_since)
    rejected = _Via("_live", MemoryReader.rejected)
    rejections = _Via("_live", MemoryReader.rejections)
    tombstones = _Via("_live", MemoryReader.tombstones)
    audit = _Via("_live", MemoryReader.audit)
    iter_audit = _Via("_live", MemoryReader.iter_audit)
    rooms = _Via("_live", MemoryReader.rooms)
    path_rooms = _Via("_live", MemoryReader.path_rooms)
    room_of = _Via("_live", MemoryReader.room_of)
    level_of = _Via("_live", MemoryReader.level_of)
    room_contents = _Via("_live", MemoryReader.room_contents)
    relations = _Via("_live", MemoryReader.relations)
    related = _Via("_live", MemoryReader.related)
    anchors = _Via("_live", MemoryReader.anchors)
    describe = _Via("_live", MemoryReader.describe)
    prior_map = _Via("_live", MemoryReader.prior_map)
    deltas = _Via("_live", MemoryReader.deltas)
    delta = _Via("_live", MemoryReader.delta)
    keyframes = _Via("_live", MemoryReader.keyframes)
    archived_keyframes = _Via("_live", MemoryReader.archived_keyframes)

    # -- the writes, by concern -------------------------------------------------------------
    relabel = _Via("_corrections", Corrections.relabel)
    move = _Via("_corrections", Corrections.move)
    set_attributes = _Via("_corrections", Corrections.set_attributes)
    forget = _Via("_corrections", Corrections.forget)
    merge = _Via("_corrections", Corrections.merge)
    split = _Via("_corrections", Corrections.split)
    correct_poses = _Via("_poses", PoseCorrections.correct_poses)
    map_epochs = _Via("_epochs", MapEpochs.map_epochs)
    align_epoch = _Via("_epochs", MapEpochs.align_epoch)
    load_prior = _Via("_prior", PriorMapWrites.load_prior)
    confirm_delta = _Via("_prior", PriorMapWrites.confirm_delta)
    reject_delta = _Via("_prior", PriorMapWrites.reject_delta)
    consolidate = _Via("_prior", PriorMapWrites.consolidate)
    define_room = _Via("_rooms", RoomWrites.define_room)
    connect_rooms = _Via("_rooms", RoomWrites.connect_rooms)
    remove_room = _Via("_rooms", RoomWrites.remove_room)
    import_rooms = _Via("_rooms", RoomWrites.import_rooms)
    compact = _Via("_maintenance", Maintenance.compact)


Readable = ObjectMemory | MemoryReader
"""What the front ends read: a memory, or a reader (an ``as_of`` view)."""


def reader_of(memory: Any, what: str = "memory") -> MemoryReader:
    """The reader under ``memory``: an :class:`ObjectMemory`'s live reader (the state and
    the store the package's front ends read), or ``memory`` itself if it is a reader (an
    ``as_of`` view). Anything else raises :class:`~locimem.errors.InvalidInput` naming
    ``what``."""
    if isinstance(memory, ObjectMemory):
        return memory._live
    if isinstance(memory, MemoryReader):
        return memory
    raise InvalidInput(f"{what} must be an ObjectMemory (a MemoryReader), got "
                       f"{type(memory).__name__}")


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
        from locimem.language.encoder import MiniLMEncoder

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
