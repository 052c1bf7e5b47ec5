"""A browser map of a memory: one self-contained HTML file (inline SVG, script and data; it
needs no network access), seen from above, with a time slider over the memory's story.

Positions are in the memory's frame, and a line under the title says which (``positions in the
memory's frame "map" (map epoch 2026-12-01-boot)``; without the parenthesis when the scope
never named a map epoch). Rooms are drawn as floor outlines, furniture as footprints (rotated
by the object's yaw), items as dots, each with its label, over a metric grid (lines every 1,
2, 5, 10... m, so that there are at most 20 across, labelled in metres) with a scale bar of a
round length; the view shows at least 4 m x 4 m, centred on what is drawn, so one cup is a
small dot and not the whole canvas. Colour is the belief (green confident, through yellow, to
red; pale while tentative, orange when doubted, grey and dashed when lost), and hovering shows
the details (id, status, confidence, room, place and size to the centimetre, first and last
sighting, label votes as shares, and where the robot's camera was when it last saw it).

The slider steps through the frames of :func:`~locimem.viz.story.iter_story` — the memory
as of each time something happened — so objects appear, move (an arrow from the old place to
the new) and get lost; the caption lists that time's events. The robot's path (the positions
of the scans' cameras, thinned to at most :data:`MAX_PATH_POINTS`) is drawn up to the frame's
time, with the robot marked where it was then. A side panel lists the frame's objects (label,
id, status, room); a search box (label or ``#id``) and status check boxes pick which are
highlighted or hidden, on the map and in the list, and hovering or clicking an object (on the
map or in the list) highlights it in both and draws a line from the robot's place at its last
sighting to it. Times read as ISO 8601 (UTC, to the second) when they look like Unix time
(:func:`locimem.times.looks_unix`, decided once here and passed to the page as ``unix``),
else as seconds (``t = 12.5 s``).

The page reads its starting state from the URL fragment, ``&``-separated: ``frame=3``
(0-based) or ``t=12.5`` (the last frame at or before 12.5 s; without either, the last frame,
the memory as it is now), ``q=mug`` (the search), ``hide=lost,tentative`` (statuses
unchecked) and ``select=3`` (an object selected), e.g. ``map.html#t=40&q=mug``.

Labels and room names are untrusted (they come from perception): the data travels as JSON
inside a ``<script type="application/json">`` element with ``<``, ``>``, ``&`` and the
JavaScript line separators escaped, and the script puts text into the page only through
``textContent`` and attributes, never as markup.

Every drawn element carries data attributes (``data-id``, ``data-label``, ``data-status``,
``data-confidence``, ``data-x``, ``data-y``, ``data-room``; rooms ``data-name``; grid lines
and the scale bar ``data-m``; the robot ``data-x``, ``data-y``, ``data-t``), so a test (or a
user's script) can read the picture back from the DOM. The state of the filters is classes:
``highlight`` (matches the search, hovered or selected), ``dim`` (a search is on and it does
not match), ``hidden`` (its status is unchecked).
"""

from __future__ import annotations

import base64
import hashlib
import html
import json
import math
import os
import re
from pathlib import Path
from typing import Any

from locimem.errors import InvalidInput
from locimem.files import new_file
from locimem.frames import FRAME_NAME, frame_note, memory_epoch
from locimem.language.hedge import sanitize
from locimem.memory import Readable, reader_of
from locimem.model import ObjectStatus, TrackedObject
from locimem.query.reader import RoomInfo
from locimem.times import looks_unix
from locimem.viz._map_page import PAGE, SCRIPT
from locimem.viz.story import (
    StoryFrame,
    check_scope_has_story,
    event_text,
    iter_story,
    move_of,
    status_rgb,
    yaw_of,
)

__all__ = ["MapReport", "camera_track", "map_data", "map_view", "render_map_html", "write_map"]

