"""``recall(name)``: what the memory knows about a named thing, in one honest sentence."""

from __future__ import annotations

import re
from collections.abc import Iterable

from locimem.config import TrackerConfig
from locimem.language.hedge import hedged_sentence
from locimem.model import ObjectState, ObjectStatus, RecallResult
from locimem.query.views import status_of

_ARTICLES = {"the", "a", "an", "my", "our", "your", "this", "that"}
_RANK = {ObjectStatus.CONFIRMED: 0, ObjectStatus.TENTATIVE: 1, ObjectStatus.DOUBTED: 2,
         ObjectStatus.LOST: 3}


def name_words(name: str) -> tuple[str, ...]:
    """Lower-case words of a name, without leading articles ("the cup" -> ("cup",))."""
    words = re.findall(r"[a-z0-9]+", name.lower())
    while words and words[0] in _ARTICLES:
        words.pop(0)
    return tuple(words)


def label_matches(words: tuple[str, ...], label: str) -> bool:
    """True when ``words`` occur as whole, consecutive words of ``label`` ("cup" matches
    "coffee cup", never "cupboard")."""
    if not words:
        return False
    label_words = re.findall(r"[a-z0-9]+", label.lower())
    n = len(words)
    return any(tuple(label_words[i:i + n]) == words for i in range(len(label_words) - n + 1))


def _candidates(words: tuple[str, ...], objects: Iterable[ObjectState]) -> list[ObjectState]:
    objects = list(objects)
    by_vote = [o for o in objects if label_matches(words, o.label)]
    if by_vote:
        return by_vote
    # Nothing *voted* that name: fall back to objects that were ever seen under it.
    return [o for o in objects if any(label_matches(words, lab) for lab in o.label_mass)]


def recall(name: str, objects: Iterable[ObjectState], now: float | None,
           config: TrackerConfig) -> RecallResult:
    """Find the object best answering to ``name`` and say plainly what is known of it.

    Preference: confirmed over tentative over lost, then the most recently seen, then the
    lowest id. ``now`` is the time of the latest scan (None for an empty memory).
    """
    words = name_words(name)
    if not words:
        return RecallResult(query=name, found=False, text="Ask for something by name.")
    found = _candidates(words, objects)
    if not found and words[-1].endswith("s") and len(words[-1]) > 2:  # "cups" -> "cup"
        words = (*words[:-1], words[-1][:-1])
        found = _candidates(words, objects)
    if not found or now is None:
        return RecallResult(query=name, found=False,
                            text=f"I have no memory of anything called {' '.join(words)!r}.")
    ranked = sorted(
        found, key=lambda o: (_RANK[status_of(o, now, config)], -o.last_seen, o.id)
    )
    best = ranked[0]
    status = status_of(best, now, config)
    conf = best.confidence(now, config.tau_s, config.tau_unseen_s)
    return RecallResult(
        query=name,
        found=True,
        text=hedged_sentence(best, status, now),
        object_id=best.id,
        label=best.label,
        status=status,
        center=best.center,
        last_seen=best.last_seen,
        confidence=conf,
        lost_at=best.lost_at,
        others=tuple(o.id for o in ranked[1:]),
    )
