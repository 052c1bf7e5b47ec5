"""``locimem ingest`` as a robot engineer types it: into SQLite and into PostgreSQL (a new
schema, a re-run, two robots at once), the exit status and the cause of an ingest that takes
nothing, one warning instead of one a scan, progress lines without a terminal, and Ctrl-C."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
from pathlib import Path

import pytest

pytest.importorskip("rosbags")

from locimem import ObjectMemory
from locimem.cli import main
from locimem.ingest.synth import synth_run, write_bag
from tests import pg

OBJECTS = [("cup", (3.0, 0.2, 0.8), 0, 29), ("box", (3.4, -0.5, 0.6), 0, 9),
           ("mug", (2.8, 0.6, 0.75), 12, 29)]


@pytest.fixture(scope="module")
def bags(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    """Robot a's bag; robot b's over the same 60 s of the same room, its clock 2 s behind;
    a's without /tf_static; five things in view of every scan (for the warning)."""
    root = tmp_path_factory.mktemp("bags")
    a = synth_run(30, objects=OBJECTS)
    b = synth_run(30, objects=OBJECTS, t0_s=a.t0_s - 2.0, seed=8)
    return {"a": write_bag(root / "a", a), "b": write_bag(root / "b", b),
            "no-static": write_bag(root / "no-static", a, tf_static=False),
            "crowd": write_bag(root / "crowd", synth_run(12, per_scan=5))}