MAP_SUFFIXES = (".html", ".htm")
MAX_VOTES_SHOWN = 3
MAX_PATH_POINTS = 4000  # the robot's path is thinned (evenly) to this many points
PAD_M = 0.4  # around what is drawn
MIN_EXTENT_M = 4.0  # the view shows at least this much in x and in y
MAX_GRID_LINES = 20  # across the view's longer side
# The picture's canvas in SVG units: width, height, and the plot's margins (left, top, right,
# bottom) that hold the axis labels.
CANVAS_PX = (1000.0, 700.0)
MARGINS_PX = (46.0, 10.0, 10.0, 28.0)
_SLOTS = re.compile(r"@@(TITLE|FRAME|CSP|LEGEND|DATA|SCRIPT)@@")

CameraPoint = tuple[float, float, float, float]
"""A scan's camera on the map: (t seconds, x metres, y metres, yaw radians), map frame."""


class MapReport:
    """What :func:`write_map` wrote: the file, its size in bytes, and the number of frames,
    rooms and objects (every object that appears in some frame)."""

    __slots__ = ("n_bytes", "n_frames", "n_objects", "n_rooms", "path")

    def __init__(self, path: Path, n_bytes: int, n_frames: int, n_rooms: int,
                 n_objects: int) -> None:
        self.path, self.n_bytes = path, n_bytes
        self.n_frames, self.n_rooms, self.n_objects = n_frames, n_rooms, n_objects


def _r(v: float, nd: int = 3) -> float:
    return round(float(v), nd)


def _object_entry(obj: TrackedObject, room: str | None, t: float,
                  camera_at: dict[float, CameraPoint]) -> dict[str, Any]:
    """What the page draws and shows on hover, at the precision the picture needs (places
    and sizes to the centimetre), so that an object seen scan after scan at the same place
    does not change from frame to frame: ``last_seen`` is null when it was seen at the
    frame's own time, the label votes are shares (whole percent) of the label mass, and
    ``seen_from`` is where the camera was (x, y) in the scan at its last sighting (null when
    that scan had no camera)."""
    cam = camera_at.get(obj.last_seen)
    total = sum(obj.label_votes.values()) or 1.0
    votes = [[k, round(100.0 * v / total)] for k, v in
             list(obj.label_votes.items())[:MAX_VOTES_SHOWN]]
    c, s = obj.center, obj.size
    return {
        "label": obj.label, "level": obj.level, "status": obj.status.value,
        "confidence": round(obj.confidence, 2),
        "x": round(c[0], 2), "y": round(c[1], 2), "z": round(c[2], 2),
        "sx": round(s[0], 2), "sy": round(s[1], 2), "sz": round(s[2], 2),
        "yaw": round(yaw_of(obj.orientation), 2), "room": room,
        "first_seen": round(obj.first_seen, 3),
        "last_seen": None if obj.last_seen == t else round(obj.last_seen, 3),
        "votes": votes, "color": hex_rgb(status_rgb(obj.status, obj.confidence)),
        "source": obj.source,
        "seen_from": None if cam is None else [round(cam[1], 2), round(cam[2], 2)],
    }


def hex_rgb(rgb: tuple[int, int, int]) -> str:
    """``#rrggbb`` for a 0-255 RGB triple."""
    return "#" + "".join(f"{c:02x}" for c in rgb)


def _room_entry(room: RoomInfo) -> dict[str, Any]:
    return {"polygon": [[_r(x), _r(y)] for x, y in room.polygon],
            "z": None if room.z_range is None else [_r(room.z_range[0]), _r(room.z_range[1])],
            "connected": list(room.connected)}


def camera_track(memory: Readable) -> list[CameraPoint]:
    """Where the camera was in each of ``memory``'s scans that had one (up to an ``as_of``
    view's commit), in valid-time order (commit order among equal times): a scan without a
    camera, or a correction, adds nothing."""
    memory = reader_of(memory)
    until = memory.until_commit
    found = sorted((c.t, c.id, c.camera) for c in memory.store.commits(memory.scope)
                   if c.camera is not None and (until is None or c.id <= until))
    out: list[CameraPoint] = []
    for t, _, cam in found:
        x, y = float(cam["position"][0]), float(cam["position"][1])
        q = cam.get("quaternion")
        quat = (float(q[0]), float(q[1]), float(q[2]), float(q[3])) \
            if q is not None and len(q) == 4 else None
        out.append((t, x, y, yaw_of(quat)))
    return out


