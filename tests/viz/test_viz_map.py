"""The browser map: its data, its escaping, the command, and the page in a real headless
browser (Debian's ``chromium``; skipped with a reason when it is not installed)."""

from __future__ import annotations

import itertools
import math
import os
import shutil
import subprocess
import sys
from html.parser import HTMLParser
from pathlib import Path
from typing import Any, ClassVar

import pytest

from locimem import Camera, Detection, ObjectMemory
from locimem.errors import InvalidInput, NotFound
from locimem.model import Event, EventKind
from locimem.sim.scenarios import build
from locimem.viz.map import (
    MAX_PATH_POINTS,
    json_for_script,
    map_data,
    map_view,
    render_map_html,
    thinned,
    write_map,
)
from locimem.viz.story import event_text
from tests.helpers import CUP_ON_COUNTER, HOUSE, ID, ROOMS

KEYS_ID = len(HOUSE) + 1
CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")
CHROMIUM_FLAGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic",
                  "--no-first-run", "--disable-background-networking",
                  "--disable-component-update", "--disable-sync", "--hide-scrollbars"]
NO_CHROMIUM = ("the browser test needs Debian's chromium (apt-get install chromium); CI "
               "installs it")
_profiles = itertools.count()
T0 = 1_764_600_000.0  # 2025-12-01T14:40:00Z: the robot store's clock is Unix time
SLOTS = "@@DATA@@ @@CSP@@ @@LEGEND@@ @@TITLE@@ @@SCRIPT@@"


def _camera_at(x: float, y: float) -> Camera:
    return Camera((x, y, 1.0), (1.0, 0.0, 0.0, 0.0), 90.0, 6.0)


def robot_day(mem: ObjectMemory) -> None:
    """A robot in a 3 m kitchen on a Unix clock: six scans 10 s apart, the camera 0.2 m
    further along x each time (at y = 0.5, facing +x), the sixth without a camera; the mug
    seen in scans 0-3, the cup in all; then the cup alone at +120 s from (0.9, 0.5) and at
    +200 s from a scan without a camera."""
    mem.define_room("kitchen", [(0, 0), (3, 0), (3, 3), (0, 3)])
    cup = Detection("cup", 0.9, (1.2, 2.0, 0.8), (0.08, 0.08, 0.1))
    for k in range(6):
        dets = [cup]
        if k <= 3:
            dets.append(Detection("mug", 0.9, (1.5, 1.0, 0.8), (0.1, 0.1, 0.1)))
        mem.observe(T0 + 10 * k, dets, _camera_at(0.5 + 0.2 * k, 0.5) if k < 5 else None)
    mem.observe(T0 + 120, [cup], _camera_at(0.9, 0.5))
    mem.observe(T0 + 200, [cup])


@pytest.fixture(scope="module")
def house(house_day_store: Path) -> Path:
    return house_day_store


