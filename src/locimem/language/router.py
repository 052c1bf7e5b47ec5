"""Route a short question to the retriever that answers it: ``parse(text) -> Intent``.

Pure: the caller supplies the vocabulary (the labels it holds and the room names), and the
router never guesses beyond it. Anchors are matched on whole words with plural folding, the
longest match winning ("kitchen table" over "table"; "table" never matches "vegetable").

=====================================  ====================================================
phrase                                 intent
=====================================  ====================================================
what's on the kitchen table            RELATIONAL  relation=on, anchor="kitchen table"
cups near the sink                     RELATIONAL  target="cup", relation=near, anchor="sink"
what is in the drawer                  RELATIONAL  relation=in, anchor="drawer"
what is the book on                    INVERSE     target="book", relation=on
which shelf is the book in             INVERSE     target="book", relation=in, anchor="shelf"
what's in the kitchen                  ROOM        anchor="kitchen" (a room: its contents)
where is my phone                      WHERE_IS    target="phone"
find something to drink from           FIND        target="something to drink from"
what did I see last / recent           RECENT      (n when a number is given)
what changed since 10:00               CHANGES_SINCE  t=36000.0, t_kind="clock"
what haven't I seen for a day          STALE       t=86400.0, t_kind="ago"
how do I get from the bedroom to ...   PATH        start, goal (rooms)
the five nearest chairs                NEAR_ME     target="chair", n=5
=====================================  ====================================================

Times: ``t_kind="clock"`` is seconds since midnight ("10:00" -> 36000), to be placed on a
day by the caller; ``"time"`` is a raw scan time ("since t=120", "since 120"); ``"ago"`` is
seconds before now ("in the last 5 minutes" -> 300).
"""

from __future__ import annotations

import enum
import re
import unicodedata
from collections.abc import Iterable
from dataclasses import dataclass

from locimem.errors import InvalidInput
from locimem.language.text import fold, words

__all__ = ["Intent", "IntentKind", "Vocabulary", "parse", "parse_duration", "parse_time"]

MAX_QUESTION_CHARS = 500
Phrase = tuple[str, ...]


class IntentKind(str, enum.Enum):
    """Which retriever a question goes to."""

    RELATIONAL = "relational"  # things in a relation to an anchor object (optionally a target)
    INVERSE = "inverse"  # what a named thing is on, in, under, next to (optionally of a kind)
    ROOM = "room"  # the contents of a room (optionally only a target)
    WHERE_IS = "where_is"  # where a named thing is (optionally at time t)
    FIND = "find"  # semantic search for a description
    RECENT = "recent"  # what was seen most recently
    CHANGES_SINCE = "changes_since"  # what changed since t
    STALE = "stale"  # what has not been seen since t
    PATH = "path"  # rooms from start to goal
    NEAR_ME = "near_me"  # around the robot: a radius or the n nearest

    def __str__(self) -> str:
        return self.value


@dataclass(frozen=True, slots=True)
class Intent:
    """A parsed question. Fields that do not apply are None.

    ``target`` is what is asked about ("cup"), ``anchor`` what it is placed against ("sink"),
    both vocabulary entries when one matched (``target_known`` / ``anchor_known``), else the
    folded words of the phrase. ``room`` qualifies an anchor or target ("the kitchen table"
    with no "kitchen table" label: anchor="table", room="kitchen").
    """

    kind: IntentKind
    text: str
    target: str | None = None
    target_known: bool = False
    relation: str | None = None
    anchor: str | None = None
    anchor_known: bool = False
    anchor_is_room: bool = False
    room: str | None = None
    t: float | None = None
    t_kind: str | None = None
    n: int | None = None
    radius_m: float | None = None
    start: str | None = None
    goal: str | None = None


# --------------------------------------------------------------------------------------------
# vocabulary


