"""``ObjectMemory``: the facade that composes the tracker, the store and the queries.

It opens a store, ingests scans (:meth:`ObjectMemory.observe`) and hands language-model
conveniences to :mod:`locimem.agent`; the other verbs are mixins beside it, one per concern
(:mod:`~locimem.memory.corrections`, :mod:`~locimem.memory.prior`,
:mod:`~locimem.memory.rooms`, :mod:`~locimem.memory.maintenance`), and every read is
:class:`~locimem.query.reader.MemoryReader`'s. Every mutation goes the same way: check the
input, let the tracker decide records, then :meth:`~locimem.memory.base.MemoryBase._commit`
completes the commit and appends it in one transaction. Opening a store rebuilds the state
before any new scan is accepted.
"""

from __future__ import annotations

import dataclasses
import logging
import math
import os
import sqlite3
import time
import zlib
from collections.abc import Callable, Iterable, Sequence
from typing import Any

from locimem.agent.answer import Answer
from locimem.agent.answer import answer as agent_answer
from locimem.agent.prompt import scene_prompt as agent_scene_prompt
from locimem.agent.tools import ToolRegistry
from locimem.agent.verbalizer import Verbalizer
from locimem.check import (
    check_scope,
    check_text,
    check_valid_time,
)
from locimem.config import TrackerConfig
from locimem.errors import InvalidInput, LocimemError, ScopeError
from locimem.index.vectors import ExactIndex, VectorIndex
from locimem.language.encoder import Encoder
from locimem.memory.corrections import Corrections
from locimem.memory.epochs import MapEpochs, sync_counters
from locimem.memory.maintenance import Maintenance
from locimem.memory.poses import PoseCorrections
from locimem.memory.prior import PriorMapWrites
from locimem.memory.rooms import RoomWrites
from locimem.model import (
    Camera,
    Detection,
    Event,
    ScanResult,
)
from locimem.perception import Box2D, Intrinsics, lift_frame
from locimem.store import open_store
from locimem.store.base import Store, is_postgres_url
from locimem.store.sqlite import MEMORY
from locimem.store.sqlite.open_check import corrupt
from locimem.tracker.decide import decide
from locimem.tracker.load import replay_stale_cache

# what reading a damaged record raises (a JSON column that is not JSON, a missing key, a
# column of the wrong type, a page SQLite cannot read): at open, a CorruptStore
_UNREADABLE = (sqlite3.DatabaseError, KeyError, ValueError, TypeError, IndexError,
               AttributeError, OverflowError, zlib.error, RecursionError)
logger = logging.getLogger("locimem")
_FUTURE_S = 86400.0  # a latest scan further ahead of the wall clock than this looks wrong
SCAN_WARNING = "scan at t=%s: %s"
"""How ``observe`` logs a scan's warnings (a caller that reports them itself may filter these
records out: their ``msg`` is this string)."""



