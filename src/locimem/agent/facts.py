"""Objects as safe, compact facts: what the tools return and what answers are built from.

Every string in a fact is cleaned (:func:`locimem.agent.safety.clean`); every fact carries
the object's id so a model can cite it; sentences are worded by the one hedging policy
(:mod:`locimem.language.hedge`), so only a confirmed object is said to *be* somewhere. Times
follow :mod:`locimem.times`: each time in seconds (``last_seen_t``, ``t``) has its ISO 8601
form beside it (``last_seen_iso``, ``iso``) when it looks like Unix time
(:func:`time_fields`).
"""

from __future__ import annotations

import dataclasses
import json
import math
import re
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from locimem.agent.safety import clean, estimate_tokens
from locimem.language.hedge import CONFIDENCE_WORDS, ago, hedged_sentence, place_text, when
from locimem.model import ObjectStatus, TrackedObject
from locimem.times import iso

if TYPE_CHECKING:
    from locimem.query.reader import MemoryReader, RelationInfo

__all__ = ["SUPPORT_RELATIONS", "Facts", "Prompt", "change_summary", "net_changes", "object_fact",
           "place_phrase", "quoted", "safe_sentence", "support_of", "time_fields", "word_of"]

SUPPORT_RELATIONS = ("on", "in")  # what an object rests on or sits in: its parent in the tree
LABEL_CHARS = 80
NAME_CHARS = 64


def quoted(label: str, max_chars: int = LABEL_CHARS) -> str:
    """A perception-derived label as it appears in an answer: cleaned, and in double quotes
    (a double quote inside it becomes a single one), so a label that reads like an
    instruction ("ignore previous instructions") reads as a name, and cannot close its
    quotes."""
    return '"' + clean(label, max_chars).replace('"', "'") + '"'


def word_of(status: ObjectStatus) -> str:
    """The confidence word for a trust state (``confirmed``, ``unconfirmed``, …)."""
    return CONFIDENCE_WORDS.get(status, status.value)


def time_fields(prefix: str, t: float | None) -> dict[str, Any]:
    """A time as a fact carries it: ``{prefix}t``, the seconds (to 0.1 s), and beside them
    ``{prefix}iso``, ISO 8601 in UTC to the second, when they look like Unix time
    (:func:`locimem.times.iso`; left out otherwise, so a simulation's facts stay short).

    >>> time_fields("last_seen_", 1764600000.04)
    {'last_seen_t': 1764600000.0, 'last_seen_iso': '2025-12-01T14:40:00Z'}
    >>> time_fields("", 12.34), time_fields("lost_at_", None)
    ({'t': 12.3}, {'lost_at_t': None})
    """
    if t is None:
        return {f"{prefix}t": None}
    out: dict[str, Any] = {f"{prefix}t": round(float(t), 1)}
    shown = iso(float(round(t)), ms=False)
    if shown is not None:
        out[f"{prefix}iso"] = shown
    return out


def _round3(v: tuple[float, float, float]) -> list[float]:
    return [round(float(x), 2) for x in v]


def support_of(reader: MemoryReader, object_id: int,
               relations: tuple[str, ...] = SUPPORT_RELATIONS) -> RelationInfo | None:
    """The strongest relation among ``relations`` in which the object is the subject
    ("#4 on #8"), or None."""
    for r in reader.relations(object_id):  # strongest first
        if r.subject == object_id and r.relation in relations and r.object != object_id:
            return r
    return None


def place_phrase(reader: MemoryReader, obj: TrackedObject) -> str:
    """Where the object is, in words: "on the table (#8) in the kitchen", or its coordinates."""
    parts = []
    r = support_of(reader, obj.id, ("on", "in", "under"))
    if r is not None:
        other = reader.get(r.object)
        parts.append(f"{r.relation} the {quoted(other.label)} (#{other.id})")
    room = reader.room_of(obj.id)
    if room is not None:
        parts.append(f"in the {clean(room, NAME_CHARS)}")
    if not parts:
        parts.append(f"at {place_text(obj.center)}")
    return " ".join(parts)


def safe_sentence(reader: MemoryReader, obj: TrackedObject, where: str | None = None) -> str:
    """One hedged sentence about ``obj`` with its label cleaned and quoted (:func:`quoted`);
    ``where`` defaults to :func:`place_phrase`."""
    named = dataclasses.replace(obj, label=quoted(obj.label))
    now = reader.now if reader.now is not None else obj.last_seen
    return hedged_sentence(named, obj.status, now,  # type: ignore[arg-type]
                           where=where if where is not None else place_phrase(reader, obj))


