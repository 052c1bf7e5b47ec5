"""Retention: compaction bounds the observation log to, per object (and per rejection key), the
first and last sighting, every sighting in a commit that changed its place or label, and one
sighting per trail window — keeping events, commits, tombstones and the audit whole, and replay
(live == log == reopened, as-of at or after the horizon) exact, even when killed mid-way."""

from __future__ import annotations

import itertools
import random
import signal
import tempfile
import textwrap
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from locimem import EventKind, ObjectMemory, TrackerConfig
from locimem.errors import InvalidInput, ReadOnly
from locimem.model import CompactionReport, Detection
from tests.helpers import det, kill_at_random, start_child

TABLES = ("commits", "observations", "events", "objects", "tombstones", "rejection_keys",
          "checkpoints")


def _all_rows(memory: ObjectMemory) -> dict[str, list[tuple[Any, ...]]]:
    conn = memory._live.store.conn
    return {t: conn.execute(f"SELECT * FROM {t} ORDER BY 1, 2").fetchall() for t in TABLES}


def _same_state(snapshot: dict[str, Any]) -> dict[str, Any]:
    """A snapshot without the rejection keys' sequence numbers: a compaction's own record
    (its COMPACTED event) takes a seq, so a compacted store numbers later records one higher
    than an uncompacted twin while believing exactly the same."""
    out = dict(snapshot)
    out["rejections"] = {k: {f: v for f, v in r.items() if f not in ("first_seq", "last_seq")}
                         for k, r in snapshot["rejections"].items()}
    return out


def _story_events(memory: Any) -> list[tuple[Any, ...]]:
    """Events without seq/commit numbers (a compaction shifts them) and without COMPACTED."""
    return [(e.t, e.kind, e.object_id, e.label, e.data) for e in memory.events()
            if e.kind is not EventKind.COMPACTED]


# -- a constructed stream with known answers ----------------------------------------------------
def _scan(t: int) -> list[Detection]:
    """Cup #1 at (1,1) MOVED to (1.9,1) at t=25; book #2 relabelled box at t=33 (label vote);
    a rejected plate every scan in one cell, and twice in another; lamp #3 seen t=0..4,
    forgotten at t=5, then suppressed (key tomb:3) from t=6 on."""
    dets = [det("cup", 1.0 if t < 25 else 1.9, 1.0, conf=0.5),
            det("book", 5.0, 5.0, conf=0.5) if t < 20 else det("box", 5.0, 5.0, conf=0.75),
            det("plate", 3.0, 3.0, conf=0.01)]
    if t in (5, 6):
        dets.append(det("plate", 8.0, 8.0, conf=0.01))
    if t != 5:
        dets.append(det("lamp", 7.0, 7.0))
    return dets


def _ingest(memory: ObjectMemory, times: range) -> list[Any]:
    results = []
    for t in times:
        results.append(memory.observe(float(t), _scan(t)))
        if t == 5:
            memory.forget(3, actor="bob", reason="privacy", t=5.0)
    return results


def _groups(memory: ObjectMemory) -> dict[Any, list[float]]:
    out: dict[Any, list[float]] = {}
    for o in memory._live.store.observations(memory.scope):
        out.setdefault(o.object_id if o.object_id is not None else o.key, []).append(o.t)
    return out


AFTER = [float(t) for t in range(50, 60)]  # newer than the horizon: never thinned
KEPT = {
    1: [0.0, 10.0, 20.0, 25.0, 30.0, 40.0, 49.0, *AFTER],  # first, trail, MOVED, last
    2: [0.0, 10.0, 20.0, 30.0, 33.0, 40.0, 49.0, *AFTER],  # first, trail, LABEL_CHANGED, last
    3: [0.0, 4.0],  # first and last before it was forgotten
    "plate@15,15,4": [0.0, 10.0, 20.0, 30.0, 40.0, 49.0, *AFTER],
    "plate@40,40,4": [5.0, 6.0],
    "tomb:3": [6.0, 16.0, 26.0, 36.0, 46.0, 49.0, *AFTER],  # trail windows start at t=6
}