class Vocabulary:
    """Labels and room names, folded for whole-word matching. Build once, parse many."""

    def __init__(self, labels: Iterable[str] = (), rooms: Iterable[str] = ()) -> None:
        self._entries: dict[Phrase, tuple[str, bool]] = {}
        for name in rooms:
            f = fold(name)
            if f:
                self._entries.setdefault(f, (" ".join(name.split()).lower(), True))
        for name in labels:
            f = fold(name)
            if f and f not in self._entries:
                self._entries[f] = (" ".join(name.split()).lower(), False)
        self._by_first: dict[str, list[Phrase]] = {}
        for f in self._entries:
            self._by_first.setdefault(f[0], []).append(f)
        for bucket in self._by_first.values():
            bucket.sort(key=lambda p: (-len(p), p))

    def matches(self, span: Phrase, *, rooms: bool | None = None
                ) -> list[tuple[int, int, str, bool]]:
        """Non-overlapping vocabulary matches in ``span`` as ``(start, end, name, is_room)``,
        scanning left to right and taking the longest entry at each position. ``rooms``
        restricts to rooms (True) or labels (False)."""
        out = []
        i = 0
        while i < len(span):
            hit = None
            for phrase in self._by_first.get(span[i], ()):
                name, is_room = self._entries[phrase]
                if rooms is not None and is_room != rooms:
                    continue
                if span[i:i + len(phrase)] == phrase:
                    hit = (i, i + len(phrase), name, is_room)
                    break
            if hit:
                out.append(hit)
                i = hit[1]
            else:
                i += 1
        return out


# --------------------------------------------------------------------------------------------
# numbers, times and distances

_NUMBER_WORDS = {
    "a": 1, "an": 1, "one": 1, "two": 2, "three": 3, "four": 4, "five": 5, "six": 6,
    "seven": 7, "eight": 8, "nine": 9, "ten": 10, "eleven": 11, "twelve": 12, "fifteen": 15,
    "twenty": 20, "thirty": 30, "forty": 40, "fifty": 50, "sixty": 60, "ninety": 90,
    "hundred": 100, "couple": 2, "few": 3,
}
_NUM = r"(\d+(?:\.\d+)?|" + "|".join(sorted(_NUMBER_WORDS, key=len, reverse=True)) + r")"
_UNITS_S = {
    "s": 1, "sec": 1, "secs": 1, "second": 1, "seconds": 1, "min": 60, "mins": 60,
    "minute": 60, "minutes": 60, "h": 3600, "hr": 3600, "hrs": 3600, "hour": 3600,
    "hours": 3600, "day": 86400, "days": 86400, "week": 604800, "weeks": 604800,
}
_UNIT_S = r"(" + "|".join(sorted(_UNITS_S, key=len, reverse=True)) + r")\b"
_UNITS_M = {"m": 1.0, "metre": 1.0, "metres": 1.0, "meter": 1.0, "meters": 1.0,
            "cm": 0.01, "centimetre": 0.01, "centimetres": 0.01, "centimeter": 0.01,
            "centimeters": 0.01}
_UNIT_M = r"(" + "|".join(sorted(_UNITS_M, key=len, reverse=True)) + r")\b"


def _number(token: str) -> float:
    return float(token) if token[0].isdigit() else float(_NUMBER_WORDS[token])


def parse_duration(text: str) -> float | None:
    """Seconds in the first "<number> <unit>" of ``text`` ("5 minutes", "an hour", "a day",
    "half an hour"), or None."""
    if re.search(r"\bhalf an? hour\b", text):
        return 1800.0
    m = re.search(r"\b" + _NUM + r"\s*" + _UNIT_S, text)
    if m:
        return _number(m.group(1)) * _UNITS_S[m.group(2)]
    m = re.search(r"\b(?:the\s+)?(?:last|past)\s+" + _UNIT_S, text)  # "the last hour"
    if m:
        return float(_UNITS_S[m.group(1)])
    return None