@pytest.fixture(scope="module")
def house_map(house: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("map") / "map.html"
    with ObjectMemory.open(house, scope="home", read_only=True) as mem:
        write_map(mem, out)
    return out


# -- the data ----------------------------------------------------------------------------------
def test_map_data_tracks_each_object_and_room_where_it_changed(house: Path) -> None:
    with ObjectMemory.open(house, scope="home", read_only=True) as mem:
        data = map_data(mem)
    assert [f["t"] for f in data["frames"]] == [0.0, 5.0, 10.0, 15.0, 20.0, 44.0, 50.0]
    assert [e["text"] for e in data["frames"][2]["events"]] == [
        "MOVED #2 cup (1.20, 1.40, 0.80) -> (1.20, 2.20, 0.95) (0.81 m)"]
    assert data["frames"][6]["events"] == []
    assert sorted(data["objects"], key=int) == [str(i) for i in range(1, KEYS_ID + 1)]
    phone = data["objects"][str(ID["phone"])]
    assert [(k, s["status"], s["confidence"]) for k, s in phone] == [
        (0, "tentative", 1.0), (1, "confirmed", 1.0), (2, "confirmed", 0.94),
        (3, "confirmed", 0.67), (4, "tentative", 0.48), (5, "lost", 0.1), (6, "lost", 0.07)]
    assert phone[5][1]["color"] == "#969696"
    cup = data["objects"][str(ID["cup"])]
    assert [(k, (s["x"], s["y"], s["z"])) for k, s in cup] == [
        (0, (1.2, 1.4, 0.8)), (1, (1.2, 1.4, 0.8)), (2, CUP_ON_COUNTER)]
    assert [k for k, _ in data["objects"][str(ID["table"])]] == [0, 1]  # then unchanged
    assert cup[2][1] == {
        "label": "cup", "level": "item", "status": "confirmed", "confidence": 1.0,
        "x": 1.2, "y": 2.2, "z": 0.95, "sx": 0.08, "sy": 0.08, "sz": 0.1, "yaw": 0.0,
        "room": "kitchen", "first_seen": 0.0, "last_seen": None, "votes": [["cup", 100]],
        "color": "#36d936", "source": "tracker",
        "seen_from": None}  # last_seen None: seen at the frame's time; no camera, no seen_from
    assert [s["last_seen"] for _, s in phone] == [None, None, 9.0, 9.0, 9.0, 9.0, 9.0]
    table = data["objects"][str(ID["table"])]
    assert table[-1][1]["level"] == "furniture"
    keys = data["objects"][str(KEYS_ID)]
    assert [(k, s["label"], s["status"], s["room"]) for k, s in keys] == [
        (3, "keys", "tentative", "hall"), (4, "keys", "confirmed", "hall")]
    assert data["moves"] == [[2, ID["cup"], [1.2, 1.4, 0.8], list(CUP_ON_COUNTER)]]
    assert sorted(data["rooms"]) == sorted(ROOMS)
    assert data["rooms"]["hall"] == [[0, {"polygon": [[4, 0], [6, 0], [6, 4], [4, 4]],
                                          "z": None, "connected": ["bedroom", "kitchen"]}]]
    assert data["bounds"] == [0.0, -5.0, 10.0, 4.0]
    assert data["camera"] == {"t": [], "x": [], "y": [], "yaw": []}  # no cameras: no path
    assert data["unix"] is False
    assert data["scope"] == "home"
    assert data["frame"] == {"name": "map", "epoch": None,  # the scope named no map epoch
                             "note": "positions in the memory's frame \"map\""}


def _epochs_memory(path: Path) -> ObjectMemory:
    """A memory whose scans named their SLAM session (2026-12-01-boot, the base), and a later
    session whose transform was given (1 m along x)."""
    mem = ObjectMemory.open(path, scope="home")
    table = Detection("kitchen table", 0.9, (1.5, 1.5, 0.375), (1.2, 0.8, 0.75))
    for t in range(6):
        mem.observe(float(t), [table], map_epoch="2026-12-01-boot")
    mem.align_epoch("2026-12-02-boot", ((1.0, 0.0, 0.0), (1.0, 0.0, 0.0, 0.0)))
    mem.observe(6.0, [Detection("kitchen table", 0.9, (0.5, 1.5, 0.375), (1.2, 0.8, 0.75))],
                map_epoch="2026-12-02-boot")
    return mem


FRAME_LINE = "positions in the memory's frame \"map\" (map epoch 2026-12-01-boot)"


def test_the_page_says_which_frame_its_positions_are_in(tmp_path: Path, house: Path) -> None:
    with _epochs_memory(tmp_path / "m.loci") as mem:
        data = map_data(mem)
        page = render_map_html(data)
    assert data["frame"] == {"name": "map", "epoch": "2026-12-01-boot", "note": FRAME_LINE}
    assert page.count('<p id="map-frame">positions in the memory&#x27;s frame &quot;map&quot; '
                      '(map epoch 2026-12-01-boot)</p>') == 1
    assert page.count("2026-12-02-boot") == 0  # a later epoch is aligned into it: not named
    with ObjectMemory.open(house, scope="home", read_only=True) as mem:
        page = render_map_html(map_data(mem))
    assert page.count('<p id="map-frame">positions in the memory&#x27;s frame '
                      '&quot;map&quot;</p>') == 1
    assert "map epoch" not in page


def test_identities_that_end_leave_the_map(tmp_path: Path) -> None:
    with ObjectMemory.open(tmp_path / "e.loci", scope="s") as mem:
        mem.observe(0.0, [Detection("cup", 0.9, (0, 0, 0.9), (0.1, 0.1, 0.1))])
        mem.observe(40.0, [Detection("mug", 0.9, (3, 0, 0.9), (0.1, 0.1, 0.1))])
        assert [e.kind for e in mem.events(object_id=1)] == [EventKind.APPEARED,
                                                             EventKind.EXPIRED]
        data = map_data(mem)
    assert [f["t"] for f in data["frames"]] == [0.0, 40.0]
    assert [(k, s is None) for k, s in data["objects"]["1"]] == [(0, False), (1, True)]
    assert [k for k, _ in data["objects"]["2"]] == [1]


def test_the_view_shows_at_least_4_m_with_a_metric_grid_and_a_round_scale_bar() -> None:
    house = map_view([0.0, -5.0, 10.0, 4.0])  # padded 10.8 x 9.8 m, widened to the plot
    assert house == {"extent": [-1.987, -5.4, 11.987, 4.4], "grid_m": 1.0, "scale_m": 2.0,
                     "canvas": [1000.0, 700.0], "margins": [46.0, 10.0, 10.0, 28.0]}
    cup = map_view([1.16, 1.96, 1.24, 2.04])  # one 8 cm cup: 4 m high, centred on it
    assert cup["extent"] == [-1.652, 0.0, 4.052, 4.0]
    assert (cup["grid_m"], cup["scale_m"]) == (1.0, 1.0)
    big = map_view([0.0, 0.0, 300.0, 20.0])  # a warehouse: 20 m lines, a 50 m bar
    assert (big["extent"][0], big["extent"][2], big["grid_m"], big["scale_m"]) == \
        (-0.4, 300.4, 20.0, 50.0)
    assert 300.8 / big["grid_m"] <= 20


def test_the_robot_path_and_where_it_saw_each_object_last(tmp_path: Path) -> None:
    with ObjectMemory.open(tmp_path / "r.loci", scope="s") as mem:
        robot_day(mem)
        mug = next(o for o in mem.objects() if o.label == "mug")
        cup = next(o for o in mem.objects() if o.label == "cup")
        data = map_data(mem)
        early = map_data(mem.as_of(T0 + 25))
    assert data["camera"] == {"t": [T0 + 10 * k for k in range(5)] + [T0 + 120],
                              "x": [0.5, 0.7, 0.9, 1.1, 1.3, 0.9], "y": [0.5] * 6,
                              "yaw": [0.0] * 6}  # the scans at +50 s and +200 s had none
    assert early["camera"]["t"] == [T0, T0 + 10, T0 + 20]  # an as_of view: its scans only
    assert [f["t"] for f in data["frames"]] == [0.0, T0, T0 + 200]
    assert mug.last_seen == T0 + 30 and cup.last_seen == T0 + 200
    mug_track = data["objects"][str(mug.id)]
    assert [(k, s["last_seen"], s["seen_from"]) for k, s in mug_track] == [
        (1, None, [0.5, 0.5]), (2, T0 + 30, [1.1, 0.5])]  # the camera of scan 3
    cup_track = data["objects"][str(cup.id)]
    assert [(k, s["last_seen"], s["seen_from"]) for k, s in cup_track] == [
        (1, None, [0.5, 0.5]), (2, None, None)]  # last seen in a scan without a camera
    assert data["unix"] is True
    assert data["bounds"] == [0.0, 0.0, 3.0, 3.0]  # the path lies inside the room


def test_lost_events_read_unix_times_as_iso() -> None:
    lost = Event(1, 1, T0 + 60, EventKind.LOST, 3, "mug", {"last_seen": T0 + 30.4})
    assert event_text(lost) == "LOST #3 mug: unseen since 2025-12-01T14:40:30Z"
    sim = Event(1, 1, 60.0, EventKind.LOST, 3, "mug", {"last_seen": 30.44})
    assert event_text(sim) == "LOST #3 mug: unseen since t=30.4 s"


def test_a_long_path_is_thinned_evenly() -> None:
    points = [(float(i), float(i), 0.0, 0.0) for i in range(10_001)]
    out = thinned(points)
    assert len(out) == MAX_PATH_POINTS == 4000
    assert out[0] == points[0] and out[-1] == points[-1]
    steps = {b[0] - a[0] for a, b in itertools.pairwise(out)}
    assert steps == {2.0, 3.0}  # 10,000 / 3,999: every 2nd or 3rd point
    assert thinned(points[:4000]) == points[:4000]


def test_json_in_script_cannot_close_the_script() -> None:
    text = json_for_script({"label": "</script><!-- & \u2028 >"})
    assert text == '{"label":"\\u003c/script\\u003e\\u003c!-- \\u0026 \\u2028 \\u003e"}'
    assert "<" not in text and ">" not in text and "&" not in text


def test_the_page_needs_no_network(house: Path) -> None:
    with ObjectMemory.open(house, scope="home", read_only=True) as mem:
        page = render_map_html(map_data(mem))
    for needle in ("http:", "https:", "src=", "href=", "@import", "url(http"):
        assert needle not in page.replace('xmlns="http://www.w3.org/2000/svg"', "") \
            .replace('"http://www.w3.org/2000/svg"', ""), needle
    assert "default-src 'none'" in page
    assert page.count("<script") == 2 and page.count("</script>") == 2


# -- writing it ---------------------------------------------------------------------------------
def test_bad_paths_and_empty_scopes_write_nothing(tmp_path: Path, house: Path) -> None:
    out = tmp_path / "out"
    out.mkdir()
    with ObjectMemory.open(house, scope="home", read_only=True) as mem:
        with pytest.raises(InvalidInput, match=r"map path must end in \.html or \.htm, got"):
            write_map(mem, out / "map.svg")
        with pytest.raises(InvalidInput, match=r"no directory .* to write the map in"):
            write_map(mem, out / "missing" / "map.html")
        (out / "dir.html").mkdir()
        with pytest.raises(InvalidInput, match="is a directory"):
            write_map(mem, out / "dir.html")
        with pytest.raises(InvalidInput, match="title must be a string"):
            write_map(mem, out / "map.html", title=3)  # type: ignore[arg-type]
    with ObjectMemory.open(house, scope="nobody") as mem, \
            pytest.raises(NotFound, match="scope 'nobody' has no records to draw"):
        write_map(mem, out / "map.html")
    assert sorted(p.name for p in out.iterdir()) == ["dir.html"]


def test_the_page_has_the_umask_s_mode(tmp_path: Path, house: Path) -> None:
    old = os.umask(0o022)
    try:
        with ObjectMemory.open(house, scope="home", read_only=True) as mem:
            write_map(mem, tmp_path / "a.html")
            os.umask(0o027)
            write_map(mem, tmp_path / "b.html")
    finally:
        os.umask(old)
    assert (tmp_path / "a.html").stat().st_mode & 0o777 == 0o644  # was 0o600 (mkstemp)
    assert (tmp_path / "b.html").stat().st_mode & 0o777 == 0o640
    assert sorted(p.name for p in tmp_path.iterdir()) == ["a.html", "b.html"]


def test_placeholders_in_a_title_stay_text(house: Path) -> None:
    with ObjectMemory.open(house, scope="home", read_only=True) as mem:
        page = render_map_html(map_data(mem), title=SLOTS)
    assert page.count(f"<title>{SLOTS}</title>") == 1
    assert page.count(f"<h1>{SLOTS}</h1>") == 1
    assert page.count("@@") == 2 * SLOTS.count("@@")  # the title's, and nothing else
    assert page.count("<script") == 2 and page.count("</script>") == 2


def _cli(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "locimem", *args], capture_output=True,
                          text=True, check=False)


