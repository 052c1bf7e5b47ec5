"""Commands that run something: the demo, the benchmarks, the MCP server."""

from __future__ import annotations

import argparse
import contextlib
import io
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any, TextIO

from locimem.cli.common import add_json, add_quiet, add_scope, document, fail, resolve_scope
from locimem.cli.text import format_event

Sub = Any


# -- demo --------------------------------------------------------------------------------------
def parser_demo(sub: Sub) -> None:
    p = sub.add_parser("demo", help="play the kitchen timeline (see, occlude, move, remove, "
                       "restart, recall) against a real store file")
    p.add_argument("--store", help="write the demo store here (a new path) instead of a "
                   "temporary directory")
    p.add_argument("--keep", action="store_true", help="keep the temporary store afterwards")
    add_json(p, "print JSON: the store, the story's lines and the recall at the end")
    p.set_defaults(func=cmd_demo)


def cmd_demo(args: argparse.Namespace) -> int:
    tmp = None
    if args.store:
        path = Path(args.store)
        if path.exists():
            return fail(f"{path} exists; the demo writes a fresh store (pick a new path)")
    else:
        tmp = tempfile.mkdtemp(prefix="locimem-demo-")
        path = Path(tmp) / "kitchen.loci"
    out = io.StringIO() if args.json else sys.stdout
    code, recall = _demo(path, out)
    kept = tmp is None or args.keep
    if tmp is not None and not args.keep:
        import shutil

        shutil.rmtree(tmp, ignore_errors=True)
        out.write("\n(store removed; pass --keep or --store PATH to keep it)\n")
    else:
        out.write(f"\nstore kept at {path}: try `locimem inspect {path}`\n")
    if isinstance(out, io.StringIO):  # (--json: the lines were kept for the document)
        document(args, {"store": str(path), "kept": kept, "recall": recall,
                        "lines": out.getvalue().splitlines()}, [])
    return code


def _demo(path: Path, out: TextIO) -> tuple[int, Any]:
    import json

    from locimem.memory import ObjectMemory
    from locimem.sim.kitchen import RECALL_T, RESTART_T, kitchen_timeline

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
        [sys.executable, "-m", "locimem", "recall", str(path), "cup", "--scope", "kitchen",
         "--json"], capture_output=True, text=True, check=False,
    )
    if proc.returncode != 0:
        sys.stderr.write(proc.stderr)
        return proc.returncode, None
    recall = json.loads(proc.stdout)
    out.write(f"              {recall['text']}\n")
    return 0, recall