def parse_time(text: str) -> tuple[float, str] | None:
    """The first time in ``text`` as ``(value, kind)``: a clock time as seconds since
    midnight (``"clock"``: "10:00", "9:30:15", "7 pm", "noon"), a raw scan time (``"time"``:
    "t=120", a bare number), or a duration back from now (``"ago"``: "5 minutes ago", "the
    last hour", "for a day"). None when there is none.

    >>> parse_time("since 10:00"), parse_time("since 7:30 pm"), parse_time("since t=120.5")
    ((36000.0, 'clock'), (70200.0, 'clock'), (120.5, 'time'))
    """
    m = re.search(r"\b(\d{1,2}):(\d{2})(?::(\d{2}))?\s*(am|pm|a\.m\.|p\.m\.)?", text)
    if m:
        h, mi, s = int(m.group(1)), int(m.group(2)), int(m.group(3) or 0)
        if h > 23 or mi > 59 or s > 59:
            return None
        h = _meridiem(h, m.group(4))
        return (float(h * 3600 + mi * 60 + s), "clock")
    m = re.search(r"\b(\d{1,2})\s*(am|pm|a\.m\.|p\.m\.)(?!\w)", text)
    if m and 1 <= int(m.group(1)) <= 12:
        return (float(_meridiem(int(m.group(1)), m.group(2)) * 3600), "clock")
    if re.search(r"\bnoon\b|\bmidday\b", text):
        return (43200.0, "clock")
    if re.search(r"\bmidnight\b", text):
        return (0.0, "clock")
    m = re.search(r"\bt\s*=\s*(-?\d+(?:\.\d+)?)", text)
    if m:
        return (float(m.group(1)), "time")
    duration = parse_duration(text)
    if duration is not None:
        return (duration, "ago")
    m = re.search(r"(?<![\w.])(-?\d+(?:\.\d+)?)(?![\w.:])", text)
    if m:
        return (float(m.group(1)), "time")
    return None


def _meridiem(h: int, suffix: str | None) -> int:
    if not suffix:
        return h
    pm = suffix.startswith("p")
    if h == 12:
        return 12 if pm else 0
    return h + 12 if pm else h


# --------------------------------------------------------------------------------------------
# phrases

_CONTRACTIONS = (
    (r"\b(what|where|who|how|that|there|it|here)'s\b", r"\1 is"),
    (r"\b(what|where|who|how|they|you|we)'re\b", r"\1 are"),
    (r"\bcan't\b", "can not"), (r"\bwon't\b", "will not"), (r"n't\b", " not"),
    (r"\bi've\b", "i have"), (r"\bi'm\b", "i am"), (r"\bi'd\b", "i had"),
    (r"'s\b", ""),
)
# relation phrases, longest first so "on top of" wins over "on"
_RELATION_PHRASES: tuple[tuple[Phrase, str], ...] = tuple(sorted((
    (("on", "top", "of"), "on"), (("on", "top"), "on"), (("on",), "on"), (("upon",), "on"),
    (("atop",), "on"),
    (("inside", "of"), "in"), (("inside",), "in"), (("in",), "in"), (("within",), "in"),
    (("into",), "in"),
    (("underneath",), "under"), (("beneath",), "under"), (("below",), "under"),
    (("under",), "under"),
    (("next", "to"), "next_to"), (("beside",), "next_to"), (("by",), "next_to"),
    (("alongside",), "next_to"), (("adjacent", "to"), "next_to"),
    (("near",), "near"), (("near", "to"), "near"), (("close", "to"), "near"),
    (("nearby",), "near"), (("around",), "near"), (("in", "front", "of"), "near"),
    (("behind",), "near"),
), key=lambda p: -len(p[0])))
_QUESTION_FILLERS = frozenset({
    "what", "whats", "which", "who", "is", "are", "was", "were", "there", "here", "anything",
    "everything", "something", "thing", "stuff", "object", "item", "show", "me", "list",
    "tell", "find", "all", "the", "a", "an", "my", "our", "your", "any", "some", "do", "you",
    "see", "have", "we", "i", "can", "please", "currently", "now", "right", "lying", "sitting",
    "standing", "placed", "kept", "left", "put", "located", "that", "this", "it", "of", "get",
})
_ARTICLES = frozenset({"the", "a", "an", "my", "our", "your", "his", "her", "their", "this",
                       "that", "these", "those", "some", "any"})


def _normalise(text: str) -> str:
    text = unicodedata.normalize("NFKC", text).lower().replace("\u2019", "'")
    for pattern, repl in _CONTRACTIONS:
        text = re.sub(pattern, repl, text)
    return " ".join(text.split()).strip(" ?!.")


def _strip(span: Phrase, drop: frozenset[str]) -> Phrase:
    out = list(span)
    while out and out[0] in drop:
        out.pop(0)
    while out and out[-1] in drop:
        out.pop()
    return tuple(out)