@pytest.fixture
def pair(tmp_path: Path) -> Iterator[tuple[ObjectMemory, ObjectMemory]]:
    """The same stream (t=0..59) in two stores; only the first will be compacted."""
    compacted = ObjectMemory.open(tmp_path / "c.loci", scope="c", durable=False)
    twin = ObjectMemory.open(tmp_path / "u.loci", scope="c", durable=False)
    r1, r2 = _ingest(compacted, range(60)), _ingest(twin, range(60))
    assert [r.assignments for r in r1] == [r.assignments for r in r2]
    story = [(e.t, e.kind.value, e.object_id) for r in r1 for e in r.events]
    assert story == [(0.0, "APPEARED", 1), (0.0, "APPEARED", 2), (0.0, "APPEARED", 3),
                     (5.0, "PROMOTED", 1), (5.0, "PROMOTED", 2), (6.0, "SUPPRESSED", 3),
                     (25.0, "MOVED", 1), (33.0, "LABEL_CHANGED", 2)]
    try:
        yield compacted, twin
    finally:
        compacted.close()
        twin.close()


def test_compaction_keeps_exactly_first_last_changes_and_trail(
        pair: tuple[ObjectMemory, ObjectMemory]) -> None:
    memory, _ = pair
    before_obs = {o.seq: o for o in memory._live.store.observations("c")}
    report = memory.compact(older_than_s=10.0, trail_s=10.0, actor="janitor", reason="nightly")
    # horizon: the last commit at or before t = 59 - 10 (scans t=0..49 and the forget)
    sizes = (report.bytes_before, report.bytes_after)
    assert report == CompactionReport(horizon_commit=51, horizon_t=49.0, examined=201,
                                      removed=171, dry_run=False, bytes_before=sizes[0],
                                      bytes_after=sizes[1], reclaimed=False)
    assert report.kept == 30
    assert all(isinstance(n, int) and n > 0 for n in sizes)  # a file store has a size
    assert _groups(memory) == KEPT
    # what is kept is the very same record
    for o in memory._live.store.observations("c"):
        assert o == before_obs[o.seq]
    assert len(before_obs) - len(memory._live.store.observations("c")) == 171


def test_events_commits_tombstones_and_audit_are_untouched(
        pair: tuple[ObjectMemory, ObjectMemory]) -> None:
    memory, _ = pair
    before = _all_rows(memory)
    audit, snap = memory.audit(), memory.snapshot()
    memory.compact(older_than_s=10.0, trail_s=10.0, actor="janitor", reason="nightly")
    after = _all_rows(memory)
    for table in ("objects", "tombstones", "rejection_keys"):
        assert after[table] == before[table], table
    # the log grew by exactly one maintenance commit with one COMPACTED event
    assert after["commits"][:-1] == before["commits"]
    assert after["events"][:-1] == before["events"]
    assert len(after["commits"]) == len(before["commits"]) + 1
    (entry,) = memory.audit(kind="maintenance")
    assert (entry.actor, entry.reason, entry.t) == ("janitor", "nightly", 59.0)
    assert [(e.kind, e.object_id, e.data) for e in entry.events] == [
        (EventKind.COMPACTED, 0, {"horizon_commit": 51, "horizon_t": 49.0, "examined": 201,
                                  "removed": 171, "trail_s": 10.0})]
    assert memory.audit()[:-1] == audit
    assert memory.snapshot() == snap
    assert len(after["checkpoints"]) == 1
    assert (after["checkpoints"][0][0], after["checkpoints"][0][1]) == ("c", 51)


def test_dry_run_writes_nothing(pair: tuple[ObjectMemory, ObjectMemory]) -> None:
    memory, _ = pair
    before = _all_rows(memory)
    report = memory.compact(older_than_s=10.0, trail_s=10.0, dry_run=True)
    assert report == CompactionReport(51, 49.0, 201, 171, True)
    assert _all_rows(memory) == before
    # and the real run then does exactly what the dry run said
    real = memory.compact(older_than_s=10.0, trail_s=10.0)
    assert (real.horizon_commit, real.examined, real.removed) == (51, 201, 171)


def test_nothing_old_enough_writes_nothing(pair: tuple[ObjectMemory, ObjectMemory]) -> None:
    memory, _ = pair
    before = _all_rows(memory)
    report = memory.compact(older_than_s=1000.0)
    assert (report.horizon_commit, report.examined, report.removed) == (None, 0, 0)
    assert _all_rows(memory) == before
    memory.compact(older_than_s=10.0, trail_s=10.0)
    before = _all_rows(memory)
    again = memory.compact(older_than_s=10.0, trail_s=10.0)  # same horizon: already thinned
    assert (again.examined, again.removed) == (0, 0)
    assert _all_rows(memory) == before


