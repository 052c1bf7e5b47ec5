"""``RelationIndex.built`` leaves exactly the index sequential ``update`` calls leave: the
same relations with the same confidences (to the bit), the same answers, and the same changes
for every update after it."""

from __future__ import annotations

import random

import pytest

from locimem.scene.relations import Box, RelationConfig, RelationIndex

LABELS = (("item", None), ("item", "container"), ("furniture", "surface"),
          ("furniture", "container"), ("furniture", None), ("room", None))


def _scene(seed: int, n: int) -> list[tuple[int, Box]]:
    rng = random.Random(seed)
    out = []
    ids = rng.sample(range(1, 10 * n + 1), n)
    for oid in ids:
        level, role = rng.choice(LABELS)
        if rng.random() < 0.02:  # a mis-detection the size of a house
            size = (rng.uniform(40, 90), rng.uniform(40, 90), rng.uniform(0, 3))
        elif rng.random() < 0.1:  # degenerate extents
            size = (0.0, rng.choice((0.0, 0.5)), rng.uniform(0, 1))
        else:
            size = tuple(rng.choice((0.5, 1.0, rng.uniform(0.05, 2.5))) for _ in range(3))
        # clustered, often on cell boundaries and touching, so closed overlaps matter
        center = (rng.choice((rng.uniform(-6, 6), float(rng.randint(-6, 6)))),
                  rng.choice((rng.uniform(-6, 6), float(rng.randint(-6, 6)))),
                  rng.choice((0.25, 0.5, 0.75, 1.0, rng.uniform(0, 2))))
        out.append((oid, Box(center, size, level, role)))
    return out


def _sequential(entries: list[tuple[int, Box]], config: RelationConfig) -> RelationIndex:
    index = RelationIndex(config)
    for oid, box in entries:
        index.update(oid, box.center, box.size, box.level, box.role)
    return index


def _answers(index: RelationIndex, ids: list[int]) -> list:
    return [index.relations_of(i) for i in ids] + [
        (index.subjects(r, i), index.objects(i, r))
        for i in ids for r in ("on", "under", "in", "contains", "next_to", "near")]


@pytest.mark.parametrize("seed", range(12))
def test_built_equals_sequential_updates(seed: int) -> None:
    config = RelationConfig() if seed % 3 else RelationConfig(near_m=2.5, next_to_gap_m=0.6)
    entries = _scene(seed, 150 + 40 * seed)
    old = _sequential(entries, config)
    new = RelationIndex.built(entries, config)
    assert new.all() == old.all()
    assert {k: v.hex() for k, v in new.all().items()} == \
        {k: v.hex() for k, v in old.all().items()}  # to the bit
    assert len(old.all()) > 0
    ids = [oid for oid, _ in entries]
    assert _answers(new, ids) == _answers(old, ids)
    # what comes after is the same too (the lazily built grid finds the same candidates)
    rng = random.Random(seed + 1000)
    for oid, box in rng.sample(entries, 20):
        c = (box.center[0] + rng.uniform(-1, 1), box.center[1], box.center[2])
        assert new.update(oid, c, box.size, box.level, box.role, t=5.0) == \
            old.update(oid, c, box.size, box.level, box.role, t=5.0)
    for oid, _ in rng.sample(entries, 10):
        assert new.remove(oid) == old.remove(oid)
    assert new.all() == old.all()


def test_trusted_box_is_the_checked_box() -> None:
    checked = Box((1.1, 2.3, 0.7), (0.3, 0.25, 1.9), "furniture", "surface")
    trusted = Box.trusted((1.1, 2.3, 0.7), (0.3, 0.25, 1.9), "furniture", "surface")
    assert trusted == checked
    assert (trusted.lo, trusted.hi) == (checked.lo, checked.hi)


def test_built_of_nothing_and_of_one() -> None:
    assert RelationIndex.built([]).all() == {}
    one = RelationIndex.built([(7, Box((0, 0, 0), (1, 1, 1)))])
    assert one.all() == {} and 7 in one and one.relations_of(7) == []


def test_memory_state_rebuild_equals_the_old_sequential_rebuild() -> None:
    """What an open builds (``MemoryState.rebuild_indexes``) is what the per-object rebuild
    built: live, promoted objects updated one by one in the order they settled."""
    from locimem.model import ObjectState
    from locimem.scene.levels import level_of, role_of
    from locimem.tracker.state import MemoryState

    rng = random.Random(3)
    state = MemoryState()
    labels = ("cup", "kitchen table", "shelf", "drawer", "box", "chair", "book", "bowl")
    for oid in range(1, 600):
        place = (rng.uniform(-8, 8), rng.uniform(-8, 8), rng.choice((0.4, 0.8, 1.0)))
        size = (rng.uniform(0.1, 2), rng.uniform(0.1, 2), rng.uniform(0.1, 1))
        state.objects[oid] = ObjectState(
            id=oid, label=rng.choice(labels), center=place, size=size, place=place,
            first_seen=0.0, last_seen=1.0, promoted=rng.random() < 0.9,
            lost=rng.random() < 0.1, place_size=size, place_t=float(rng.randint(0, 20)),
            attributes={"level": "furniture"} if rng.random() < 0.05 else {})
    state.rebuild_indexes(60.0)
    old = RelationIndex(state.scene.relations.config)
    for o in sorted((o for o in state.objects.values() if o.promoted and not o.lost),
                    key=lambda o: (o.place_t, o.id)):
        old.update(o.id, o.place, o.place_size, level_of(o), role_of(o))
    expected = {f"{s} {r} {o}": c.hex() for (s, r, o), c in sorted(old.all().items())}
    assert {k: c.hex() for k, c in state.relations_snapshot().items()} == expected
    assert len(expected) > 100
