"""The ``locimem`` command line. Every command has ``--help``.

One module per kind of command — :mod:`~locimem.cli.read` (questions and the record),
:mod:`~locimem.cli.correct` (corrections), :mod:`~locimem.cli.rooms` (rooms),
:mod:`~locimem.cli.files` (interchange and maintenance), :mod:`~locimem.cli.ingest`
(recordings in), :mod:`~locimem.cli.run` (demo, benchmarks, the MCP server) — each with one
parser-building function per command; :mod:`~locimem.cli.common` opens the store a command
names (its scope resolved and checked) and prints the one output contract.
"""

from __future__ import annotations

import argparse
import logging
import re
import sqlite3
import sys
from collections.abc import Sequence

from locimem.cli import correct, files, ingest, read, rooms, run
from locimem.cli.text import format_event
from locimem.errors import LocimemError

__all__ = ["build_parser", "format_event", "main"]

EPILOG = """examples:
  locimem demo                       play the kitchen timeline against a real store file
  locimem inspect home.loci          what a store holds, per scope
  locimem events home.loci --kind MOVED --since 60
  locimem recall home.loci cup       what the memory knows about the cup
  locimem describe home.loci 12      one object in words, with its relations
  locimem query home.loci "what's on the kitchen table"
  locimem query home.loci "what is the book on"
  locimem find home.loci "something to drink from"
  locimem near home.loci 1.0 2.0 0.9 --radius 0.5
  locimem history home.loci 12       one object's evidence and events
  locimem audit home.loci --actor alice
  locimem relabel home.loci 12 vase --actor alice --reason "it is a vase"
  locimem merge home.loci 12 31 --actor alice --reason "one mug, seen twice"
  locimem split home.loci 12 2.8 1.0 0.8 --label cup --actor alice
  locimem rooms define home.loci kitchen 0,0 4,0 4,3 0,3   a room by its floor polygon
  locimem rooms load home.loci plan.json   a whole floor plan (rooms list|connect|remove)
  locimem compact home.loci --dry-run
  locimem bench                      ingest and open-time figures
  locimem bench qa                   question answering on simulated homes, per kind
  locimem bench interchange          export/import time and size, 10k objects, 1M observations
  locimem bench bag                  scans/s from a ROS 2 bag beside the Python API
  locimem bench crowd                one box reported 200..10,000 times in one scan
  locimem bench load                 1 writer + 4 readers for 60 s: torn states, p99 latencies
  locimem bench fleet                1-8 writers on PostgreSQL (--url) beside SQLite
  locimem mcp home.loci              serve the memory to a language model over MCP (stdio)
  locimem mcp home.loci --http 127.0.0.1:8765   the same over streamable HTTP
  locimem export home.loci home-map/  a readable, checksummed directory (home.usda: USD)
  locimem export home.loci scene.cypher  the scene graph for Neo4j: cypher-shell < scene.cypher
  locimem import home-map/ copy.loci  back into a store, bit for bit (--prior: as a prior map)
  locimem migrate home.loci postgresql://db/fleet?schema=home  a memory into PostgreSQL (and back)
  locimem ingest run.mcap home.loci  a ROS 2 recording (or a .jsonl scan file) into a store
  locimem --config robot.toml ingest run.mcap home.loci   with tracker settings from a file
  locimem deltas robot.loci          where live evidence disagrees with the prior map
  locimem consolidate robot.loci     apply confirmed deltas to the prior map
  locimem validate home.loci         check every consistency rule (a store or a directory)
  locimem snapshot home.loci         a compressed, checksummed copy, taken online
  locimem restore home-2026....loci-snapshot restored.loci
  locimem map home.loci -o map.html  a browser map with a time slider (one self-contained file)
  locimem rerun home.loci -o memory.rrd   the story on a time line for Rerun (rerun extra)

Without --scope, a command works in the store's only scope (or 'default'); a scope the store
does not hold is an error naming the ones it does. --json prints JSON Lines for events,
audit and history, one JSON document for everything else.
"""

PARSERS = (*run.PARSERS[:1], *read.PARSERS, *correct.PARSERS, *rooms.PARSERS, *files.PARSERS,
           *ingest.PARSERS, *run.PARSERS[1:])


def build_parser() -> argparse.ArgumentParser:
    """The argument parser: global options, then one sub-parser per command."""
    from locimem import __version__

    parser = argparse.ArgumentParser(
        prog="locimem",
        description="A persistent object memory for robots: stable identities, voted labels, "
                    "decaying belief, and an append-only record that survives restarts.",
        epilog=EPILOG,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("--version", action="version", version=f"locimem {__version__}")
    parser.add_argument("-v", "--verbose", action="count", default=0,
                        help="show the locimem logger on stderr (-v: info, -vv: debug)")
    parser.add_argument("--config", metavar="FILE.toml",
                        help="tracker, relation and encoder settings from a TOML file (see "
                             "docs/configuration.md)")
    parser.add_argument("--set", action="append", default=[], metavar="GROUP.NAME=VALUE",
                        help="one tracker setting, over --config's (repeatable; e.g. "
                             "--set belief.tau_s=20; the settings and their groups: "
                             "docs/configuration.md)")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND", required=True)
    for add in PARSERS:
        add(sub)
    return parser


def _logging(verbose: int) -> None:
    """``-v``: the ``locimem`` logger's records on stderr (the library installs no handler)."""
    if not verbose:
        return
    handler = logging.StreamHandler(sys.stderr)
    handler.setFormatter(logging.Formatter("%(levelname)s %(name)s: %(message)s"))
    logger = logging.getLogger("locimem")
    logger.addHandler(handler)
    logger.setLevel(logging.INFO if verbose == 1 else logging.DEBUG)


_PYTHON_OPTION = re.compile(r"\b[a-z_]+=\w+ \((--[a-z-]+)\)")  # "force=True (--force)"
# "ObjectMemory.open(..., late_s=3) (--late-s 3)"
_PYTHON_CALL = re.compile(r"\b[\w.]+\(\.\.\., \w+=[^)]*\) \((--[a-z-]+[^)]*)\)")


def cli_message(exc: BaseException) -> str:
    """An error's message as the command line words it: the option, not the Python keyword.

    >>> cli_message(ValueError("x exists; pass force=True (--force) to replace it"))
    'x exists; pass --force to replace it'
    >>> cli_message(ValueError("raise it: ObjectMemory.open(..., late_s=3) (--late-s 3)"))
    'raise it: --late-s 3'
    """
    return _PYTHON_CALL.sub(r"\1", _PYTHON_OPTION.sub(r"\1", str(exc)))


def main(argv: Sequence[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    _logging(args.verbose)
    try:
        args.tracker_config = None
        args.store_late_s = None
        if args.config is not None:
            from locimem.config import TrackerConfig, store_settings_from_toml

            args.tracker_config = TrackerConfig.from_toml(args.config)
            args.store_late_s = store_settings_from_toml(args.config).get("late_s")
        if args.set:
            from locimem.config import TrackerConfig

            args.tracker_config = (args.tracker_config or TrackerConfig()).with_settings(
                args.set)
        return int(args.func(args))
    except LocimemError as exc:
        print(f"error: {cli_message(exc)}", file=sys.stderr)
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