# -- bench -------------------------------------------------------------------------------------
def parser_bench(sub: Sub) -> None:
    p = sub.add_parser("bench", help="benchmarks: ingest (default: 1k and 10k objects, 30 "
                       "detections a scan, beside the raw SQLite append floor; three simulated "
                       "robot days; open time) "
                       "or retention (log bytes per object-hour with and without compaction) "
                       "or quality (simulated days with ground truth, beside a naive baseline) "
                       "or queries (query latency at 1k, 10k and 100k objects) "
                       "or qa (questions answered through the agent tools, graded per kind) "
                       "or interchange (export and import time and size) "
                       "or bag (scans/s from a ROS 2 bag vs the Python API; also run by ingest) "
                       "or crowd (one box reported 200 to 10,000 times in one scan) "
                       "or load (1 writer and 4 readers on one file: torn states, p99s) "
                       "or fleet (1-8 writer processes on PostgreSQL beside SQLite) "
                       "or open / rebuild (state read, replay: beside a bare read of the rows; "
                       "--objects, default 10000, and --open-observations) "
                       "or frames (map-epoch alignment time; a scan's cost in an aligned "
                       "epoch beside the memory's own frame) "
                       "or report (the docs' tables: most of the above at the sizes the "
                       "docs quote, written to docs/benchmarks.md with date, machine and "
                       "commit; about 20 minutes)")
    p.add_argument("suite", nargs="?", default="ingest",
                   choices=["ingest", "retention", "quality", "queries", "qa", "interchange",
                            "bag", "crowd", "load", "fleet", "open", "rebuild", "frames",
                            "report"],
                   help="which benchmark (default: ingest)")
    p.add_argument("--minutes", type=float, default=10.0,
                   help="retention: minutes of 30 Hz stream to simulate (default 10)")
    p.add_argument("--objects", type=_sizes, metavar="N[,N...]",
                   help="store sizes, comma-separated (default: ingest 1000,10000; queries "
                        "1000,10000,100000; open and rebuild 10000)")
    p.add_argument("--scans", type=int, default=300, help="measured scans per size (300)")
    p.add_argument("--open-observations", type=int, default=1_000_000,
                   help="observations in the open-time store (default 1000000; 0 skips it)")
    p.add_argument("--interchange-objects", type=int, default=10_000, metavar="N",
                   help="interchange: objects in the exported store (default 10000)")
    p.add_argument("--interchange-observations", type=int, default=1_000_000, metavar="N",
                   help="interchange: observations in the exported store (default 1000000)")
    p.add_argument("--seeds", type=int, default=None, metavar="N",
                   help="quality: play each scenario with N seeds and print the worst seed's "
                        "figures, the removal phantoms no memory needing 2 or 3 looks "
                        "avoids, and the IDF1 no memory publishing only corroborated things "
                        "exceeds (default 1: the full tables for the default seeds; with "
                        "--input frames, default 5)")
    p.add_argument("--input", choices=["detections", "frames"], default="detections",
                   help="quality: what the memory is fed — the simulator's 3D detections "
                        "(default), or frames: each scan rendered as 2D boxes and masks with "
                        "a noisy depth image, lifted with lift_frame, beside the 3D input")
    p.add_argument("--scenario", action="append", metavar="NAME",
                   help="quality: only this built-in scenario (repeatable; default: all, "
                        "or with --input frames the days of issue 34: kitchen_day, "
                        "clutter, thin_removals, shelf)")
    p.add_argument("--detector", choices=["rays", "centre"], default="rays",
                   help="quality: the simulated detector — rays (default: recall and box "
                        "fall with the share of a thing in sight) or centre (the first one: "
                        "seen whole when the ray to its centre is clear; earlier figures)")
    p.add_argument("--image", type=_image, default=(240, 320), metavar="HxW",
                   help="quality --input frames: the depth image's size (default 240x320)")
    p.add_argument("--seconds", type=float, default=60.0,
                   help="load: how long the writer and readers run (default 60)")
    p.add_argument("--readers", type=int, default=4,
                   help="load: reader processes (default 4)")
    p.add_argument("--url", help="fleet: a PostgreSQL server (default $LOCIMEM_POSTGRES)")
    p.add_argument("--fleet-seconds", type=float, default=5.0,
                   help="fleet: measured seconds per row (default 5)")
    p.add_argument("-o", "--out", default="docs/benchmarks.md", metavar="FILE.md",
                   help="report: the file to write (default docs/benchmarks.md)")
    p.add_argument("--profile", action="store_true",
                   help="ingest: also time each scan's phases (decide, commit, append, garbage "
                        "collection) and name what made the slowest scans slow")
    p.add_argument("--quick", action="store_true",
                   help="report: tiny sizes, a smoke run of every suite (its figures say "
                   "nothing)")
    add_json(p, "print JSON: the suite and its report's lines")
    add_quiet(p)
    p.set_defaults(func=cmd_bench)


def _image(text: str) -> tuple[int, int]:
    """``--image``: an image size such as ``240x320`` (height x width, each at least 8)."""
    try:
        h, w = (int(v) for v in text.lower().split("x"))
    except ValueError:
        h = w = 0
    if min(h, w) < 8:
        raise argparse.ArgumentTypeError(f"expected an image size HxW such as 240x320, got "
                                         f"{text!r}")
    return h, w


