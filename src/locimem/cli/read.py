"""Commands that read a store: inspect, events, history, recall, query, find, near, audit,
deltas."""

from __future__ import annotations

import argparse
from typing import Any

from locimem.cli.common import (
    add_since,
    add_store,
    document,
    object_doc,
    object_line,
    open_memory,
    place,
    resolve_scope,
    room_of,
    rounded,
    since_time,
    store_scopes,
    stream_line,
    time_text,
)
from locimem.cli.text import audit_doc, audit_lines, event_doc, format_event
from locimem.language.hedge import sanitize
from locimem.memory import reader_of
from locimem.model import EventKind, ObjectStatus
from locimem.query.reader import COMMIT_KINDS
from locimem.times import time_doc

Sub = Any  # argparse's sub-parser action
HIDDEN_KINDS = ("KEYFRAME",)  # events hides these unless asked (--kind / --all-kinds)


# -- inspect ---------------------------------------------------------------------------------
def parser_inspect(sub: Sub) -> None:
    p = add_store(sub.add_parser("inspect", help="summarise a store: scopes, record counts, "
                                 "objects by status"), scope="only this scope (default: all)")
    p.set_defaults(func=cmd_inspect)


def cmd_inspect(args: argparse.Namespace) -> int:
    from locimem.memory import ObjectMemory

    scopes = store_scopes(args.store)
    if args.scope is not None:
        scopes = [resolve_scope(args.store, args.scope, scopes=scopes)]
    report: dict[str, Any] = {"store": args.store, "scopes": {}}
    for scope in scopes:
        with ObjectMemory.open(args.store, scope=scope, read_only=True) as m:
            report["store"] = reader_of(m).store.path
            by_status = {s.value: 0 for s in ObjectStatus}
            for obj in m.objects():
                by_status[obj.status.value] += 1
            by_status[ObjectStatus.FORGOTTEN.value] = len(m.tombstones())
            report["scopes"][scope] = {
                "latest_scan_t": m.now,
                "commits": reader_of(m).store.count("commits", scope),
                "observations": reader_of(m).store.count("observations", scope),
                "rejected": len(m.rejected()),
                "events": reader_of(m).store.count("events", scope),
                "objects": by_status,
                "prior_map": len(m.prior_map()),
                "deltas": {s: len(m.deltas(status=s))
                           for s in ("pending", "confirmed", "rejected", "applied")},
                "published": [object_doc(m, o) for o in m.tracked()],
            }
    document(args, report, _inspect_lines(report))
    return 0


def _inspect_lines(report: dict[str, Any]) -> list[str]:
    lines = [f"store {report['store']}"]
    if not report["scopes"]:
        lines.append("  (empty: no scans yet)")
    for scope, r in report["scopes"].items():
        objs = ", ".join(f"{k} {v}" for k, v in r["objects"].items())
        lines.append(f"scope {scope!r}: latest scan {time_text(r['latest_scan_t'])}, "
                     f"{r['commits']} commits, {r['observations']} observations "
                     f"({r['rejected']} rejected), {r['events']} events")
        lines.append(f"  objects: {objs}")
        if r["prior_map"] or any(r["deltas"].values()):
            deltas = ", ".join(f"{k} {v}" for k, v in r["deltas"].items())
            lines.append(f"  prior map: {r['prior_map']} entries; deltas: {deltas}")
        lines += [f"  published {object_line(o)}" for o in r["published"]]
    return lines