def test_the_command(house: Path, tmp_path: Path) -> None:
    out = tmp_path / "map.html"
    proc = _cli("map", str(house), "--scope", "home", "-o", str(out))
    assert proc.returncode == 0, proc.stderr
    size = out.stat().st_size
    assert proc.stdout == (f"wrote {out}: 7 frames, 4 rooms, 17 objects ({size:,} bytes, "
                           "self-contained); open it in a browser\n")
    with ObjectMemory.open(house, scope="home", read_only=True) as mem:
        assert out.read_text(encoding="utf-8") == render_map_html(map_data(mem))
    proc = _cli("map", str(house), "--title", SLOTS, "-o", str(tmp_path / "titled.html"))
    assert proc.returncode == 0, proc.stderr  # was: ValueError from the template fill
    assert f"<title>{SLOTS}</title>" in (tmp_path / "titled.html").read_text(encoding="utf-8")
    (tmp_path / "titled.html").unlink()
    proc = _cli("map", str(house), "-o", str(tmp_path / "other.html"))  # the only scope
    assert proc.returncode == 0, proc.stderr
    assert (tmp_path / "other.html").read_bytes() == out.read_bytes()
    (tmp_path / "other.html").unlink()
    proc = _cli("map", str(house), "--scope", "default", "-o", str(tmp_path / "other.html"))
    assert proc.returncode == 2
    assert proc.stderr == f"error: {house} holds no scope 'default'; its scopes: 'home'\n"
    proc = _cli("map", str(tmp_path / "nope.loci"), "-o", str(tmp_path / "x.html"))
    assert (proc.returncode, proc.stderr.count("\n")) == (2, 1)
    assert proc.stderr.startswith("error: no store at")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["map.html"]
    assert "a time slider" in _cli("map", "--help").stdout


