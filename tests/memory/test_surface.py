"""ObjectMemory's public surface: a thin facade whose members are named here, one by one.

A new public member fails this test on purpose: add it to API.md's picture (and here) only
as a deliberate addition; internals (the state, the store, indexes) stay off the surface.
"""

from __future__ import annotations

import inspect

import pytest

from locimem import Detection, ObjectMemory
from locimem.errors import InvalidInput
from locimem.memory import reader_of
from locimem.query.reader import MemoryReader

READS = {
    "anchors", "archived_keyframes", "as_of", "audit", "changes_since", "delta", "deltas",
    "describe", "events", "find", "get", "hidden_ids", "history", "iter_audit", "iter_events",
    "iter_history", "keyframes", "last_seen", "level_of", "near", "nearest", "objects",
    "path_rooms", "prior_map", "query", "recall", "recent", "rejected", "rejections",
    "related", "relations", "room_contents", "room_of", "rooms", "snapshot", "stale",
    "tombstones", "tracked", "where_was", "within",
}
WRITES = {
    "observe", "observe_frame", "relabel", "move", "set_attributes", "forget", "merge",
    "split", "correct_poses", "map_epochs", "align_epoch", "load_prior", "confirm_delta",
    "reject_delta", "consolidate", "define_room", "connect_rooms", "remove_room",
    "import_rooms", "compact",
}
LIFECYCLE = {"open", "close", "refresh", "rebuild_from_log", "scope", "config", "now",
             "read_only"}
AGENTS = {"tools", "scene_prompt", "answer"}


def _public(cls: type) -> set[str]:
    return {name for name in dir(cls) if not name.startswith("_")}


def test_the_public_members_are_exactly_these() -> None:
    assert _public(ObjectMemory) == READS | WRITES | LIFECYCLE | AGENTS


def test_internals_are_not_on_the_surface() -> None:
    with ObjectMemory.open(":memory:") as mem:
        for name in ("state", "store", "semantic_index", "until_commit"):
            assert not hasattr(mem, name), name


def test_the_facade_is_one_class_not_a_tower_of_mixins() -> None:
    assert ObjectMemory.__mro__ == (ObjectMemory, object)


def test_every_read_of_a_reader_is_on_the_facade_and_returns_the_same() -> None:
    reader_only = _public(MemoryReader) - _public(ObjectMemory)
    assert reader_only == {"state", "store", "semantic_index", "until_commit"}
    with ObjectMemory.open(":memory:", scope="home") as mem:
        mem.observe(1.0, [Detection("cup", 0.9, (1.0, 2.0, 0.8), (0.1, 0.1, 0.1))])
        live = reader_of(mem)
        assert mem.get(1) == live.get(1) and mem.tracked() == live.tracked()
        assert mem.now == live.now == 1.0 and mem.scope == "home"


DELEGATED = READS | (WRITES - {"observe", "observe_frame"}) | {"close", "refresh",
                                                                "rebuild_from_log"}


@pytest.mark.parametrize("name", sorted(DELEGATED))
def test_a_delegated_member_shows_its_services_signature_and_text(name: str) -> None:
    member = getattr(ObjectMemory, name)
    assert member.__doc__ and inspect.signature(member).parameters  # (the function's own)
    with ObjectMemory.open(":memory:") as mem:
        bound = getattr(mem, name)
        assert bound.__doc__ == member.__doc__
        assert list(inspect.signature(bound).parameters) == \
            list(inspect.signature(member).parameters)[1:]  # (without self)


def test_reader_of_takes_a_memory_or_a_view_and_nothing_else() -> None:
    with ObjectMemory.open(":memory:") as mem:
        mem.observe(1.0, [])
        view = mem.as_of(1.0)
        assert reader_of(view) is view
        assert isinstance(reader_of(mem), MemoryReader)
        with pytest.raises(InvalidInput, match="must be an ObjectMemory"):
            reader_of("home.loci")