def _resolve(span: Phrase, vocab: Vocabulary) -> tuple[str | None, bool, bool, str | None]:
    """The main entity of a noun phrase: ``(name, known, is_room, room qualifier)``.

    The longest label match is the entity; a room matched elsewhere in the span qualifies it.
    With no label match, a room match is the entity. Otherwise the folded words."""
    span = _strip(span, _ARTICLES)
    if not span:
        return None, False, False, None
    hits = vocab.matches(span)
    labels = [h for h in hits if not h[3]]
    rooms = [h for h in hits if h[3]]
    if labels:
        best = max(labels, key=lambda h: (h[1] - h[0], h[0]))
        room = next((h[2] for h in rooms), None)
        return best[2], True, False, room
    if rooms:
        return rooms[-1][2], True, True, None
    return " ".join(span), False, False, None


def _find_relation(ws: Phrase) -> tuple[int, int, str] | None:
    """The first relation phrase in ``ws`` followed by something: (start, end, relation)."""
    for i in range(len(ws)):
        for phrase, rel in _RELATION_PHRASES:
            end = i + len(phrase)
            if ws[i:end] == phrase and end < len(ws):
                return i, end, rel
    return None


# --------------------------------------------------------------------------------------------
# the router


def parse(text: str, labels: Iterable[str] = (), rooms: Iterable[str] = (), *,
          vocabulary: Vocabulary | None = None) -> Intent:
    """Parse a short question into an :class:`Intent`.

    Args:
        text: the question (at most 500 characters).
        labels: the object labels the memory holds (anchors and targets are matched to them).
        rooms: the room names.
        vocabulary: a prebuilt :class:`Vocabulary` (then ``labels`` and ``rooms`` are ignored).

    >>> parse("what's on the kitchen table", ["kitchen table", "table", "cup"]).anchor
    'kitchen table'
    >>> parse("what's on the vegetable tray", ["table", "tray"]).anchor
    'tray'
    """
    if not isinstance(text, str):
        raise InvalidInput(f"question must be a string, got {type(text).__name__}")
    if len(text) > MAX_QUESTION_CHARS:
        raise InvalidInput(f"question must be at most {MAX_QUESTION_CHARS} characters, "
                           f"got {len(text)}")
    vocab = vocabulary if vocabulary is not None else Vocabulary(labels, rooms)
    low = _normalise(text)
    if not low:
        raise InvalidInput("question must not be empty")
    ws = fold(low)
    for rule in (_path, _changes, _stale, _inverse, _where, _recent, _near_me, _relational,
                 _find):
        intent = rule(text, low, ws, vocab)
        if intent is not None:
            return intent
    target, known, _, room = _resolve(_strip(ws, _QUESTION_FILLERS), vocab)
    return Intent(IntentKind.FIND, text, target=target or low, target_known=known, room=room)


def _path(text: str, low: str, ws: Phrase, vocab: Vocabulary) -> Intent | None:
    m = re.search(r"\bfrom (.+?) (?:to|into) (.+)$", low)
    swap = False
    if not m:
        m = re.search(r"\bto (.+?) from (.+)$", low)
        swap = True
    if not m or not re.search(r"\b(path|route|way|get|go|walk|drive|navigate|reach)\b", low):
        return None
    a = vocab.matches(fold(m.group(1)), rooms=True)
    b = vocab.matches(fold(m.group(2)), rooms=True)
    if not a or not b:
        return None
    start, goal = (b[0][2], a[0][2]) if swap else (a[0][2], b[0][2])
    return Intent(IntentKind.PATH, text, start=start, goal=goal)


def _time_fields(fragment: str) -> tuple[float | None, str | None]:
    parsed = parse_time(fragment)
    return (parsed[0], parsed[1]) if parsed else (None, None)