# -- in a real browser ----------------------------------------------------------------------------
class _Dom(HTMLParser):
    """Every element of a page: tag, attributes and text (its own and its children's)."""

    VOID: ClassVar[set[str]] = {"meta", "input", "br", "img", "link", "hr", "path", "polygon",
                                "rect", "circle", "line"}

    def __init__(self) -> None:
        super().__init__()
        self.elements: list[dict[str, Any]] = []
        self._open: list[dict[str, Any]] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        e = {"tag": tag, "attrs": dict(attrs), "text": "", "parent": (self._open or [None])[-1]}
        self.elements.append(e)
        if tag not in self.VOID:
            self._open.append(e)

    def handle_endtag(self, tag: str) -> None:
        for i in range(len(self._open) - 1, -1, -1):
            if self._open[i]["tag"] == tag:
                del self._open[i:]
                return

    def handle_data(self, data: str) -> None:
        for e in self._open:
            e["text"] += data

    def by_class(self, cls: str) -> list[dict[str, Any]]:
        return [e for e in self.elements if cls in (e["attrs"].get("class") or "").split()]

    def objects(self) -> dict[int, dict[str, Any]]:
        return {int(e["attrs"]["data-id"]): e for e in self.by_class("obj")}

    def labels(self) -> dict[int, str]:
        return {int(e["attrs"]["data-id"]): e["text"] for e in self.by_class("label")}

    def by_id(self, element_id: str) -> dict[str, Any]:
        return next(e for e in self.elements if e["attrs"].get("id") == element_id)

    def events(self) -> list[str]:
        """The texts of the caption's event lines."""
        events = self.by_id("events")
        return [e["text"] for e in self.elements if e["tag"] == "li" and e["parent"] is events]

    def rows(self) -> list[dict[str, Any]]:
        """The side list's rows."""
        return self.by_class("obj-row")

    def body(self) -> dict[str, Any]:
        return next(e["attrs"] for e in self.elements if e["tag"] == "body")


