"""The shared base of every reader: one state of one scope, seen up to one commit.

Objects that are forgotten *now* (they have a tombstone) are hidden from every read path,
including as-of views of times before the forget; the audit trail still says who forgot what,
when and why. The questions are grouped by concern in :mod:`~locimem.query.objects`,
:mod:`~locimem.query.rooms`, :mod:`~locimem.query.history` and :mod:`~locimem.query.prior`;
:class:`~locimem.query.reader.MemoryReader` is all of them.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Any

from locimem.check import (
    check_label,
    check_object_id,
)
from locimem.config import TrackerConfig
from locimem.errors import InvalidInput, NotFound, StoreClosed
from locimem.index.vectors import VectorIndex
from locimem.language.encoder import Encoder
from locimem.language.hedge import hedged_sentence
from locimem.model import (
    EventKind,
    ObjectState,
    ObjectStatus,
    RecallResult,
    TrackedObject,
)
from locimem.query.recall import label_matches, name_words
from locimem.query.semantic import SemanticIndex
from locimem.query.views import status_of, view
from locimem.scene.levels import OBJECT_LEVELS, level_of
from locimem.store.base import Store
from locimem.tracker.load import load_state
from locimem.tracker.state import MemoryState

COMMIT_KINDS = ("scan", "correction", "forget", "maintenance", "scene", "prior", "review",
                "consolidate")
LIVE_STATUSES = ("confirmed", "tentative", "doubted")



class ReaderBase:
    """One state of one scope, its store and config, and the helpers every group of
    questions shares (visibility, object lookup, filters, loading a past state)."""

    _store: Store | None
    _scope: str
    _config: TrackerConfig
    _state: MemoryState
    _until_commit: int | None = None  # as-of views read the record only up to here
    _owner: ReaderBase | None = None  # as-of views: the live memory they look back from
    _encoder: Encoder | None = None
    _vector_index: Callable[[int], VectorIndex] | None = None
    _semantic_index: SemanticIndex | None = None  # built on first use

    def __init__(self, store: Store, scope: str, config: TrackerConfig, state: MemoryState,
                 until_commit: int | None = None, owner: ReaderBase | None = None) -> None:
        self._store = store
        self._scope = scope
        self._config = config
        self._state = state
        self._until_commit = until_commit
        self._owner = owner
        if owner is not None:
            self._encoder, self._vector_index = owner._encoder, owner._vector_index

    @property
    def scope(self) -> str:
        return self._scope

    @property
    def config(self) -> TrackerConfig:
        return self._config

    @property
    def now(self) -> float | None:
        """Time of the latest scan this reader sees (None before the first)."""
        return self._state.now

    @property
    def store(self) -> Store:
        if self._owner is not None:  # a view lives as long as the memory it came from
            return self._owner.store
        if self._store is None:
            raise StoreClosed("this memory is closed; open it again with ObjectMemory.open()")
        return self._store

    def snapshot(self) -> dict[str, Any]:
        """A plain, comparable picture of the state (indexes excluded). An as-of view leaves
        out what has been forgotten since, like every other read."""
        self.store  # noqa: B018 - raises if closed
        snap = self._state.snapshot()
        if self._owner is not None:
            hidden = self._hidden()
            snap["objects"] = {k: v for k, v in snap["objects"].items() if k not in hidden}
        return snap

    # -- objects ------------------------------------------------------------------------------
    def _visible(self) -> Iterable[ObjectState]:
        hidden = self._hidden()
        objects = self._state.objects
        return (objects[oid] for oid in sorted(objects) if oid not in hidden)

    def _room(self, name: Any) -> str:
        """``name`` checked as a room of this state's map (InvalidInput, NotFound)."""
        if not isinstance(name, str):
            raise InvalidInput(f"room must be a string, got {type(name).__name__}")
        name = check_label(name, "room name")  # rooms are named like labels: lower-case
        if name not in self._state.scene.rooms.names():
            known = ", ".join(self._state.scene.rooms.names()) or "none defined"
            raise NotFound(f"no room {name!r} (rooms: {known})")
        return name

    def _room_of(self, obj: ObjectState) -> str | None:
        """The room whose footprint holds ``obj`` (None without rooms or outside them)."""
        rooms = self._state.scene.rooms
        if not rooms.names():
            return None
        hit = rooms.assign(obj.center, obj.size)
        return None if hit is None else hit.room

    def _hidden(self) -> dict[int, Any]:
        """Ids to hide: whatever is forgotten *now*, in the live memory."""
        if self._owner is not None:
            return self._owner._hidden()
        return self._state.tombstones

    def hidden_ids(self) -> set[int]:
        """The ids every read hides: objects forgotten *now* (an as-of view hides what the
        live memory has forgotten since, too)."""
        return set(self._hidden())

    @property
    def state(self) -> MemoryState:
        """The state this reader reads — the tracker's plain data, for tools that need more
        than the questions (exports, visualisations, benchmarks). Read it, never change it:
        only the commit path changes a state."""
        self.store  # noqa: B018 - raises if closed
        return self._state

    @property
    def until_commit(self) -> int | None:
        """The last commit an as-of view reads (None: the live memory, every commit)."""
        return self._until_commit

    def _view(self, obj: ObjectState) -> TrackedObject:
        return view(obj, self._state.now or 0.0, self._config)

    def _object(self, object_id: int) -> ObjectState:
        self.store  # noqa: B018
        oid = check_object_id(object_id, "object_id")
        obj = self._state.objects.get(oid)
        if obj is None or oid in self._hidden():
            if obj is None and oid not in self._hidden():
                merged = self.store.merged_into(self._scope, oid, until_commit=self._until_commit)
                if merged is not None and merged in self._state.objects:
                    raise NotFound(f"object {oid} was merged into #{merged} (a duplicate of "
                                   f"it); use id {merged}")
            raise NotFound(f"no object {oid} in scope {self._scope!r}")
        return obj

    def _filter(self, label: str | None, status: Any, level: str | None = None,
                room: str | None = None) -> Callable[[ObjectState], bool]:
        """A predicate for the spatial and temporal queries' common filters."""
        wanted = check_statuses(status) if status is not None else None
        if level is not None and level not in OBJECT_LEVELS:
            raise InvalidInput(f"level must be one of {', '.join(OBJECT_LEVELS)}, got {level!r}")
        if room is not None:
            room = self._room(room)
        words = None
        if label is not None:
            if not isinstance(label, str):
                raise InvalidInput(f"label must be a string, got {type(label).__name__}")
            words = name_words(label)
            if not words:
                raise InvalidInput(f"label must name something, got {label!r}")
        hidden = self._hidden()
        now, config = self._state.now or 0.0, self._config

        def accept(obj: ObjectState) -> bool:
            if obj.id in hidden:
                return False
            if words is not None and not label_matches_folded(words, obj.label):
                return False
            if wanted is not None and status_of(obj, now, config) not in wanted:
                return False
            if level is not None and level_of(obj) != level:
                return False
            return room is None or self._room_of(obj) == room

        return accept

    # -- loading a state ------------------------------------------------------------------------
    def _load_state(self, *, from_log: bool, until_commit: int | None = None) -> MemoryState:
        """This reader's scope, loaded from its store (:func:`~locimem.tracker.load.load_state`)."""
        return load_state(self.store, self._scope, self._config, from_log=from_log,
                          until_commit=until_commit)