def _changes(text: str, low: str, ws: Phrase, vocab: Vocabulary) -> Intent | None:
    if not re.search(r"\b(chang\w*|different|happen\w*|moved|updates?)\b", low) and \
            not re.search(r"\b(what is|what|anything|something) new\b", low):
        return None
    # "what moved": moves only; "in the living room": that room's changes only
    only = "moved" if re.search(r"\bmoved\b", low) else None
    rooms = vocab.matches(ws, rooms=True)
    room = rooms[0][2] if rooms else None
    m = re.search(r"\b(since|after|from)\b(.*)$", low)
    if m:
        t, kind = _time_fields(m.group(2))
        return Intent(IntentKind.CHANGES_SINCE, text, t=t, t_kind=kind, relation=only, room=room)
    m = re.search(r"\b(?:in|during|over|within) (?:the )?(?:last|past) .*$", low)
    if m:
        t, kind = _time_fields(m.group(0))
        return Intent(IntentKind.CHANGES_SINCE, text, t=t, t_kind=kind, relation=only, room=room)
    if re.search(r"\b(what|anything|has|have|did|any)\b", low):
        return Intent(IntentKind.CHANGES_SINCE, text, relation=only, room=room)
    return None


def _stale(text: str, low: str, ws: Phrase, vocab: Vocabulary) -> Intent | None:
    if not (re.search(r"\b(not|never)\b.*\b(seen|see|saw|spotted)\b", low)
            or re.search(r"\bstale\b|\bunseen\b|\bout of date\b", low)):
        return None
    m = re.search(r"\b(since|for|in)\b(.*)$", low)
    t, kind = _time_fields(m.group(2)) if m else (None, None)
    return Intent(IntentKind.STALE, text, t=t, t_kind=kind)


def _recent(text: str, low: str, ws: Phrase, vocab: Vocabulary) -> Intent | None:
    if not re.search(r"\b(recent|recently|latest|lately|last seen|just (saw|seen|see)|"
                     r"(see|saw|seen|spot|spotted|notice|noticed) last|last (\w+ )?things?)\b",
                     low):
        return None
    m = re.search(r"\b" + _NUM + r"\b", low)
    n = None
    if m and m.group(1) not in ("a", "an"):
        n = int(_number(m.group(1)))
    return Intent(IntentKind.RECENT, text, n=n)


_TRAILING_RELATION = (
    r"(on top of|on|upon|atop|inside of|inside|in|within|underneath|under|beneath|below|"
    r"next to|beside|by|near|close to)"
)
_POSTURE = r"(?:(?:sitting|lying|standing|resting|placed|kept|put|stored|located|hidden|left)\s+)?"
_INVERSE = (
    # what is the book on / which shelf are the keys lying on / what's the cup sitting in
    re.compile(r"^(?:what|which\s+(?P<kind>[\w ]+?))\s+(?:is|are|was|were)\s+(?P<thing>.+?)\s+"
               + _POSTURE + _TRAILING_RELATION + r"$"),
    # what does the book rest on / what do the keys lie under
    re.compile(r"^(?:what|which\s+(?P<kind>[\w ]+?))\s+(?:does|do|did)\s+(?P<thing>.+?)\s+"
               r"(?:rest|sit|lie|stand|hang|go|belong)s?\s+" + _TRAILING_RELATION + r"$"),
)


def _inverse(text: str, low: str, ws: Phrase, vocab: Vocabulary) -> Intent | None:
    """A question ending in a relation: what the named thing stands in it to."""
    for pattern in _INVERSE:
        m = pattern.match(low)
        if m is None:
            continue
        rel = dict(_RELATION_PHRASES)[tuple(m.group(m.lastindex or 0).split())]
        target, known, is_room, room = _resolve(fold(m.group("thing")), vocab)
        if target is None or is_room:
            return None
        kind = m.group("kind")
        if kind is not None and fold(kind) in (("room",), ("rooms",)):
            return None  # "which room is the remote in": where is it
        anchor, a_known = None, False
        if kind is not None:
            anchor, a_known, _, _ = _resolve(fold(kind), vocab)
        return Intent(IntentKind.INVERSE, text, target=target, target_known=known,
                      relation=rel, anchor=anchor, anchor_known=a_known, room=room)
    return None