@pytest.fixture
def browser() -> str:
    """Chromium's path; a missing browser skips the test here, and fails it in CI (with
    ``CI`` set), where the browser test must run."""
    if CHROMIUM is None:
        if os.environ.get("CI"):
            pytest.fail(f"{NO_CHROMIUM}, but it is not installed")
        pytest.skip(NO_CHROMIUM)
    return CHROMIUM


def _chromium(tmp_path: Path, *args: str) -> str:
    assert CHROMIUM is not None
    profile = tmp_path / f"chromium-profile-{next(_profiles)}"
    proc = subprocess.run([CHROMIUM, *CHROMIUM_FLAGS, f"--user-data-dir={profile}", *args],
                          capture_output=True, text=True, timeout=120, check=False)
    assert proc.returncode == 0, proc.stderr[-3000:]
    return proc.stdout


def _dump(tmp_path: Path, page: Path, fragment: str = "") -> _Dom:
    dom = _Dom()
    dom.feed(_chromium(tmp_path, "--dump-dom", page.as_uri() + fragment))
    assert dom.body().get("data-frame") is not None, "the page's script did not run"
    return dom


def _screenshot(tmp_path: Path, page: Path, name: str, fragment: str = "") -> Path:
    shot = tmp_path / name
    _chromium(tmp_path, f"--screenshot={shot}", "--window-size=1100,760", page.as_uri()
              + fragment)
    assert shot.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    artifacts = os.environ.get("LOCIMEM_ARTIFACTS")
    if artifacts:
        Path(artifacts).mkdir(parents=True, exist_ok=True)
        shutil.copy(shot, Path(artifacts) / name)
    return shot


def test_browser_draws_the_memory_now(house_map: Path, tmp_path: Path, browser: str) -> None:
    dom = _dump(tmp_path, house_map)
    assert dom.body()["data-frame"] == "6" and dom.body()["data-t"] == "50"
    objects = dom.objects()
    assert sorted(objects) == list(range(1, KEYS_ID + 1))
    labels = {name: HOUSE[name][0] for name in HOUSE}
    for name, oid in ID.items():
        attrs = objects[oid]["attrs"]
        assert attrs["data-label"] == labels[name]
        expected = "lost" if name == "phone" else "confirmed"
        assert attrs["data-status"] == expected, name
        assert ("furniture" in attrs["class"].split()) == (attrs["data-level"] == "furniture")
    phone = objects[ID["phone"]]["attrs"]
    assert (phone["data-confidence"], phone["data-room"]) == ("0.07", "kitchen")
    assert dom.labels()[ID["phone"]] == "phone (lost)"
    assert dom.labels()[KEYS_ID] == "keys"
    assert objects[KEYS_ID]["attrs"]["data-room"] == "hall"
    cup = objects[ID["cup"]]["attrs"]
    assert (cup["data-x"], cup["data-y"], cup["data-z"]) == ("1.20", "2.20", "0.95")
    title = next(e["text"] for e in dom.elements
                 if e["tag"] == "title" and e["parent"] is objects[ID["cup"]])
    assert title.splitlines() == [
        "cup #2 (item)", "confirmed, confidence 1.00", "room: kitchen",
        "at (1.20, 2.20, 0.95) m, size 0.08 x 0.08 x 0.10 m",
        "first seen t=0.0 s, last seen t=50.0 s", "label votes: cup 100%",
        "source: tracker"]
    moves = [e["attrs"] for e in dom.by_class("move")]
    assert [(m["data-id"], m["data-frame"], m["class"]) for m in moves] == [
        (str(ID["cup"]), "2", "move")]
    rooms = [e["attrs"]["data-name"] for e in dom.by_class("room")]
    assert rooms == sorted(ROOMS)
    assert dom.events() == ["(no events: the memory as of its latest scan)"]
    assert dom.by_id("time")["text"] == "t = 50.0 s   (frame 7 of 7)"  # a sim clock: seconds
    grid = [(e["attrs"]["data-axis"], e["attrs"]["data-m"]) for e in dom.by_class("grid")]
    assert grid == [("x", str(m)) for m in range(-1, 12)] + [("y", str(m)) for m in
                                                           range(-5, 5)]  # every metre
    assert [e["text"] for e in dom.by_class("x-label")][:3] == ["-1 m", "0 m", "1 m"]
    view = map_view([0.0, -5.0, 10.0, 4.0])
    scale = (1000 - 46 - 10) / (view["extent"][2] - view["extent"][0])
    assert dom.by_id("scalebar")["attrs"]["data-m"] == "2"
    assert dom.by_class("scale-bar")[0]["attrs"]["data-px"] == f"{2 * scale:.1f}"
    assert dom.by_class("scale-label")[0]["text"] == "2 m"
    ids = {e["attrs"].get("id") for e in dom.elements}
    assert "robot" not in ids and "robot-path" not in ids  # no cameras: no path
    assert dom.by_class("sight") == [] and dom.by_class("seen-from") == []
    rows = [(e["attrs"]["data-id"], e["text"]) for e in dom.rows()]
    assert rows[:3] == [(str(ID["bed"]), "bed #16confirmed, bedroom"),
                        (str(ID["counter"]), "counter #7confirmed, kitchen"),
                        (str(ID["cup"]), "cup #2confirmed, kitchen")]
    assert len(rows) == KEYS_ID
    assert not any(set(e["attrs"].get("class", "").split()) & {"highlight", "dim", "hidden"}
                   for e in dom.elements)
    assert dom.by_id("count")["text"] == "17 of 17 objects shown"
    assert dom.by_id("info")["attrs"]["data-ids"] == ""
    assert dom.by_id("map-frame")["text"] == "positions in the memory's frame \"map\""