def test_repeated_compaction_with_nothing_new_writes_nothing(
        pair: tuple[ObjectMemory, ObjectMemory]) -> None:
    memory, _ = pair
    memory.compact(older_than_s=0.0)
    before = _all_rows(memory)
    report = memory.compact(older_than_s=0.0)
    assert (report.examined, report.removed) == (0, 0)
    assert _all_rows(memory) == before


def test_bad_arguments_raise_and_write_nothing(pair: tuple[ObjectMemory, ObjectMemory]) -> None:
    memory, _ = pair
    before = _all_rows(memory)
    for kwargs, message in (
        ({"older_than_s": -1.0}, r"^older_than_s must be >= 0"),
        ({"older_than_s": float("nan")}, r"^older_than_s must be a finite number"),
        ({"trail_s": 0.0}, r"^trail_s must be > 0"),
        ({"trail_s": "10"}, r"^trail_s must be a finite number"),
        ({"actor": ""}, r"^actor must not be empty"),
        ({"reason": "x" * 1001}, r"^reason must be at most 1000"),
    ):
        with pytest.raises(InvalidInput, match=message):
            memory.compact(**kwargs)
    assert _all_rows(memory) == before


def test_replay_is_exact_after_compaction_and_further_ingest(
        pair: tuple[ObjectMemory, ObjectMemory], tmp_path: Path) -> None:
    memory, twin = pair
    memory.compact(older_than_s=10.0, trail_s=10.0)
    snap = memory.snapshot()
    assert snap == twin.snapshot()  # nothing numbered after the compaction yet
    assert memory.rebuild_from_log().snapshot() == snap
    memory.close()
    with ObjectMemory.open(tmp_path / "c.loci", scope="c") as again:
        assert again.snapshot() == snap
        assert again.rebuild_from_log().snapshot() == snap
        # further ingest and corrections decide exactly as the uncompacted twin does
        decisions = []
        for m in (again, twin):
            results = _ingest(m, range(60, 70))
            m.relabel(1, "mug", t=70.0)
            m.move(2, (6.0, 6.0, 0.9), t=70.0)
            m.forget(1, t=71.0)
            results.append(m.observe(72.0, [det("cup", 1.9, 1.0), det("box", 6.0, 6.0)]))
            if m is again:
                m.compact(older_than_s=5.0, trail_s=3.0)
            results.append(m.observe(80.0, [det("lamp", 7.0, 7.0)]))
            decisions.append([(r.assignments, r.rejected) for r in results])
        assert decisions[0] == decisions[1]
        snap = again.snapshot()
        assert _same_state(snap) == _same_state(twin.snapshot())
        assert again.rebuild_from_log().snapshot() == snap
        assert _story_events(again) == _story_events(twin)
    with ObjectMemory.open(tmp_path / "c.loci", scope="c") as third:
        assert third.snapshot() == snap
        assert third.rebuild_from_log().snapshot() == snap
        assert len(third.audit(kind="maintenance")) == 2


@pytest.mark.parametrize("t", [49.0, 49.5, 50.0, 55.0, 59.0, 1e6])
def test_as_of_at_or_after_the_horizon_is_exact(pair: tuple[ObjectMemory, ObjectMemory],
                                                t: float) -> None:
    memory, twin = pair
    memory.compact(older_than_s=10.0, trail_s=10.0)
    view, expected = memory.as_of(t), twin.as_of(t)
    assert view.snapshot() == expected.snapshot()
    assert view.objects() == expected.objects()
    assert view.rejections() == expected.rejections()
    assert view.tombstones() == expected.tombstones()
    assert _story_events(view) == _story_events(expected)


@pytest.mark.parametrize("t", [0.0, 5.0, 24.0, 25.0, 32.0, 33.0, 40.0])
def test_as_of_inside_the_thinned_stretch_keeps_events_and_labels(
        pair: tuple[ObjectMemory, ObjectMemory], t: float) -> None:
    memory, twin = pair
    memory.compact(older_than_s=10.0, trail_s=10.0)
    view, expected = memory.as_of(t), twin.as_of(t)
    assert _story_events(view) == _story_events(expected)
    assert [(o.id, o.label, o.lost_at) for o in view.objects()] == [
        (o.id, o.label, o.lost_at) for o in expected.objects()]
    for got, want in zip(view.objects(), expected.objects(), strict=True):
        assert got.distance_to(want.center) <= 1.0  # positions to the trail's resolution
    assert [(tb.object_id, tb.label) for tb in view.tombstones()] == [
        (tb.object_id, tb.label) for tb in expected.tombstones()]


