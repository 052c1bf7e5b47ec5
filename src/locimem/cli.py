"""The ``locimem`` command line. Every command has ``--help``."""

from __future__ import annotations

import argparse
import json
import sqlite3
import subprocess
import sys
import tempfile
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from locimem.errors import IntegrityError, InvalidInput, LocimemError
from locimem.memory import ObjectMemory
from locimem.model import Event, EventKind, ObjectStatus
from locimem.query.hedge import sanitize
from locimem.query.reader import COMMIT_KINDS

EPILOG = """examples:
  locimem demo                       play the kitchen timeline against a real store file
  locimem inspect home.loci          what a store holds, per scope
  locimem events home.loci --kind MOVED --since 60
  locimem recall home.loci cup       what the memory knows about the cup
  locimem query home.loci "what's on the kitchen table"
  locimem find home.loci "something to drink from"
  locimem near home.loci 1.0 2.0 0.9 --radius 0.5
  locimem audit home.loci --actor alice
  locimem compact home.loci --dry-run
  locimem bench                      ingest and open-time figures
  locimem bench qa                   question answering on simulated homes, per kind
  locimem bench interchange          export/import time and size, 10k objects, 1M observations
  locimem bench bag                  scans/s from a ROS 2 bag beside the Python API
  locimem bench crowd                one box reported 200..10,000 times in one scan
  locimem bench load                 1 writer + 4 readers for 60 s: torn states, p99 latencies
  locimem bench fleet                1-8 writers on PostgreSQL (--url) beside SQLite
  locimem mcp home.loci              serve the memory to a language model over MCP (stdio)
  locimem export home.loci home-map/  a readable, checksummed directory (home.usda: USD)
  locimem export home.loci scene.cypher  the scene graph for Neo4j: cypher-shell < scene.cypher
  locimem import home-map/ copy.loci  back into a store, bit for bit (--prior: as a prior map)
  locimem ingest run.mcap home.loci  a ROS 2 recording (or a .jsonl scan file) into a store
  locimem deltas robot.loci          where live evidence disagrees with the prior map
  locimem consolidate robot.loci     apply confirmed deltas to the prior map
  locimem validate home.loci         check every consistency rule (a store or a directory)
  locimem snapshot home.loci         a compressed, checksummed copy, taken online
  locimem restore home-2026....loci-snapshot restored.loci
  locimem map home.loci -o map.html  a browser map with a time slider (one self-contained file)
  locimem rerun home.loci -o memory.rrd   the story on a time line for Rerun (rerun extra)
"""


def _place(c: Sequence[float]) -> str:
    return f"({c[0]:.2f}, {c[1]:.2f}, {c[2]:.2f})"


def format_event(ev: Event) -> str:
    """One readable line for an event."""
    d = ev.data
    head = f"{ev.kind.value:<13} #{ev.object_id} {sanitize(ev.label)}"
    if ev.kind is EventKind.RELATION:
        verb = "now" if d["added"] else "no longer"
        return f"{head} {verb} {d['relation']} #{d['object']} {sanitize(d['object_label'])}"
    if ev.kind is EventKind.ROOM_DEFINED:
        return f"{ev.kind.value:<13} {sanitize(d['name'])}"
    if ev.kind is EventKind.ROOMS_CONNECTED:
        return f"{ev.kind.value:<13} {sanitize(d['a'])} <-> {sanitize(d['b'])}"
    if ev.kind is EventKind.APPEARED:
        return f"{head} at {_place(d['center'])}"
    if ev.kind is EventKind.PROMOTED:
        if "n_detections" not in d:  # a prior-map entry is published as it is loaded
            return f"{head} from the prior map: now published"
        return f"{head} after {d['n_detections']} detections: now published"
    if ev.kind is EventKind.PRIOR:
        if d.get("removed"):
            return f"{head}: removed from the prior map"
        return f"{head}: prior map entry at {_place(d['entry']['center'])}"
    if ev.kind is EventKind.DELTA:
        return (f"{head}: {d['kind']} vs the prior map, {d['status']} (delta {d['id']}, "
                f"evidence {d['evidence']['n']})")
    if ev.kind is EventKind.KEYFRAME:
        frame = d["kept"][-1]
        archived = "" if d.get("archived") is None else \
            f", replacing the frame of t={d['archived']['t']:.1f} s (archived)"
        return (f"{head}: frame of t={frame['t']:.1f} s kept as evidence (score "
                f"{frame['score']:.2f}){archived}")
    if ev.kind is EventKind.LABEL_CHANGED:
        return f"{head}: vote moved from {sanitize(d['from'])!r} to {sanitize(d['to'])!r}"
    if ev.kind is EventKind.MOVED:
        return f"{head} {_place(d['from'])} -> {_place(d['to'])} ({d['distance_m']:.2f} m)"
    if ev.kind is EventKind.LOST:
        return f"{head}: unseen since t={d['last_seen']:.1f} s (confidence {d['confidence']:.2f})"
    if ev.kind is EventKind.REACQUIRED:
        return f"{head}: seen again after {d['gap_s']:.1f} s"
    return f"{head} {json.dumps(d, sort_keys=True)}"