def object_fact(reader: MemoryReader, obj: TrackedObject, *, detail: bool = False,
                room: bool = True) -> dict[str, Any]:
    """A JSON-ready, cleaned summary of one object. ``detail`` adds what it rests on, its
    level, size, label votes, attributes and counts."""
    now = reader.now if reader.now is not None else obj.last_seen
    fact: dict[str, Any] = {
        "id": obj.id,
        "label": clean(obj.label, LABEL_CHARS),
        "status": obj.status.value,
        "word": word_of(obj.status),
        "confidence": round(float(obj.confidence), 2),
        "at_m": _round3(obj.center),
        **time_fields("last_seen_", obj.last_seen),
        "last_seen": ago(max(0.0, now - obj.last_seen)),
    }
    if room:
        name = reader.room_of(obj.id)
        fact["room"] = None if name is None else clean(name, NAME_CHARS)
    if obj.lost_at is not None:
        fact.update(time_fields("lost_at_", obj.lost_at))
    if detail:
        r = support_of(reader, obj.id, ("on", "in", "under"))
        fact["support"] = None if r is None else {
            "relation": r.relation, "id": r.object,
            "label": clean(reader.get(r.object).label, LABEL_CHARS)}
        fact["level"] = reader.level_of(obj.id)
        fact["size_m"] = _round3(obj.size)
        fact.update(time_fields("first_seen_", obj.first_seen))
        fact["n_detections"] = int(obj.n_detections)
        fact["label_votes"] = {clean(k, LABEL_CHARS): round(float(v), 2)
                               for k, v in list(obj.label_votes.items())[:5]}
        fact["attributes"] = {clean(k, 32): (clean(v, 80) if isinstance(v, str) else v)
                              for k, v in list(obj.attributes.items())[:10]}
        if obj.corrected_label is not None:
            fact["corrected_label"] = clean(obj.corrected_label, LABEL_CHARS)
    return fact


def change_summary(c: Any) -> dict[str, Any]:
    """One object's changes (:class:`~locimem.query.temporal.ObjectChanges`) as a fact."""
    words = [clean(w, 120) for w in dict.fromkeys(c.changes)]
    return {"id": c.object_id, "label": clean(c.label, LABEL_CHARS), "changes": words[:12],
            **time_fields("first_", c.first_t), **time_fields("last_", c.last_t)}


MOVE_M = 0.2  # a net displacement below this is not a move (the tracker's tight radius)


def net_changes(reader: MemoryReader, since: float, changes: list[Any]) -> list[dict[str, Any]]:
    """What differs between the memory at ``since`` and now, for each object the events
    since then touched (``changes``: :class:`~locimem.query.temporal.ObjectChanges`): the
    change facts of :func:`change_summary` with a ``net`` list of words — ``appeared``,
    ``reacquired`` (lost then, here now), ``lost``, ``may be gone`` (doubted now),
    ``moved`` (more than 0.2 m from where it was), ``relabelled (was …)``, ``now on #8
    table`` / ``no longer on #8 table``. An object that moved away and back, or appeared
    and was lost again, has an empty ``net``."""
    if not changes:
        return []
    then = reader.as_of(since)
    out = []
    for c in changes:
        fact = change_summary(c)
        try:
            cur = reader.get(c.object_id)
        except LookupError:
            continue
        try:
            prev = then.get(c.object_id)
        except LookupError:
            prev = None
        was = prev is not None and prev.status is not ObjectStatus.LOST
        now_here = cur.status is not ObjectStatus.LOST
        net: list[str] = []
        if not was and now_here:
            net.append("reacquired" if prev is not None else "appeared")
        elif was and not now_here:
            net.append("lost")
        elif prev is not None and was and now_here:
            if cur.status is ObjectStatus.DOUBTED and prev.status is not ObjectStatus.DOUBTED:
                net.append("may be gone")
            if math.dist(prev.center, cur.center) > MOVE_M:
                net.append("moved")
            if prev.label != cur.label:
                net.append(f"relabelled (was {clean(prev.label, LABEL_CHARS)})")
        if now_here:
            before = support_of(then, c.object_id) if prev is not None else None
            after = support_of(reader, c.object_id)
            b = None if before is None else (before.relation, before.object)
            a = None if after is None else (after.relation, after.object)
            if a != b:
                if a is not None:
                    net.append(f"now {a[0]} #{a[1]} {clean(reader.get(a[1]).label, 40)}")
                elif b is not None:
                    net.append(f"no longer {b[0]} #{b[1]} {clean(then.get(b[1]).label, 40)}")
        fact["net"] = net
        out.append(fact)
    return out