def thinned(points: list[CameraPoint], limit: int = MAX_PATH_POINTS) -> list[CameraPoint]:
    """At most ``limit`` of ``points``, evenly spaced by index, the first and last kept."""
    n = len(points)
    if n <= limit:
        return list(points)
    return [points[round(i * (n - 1) / (limit - 1))] for i in range(limit)]


def _nice(value: float, steps: tuple[float, ...] = (1.0, 2.0, 5.0)) -> list[float]:
    """The round lengths (1, 2, 5 x 10**k) from a tenth of ``value`` to ten times it."""
    k = math.floor(math.log10(value))
    return [m * 10.0 ** e for e in range(k - 1, k + 2) for m in steps]


def map_view(bounds: list[float]) -> dict[str, Any]:
    """What the picture shows, for content within ``bounds`` (x0, y0, x1, y1, metres):
    ``extent`` (x0, y0, x1, y1) — the bounds padded by :data:`PAD_M`, at least
    :data:`MIN_EXTENT_M` each way, widened to the plot's aspect, centred on the content;
    ``grid_m`` — the spacing of the grid lines (1, 2, 5, 10... m, the smallest giving at most
    :data:`MAX_GRID_LINES` across, and never under 1 m); ``scale_m`` — the scale bar's round
    length (1, 2, 5 x 10**k m, the longest up to a fifth of the width); ``canvas`` (width,
    height) and ``margins`` (left, top, right, bottom) in SVG units.

    >>> map_view([0.0, 0.0, 0.08, 0.08])["extent"]  # one cup: 4 m high, centred on it
    [-2.812, -1.96, 2.892, 2.04]
    """
    x0, y0, x1, y1 = bounds
    w = max(x1 - x0 + 2 * PAD_M, MIN_EXTENT_M)
    h = max(y1 - y0 + 2 * PAD_M, MIN_EXTENT_M)
    (cw, ch), (ml, mt, mr, mb) = CANVAS_PX, MARGINS_PX
    aspect = (cw - ml - mr) / (ch - mt - mb)
    if w / h < aspect:
        w = h * aspect
    else:
        h = w / aspect
    cx, cy = (x0 + x1) / 2, (y0 + y1) / 2
    span = max(w, h)
    grid = min(s for s in _nice(span) if s >= 1.0 and span / s <= MAX_GRID_LINES)
    scale = max(s for s in _nice(w) if s <= w / 5)
    return {"extent": [_r(cx - w / 2), _r(cy - h / 2), _r(cx + w / 2), _r(cy + h / 2)],
            "grid_m": grid, "scale_m": scale, "canvas": list(CANVAS_PX),
            "margins": list(MARGINS_PX)}