# -- events, history, audit: streams ---------------------------------------------------------
def parser_events(sub: Sub) -> None:
    p = add_store(sub.add_parser("events", help="list lifecycle events, oldest first "
                                 f"({', '.join(HIDDEN_KINDS)} hidden unless asked for)"),
                  json_help="print JSON Lines, one event per line")
    kinds = [k.value for k in EventKind]
    p.add_argument("--kind", action="append", type=str.upper, choices=kinds,
                   help="only this kind (repeatable)")
    p.add_argument("--exclude-kind", action="append", type=str.upper, choices=kinds,
                   default=[], metavar="KIND", help="leave this kind out (repeatable)")
    p.add_argument("--all-kinds", action="store_true",
                   help=f"also show {', '.join(HIDDEN_KINDS)} events")
    p.add_argument("--label", help="only events of objects voted this label")
    add_since(p, "events")
    p.add_argument("--object", type=int, help="only this object id")
    p.add_argument("--limit", type=int, help="at most this many")
    p.set_defaults(func=cmd_events)


def event_kinds(args: argparse.Namespace) -> list[str]:
    """The kinds ``events`` shows: --kind's, else all but the hidden and excluded ones."""
    hidden = set(args.exclude_kind) | (set() if args.kind or args.all_kinds
                                       else set(HIDDEN_KINDS))
    wanted = args.kind or [k.value for k in EventKind]
    return [k for k in wanted if k not in hidden]


def cmd_events(args: argparse.Namespace) -> int:
    kinds = event_kinds(args)
    shown = 0
    with open_memory(args) as mem:  # streamed: printed page by page as the store yields them
        events = mem.iter_events(kind=kinds, label=args.label, since=since_time(mem, args),
                                 object_id=args.object, limit=args.limit) if kinds else ()
        for ev in events:
            shown += 1
            print(stream_line(event_doc(ev)) if args.json
                  else f"{time_text(ev.t):>24}  {format_event(ev)}")
    if not shown and not args.json:
        print("no events match")
    return 0


def parser_history(sub: Sub) -> None:
    p = add_store(sub.add_parser("history", help="one object's evidence and events, "
                                 "oldest first (with the identities merged into it)"),
                  json_help="print JSON Lines, one record per line")
    p.add_argument("object", metavar="ID", type=int, help="the object id")
    p.add_argument("--events-only", action="store_true", help="leave out the observations")
    p.set_defaults(func=cmd_history)


def cmd_history(args: argparse.Namespace) -> int:
    from locimem.model import Event

    with open_memory(args) as mem:  # streamed, like events
        for r in mem.iter_history(args.object):
            if not args.events_only or isinstance(r, Event):
                print(_history_line(args, r))
    return 0


def _history_line(args: argparse.Namespace, r: Any) -> str:
    from locimem.model import Event

    if isinstance(r, Event):
        doc = {"record": "event", **event_doc(r)}
        line = format_event(r)
    else:
        doc = {"record": "observation", "seq": r.seq, "commit": r.commit, "t": r.t,
               "object_id": r.object_id, "label": r.label,
               "confidence": round(r.confidence, 4), "center": rounded(list(r.center)),
               "size": rounded(list(r.size)), "tier": r.tier, "weight": round(r.weight, 4)}
        line = (f"{'seen':<13} #{r.object_id} {sanitize(r.label)} at {place(r.center)} "
                f"(confidence {r.confidence:.2f}, {r.tier}, weight {r.weight:.2f})")
    return stream_line(doc) if args.json else f"{time_text(r.t):>24}  {line}"


def parser_audit(sub: Sub) -> None:
    p = add_store(sub.add_parser("audit", help="who changed what, when and why: scans that "
                                 "changed something, corrections, forgetting, maintenance"),
                  json_help="print JSON Lines, one entry per line (numbers rounded)")
    add_since(p, "entries")
    p.add_argument("--actor", help="only entries by this actor")
    p.add_argument("--object", type=int, help="only entries touching this object id")
    p.add_argument("--kind", choices=list(COMMIT_KINDS), help="only this kind of commit")
    p.add_argument("--limit", type=int, help="at most this many")
    p.set_defaults(func=cmd_audit)