def _sizes(text: str) -> list[int]:
    """``--objects``: store sizes such as ``1000,10000`` (each at least 1)."""
    try:
        sizes = [int(s) for s in text.split(",")]
    except ValueError:
        sizes = []
    if not sizes or min(sizes) < 1:
        raise argparse.ArgumentTypeError(f"expected store sizes such as 1000,10000, got {text!r}")
    return sizes


def cmd_bench(args: argparse.Namespace) -> int:
    figures: dict[str, Any] = {}
    if not args.json:
        return _bench(args, sys.stdout, figures)
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        code = _bench(args, out, figures)
    doc = {"suite": args.suite, "exit_status": code, "lines": out.getvalue().splitlines()}
    if figures:
        doc["figures"] = figures
    document(args, doc, [])
    return code


def _quality(args: argparse.Namespace, out: TextIO, figures: dict[str, Any]) -> int:
    from locimem.sim.scenarios import NAMES

    unknown = sorted(set(args.scenario or ()) - set(NAMES))
    if unknown:
        return fail(f"no scenario {', '.join(map(repr, unknown))}; built-in scenarios are "
                    f"{', '.join(NAMES)}")
    if args.input == "frames":
        from locimem.bench.lifting import run_frames_suite

        figures.update(run_frames_suite(out, 5 if args.seeds is None else args.seeds,
                                        args.scenario, image=args.image,
                                        detector=args.detector))
        return 0
    from locimem.bench.quality import run_quality_suite, run_seed_sweep

    if args.seeds is not None and args.seeds > 1:
        run_seed_sweep(out, args.seeds, args.scenario, detector=args.detector)
    else:
        run_quality_suite(out, args.scenario, detector=args.detector)
    return 0


def _bench(args: argparse.Namespace, out: TextIO, figures: dict[str, Any]) -> int:
    if args.suite == "report":
        from locimem.bench.report import write_report

        write_report(args.out, quick=args.quick,
                     progress=None if args.quiet else sys.stderr)
        out.write(f"wrote {args.out}\n")
        return 0
    if args.suite == "queries":
        from locimem.bench.queries import run_query_suite

        run_query_suite(out, args.objects or [1_000, 10_000, 100_000])
        return 0
    if args.suite == "quality":
        return _quality(args, out, figures)
    if args.suite == "qa":
        from locimem.bench.qa import run_qa_suite

        run_qa_suite(out)
        return 0
    if args.suite == "interchange":
        from locimem.bench.interchange import run as run_interchange
        from locimem.cli.files import progress

        run_interchange(args.interchange_objects, args.interchange_observations,
                        progress=progress(args))
        return 0
    if args.suite == "frames":
        from locimem.bench.frames import run_frames_suite

        run_frames_suite(out, args.scans)
        return 0
    if args.suite == "crowd":
        from locimem.bench.crowd import run_crowd_suite

        run_crowd_suite(out)
        return 0
    if args.suite == "load":
        from locimem.bench.load import run_load_suite

        f = run_load_suite(out, seconds=args.seconds, readers=args.readers)
        return 0 if f.torn == 0 and not f.errors else 1
    if args.suite == "fleet":
        from locimem.bench.fleet import run_fleet_suite

        run_fleet_suite(out, args.url, seconds=args.fleet_seconds)
        return 0
    if args.suite in ("open", "rebuild"):
        from locimem.bench.openbench import run as run_open

        run_open(args.suite, args.objects or [10_000], args.open_observations, out)
        return 0
    if args.suite == "retention":
        from locimem.bench.retention import run_retention_suite

        run_retention_suite(out, minutes=args.minutes)
        return 0
    from locimem.bench.bag import run_bag_suite

    if args.suite == "bag":
        run_bag_suite(out, args.scans)
        return 0
    from locimem.bench import run_ingest_suite

    run_ingest_suite(args.objects or [1_000, 10_000], args.scans, args.open_observations, out,
                     profile=args.profile)
    run_bag_suite(out, args.scans)  # the same scans from a ROS 2 bag, if rosbags is in
    return 0


