"""Moves the tracker could not follow: the mug carried from the kitchen to the bedroom.

A thing moved farther than the drift radius while nobody watched is seen in two ways: its old
place is looked at and found empty (the old identity is doubted, then lost), and a thing with
its label appears somewhere else (a new identity). When the two stories fit one object — same
voted label, the new one first seen after the old one was last seen, never seen together, far
apart — and no other candidate of that label is unaccounted for (embeddings, when both sides
have them, pick among several, and rule out any candidate that does not clearly look like
it), they are one object that moved. The tracker then writes a
``MERGED`` (the old identity absorbs the new one and takes its place: one id, both histories)
and a ``MOVED`` from the old place to the new, so ``where_was``, ``changes_since`` and "what
moved today" tell the story.

Checked when a new identity is settled — promoted, and seen as often as a promotion takes
(its old self already doubted or lost, or, with embeddings, clearly picked out by the new
one's: :func:`_recognised`, the old place not yet looked at) — and when an old identity is
doubted or lost (its new self already settled). Pure: reads the state and the objects as
this scan leaves them, returns the pairs (and whether the looks alone told each). Candidates
come from the state's label index: the promoted objects of a label missed since their last
sighting or lost, last seen before a time, and those first seen after a time — never the
memory, nor a label's every object — and are read only until the answer is known (a second
candidate embeddings cannot tell apart).

A move told by looks alone is a bet that the old place is empty. The object remembers where
it came from (``moved_from``); a thing seen there again is another of its kind, not it
moving back (:mod:`~locimem.tracker.decide` gives it an identity of its own, and no move here
pairs the two again) — two mugs of one make in two rooms would otherwise be one mug jumping
between them with every look.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Iterator

from locimem.config import TrackerConfig
from locimem.model import ObjectState
from locimem.tracker.associate import _cosine, best_two
from locimem.tracker.belief import misses_can_lose, settled
from locimem.tracker.state import MemoryState

__all__ = ["relocations"]


def _unaccounted(obj: ObjectState, t: float, config: TrackerConfig, lost_now: set[int],
                 doubted_now: set[int]) -> bool:
    """Its place was looked at and found empty: lost (within the relocation window) or
    doubted — by looks that can prove it gone (:func:`~locimem.tracker.belief.misses_can_lose`:
    a glimpse's box may not be where it stands)."""
    if not obj.lost and not misses_can_lose(obj, config):
        return False
    if obj.id in lost_now or obj.id in doubted_now:
        return True
    if obj.lost:
        return obj.lost_at is not None and t - obj.lost_at <= config.relocate_window_s
    conf = obj.confidence(t, config.tau_s, config.tau_unseen_s)
    return obj.n_missed >= config.doubt_after_misses and conf < config.publish_min


def _fits(old: ObjectState, new: ObjectState, config: TrackerConfig) -> bool:
    """One object could have been both: promoted (the new one settled: not a single glimpse
    whose box is still a guess), same label, the new one first seen after the old one was
    last seen, never seen together, farther apart than the tight radius — and the new one
    not where a move told by the old one's looks alone took it from (that thing, seen again
    there, is another). (The cheap tests first: a label's absent objects are many in a busy
    memory.)"""
    return (new.first_seen > old.last_seen and old.id != new.id and old.label == new.label
            and old.promoted and settled(new, config)
            and new.id not in old.together and old.id not in new.together
            and math.dist(old.place, new.center) > config.tight_radius_m
            and (old.moved_from is None
                 or math.dist(old.moved_from, new.center) > config.tight_radius_m))


def _likeness(config: TrackerConfig) -> float:
    """The cosine at which one embedding clearly picks out another thing as itself (the
    appearance tier's bar for re-identifying anything anywhere)."""
    return config.feature_match_min + config.feature_label_strict


def _pick(one: ObjectState, others: Iterable[ObjectState], config: TrackerConfig
          ) -> ObjectState | None:
    """The only candidate, or the one embeddings clearly pick out among several (each of
    them comparable with ``one``'s) — either way, when both sides have embeddings, only if it
    clearly looks like ``one``: cosine at least ``feature_match_min + feature_label_strict``,
    the likeness the appearance tier needs to re-identify a thing anywhere (two glasses of
    one class can read 0.84: another thing of that label, not this one moved), and among
    several ``feature_margin`` above the next. Reads ``others`` only as far as the answer
    needs: a second candidate that embeddings cannot tell from the first ends it."""
    first: ObjectState | None = None
    scored: list[tuple[float, int, ObjectState]] = []
    for o in others:
        if first is None:
            first = o
            continue
        if not scored:  # a second candidate: the first must be comparable too
            c = _cosine(one.feature, first.feature)
            if c is None:
                return None
            scored.append((c, first.id, first))
        c = _cosine(one.feature, o.feature)
        if c is None:
            return None
        scored.append((c, o.id, o))
    like = _likeness(config)
    if not scored:
        if first is not None:
            c = _cosine(one.feature, first.feature)
            if c is not None and c < like:
                return None
        return first
    scored.sort(key=lambda s: (-s[0], s[1]))
    best, second = scored[0][0], scored[1][0]
    if best >= like and best - second >= config.feature_margin:
        return scored[0][2]
    return None


def _recognised(new: ObjectState, state: MemoryState, config: TrackerConfig,
                skip: set[int]) -> int | None:
    """The remembered object ``new``'s embedding clearly picks out, as the appearance tier
    of association reads a detection's (cosine >= ``feature_match_min +
    feature_label_strict``, ``feature_margin`` above every other object but those in
    ``skip`` and ``new`` itself), or None."""
    f = new.feature
    if f is None or state.indexes.features.dim != f.shape[0]:
        return None
    need = _likeness(config)
    oid, best, second = best_two(state.indexes.features, f, need - config.feature_margin,
                                 lambda o: o != new.id and o not in skip)
    if oid is None or best < need or best - second < config.feature_margin:
        return None
    return oid


def relocations(state: MemoryState, config: TrackerConfig, t: float,
                after: dict[int, ObjectState], settled_now: Iterable[int],
                lost_now: set[int], doubted_now: set[int], dead: set[int]
                ) -> list[tuple[int, int, bool]]:
    """(old id, new id, by looks) triples that are one object that moved — by looks: the old
    one's place was not found empty, its embedding alone told it. ``after`` holds the objects
    sighted in this scan as they will be; ``settled_now`` the new identities settled in it
    (promoted, and seen as often as a promotion takes: :func:`~locimem.tracker.belief.settled`);
    ``lost_now`` / ``doubted_now`` the old ones lost or doubted by it; ``dead`` the ids this
    scan already ended or merged (left alone)."""
    settled_now = sorted(settled_now)
    if not settled_now and not lost_now and not doubted_now:
        return []

    def current(oid: int) -> ObjectState:
        return after.get(oid) or state.objects[oid]

    # the candidates come from the state's label index (the cost is that of the few absent or
    # newer objects of the labels concerned, not of the memory or of a label's every object),
    # as this scan leaves them; the sighted ones are filed under their new label
    sighted: dict[str, list[ObjectState]] = {}
    for o in after.values():
        if o.id not in dead:
            sighted.setdefault(o.label, []).append(o)
    # those doubted or lost by this scan that the index does not file as absent yet (the
    # index files only promoted objects: nothing else can be the old self of a move)
    missing: dict[str, list[ObjectState]] = {}
    for oid in (*lost_now, *doubted_now):
        if oid not in dead and oid in state.objects:
            o = current(oid)
            if o.promoted and o.n_missed == 0 and not o.lost:
                missing.setdefault(o.label, []).append(o)

    def absent(label: str, seen_before: float) -> Iterator[ObjectState]:
        """Those that could be unaccounted for: missed since their last sighting, lost, or
        doubted or lost in this scan — of those last seen before ``seen_before`` at least
        (read lazily: :func:`_pick` may stop early)."""
        objects = state.objects
        for oid in state.indexes.absent_with_label(label, seen_before):
            if oid not in after and oid not in dead:
                yield objects[oid]
        yield from missing.get(label, ())

    def newer_than(old: ObjectState) -> Iterator[ObjectState]:
        # a new identity is first seen after the old one was last seen
        objects = state.objects
        for oid in state.indexes.first_seen_after(old.label, old.last_seen):
            if oid not in after and oid not in dead:
                yield objects[oid]
        for o in sighted.get(old.label, ()):
            if o.first_seen > old.last_seen:
                yield o

    pairs: list[tuple[int, int, bool]] = []
    used: set[int] = set()
    for nid in settled_now:
        if nid in dead:
            continue
        new = current(nid)
        olds = (o for o in absent(new.label, new.first_seen) if _fits(o, new, config)
                and _unaccounted(o, t, config, lost_now, doubted_now))
        old = _pick(new, olds, config)
        by_looks = False
        if old is None:  # its place not yet found empty: recognised by its looks alone
            known = _recognised(new, state, config, dead)
            seen = state.objects.get(known) if known is not None and known not in after else None
            if seen is not None and _fits(seen, new, config):
                empty = _unaccounted(seen, t, config, lost_now, doubted_now)
                if not seen.lost or empty:
                    old, by_looks = seen, not empty
        if old is None or old.id in used:
            continue
        news = (o for o in newer_than(old) if _fits(old, o, config) and not o.lost)
        if _pick(old, news, config) is new:
            pairs.append((old.id, nid, by_looks))
            used.update((old.id, nid))
    for oid in sorted(lost_now | doubted_now):
        if oid in dead or oid in used or oid not in state.objects:
            continue
        old = state.objects[oid]
        if not old.promoted:  # a tentative that was missed: no old self of anything
            continue
        news = (o for o in newer_than(old)
                if o.id not in used and not o.lost and _fits(old, o, config))
        found = _pick(old, news, config)
        if found is None:
            continue
        olds = (o for o in absent(found.label, found.first_seen) if o.id not in used
                and _fits(o, found, config) and _unaccounted(o, t, config, lost_now, doubted_now))
        if _pick(found, olds, config) is old:
            pairs.append((oid, found.id, False))
            used.update((oid, found.id))
    return pairs