def ingest(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    code = main(["ingest", *map(str, argv)])
    out, err = capsys.readouterr()
    return code, out, err


def commit_times(store: str | Path, scope: str = "default") -> dict[str, list[float]]:
    """Each source's scans (commit times, in commit order)."""
    with ObjectMemory.open(store, scope=scope, read_only=True) as mem:
        by_source: dict[str, list[float]] = {}
        for c in mem._live.store.commits(scope):
            if c.kind == "scan":
                by_source.setdefault(c.actor, []).append(c.t)
        return by_source


# -- PostgreSQL ---------------------------------------------------------------------------------
@pg.needs_postgres
def test_postgres_new_schema_then_a_rerun_resumes(bags, capsys) -> None:
    url = pg.new_url("ingest")  # a schema that does not exist yet
    code, out, err = ingest(capsys, bags["a"], url, "--json")
    assert code == 0, err
    assert json.loads(out)["scans"] == {"read": 30, "ingested": 30, "resumed": 0, "skipped": 0}
    code, out, err = ingest(capsys, bags["a"], url)  # crashed on PostgresStore.conn
    assert code == 0, err
    assert out.startswith(f"ingested 0 of 30 scans from {bags['a']}")
    assert "30 scans already in the store" in out and "Traceback" not in err
    assert [len(v) for v in commit_times(url).values()] == [30]


@pg.needs_postgres
def test_postgres_two_robots_at_once_each_resumed_on_its_own(bags, tmp_path) -> None:
    url = pg.new_url("fleet")
    with ObjectMemory.open(url, scope="default"):
        pass  # the schema exists before the two start (each would create it otherwise)

    def start(robot: str) -> subprocess.Popen[str]:
        # the recordings overlap in time: the later one's scans trail the other's by up
        # to the whole recording, so the tolerance covers it
        return subprocess.Popen(
            [sys.executable, "-m", "locimem", "ingest", str(bags[robot]), url,
             "--source", f"robot-{robot}", "--late-s", "120", "--json"],
            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)

    procs = {robot: start(robot) for robot in ("a", "b")}
    done = {robot: p.communicate(timeout=120) for robot, p in procs.items()}
    for robot, (out, err) in done.items():
        assert procs[robot].returncode == 0, err
        assert json.loads(out)["scans"]["ingested"] == 30
    times = commit_times(url)
    t0 = synth_run(30, objects=OBJECTS).t0_s
    assert times == {"robot-a": [t0 + 2.0 * k for k in range(30)],
                     "robot-b": [t0 - 2.0 + 2.0 * k for k in range(30)]}
    for robot in ("a", "b"):  # resume is per source: nothing left for either
        out, err = start(robot).communicate(timeout=60)
        assert json.loads(out)["scans"] == {"read": 30, "ingested": 0, "resumed": 30,
                                            "skipped": 0}, err
    assert main(["validate", url]) == 0


# -- two robots, one file -----------------------------------------------------------------------
def test_a_second_robot_over_the_same_time_range_is_its_own_source(bags, tmp_path,
                                                                   capsys) -> None:
    store = tmp_path / "fleet.loci"
    assert ingest(capsys, bags["a"], store, "--source", "robot-a", "--quiet")[0] == 0
    # robot b's first scan is 60 s behind robot a's last: the store's tolerance (0) says no,
    # and the message says what to set; nothing of robot b's is written
    code, out, err = ingest(capsys, bags["b"], store, "--source", "robot-b", "--quiet")
    assert (code, out) == (2, "")
    assert "raise the tolerance to at least 60 s: --late-s 60, or ?late_s=60 in a " \
        "PostgreSQL URL" in err
    assert "ObjectMemory" not in err and "already in the store" not in err
    assert list(commit_times(store)) == ["robot-a"]
    code, out, err = ingest(capsys, bags["b"], store, "--source", "robot-b", "--late-s", "61",
                            "--quiet")
    assert code == 0, err
    assert out.startswith(f"ingested 30 of 30 scans from {bags['b']}")
    assert "already in the store" not in out
    assert [len(v) for v in commit_times(store).values()] == [30, 30]
    code, out, _ = ingest(capsys, bags["b"], store, "--source", "robot-b", "--quiet")
    assert code == 0 and "30 scans already in the store" in out  # robot b's own, resumed


# -- an ingest that takes nothing ---------------------------------------------------------------
def test_a_wrong_map_frame_exits_1_with_the_frames_and_the_fix(bags, tmp_path, capsys) -> None:
    store = tmp_path / "new.loci"
    code, out, err = ingest(capsys, bags["a"], store, "--map-frame", "world", "--quiet")
    assert (code, out) == (1, "")
    assert err.splitlines() == [
        f"error: none of the 30 scans of {bags['a']} could be ingested:",
        "  30 skipped: tf world <- map: frames not connected",
        "    the bag's tf has no frame 'world' (its frames: base_link, camera_link, "
        "camera_optical_frame, map, odom): pass --map-frame map"]
    assert not store.exists() and list(tmp_path.iterdir()) == []  # no empty store left


def test_a_bag_without_tf_static_exits_1_and_names_it(bags, tmp_path, capsys) -> None:
    store = tmp_path / "new.loci"
    code, out, err = ingest(capsys, bags["no-static"], store, "--json")
    assert code == 1
    assert json.loads(out)["scans"] == {"read": 30, "ingested": 0, "resumed": 0, "skipped": 30}
    lines = err.splitlines()
    assert lines[0] == f"error: none of the 30 scans of {bags['no-static']} could be ingested:"
    assert lines[1] == "  30 skipped: tf map <- camera_optical_frame: frames not connected"
    assert ("the camera's frame 'camera_optical_frame' is not in the bag's tf, nor the map "
            "frame 'map' (its frames: base_link, odom)") in lines[2]
    assert "the bag has no /tf_static messages" in lines[2]
    assert lines[2].endswith("or pass --camera-info none --depth none to ingest without a "
                             "camera")
    assert not store.exists()
    # the fix it names works: detections in the map frame need no transform
    code, out, err = ingest(capsys, bags["no-static"], store, "--camera-info", "none",
                            "--depth", "none", "--quiet")
    assert code == 0, err
    assert out.startswith("ingested 30 of 30 scans")


# -- what it prints ---------------------------------------------------------------------------
def test_a_warning_is_printed_once_then_counted_in_command_line_terms(bags, tmp_path,
                                                                      capsys) -> None:
    code, out, err = ingest(capsys, bags["crowd"], tmp_path / "c.loci", "--optical", "no")
    assert code == 0
    warnings = [line for line in err.splitlines() if line.startswith("warning:")]
    assert len(warnings) == 1  # not one per scan
    assert "5 of 5 detections lie outside the camera's field of view" in warnings[0]
    assert "--optical yes|no" in warnings[0] and "Camera(frame=" not in err
    assert ("  warning, 12 scans: detections lie outside the camera's field of view: check "
            "the camera pose and its frame (--optical yes|no") in out


def _jsonl(path: Path, n: int) -> Path:
    scan = {"detections": [{"label": "cup", "confidence": 0.9, "center": [1.0, 0.0, 0.8],
                            "size": [0.08, 0.08, 0.1]}]}
    path.write_text("".join(json.dumps({"t": 1_700_000_000.0 + 0.1 * i, **scan}) + "\n"
                            for i in range(n)))
    return path


def test_without_a_terminal_progress_lines_then_ctrl_c_exits_130_and_a_rerun_resumes(
        tmp_path: Path) -> None:
    n = 4000
    source, store = _jsonl(tmp_path / "scans.jsonl", n), tmp_path / "s.loci"
    env = {**os.environ, "LOCIMEM_HEARTBEAT_S": "0.2"}
    cmd = [sys.executable, "-m", "locimem", "ingest", str(source), str(store)]
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            env=env)
    assert proc.stderr is not None
    first = proc.stderr.readline()  # stderr is a pipe, not a terminal: a plain line
    assert first.startswith("ingest: ") and f"/{n} scans (" in first and "scans/s" in first
    proc.send_signal(signal.SIGINT)
    out, rest = proc.communicate(timeout=60)
    assert proc.returncode == 130, rest
    assert "Traceback" not in rest and out == ""
    last = rest.splitlines()[-1]
    assert last.startswith("interrupted after ") and last.endswith(
        " scans; run the same command again to resume")
    kept = int(last.split()[2])
    assert 0 < kept < n and len(commit_times(store)["jsonl"]) == kept
    again = subprocess.run([*cmd, "--json"], capture_output=True, text=True, env=env,
                           check=False)
    assert again.returncode == 0, again.stderr
    assert json.loads(again.stdout)["scans"] == {"read": n, "ingested": n - kept,
                                                 "resumed": kept, "skipped": 0}
    times = commit_times(store)["jsonl"]
    assert len(times) == n == len(set(times))  # every scan exactly once


def test_a_ctrl_c_right_after_a_commit_is_counted_with_that_scan(tmp_path: Path, monkeypatch,
                                                                 capsys) -> None:
    # The race the subprocess test above hits now and then, made certain: the SIGINT lands
    # after observe committed its scan, before the count. The count must still match the store.
    source, store = _jsonl(tmp_path / "scans.jsonl", 10), tmp_path / "s.loci"
    real, calls = ObjectMemory.observe, []

    def observe_then_sigint(self, *args, **kwargs):
        result = real(self, *args, **kwargs)
        calls.append(1)
        if len(calls) == 3:
            os.kill(os.getpid(), signal.SIGINT)
        return result

    monkeypatch.setattr(ObjectMemory, "observe", observe_then_sigint)
    code = main(["ingest", str(source), str(store)])
    assert code == 130
    assert capsys.readouterr().err.splitlines()[-1] == (
        "interrupted after 3 scans; run the same command again to resume")
    assert len(commit_times(store)["jsonl"]) == 3 == len(calls)  # the third scan kept, no fourth
    monkeypatch.setattr(ObjectMemory, "observe", real)
    assert main(["ingest", str(source), str(store)]) == 0
    assert len(commit_times(store)["jsonl"]) == 10