# -- commands ----------------------------------------------------------------------------------
def cmd_demo(args: argparse.Namespace) -> int:
    from locimem.sim.kitchen import RECALL_T, RESTART_T, kitchen_timeline

    tmp = None
    if args.store:
        path = Path(args.store)
        if path.exists():
            print(f"error: {path} exists; the demo writes a fresh store (pick a new path)",
                  file=sys.stderr)
            return 2
    else:
        tmp = tempfile.mkdtemp(prefix="locimem-demo-")
        path = Path(tmp) / "kitchen.loci"
    out = sys.stdout
    out.write(f"locimem demo: the kitchen timeline, written to {path}\n\n")
    checkpoints = {14.0, 20.0, 24.0}
    with ObjectMemory.open(path, scope="kitchen") as mem:
        for scan in kitchen_timeline():
            result = mem.observe(scan.t, scan.detections)
            lines = [format_event(e) for e in result.events]
            if scan.t in checkpoints:
                for obj in mem.objects():
                    lines.append(f"belief #{obj.id} {obj.label}: confidence "
                                 f"{obj.confidence:.2f} ({obj.status.value})")
            if scan.t == 31.0:
                obj = mem.objects()[0]
                votes = ", ".join(f"{k} {v:.1f}" for k, v in obj.label_votes.items())
                lines.append(f"votes #{obj.id}: {votes}: still a {obj.label!r}, same id")
            if scan.note or lines:
                head = f"  t={scan.t:6.1f} s  "
                if scan.note:
                    out.write(f"{head}{scan.note}\n")
                    head = " " * len(head)
                for line in lines:
                    out.write(f"{head}{line}\n")
                    head = " " * len(head)
            if scan.t == 60.0:
                old = [o.id for o in mem.objects() if o.distance_to((0.4, 0.1, 0.9)) < 0.3]
                out.write(f"              objects within 0.3 m of the old place: {old or 'none'}\n")
        published = [f"#{o.id} {o.label}" for o in mem.tracked()]
        out.write(f"\n  t={RESTART_T:6.1f} s  the process stops (published: "
                  f"{published or 'nothing'}; {len(mem.objects())} object(s) remembered)\n")
    out.write(f"  t={RECALL_T:6.1f} s  a new process opens the store and is asked: "
              "recall('cup')\n")
    out.flush()
    proc = subprocess.run(
        [sys.executable, "-m", "locimem", "recall", str(path), "cup", "--scope", "kitchen"],
        capture_output=True, text=True, check=False,
    )
    for line in proc.stdout.splitlines():
        out.write(f"              {line}\n")
    if proc.returncode != 0:
        sys.stderr.write(proc.stderr)
        return proc.returncode
    if tmp is not None and not args.keep:
        import shutil

        shutil.rmtree(tmp, ignore_errors=True)
        out.write("\n(store removed; pass --keep or --store PATH to keep it)\n")
    else:
        out.write(f"\nstore kept at {path}: try `locimem inspect {path}`\n")
    return 0


def cmd_inspect(args: argparse.Namespace) -> int:
    with ObjectMemory.open(args.store, scope=args.scope or "default", read_only=True) as mem:
        store = mem.store
        scopes = [args.scope] if args.scope else store.scopes()
        report: dict[str, Any] = {"store": store.path, "scopes": {}}
        for scope in scopes:
            with ObjectMemory.open(args.store, scope=scope, read_only=True) as m:
                by_status = {s.value: 0 for s in ObjectStatus}
                for obj in m.objects():
                    by_status[obj.status.value] += 1
                by_status[ObjectStatus.FORGOTTEN.value] = len(m.tombstones())
                n_obs = m.store.count("observations", scope)
                n_rej = len(m.rejected())
                report["scopes"][scope] = {
                    "latest_scan_t": m.now,
                    "commits": m.store.count("commits", scope),
                    "observations": n_obs,
                    "rejected": n_rej,
                    "events": m.store.count("events", scope),
                    "objects": by_status,
                    "prior_map": len(m.prior_map()),
                    "deltas": {s: len(m.deltas(status=s))
                               for s in ("pending", "confirmed", "rejected", "applied")},
                    "published": [
                        {"id": o.id, "label": o.label, "center": [round(x, 3) for x in o.center],
                         "confidence": round(o.confidence, 3)}
                        for o in m.tracked()
                    ],
                }
    if args.json:
        print(json.dumps(report, indent=2))
        return 0
    print(f"store {report['store']}")
    if not report["scopes"]:
        print("  (empty: no scans yet)")
    for scope, r in report["scopes"].items():
        objs = ", ".join(f"{k} {v}" for k, v in r["objects"].items())
        print(f"scope {scope!r}: latest scan t={r['latest_scan_t']}, {r['commits']} commits, "
              f"{r['observations']} observations ({r['rejected']} rejected), "
              f"{r['events']} events")
        print(f"  objects: {objs}")
        if r["prior_map"] or any(r["deltas"].values()):
            deltas = ", ".join(f"{k} {v}" for k, v in r["deltas"].items())
            print(f"  prior map: {r['prior_map']} entries; deltas: {deltas}")
        for o in r["published"]:
            print(f"  published #{o['id']} {o['label']} at {_place(o['center'])} "
                  f"confidence {o['confidence']:.2f}")
    return 0


def cmd_events(args: argparse.Namespace) -> int:
    with ObjectMemory.open(args.store, scope=args.scope or "default", read_only=True) as mem:
        events = mem.events(kind=args.kind, label=args.label, since=args.since,
                            object_id=args.object, limit=args.limit)
    if args.json:
        for ev in events:
            print(json.dumps({"seq": ev.seq, "t": ev.t, "kind": ev.kind.value,
                              "object_id": ev.object_id, "label": ev.label, "data": ev.data},
                             sort_keys=True))
        return 0
    for ev in events:
        print(f"t={ev.t:9.2f} s  {format_event(ev)}")
    if not events:
        print("no events match")
    return 0


