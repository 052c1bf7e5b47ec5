"""Corrections from the command line: relabel, move, forget, set, merge, split — and
consolidate. Each is recorded like its Python counterpart (a commit with ``--actor`` and
``--reason``, shown by ``locimem audit``) and undone by a later correction."""

from __future__ import annotations

import argparse
import json
from typing import Any

from locimem.cli.common import (
    add_store,
    add_who,
    document,
    object_doc,
    object_line,
    open_memory,
)
from locimem.errors import InvalidInput
from locimem.language.hedge import sanitize

Sub = Any


def _correction(sub: Sub, name: str, help_: str) -> argparse.ArgumentParser:
    p = add_store(sub.add_parser(name, help=help_, description=help_),
                  scope="the scope to correct")
    p.add_argument("object", metavar="ID", type=int, help="the object id")
    add_who(p)
    p.add_argument("--t", type=float, metavar="S",
                   help="the valid time of the correction (default: the latest scan's)")
    return p


def _done(args: argparse.Namespace, mem: Any, event: Any, text: str,
          ids: tuple[int, ...]) -> int:
    objects = [object_doc(mem, mem.get(i)) for i in ids if _exists(mem, i)]
    doc = {"event": {"seq": event.seq, "commit": event.commit, "t": event.t,
                     "kind": event.kind.value, "object_id": event.object_id,
                     "data": event.data},
           "actor": args.actor, "reason": args.reason, "objects": objects}
    document(args, doc, [text, *(f"  {object_line(o)}" for o in objects)])
    return 0


def _exists(mem: Any, oid: int) -> bool:
    from locimem.errors import NotFound

    try:
        mem.get(oid)
    except NotFound:
        return False
    return True


def parser_relabel(sub: Sub) -> None:
    p = _correction(sub, "relabel", "correct an object's label (the detector's votes are "
                    "kept; the person's label is pinned)")
    p.add_argument("label", metavar="LABEL", help="the right label")
    p.set_defaults(func=cmd_relabel)


def cmd_relabel(args: argparse.Namespace) -> int:
    with open_memory(args, write=True) as mem:
        ev = mem.relabel(args.object, args.label, actor=args.actor, reason=args.reason, t=args.t)
        return _done(args, mem, ev, f"relabelled #{args.object}: {sanitize(ev.data['from'])!r} "
                                    f"-> {sanitize(ev.data['to'])!r}", (args.object,))


def parser_move(sub: Sub) -> None:
    p = _correction(sub, "move", "correct where an object is (its sightings stay in its "
                    "history)")
    p.add_argument("x", type=float, help="x (metres, map frame)")
    p.add_argument("y", type=float, help="y")
    p.add_argument("z", type=float, help="z")
    p.set_defaults(func=cmd_move)


def cmd_move(args: argparse.Namespace) -> int:
    with open_memory(args, write=True) as mem:
        ev = mem.move(args.object, (args.x, args.y, args.z), actor=args.actor,
                      reason=args.reason, t=args.t)
        return _done(args, mem, ev, f"moved #{args.object} by {ev.data['distance_m']:.2f} m",
                     (args.object,))


def parser_forget(sub: Sub) -> None:
    p = _correction(sub, "forget", "remove an object from every read path (a tombstone "
                    "keeps it out if seen again)")
    p.set_defaults(func=cmd_forget)


def cmd_forget(args: argparse.Namespace) -> int:
    with open_memory(args, write=True) as mem:
        ev = mem.forget(args.object, actor=args.actor, reason=args.reason, t=args.t)
        return _done(args, mem, ev, f"forgot #{args.object} {sanitize(ev.label)}", ())


def parser_set(sub: Sub) -> None:
    p = _correction(sub, "set", "set or remove an object's attributes: "
                    "locimem set STORE ID color=red mobile=true --remove fragile")
    p.add_argument("values", metavar="KEY=VALUE", nargs="*",
                   help="an attribute to set; the value is read as JSON when it is JSON "
                        "(true, 3, 0.5), else as text")
    p.add_argument("--remove", action="append", default=[], metavar="KEY",
                   help="an attribute to remove (repeatable)")
    p.set_defaults(func=cmd_set)


def _attribute(item: str) -> tuple[str, Any]:
    key, sep, raw = item.partition("=")
    if not sep or not key:
        raise InvalidInput(f"attributes are KEY=VALUE, got {item!r}")
    try:
        value = json.loads(raw)
    except ValueError:
        value = raw
    return key, value


def cmd_set(args: argparse.Namespace) -> int:
    values = dict(_attribute(item) for item in args.values)
    with open_memory(args, write=True) as mem:
        ev = mem.set_attributes(args.object, values, remove=args.remove, actor=args.actor,
                                reason=args.reason, t=args.t)
        return _done(args, mem, ev, f"set attributes of #{args.object}", (args.object,))


def parser_merge(sub: Sub) -> None:
    p = _correction(sub, "merge", "say two identities are one thing: OTHER is merged into "
                    "ID, which keeps its id and both histories (undo: split)")
    p.add_argument("other", metavar="OTHER", type=int, help="the id merged into ID")
    p.set_defaults(func=cmd_merge)


def cmd_merge(args: argparse.Namespace) -> int:
    with open_memory(args, write=True) as mem:
        ev = mem.merge(args.object, args.other, actor=args.actor, reason=args.reason, t=args.t)
        return _done(args, mem, ev, f"merged #{args.other} into #{args.object}",
                     (args.object,))


def parser_split(sub: Sub) -> None:
    p = _correction(sub, "split", "say an identity is two things: the other one, at X Y Z, "
                    "becomes a new published object (undo: merge)")
    p.add_argument("x", type=float, help="where the other one is: x (metres, map frame)")
    p.add_argument("y", type=float, help="y")
    p.add_argument("z", type=float, help="z")
    p.add_argument("--label", help="the other one's label (default: the object's)")
    p.add_argument("--size", type=float, nargs=3, metavar=("SX", "SY", "SZ"),
                   help="the other one's size, metres (default: the object's)")
    p.set_defaults(func=cmd_split)


def cmd_split(args: argparse.Namespace) -> int:
    with open_memory(args, write=True) as mem:
        ev = mem.split(args.object, (args.x, args.y, args.z), label=args.label, size=args.size,
                       actor=args.actor, reason=args.reason, t=args.t)
        new = ev.data["into"]
        return _done(args, mem, ev, f"split #{args.object}: the other one is #{new}",
                     (args.object, new))


def parser_consolidate(sub: Sub) -> None:
    p = add_store(sub.add_parser("consolidate", help="apply every confirmed delta to the "
                                 "prior map (recorded, with who did it)"), scope="the scope")
    add_who(p)
    p.set_defaults(func=cmd_consolidate)


def cmd_consolidate(args: argparse.Namespace) -> int:
    with open_memory(args, write=True) as mem:
        applied = mem.consolidate(actor=args.actor, reason=args.reason)
    lines = [f"applied delta {d['id']}: {d['kind']} #{d['object']} {sanitize(d['label'])}"
             for d in applied]
    document(args, {"applied": applied},
             lines or ["no confirmed deltas: nothing to apply"])
    return 0


PARSERS = (parser_relabel, parser_move, parser_forget, parser_set, parser_merge, parser_split,
           parser_consolidate)
