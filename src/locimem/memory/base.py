"""The live memory of one scope — its state, its store, the one commit path and the
all-or-nothing guard — and the base of the services that write through it.

:class:`~locimem.memory.facade.ObjectMemory` holds one :class:`LiveMemory` (which is also
the :class:`~locimem.query.reader.MemoryReader` its reads go to) and one :class:`Service`
per concern (scans, corrections, pose corrections, map epochs, the prior map, rooms,
maintenance). A service verb checks its input, asks the tracker to decide records (pure
functions of the state), and hands them to :meth:`LiveMemory._commit`, which completes the
commit (:func:`~locimem.tracker.commit.commit_records`) and appends it with the rows it
changed. Services are the live memory's friends: they use its underscored members (the
commit path, the raw state), which nothing outside this package touches.
"""

from __future__ import annotations

import contextlib
import functools
from collections.abc import Callable, Iterator, Sequence
from typing import Any, TypeVar, cast

from locimem.check import (
    check_text,
    check_valid_time,
)
from locimem.config import TrackerConfig
from locimem.errors import ConnectionLost, IntegrityError, InvalidInput, ReadOnly
from locimem.gcpause import keep_frozen, release_frozen
from locimem.index.vectors import VectorIndex
from locimem.language.encoder import Encoder
from locimem.model import (
    Camera,
    Commit,
    Event,
    ObjectState,
    Record,
)
from locimem.query.reader import MemoryReader
from locimem.store.base import Store
from locimem.tracker.apply import apply
from locimem.tracker.associate import import_solver
from locimem.tracker.commit import Derived, commit_records
from locimem.tracker.decide import RecordWriter
from locimem.tracker.state import MemoryState

MAX_STORE_ID = 2**53
"""The largest id (commit, record seq, object) a store writes: exact as a JSON number, and
the largest an export may carry, so every export imports again. Ids are file-wide and count
up by one; only a store that imported a directory near the ceiling gets near it."""

_Verb = TypeVar("_Verb", bound=Callable[..., Any])


def in_turn(verb: _Verb) -> _Verb:
    """Run a write verb (a correction, a room, the prior map) in one write turn
    (:meth:`LiveMemory._turn`), as a scan runs: on a server store the scope's write lock is
    held while the memory catches up, decides and appends, so a busy writer of the scope
    cannot land a commit in between and the verb never ends in
    :class:`~locimem.errors.WriteConflict`. A read-only memory goes straight to the verb,
    which refuses with its own message."""
    @functools.wraps(verb)
    def run(self: Service, *args: Any, **kwargs: Any) -> Any:
        if self._live.store.read_only:
            return verb(self, *args, **kwargs)
        with self._live._turn():
            return verb(self, *args, **kwargs)
    return cast(_Verb, run)


