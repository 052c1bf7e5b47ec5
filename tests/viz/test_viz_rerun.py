"""The memory in Rerun: the .rrd file read back with the SDK's own reader, and the live hook."""

from __future__ import annotations

import math
import os
import re
import subprocess
import sys
from collections import defaultdict
from datetime import datetime, timedelta, timezone
from pathlib import Path
from typing import Any

import pytest

from locimem import Detection, ObjectMemory
from locimem.errors import InvalidInput, NotFound
from tests.helpers import CUP_ON_COUNTER, HOUSE, ID, ROOMS, house_day

NO_RERUN = "the Rerun tests need the rerun extra (pip install 'locimem[rerun]'); CI installs it"
try:
    import rerun as rr
    from rerun.chunk import RrdReader
except ImportError:  # skipped here; in CI (with CI set) the Rerun tests must run
    if os.environ.get("CI"):
        raise ImportError(f"{NO_RERUN}, but it is not installed") from None
    pytest.skip(NO_RERUN, allow_module_level=True)

from locimem.viz.rerun import RerunLogger, RerunUnavailable, write_rerun  # noqa: E402

KEYS_ID = len(HOUSE) + 1


def read_rrd(path: Path, wall_clock: bool = False
             ) -> tuple[Any, dict[str, list[dict[str, Any]]]]:
    """(the recording entry, entity path -> its rows sorted by scan time (seconds; None for
    static rows), each a dict of column -> value, one instance per row). Only ``scan_time``
    is allowed as a timeline unless ``wall_clock`` (then ``log_time`` is dropped)."""
    reader = RrdReader(path)
    (entry,) = reader.recordings()
    rows: dict[str, list[dict[str, Any]]] = defaultdict(list)
    for chunk in reader.stream():
        columns = chunk.to_record_batch().to_pydict()
        columns.pop("rerun.controls.RowId")
        assert set(chunk.timeline_names) <= {"scan_time"} | ({"log_time"} if wall_clock
                                                             else set()), chunk.timeline_names
        columns.pop("log_time", None)
        for i in range(chunk.num_rows):
            row = {k: v[i] for k, v in columns.items()}
            t = row.pop("scan_time", None)
            row["t"] = None if t is None else _seconds(t)
            rows[chunk.entity_path].append(row)
    for path_rows in rows.values():
        path_rows.sort(key=lambda r: -1.0 if r["t"] is None else r["t"])
    return entry, dict(rows)


def _seconds(t: Any) -> float:
    """A ``scan_time`` value in seconds: a duration's, or a timestamp's since the epoch."""
    if isinstance(t, datetime):
        assert t.tzinfo is None or t.utcoffset() == timedelta(0)
        return t.replace(tzinfo=timezone.utc).timestamp()
    return t.total_seconds()


def _texts(rows: list[dict[str, Any]]) -> list[tuple[float, str, str]]:
    return [(r["t"], r["TextLog:level"][0], r["TextLog:text"][0]) for r in rows]


def _rounded(v: Any) -> list[float]:
    return [round(x, 4) for x in v]


@pytest.fixture(scope="module")
def house_rrd(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Any]:
    d = tmp_path_factory.mktemp("rerun")
    with ObjectMemory.open(d / "house.loci", scope="home") as mem:
        house_day(mem)
        report = write_rerun(mem, d / "memory.rrd")
    return d, report


