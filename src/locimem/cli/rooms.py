"""Rooms from the command line: ``locimem rooms list|define|connect|remove|load``.

Rooms are floor polygons in the map frame (metres); objects belong to the room holding most
of their footprint. Each change is recorded like its Python counterpart (``define_room``,
``connect_rooms``, ``remove_room``, ``import_rooms``: a scene commit with ``--actor`` and
``--reason``), so ``locimem events`` and the map's time slider show it. ``define`` and
``load`` create the store (and the scope) when they are new, so a floor plan can go in before
the first scan.
"""

from __future__ import annotations

import argparse
import json
import re
from typing import Any

from locimem.cli.common import add_store, add_who, document, resolve_scope, scopes_if_any
from locimem.cli.text import format_event
from locimem.errors import InvalidInput
from locimem.language.hedge import sanitize
from locimem.scene.rooms import polygon_area

Sub = Any

MAX_ROOMS_FILE_BYTES = 16 * 1024 * 1024  # a floor plan, not a dataset

_NUMBER = r"[-+]?(?:\d+\.?\d*|\.\d+)(?:[eE][-+]?\d+)?"
_PAIR = re.compile(rf"^\s*({_NUMBER})\s*,\s*({_NUMBER})\s*$")

ROOMS_FILE_HELP = ('a JSON file: {"rooms": [{"name": "kitchen", "polygon": [[0, 0], [4, 0], '
                   '[4, 3], [0, 3]], "z_range": [0, 2.6]}, ...], "connections": [["kitchen", '
                   '"hall"], ...]} (z_range and connections optional)')


def parser_rooms(sub: Sub) -> None:
    p = sub.add_parser("rooms", help="list, define, link or remove rooms (floor polygons), or "
                       "load a floor plan from a file",
                       description="Rooms are floor polygons (x,y vertices in metres, map "
                       "frame); an object belongs to the room holding most of its footprint. "
                       "Every change is recorded (locimem events, audit) and shown on the map.")
    actions = p.add_subparsers(dest="action", metavar="ACTION", required=True)

    a = add_store(actions.add_parser("list", help="the rooms, their size, links and objects"))
    a.set_defaults(func=cmd_list)

    a = actions.add_parser("define", help="define a room by its floor polygon",
                           epilog="example: locimem rooms define home.loci kitchen 0,0 4,0 "
                                  "4,3 0,3 --z 0,2.6")
    _store_to_write(a)
    a.add_argument("name", metavar="NAME", help="the room's name (e.g. kitchen)")
    a.add_argument("vertices", metavar="X,Y", nargs="+",
                   help="the floor polygon's corners in order, metres (at least three)")
    a.add_argument("--z", metavar="Z0,Z1", help="the room's height range (floor to ceiling)")
    add_who(a)
    a.set_defaults(func=cmd_define)

    a = actions.add_parser("connect", help="link two rooms (a door or an opening), for paths")
    _store_to_write(a, new_ok=False)
    a.add_argument("a", metavar="ROOM", help="one room")
    a.add_argument("b", metavar="OTHER", help="the other room")
    add_who(a)
    a.set_defaults(func=cmd_connect)

    a = actions.add_parser("remove", help="remove a room and its links (e.g. to define it "
                           "again; an earlier --as-of still shows it)")
    _store_to_write(a, new_ok=False)
    a.add_argument("name", metavar="NAME", help="the room to remove")
    add_who(a)
    a.set_defaults(func=cmd_remove)

    a = actions.add_parser("load", help="define rooms and links from a floor-plan file, in "
                           "one commit (all or nothing)", epilog=ROOMS_FILE_HELP)
    _store_to_write(a)
    a.add_argument("file", metavar="FILE.json", help="the floor plan")
    add_who(a)
    a.set_defaults(func=cmd_load)


def _store_to_write(p: argparse.ArgumentParser, *, new_ok: bool = True) -> None:
    add_store(p, scope="the scope to change" + (" (created if new)" if new_ok else ""))
    p.set_defaults(new_ok=new_ok)


def _open(args: argparse.Namespace, write: bool) -> Any:
    from locimem.memory import ObjectMemory

    new_ok = write and args.new_ok
    scopes = scopes_if_any(args.store) if new_ok else None
    args.scope = resolve_scope(args.store, args.scope, new_ok=new_ok, scopes=scopes)
    return ObjectMemory.open(args.store, scope=args.scope, read_only=not write,
                             config=getattr(args, "tracker_config", None), warm=False)