class LiveMemory(MemoryReader):
    """The live memory of one scope: its reads (:class:`MemoryReader`), its store, its clock,
    and the commit path. Not used alone: see :class:`~locimem.memory.facade.ObjectMemory`."""

    _logged_width: int | None = None  # width of a rejected detection's logged embedding
    _logged_width_known = False  # (looked up once: see Scans._embedding_width)

    def __init__(self, store: Store, scope: str, config: TrackerConfig,
                 clock: Callable[[], float], encoder: Encoder | None = None,
                 vector_index: Callable[[int], VectorIndex] | None = None, *,
                 shared: bool = False, late_s: float = 0.0) -> None:
        super().__init__(store, scope, config, MemoryState())  # the live memory: no owner
        self._clock = clock
        self._encoder = encoder
        self._vector_index = vector_index
        self._shared = shared  # other writers may commit to this scope (a server store)
        self._late_s = late_s  # how far a scan may trail another writer's latest commit
        # this writer's latest scan of each source since it opened: a source's scans keep
        # their order; another's (a second camera, another robot) may trail by late_s
        self._own_now: dict[str, float] = {}
        self._in_turn = False
        self._stale = False  # a lost connection left the state to reload
        self._gc_frozen = False  # keep_gc_frozen was called: close releases it
        self._state = self._load_state(from_log=False)

    def keep_gc_frozen(self) -> None:
        """Freeze what the process holds, and keep its full collections freezing their
        survivors while this memory is open (:func:`locimem.gcpause.keep_frozen`;
        ``open(freeze_gc=True)`` calls it)."""
        if not self._gc_frozen:
            keep_frozen()
            self._gc_frozen = True

    def close(self) -> None:
        """Close the store and release the writer lock. Safe to call twice."""
        if self._gc_frozen:
            release_frozen()
            self._gc_frozen = False
        if self._store is not None:
            self._store.close()
            self._store = None

    def __repr__(self) -> str:
        where = "closed" if self._store is None else self._store.path
        return f"ObjectMemory({where!r}, scope={self._scope!r})"

    @property
    def read_only(self) -> bool:
        return self.store.read_only

    def warm(self) -> None:
        """Build now what the first scan or ``find`` would build on first need: the state's
        indexes, the relation index and its candidate grid, the assignment solver's import
        and, with an encoder, the index ``find`` searches (its label embeddings: the
        encoder's first call is made here too)."""
        state = self._state
        state.ensure_indexes()
        state.scene.warm()
        import_solver()  # the modules a scan may need
        if self._encoder is not None:
            self.semantic_index()

    def sibling(self, scope: str) -> LiveMemory:
        """The live memory of another scope of the same store, opened as this one was (a
        provisional map epoch's own scope)."""
        return LiveMemory(self.store, scope, self._config, self._clock, self._encoder,
                          self._vector_index, shared=self._shared, late_s=self._late_s)

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
        was (or, if its append had already committed, exactly as the store now says). Inside
        a write turn the state is put back when the turn ends, after its transaction rolled
        back: a transaction the server refused a write in can be read no further."""
        try:
            yield
        except BaseException:
            if self._in_turn:  # the turn's transaction is aborted: reload once it rolled back
                self._stale = True
            else:
                self._restore()
            raise

    def _restore(self) -> None:
        """Reload the live state from the store (its cache of the last committed state)."""
        self._semantic_index = None
        try:
            self._state = self._load_state(from_log=False)
            self._stale = False
        except ConnectionLost:  # the server is out of reach: reload when it is back
            self._stale = True
            raise
        except BaseException:  # the store cannot be read back: refuse further use
            self.close()
            raise

    # -- many writers, one scope ----------------------------------------------------------------
    @contextlib.contextmanager
    def _turn(self) -> Iterator[None]:
        """This writer's turn at its scope: hold the scope's write lock
        (:meth:`Store.write_turn`) with the state caught up on every commit other writers
        landed before it; decide and append inside, and it all commits when the turn ends.
        Reentrant. On SQLite the lock is the file's single writer, and there is nothing to
        catch up on."""
        if self._in_turn:
            yield
            return
        self._in_turn = True
        try:
            with self.store.write_turn(self._scope):
                if self._shared or self._stale:
                    self._catch_up()
                yield
        except BaseException as exc:
            self._in_turn = False
            if isinstance(exc, ConnectionLost):  # the commit itself may have failed
                self._stale = True
            if self._stale:  # put back what the store holds, on a new connection if need be
                with contextlib.suppress(ConnectionLost):  # (still stale: the next call)
                    self._restore()
            raise
        finally:
            self._in_turn = False

    def refresh(self) -> int:
        """Catch up on the commits other writers (robots, processes) landed in this scope
        since this memory last looked, replaying them through the same ``apply`` — how a
        reader stays current without reopening (poll it, e.g. once a second). Returns how
        many commits it applied. A writer does the same, under the scope's lock, before each
        scan."""
        return self._catch_up()

    def _catch_up(self) -> int:
        store, state = self.store, self._state
        if self._stale:  # a connection dropped mid-write: start again from the store
            self._restore()
            return 0
        known = state.next_commit - 1  # every commit of the scope up to it is applied
        if store.head(self._scope) <= known:
            return 0
        lost_after, n = self._config.lost_after_s, 0
        with store.snapshot_read():
            for record in store.iter_log(self._scope, after_commit=known):
                if isinstance(record, Commit):
                    state.scene.drain()  # its RELATION events are in the log already
                    n += 1
                apply(state, record, lost_after)
        state.scene.drain()
        self._semantic_index = None  # rebuilt on the next find
        self._logged_width_known = False
        return n

    def _commit(self, records: Sequence[Record], camera: Camera | None = None
                ) -> Sequence[Record]:
        """Complete a decided commit (:func:`~locimem.tracker.commit.commit_records`: the
        state changes, and the relation, keyframe and prior-map events they imply) and append
        it with the rows it changed, in one transaction — all or nothing (see
        :meth:`_all_or_nothing`)."""
        with self._all_or_nothing():
            done = commit_records(self._state, self._config, records, camera)
            self._check_ids_left()
            self.store.append(self._scope, done.records, done.changes)
            if self._semantic_index is not None:
                self._semantic_index.sync(self._state, done.changes)
            return done.records

    def _check_ids_left(self) -> None:
        state = self._state
        used = max(state.next_seq, state.next_commit, state.next_object_id) - 1
        if used > MAX_STORE_ID:
            raise IntegrityError(
                f"this commit would use id {used}, past the largest a store writes "
                f"({MAX_STORE_ID} = 2**53, the largest an export can carry); nothing was "
                "written. The store took ids near that ceiling from an imported directory "
                "(ordinary writing takes centuries to get there) and cannot take more")

    def _writable(self, what: str, *, catch_up: bool = True) -> None:
        if self.store.read_only:
            raise ReadOnly(f"{what}() needs a writable memory; this one was opened read-only")
        if catch_up and (self._shared or self._stale) and not self._in_turn:
            # decide from a current state (a commit landing before the append still makes
            # this one a WriteConflict: the ids it was decided with are taken)
            self._catch_up()

    def _writer(self, kind: str, actor: str, reason: str | None,
                t: float | None = None) -> RecordWriter:
        """Records of a commit that is not a scan, at ``t`` (default: the latest scan's)."""
        state = self._state
        return RecordWriter(
            Commit(id=state.next_commit, kind=kind,
                   t=float(state.now or 0.0) if t is None else t,
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

    def _correction_args(self, what: str, object_id: int, actor: str, reason: str | None,
                         t: float | None) -> tuple[ObjectState, str, str | None, float, float]:
        self._writable(what)
        obj = self._object(object_id)
        actor = check_text(actor, "actor")
        reason = None if reason is None else check_text(reason, "reason", max_chars=1000)
        now = self._state.now if self._state.now is not None else 0.0
        when = now if t is None else check_valid_time(t)
        if when < now:
            raise InvalidInput(f"t={when} is before the latest commit (t={now}); "
                               "corrections are recorded in time order")
        return obj, actor, reason, when, float(self._clock())


class Service:
    """One concern's verbs (corrections, rooms, …) over the live memory they write through."""

    def __init__(self, live: LiveMemory) -> None:
        self._live = live
