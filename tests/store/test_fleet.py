"""Many writers, one scope, on PostgreSQL: robots as processes observing overlapping scenes at
once produce one object per physical thing, every robot ends with the same state, and a robot
killed mid-scan leaves a store that validates. Skipped without ``LOCIMEM_TEST_POSTGRES``."""

from __future__ import annotations

import json
import os
import random
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from locimem import ObjectMemory
from locimem.interchange.validate import validate
from tests import pg
from tests.fleet_worker import THINGS, scene

pytestmark = pg.needs_postgres
ROOT = Path(__file__).resolve().parents[2]


def _env() -> dict[str, str]:
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join([str(ROOT / "src"), str(ROOT),
                                         env.get("PYTHONPATH", "")])
    return env


def _robot(url: str, writer: int, writers: int, start_at: float, *extra: str
           ) -> subprocess.Popen[str]:
    return subprocess.Popen(
        [sys.executable, "-m", "tests.fleet_worker", url, "--writer", str(writer),
         "--writers", str(writers), "--start-at", str(start_at), *extra],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=_env(), cwd=ROOT)


@pytest.mark.parametrize("writers", [2, 4])
def test_robots_observing_one_scene_at_once_make_one_object_per_thing(writers: int) -> None:
    from locimem.store.postgres import PostgresStore

    url = pg.new_url(f"race{writers}")
    PostgresStore(url, late_s=60.0).close()  # a loaded 2-core machine: scans may trail far
    start_at = time.time() + 1.5
    robots = [_robot(url, w, writers, start_at) for w in range(writers)]
    states = []
    for robot in robots:
        out, err = robot.communicate(timeout=240)
        assert robot.returncode == 0, err
        states.append(json.loads(out))
    seen = {(w + j) % len(THINGS) for w in range(writers) for j in range(4)}
    with ObjectMemory.open(url, scope="fleet", read_only=True) as mem:
        fresh = json.loads(json.dumps(mem.snapshot(), sort_keys=True, default=str))
        assert all(s == fresh for s in states)  # every robot ends with the same state
        assert json.loads(json.dumps(mem.rebuild_from_log().snapshot(), sort_keys=True,
                                     default=str)) == fresh
        kinds = [e.kind.value for e in mem.events()]
        assert kinds.count("APPEARED") == len(seen) and "MERGED" not in kinds
        assert "SPLIT" not in kinds and "LOST" not in kinds
        by_label = {o.label: o for o in mem.objects()}
        assert sorted(by_label) == sorted(THINGS[k] for k in seen)
        for k in seen:  # every sighting of a thing went to its one object, none rejected
            obj = by_label[THINGS[k]]
            assert abs(obj.center[0] - k) < 0.02 and obj.status.value == "confirmed"
            sightings = mem._live.store.observations("fleet", object_id=obj.id)
            assert len(sightings) == 15 * sum(1 for w in range(writers)
                                              if k in {(w + j) % len(THINGS) for j in range(4)})
        assert mem._live.store.observations("fleet", rejected=True) == []
        assert mem._live.store.count("commits", "fleet") == 15 * writers
    # one writer fed every robot's scans in time order makes the same identities
    single = ObjectMemory.open(":memory:", scope="fleet")
    with ObjectMemory.open(url, scope="fleet", read_only=True) as mem:
        order = sorted((c.t, int(c.actor[5:])) for c in mem._live.store.commits("fleet"))
        for t, w in order:
            single.observe(t, scene(w, round((t - w * 0.01) / 0.2)))
        # (ids are numbered in commit order, which the race decides)
        assert sorted((o.label, o.n_detections, o.status.value) for o in single.objects()) \
            == sorted((o.label, o.n_detections, o.status.value) for o in mem.objects())
    single.close()
    assert validate(url).ok


def test_a_robot_killed_mid_scan_leaves_a_consistent_store() -> None:
    from locimem.store.postgres import PostgresStore

    url = pg.new_url("kill")
    PostgresStore(url, late_s=60.0).close()
    rng = random.Random(7)
    for round_ in range(3):
        robot = _robot(url, round_ % 2, 2, 0.0, "--forever")
        assert robot.stdout is not None
        for _ in range(rng.randint(3, 12)):  # let it land a few scans
            robot.stdout.readline()
        time.sleep(rng.random() * 0.05)
        robot.send_signal(signal.SIGKILL)
        robot.wait(timeout=30)
        robot.stdout.close()
        robot.stderr.close()  # type: ignore[union-attr]
        report = validate(url)
        assert report.ok, str(report)
        with ObjectMemory.open(url, scope="fleet") as mem:
            assert mem.snapshot() == mem.rebuild_from_log().snapshot()
            kinds = [e.kind.value for e in mem.events()]
            assert "MERGED" not in kinds and kinds.count("APPEARED") == len(mem.objects())