def map_data(memory: Readable) -> dict[str, Any]:
    """The map's data: ``frames`` (each ``t`` and its events), and per object and per room a
    track of ``[frame index, state or null]`` entries, one where the state changed (null: not
    in the memory at that frame: never seen yet, expired or merged away); ``moves`` as
    ``[frame, id, from, to]`` (map-frame metres); ``camera`` — the robot's path, columns
    ``t``, ``x``, ``y``, ``yaw`` (:func:`camera_track`, thinned to :data:`MAX_PATH_POINTS`;
    empty without cameras); ``bounds`` (x0, y0, x1, y1) of everything drawn and ``view``
    (:func:`map_view`); ``unix`` — whether the times read as Unix time (the latest does: a
    room defined at ``t = 0`` before a robot's first scan does not turn it off), then shown
    as ISO 8601; ``frame`` — the frame the positions are in: ``name`` (``"map"``),
    ``epoch`` (the memory's frame's map epoch, None when the scope never named one) and
    ``note`` (:func:`locimem.frames.frame_note`, the line the page shows under its title).
    Plain JSON types."""
    memory = reader_of(memory)
    track = camera_track(memory)
    camera_at = {p[0]: p for p in track}  # the last scan with a camera at each time
    frames: list[dict[str, Any]] = []
    objects: dict[str, list[list[Any]]] = {}
    rooms: dict[str, list[list[Any]]] = {}
    moves: list[list[Any]] = []
    last_obj: dict[str, Any] = {}
    last_room: dict[str, Any] = {}
    xs: list[float] = []
    ys: list[float] = []
    for k, frame in enumerate(iter_story(memory)):
        frames.append(_frame_entry(frame))
        _track(objects, last_obj, k, {str(o.id): _object_entry(o, frame.room_of.get(o.id),
                                                               frame.t, camera_at)
                                      for o in frame.objects})
        _track(rooms, last_room, k, {r.name: _room_entry(r) for r in frame.rooms})
        for o in frame.objects:
            hx, hy = o.size[0] / 2, o.size[1] / 2
            xs += [o.center[0] - hx, o.center[0] + hx]
            ys += [o.center[1] - hy, o.center[1] + hy]
        for r in frame.rooms:
            xs += [p[0] for p in r.polygon]
            ys += [p[1] for p in r.polygon]
        for ev in frame.events:
            mv = move_of(ev)
            if mv is not None:
                moves.append([k, ev.object_id, [_r(v) for v in mv[0]], [_r(v) for v in mv[1]]])
                xs += [mv[0][0], mv[1][0]]
                ys += [mv[0][1], mv[1][1]]
    path = thinned(track)
    xs += [p[1] for p in path]
    ys += [p[2] for p in path]
    bounds = [_r(b) for b in ([min(xs), min(ys), max(xs), max(ys)] if xs
                              else [0.0, 0.0, 1.0, 1.0])]
    times = [f["t"] for f in frames]
    epoch = memory_epoch(memory.state.epochs)
    return {"scope": memory.scope, "frames": frames, "objects": objects, "rooms": rooms,
            "moves": moves,
            "frame": {"name": FRAME_NAME, "epoch": epoch, "note": frame_note(epoch)},
            "camera": {"t": [_r(p[0]) for p in path], "x": [_r(p[1], 2) for p in path],
                       "y": [_r(p[2], 2) for p in path], "yaw": [_r(p[3], 2) for p in path]},
            "bounds": bounds, "view": map_view(bounds),
            "unix": bool(times) and looks_unix(max(times))}


def _frame_entry(frame: StoryFrame) -> dict[str, Any]:
    return {"t": _r(frame.t, 3),
            "events": [{"kind": e.kind.value, "id": e.object_id, "text": event_text(e)}
                       for e in frame.events]}


def _track(tracks: dict[str, list[list[Any]]], last: dict[str, Any], k: int,
           now: dict[str, Any]) -> None:
    """Append ``[k, state]`` to each track whose state changed at frame ``k`` (``None`` for
    one that is gone)."""
    for key, state in now.items():
        if last.get(key) != state:
            tracks.setdefault(key, []).append([k, state])
            last[key] = state
    for key in list(last):
        if key not in now and last[key] is not None:
            tracks[key].append([k, None])
            last[key] = None


def json_for_script(data: Any) -> str:
    """JSON safe to embed in an HTML ``<script>`` element: no ``<``, ``>`` or ``&`` (so no
    ``</script>`` and no ``<!--``), and no U+2028/U+2029 line separators."""
    text = json.dumps(data, ensure_ascii=False, separators=(",", ":"), allow_nan=False)
    for raw, esc in (("&", "\\u0026"), ("<", "\\u003c"), (">", "\\u003e"),
                     ("\u2028", "\\u2028"), ("\u2029", "\\u2029")):
        text = text.replace(raw, esc)
    return text