def cmd_recall(args: argparse.Namespace) -> int:
    with ObjectMemory.open(args.store, scope=args.scope or "default", read_only=True) as mem:
        r = mem.recall(args.name)
    if args.json:
        print(json.dumps({
            "query": r.query, "found": r.found, "text": r.text, "object_id": r.object_id,
            "label": r.label, "status": None if r.status is None else r.status.value,
            "center": r.center, "last_seen": r.last_seen, "confidence": r.confidence,
            "lost_at": r.lost_at, "others": list(r.others),
        }, indent=2))
    else:
        print(r.text)
    return 0 if r.found else 1


def cmd_bench(args: argparse.Namespace) -> int:
    if args.suite == "queries":
        from locimem.bench.queries import run_query_suite

        sizes = [int(s) for s in args.objects.split(",")] if args.objects != "1000,10000" \
            else [1_000, 10_000, 100_000]
        run_query_suite(sys.stdout, sizes)
        return 0
    if args.suite == "quality":
        from locimem.bench.quality import run_quality_suite, run_seed_sweep

        if args.seeds > 1:
            run_seed_sweep(sys.stdout, args.seeds)
        else:
            run_quality_suite(sys.stdout)
        return 0
    if args.suite == "qa":
        from locimem.bench.qa import run_qa_suite

        run_qa_suite(sys.stdout)
        return 0
    if args.suite == "interchange":
        from locimem.bench.interchange import run as run_interchange

        run_interchange(args.interchange_objects, args.interchange_observations,
                        progress=_progress(args))
        return 0
    if args.suite == "crowd":
        from locimem.bench.crowd import run_crowd_suite

        run_crowd_suite(sys.stdout)
        return 0
    if args.suite == "load":
        from locimem.bench.load import run_load_suite

        f = run_load_suite(sys.stdout, seconds=args.seconds, readers=args.readers)
        return 0 if f.torn == 0 and not f.errors else 1
    if args.suite == "fleet":
        from locimem.bench.fleet import run_fleet_suite

        run_fleet_suite(sys.stdout, args.url, seconds=args.fleet_seconds)
        return 0
    if args.suite == "retention":
        from locimem.bench.retention import run_retention_suite

        run_retention_suite(sys.stdout, minutes=args.minutes)
        return 0
    from locimem.bench.bag import run_bag_suite

    if args.suite == "bag":
        run_bag_suite(sys.stdout, args.scans)
        return 0
    from locimem.bench import run_ingest_suite

    sizes = [int(s) for s in args.objects.split(",")]
    run_ingest_suite(sizes, args.scans, args.open_observations, sys.stdout)
    run_bag_suite(sys.stdout, args.scans)  # the same scans from a ROS 2 bag, if rosbags is in
    return 0


def _object_line(o: Any, extra: str = "") -> str:
    return (f"#{o.id:<5} {sanitize(o.label):<24} {_place(o.center)}  {o.status.value:<9} "
            f"confidence {o.confidence:.2f}{extra}")


def cmd_query(args: argparse.Namespace) -> int:
    here = None if args.here is None else tuple(args.here)
    with ObjectMemory.open(args.store, scope=args.scope or "default", read_only=True) as mem:
        r = mem.query(args.text, here=here)
    if args.json:
        print(json.dumps({"kind": r.intent.kind.value, "text": r.text, "found": r.found,
                          "objects": [o.id for o in r.objects],
                          "path": list(r.path) if r.path is not None else None}, indent=2))
    else:
        print(r.text)
    return 0 if r.found else 1


def cmd_find(args: argparse.Namespace) -> int:
    with ObjectMemory.open(args.store, scope=args.scope or "default", read_only=True,
                           encoder="minilm" if args.semantic else None) as mem:
        hits = mem.find(args.text, args.top)
    if args.json:
        print(json.dumps([{"id": h.object.id, "label": h.object.label, "score": h.score,
                           "how": h.how} for h in hits], indent=2))
        return 0 if hits else 1
    for h in hits:
        print(_object_line(h.object, f"  score {h.score:.2f} ({h.how})"))
    if not hits:
        print("nothing found")
    return 0 if hits else 1


def cmd_near(args: argparse.Namespace) -> int:
    with ObjectMemory.open(args.store, scope=args.scope or "default", read_only=True) as mem:
        point = (args.x, args.y, args.z)
        found = mem.near(point, args.radius, label=args.label)
    if args.json:
        print(json.dumps([{"id": o.id, "label": o.label, "center": list(o.center),
                           "distance_m": o.distance_to(point)} for o in found], indent=2))
        return 0
    for o in found:
        print(_object_line(o, f"  {o.distance_to(point):.2f} m away"))
    if not found:
        print(f"nothing within {args.radius:g} m")
    return 0


def cmd_compact(args: argparse.Namespace) -> int:
    with ObjectMemory.open(args.store, scope=args.scope or "default",
                           read_only=args.dry_run) as mem:
        before = mem.store.count("observations", mem.scope)
        r = mem.compact(older_than_s=args.older_than, trail_s=args.trail, dry_run=args.dry_run,
                        actor=args.actor, reason=args.reason)
    if r.horizon_commit is None or r.examined == 0:
        print(f"nothing to compact: no observations older than {args.older_than:g} s "
              "that a previous compaction has not already thinned")
        return 0
    verb = "would remove" if r.dry_run else "removed"
    print(f"{'dry run: ' if r.dry_run else ''}examined {r.examined:,} observations up to "
          f"t={r.horizon_t:.1f} s (commit {r.horizon_commit}); {verb} {r.removed:,}, "
          f"kept {r.kept:,}; the log {'has' if r.dry_run else 'had'} {before:,} observations")
    return 0