def cmd_audit(args: argparse.Namespace) -> int:
    shown = 0
    with open_memory(args) as mem:  # streamed, like events
        for e in mem.iter_audit(since=since_time(mem, args), actor=args.actor,
                                object_id=args.object, kind=args.kind, limit=args.limit):
            shown += 1
            print(stream_line(audit_doc(e)) if args.json else "\n".join(audit_lines(e)))
    if not shown and not args.json:
        print("no audit entries match")
    return 0


# -- questions -------------------------------------------------------------------------------
def parser_recall(sub: Sub) -> None:
    p = add_store(sub.add_parser("recall", help="say what the memory knows about a named "
                                 "thing (exit status 1 if nothing by that name is remembered)"))
    p.add_argument("name", metavar="NAME", help="what to recall, e.g. cup")
    p.set_defaults(func=cmd_recall)


def cmd_recall(args: argparse.Namespace) -> int:
    with open_memory(args) as mem:
        r = mem.recall(args.name)
        room = None if r.object_id is None else room_of(mem, r.object_id)
        best = None if r.object_id is None else object_doc(mem, mem.get(r.object_id))
        # in words with what it rests on and its room (recall's own text gives coordinates)
        description = None if r.object_id is None else mem.describe(r.object_id)
        others = [object_doc(mem, mem.get(oid)) for oid in r.others]
    doc = {"query": r.query, "found": r.found, "text": r.text, "description": description,
           "object_id": r.object_id,
           "label": r.label, "status": None if r.status is None else r.status.value,
           "center": None if r.center is None else rounded(list(r.center)),
           "room": room, "last_seen": r.last_seen,
           "confidence": None if r.confidence is None else round(r.confidence, 3),
           "lost_at": r.lost_at, "object": best, "others": others}
    lines = [r.text if description is None else description]
    if others:
        lines.append(f"Also called that ({len(others)}):")
        lines += [f"  {object_line(o)}" for o in others]
    document(args, doc, lines)
    return 0 if r.found else 1


def parser_describe(sub: Sub) -> None:
    p = add_store(sub.add_parser("describe", help="one object in words (what it is on or in, "
                                 "its room, when last seen), its record and its relations"))
    p.add_argument("object", metavar="ID", type=int, help="the object id")
    p.set_defaults(func=cmd_describe)


def cmd_describe(args: argparse.Namespace) -> int:
    with open_memory(args) as mem:
        text = mem.describe(args.object)
        obj = object_doc(mem, mem.get(args.object))
        relations: list[dict[str, Any]] = [
            {"subject": r.subject, "relation": r.relation, "object": r.object,
             "confidence": round(r.confidence, 3), "since": r.since}
            for r in mem.relations(args.object)]
        labels = {oid: mem.get(oid).label for r in relations for oid in (r["subject"],
                                                                       r["object"])}
    lines = [text, f"  {object_line(obj)}"]
    lines += [f"  #{r['subject']} {sanitize(labels[r['subject']])} {r['relation']} "
              f"#{r['object']} {sanitize(labels[r['object']])} "
              f"(confidence {r['confidence']:.2f}, since {time_text(r['since'])})"
              for r in relations]
    document(args, {"text": text, "object": obj, "last_seen": time_doc(obj["last_seen"]),
                    "relations": relations}, lines)
    return 0


def parser_query(sub: Sub) -> None:
    p = add_store(sub.add_parser("query", help="answer a short question: \"what's on the "
                                 "kitchen table\", \"where is my phone\", \"what is the book "
                                 "on\", \"what changed since 10:00\" (exit 1 if nothing "
                                 "answers it)"))
    p.add_argument("text", metavar="TEXT", help="the question")
    p.add_argument("--here", type=float, nargs=3, metavar=("X", "Y", "Z"),
                   help="where the asker is, for 'near me' questions (metres, map frame)")
    p.set_defaults(func=cmd_query)


