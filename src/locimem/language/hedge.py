"""One hedging policy: how sure a sentence about an object may sound, by its trust state.

``recall`` and ``describe`` (and the agent layer) word every claim through here, so the memory
never says "is" about something it has not confirmed.

| status | wording |
|---|---|
| confirmed | present tense: "the cup is on the table" |
| tentative | past tense, unchecked: "was last seen …; I have not checked since" |
| doubted | past tense, contradicted: "was last seen …, but I looked since and did not see it" |
| lost | "is lost: last seen …; I gave it up at t" |
"""

from __future__ import annotations

from locimem.model import ObjectState, ObjectStatus
from locimem.times import time_text
from locimem.words import singular, words

CONFIDENCE_WORDS = {
    ObjectStatus.CONFIRMED: "confirmed",
    ObjectStatus.TENTATIVE: "unconfirmed",
    ObjectStatus.DOUBTED: "doubtful",
    ObjectStatus.LOST: "lost",
}


def place_text(center: tuple[float, float, float]) -> str:
    """Coordinates as a reader sees them: "(0.40, 0.10, 0.90)"."""
    return f"({center[0]:.2f}, {center[1]:.2f}, {center[2]:.2f})"


def ago(seconds: float) -> str:
    """A duration in the largest unit that reads naturally."""
    if seconds < 1.0:
        return "just now"
    if seconds < 120:
        return f"{seconds:.0f} s ago"
    if seconds < 7200:
        return f"{seconds / 60:.0f} min ago"
    return f"{seconds / 3600:.1f} h ago"


def hedged_sentence(obj: ObjectState, status: ObjectStatus, now: float,
                    where: str | None = None) -> str:
    """One sentence whose certainty matches the belief. ``where`` is a phrase such as
    "on the kitchen table" (default: "at (x, y, z)")."""
    name = f"The {sanitize(obj.label)} (#{obj.id})"  # perception-derived: never raw
    is_, was, it = ("are", "were", "they") if plural(obj.label) else ("is", "was", "it")
    where = where or f"at {place_text(obj.center)}"
    seen = f"last seen {ago(now - obj.last_seen)} ({when(obj.last_seen)})"
    if status is ObjectStatus.CONFIRMED:
        return f"{name} {is_} {where}; {seen}."
    if status is ObjectStatus.TENTATIVE:
        return (f"{name} {was} {seen} {where}; I have not checked since, so {it} may have "
                "moved.")
    if status is ObjectStatus.DOUBTED:
        return (f"{name} {was} {seen} {where}, but I looked there since and did not see "
                f"{'them' if it == 'they' else 'it'}; {it} may have been moved or taken.")
    lost_at = obj.lost_at if obj.lost_at is not None else now
    return (f"{name} {is_} lost: {seen} {where} and not seen since; I gave "
            f"{'them' if it == 'they' else 'it'} up at {when(lost_at)}.")


def when(t: float) -> str:
    """A valid time in a sentence: ISO 8601 (UTC, to the second) when it looks like Unix
    time, else seconds (:func:`locimem.times.time_text`).

    >>> when(1764600000.4), when(12.0)
    ('2025-12-01T14:40:00Z', 't=12.0 s')
    """
    return time_text(t, ms=False, digits=1)


def plural(label: str) -> bool:
    """The label names a plural thing ("keys", "reading glasses"): its last word is not its
    own singular (:func:`locimem.words.singular`).

    >>> plural("keys"), plural("reading glasses"), plural("glass"), plural("lens")
    (True, True, False, False)
    """
    found = words(label)
    return bool(found) and singular(found[-1]) != found[-1]


MAX_TEXT = 80


def sanitize(text: str, max_chars: int = MAX_TEXT) -> str:
    """Perception-derived text made safe to print or hand to a model: control and format
    characters dropped, whitespace collapsed to single spaces, length capped (with "…")."""
    import unicodedata

    cleaned = "".join(" " if c.isspace() else c for c in text
                      if unicodedata.category(c) not in ("Cc", "Cf") or c.isspace())
    cleaned = " ".join(cleaned.split())
    return cleaned if len(cleaned) <= max_chars else cleaned[: max_chars - 1] + "…"


_DROP = frozenset({"Cs", "Co", "Cn"})  # surrogate, private-use and unassigned code points


def clean(text: object, max_chars: int = 80) -> str:
    """``text`` as one line safe to hand a language model, of at most ``max_chars``
    characters: :func:`sanitize`, which also drops surrogate, private-use and unassigned code
    points (see :mod:`locimem.agent.safety`)."""
    import unicodedata

    s = text if isinstance(text, str) else str(text)
    s = sanitize(s, max_chars=max(max_chars, 2) * 2)
    s = "".join(c for c in s if unicodedata.category(c) not in _DROP)
    return sanitize(s, max_chars=max_chars)