def test_the_recording_holds_the_story(house_rrd: tuple[Path, Any]) -> None:
    d, report = house_rrd
    assert (report.n_frames, report.n_objects, report.n_rooms) == (7, 17, 4)
    assert report.n_bytes == (d / "memory.rrd").stat().st_size
    entry, rows = read_rrd(d / "memory.rrd")
    assert entry.application_id == "locimem"
    assert set(rows) == ({"/world", "/events", "/frame", "/world/moves/2"}
                         | {f"/world/rooms/{name}" for name in ROOMS}
                         | {f"/world/objects/{i}" for i in range(1, KEYS_ID + 1)})
    assert rows["/world"] == [{"ViewCoordinates:xyz": [[3, 5, 1]], "t": None}]  # z up
    assert rows["/frame"] == [{"TextDocument:text": ["positions in the memory's frame \"map\""],
                               "t": None}]  # (the scope named no map epoch)

    phone = rows[f"/world/objects/{ID['phone']}"]
    assert [(r["t"], r["status"][0], r["confidence"][0]) for r in phone] == [
        (0.0, "tentative", 1.0), (5.0, "confirmed", 1.0), (10.0, "confirmed", 0.94),
        (15.0, "confirmed", 0.67), (20.0, "tentative", 0.48), (44.0, "lost", 0.1),
        (50.0, "lost", 0.07)]
    assert {r["Boxes3D:labels"][0] for r in phone} == {"phone #4"}
    assert {r["room"][0] for r in phone} == {"kitchen"}
    assert phone[-1]["Boxes3D:colors"] == [0x969696FF]  # lost: grey
    assert phone[1]["Boxes3D:colors"] == [0x36D936FF]  # confirmed, confident: green
    assert _rounded(phone[0]["Boxes3D:half_sizes"][0]) == [0.04, 0.075, 0.005]

    cup = rows[f"/world/objects/{ID['cup']}"]
    assert [(r["t"], _rounded(r["Boxes3D:centers"][0])) for r in cup][:3] == [
        (0.0, [1.2, 1.4, 0.8]), (5.0, [1.2, 1.4, 0.8]), (10.0, list(CUP_ON_COUNTER))]
    (arrow,) = rows["/world/moves/2"]
    assert arrow["t"] == 10.0
    assert _rounded(arrow["Arrows3D:origins"][0]) == [1.2, 1.4, 0.8]
    assert _rounded(arrow["Arrows3D:vectors"][0]) == [0.0, 0.8, 0.15]
    assert arrow["Arrows3D:labels"] == ["cup #2 moved 0.81 m"]

    keys = rows[f"/world/objects/{KEYS_ID}"]
    assert [(r["t"], r["label"][0], r["status"][0]) for r in keys] == [
        (15.0, "keys", "tentative"), (20.0, "keys", "confirmed")]  # then nothing changes
    table = rows[f"/world/objects/{ID['table']}"]
    assert [r["t"] for r in table] == [0.0, 5.0]

    (hall,) = rows["/world/rooms/hall"]
    assert hall["t"] == 0.0 and hall["LineStrips3D:labels"] == ["hall"]
    assert [_rounded(p) for p in hall["LineStrips3D:strips"][0]] == [
        [4, 0, 0], [6, 0, 0], [6, 4, 0], [4, 4, 0], [4, 0, 0]]

    events = _texts(rows["/events"])
    assert [e for e in events if e[0] >= 10.0] == [
        (10.0, "INFO", "MOVED #2 cup (1.20, 1.40, 0.80) -> (1.20, 2.20, 0.95) (0.81 m)"),
        (15.0, "INFO", "APPEARED #17 keys at (5.00, 2.00, 0.02)"),
        (20.0, "INFO", "STATUS #4 phone: confirmed -> tentative"),
        (20.0, "INFO", "STATUS #17 keys: tentative -> confirmed"),
        (20.0, "INFO", "PROMOTED #17 keys"),
        (44.0, "WARN", "STATUS #4 phone: tentative -> lost"),
        (44.0, "WARN", "LOST #4 phone: unseen since t=9.0 s"),
    ]
    assert sum(1 for e in events if e[0] == 0.0 and e[2].startswith("APPEARED")) == len(HOUSE)
    assert sum(1 for e in events if e[0] == 5.0 and e[2].startswith("PROMOTED")) == len(HOUSE)


def test_an_identity_that_ends_is_cleared(tmp_path: Path) -> None:
    with ObjectMemory.open(tmp_path / "e.loci", scope="s") as mem:
        mem.observe(0.0, [Detection("cup", 0.9, (0, 0, 0.9), (0.1, 0.1, 0.1))])
        mem.observe(40.0, [Detection("mug", 0.9, (3, 0, 0.9), (0.1, 0.1, 0.1))])
        write_rerun(mem, tmp_path / "e.rrd")
    _, rows = read_rrd(tmp_path / "e.rrd")
    cup = rows["/world/objects/1"]
    assert [(r["t"], "Clear:is_recursive" in r) for r in cup] == [(0.0, False), (40.0, True)]
    assert ("WARN", "EXPIRED #1 cup") in {(lvl, text) for _, lvl, text in
                                          _texts(rows["/events"])}