def render_map_html(data: dict[str, Any], title: str | None = None) -> str:
    """The page for ``data`` (from :func:`map_data`): one HTML string, no external resources.

    Its Content-Security-Policy allows no network access and runs only the page's own script
    (by its SHA-256), so even a label that got through as markup could not run code."""
    heading = title if title is not None else f"locimem map: {data['scope']}"
    digest = base64.b64encode(hashlib.sha256(SCRIPT.encode("utf-8")).digest()).decode("ascii")
    frame = data.get("frame") or {}
    note = frame.get("note") or frame_note(frame.get("epoch"))
    fills = {"TITLE": html.escape(sanitize(heading), quote=True),
             "FRAME": html.escape(sanitize(note), quote=True), "CSP": f"sha256-{digest}",
             "LEGEND": _legend(), "DATA": json_for_script(data), "SCRIPT": SCRIPT}
    # one pass over the template: what is filled in (a title, a label) is never scanned for
    # placeholders again
    return _SLOTS.sub(lambda m: fills[m[1]], PAGE)


def _legend() -> str:
    def swatch(status: ObjectStatus, confidence: float, name: str, dashed: bool = False) -> str:
        rgb = hex_rgb(status_rgb(status, confidence))
        border = ";border-style:dashed" if dashed else ""
        return f'<span><i style="background:{rgb}{border}"></i>{name}</span>'

    return "".join([
        swatch(ObjectStatus.CONFIRMED, 1.0, "confident"),
        swatch(ObjectStatus.CONFIRMED, 0.5, "fading"),
        swatch(ObjectStatus.TENTATIVE, 1.0, "tentative (pale)", dashed=True),
        swatch(ObjectStatus.TENTATIVE, 0.2, "almost gone", dashed=True),
        swatch(ObjectStatus.DOUBTED, 1.0, "doubted"),
        swatch(ObjectStatus.LOST, 0.0, "lost", dashed=True),
        '<span><i class="robot-swatch"></i>the robot: its path, and where it is then</span>',
        '<span><i class="sight-swatch"></i>where the robot was when it last saw the object '
        "you picked</span>",
        "<span>hover or click an object for details; arrows show moves</span>",
    ])


def write_map(memory: Readable, path: str | os.PathLike[str], *,
              title: str | None = None) -> MapReport:
    """Write the map of ``memory`` (an :class:`ObjectMemory` or an ``as_of`` view) to ``path``
    (``.html``/``.htm``; replaced if it exists, written whole or not at all).

    Raises :class:`InvalidInput` for a bad path and :class:`NotFound` for a scope with
    nothing recorded.
    """
    memory = reader_of(memory)
    out = check_output_path(path, MAP_SUFFIXES, "map")
    if title is not None and not isinstance(title, str):
        raise InvalidInput(f"title must be a string, got {type(title).__name__}")
    check_scope_has_story(memory)
    data = map_data(memory)
    page = render_map_html(data, title).encode("utf-8")
    write_atomically(out, page)
    return MapReport(out, len(page), len(data["frames"]), len(data["rooms"]),
                     len(data["objects"]))


def check_output_path(path: Any, suffixes: tuple[str, ...], what: str) -> Path:
    """A file path with one of ``suffixes`` in an existing directory, not a directory."""
    if not isinstance(path, (str, os.PathLike)) or not str(path):
        raise InvalidInput(f"{what} path must be a file path, got {path!r}")
    out = Path(path)
    if out.suffix.lower() not in suffixes:
        raise InvalidInput(f"{what} path must end in {' or '.join(suffixes)}, got {str(out)!r}")
    if out.is_dir():
        raise InvalidInput(f"{what} path {str(out)!r} is a directory")
    if not out.parent.is_dir():
        raise InvalidInput(f"no directory {str(out.parent)!r} to write the {what} in")
    return out


def write_atomically(path: Path, data: bytes) -> None:
    """Write ``data`` to ``path`` through a temporary file in the same directory and a rename:
    a reader never sees half a file, and a failure leaves no file behind. The file gets the
    mode a new file gets under the umask."""
    tmp = new_file(path.parent, f".{path.name}.", ".tmp")
    try:
        with open(tmp, "wb") as f:
            f.write(data)
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