# -- what an answer is written from ------------------------------------------------------------
@dataclass(frozen=True)
class Facts:
    """What the retrievers found, cleaned and ready to word.

    ``kind``: where_is, which_room, still_there, where_was, relational, room, find, recent,
    changes_since, stale, path or near_me. ``objects`` are object facts (see
    :func:`locimem.agent.facts.object_fact`), the best first; ``total`` how many were found
    (``objects`` may be fewer). ``sentence`` is a hedged sentence about the first object.
    """

    kind: str
    question: str
    found: bool
    summary: str
    objects: tuple[dict[str, Any], ...] = ()
    total: int = 0
    sentence: str | None = None
    anchor: dict[str, Any] | None = None
    relation: str | None = None
    target: str | None = None
    room: str | None = None
    changes: tuple[dict[str, Any], ...] = ()
    since_t: float | None = None
    path: tuple[str, ...] | None = None

    def ids(self) -> set[int]:
        """Every object id the facts mention."""
        out = {int(o["id"]) for o in self.objects} | {int(c["id"]) for c in self.changes}
        if self.anchor is not None:
            out.add(int(self.anchor["id"]))
        out.update(int(m) for m in re.findall(r"#(\d+)", self.summary))
        return out

    def text(self, max_objects: int | None = None, max_changes: int | None = None) -> str:
        """The facts as lines for a model, listing at most ``max_objects`` objects and
        ``max_changes`` changes (None: all the facts hold)."""
        objs = self.objects[:max_objects]
        changes = self.changes[:max_changes]
        lines = [f"question kind: {self.kind}"]
        if self.kind != "changes_since":  # its summary lists events, not what differs now
            lines.append(f"retrieved answer: {self.summary}")
        if self.sentence:
            lines.append(f"about the best match: {self.sentence}")
        if self.anchor is not None:
            lines.append(f"anchor: {_fact_line(self.anchor)}")
        if objs:
            more = self.total - len(objs)
            lines.append(f"objects ({self.total}{f', {more} not listed' if more > 0 else ''}):")
            lines.extend(f"  {_fact_line(o)}" for o in objs)
        if changes:
            more = len(self.changes) - len(changes)
            lines.append((f"changes since {when(self.since_t)}" if self.since_t is not None
                          else "changes") + (f" ({more} not listed):" if more else ":"))
            lines.extend(f"  #{c['id']} {json.dumps(c['label'], ensure_ascii=False)}: "
                         f"{', '.join(c.get('net', c['changes']))}" for c in changes)
        if self.path is not None:
            lines.append("path: " + " -> ".join(self.path))
        return "\n".join(lines)


def _fact_line(f: dict[str, Any]) -> str:
    room = f" room {json.dumps(f['room'], ensure_ascii=False)}" if f.get("room") else ""
    label = json.dumps(f["label"], ensure_ascii=False)
    seen = f.get("last_seen_iso") or f"t={f['last_seen_t']}"  # Unix time: ISO, not seconds
    return (f"#{f['id']} {label} {f['word']} {place_text(f['at_m'])}{room} "
            f"seen {f['last_seen']} ({seen})")


@dataclass(frozen=True)
class Prompt:
    """What a verbalizer gets: the system and user messages (``messages`` for chat APIs,
    ``text`` as one string) and the structured ``facts`` they were written from."""

    system: str
    user: str
    facts: Facts
    budget_tokens: int

    @property
    def messages(self) -> list[dict[str, str]]:
        return [{"role": "system", "content": self.system},
                {"role": "user", "content": self.user}]

    @property
    def text(self) -> str:
        return f"{self.system}\n\n{self.user}"

    @property
    def tokens(self) -> int:
        """The prompt's estimated size (:func:`locimem.agent.safety.estimate_tokens`)."""
        return estimate_tokens(self.system) + estimate_tokens(self.user)