def cmd_query(args: argparse.Namespace) -> int:
    here = None if args.here is None else tuple(args.here)
    with open_memory(args) as mem:
        r = mem.query(args.text, here=here)
        objects = [object_doc(mem, o) for o in r.objects]
        anchor = None if r.anchor is None else object_doc(mem, r.anchor)
    doc = {"kind": r.intent.kind.value, "text": r.text, "found": r.found,
           "objects": objects, "anchor": anchor,
           "path": list(r.path) if r.path is not None else None}
    document(args, doc, [r.text])
    return 0 if r.found else 1


def parser_find(sub: Sub) -> None:
    p = add_store(sub.add_parser("find", help="find objects by description: whole-word labels, "
                                 "synonyms, categories (exit 1 if nothing matches)"))
    p.add_argument("text", metavar="TEXT", help="what to look for, e.g. 'something to drink from'")
    p.add_argument("--top", type=int, default=10, help="at most this many (default 10)")
    p.add_argument("--semantic", action="store_true",
                   help="also match by meaning with a text encoder: the --config file's "
                        "[encoder], else the offline MiniLM (text extra)")
    p.set_defaults(func=cmd_find)


def cmd_find(args: argparse.Namespace) -> int:
    encoder: Any = None
    if args.semantic:
        from locimem.language.encoder import encoder_from_toml

        encoder = (encoder_from_toml(args.config) if args.config else None) or "minilm"
    with open_memory(args, encoder=encoder) as mem:
        hits = [object_doc(mem, h.object, score=round(h.score, 3), how=h.how)
                for h in mem.find(args.text, args.top)]
    lines = [object_line(h, f"  score {h['score']:.2f} ({h['how']})") for h in hits]
    document(args, {"query": args.text, "objects": hits}, lines or ["nothing found"])
    return 0 if hits else 1


def parser_near(sub: Sub) -> None:
    p = add_store(sub.add_parser("near", help="objects within a radius of a point, nearest "
                                 "first"))
    p.add_argument("x", type=float, help="x (metres, map frame)")
    p.add_argument("y", type=float, help="y")
    p.add_argument("z", type=float, help="z")
    p.add_argument("--radius", type=float, default=1.0, help="metres (default 1)")
    p.add_argument("--label", help="only objects with this label (whole words)")
    p.set_defaults(func=cmd_near)


def cmd_near(args: argparse.Namespace) -> int:
    point = (args.x, args.y, args.z)
    with open_memory(args) as mem:
        found = [object_doc(mem, o, distance_m=round(o.distance_to(point), 4))
                 for o in mem.near(point, args.radius, label=args.label)]
    lines = [object_line(o, f"  {o['distance_m']:.2f} m away") for o in found]
    document(args, {"point": list(point), "radius_m": args.radius, "objects": found},
             lines or [f"nothing within {args.radius:g} m"])
    return 0


def parser_deltas(sub: Sub) -> None:
    p = add_store(sub.add_parser("deltas", help="where live evidence disagrees with the prior "
                                 "map: moved, removed, added, reshaped objects and their "
                                 "status"))
    p.add_argument("--status", choices=["pending", "confirmed", "rejected", "applied"],
                   help="only deltas with this status")
    p.set_defaults(func=cmd_deltas)


def cmd_deltas(args: argparse.Namespace) -> int:
    with open_memory(args) as mem:
        deltas = mem.deltas(status=args.status)
    lines = []
    for d in deltas:
        live = f" (seen as #{d['live']})" if "live" in d else ""
        where = ""
        if d["observed"] is not None:
            where = f" at {place(d['observed']['center'])}"
        lines.append(f"delta {d['id']:>4}  {d['status']:<9} {d['kind']:<8} #{d['object']} "
                     f"{sanitize(d['label'])}{live}{where}; evidence {d['evidence']['n']}")
    if not deltas:
        lines.append("no deltas" + (f" with status {args.status}" if args.status else ""))
    document(args, {"deltas": rounded(deltas)}, lines)
    return 0


PARSERS = (parser_inspect, parser_events, parser_history, parser_recall, parser_describe,
           parser_query,
           parser_find, parser_near, parser_audit, parser_deltas)