def test_live_logger_after_each_observe(tmp_path: Path) -> None:
    rec = rr.RecordingStream("locimem-live", recording_id="live-test")
    rec.save(tmp_path / "live.rrd")
    with ObjectMemory.open(":memory:", scope="home") as mem:
        viz = RerunLogger(mem, rec)
        viz.log_scan()  # nothing observed yet: nothing logged
        for name, polygon in ROOMS.items():
            mem.define_room(name, polygon)
        for t in range(46):
            dets = [Detection(label, 0.9, CUP_ON_COUNTER if name == "cup" and t >= 10
                              else center, size)
                    for name, (label, center, size) in HOUSE.items()
                    if not (name == "phone" and t >= 10)]
            r = mem.observe(float(t), dets)
            viz.log_scan(r)
        final = {o.id: o for o in mem.objects()}
        with pytest.raises(InvalidInput, match="result must be the ScanResult"):
            viz.log_scan("scan")  # type: ignore[arg-type]
    rec.flush()
    rec.disconnect()
    entry, rows = read_rrd(tmp_path / "live.rrd", wall_clock=True)
    assert entry.recording_id == "live-test"
    phone = rows[f"/world/objects/{ID['phone']}"]
    statuses = [(r["t"], r["status"][0]) for r in phone]
    # logged when what is drawn changed: promoted at 5 s; from 10 s, whenever its confidence
    # exp(-(t - 9) / 15) (last seen at 9 s) moved by a hundredth, or its status changed
    fading = [t for t in range(10, 46)
              if round(math.exp(-(t - 9) / 15), 2) != round(math.exp(-(t - 10) / 15), 2)
              or t in (20, 44)]
    assert 30 < len(fading) < 36
    assert statuses == [(0.0, "tentative"), (5.0, "confirmed")] + [
        (float(t), "confirmed" if t < 20 else "tentative" if t < 44 else "lost")
        for t in fading]
    assert [r["t"] for r in rows[f"/world/objects/{ID['table']}"]] == [0.0, 5.0]
    for oid, obj in final.items():  # the last thing logged is the memory as it is
        last = rows[f"/world/objects/{oid}"][-1]
        assert (last["status"][0], last["confidence"][0]) == (obj.status.value,
                                                              round(obj.confidence, 2))
        assert _rounded(last["Boxes3D:centers"][0]) == _rounded(obj.center)
    (arrow,) = rows["/world/moves/2"]
    assert arrow["t"] == 10.0
    assert {f"/world/rooms/{name}" for name in ROOMS} <= set(rows)
    assert (44.0, "WARN", "LOST #4 phone: unseen since t=9.0 s") in _texts(rows["/events"])


def test_the_recording_says_which_frame_its_positions_are_in(tmp_path: Path) -> None:
    """Scans that named their SLAM session: the frame's line names the base epoch, written
    and live, once; a later epoch aligned into it is not named."""
    line = "positions in the memory's frame \"map\" (map epoch 2026-12-01-boot)"
    rec = rr.RecordingStream("locimem-live", recording_id="epochs-test")
    rec.save(tmp_path / "live.rrd")
    table = Detection("kitchen table", 0.9, (1.5, 1.5, 0.375), (1.2, 0.8, 0.75))
    with ObjectMemory.open(tmp_path / "m.loci", scope="home") as mem:
        viz = RerunLogger(mem, rec)
        for t in range(6):
            viz.log_scan(mem.observe(float(t), [table], map_epoch="2026-12-01-boot"))
        mem.align_epoch("2026-12-02-boot", ((1.0, 0.0, 0.0), (1.0, 0.0, 0.0, 0.0)))
        viz.log_scan(mem.observe(6.0, [Detection("kitchen table", 0.9, (0.5, 1.5, 0.375),
                                                 (1.2, 0.8, 0.75))],
                                 map_epoch="2026-12-02-boot"))
        write_rerun(mem, tmp_path / "m.rrd")
    rec.flush()
    rec.disconnect()
    for path, wall_clock in ((tmp_path / "m.rrd", False), (tmp_path / "live.rrd", True)):
        _, rows = read_rrd(path, wall_clock=wall_clock)
        assert rows["/frame"] == [{"TextDocument:text": [line], "t": None}]
        assert _rounded(rows["/world/objects/1"][-1]["Boxes3D:centers"][0]) == [1.5, 1.5, 0.375]
        assert not [r for r in rows["/events"] if "2026-12" in r["TextLog:text"][0]]


def test_unix_times_give_a_timestamp_timeline(tmp_path: Path) -> None:
    t0 = 1764600000.0  # 2025-12-01T14:40:00Z
    with ObjectMemory.open(tmp_path / "u.loci", scope="s") as mem:
        mem.define_room("kitchen", [(0, 0), (5, 0), (5, 3), (0, 3)])  # at t = 0
        for i in range(7):
            mem.observe(t0 + i, [Detection("cup", 0.9, (1, 1, 0.9), (0.1, 0.1, 0.1))])
        write_rerun(mem, tmp_path / "u.rrd")
        write_rerun(mem.as_of(t0 + 3), tmp_path / "early.rrd")
    mode = os.stat(tmp_path / "u.rrd").st_mode & 0o777
    umask = os.umask(0)
    os.umask(umask)
    assert mode == 0o666 & ~umask  # like every export, not owner-only
    reader = RrdReader(tmp_path / "u.rrd")
    for chunk in reader.stream():
        if "scan_time" in chunk.timeline_names:
            values = chunk.to_record_batch().to_pydict()["scan_time"]
            assert all(isinstance(v, datetime) for v in values)
    _, rows = read_rrd(tmp_path / "u.rrd")
    assert [r["t"] for r in rows["/world/rooms/kitchen"]] == [t0]  # not 1970
    assert [r["t"] for r in rows["/world/objects/1"]] == [t0, t0 + 5]  # seen, published
    _, early = read_rrd(tmp_path / "early.rrd")
    assert [r["t"] for r in early["/world/objects/1"]] == [t0]
    assert max(r["t"] for r in early["/events"]) == t0