def test_browser_shows_the_memory_s_map_epoch(tmp_path: Path, browser: str) -> None:
    with _epochs_memory(tmp_path / "m.loci") as mem:
        write_map(mem, tmp_path / "m.html")
    dom = _dump(tmp_path, tmp_path / "m.html")
    assert dom.by_id("map-frame")["text"] == FRAME_LINE
    assert dom.objects()[1]["attrs"]["data-x"] == "1.50"  # the later scan, in that frame


def test_browser_time_slider_shows_the_past(house_map: Path, tmp_path: Path, browser: str) -> None:
    before_move = _dump(tmp_path, house_map, "#frame=1")  # t=5: all published, nothing moved
    assert before_move.body()["data-t"] == "5"
    objects = before_move.objects()
    assert sorted(objects) == list(range(1, KEYS_ID))  # no keys yet
    cup = objects[ID["cup"]]["attrs"]
    assert (cup["data-x"], cup["data-y"], cup["data-status"]) == ("1.20", "1.40",
                                                                   "confirmed")
    assert objects[ID["phone"]]["attrs"]["data-status"] == "confirmed"
    assert before_move.by_class("move") == []
    assert len(before_move.events()) == len(HOUSE)

    moved = _dump(tmp_path, house_map, "#t=12")  # the last frame at or before 12 s: t=10
    assert moved.body()["data-frame"] == "2"
    objects = moved.objects()
    assert KEYS_ID not in objects
    cup = objects[ID["cup"]]["attrs"]
    assert (cup["data-x"], cup["data-y"]) == ("1.20", "2.20")
    assert objects[ID["phone"]]["attrs"]["data-confidence"] == "0.94"
    move = moved.by_class("move")[0]["attrs"]
    assert move["class"] == "move current" and move["data-id"] == str(ID["cup"])
    assert moved.events() == [
        "MOVED #2 cup (1.20, 1.40, 0.80) -> (1.20, 2.20, 0.95) (0.81 m)"]

    fading = _dump(tmp_path, house_map, "#frame=4")  # t=20: the phone unseen for 11 s
    phone = fading.objects()[ID["phone"]]["attrs"]
    assert (phone["data-status"], phone["data-confidence"]) == ("tentative", "0.48")
    assert fading.objects()[KEYS_ID]["attrs"]["data-status"] == "confirmed"
    shot = _screenshot(tmp_path, house_map, "map-house.png")
    assert shot.stat().st_size > 10_000


def _classed(dom: _Dom, cls: str, kind: str = "obj") -> set[int]:
    return {int(e["attrs"]["data-id"]) for e in dom.by_class(kind)
            if cls in e["attrs"]["class"].split()}