class ObjectMemory(Corrections, PoseCorrections, MapEpochs, PriorMapWrites, RoomWrites,
                   Maintenance):
    """A persistent object memory for one scope of one store.

    Open it with :meth:`open`; use it as a context manager so it is always closed::

        with ObjectMemory.open("home.loci", scope="home") as mem:
            result = mem.observe(t=12.0, detections=[...])

    Not thread-safe: call it from one thread (or guard it with a lock).
    """

    # -- lifecycle ----------------------------------------------------------------------------
    def __enter__(self) -> ObjectMemory:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

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
        shared = is_postgres_url(path)
        store = open_store(path, read_only=read_only, durable=durable, check=check,
                           late_s=late_s)
        try:
            if not store.read_only and store.cache_stale():  # a migration left it to replay
                replay_stale_cache(store)
            if read_only:  # a reader of a scope the store does not hold would see nothing
                _check_scope_held(store, scope)
            # a scan may trail another writer's commit by the store's late_s (SQLite: 0)
            return cls(store, scope, config, clock, text_encoder, make_index, shared=shared,
                       late_s=store.late_s)
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
        self._writable("observe", catch_up=False)  # (the turn catches up)
        t = check_valid_time(t)
        source = check_text(source, "source")
        if map_epoch is not None:
            return self._observe_in_epoch(t, detections, camera, source, map_epoch)
        if self.__dict__.get("_provisional"):  # an epoch's own scope took ids meanwhile
            sync_counters(self)
        return self._scan(t, detections, camera, source)

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
        assignments: list[int | None] = [None] * len(boxes)
        rejected = {box: f"not lifted: {why}" for box, why in lifted.skipped}
        for i, box in enumerate(lifted.indices):
            assignments[box] = result.assignments[i]
            if i in result.rejected:
                rejected[box] = result.rejected[i]
        return dataclasses.replace(result, assignments=tuple(assignments),
                                   rejected=dict(sorted(rejected.items())))

    def _scan(self, t: float, detections: Iterable[Detection], camera: Camera | None,
              source: str) -> ScanResult:
        """One scan in the memory's frame (checked time and source)."""
        # the scope's write lock, caught up on other writers' commits: the checks and the
        # decision see every commit before this one
        # (a failed turn — a refused write, a lost connection — puts back the store's state)
        with self._turn():
            dets = self._check_scan(t, detections, camera, source)
            with self._all_or_nothing():  # decide refreshes the state's loss queue
                decision = decide(self._state, self._config, t, dets, camera,
                                  recorded_at=float(self._clock()), actor=source)
                records = self._commit(decision.records, camera)
        self._own_now[source] = max(self._own_now.get(source, t), t)
        self._note_embedding_width(dets)
        events = tuple(r for r in records if isinstance(r, Event))
        for warning in decision.warnings:
            logger.warning(SCAN_WARNING, t, warning)
        return ScanResult(commit=decision.records[0].id, t=t,  # type: ignore[union-attr]
                          assignments=decision.assignments, events=events,
                          rejected=decision.rejected, warnings=decision.warnings)

    def _check_scan(self, t: float, detections: Iterable[Detection],
                    camera: Camera | None, source: str) -> list[Detection]:
        now, own = self._state.now, self._own_now.get(source)
        # a scan may trail the latest commit by late_s, never this writer's own previous scan
        # of the same source
        limit = max(-math.inf if now is None else now - self._late_s,
                    -math.inf if own is None else own)
        if t < limit:
            stuck = self._stuck_in_future(t)
            if own is not None and t < own:  # behind this writer's own scan: never
                raise InvalidInput(f"t={t} is before the latest scan (t={now}); scans must "
                                   f"not go back in time{stuck}")
            need = _late_hint(now - t)
            late = (f" by more than late_s={self._late_s} s (the store's late-scan "
                    "tolerance)" if self._late_s else "")
            raise InvalidInput(
                f"t={t} is before the latest scan (t={now}){late}; scans must not go back in "
                f"time. If another robot or recording wrote it (clocks that disagree, or an "
                f"overlapping recording), raise the tolerance to at least {need} s: "
                f"ObjectMemory.open(..., late_s={need}) (--late-s {need}), or ?late_s={need} "
                f"in a PostgreSQL URL{stuck}")
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

    def _stuck_in_future(self, t: float) -> str:
        """When the scope's latest scan is more than a day ahead of the wall clock and ``t``
        is not: how to take the scope back to before the scan a wrong clock wrote."""
        now, wall = self._state.now, float(self._clock())
        if now is None or now <= wall + _FUTURE_S or t > wall + _FUTURE_S:
            return ""
        good = self.store.last_commit_at(self._scope, t=wall + _FUTURE_S)
        where = f"--until-commit {good}" if good else "--until-commit N"
        return (f". The latest scan (t={now}) is {(now - wall) / 86400:,.0f} days ahead of "
                "this machine's clock: if a wrong clock wrote it, start a store from the scope "
                f"as it was before it: locimem export STORE DIR --scope {self._scope} {where} "
                f"(the last commit at a time up to a day from now), then locimem import DIR "
                "NEW_STORE")

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


def _late_hint(behind_s: float) -> str:
    """A tolerance that would take a scan ``behind_s`` late, rounded up to read well."""
    return f"{math.ceil(behind_s):g}" if behind_s >= 1 else f"{math.ceil(behind_s * 10) / 10:g}"


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