def _where(text: str, low: str, ws: Phrase, vocab: Vocabulary) -> Intent | None:
    m = re.match(r"(?:where|which room)\b(.*)$", low)
    if not m:
        m = re.match(r"(?:locate|find)\s+(?:my|our|the)\s+(.*)$", low)
        if not m:
            return None
    rest = m.group(1)
    rel = _find_relation(fold(rest))
    if rel is not None and vocab.matches(fold(rest)[rel[1]:]):
        return None  # "where is the cup on the table": a relational question
    t = kind = None
    at = re.search(r"\b(?:at|around|by)\s+(\d{1,2}(?::\d{2})+\s*(?:am|pm)?|\d{1,2}\s*(?:am|pm)|"
                   r"noon|midnight|t\s*=\s*-?\d+(?:\.\d+)?)\b", rest)
    if at:
        t, kind = _time_fields(at.group(1))
        rest = rest[: at.start()]
    rest = re.sub(r"\b(is|are|was|were|did|do|i|we|you|leave|left|put|place|placed|keep|kept|"
                  r"last|see|saw|seen|in|go|went|now|currently|located|stored)\b", " ", rest)
    target, known, _, room = _resolve(fold(rest), vocab)
    if target is None:
        return None
    return Intent(IntentKind.WHERE_IS, text, target=target, target_known=known, room=room,
                  t=t, t_kind=kind)


def _near_me(text: str, low: str, ws: Phrase, vocab: Vocabulary) -> Intent | None:
    near_me = re.search(r"\b(near|around|close to|next to|within .+? of|by) me\b", low)
    nearest = re.search(r"\b(nearest|closest)\b", low)
    if not near_me and not nearest:
        return None
    radius = None
    m = re.search(r"\bwithin\s+" + _NUM + r"\s*" + _UNIT_M, low)
    if m:
        radius = _number(m.group(1)) * _UNITS_M[m.group(2)]
    n = None
    if nearest:
        m = re.search(r"\b" + _NUM + r"\s+(?:nearest|closest)\b", low) or \
            re.search(r"\b(?:nearest|closest)\s+" + _NUM + r"\b", low)
        n = int(_number(m.group(1))) if m else 1
    body = low
    if near_me:
        body = body[: near_me.start()] + body[near_me.end():]
    body = re.sub(r"\b(nearest|closest|within\s+\S+\s*\S*|" + _NUM + r")\b", " ", body)
    target, known, _, room = _resolve(_strip(fold(body), _QUESTION_FILLERS), vocab)
    return Intent(IntentKind.NEAR_ME, text, target=target, target_known=known, room=room, n=n,
                  radius_m=radius)


def _relational(text: str, low: str, ws: Phrase, vocab: Vocabulary) -> Intent | None:
    found = _find_relation(ws)
    while found is not None:
        start, end, rel = found
        anchor, a_known, a_room, room = _resolve(ws[end:], vocab)
        target, t_known, _, t_room = _resolve(_strip(ws[:start], _QUESTION_FILLERS), vocab)
        if anchor is not None and (a_known or t_known or start == 0 or _asks(ws[:start])):
            if a_room and rel == "in":
                return Intent(IntentKind.ROOM, text, target=target, target_known=t_known,
                              anchor=anchor, anchor_known=True, anchor_is_room=True,
                              room=anchor)
            return Intent(IntentKind.RELATIONAL, text, target=target, target_known=t_known,
                          relation=rel, anchor=anchor, anchor_known=a_known,
                          anchor_is_room=a_room, room=room or t_room)
        nxt = _find_relation(ws[end:])
        found = None if nxt is None else (nxt[0] + end, nxt[1] + end, nxt[2])
    return None


def _asks(span: Phrase) -> bool:
    """The words before a relation phrase form a question about things ("what is")."""
    return bool(span) and all(w in _QUESTION_FILLERS for w in span)


def _find(text: str, low: str, ws: Phrase, vocab: Vocabulary) -> Intent | None:
    m = re.match(r"(?:find|search for|search|look for|looking for|show me|get me|fetch|"
                 r"bring me|i need|i want|give me)\s+(.*)$", low)
    if not m:
        return None
    body = m.group(1)
    span = _strip(words(body), _ARTICLES)
    target, known, _, room = _resolve(fold(body), vocab)
    if known:
        return Intent(IntentKind.FIND, text, target=target, target_known=True, room=room)
    return Intent(IntentKind.FIND, text, target=" ".join(span) or body)