def test_rejected_evidence_is_thinned_per_key(pair: tuple[ObjectMemory, ObjectMemory]) -> None:
    memory, _ = pair
    memory.compact(older_than_s=10.0, trail_s=10.0)
    # the counts live in the materialised state and the checkpoint, not in the thinned rows
    assert [(r.key, r.count) for r in memory.rejections()] == [("plate@15,15,4", 60),
                                                               ("plate@40,40,4", 2)]
    assert [o.t for o in memory.rejected(key="plate@15,15,4")] == KEPT["plate@15,15,4"]
    assert memory.tombstones()[0].suppressed == 54  # t=6..59
    assert [o.t for o in memory.rejected(key="tomb:3")] == KEPT["tomb:3"]


def test_compaction_is_per_scope(tmp_path: Path) -> None:
    path = tmp_path / "s.loci"
    for scope in ("a", "b"):
        with ObjectMemory.open(path, scope=scope, durable=False) as memory:
            for t in range(30):
                memory.observe(float(t), [det("cup", 1.0, 1.0)])
    with ObjectMemory.open(path, scope="a") as a:
        report = a.compact(older_than_s=0.0, trail_s=10.0)
        assert (report.examined, report.removed) == (30, 26)  # t=0, 10, 20, 29 kept
    with ObjectMemory.open(path, scope="b") as b:
        assert len(b._live.store.observations("b")) == 30
        assert b.audit(kind="maintenance") == []
        assert b._live.store.latest_checkpoint("b") is None
        assert b.snapshot() == b.rebuild_from_log().snapshot()


def test_read_only_refuses_compact_except_dry_run(pair: tuple[ObjectMemory, ObjectMemory],
                                                  tmp_path: Path) -> None:
    memory, _ = pair
    memory.close()
    path = tmp_path / "c.loci"
    with ObjectMemory.open(path, scope="c", read_only=True) as reader:
        with pytest.raises(ReadOnly, match=r"^compact\(\) needs a writable memory; this one "
                                           r"was opened read-only$"):
            reader.compact(older_than_s=10.0)
        report = reader.compact(older_than_s=10.0, trail_s=10.0, dry_run=True)
        assert report == CompactionReport(51, 49.0, 201, 171, True)
        assert len(reader._live.store.observations("c")) == 201 + 40


# -- the property: interleaved scans, corrections, forgets and compactions -------------------
LABELS = ("cup", "mug", "book")
ANCHORS = ((0.5, 0.5, 0.5), (0.62, 0.5, 0.5), (1.3, 0.5, 0.5), (2.5, 2.0, 0.5))
CONFIG = TrackerConfig(promote_after=2, revive_after=3)

detections = st.builds(
    Detection,
    label=st.sampled_from(LABELS),
    confidence=st.sampled_from([0.01, 0.5, 0.9]),
    center=st.tuples(st.sampled_from(ANCHORS), st.floats(-0.05, 0.05)).map(
        lambda a: (a[0][0] + a[1], a[0][1], a[0][2])),
    size=st.just((0.1, 0.1, 0.1)),
)
# a scan op is a burst: the same detections ``repeat`` times, ``gap`` seconds apart (the first
# after the gap too), so objects gather many sightings inside one trail window
scans = st.tuples(st.just("scan"), st.sampled_from([0.0, 0.25, 0.5, 1.0, 40.0]),
                  st.tuples(st.lists(detections, min_size=1, max_size=5), st.integers(1, 6)))
others = st.one_of(
    st.tuples(st.just("relabel"), st.integers(0, 50), st.sampled_from(LABELS)),
    st.tuples(st.just("move"), st.integers(0, 50), st.sampled_from(ANCHORS)),
    st.tuples(st.just("attrs"), st.integers(0, 50), st.sampled_from(["red", "blue"])),
    st.tuples(st.just("forget"), st.integers(0, 50), st.none()),
    st.tuples(st.just("compact"), st.sampled_from([0.0, 1.0, 5.0]),
              st.sampled_from([0.5, 3.0, 10.0, 30.0])),
    st.tuples(st.just("reopen"), st.none(), st.none()),
)
# each step is a scan, then (about half the time) a correction, forget, compaction or reopen
steps = st.tuples(scans, st.one_of(st.none(), others)).map(
    lambda pair: [pair[0]] if pair[1] is None else list(pair))
