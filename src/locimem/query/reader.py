"""Every read of a memory, over one state: the live memory and its as-of views share this.

:class:`MemoryReader` is the questions of each concern together — objects and space
(:mod:`~locimem.query.objects`), rooms and relations (:mod:`~locimem.query.rooms`), time and
the record (:mod:`~locimem.query.history`), the prior map (:mod:`~locimem.query.prior`) — over
the shared :class:`~locimem.query.base.ReaderBase`, plus the reads that need a whole reader:
:meth:`MemoryReader.as_of` (another reader, at another time), ``where_was`` (a question put to
one) and ``query(text)``.

``query(text)`` routes a short question to the retriever that answers it. The router
(:mod:`locimem.language.router`) parses the phrase against the memory's own labels and room
names (whole words: a "table" question never matches "vegetable"); :func:`answer_query`
resolves anchors to objects, calls the retriever and words a one-line answer with the hedging
policy. Perception-derived text is sanitised before it is put in a sentence.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from locimem.check import check_object_id, check_time, check_vec
from locimem.errors import InvalidInput, NotFound
from locimem.language.hedge import sanitize, when
from locimem.language.router import Intent, IntentKind, Vocabulary, parse
from locimem.model import ObjectStatus, RecallResult, TrackedObject
from locimem.query.base import (
    COMMIT_KINDS,
    LIVE_STATUSES,
    FindResult,
    RelationInfo,
    RoomInfo,
    label_matches_folded,
    recall_object,
)
from locimem.query.history import HistoryQueries
from locimem.query.objects import ObjectQueries
from locimem.query.prior import PriorQueries
from locimem.query.recall import name_words
from locimem.query.rooms import RoomQueries
from locimem.query.temporal import ObjectChanges
from locimem.times import clock_time

__all__ = ["COMMIT_KINDS", "LIVE_STATUSES", "FindResult", "MemoryReader", "QueryResult",
           "RelationInfo", "RoomInfo", "answer_query", "label_matches_folded", "resolve_time"]


class MemoryReader(ObjectQueries, RoomQueries, HistoryQueries, PriorQueries):
    """Read-only questions over one state of one scope: the live memory
    (:class:`~locimem.ObjectMemory` is one) or an as-of view of it (:meth:`as_of`)."""

    def where_was(self, label_or_id: str | int, t: float) -> RecallResult:
        """Where something was at valid time ``t``: an object id, or a name as in
        :meth:`recall`, answered from the memory as it was then."""
        view_then = self.as_of(check_time(t, "t"))
        if isinstance(label_or_id, str):
            return view_then.recall(label_or_id)
        oid = check_object_id(label_or_id, "label_or_id")
        try:
            obj = view_then._object(oid)
        except NotFound:
            return RecallResult(query=str(oid), found=False,
                                text=f"I knew of no object #{oid} at t={t}.")
        return recall_object(obj, view_then)

    def as_of(self, t: float | None = None, *, recorded: float | None = None) -> MemoryReader:
        """The memory as it was: a read-only view of the state at valid (world) time ``t`` —
        after every commit with time <= t — or, with ``recorded``, of what the store held at
        record (wall-clock) time ``recorded``. Every read method works on the view; it reads the
        record only up to that point. Objects forgotten since stay hidden.

        >>> from locimem import Detection, ObjectMemory
        >>> with ObjectMemory.open() as mem:
        ...     _ = mem.observe(0.0, [Detection("cup", 0.9, (0.4, 0.1, 0.9), (0.1, 0.1, 0.1))])
        ...     _ = mem.observe(5.0, [Detection("cup", 0.9, (1.0, 0.5, 0.9), (0.1, 0.1, 0.1))])
        ...     [round(x, 1) for x in mem.as_of(1.0).get(1).center]
        [0.4, 0.1, 0.9]
        """
        if (t is None) == (recorded is None):
            raise InvalidInput("as_of() needs exactly one of t (valid time) or recorded=")
        if t is not None:
            until = self.store.last_commit_at(self._scope, t=check_time(t, "t"))
        else:
            until = self.store.last_commit_at(self._scope,
                                              recorded=check_time(recorded, "recorded"))
        until = until or 0
        if self._until_commit is not None:
            until = min(until, self._until_commit)
        state = self._load_state(from_log=True, until_commit=until)
        return MemoryReader(self.store, self._scope, self._config, state, until_commit=until,
                            owner=self._owner or self)

    def query(self, text: str, *, here: Any = None) -> QueryResult:
        """Answer a short question by routing it to the right retriever: "what's on the kitchen
        table", "cups near the sink", "what changed since 10:00", "where is my phone", "what's
        in the kitchen", "how do I get from the bedroom to the kitchen", "the five nearest
        chairs" (with ``here=(x, y, z)``). Anchors match whole words of the memory's labels and
        room names. Returns the objects (or changes, or path) and a one-line answer."""
        self.store  # noqa: B018
        return answer_query(self, text, here)


# -- query(text) ----------------------------------------------------------------------------------
LIST_LIMIT = 20  # objects named in an answer sentence (all are in ``objects``)
_STATUS_NOTE = {ObjectStatus.TENTATIVE: "unconfirmed", ObjectStatus.DOUBTED: "doubtful",
                ObjectStatus.LOST: "lost"}


@dataclass(frozen=True, slots=True)
class QueryResult:
    """What ``query(text)`` found: the parsed intent, the objects (or changes, or a room
    path) that answer it, and a one-line answer citing object ids."""

    intent: Intent
    text: str
    objects: tuple[TrackedObject, ...] = ()
    changes: tuple[ObjectChanges, ...] = ()
    path: tuple[str, ...] | None = None
    anchor: TrackedObject | None = None
    found: bool = True
    extra: dict[str, Any] = field(default_factory=dict)


def _name(obj: TrackedObject) -> str:
    note = _STATUS_NOTE.get(obj.status)
    return f"{sanitize(obj.label)} (#{obj.id}{', ' + note if note else ''})"


def _listing(objs: list[TrackedObject]) -> str:
    names = [_name(o) for o in objs[:LIST_LIMIT]]
    more = len(objs) - len(names)
    return ", ".join(names) + (f" and {more} more" if more > 0 else "")


def resolve_time(value: float, kind: str | None, now: float | None) -> float:
    """A parsed time as a scan time: ``ago`` counts back from ``now``; a ``clock`` time
    (seconds since midnight) is taken on the UTC day of ``now`` when scan times look like Unix
    time (the latest such moment not after ``now``), else as a raw scan time
    (:func:`locimem.times.clock_time`)."""
    if kind == "ago":
        return (now or 0.0) - value
    if kind == "clock":
        return clock_time(value, now)
    return value


def _anchor(reader: MemoryReader, label: str, room: str | None) -> TrackedObject | None:
    """The object a question is anchored on: the closest label first ("coffee table" before
    "table"), then furniture, then confirmed, then the most evidence, then the lowest id."""
    scores = reader.semantic_index().ids_for(label)
    found = [reader.get(oid) for oid in sorted(scores)]
    found = [o for o in found if o.status is not ObjectStatus.LOST]
    if room is not None:
        found = [o for o in found if reader.room_of(o.id) == room] or found
    if not found:
        return None
    return min(found, key=lambda o: (-scores[o.id], reader.level_of(o.id) != "furniture",
                                     o.status is not ObjectStatus.CONFIRMED,
                                     -o.n_detections, o.id))


def answer_query(reader: MemoryReader, text: str, here: Any = None) -> QueryResult:
    """Parse ``text`` and answer it from ``reader`` (``here``: the asker's position, for
    "near me" questions)."""
    labels = reader.semantic_index().labels()
    rooms = [r.name for r in reader.rooms()]
    intent = parse(text, vocabulary=Vocabulary(labels, rooms))
    kind = intent.kind
    now = reader.now

    if kind is IntentKind.RELATIONAL:
        anchor = _anchor(reader, intent.anchor or "", intent.room)
        what = f"{(intent.relation or '?').replace('_', ' ')} the {sanitize(intent.anchor or '?')}"
        if anchor is None:
            return QueryResult(intent, f"I know of no {sanitize(intent.anchor or '?')}.",
                               found=False)
        relation = intent.relation or "on"
        found = reader.related(anchor.id, relation)
        if relation == "under":  # what the anchor rests on is under it too
            found += [o for o in _holders(reader, anchor.id, "on") if o not in found]
        if intent.target:

            words = name_words(intent.target)
            found = [o for o in found if label_matches_folded(words, o.label)]
        head = f"{what.capitalize()} (#{anchor.id})"
        if not found:
            return QueryResult(intent, f"{head}: nothing that I know of.", anchor=anchor)
        return QueryResult(intent, f"{head}: {_listing(found)}.", tuple(found), anchor=anchor)

    if kind is IntentKind.INVERSE:
        return _inverse(reader, intent)

    if kind is IntentKind.ROOM:
        room = intent.room or intent.anchor or ""
        found = reader.room_contents(room, label=intent.target)
        if not found:
            return QueryResult(intent, f"In the {sanitize(room)}: nothing that I know of.")
        return QueryResult(intent, f"In the {sanitize(room)}: {_listing(found)}.", tuple(found))

    if kind is IntentKind.WHERE_IS:
        target = intent.target or ""
        if intent.t is not None:
            result = reader.where_was(target, resolve_time(intent.t, intent.t_kind, now))
            return QueryResult(intent, result.text, found=result.found)
        result = reader.recall(target)
        if not result.found or result.object_id is None:
            return QueryResult(intent, result.text, found=False)
        obj = reader.get(result.object_id)
        return QueryResult(intent, reader.describe(obj.id), (obj,))

    if kind is IntentKind.FIND:
        hits = reader.find(intent.target or text, 10)
        if not hits:
            return QueryResult(intent, "I found nothing like that.", found=False)
        found = [h.object for h in hits]
        return QueryResult(intent, f"Found: {_listing(found)}.", tuple(found),
                           extra={"scores": [h.score for h in hits]})

    if kind is IntentKind.RECENT:
        found = reader.recent(intent.n or 5)
        return QueryResult(intent, f"Most recently seen: {_listing(found) or 'nothing'}.",
                           tuple(found), found=bool(found))

    if kind is IntentKind.CHANGES_SINCE:
        since = resolve_time(intent.t if intent.t is not None else 0.0, intent.t_kind, now)
        changes = reader.changes_since(since)
        if intent.relation == "moved":  # "what moved": the objects that moved, not every change
            changes = [c for c in changes if "moved" in c.changes]
        if intent.room is not None:  # "what changed in the kitchen": there now, or moved from it
            changes = [c for c in changes if _touches_room(reader, c, intent.room)]
        where = f" in the {sanitize(intent.room)}" if intent.room is not None else ""
        none = "nothing moved" if intent.relation == "moved" else "nothing changed"
        body = "; ".join(sanitize(c.text(), 200) for c in changes[:LIST_LIMIT]) or none
        return QueryResult(intent, f"Since {when(since)}{where}: {body}.",
                           changes=tuple(changes))

    if kind is IntentKind.STALE:
        before = resolve_time(intent.t if intent.t is not None else 0.0, intent.t_kind, now)
        found = reader.stale(before)
        return QueryResult(intent, f"Not seen since {when(before)}: "
                                   f"{_listing(found) or 'nothing'}.", tuple(found))

    if kind is IntentKind.PATH:
        try:
            path = reader.path_rooms(intent.start or "", intent.goal or "")
        except (NotFound, InvalidInput) as exc:
            return QueryResult(intent, str(exc), found=False)
        if path is None:
            return QueryResult(intent, f"I know no way from the {sanitize(intent.start or '')} "
                                       f"to the {sanitize(intent.goal or '')}.", found=False)
        return QueryResult(intent, " -> ".join(sanitize(p) for p in path) + ".",
                           path=tuple(path))

    if kind is IntentKind.NEAR_ME:
        if here is None:
            return QueryResult(intent, "Tell me where you are (here=(x, y, z)) to answer that.",
                               found=False)
        point = check_vec(here, "here", 3)
        if intent.radius_m is not None:
            found = reader.near(point, intent.radius_m, label=intent.target)
        else:
            found = reader.nearest(point, intent.n or 5, label=intent.target)
        return QueryResult(intent, f"Near you: {_listing(found) or 'nothing'}.", tuple(found),
                           found=bool(found))

    raise InvalidInput(f"I cannot answer {text!r}")  # pragma: no cover - every kind is routed


_RELATION_WORDS = {"on": "on", "in": "in", "under": "under", "next_to": "next to",
                   "near": "near"}


def _holders(reader: MemoryReader, oid: int, relation: str) -> list[TrackedObject]:
    """What the object ``oid`` is ``relation`` ("what is the book on"), strongest first.
    It is *under* what it is under and what rests on it; next to and near go both ways."""
    out: list[int] = []
    for r in reader.relations(oid):
        if r.subject == oid and r.relation == relation:
            out.append(r.object)
        elif r.object == oid and (
                (relation == "under" and r.relation == "on")
                or (relation in ("next_to", "near") and r.relation == relation)):
            out.append(r.subject)
    return [reader.get(i) for i in dict.fromkeys(out)]


def _inverse(reader: MemoryReader, intent: Intent) -> QueryResult:
    """ "what is the book on": the named thing, and what it stands in the relation to."""
    from locimem.language.hedge import plural

    result = reader.recall(intent.target or "")
    if not result.found or result.object_id is None:
        return QueryResult(intent, result.text, found=False)
    thing = reader.get(result.object_id)
    relation = intent.relation or "on"
    every = _holders(reader, thing.id, relation)
    found = every
    if intent.anchor:  # "which shelf is the book on": shelves only
        words = name_words(intent.anchor)
        found = [o for o in every if label_matches_folded(words, o.label)]
    name = f"The {sanitize(thing.label)} (#{thing.id})"
    is_, it = ("are", "they") if plural(thing.label) else ("is", "it")
    where = _RELATION_WORDS.get(relation, relation)
    if found:
        return QueryResult(intent, f"{name} {is_} {where} {_the_listing(found)}.",
                           tuple(found), anchor=thing)
    if every:
        return QueryResult(intent, f"{name} {is_} {where} no {sanitize(intent.anchor or '')} "
                                   f"that I know of; {it} {is_} {where} "
                                   f"{_the_listing(every)}.", tuple(every), anchor=thing,
                           found=False)
    room = reader.room_of(thing.id)
    if relation == "in" and room is not None and not intent.anchor:
        return QueryResult(intent, f"{name} {is_} in the {sanitize(room)}.", (thing,),
                           anchor=thing)
    return QueryResult(intent, f"{name}: I know of nothing {it} {is_} {where}.",
                       anchor=thing, found=False)


def _the_listing(objs: list[TrackedObject]) -> str:
    """ "the kitchen table (#1)", "the keys (#3) and the book (#2)", with a count beyond
    :data:`LIST_LIMIT`."""
    names = [f"the {_name(o)}" for o in objs[:LIST_LIMIT]]
    more = len(objs) - len(names)
    if more > 0:
        return ", ".join(names) + f" and {more} more"
    return names[0] if len(names) == 1 else ", ".join(names[:-1]) + " and " + names[-1]


def _touches_room(reader: Any, change: Any, room: str) -> bool:
    """Whether an object's changes concern ``room``: it is there now, or one of its moves
    started or ended there."""
    try:
        if reader.room_of(change.object_id) == room:
            return True
    except NotFound:  # gone since (merged away, forgotten): judge by its events
        pass
    rooms = reader.state.scene.rooms
    for ev in change.events:
        for key in ("from", "to", "center"):
            point = ev.data.get(key)
            if isinstance(point, list) and len(point) == 3 and rooms.room_at(point) == room:
                return True
    return False


__all__ = ["QueryResult", "answer_query", "resolve_time"]
