"""A failed call changes nothing: every mutating call of ObjectMemory either lands whole (in the
store and in the live state) or leaves both exactly as they were — whatever raises, wherever.

Reproductions from issue #13 (items 1 and 2), and a failure injected partway through every
mutating verb."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

import locimem.tracker.commit as commit_module
from locimem import Camera, Detection, ObjectMemory
from locimem.check import MAX_ABS_COORD_M as MAX_COORD_M
from locimem.check import MAX_ID
from locimem.check import MAX_SIZE_M as MAX_EXTENT_M
from locimem.errors import InvalidInput, NotFound
from locimem.interchange.validate import validate_store

MUG = dict(label="mug", center=(1.2, 1.0, 0.8), size=(0.08, 0.08, 0.1))
TABLE = dict(label="kitchen table", center=(1.0, 1.0, 0.375), size=(1.2, 0.8, 0.75))


def _counts(mem: ObjectMemory) -> tuple[int, ...]:
    return tuple(mem._live.store.count(t, mem.scope) for t in ("commits", "observations", "events",
                                                          "objects"))


def _assert_consistent(mem: ObjectMemory) -> None:
    assert mem.snapshot() == mem.rebuild_from_log().snapshot()
    report = validate_store(mem._live.store, quick=True)
    assert report.ok, str(report)


# -- reproduction 1: a rejected define_room bricked the store ----------------------------------
def test_define_room_far_away_is_refused_and_the_store_keeps_working(store_path: Path) -> None:
    with ObjectMemory.open(store_path) as mem:
        with pytest.raises(InvalidInput, match=r"polygon of room 'a'\[1\]\.x must be within "
                                               r"1e\+06 m of the map origin, got 1e\+300"):
            mem.define_room("a", [(0, 0), (1e300, 0), (1e300, 1e300)])
        assert mem.rooms() == []
        assert mem._live.store.count("commits", mem.scope) == 0
        mem.define_room("b", [(0, 0), (1, 0), (1, 1)])
        assert [r.name for r in mem.rooms()] == ["b"]
        _assert_consistent(mem)
    for read_only in (True, False):  # every later open works and sees exactly room b
        with ObjectMemory.open(store_path, read_only=read_only) as mem:
            assert [r.name for r in mem.rooms()] == ["b"]


def test_room_at_the_limit_is_accepted(mem: ObjectMemory) -> None:
    edge = MAX_COORD_M
    mem.define_room("far", [(edge - 10, edge - 10), (edge, edge - 10), (edge, edge)],
                    z_range=(-edge, edge))
    assert [r.name for r in mem.rooms()] == ["far"]
    with pytest.raises(InvalidInput, match=r"z_range of room 'z'\[1\] must be within"):
        mem.define_room("z", [(0, 0), (1, 0), (1, 1)], z_range=(0, 2e6))
    with pytest.raises(InvalidInput, match="must be within"):
        mem.import_rooms({"rooms": [{"name": "ok", "polygon": [(0, 0), (1, 0), (1, 1)]},
                                    {"name": "bad", "polygon": [(0, 0), (-1e7, 0), (0, 1)]}]})
    assert [r.name for r in mem.rooms()] == ["far"]


# -- reproduction 2: an exception partway through observe corrupted the live state -------------
def test_zero_size_sighting_of_a_prior_object_is_a_legal_scan(store_path: Path) -> None:
    with ObjectMemory.open(store_path) as mem:
        mem.load_prior([{"label": "cup", "center": (1, 1, 0.8), "size": (0.1, 0.1, 0.1)}],
                       scene="s")
        r = mem.observe(1.0, [Detection("cup", 0.9, (1.5, 1, 0.8), (0, 0, 0))])
        assert r.assignments == (1,)
        cup = mem.get(1)  # a jump beyond the tight radius takes the sighting's box
        assert (cup.center, cup.size) == ((1.5, 1.0, 0.8), (0.0, 0.0, 0.0))
        mem.observe(2.0, [Detection("cup", 0.9, (1.0, 1, 0.8), (0.1, 0.1, 0.1))])
        _assert_consistent(mem)
    with ObjectMemory.open(store_path, read_only=True) as mem:
        assert mem.get(1).label == "cup"


@pytest.mark.parametrize(("make", "message"), [
    (lambda: Detection("cup", 0.9, (1.5, 1, 0.8), (1e19, 1e19, 1e19)),
     r"size must be at most 10000 m on every axis, got \(1e\+19, 1e\+19, 1e\+19\)"),
    (lambda: Detection("cup", 0.9, (1e308, 0, 0), (0.1, 0.1, 0.1)),
     r"center must lie within 1e\+06 m of the origin on every axis \(the map frame's "
     r"domain\), got \(1e\+308, 0\.0, 0\.0\)"),
    (lambda: Camera((0, 0, 2e6), (1, 0, 0, 0), 90.0, 8.0), r"camera\.position must lie within"),
    (lambda: Camera((0, 0, 0), (1, 0, 0, 0), 90.0, 1e5), r"camera\.range_m must be at most"),
])
def test_boxes_and_positions_beyond_the_domain_are_refused(make: Callable[[], Any],
                                                           message: str) -> None:
    with pytest.raises(InvalidInput, match=message):
        make()


def test_limits_are_inclusive() -> None:
    d = Detection("crate", 0.9, (MAX_COORD_M, -MAX_COORD_M, 0), (MAX_EXTENT_M, 0, 1))
    assert d.center == (1e6, -1e6, 0.0) and d.size == (1e4, 0.0, 1.0)


def test_huge_prior_entry_and_move_are_refused(mem: ObjectMemory) -> None:
    with pytest.raises(InvalidInput, match=r"prior entry 0 size must be at most"):
        mem.load_prior([{"label": "cup", "center": (1, 1, 0.8), "size": (1e300, 1, 1)}],
                       scene="s")
    with pytest.raises(InvalidInput, match=r"prior entry 1 center must lie within"):
        mem.load_prior([MUG, {"label": "cup", "center": (1, 1e7, 0.8), "size": (1, 1, 1)}],
                       scene="s")
    assert mem._live.store.count("commits", mem.scope) == 0 and mem.prior_map() == {}
    mem.load_prior([MUG], scene="s")
    with pytest.raises(InvalidInput, match=r"center must lie within"):
        mem.move(1, (2e6, 0, 0))
    assert mem.get(1).center == (1.2, 1.0, 0.8)


def test_ids_beyond_63_bits_are_invalid_not_overflow(mem: ObjectMemory) -> None:
    mem.observe(0.0, [Detection(**MUG, confidence=0.9)])
    for bad in (2**63, -(2**63) - 1, 2**200):
        with pytest.raises(InvalidInput, match="object_id must be"):
            mem.get(bad)
        with pytest.raises(InvalidInput, match="object_id must be"):
            mem.forget(bad)
    with pytest.raises(NotFound):
        mem.get(MAX_ID)


# -- a failure injected partway through every mutating verb ------------------------------------
def _prepared(path: Path) -> ObjectMemory:
    """A memory with rooms, a prior map, live objects and two pending deltas."""
    mem = ObjectMemory.open(path, scope="all")
    mem.define_room("kitchen", [(0, 0), (6, 0), (6, 4), (0, 4)])
    mem.define_room("hall", [(6, 0), (8, 0), (8, 4), (6, 4)])
    mem.load_prior([TABLE, MUG], scene="survey")
    for t in range(1, 7):
        mem.observe(float(t), [Detection("mug", 0.9, (4.1, 1, 0.95), (0.08, 0.08, 0.1)),
                               Detection("plant", 0.9, (3, 3, 0.2), (0.3, 0.3, 0.4)),
                               Detection(**TABLE, confidence=0.9)])
    assert [(d["id"], d["kind"], d["status"]) for d in mem.deltas()] == [
        (1, "moved", "pending"), (2, "added", "pending")]
    return mem


VERBS: dict[str, Callable[[ObjectMemory], Any]] = {
    "observe": lambda m: m.observe(7.0, [Detection("mug", 0.9, (4.1, 1, 0.95), (0.08,) * 3),
                                         Detection("book", 0.9, (2, 2, 0.5), (0.2,) * 3)]),
    "observe_camera": lambda m: m.observe(
        7.0, [Detection("mug", 0.9, (4.1, 1, 0.95), (0.08,) * 3)],
        camera=Camera((0.0, 1.0, 1.0), (1, 0, 0, 0), 90.0, 8.0)),
    "define_room": lambda m: m.define_room("porch", [(-4, 0), (0, 0), (0, 4), (-4, 4)]),
    "import_rooms": lambda m: m.import_rooms(
        {"rooms": [{"name": "porch", "polygon": [(-4, 0), (0, 0), (0, 4), (-4, 4)]}],
         "connections": [["porch", "kitchen"]]}),
    "connect_rooms": lambda m: m.connect_rooms("kitchen", "hall"),
    "relabel": lambda m: m.relabel(4, "fern", actor="alice"),
    "move": lambda m: m.move(1, (1.5, 1.0, 0.375)),
    "set_attributes": lambda m: m.set_attributes(4, {"color": "green"}),
    "forget": lambda m: m.forget(4, reason="not ours"),
    "confirm_delta": lambda m: m.confirm_delta(1),
    "reject_delta": lambda m: m.reject_delta(2),
    "consolidate": lambda m: (m.confirm_delta(1), m.consolidate()),
}


@pytest.fixture
def prepared(tmp_path: Path) -> Iterator[ObjectMemory]:
    mem = _prepared(tmp_path / "all.loci")
    try:
        yield mem
    finally:
        mem.close()


class Boom(RuntimeError):
    pass


def _fail_at(monkeypatch: pytest.MonkeyPatch, name: str, after: int) -> list[int]:
    """Make ``locimem.tracker.commit.<name>`` raise on its call number ``after`` (0-based),
    after the calls before it did their work: a failure partway through."""
    real = getattr(commit_module, name)
    calls = [0]

    def failing(*args: Any, **kwargs: Any) -> Any:
        calls[0] += 1
        if calls[0] > after:
            raise Boom(f"injected into {name}")
        return real(*args, **kwargs)

    monkeypatch.setattr(commit_module, name, failing)
    return calls


@pytest.mark.parametrize("where", ["apply", "detect_deltas", "append"])
@pytest.mark.parametrize("verb", sorted(VERBS))
def test_a_failure_partway_through_any_verb_changes_nothing(
        prepared: ObjectMemory, monkeypatch: pytest.MonkeyPatch, verb: str, where: str) -> None:
    mem = prepared
    before, counts = mem.snapshot(), _counts(mem)
    relations = mem._live._state.relations_snapshot()
    if verb == "consolidate":  # fail the consolidation itself, not the confirmation before it
        mem.confirm_delta(1)
        before, counts = mem.snapshot(), _counts(mem)
        relations = mem._live._state.relations_snapshot()
    with monkeypatch.context() as patch:
        if where == "append":
            def atomic_append(scope: str, records: Any, delta: Any) -> None:
                with mem._live.store.atomic() as conn:
                    _write_rows(conn, scope, records, delta)  # the rows go in ...
                    raise Boom("injected inside the append's transaction")  # ... rolled back

            patch.setattr(mem._live.store, "append", atomic_append)
        else:
            _fail_at(patch, where, after=1 if where == "apply" else 0)
        with pytest.raises(Boom):
            if verb == "consolidate":
                mem.consolidate()
            else:
                VERBS[verb](mem)
    assert mem.snapshot() == before
    assert mem._live._state.relations_snapshot() == relations
    assert _counts(mem) == counts
    _assert_consistent(mem)
    VERBS[verb](mem) if verb != "consolidate" else mem.consolidate()  # and it works afterwards
    assert _counts(mem)[0] == counts[0] + 1
    _assert_consistent(mem)


def _write_rows(conn: Any, scope: str, records: Any, delta: Any) -> None:
    from locimem.store.sqlite.codec import record_rows as _record_rows
    from locimem.store.sqlite.rows import write_rows

    write_rows(conn, scope, _record_rows(scope, records), delta)


def test_a_failure_inside_decide_leaves_the_loss_queue_whole(
        prepared: ObjectMemory, monkeypatch: pytest.MonkeyPatch) -> None:
    """decide refreshes the state's loss queue before it can fail; a later scan still loses
    exactly the objects it should."""
    mem = prepared
    before = mem.snapshot()
    from locimem.tracker.associate import _Associator

    def boom(*args: Any, **kwargs: Any) -> Any:
        raise Boom("injected into association")

    with monkeypatch.context() as patch:
        patch.setattr(_Associator, "solve", boom)
        with pytest.raises(Boom):
            mem.observe(100.0, [Detection("book", 0.9, (2, 2, 0.5), (0.2,) * 3)])
    assert mem.snapshot() == before
    r = mem.observe(100.0, [])
    lost = sorted(e.object_id for e in r.events if e.kind.value == "LOST")
    # seen live without a camera, then unseen: lost by time; the prior table (1) and mug (2)
    # are believed until a camera looks (sightings without one do not change that)
    assert lost == [3, 4]
    _assert_consistent(mem)


def test_compact_failing_in_the_store_changes_nothing(
        prepared: ObjectMemory, monkeypatch: pytest.MonkeyPatch) -> None:
    mem = prepared
    for t in range(7, 40):
        mem.observe(float(t), [Detection(**TABLE, confidence=0.9)])
    before, counts = mem.snapshot(), _counts(mem)

    def boom(*args: Any, **kwargs: Any) -> None:
        raise Boom("injected into compact")

    with monkeypatch.context() as patch:
        patch.setattr(mem._live.store, "compact", boom)
        with pytest.raises(Boom):
            mem.compact(older_than_s=5.0)
    assert mem.snapshot() == before and _counts(mem) == counts
    report = mem.compact(older_than_s=5.0)
    assert report.removed > 0
    _assert_consistent(mem)


# -- found by the stateful fuzzer ----------------------------------------------------------------
def test_a_rejected_detections_embedding_fixes_the_width_too(store_path: Path,
                                                             tmp_path: Path) -> None:
    """A rejected detection's embedding is logged; a later embedding of another width used to
    be accepted, and the scope could then not be exported (one matrix, two widths)."""
    from locimem.interchange.export import export_memory

    weak = Detection("mug", 0.01, (1, 1, 1), (0.1, 0.1, 0.1), feature=(1.0, 0.0))
    wide = Detection("mug", 0.9, (1, 1, 1), (0.1, 0.1, 0.1), feature=(1.0, 0.0, 0.0, 0.0))
    with ObjectMemory.open(store_path, scope="fz") as mem:
        mem.observe(0.0, [weak])
        with pytest.raises(InvalidInput, match="feature has width 4, but this memory's "
                                               "embeddings have width 2"):
            mem.observe(1.0, [wide])
    with ObjectMemory.open(store_path, scope="fz") as mem:  # and after reopening
        with pytest.raises(InvalidInput, match="have width 2"):
            mem.observe(1.0, [wide])
        mem.observe(1.0, [Detection("mug", 0.9, (1, 1, 1), (0.1,) * 3, feature=(0.0, 1.0))])
    export_memory(store_path, tmp_path / "out", scope="fz")
    assert (tmp_path / "out" / "manifest.json").is_file()


@pytest.mark.parametrize("where", ["apply", "detect_deltas"])
def test_load_prior_failing_partway_changes_nothing(store_path: Path,
                                                    monkeypatch: pytest.MonkeyPatch,
                                                    where: str) -> None:
    with ObjectMemory.open(store_path) as mem:
        mem.define_room("kitchen", [(0, 0), (6, 0), (6, 4), (0, 4)])
        before, counts = mem.snapshot(), _counts(mem)
        with monkeypatch.context() as patch:
            _fail_at(patch, where, after=3 if where == "apply" else 0)
            with pytest.raises(Boom):
                mem.load_prior([TABLE, MUG], scene="survey")
        assert mem.snapshot() == before and _counts(mem) == counts
        assert mem.prior_map() == {} and mem.objects() == []
        assert mem.load_prior([TABLE, MUG], scene="survey") == [1, 2]  # ids not used up
        _assert_consistent(mem)