programs = st.lists(steps, min_size=3, max_size=16).map(
    lambda chunks: [op for chunk in chunks for op in chunk])


def _pick(memory: ObjectMemory, k: int) -> int | None:
    ids = [o.id for o in memory.objects()]
    return ids[k % len(ids)] if ids else None


def _step(memory: ObjectMemory, op: tuple[Any, Any, Any], compact: bool) -> Any:
    kind, a, b = op
    now = memory.now or 0.0
    if kind == "scan":
        dets, repeat = b
        out = []
        for _ in range(repeat):
            now += a
            out.append(memory.observe(now, dets).assignments)
        return out
    if kind == "compact":
        if compact:
            memory.compact(older_than_s=a, trail_s=b)
        return None
    if kind == "reopen":
        return None
    oid = _pick(memory, a)
    if oid is None:
        return None
    calls: dict[str, Callable[[], Any]] = {
        "relabel": lambda: memory.relabel(oid, b),
        "move": lambda: memory.move(oid, b),
        "attrs": lambda: memory.set_attributes(oid, {"color": b}),
        "forget": lambda: memory.forget(oid),
    }
    return calls[kind]().kind


@settings(max_examples=25, deadline=None,
          suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
@given(program=programs)
def test_compaction_never_changes_what_replay_rebuilds(program: list[Any]) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        paths = {True: Path(tmp) / "c.loci", False: Path(tmp) / "u.loci"}
        mems = {k: ObjectMemory.open(p, scope="p", config=CONFIG, durable=False)
                for k, p in paths.items()}
        try:
            for op in program:
                outs = {k: _step(m, op, compact=k) for k, m in mems.items()}
                assert outs[True] == outs[False], op
                if op[0] == "reopen":
                    for k in mems:
                        mems[k].close()
                        mems[k] = ObjectMemory.open(paths[k], scope="p", config=CONFIG,
                                                    durable=False)
            memory = mems[True]
            snap = memory.snapshot()
            assert _same_state(snap) == _same_state(mems[False].snapshot())
            assert memory.rebuild_from_log().snapshot() == snap
            assert _story_events(memory) == _story_events(mems[False])
            # as of the latest horizon (or later) the compacted store answers exactly as the
            # twin; before it, a later compaction may have thinned the stretch (approximate)
            horizon = memory._live.store.conn.execute(
                "SELECT max(t) FROM checkpoints WHERE scope = 'p'").fetchone()[0]
            for t in {horizon, memory.now} - {None}:
                assert _same_state(memory.as_of(t).snapshot()) == _same_state(
                    mems[False].as_of(t).snapshot()), t
                assert _story_events(memory.as_of(t)) == _story_events(mems[False].as_of(t))
            # inside thinned stretches: events, identities and labels stay exact (positions,
            # counts and so confidence are only accurate to the trail)
            times = sorted({c.t for c in memory._live.store.commits("p")})
            for t in times[:: max(1, len(times) // 6)]:
                got, want = memory.as_of(t), mems[False].as_of(t)
                assert _story_events(got) == _story_events(want)
                assert [(o.id, o.label) for o in got.objects()] == [
                    (o.id, o.label) for o in want.objects()], t
            memory.close()
            with ObjectMemory.open(paths[True], scope="p", config=CONFIG) as again:
                assert again.snapshot() == snap
                assert again.rebuild_from_log().snapshot() == snap
        finally:
            for m in mems.values():
                m.close()


# -- crash safety with compaction --------------------------------------------------------------
SCOPE = "crash"
ROUNDS = 4
SEED = 20240612

CHILD = textwrap.dedent(
    """
    import random
    import sys

    from locimem import Detection, ObjectMemory

    path, seed, ready = sys.argv[1], int(sys.argv[2]), sys.argv[3]
    rng = random.Random(seed)
    labels = ["cup", "mug", "glass", "book"]
    mem = ObjectMemory.open(path, scope="crash", durable=True)
    t = 0.0 if mem.now is None else mem.now
    open(ready, "w").close()
    n = 0
    while True:
        t += rng.choice([0.0, 0.5, 1.0, 3.0, 40.0])
        dets = []
        for _ in range(rng.randint(0, 6)):
            conf = rng.uniform(0.0, 0.04) if rng.random() < 0.2 else rng.uniform(0.3, 1.0)
            dets.append(Detection(
                rng.choice(labels), conf,
                (rng.choice([0.5, 1.5, 2.5]) + rng.uniform(-0.05, 0.05),
                 rng.choice([0.5, 1.5]), 0.5),
                (0.1, 0.1, 0.1), track_id=rng.choice([None, 1, 2, 3]),
            ))
        mem.observe(t, dets)
        n += 1
        if n % 5 == 0:
            mem.compact(older_than_s=rng.choice([0.0, 2.0, 10.0]), trail_s=2.0)
        if n % 11 == 0 and mem.objects():
            mem.relabel(rng.choice(mem.objects()).id, rng.choice(labels))
    """
)


def _check_store(store: Path) -> tuple[int, int]:
    """Assert the killed writer left a consistent, possibly compacted store; return (commits,
    checkpoints)."""
    with ObjectMemory.open(store, scope=SCOPE) as mem:
        snap = mem.snapshot()
        assert snap == mem.rebuild_from_log().snapshot()
        one = mem._live.store.conn.execute
        assert one("PRAGMA integrity_check").fetchall() == [("ok",)]
        assert one("SELECT count(*) FROM observations "
                   "WHERE (object_id IS NULL) = (rejected IS NULL)").fetchone()[0] == 0
        latest = one("SELECT max(commit_id) FROM checkpoints WHERE scope = ?",
                     (SCOPE,)).fetchone()[0] or 0
        commits = one("SELECT id, kind, n_detections FROM commits ORDER BY id").fetchall()
        assert [c[0] for c in commits] == list(range(1, len(commits) + 1))
        indexes: dict[int, list[int]] = {c[0]: [] for c in commits}
        for commit_id, idx in one("SELECT commit_id, idx FROM observations ORDER BY seq"):
            indexes[commit_id].append(idx)
        for commit_id, kind, n in commits:
            got = indexes[commit_id]
            assert got == sorted(set(got)), f"commit {commit_id}: duplicate or unordered rows"
            assert set(got) <= set(range(n)), f"commit {commit_id}: rows beyond its scan"
            if commit_id > latest:
                assert got == list(range(n)), f"commit {commit_id} is half-applied"
            if kind != "scan":
                assert n == 0 and got == []
        # no half-written compaction: every checkpoint has its maintenance commit and event
        n_checkpoints = one("SELECT count(*) FROM checkpoints").fetchone()[0]
        compacted = one("SELECT data FROM events WHERE kind = 'COMPACTED'").fetchall()
        assert len(compacted) == n_checkpoints
        assert n_checkpoints == len([c for c in commits if c[1] == "maintenance"])
        seqs = [r[0] for r in one("SELECT seq FROM observations UNION ALL SELECT seq FROM events")]
        assert len(seqs) == len(set(seqs))
        appeared = [r[0] for r in one(
            "SELECT object_id FROM events WHERE kind = 'APPEARED' ORDER BY seq")]
        assert appeared == list(range(1, len(appeared) + 1))
        # the store takes new scans and compacts again
        mem.observe(mem.now, [det("plate", 100.0, 0.0)])
        mem.compact(older_than_s=0.0)
        assert mem.snapshot() == mem.rebuild_from_log().snapshot()
    with ObjectMemory.open(store, scope=SCOPE) as again:
        assert again.snapshot() == again.rebuild_from_log().snapshot()
        return len(commits), n_checkpoints


@pytest.mark.skipif(not hasattr(signal, "SIGKILL"), reason="needs SIGKILL (POSIX)")
def test_sigkill_while_ingesting_and_compacting(tmp_path: Path) -> None:
    script = tmp_path / "child.py"
    script.write_text(CHILD)
    store = tmp_path / "crash.loci"
    rng = random.Random(SEED)
    results = []
    for round_ in range(ROUNDS):
        ready = tmp_path / f"ready-{round_}"
        proc = start_child(script, store, SEED + round_, ready)
        kill_at_random(proc, rng, 0.3, 0.9)
        results.append(_check_store(store))
    commits = [c for c, _ in results]
    assert all(b > a for a, b in itertools.pairwise(commits)), commits  # progress each round
    assert results[-1][1] > ROUNDS, results  # the children compacted, not just the parent