def test_bad_input_writes_nothing(tmp_path: Path, house_rrd: tuple[Path, Any]) -> None:
    d, _ = house_rrd
    out = tmp_path / "out"
    out.mkdir()
    with ObjectMemory.open(d / "house.loci", scope="home", read_only=True) as mem:
        with pytest.raises(InvalidInput, match=r"Rerun recording path must end in \.rrd"):
            write_rerun(mem, out / "memory.html")
        with pytest.raises(InvalidInput, match="recording_id must be a non-empty string"):
            write_rerun(mem, out / "memory.rrd", recording_id="")
        with pytest.raises(InvalidInput, match=r"recording must be a rerun\.RecordingStream"):
            RerunLogger(mem, "rec")
    with ObjectMemory.open(d / "house.loci", scope="nobody") as mem, \
            pytest.raises(NotFound, match="scope 'nobody' has no records to draw"):
        write_rerun(mem, out / "memory.rrd")
    assert list(out.iterdir()) == []


def test_without_the_extra_the_error_names_it(tmp_path: Path, house_rrd: tuple[Path, Any],
                                              monkeypatch: pytest.MonkeyPatch) -> None:
    d, _ = house_rrd
    monkeypatch.setitem(sys.modules, "rerun", None)  # import rerun -> ImportError
    with ObjectMemory.open(d / "house.loci", scope="home", read_only=True) as mem:
        with pytest.raises(RerunUnavailable, match=r"pip install 'locimem\[rerun\]'"):
            write_rerun(mem, tmp_path / "memory.rrd")
        with pytest.raises(RerunUnavailable):
            RerunLogger(mem)
    assert list(tmp_path.iterdir()) == []


def test_the_command(tmp_path: Path, house_rrd: tuple[Path, Any]) -> None:
    d, _ = house_rrd
    out = tmp_path / "cli.rrd"
    proc = subprocess.run([sys.executable, "-m", "locimem", "rerun", str(d / "house.loci"),
                           "--scope", "home", "-o", str(out)], capture_output=True,
                          text=True, check=False)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout == (f"wrote {out}: 7 frames on the scan_time timeline, 17 objects, "
                           f"4 rooms ({out.stat().st_size:,} bytes); view it with: rerun "
                           f"{out}\n")
    _, rows = read_rrd(out)
    _, expected = read_rrd(d / "memory.rrd")
    assert rows == expected  # the same story as write_rerun's
    proc = subprocess.run([sys.executable, "-m", "locimem", "rerun", str(d / "house.loci"),
                           "--scope", "home", "-o", str(tmp_path / "x.mcap")],
                          capture_output=True, text=True, check=False)
    assert (proc.returncode, proc.stderr) == (2, "error: Rerun recording path must end in "
                                                 f".rrd, got '{tmp_path / 'x.mcap'}'\n")


def test_the_guides_live_example_runs(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    readme = (Path(__file__).resolve().parents[2] / "docs" / "guide.md").read_text()
    (block,) = [b for b in re.findall(r"```py\n(.*?)```", readme, flags=re.S)
                if "RerunLogger" in b]
    monkeypatch.chdir(tmp_path)
    try:
        exec(compile(block, "docs/guide.md", "exec"), {})
        rr.disconnect()  # the global recording's file sink: flushed and closed
    finally:
        rr.set_global_data_recording(None)
    entry, rows = read_rrd(tmp_path / "live.rrd", wall_clock=True)
    assert entry.application_id == "locimem"
    assert [(r["t"], r["Boxes3D:labels"][0], r["status"][0])
            for r in rows["/world/objects/1"]] == [(0.0, "cup #1", "tentative"),
                                                   (10.0, "cup #1", "confirmed")]
    assert [text for _, _, text in _texts(rows["/events"])] == [
        "APPEARED #1 cup at (0.40, 0.10, 0.90)", "STATUS #1 cup: tentative -> confirmed",
        "PROMOTED #1 cup"]
