"""The state's label index — each label's objects, the promoted ones missed or lost in their
order of last sighting, and their order of first sighting — is kept exactly as a rebuild from the
objects makes it, through a day with moves across rooms, misses, losses, merges and
relabels."""

from __future__ import annotations

import pytest

from locimem import ObjectMemory
from locimem.sim.scenarios import build
from locimem.tracker.state import MemoryState


def _derived(state: MemoryState) -> tuple[dict, dict, dict]:
    """The index as the objects define it (labels with no object left are not compared)."""
    by_label: dict[str, set[int]] = {}
    absent: dict[str, list[tuple[float, int]]] = {}
    born: dict[str, list[tuple[float, int]]] = {}
    for o in state.objects.values():
        by_label.setdefault(o.label, set()).add(o.id)
        born.setdefault(o.label, []).append((o.first_seen, o.id))
        if o.promoted and (o.lost or o.n_missed):
            absent.setdefault(o.label, []).append((o.last_seen, o.id))
    return (by_label, {label: sorted(a) for label, a in absent.items()},
            {label: sorted(b) for label, b in born.items()})


def _index(state: MemoryState) -> tuple[dict, dict, dict]:
    ix = state.indexes
    return ({k: v for k, v in ix._by_label.items() if v},
            {k: v for k, v in ix._absent.items() if v},
            {k: v for k, v in ix._born.items() if v})


@pytest.mark.parametrize("name", ["moves_across_rooms", "thin_removals", "heavy_flicker"])
def test_the_live_label_index_is_the_one_the_objects_define(name: str) -> None:
    scenario = build(name)
    with ObjectMemory.open() as mem:
        for k, frame in enumerate(scenario.frames):
            mem.observe(frame.t, list(frame.detections), frame.camera)
            if k % 25 == 0:
                assert _index(mem._live._state) == _derived(mem._live._state), frame.t
        state = mem._live._state
        assert _index(state) == _derived(state)
        assert any(state.indexes._absent.values())  # the day did miss and lose things
        assert _index(mem.rebuild_from_log()) == _index(state)
        for label, absent in _derived(state)[1].items():
            for t in (absent[0][0], absent[len(absent) // 2][0], absent[-1][0] + 1.0):
                assert state.indexes.absent_with_label(label, t) == \
                    [oid for s, oid in absent if s < t]
        for label, born in _derived(state)[2].items():
            for t in (-1.0, born[len(born) // 2][0], born[-1][0]):
                assert state.indexes.first_seen_after(label, t) == [oid for f, oid in born if f > t]