def parse_pair(text: str, what: str) -> tuple[float, float]:
    """``"1.5,-2"`` as ``(1.5, -2.0)``; InvalidInput naming ``what`` otherwise.

    >>> parse_pair("1.5, -2", "vertex")
    (1.5, -2.0)
    """
    m = _PAIR.match(text) if text.isascii() else None
    if m is None:
        raise InvalidInput(f"{what} must be two numbers separated by a comma (like 4,2.5), "
                           f"got {text!r}")
    return float(m.group(1)), float(m.group(2))


def _rooms_doc(mem: Any) -> list[dict[str, Any]]:
    counts: dict[str, int] = {}
    for o in mem.objects():
        room = mem.room_of(o.id)
        if room is not None:
            counts[room] = counts.get(room, 0) + 1
    return [{"name": r.name, "polygon": [list(p) for p in r.polygon],
             "z_range": None if r.z_range is None else list(r.z_range),
             "area_m2": round(abs(polygon_area(r.polygon)), 3), "connected": list(r.connected),
             "objects": counts.get(r.name, 0)} for r in mem.rooms()]


def _room_lines(rooms: list[dict[str, Any]]) -> list[str]:
    if not rooms:
        return ["no rooms defined (locimem rooms define STORE NAME X,Y X,Y X,Y ...)"]
    lines = []
    for r in rooms:
        xs = [p[0] for p in r["polygon"]]
        ys = [p[1] for p in r["polygon"]]
        z = "" if r["z_range"] is None else f", z {r['z_range'][0]:g}..{r['z_range'][1]:g} m"
        links = ", ".join(sanitize(n) for n in r["connected"]) or "none"
        lines.append(f"{sanitize(r['name']):<16} {r['area_m2']:7.2f} m2  x {min(xs):g}..{max(xs):g}"
                     f", y {min(ys):g}..{max(ys):g}{z}; {r['objects']} objects; "
                     f"linked to: {links}")
    return lines


def _changed(args: argparse.Namespace, mem: Any, events: list[Any]) -> int:
    rooms = _rooms_doc(mem)
    doc = {"scope": args.scope, "actor": args.actor, "reason": args.reason,
           "events": [{"seq": e.seq, "commit": e.commit, "t": e.t, "kind": e.kind.value,
                       "data": e.data} for e in events], "rooms": rooms}
    document(args, doc, [*(format_event(e) for e in events), "", *_room_lines(rooms)])
    return 0


def cmd_list(args: argparse.Namespace) -> int:
    with _open(args, write=False) as mem:
        rooms = _rooms_doc(mem)
        document(args, {"scope": args.scope, "rooms": rooms}, _room_lines(rooms))
    return 0


def cmd_define(args: argparse.Namespace) -> int:
    polygon = [parse_pair(v, "each vertex") for v in args.vertices]
    z = None if args.z is None else parse_pair(args.z, "--z")
    with _open(args, write=True) as mem:
        ev = mem.define_room(args.name, polygon, z, actor=args.actor, reason=args.reason)
        return _changed(args, mem, [ev])


def cmd_connect(args: argparse.Namespace) -> int:
    with _open(args, write=True) as mem:
        ev = mem.connect_rooms(args.a, args.b, actor=args.actor, reason=args.reason)
        return _changed(args, mem, [ev])


def cmd_remove(args: argparse.Namespace) -> int:
    with _open(args, write=True) as mem:
        ev = mem.remove_room(args.name, actor=args.actor, reason=args.reason)
        return _changed(args, mem, [ev])


def cmd_load(args: argparse.Namespace) -> int:
    data = _read_rooms_file(args.file)
    with _open(args, write=True) as mem:
        events = mem.import_rooms(data, actor=args.actor,
                                  reason=args.reason or f"floor plan from {args.file}")
        return _changed(args, mem, events)


def _read_rooms_file(name: str) -> Any:
    from locimem.files import read_regular

    data = read_regular(name, "rooms file", MAX_ROOMS_FILE_BYTES,
                        "expected a floor plan in JSON")
    try:
        return json.loads(data.decode("utf-8"))
    except (UnicodeDecodeError, ValueError, RecursionError) as exc:
        raise InvalidInput(f"rooms file {name!r} is not JSON ({exc}); expected "
                           f"{ROOMS_FILE_HELP}") from None


PARSERS = (parser_rooms,)