def cmd_audit(args: argparse.Namespace) -> int:
    with ObjectMemory.open(args.store, scope=args.scope or "default", read_only=True) as mem:
        entries = mem.audit(since=args.since, actor=args.actor, object_id=args.object,
                            kind=args.kind, limit=args.limit)
    for e in entries:
        if args.json:
            print(json.dumps({"commit": e.commit, "kind": e.kind, "actor": e.actor,
                              "reason": e.reason, "t": e.t, "recorded_at": e.recorded_at,
                              "events": [{"kind": ev.kind.value, "object_id": ev.object_id,
                                          "data": ev.data} for ev in e.events]},
                             sort_keys=True))
            continue
        why = f" ({e.reason})" if e.reason else ""
        print(f"t={e.t:9.2f} s  {e.kind:<11} by {e.actor}{why}")
        for ev in e.events:
            print(f"              {format_event(ev)}")
    if not entries and not args.json:
        print("no audit entries match")
    return 0


def cmd_mcp(args: argparse.Namespace) -> int:
    from locimem.agent.mcp_server import serve_stdio

    if not Path(args.store).is_file():
        print(f"error: no store at {args.store}", file=sys.stderr)
        return 2
    serve_stdio(args.store, scope=args.scope or "default", allow_writes=args.allow_writes)
    return 0


# -- interchange -----------------------------------------------------------------------------
_USD_SUFFIXES = (".usda", ".usdc", ".usd")
PRIOR_STATUSES = ("confirmed", "doubted")  # what an exported memory offers as a prior map


def cmd_export(args: argparse.Namespace) -> int:
    scope = args.scope or "default"
    if args.target.lower().endswith(_USD_SUFFIXES):
        from locimem.interchange.usd import export_usd

        with ObjectMemory.open(args.store, scope=scope, read_only=True) as mem:
            r = export_usd(mem, args.target, include_tentative=args.include_tentative)
        print(f"wrote {r.path}: {r.n_rooms} rooms, {r.n_objects} objects (USD, Z up, metres)")
        return 0
    if args.target.lower().endswith((".cypher", ".graphml")):
        return _export_graph(args, scope)
    from locimem.interchange.export import export_memory

    r = export_memory(args.store, args.target, scope=scope, scene=args.scene,
                      progress=_progress(args), hmac_key=_hmac_key(args))
    print(f"wrote {r.directory}: {r.files} files, {r.bytes:,} bytes ({_row_counts(r.counts)}) in "
          f"{r.seconds:.1f} s; manifest.json lists each file's SHA-256"
          f"{' and is signed (HMAC-SHA256)' if r.signed else ''}")
    return 0


def _export_graph(args: argparse.Namespace, scope: str) -> int:
    """The scene graph as a Cypher script (.cypher) or GraphML (.graphml)."""
    with ObjectMemory.open(args.store, scope=scope, read_only=True) as mem:
        if args.target.lower().endswith(".cypher"):
            from locimem.interchange.cypher import export_cypher

            c = export_cypher(mem, args.target, dialect=args.dialect,
                              include_tentative=args.include_tentative)
            print(f"wrote {c.path}: {c.n_rooms} rooms, {c.n_objects} objects, "
                  f"{c.n_relationships} relationships in {c.n_statements} statements "
                  f"(Cypher, {c.dialect}; idempotent)")
            return 0
        from locimem.interchange.graph import export_graphml

        g = export_graphml(mem, args.target, include_tentative=args.include_tentative)
    print(f"wrote {g.path}: {g.n_nodes} nodes, {g.n_edges} edges (GraphML)")
    return 0


def _hmac_key(args: argparse.Namespace) -> bytes | None:
    """The bytes of ``--hmac-key-file`` (the whole file is the key), or None."""
    if args.hmac_key_file is None:
        return None
    try:
        return Path(args.hmac_key_file).read_bytes()
    except OSError as exc:
        raise InvalidInput(f"cannot read the HMAC key file {args.hmac_key_file!r}: "
                           f"{exc.strerror}") from None


def _prior_entries(data: dict[str, Any], directory: str) -> list[dict[str, Any]]:
    """The prior-map entries of a memory.json's objects (confirmed and doubted ones)."""
    try:
        return [{k: o[k] for k in ("label", "center", "size", "orientation", "attributes")
                 if o.get(k) is not None} | {"id": o["id"]} for o in data["objects"]
                if o["status"] in PRIOR_STATUSES]
    except (KeyError, TypeError, AttributeError) as exc:
        raise IntegrityError(f"memory.json of {directory!r} has an object that is not one "
                             f"(missing or wrong {exc}); export the memory again") from None


def cmd_import(args: argparse.Namespace) -> int:
    if args.prior:
        from locimem.interchange.directory import read_memory

        manifest, data = read_memory(args.directory, hmac_key=_hmac_key(args))  # verified first
        entries = _prior_entries(data, args.directory)
        scene = args.scene or manifest.scene or manifest.scope
        with ObjectMemory.open(args.store, scope=args.scope or "default") as mem:
            ids = mem.load_prior(entries, scene=scene, actor=args.actor,
                                 reason=f"prior map from {args.directory}")
        print(f"loaded {len(ids)} objects as the prior map {scene!r} "
              f"(ids {ids[0]}..{ids[-1]})" if ids else "the directory holds no objects")
        return 0
    from locimem.interchange.load import import_memory

    r = import_memory(args.directory, args.store, scope=args.scope, progress=_progress(args),
                      hmac_key=_hmac_key(args))
    print(f"{'created' if r.created else 'imported into'} {r.store}, scope {r.scope!r}: "
          f"{_row_counts(r.counts)} "
          f"(every checksum verified) in {r.seconds:.1f} s")
    if r.migrated_from is not None:
        print(f"the store was migrated from schema version {r.migrated_from} first; backup: "
              f"{r.backup_path}")
    return 0