def test_browser_search_and_status_filter(house_map: Path, tmp_path: Path,
                                          browser: str) -> None:
    everyone = set(range(1, KEYS_ID + 1))
    cups = {ID["cup"], ID["cup2"], ID["cupboard"]}  # "cup" is in "cupboard" too
    dom = _dump(tmp_path, house_map, "#q=cup&hide=lost")
    assert dom.body()["data-query"] == "cup"
    for kind in ("obj", "label"):
        assert _classed(dom, "highlight", kind) == cups
        assert _classed(dom, "dim", kind) == everyone - cups
        assert _classed(dom, "hidden", kind) == {ID["phone"]}  # lost, and lost is unchecked
    assert _classed(dom, "highlight", "obj-row") == cups
    assert everyone - _classed(dom, "hidden", "obj-row") == cups  # the list: the matches only
    assert dom.by_id("count")["text"] == "3 of 17 objects shown (3 match)"
    assert dom.by_id("info")["attrs"]["data-ids"] == "2 9 10"
    checked = {e["attrs"]["id"]: "checked" in e["attrs"] for e in dom.elements
               if e["tag"] == "input" and e["attrs"].get("type") == "checkbox"}
    assert checked == {"show-confirmed": True, "show-tentative": True, "show-doubted": True,
                       "show-lost": True}  # the attribute is the default; the property moved
    by_id = _dump(tmp_path, house_map, "#q=%232")  # "#2": the id, not labels with a 2
    assert _classed(by_id, "highlight") == {ID["cup"]}
    assert _classed(by_id, "dim") == everyone - {ID["cup"]}
    assert _classed(by_id, "hidden") == set()
    info = by_id.by_id("info")
    assert [e["text"] for e in by_id.elements if e["parent"] is not None
            and e["parent"]["parent"] is info and e["tag"] == "p"] == [
        "cup #2", "confirmed, confidence 1.00", "at (1.20, 2.20) m, in kitchen",
        "last seen t=50.0 s (at this frame)", "(no camera pose for that scan)"]


def test_browser_robot_path_and_last_sighting(tmp_path: Path, browser: str) -> None:
    with ObjectMemory.open(tmp_path / "robot.loci", scope="robot") as mem:
        robot_day(mem)
        page = tmp_path / "robot.html"
        write_map(mem, page)
        mug = next(o.id for o in mem.objects() if o.label == "mug")
        cup = next(o.id for o in mem.objects() if o.label == "cup")
    dom = _dump(tmp_path, page, "#q=mug")  # the last frame, t0 + 200 s
    assert dom.by_id("time")["text"] == \
        "2025-12-01T14:43:20Z   (t = 1764600200.0 s, frame 3 of 3)"
    assert dom.by_id("robot-path")["attrs"]["data-n"] == "6"  # the camera scans until then
    robot = dom.by_id("robot")["attrs"]
    assert (robot["data-x"], robot["data-y"], robot["data-t"]) == ("0.90", "0.50",
                                                                   str(int(T0 + 120)))
    assert [e["attrs"]["data-id"] for e in dom.by_class("sight")] == [str(mug)]
    seen = dom.by_class("seen-from")[0]["attrs"]
    assert (seen["data-id"], seen["data-x"], seen["data-y"]) == (str(mug), "1.10", "0.50")
    info = dom.by_id("info")
    assert [e["text"] for e in dom.elements if e["parent"] is not None
            and e["parent"]["parent"] is info and e["tag"] == "p"] == [
        "mug #2", "confirmed, confidence 0.99", "at (1.50, 1.00) m, in kitchen",
        "last seen 2025-12-01T14:40:30Z", "from the robot at (1.10, 0.50) m, 0.6 m away"]
    title = next(e["text"] for e in dom.elements
                 if e["tag"] == "title" and e["parent"] is dom.objects()[mug])
    assert "first seen 2025-12-01T14:40:00Z, last seen 2025-12-01T14:40:30Z" in \
        title.splitlines()
    assert "last seen from the robot at (1.10, 0.50) m" in title.splitlines()
    assert _classed(dom, "highlight") == {mug} and _classed(dom, "dim") == {cup}
    # one small room: the view is 4 m high, and the 8 cm cup a dot of 0.7% of the width
    extent = map_view([0.0, 0.0, 3.0, 3.0])["extent"]
    assert extent[3] - extent[1] == 4.0
    scale = (1000 - 46 - 10) / (extent[2] - extent[0])
    dot = next(e["attrs"] for e in dom.elements if e["parent"] is dom.objects()[cup]
               and "dot" in e["attrs"].get("class", ""))
    assert dot["r"] == f"{max(4.0, 0.08 * scale / 2):.1f}" == "6.6"
    assert next(e for e in dom.elements if e["tag"] == "svg")["attrs"]["viewbox"] == \
        "0 0 1000 700"
    early = _dump(tmp_path, page, "#frame=1")  # t0: the first scan
    assert early.by_id("robot-path")["attrs"]["data-n"] == "1"
    assert (early.by_id("robot")["attrs"]["data-x"], early.by_class("sight")) == ("0.50", [])
    _screenshot(tmp_path, page, "map-robot.png", "#q=mug")