@dataclass(frozen=True, slots=True)
class RoomInfo:
    """A room: its floor polygon (x, y; metres, map frame), z range, and linked rooms."""

    name: str
    polygon: tuple[tuple[float, float], ...]
    z_range: tuple[float, float] | None
    connected: tuple[str, ...]


@dataclass(frozen=True, slots=True)
class RelationInfo:
    """``subject relation object`` ("#4 on #2") with its confidence in (0, 1], holding
    ``since`` (the time the later of the two settled where it is; the RELATION events in the
    record date each change). ``source``: relations are derived by locimem from the two
    objects' boxes (``"geometry"``); who reported each object is in its own ``source``."""

    subject: int
    relation: str
    object: int
    confidence: float
    since: float
    source: str = "geometry"


@dataclass(frozen=True, slots=True)
class FindResult:
    """An object :meth:`MemoryReader.find` found, its score and how (text or embedding)."""

    object: TrackedObject
    score: float
    how: str


def relabelled(obj: ObjectState, label: str) -> ObjectState:
    out = obj.copy()
    out.label = label
    return out


def label_matches_folded(words: tuple[str, ...], label: str) -> bool:
    """Whole-word match, also trying the singular of a plural last word ("chairs")."""
    if label_matches(words, label):
        return True
    last = words[-1]
    return len(last) > 2 and last.endswith("s") and label_matches((*words[:-1], last[:-1]),
                                                                  label)


def recall_object(obj: ObjectState, reader: ReaderBase) -> RecallResult:
    """What ``reader`` would say of ``obj`` when asked for it: its hedged sentence and belief."""
    now = reader.now or 0.0
    status = status_of(obj, now, reader.config)
    return RecallResult(
        query=str(obj.id), found=True, text=hedged_sentence(obj, status, now),
        object_id=obj.id, label=obj.label, status=status, center=obj.center,
        last_seen=obj.last_seen,
        confidence=obj.confidence(now, reader.config.tau_s, reader.config.tau_unseen_s),
        lost_at=obj.lost_at,
    )


def check_enums(value: Any, enum: type[Any], name: str, normalise: Callable[[str], str]
                 ) -> list[Any] | None:
    """None, one member or name, or an iterable of them -> a list of members."""
    if value is None:
        return None
    items = [value] if isinstance(value, str) else value
    valid = ", ".join(m.value for m in enum)
    if not hasattr(items, "__iter__"):
        raise InvalidInput(f"{name} must be one of {valid}; got {value!r}")
    out = []
    for item in items:
        if not isinstance(item, str):
            raise InvalidInput(f"{name} must be one of {valid}; got {item!r}")
        try:
            out.append(enum(normalise(item)))
        except ValueError:
            raise InvalidInput(f"{name} must be one of {valid}; got {item!r}") from None
    return out


def check_statuses(status: Any) -> set[ObjectStatus] | None:
    found = check_enums(status, ObjectStatus, "status", str.lower)
    return None if found is None else set(found)


def check_kinds(kind: Any) -> list[str] | None:
    found = check_enums(kind, EventKind, "kind", str.upper)
    return None if found is None else [k.value for k in found]


def check_choice(value: Any, allowed: tuple[str, ...], name: str) -> set[str] | None:
    """None, one of ``allowed``, or several of them, as a set (None: no filter)."""
    if value is None:
        return None
    values = [value] if isinstance(value, str) else value
    if not hasattr(values, "__iter__"):
        raise InvalidInput(f"{name} must be one of {', '.join(allowed)} (or a list of them)")
    out = set()
    for v in values:
        if v not in allowed:
            raise InvalidInput(f"unknown {name} {v!r}; use one of {', '.join(allowed)}")
        out.add(v)
    return out
