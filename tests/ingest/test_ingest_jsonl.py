"""JSON-lines scans in: the same memory as the Python API, resumable exactly once, and bad
lines refused by number with nothing of their scan written."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from locimem import ObjectMemory
from locimem.ingest import IngestError, ingest
from locimem.ingest.feed import Scan
from locimem.ingest.synth import synth_run
from tests.ingest_helpers import api_store, assert_same, fingerprint

OBJECTS = [("cup", (3.0, 0.2, 0.8), 0, 29), ("box", (3.4, -0.5, 0.6), 0, 9),
           ("mug", (2.8, 0.6, 0.75), 12, 29)]


def _line(scan: Scan) -> str:
    doc: dict = {"t": scan.t, "detections": [
        {"label": d.label, "confidence": d.confidence, "center": list(d.center),
         "size": list(d.size), "track_id": d.track_id, "orientation": list(d.orientation)}
        for d in scan.detections]}
    if scan.camera is not None:
        c = scan.camera
        doc["camera"] = {"position": list(c.position), "quaternion": list(c.quaternion),
                         "fov_deg": c.fov_deg, "range_m": c.range_m, "vfov_deg": c.vfov_deg,
                         "depth": [[None if not np.isfinite(v) else float(v) for v in row]
                                   for row in c.depth]}
    return json.dumps(doc)


def _write(path: Path, scans: list[Scan], extra: dict[int, str] | None = None) -> Path:
    lines = [_line(s) for s in scans]
    for i, text in (extra or {}).items():
        lines[i] = text
    path.write_text("\n".join(lines[:10]) + "\n\n" + "\n".join(lines[10:]) + "\n")
    return path


@pytest.fixture(scope="module")
def run():
    return synth_run(30, objects=OBJECTS)


def test_jsonl_gives_the_api_memory(run, tmp_path):
    src = _write(tmp_path / "scans.jsonl", run.scans)
    summary = ingest(src, tmp_path / "j.loci")
    api = fingerprint(api_store(tmp_path / "api.loci", run.scans, "jsonl"))
    got = fingerprint(tmp_path / "j.loci")
    assert_same(got, api, tol=0.0)  # no transforms: bit for bit
    assert (summary.scans_read, summary.scans_ingested, summary.objects_created) == (30, 30, 3)
    assert summary.events["LOST"] == 1 and summary.source == "jsonl"


def test_a_malformed_line_is_named_and_a_rerun_resumes(run, tmp_path):
    good = [_line(s) for s in run.scans]
    src = _write(tmp_path / "scans.jsonl", run.scans, {14: good[14][:-5]})
    store = tmp_path / "j.loci"
    # line 16: 10 lines, a blank one, then the 5th line of the rest
    with pytest.raises(IngestError, match=r"^scans\.jsonl line 16: not valid JSON"):
        ingest(src, store)
    with ObjectMemory.open(store, read_only=True) as mem:
        assert mem.now == run.scans[13].t and len(mem._live.store.commits("default")) == 14
    _write(src, run.scans)  # fixed
    summary = ingest(src, store)
    assert (summary.scans_resumed, summary.scans_ingested) == (14, 16)
    assert_same(fingerprint(store),
                fingerprint(api_store(tmp_path / "api.loci", run.scans, "jsonl")), tol=0.0)


@pytest.mark.parametrize(("bad", "message"), [
    ('{"t": 5, "detections": [{"label": "cup", "confidence": 1.5, "center": [0, 0, 0], '
     '"size": [1, 1, 1]}]}', r"detections\[0\]: confidence must be in \[0, 1\], got 1\.5"),
    ('{"t": 5, "detection": []}', r"unknown scan key\(s\) \['detection'\]"),
    ('{"t": "5"}', r"t must be a finite number of seconds, got '5'"),
    ('[1, 2]', r"a scan must be a JSON object, got list"),
    ('{"t": 5, "camera": {"position": [0, 0, 1], "quaternion": [1, 0, 0, 0], "fov_deg": 60, '
     '"range_m": 4, "depth": [[1, 2], [3]]}}', r"camera\.depth must be rows of numbers"),
    ('{"t": 5, "detections": [{"label": "cup"}]}',
     r"detections\[0\] lacks \['center', 'confidence', 'size'\]"),
    ('{"t": 1}', r"t=1\.0 is before the previous scan's t=2\.0"),
])
def test_bad_lines_are_typed_errors_and_write_nothing_of_their_scan(tmp_path, bad, message):
    first = '{"t": 2, "detections": [{"label": "cup", "confidence": 0.9, ' \
            '"center": [1, 0, 0.5], "size": [0.1, 0.1, 0.1]}]}'
    src = tmp_path / "s.jsonl"
    src.write_text(first + "\n" + bad + "\n")
    with pytest.raises(IngestError, match=r"^s\.jsonl line 2: " + message):
        ingest(src, tmp_path / "j.loci")
    with ObjectMemory.open(tmp_path / "j.loci", read_only=True) as mem:
        commits = mem._live.store.commits("default")
        assert [(c.t, c.n_detections) for c in commits] == [(2.0, 1)]


def test_not_utf8_is_named(tmp_path):
    src = tmp_path / "s.jsonl"
    src.write_bytes(b'{"t": 1}\n{"t": 2, "x": "\xff"}\n')
    with pytest.raises(IngestError, match=r"^s\.jsonl line 2: not UTF-8 text"):
        ingest(src, tmp_path / "j.loci")


def test_equal_times_are_resumed_exactly_once(tmp_path):
    def scan(t: float, x: float) -> str:
        return json.dumps({"t": t, "detections": [
            {"label": "cup", "confidence": 0.9, "center": [x, 0, 0.5], "size": [0.1] * 3}]})

    lines = [scan(1, 1.0), scan(2, 1.0), scan(2, 3.0), scan(2, 5.0), scan(3, 1.0)]
    src = tmp_path / "s.jsonl"
    store = tmp_path / "j.loci"
    src.write_text("\n".join(lines[:3]) + "\n")  # interrupted between two scans at t=2
    assert ingest(src, store).scans_ingested == 3
    src.write_text("\n".join(lines) + "\n")
    summary = ingest(src, store)
    assert (summary.scans_resumed, summary.scans_ingested) == (3, 2)
    with ObjectMemory.open(store, read_only=True) as mem:
        assert [(c.t, c.n_detections) for c in mem._live.store.commits("default")] == [
            (1.0, 1), (2.0, 1), (2.0, 1), (2.0, 1), (3.0, 1)]
        assert sorted(o.center[0] for o in mem.objects()) == [1.0, 3.0, 5.0]
    # another source's scans of the same time are not this source's: they are ingested,
    # under the late-scan rule (a file's tolerance is 0 until raised; nothing written)
    with pytest.raises(IngestError, match=r"^s\.jsonl line 1: t=1\.0 is before the latest "
                       r"scan \(t=3\.0\); .* raise the tolerance to at least 2 s: .*--late-s"):
        ingest(src, store, source_name="other")
    summary = ingest(src, store, source_name="other", late_s=2.0)
    assert (summary.scans_resumed, summary.scans_ingested) == (0, 5)
    with ObjectMemory.open(store, read_only=True) as mem:
        assert mem._live.store.late_s == 2.0
        assert [(c.t, c.actor) for c in mem._live.store.commits("default")][5:] == [
            (1.0, "other"), (2.0, "other"), (2.0, "other"), (2.0, "other"), (3.0, "other")]
    assert ingest(src, store, source_name="other").scans_resumed == 5  # and it resumes


def test_unknown_source_kinds_are_refused(tmp_path):
    (tmp_path / "x.csv").write_text("t\n")
    with pytest.raises(Exception, match=r"cannot tell what .*x\.csv is"):
        ingest(tmp_path / "x.csv", tmp_path / "j.loci")
    assert not (tmp_path / "j.loci").exists()


def test_cli_jsonl_text_summary(run, tmp_path):
    src = _write(tmp_path / "scans.jsonl", run.scans)
    proc = subprocess.run([sys.executable, "-m", "locimem", "ingest", str(src),
                           str(tmp_path / "c.loci"), "--scope", "robot1"],
                          capture_output=True, text=True, check=False)
    assert proc.returncode == 0, proc.stderr
    lines = proc.stdout.splitlines()
    assert lines[0].startswith(f"ingested 30 of 30 scans from {src} into "
                               f"{tmp_path / 'c.loci'} (scope 'robot1') in ")
    assert lines[1] == "  58 detections; objects: 3 new, 3 in memory"
    assert lines[2] == "  events: APPEARED 3, KEYFRAME 58, LOST 1, PROMOTED 3"


def test_cli_refuses_bag_options_for_json_lines(tmp_path):
    src = tmp_path / "s.jsonl"
    src.write_text('{"t": 1}\n')
    proc = subprocess.run([sys.executable, "-m", "locimem", "ingest", str(src),
                           str(tmp_path / "c.loci"), "--map-frame", "world", "--range", "3"],
                          capture_output=True, text=True, check=False)
    assert proc.returncode == 2
    assert proc.stderr == "error: --map-frame, --range: options for ROS 2 bags, not JSON lines\n"
    assert not (tmp_path / "c.loci").exists()


def test_a_bag_without_the_ros_extra_names_the_extra(tmp_path, monkeypatch):
    from locimem.ingest.ros import RosUnavailable

    monkeypatch.setitem(sys.modules, "rosbags", None)  # as if not installed
    (tmp_path / "run.mcap").write_bytes(b"")
    with pytest.raises(RosUnavailable, match=r'needs rosbags: pip install "locimem\[ros\]"'):
        ingest(tmp_path / "run.mcap", tmp_path / "x.loci")
    assert not (tmp_path / "x.loci").exists()


def test_the_guides_example_line_ingests(tmp_path):
    readme = (Path(__file__).resolve().parents[2] / "docs" / "guide.md").read_text()
    line = next(x for x in readme.splitlines() if x.startswith('{"t": 12.5, "detections"'))
    (tmp_path / "scans.jsonl").write_text(line + "\n")
    summary = ingest(tmp_path / "scans.jsonl", tmp_path / "r.loci")
    assert (summary.scans_ingested, summary.detections, summary.objects_created) == (1, 1, 1)
    with ObjectMemory.open(tmp_path / "r.loci", read_only=True) as mem:
        (cup,) = mem.objects()
        assert (cup.label, cup.center, cup.track_id) == ("cup", (0.4, 0.1, 0.9), "7")
        assert mem._live.store.commits("default")[0].camera["fov_deg"] == 69.4