def cmd_validate(args: argparse.Namespace) -> int:
    from locimem.interchange.validate import validate

    report = validate(args.target, hmac_key=_hmac_key(args))
    if args.json:
        print(json.dumps(report.to_dict(), sort_keys=True, indent=2))
    else:
        print(report)
    return 0 if report.ok else 1


def cmd_snapshot(args: argparse.Namespace) -> int:
    from locimem.interchange.snapshot import snapshot

    info = snapshot(args.store, args.out, progress=_progress(args))
    print(f"wrote {info.path}: {info.compressed_size:,} bytes ({info.compression}) of a "
          f"{info.size:,}-byte store, schema {info.schema_version}, sha256 {info.sha256[:16]}…")
    return 0


def cmd_restore(args: argparse.Namespace) -> int:
    from locimem.interchange.snapshot import restore

    info = restore(args.archive, args.store, force=args.force)
    print(f"restored {args.store} from {info.path} (sha256 verified, schema "
          f"{info.schema_version})")
    return 0


def cmd_deltas(args: argparse.Namespace) -> int:
    with ObjectMemory.open(args.store, scope=args.scope or "default", read_only=True) as mem:
        deltas = mem.deltas(status=args.status)
    for d in deltas:
        if args.json:
            print(json.dumps(d, sort_keys=True))
            continue
        live = f" (seen as #{d['live']})" if "live" in d else ""
        where = ""
        if d["observed"] is not None:
            where = f" at {_place(d['observed']['center'])}"
        print(f"delta {d['id']:>4}  {d['status']:<9} {d['kind']:<8} #{d['object']} "
              f"{sanitize(d['label'])}{live}{where}; evidence {d['evidence']['n']}")
    if not deltas and not args.json:
        print("no deltas" + (f" with status {args.status}" if args.status else ""))
    return 0


def cmd_consolidate(args: argparse.Namespace) -> int:
    with ObjectMemory.open(args.store, scope=args.scope or "default") as mem:
        applied = mem.consolidate(actor=args.actor, reason=args.reason)
    for d in applied:
        print(f"applied delta {d['id']}: {d['kind']} #{d['object']} {sanitize(d['label'])}")
    if not applied:
        print("no confirmed deltas: nothing to apply")
    return 0


def cmd_map(args: argparse.Namespace) -> int:
    from locimem.viz.map import write_map

    with ObjectMemory.open(args.store, scope=args.scope or "default", read_only=True) as mem:
        r = write_map(mem, args.out, title=args.title)
    print(f"wrote {r.path}: {r.n_frames} frames, {r.n_rooms} rooms, {r.n_objects} objects "
          f"({r.n_bytes:,} bytes, self-contained); open it in a browser")
    return 0


def cmd_rerun(args: argparse.Namespace) -> int:
    from locimem.viz.rerun import write_rerun

    with ObjectMemory.open(args.store, scope=args.scope or "default", read_only=True) as mem:
        r = write_rerun(mem, args.out)
    print(f"wrote {r.path}: {r.n_frames} frames on the scan_time timeline, {r.n_objects} "
          f"objects, {r.n_rooms} rooms ({r.n_bytes:,} bytes); view it with: rerun {r.path}")
    return 0


def _row_counts(counts: dict[str, int]) -> str:
    return ", ".join(f"{counts.get(k, 0):,} {k}"
                     for k in ("commits", "observations", "events", "objects"))


def _progress(args: argparse.Namespace) -> Any:
    from locimem.progress import progress

    return None if getattr(args, "quiet", False) else progress


def cmd_ingest(args: argparse.Namespace) -> int:
    import io

    from locimem.errors import InvalidInput
    from locimem.ingest import ingest, source_kind

    kind = source_kind(args.source)
    options = None
    bag_only = {"detections": "/detections", "map_frame": "map", "camera_info": "auto",
                "depth": "auto", "camera_frame": None, "optical": "auto", "range": 8.0,
                "depth_tolerance": 0.02, "label_map": None}
    used = [f"--{k.replace('_', '-')}" for k, v in bag_only.items() if getattr(args, k) != v]
    if kind == "jsonl" and used:
        raise InvalidInput(f"{', '.join(used)}: options for ROS 2 bags, not JSON lines")
    if kind == "bag":
        from locimem.ingest.ros import BagOptions, load_label_map

        def topic(value: str) -> str | None:
            return None if value == "none" else value

        options = BagOptions(
            detections_topic=args.detections, map_frame=args.map_frame,
            camera_info_topic=topic(args.camera_info), depth_topic=topic(args.depth),
            camera_frame=args.camera_frame,
            optical={"auto": None, "yes": True, "no": False}[args.optical],
            range_m=args.range, depth_tolerance_s=args.depth_tolerance,
            label_map=None if args.label_map is None else load_label_map(args.label_map))
    summary = ingest(args.source, args.store, scope=args.scope, source_name=args.source_name,
                     bag_options=options, durable=not args.fast,
                     progress=io.StringIO() if args.quiet or args.json else None)
    if args.json:
        print(json.dumps(summary.to_dict(), indent=2))
    else:
        print("\n".join(summary.lines()))
    return 0