def test_browser_labels_are_text_never_markup(tmp_path: Path, browser: str) -> None:
    script = "</script><script>document.body.dataset.pwned='1'</script>"
    img = "<img src=x onerror=\"document.body.dataset.pwned='2'\">"
    with ObjectMemory.open(tmp_path / "evil.loci", scope="evil") as mem:
        mem.define_room("<b>lab</b>", [(0, 0), (3, 0), (3, 3), (0, 3)])
        for t in range(6):
            mem.observe(float(t), [Detection(script, 0.9, (1, 1, 0.5), (0.2, 0.2, 0.2)),
                                   Detection(img, 0.9, (2, 2, 0.5), (0.2, 0.2, 0.2))])
        page = tmp_path / "evil.html"
        write_map(mem, page, title="<script>document.body.dataset.pwned='3'</script>")
        titled = tmp_path / "titled.html"
        write_map(mem, titled, title=SLOTS)
    raw = page.read_text(encoding="utf-8")
    assert raw.count("</script>") == 2 and raw.count("<script") == 2
    dom = _dump(tmp_path, page)
    assert "data-pwned" not in dom.body()
    tags = [e["tag"] for e in dom.elements]
    assert tags.count("script") == 2 and "img" not in tags and "b" not in tags
    assert {o["attrs"]["data-label"] for o in dom.objects().values()} == {script, img}
    assert set(dom.labels().values()) == {script, img}
    assert [e["attrs"]["data-name"] for e in dom.by_class("room")] == ["<b>lab</b>"]
    title = next(e["text"] for e in dom.elements if e["tag"] == "title")
    assert title == "<script>document.body.dataset.pwned='3'</script>"
    titled_dom = _dump(tmp_path, titled)  # placeholders in a title: text, and the page works
    assert next(e["text"] for e in titled_dom.elements if e["tag"] == "title") == SLOTS
    assert next(e["text"] for e in titled_dom.elements if e["tag"] == "h1") == SLOTS
    assert set(titled_dom.labels().values()) == {script, img}


def test_browser_map_of_a_simulated_day(tmp_path: Path, browser: str) -> None:
    scenario = build("kitchen_day")
    with ObjectMemory.open(tmp_path / "day.loci", scope="home") as mem:
        for room in scenario.world.rooms:
            (x0, y0), (x1, y1) = room.min_xy, room.max_xy
            mem.define_room(room.name, [(x0, y0), (x1, y0), (x1, y1), (x0, y1)])
        for frame in scenario.frames:
            mem.observe(frame.t, list(frame.detections), frame.camera)
        page = tmp_path / "day.html"
        write_map(mem, page)
        now = {o.id: o for o in mem.objects()}
        moved = [e for e in mem.events(kind="MOVED")]
        lost = [e.object_id for e in mem.events(kind="LOST")]
        first_t = mem.events()[0].t
        at_first = {o.id for o in mem.as_of(first_t).objects()}
        times = [f["t"] for f in map_data(mem)["frames"]]
        before_t = times[times.index(moved[0].t) - 1]
        moved_from = mem.as_of(before_t).get(moved[0].object_id).center
        moved_to = mem.as_of(moved[0].t).get(moved[0].object_id).center
    assert moved and lost
    dom = _dump(tmp_path, page)
    objects = dom.objects()
    assert sorted(objects) == sorted(now)
    for oid, obj in now.items():
        attrs = objects[oid]["attrs"]
        assert (attrs["data-label"], attrs["data-status"]) == (obj.label, obj.status.value)
        assert attrs["data-confidence"] == f"{obj.confidence:.2f}"
        assert (attrs["data-x"], attrs["data-y"]) == (f"{round(obj.center[0], 2):.2f}",
                                                      f"{round(obj.center[1], 2):.2f}")
    assert all(objects[oid]["attrs"]["data-status"] == "lost" for oid in lost)
    assert {int(e["attrs"]["data-id"]) for e in dom.by_class("move")} == \
        {e.object_id for e in moved}
    assert [e["attrs"]["data-name"] for e in dom.by_class("room")] == ["kitchen", "living"]
    early = _dump(tmp_path, page, "#frame=0")
    assert set(early.objects()) == at_first
    k = times.index(moved[0].t)
    before = _dump(tmp_path, page, f"#t={moved[0].t - 0.001}")  # the frame before the move
    assert before.body()["data-frame"] == str(k - 1)
    attrs = before.objects()[moved[0].object_id]["attrs"]
    assert (attrs["data-x"], attrs["data-y"]) == (f"{round(moved_from[0], 2):.2f}",
                                                  f"{round(moved_from[1], 2):.2f}")
    assert before.by_class("move") == []
    after = _dump(tmp_path, page, f"#frame={k}")
    attrs = after.objects()[moved[0].object_id]["attrs"]
    assert (attrs["data-x"], attrs["data-y"]) == (f"{round(moved_to[0], 2):.2f}",
                                                  f"{round(moved_to[1], 2):.2f}")
    assert math.dist(moved_from[:2], moved_to[:2]) > 0.2
    assert [e["attrs"]["class"] for e in after.by_class("move")] == ["move current"]
    _screenshot(tmp_path, page, "map-kitchen-day.png")
