"""Crash safety: a writer killed with SIGKILL at any moment leaves a store whose every scan is
either wholly on disk or not at all, whose cache agrees with its log, and which the next writer
opens and continues."""

from __future__ import annotations

import itertools
import json
import random
import signal
import sqlite3
import textwrap
from pathlib import Path

import pytest

from locimem import ObjectMemory
from locimem.errors import StoreLocked
from tests.helpers import det, kill_at_random, start_child

pytestmark = pytest.mark.skipif(not hasattr(signal, "SIGKILL"), reason="needs SIGKILL (POSIX)")

SCOPE = "crash"
ROUNDS = 5
SEED = 20240611

CHILD = textwrap.dedent(
    """
    import random
    import sys

    import numpy as np

    from locimem import Detection, ObjectMemory

    path, seed, ready = sys.argv[1], int(sys.argv[2]), sys.argv[3]
    rng = random.Random(seed)
    labels = ["cup", "mug", "glass", "book"]
    directions = [np.eye(4)[i] for i in range(4)]
    mem = ObjectMemory.open(path, scope="crash", durable=True)
    t = 0.0 if mem.now is None else mem.now
    open(ready, "w").close()
    while True:
        t += rng.choice([0.0, 0.5, 1.0, 3.0, 40.0])
        dets = []
        for _ in range(rng.randint(0, 6)):
            conf = rng.uniform(0.0, 0.04) if rng.random() < 0.15 else rng.uniform(0.3, 1.0)
            dets.append(Detection(
                rng.choice(labels), conf,
                (rng.uniform(0.0, 3.0), rng.uniform(0.0, 3.0), rng.uniform(0.0, 1.0)),
                (0.1, 0.1, 0.1),
                feature=rng.choice(directions) if rng.random() < 0.3 else None,
                track_id=rng.choice([None, 1, 2, 3]),
            ))
        mem.observe(t, dets)
    """
)


def _check_store(store: Path, round_: int) -> int:
    """Assert the killed writer left a consistent store; return its number of commits."""
    with ObjectMemory.open(store, scope=SCOPE) as mem:
        assert mem.snapshot() == mem.rebuild_from_log().snapshot()
        conn = mem._live.store.conn
        one = conn.execute

        assert one("PRAGMA integrity_check").fetchall() == [("ok",)]
        assert one("PRAGMA foreign_key_check").fetchall() == []
        assert [r[0] for r in one("SELECT DISTINCT scope FROM commits")] == [SCOPE]

        # every observation is accounted for: given to an object XOR rejected with a reason
        assert one("SELECT count(*) FROM observations "
                   "WHERE (object_id IS NULL) = (rejected IS NULL)").fetchone()[0] == 0
        assert {r[0] for r in one("SELECT DISTINCT rejected FROM observations "
                                  "WHERE rejected IS NOT NULL")} <= {
            "below_min_confidence", "below_new_object_confidence"}
        # ... and a given object id refers to an APPEARED event recorded no later
        appeared = {oid: seq for seq, oid in one(
            "SELECT seq, object_id FROM events WHERE kind = 'APPEARED' ORDER BY seq")}
        assert list(appeared) == list(range(1, len(appeared) + 1))  # one per id, no gaps
        for seq, oid in one("SELECT seq, object_id FROM observations "
                            "WHERE object_id IS NOT NULL"):
            assert appeared[oid] < seq
        for seq, oid, kind in one("SELECT seq, object_id, kind FROM events"):
            assert appeared[oid] <= seq, (seq, oid, kind)
        # every identity is in the objects table, unless it expired or was merged away
        ended = {r[0] for r in one("SELECT object_id FROM events WHERE kind = 'EXPIRED'")}
        ended |= {json.loads(r[0])["absorbed"]
                  for r in one("SELECT data FROM events WHERE kind = 'MERGED'")}
        assert sorted(r[0] for r in one("SELECT id FROM objects")) == [
            oid for oid in appeared if oid not in ended]

        # no scan half-applied: each commit has exactly its detections, indexed 0..n-1
        commits = one("SELECT id, n_detections FROM commits ORDER BY id").fetchall()
        assert [c[0] for c in commits] == list(range(1, len(commits) + 1))
        indexes: dict[int, list[int]] = {c[0]: [] for c in commits}
        for commit_id, idx in one("SELECT commit_id, idx FROM observations ORDER BY seq"):
            indexes[commit_id].append(idx)
        for commit_id, n in commits:
            assert indexes[commit_id] == list(range(n)), f"commit {commit_id} is half-applied"

        # one sequence shared by observations and events: unique and gapless
        seqs = [r[0] for r in one("SELECT seq FROM observations UNION ALL SELECT seq FROM events")]
        assert len(seqs) == len(set(seqs))
        assert sorted(seqs) == list(range(1, len(seqs) + 1))
        assert one("SELECT count(*) FROM events e JOIN commits c ON c.id = e.commit_id "
                   "WHERE c.t != e.t").fetchone()[0] == 0

        # the crashed store takes new scans, continuing its counters
        result = mem.observe(mem.now, [det("plate", 100.0 + 10.0 * round_, 0.0)])  # far away
        assert result.commit == len(commits) + 1
        assert result.assignments == (len(appeared) + 1,)
        assert mem.snapshot() == mem.rebuild_from_log().snapshot()
        return len(commits)


def test_sigkill_at_random_moments_never_half_applies_a_scan(tmp_path: Path) -> None:
    script = tmp_path / "child.py"
    script.write_text(CHILD)
    store = tmp_path / "crash.loci"
    rng = random.Random(SEED)
    counts = []
    for round_ in range(ROUNDS):
        ready = tmp_path / f"ready-{round_}"
        proc = start_child(script, store, SEED + round_, ready)
        kill_at_random(proc, rng, 0.2, 0.8)
        counts.append(_check_store(store, round_))
    # the child made progress every round (each count also includes the parent's one scan)
    assert all(b > a + 1 for a, b in itertools.pairwise(counts)), counts
    assert counts[0] > 0


def test_killed_writer_leaves_the_lock_free(tmp_path: Path) -> None:
    """The writer lock dies with its process: no stale lock blocks the next writer."""
    script = tmp_path / "child.py"
    script.write_text(CHILD)
    store = tmp_path / "lock.loci"
    proc = start_child(script, store, SEED, tmp_path / "ready")
    try:
        with pytest.raises(StoreLocked, match=rf"already open for writing \(pid {proc.pid}\)"):
            ObjectMemory.open(store, scope=SCOPE)
        with ObjectMemory.open(store, scope=SCOPE, read_only=True) as ro:
            assert ro.read_only
    finally:
        proc.kill()
        proc.wait()
    with ObjectMemory.open(store, scope=SCOPE) as mem:
        assert mem.snapshot() == mem.rebuild_from_log().snapshot()
    conn = sqlite3.connect(store)
    assert conn.execute("PRAGMA journal_mode").fetchone() == ("wal",)
    conn.close()