# -- parser ------------------------------------------------------------------------------------
def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="locimem",
        description="A persistent object memory for robots: stable identities, voted labels, "
                    "decaying belief, and an append-only record that survives restarts.",
        epilog=EPILOG,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    from locimem import __version__

    parser.add_argument("--version", action="version", version=f"locimem {__version__}")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND", required=True)

    p = sub.add_parser("demo", help="play the kitchen timeline (see, occlude, move, remove, "
                       "restart, recall) against a real store file")
    p.add_argument("--store", help="write the demo store here (a new path) instead of a "
                   "temporary directory")
    p.add_argument("--keep", action="store_true", help="keep the temporary store afterwards")
    p.set_defaults(func=cmd_demo)

    def store_command(name: str, help_: str) -> argparse.ArgumentParser:
        q = sub.add_parser(name, help=help_)
        q.add_argument("store", metavar="STORE", help="path of a locimem store file")
        q.add_argument("--scope", help="the scope to read (default: 'default'; inspect: all)")
        q.add_argument("--json", action="store_true", help="print JSON instead of text")
        return q

    p = store_command("inspect", "summarise a store: scopes, record counts, objects by status")
    p.set_defaults(func=cmd_inspect)

    p = store_command("events", "list lifecycle events, oldest first")
    p.add_argument("--kind", action="append", type=str.upper,
                   choices=[k.value for k in EventKind], help="only this kind (repeatable)")
    p.add_argument("--label", help="only events of objects voted this label")
    p.add_argument("--since", type=float, help="only events at or after this time (s)")
    p.add_argument("--object", type=int, help="only this object id")
    p.add_argument("--limit", type=int, help="at most this many")
    p.set_defaults(func=cmd_events)

    p = store_command("recall", "say what the memory knows about a named thing "
                      "(exit status 1 if nothing by that name is remembered)")
    p.add_argument("name", metavar="NAME", help="what to recall, e.g. cup")
    p.set_defaults(func=cmd_recall)

    p = store_command("query", "answer a short question: \"what's on the kitchen table\", "
                      "\"where is my phone\", \"what changed since 10:00\" (exit 1 if nothing "
                      "answers it)")
    p.add_argument("text", metavar="TEXT", help="the question")
    p.add_argument("--here", type=float, nargs=3, metavar=("X", "Y", "Z"),
                   help="where the asker is, for 'near me' questions (metres, map frame)")
    p.set_defaults(func=cmd_query)

    p = store_command("find", "find objects by description: whole-word labels, synonyms, "
                      "categories (exit 1 if nothing matches)")
    p.add_argument("text", metavar="TEXT", help="what to look for, e.g. 'something to drink from'")
    p.add_argument("--top", type=int, default=10, help="at most this many (default 10)")
    p.add_argument("--semantic", action="store_true",
                   help="also match by meaning with the offline MiniLM encoder (text extra)")
    p.set_defaults(func=cmd_find)

    p = store_command("near", "objects within a radius of a point, nearest first")
    p.add_argument("x", type=float, help="x (metres, map frame)")
    p.add_argument("y", type=float, help="y")
    p.add_argument("z", type=float, help="z")
    p.add_argument("--radius", type=float, default=1.0, help="metres (default 1)")
    p.add_argument("--label", help="only objects with this label (whole words)")
    p.set_defaults(func=cmd_near)

    p = store_command("audit", "who changed what, when and why: scans that changed something, "
                      "corrections, forgetting, maintenance")
    p.add_argument("--since", type=float, help="only entries at or after this valid time (s)")
    p.add_argument("--actor", help="only entries by this actor")
    p.add_argument("--object", type=int, help="only entries touching this object id")
    p.add_argument("--kind", choices=list(COMMIT_KINDS), help="only this kind of commit")
    p.add_argument("--limit", type=int, help="at most this many")
    p.set_defaults(func=cmd_audit)

    p = sub.add_parser("mcp", help="serve the memory to a language model over MCP (stdio): "
                       "the agent tools and a scene resource; read-only unless "
                       "--allow-writes (needs the mcp extra)")
    p.add_argument("store", metavar="STORE", help="path of a locimem store file")
    p.add_argument("--scope", help="the scope to serve (default: 'default')")
    p.add_argument("--allow-writes", action="store_true",
                   help="also offer the write tools (correct a label, forget); opens the "
                        "store for writing (its single-writer lock)")
    p.set_defaults(func=cmd_mcp)

    p = sub.add_parser("compact", help="bound the observation log: thin old observations to "
                       "first, last, every change and a trail (events and audit kept whole)")
    p.add_argument("store", metavar="STORE", help="path of a locimem store file")
    p.add_argument("--scope", help="the scope to compact (default: 'default')")
    p.add_argument("--older-than", type=float, default=600.0, metavar="S",
                   help="thin only observations older than S seconds before the latest scan "
                        "(default 600)")
    p.add_argument("--trail", type=float, default=10.0, metavar="S",
                   help="keep one sighting per object per S seconds (default 10)")
    p.add_argument("--dry-run", action="store_true", help="report what would go; write nothing")
    p.add_argument("--actor", default="maintenance", help="who is compacting (for the audit)")
    p.add_argument("--reason", help="why (for the audit)")
    p.set_defaults(func=cmd_compact)

    p = sub.add_parser("export", help="write a scope as a directory a person can read and "
                       "diff (manifest with SHA-256 per file, memory.json, logs as JSON lines, "
                       "embeddings as .npy), or as USD when TARGET ends in .usda/.usdc/.usd, "
                       "or the scene graph as an idempotent Cypher script (.cypher) or GraphML "
                       "(.graphml)")
    p.add_argument("store", metavar="STORE", help="path of a locimem store file")
    p.add_argument("target", metavar="TARGET", help="a new directory, or a .usda/.usdc/.usd, "
                   ".cypher or .graphml file")
    p.add_argument("--scope", help="the scope to export (default: 'default')")
    p.add_argument("--scene", help="a scene name for the manifest (default: the scope)")
    p.add_argument("--include-tentative", action="store_true",
                   help="USD, Cypher, GraphML: also export objects not yet confirmed")
    p.add_argument("--dialect", choices=("neo4j", "kuzu"), default="neo4j",
                   help="Cypher: neo4j (cypher-shell < FILE.cypher; default) or kuzu (adds "
                   "Kuzu's tables, structs for points)")
    p.add_argument("--hmac-key-file", metavar="FILE",
                   help="sign the manifest with HMAC-SHA256, keyed by this file's bytes (at "
                        "least 16); import then needs the same key")
    p.add_argument("--quiet", action="store_true", help="no progress bar")
    p.set_defaults(func=cmd_export)

    p = sub.add_parser("import", help="load an exported directory into a store (checksums "
                       "verified first; nothing is written if any check fails), or with "
                       "--prior as the store's prior (long-term) map")
    p.add_argument("directory", metavar="DIR", help="a directory written by locimem export")
    p.add_argument("store", metavar="STORE", help="the store to import into (created if new)")
    p.add_argument("--scope", help="import under this scope name (default: the directory's; "
                   "--prior: 'default')")
    p.add_argument("--prior", action="store_true",
                   help="load the directory's objects as the prior map that live evidence is "
                        "compared with (see locimem deltas)")
    p.add_argument("--scene", help="--prior: the prior map's name (default: the directory's)")
    p.add_argument("--actor", default="operator", help="--prior: who loads it (for the audit)")
    p.add_argument("--hmac-key-file", metavar="FILE",
                   help="the key a signed export was made with (this file's bytes); a signed "
                        "directory is refused without it, an unsigned one with it")
    p.add_argument("--quiet", action="store_true", help="no progress bar")
    p.set_defaults(func=cmd_import)

    p = sub.add_parser("validate", help="check every consistency rule of a store or an "
                       "exported directory; exit 1 if any is violated")
    p.add_argument("target", metavar="STORE|DIR", help="a store file or an exported directory")
    p.add_argument("--json", action="store_true", help="print JSON instead of text")
    p.add_argument("--hmac-key-file", metavar="FILE",
                   help="DIR: also check the signature of a signed export with this key")
    p.set_defaults(func=cmd_validate)

    p = sub.add_parser("snapshot", help="write a compressed, checksummed copy of a store, "
                       "consistent even while a robot keeps writing to it")
    p.add_argument("store", metavar="STORE", help="path of a locimem store file")
    p.add_argument("--out", help="the archive path (default: STORE-<UTC time>.loci-snapshot "
                   "beside the store)")
    p.add_argument("--quiet", action="store_true", help="no progress bar")
    p.set_defaults(func=cmd_snapshot)

    p = sub.add_parser("restore", help="bring a snapshot back as a store (its checksum is "
                       "verified before anything is written)")
    p.add_argument("archive", metavar="ARCHIVE", help="a file written by locimem snapshot")
    p.add_argument("store", metavar="STORE", help="where to restore the store")
    p.add_argument("--force", action="store_true", help="replace an existing store")
    p.set_defaults(func=cmd_restore)

    p = store_command("deltas", "where live evidence disagrees with the prior map: moved, "
                      "removed, added, reshaped objects and their status")
    p.add_argument("--status", choices=["pending", "confirmed", "rejected", "applied"],
                   help="only deltas with this status")
    p.set_defaults(func=cmd_deltas)

    p = sub.add_parser("consolidate", help="apply every confirmed delta to the prior map "
                       "(recorded, with who did it)")
    p.add_argument("store", metavar="STORE", help="path of a locimem store file")
    p.add_argument("--scope", help="the scope (default: 'default')")
    p.add_argument("--actor", default="operator", help="who is consolidating (for the audit)")
    p.add_argument("--reason", help="why (for the audit)")
    p.set_defaults(func=cmd_consolidate)

    text = ("write a browser map of a scope: one self-contained HTML file (no network "
            "needed) with rooms, furniture and items seen from above, their labels, status "
            "and confidence, hover details, and a time slider over the event log")
    p = sub.add_parser("map", help=text, description=text)
    p.add_argument("store", metavar="STORE", help="path of a locimem store file")
    p.add_argument("-o", "--out", required=True, metavar="FILE.html",
                   help="the HTML file to write (replaced if it exists); open "
                        "FILE.html#t=SECONDS to start at a time")
    p.add_argument("--scope", help="the scope to draw (default: 'default')")
    p.add_argument("--title", help="the page title (default: 'locimem map: SCOPE')")
    p.set_defaults(func=cmd_map)

    text = ("write a scope's story as a Rerun recording (.rrd): boxes with labels and "
            "confidence colours, status changes, moves as arrows, rooms as floor outlines, "
            "on the scan_time timeline (needs the rerun extra)")
    p = sub.add_parser("rerun", help=text, description=text)
    p.add_argument("store", metavar="STORE", help="path of a locimem store file")
    p.add_argument("-o", "--out", required=True, metavar="FILE.rrd",
                   help="the .rrd file to write (replaced if it exists); view it with "
                        "`rerun FILE.rrd`")
    p.add_argument("--scope", help="the scope to draw (default: 'default')")
    p.set_defaults(func=cmd_rerun)

    p = sub.add_parser("ingest", help="feed a recording into a store: a ROS 2 bag (rosbag2 "
                       "directory, .db3 or .mcap; the ros extra) or a JSON-lines scan file; "
                       "re-running resumes where the store left off",
                       description="Each scan is committed atomically; a re-run skips the "
                       "scans the store already holds (exactly once). Bags: "
                       "vision_msgs/Detection3DArray detections, /tf and /tf_static into the "
                       "map frame, the camera from CameraInfo (+ optional depth image). A scan "
                       "whose transform is missing is skipped and reported, never guessed.")
    p.add_argument("source", metavar="SOURCE", help="a rosbag2 directory, a .db3 or .mcap "
                   "file, or a .jsonl file (one scan per line; see the README)")
    p.add_argument("store", metavar="STORE", help="the store to ingest into (created if new)")
    p.add_argument("--scope", default="default", help="whose memory (default: 'default')")
    p.add_argument("--source", dest="source_name", metavar="NAME",
                   help="the scans' source, for the audit and resuming (default: "
                   "ros:<detections topic>, or jsonl)")
    p.add_argument("--detections", default="/detections", metavar="TOPIC",
                   help="bag: the vision_msgs/msg/Detection3DArray topic (default /detections)")
    p.add_argument("--map-frame", default="map", metavar="FRAME",
                   help="bag: the tf frame the memory lives in (default map)")
    p.add_argument("--camera-info", default="auto", metavar="TOPIC|auto|none",
                   help="bag: the sensor_msgs/msg/CameraInfo topic (default auto: the only "
                   "one; none: scans without a camera)")
    p.add_argument("--depth", default="auto", metavar="TOPIC|auto|none",
                   help="bag: the depth sensor_msgs/msg/Image topic, 16UC1 mm or 32FC1 m, "
                   "registered to the camera (default auto: the only Image topic named "
                   "*depth*; none: no depth)")
    p.add_argument("--camera-frame", metavar="FRAME",
                   help="bag: the camera's tf frame (default: the camera info's frame_id)")
    p.add_argument("--optical", choices=["auto", "yes", "no"], default="auto",
                   help="bag: the camera frame is an optical frame, z forward, x right, y down "
                   "(default auto: yes when its name ends in _optical_frame)")
    p.add_argument("--range", type=float, default=8.0, metavar="M",
                   help="bag: how far the detector is trusted to see, metres (default 8)")
    p.add_argument("--depth-tolerance", type=float, default=0.02, metavar="S",
                   help="bag: largest stamp difference between a scan and its depth image, "
                   "seconds (default 0.02); a scan without one is skipped")
    p.add_argument("--label-map", metavar="FILE",
                   help="bag: class ids to labels: a .json object, or one label per line "
                   "(line n = class id n, from 0)")
    p.add_argument("--fast", action="store_true",
                   help="do not fsync every scan (a machine crash may lose the last scans; "
                   "a re-run re-ingests them)")
    p.add_argument("--json", action="store_true", help="print the summary as JSON")
    p.add_argument("--quiet", action="store_true", help="no progress bar")
    p.set_defaults(func=cmd_ingest)

    p = sub.add_parser("bench", help="benchmarks: ingest (default: 1k and 10k objects, 30 "
                       "detections a scan, beside the raw SQLite append floor, and open time) "
                       "or retention (log bytes per object-hour with and without compaction) "
                       "or quality (simulated days with ground truth, beside a naive baseline) "
                       "or queries (query latency at 1k, 10k and 100k objects) "
                       "or qa (questions answered through the agent tools, graded per kind) "
                       "or interchange (export and import time and size) "
                       "or bag (scans/s from a ROS 2 bag vs the Python API; also run by ingest) "
                       "or crowd (one box reported 200 to 10,000 times in one scan) "
                       "or load (1 writer and 4 readers on one file: torn states, p99s) "
                       "or fleet (1-8 writer processes on PostgreSQL beside SQLite)")
    p.add_argument("suite", nargs="?", default="ingest",
                   choices=["ingest", "retention", "quality", "queries", "qa", "interchange",
                            "bag", "crowd", "load", "fleet"],
                   help="which benchmark (default: ingest)")
    p.add_argument("--minutes", type=float, default=10.0,
                   help="retention: minutes of 30 Hz stream to simulate (default 10)")
    p.add_argument("--objects", default="1000,10000",
                   help="comma-separated store sizes (default: 1000,10000)")
    p.add_argument("--scans", type=int, default=300, help="measured scans per size (300)")
    p.add_argument("--open-observations", type=int, default=1_000_000,
                   help="observations in the open-time store (default 1000000; 0 skips it)")
    p.add_argument("--interchange-objects", type=int, default=10_000, metavar="N",
                   help="interchange: objects in the exported store (default 10000)")
    p.add_argument("--interchange-observations", type=int, default=1_000_000, metavar="N",
                   help="interchange: observations in the exported store (default 1000000)")
    p.add_argument("--seeds", type=int, default=1, metavar="N",
                   help="quality: play each scenario with N seeds and print the worst seed's "
                        "figures (default 1: the full tables for the default seeds)")
    p.add_argument("--seconds", type=float, default=60.0,
                   help="load: how long the writer and readers run (default 60)")
    p.add_argument("--readers", type=int, default=4,
                   help="load: reader processes (default 4)")
    p.add_argument("--url", help="fleet: a PostgreSQL server (default $LOCIMEM_POSTGRES)")
    p.add_argument("--fleet-seconds", type=float, default=5.0,
                   help="fleet: measured seconds per row (default 5)")
    p.add_argument("--quiet", action="store_true", help="no progress bar")
    p.set_defaults(func=cmd_bench)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    try:
        return int(args.func(args))
    except LocimemError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    except sqlite3.DatabaseError as exc:  # damage the open check could not see
        store = getattr(args, "store", None) or "STORE"
        print(f"error: the store is damaged ({exc}); run `locimem validate {store}` to see "
              "where", file=sys.stderr)
        return 2
    except BrokenPipeError:  # e.g. `locimem events STORE | head`
        return 0


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