# -- mcp ---------------------------------------------------------------------------------------
def parser_mcp(sub: Sub) -> None:
    p = sub.add_parser("mcp", help="serve the memory to a language model over MCP (stdio, or "
                       "streamable HTTP with --http): the agent tools and a scene resource; "
                       "read-only unless --allow-writes (needs the mcp extra)")
    p.add_argument("store", metavar="STORE", help="path of a locimem store file")
    add_scope(p, "the scope to serve")
    p.add_argument("--allow-writes", action="store_true",
                   help="also offer the write tools (correct a label, forget); opens the "
                        "store for writing (its single-writer lock)")
    p.add_argument("--http", metavar="HOST:PORT",
                   help="serve over the MCP streamable HTTP transport at http://HOST:PORT/mcp "
                        "instead of stdio (e.g. 127.0.0.1:8765, [::1]:8765; port 0: any free "
                        "port); HOST must be loopback unless --allow-remote")
    p.add_argument("--allow-remote", action="store_true",
                   help="with --http: allow a HOST other machines can reach (e.g. 0.0.0.0); "
                        "needs --token-file")
    p.add_argument("--token-file", metavar="PATH",
                   help="with --http: every request must carry 'Authorization: Bearer TOKEN', "
                        "TOKEN being what PATH holds (keep it chmod 600)")
    p.add_argument("--allowed-host", metavar="NAME[:PORT]", action="append", default=[],
                   help="with --http: a name clients reach the server by, accepted in the Host "
                        "header besides the bound address (repeatable; default port: the "
                        "server's)")
    add_json(p, "with --http: print one JSON line (url, allow_writes, token_required) on "
                "stdout once the server listens")
    p.set_defaults(func=cmd_mcp)


def cmd_mcp(args: argparse.Namespace) -> int:
    from locimem.mcp.http import (
        check_bind,
        is_wildcard,
        parse_address,
        read_token_file,
        startup_line,
        token_file_warning,
    )
    from locimem.mcp.server import serve_http, serve_stdio

    if args.http is None:
        given = [flag for flag, on in (("--allow-remote", args.allow_remote),
                                       ("--token-file", args.token_file is not None),
                                       ("--allowed-host", bool(args.allowed_host))) if on]
        if given:
            verb = "applies" if len(given) == 1 else "apply"
            return fail(f"{', '.join(given)} {verb} only to the HTTP server: add --http "
                        "HOST:PORT (over stdio the client starts the server itself)")
        scope = resolve_scope(args.store, args.scope)  # NotFound when there is no store
        serve_stdio(args.store, scope=scope, allow_writes=args.allow_writes)
        return 0
    host, port = parse_address(args.http, what="--http")
    token = None if args.token_file is None else read_token_file(args.token_file)
    check_bind(host, allow_remote=args.allow_remote, token=token,
               allowed_hosts=args.allowed_host)
    warning = None if args.token_file is None else token_file_warning(args.token_file)
    if warning is not None:
        print(f"warning: {warning}", file=sys.stderr)
    if is_wildcard(host) and not args.allowed_host:
        print(f"warning: {host} listens on every interface, but only loopback names pass the "
              "Host check: give the names other machines use with --allowed-host NAME",
              file=sys.stderr)
    scope = resolve_scope(args.store, args.scope)  # NotFound when there is no store

    def ready(url: str) -> None:
        print(startup_line(url, allow_writes=args.allow_writes, token=token is not None),
              file=sys.stderr, flush=True)

    serve_http(args.store, scope=scope, allow_writes=args.allow_writes, host=host, port=port,
               announce=args.json, token=token, allow_remote=args.allow_remote,
               allowed_hosts=args.allowed_host, ready=ready)
    return 0


PARSERS = (parser_demo, parser_bench, parser_mcp)
