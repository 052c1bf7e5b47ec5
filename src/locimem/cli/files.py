"""Commands that move a memory between files and backends, and keep a store in shape: export,
import, migrate, validate, snapshot, restore, compact, map, rerun (``ingest`` is
:mod:`locimem.cli.ingest`'s)."""

from __future__ import annotations

import argparse
import os
from pathlib import Path
from typing import Any

from locimem.cli.common import (
    add_json,
    add_quiet,
    add_scope,
    add_store,
    add_who,
    document,
    open_memory,
    resolve_scope,
    scopes_if_any,
    store_scopes,
    time_text,
)
from locimem.errors import IntegrityError, InvalidInput
from locimem.files import KIB, read_regular
from locimem.memory import reader_of

Sub = Any
_USD_SUFFIXES = (".usda", ".usdc", ".usd")
PRIOR_STATUSES = ("confirmed", "doubted")  # what an exported memory offers as a prior map


def progress(args: argparse.Namespace) -> Any:
    """The progress callback for a long command (None with --quiet or --json)."""
    from locimem.progress import progress as bar

    return None if getattr(args, "quiet", False) or getattr(args, "json", False) else bar


def _row_counts(counts: dict[str, int]) -> str:
    return ", ".join(f"{counts.get(k, 0):,} {k}"
                     for k in ("commits", "observations", "events", "objects"))


MAX_KEY_BYTES = 4 * KIB  # a key is 16 to a few hundred bytes; /dev/zero is not one


def _hmac_key(args: argparse.Namespace) -> bytes | None:
    """The bytes of ``--hmac-key-file`` (the whole file is the key, a regular file of at most
    :data:`MAX_KEY_BYTES`), or None."""
    if args.hmac_key_file is None:
        return None
    try:
        return read_regular(args.hmac_key_file, "the HMAC key file", MAX_KEY_BYTES,
                            "expected a file holding the key (16 bytes to 4 KiB)")
    except OSError as exc:
        raise InvalidInput(f"cannot read the HMAC key file {args.hmac_key_file!r}: "
                           f"{exc.strerror}") from None


# -- export ------------------------------------------------------------------------------------
def parser_export(sub: Sub) -> None:
    p = add_store(sub.add_parser(
        "export", help="write a scope as a directory a person can read and diff (manifest "
        "with SHA-256 per file, memory.json, logs as JSON lines, embeddings as .npy), or as "
        "USD when TARGET ends in .usda/.usdc/.usd (published objects only, unless --include), "
        "or the scene graph as an idempotent Cypher script (.cypher) or GraphML (.graphml)"),
        scope="the scope to export")
    p.add_argument("target", metavar="TARGET", help="a new directory, or a .usda/.usdc/.usd, "
                   ".cypher or .graphml file")
    p.add_argument("--scene", help="a scene name for the manifest (default: the scope)")
    p.add_argument("--include-tentative", action="store_true",
                   help="USD, Cypher, GraphML: also export objects not yet confirmed")
    p.add_argument("--include", action="append", default=[],
                   choices=["doubted", "lost", "tentative"],
                   help="USD: also export objects of this status (repeatable; by default only "
                        "published, confirmed, objects)")
    p.add_argument("--dialect", choices=("neo4j", "kuzu"), default="neo4j",
                   help="Cypher: neo4j (cypher-shell < FILE.cypher; default) or kuzu (adds "
                   "Kuzu's tables, structs for points)")
    p.add_argument("--hmac-key-file", metavar="FILE",
                   help="sign the manifest with HMAC-SHA256, keyed by this file's bytes (at "
                        "least 16); import then needs the same key")
    p.add_argument("--until-commit", type=int, metavar="N",
                   help="directory: the scope as it was at commit N (its record up to N, the "
                        "state replayed from it), to drop what landed after (a scan whose "
                        "clock was years ahead); import it into a new store. `locimem audit` "
                        "lists the commits")
    add_quiet(p)
    p.set_defaults(func=cmd_export)


_GRAPH_SUFFIXES = (".cypher", ".graphml")


def _check_export_target(target: str) -> None:
    """A file name must say a format export writes; a directory has no extension (or ends in
    a slash): ``scene.txt`` is refused, not written as a directory named ``scene.txt``."""
    suffix = Path(target).suffix.lower()
    if (not suffix or target.endswith(("/", os.sep)) or Path(target).is_dir()
            or suffix in _USD_SUFFIXES + _GRAPH_SUFFIXES):
        return
    raise InvalidInput(
        f"export does not write {suffix!r} files ({target!r}); give a new directory "
        "(home-map/; end it with / if its name has a dot), a .usda/.usdc/.usd file, a "
        ".cypher or a .graphml file")


def cmd_export(args: argparse.Namespace) -> int:
    _check_export_target(args.target)
    target = args.target.lower()
    if args.until_commit is not None and target.endswith((*_USD_SUFFIXES, *_GRAPH_SUFFIXES)):
        raise InvalidInput("--until-commit exports a directory (the record up to a commit); "
                           "give a new directory as TARGET")
    if target.endswith(_USD_SUFFIXES):
        from locimem.interchange.usd import export_usd

        with open_memory(args) as mem:
            usd = export_usd(mem, args.target, include=args.include,
                             include_tentative=args.include_tentative)
        document(args, {"path": str(usd.path), "format": "usd", "rooms": usd.n_rooms,
                        "objects": usd.n_objects},
                 [f"wrote {usd.path}: {usd.n_rooms} rooms, {usd.n_objects} objects (USD, Z "
                  "up, metres)"])
        return 0
    if target.endswith(_GRAPH_SUFFIXES):
        return _export_graph(args)
    from locimem.interchange.export import export_memory

    args.scope = resolve_scope(args.store, args.scope)
    r = export_memory(args.store, args.target, scope=args.scope, scene=args.scene,
                      progress=progress(args), hmac_key=_hmac_key(args),
                      until_commit=args.until_commit)
    document(args, {"path": str(r.directory), "format": "directory", "files": r.files,
                    "bytes": r.bytes, "counts": r.counts, "seconds": round(r.seconds, 3),
                    "signed": r.signed},
             [f"wrote {r.directory}: {r.files} files, {r.bytes:,} bytes "
              f"({_row_counts(r.counts)}) in {r.seconds:.1f} s; manifest.json lists each "
              f"file's SHA-256{' and is signed (HMAC-SHA256)' if r.signed else ''}"])
    return 0


def _export_graph(args: argparse.Namespace) -> int:
    """The scene graph as a Cypher script (.cypher) or GraphML (.graphml)."""
    with open_memory(args) as mem:
        if args.target.lower().endswith(".cypher"):
            from locimem.interchange.cypher import export_cypher

            c = export_cypher(mem, args.target, dialect=args.dialect,
                              include_tentative=args.include_tentative)
            document(args, {"path": str(c.path), "format": "cypher", "dialect": c.dialect,
                            "rooms": c.n_rooms, "objects": c.n_objects,
                            "relationships": c.n_relationships,
                            "statements": c.n_statements},
                     [f"wrote {c.path}: {c.n_rooms} rooms, {c.n_objects} objects, "
                      f"{c.n_relationships} relationships in {c.n_statements} statements "
                      f"(Cypher, {c.dialect}; idempotent)"])
            return 0
        from locimem.interchange.graph import export_graphml

        g = export_graphml(mem, args.target, include_tentative=args.include_tentative)
    document(args, {"path": str(g.path), "format": "graphml", "nodes": g.n_nodes,
                    "edges": g.n_edges},
             [f"wrote {g.path}: {g.n_nodes} nodes, {g.n_edges} edges (GraphML)"])
    return 0


# -- import ------------------------------------------------------------------------------------
def parser_import(sub: Sub) -> None:
    p = sub.add_parser("import", help="load an exported directory into a store (checksums "
                       "verified first; nothing is written if any check fails), or with "
                       "--prior as the store's prior (long-term) map")
    p.add_argument("directory", metavar="DIR", help="a directory written by locimem export")
    p.add_argument("store", metavar="STORE", help="the store to import into (created if new)")
    p.add_argument("--scope", help="import under this scope name (default: the directory's; "
                   "--prior: the store's only scope, or 'default')")
    p.add_argument("--prior", action="store_true",
                   help="load the directory's objects as the prior map that live evidence is "
                        "compared with (see locimem deltas)")
    p.add_argument("--scene", help="--prior: the prior map's name (default: the directory's)")
    p.add_argument("--actor", default="operator", help="--prior: who loads it (for the audit)")
    p.add_argument("--hmac-key-file", metavar="FILE",
                   help="the key a signed export was made with (this file's bytes); a signed "
                        "directory is refused without it, an unsigned one with it")
    add_json(p)
    add_quiet(p)
    p.set_defaults(func=cmd_import)


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
        from locimem.memory import ObjectMemory

        manifest, data = read_memory(args.directory, hmac_key=_hmac_key(args))  # verified first
        entries = _prior_entries(data, args.directory)
        scene = args.scene or manifest.scene or manifest.scope
        scopes = scopes_if_any(args.store)
        scope = resolve_scope(args.store, args.scope, new_ok=True, scopes=scopes)
        with ObjectMemory.open(args.store, scope=scope, warm=False) as mem:
            ids = mem.load_prior(entries, scene=scene, actor=args.actor,
                                 reason=f"prior map from {args.directory}")
        document(args, {"store": args.store, "scope": scope, "prior": True, "scene": scene,
                        "ids": ids},
                 [f"loaded {len(ids)} objects as the prior map {scene!r} "
                  f"(ids {ids[0]}..{ids[-1]})" if ids else "the directory holds no objects"])
        return 0
    from locimem.interchange.load import import_memory

    r = import_memory(args.directory, args.store, scope=args.scope, progress=progress(args),
                      hmac_key=_hmac_key(args))
    lines = [f"{'created' if r.created else 'imported into'} {r.store}, scope {r.scope!r}: "
             f"{_row_counts(r.counts)} (every checksum verified) in {r.seconds:.1f} s"]
    if r.migrated_from is not None:
        lines.append(f"the store was migrated from schema version {r.migrated_from} first; "
                     f"backup: {r.backup_path}")
    document(args, {"store": str(r.store), "scope": r.scope, "created": r.created,
                    "counts": r.counts, "seconds": round(r.seconds, 3),
                    "migrated_from": r.migrated_from,
                    "backup_path": None if r.backup_path is None else str(r.backup_path)},
             lines)
    return 0


# -- migrate ---------------------------------------------------------------------------------
def parser_migrate(sub: Sub) -> None:
    p = sub.add_parser("migrate", help="copy a memory between stores and backends — a SQLite "
                       "file or a postgresql:// URL at either end — scope by scope, each in "
                       "one transaction; the source is only read")
    p.add_argument("source", metavar="SRC", help="the store to copy from (file or URL)")
    p.add_argument("target", metavar="DST", help="the store to copy into (created if new)")
    p.add_argument("--scope", action="append", dest="scopes", metavar="SCOPE",
                   help="copy only this scope (repeat for more; default: every scope)")
    add_json(p)
    add_quiet(p)
    p.set_defaults(func=cmd_migrate)


def cmd_migrate(args: argparse.Namespace) -> int:
    from locimem.interchange.move import migrate

    scopes = store_scopes(args.source)  # NotFound when there is no store at SRC
    for name in args.scopes or ():
        resolve_scope(args.source, name, scopes=scopes)  # exit 2, naming the scopes
    r = migrate(args.source, args.target, scopes=args.scopes, progress=progress(args))
    document(args, {"source": r.source, "target": r.target, "scopes": list(r.scopes),
                    "rows": r.rows, "seconds": round(r.seconds, 3)},
             [f"copied {len(r.scopes)} scope(s) ({', '.join(repr(s) for s in r.scopes)}) "
              f"from {r.source} to {r.target}: {_row_counts(r.rows)} in {r.seconds:.1f} s"])
    return 0


# -- validate, snapshot, restore -------------------------------------------------------------
def parser_validate(sub: Sub) -> None:
    p = sub.add_parser("validate", help="check every consistency rule of a store or an "
                       "exported directory; exit 1 if any is violated")
    p.add_argument("target", metavar="STORE|DIR", help="a store file or an exported directory")
    add_json(p)
    add_quiet(p)
    p.add_argument("--hmac-key-file", metavar="FILE",
                   help="DIR: also check the signature of a signed export with this key")
    p.set_defaults(func=cmd_validate)


def cmd_validate(args: argparse.Namespace) -> int:
    import json

    from locimem.interchange.validate import validate

    report = validate(args.target, hmac_key=_hmac_key(args), progress=progress(args))
    if args.json:
        print(json.dumps(report.to_dict(), sort_keys=True, indent=2))
    else:
        print(report)
    return 0 if report.ok else 1


def parser_snapshot(sub: Sub) -> None:
    p = sub.add_parser("snapshot", help="write a compressed, checksummed copy of a store, "
                       "consistent even while a robot keeps writing to it")
    p.add_argument("store", metavar="STORE", help="path of a locimem store file")
    p.add_argument("--out", help="the archive path (default: STORE-<UTC time>.loci-snapshot "
                   "beside the store)")
    add_json(p)
    add_quiet(p)
    p.set_defaults(func=cmd_snapshot)


def cmd_snapshot(args: argparse.Namespace) -> int:
    from locimem.interchange.snapshot import snapshot

    info = snapshot(args.store, args.out, progress=progress(args))
    document(args, {"path": str(info.path), "bytes": info.compressed_size,
                    "store_bytes": info.size, "compression": info.compression,
                    "schema_version": info.schema_version, "sha256": info.sha256},
             [f"wrote {info.path}: {info.compressed_size:,} bytes ({info.compression}) of a "
              f"{info.size:,}-byte store, schema {info.schema_version}, "
              f"sha256 {info.sha256[:16]}…"])
    return 0


def parser_restore(sub: Sub) -> None:
    p = sub.add_parser("restore", help="bring a snapshot back as a store (its checksum is "
                       "verified before anything is written)")
    p.add_argument("archive", metavar="ARCHIVE", help="a file written by locimem snapshot")
    p.add_argument("store", metavar="STORE", help="where to restore the store")
    p.add_argument("--force", action="store_true", help="replace an existing store")
    add_json(p)
    add_quiet(p)
    p.set_defaults(func=cmd_restore)


def cmd_restore(args: argparse.Namespace) -> int:
    from locimem.interchange.restore import restore

    info = restore(args.archive, args.store, force=args.force, progress=progress(args))
    document(args, {"store": args.store, "archive": str(info.path), "sha256": info.sha256,
                    "schema_version": info.schema_version},
             [f"restored {args.store} from {info.path} (sha256 verified, schema "
              f"{info.schema_version})"])
    return 0


# -- compact ---------------------------------------------------------------------------------
def parser_compact(sub: Sub) -> None:
    p = add_store(sub.add_parser("compact", help="bound the observation log: thin old "
                                 "observations to first, last, every change and a trail "
                                 "(events and audit kept whole)"), scope="the scope to compact")
    p.add_argument("--older-than", type=float, default=600.0, metavar="S",
                   help="thin only observations older than S seconds before the latest scan "
                        "(default 600)")
    p.add_argument("--trail", type=float, default=10.0, metavar="S",
                   help="keep one sighting per object per S seconds (default 10)")
    p.add_argument("--dry-run", action="store_true", help="report what would go; write nothing")
    p.add_argument("--vacuum", action="store_true",
                   help="then give the freed space back (SQLite: VACUUM rewrites the file, so "
                        "it shrinks; PostgreSQL: VACUUM, so the server reuses it) — also when "
                        "nothing new was thinned")
    add_who(p, actor="maintenance")
    add_quiet(p)
    p.set_defaults(func=cmd_compact)


def cmd_compact(args: argparse.Namespace) -> int:
    if args.dry_run and args.vacuum:
        raise InvalidInput("--vacuum writes (it rewrites the store): drop --dry-run, or --vacuum")
    with open_memory(args, write=not args.dry_run) as mem:
        before = reader_of(mem).store.count("observations", mem.scope)
        r = mem.compact(older_than_s=args.older_than, trail_s=args.trail, dry_run=args.dry_run,
                        reclaim=args.vacuum, actor=args.actor, reason=args.reason,
                        progress=progress(args))
        after = reader_of(mem).store.count("observations", mem.scope)
    doc = {"scope": args.scope, "dry_run": r.dry_run, "horizon_commit": r.horizon_commit,
           "horizon_t": r.horizon_t, "examined": r.examined, "removed": r.removed,
           "kept": r.kept, "observations_before": before, "observations_after": after,
           "bytes_before": r.bytes_before, "bytes_after": r.bytes_after,
           "vacuumed": r.reclaimed}
    lines = []
    if r.horizon_commit is None or r.examined == 0:
        lines.append(f"nothing to compact in scope {args.scope!r}: no observations older than "
                     f"{args.older_than:g} s that a previous compaction has not already thinned")
    else:
        verb = "would remove" if r.dry_run else "removed"
        lines.append(
            f"{'dry run: ' if r.dry_run else ''}examined {r.examined:,} observations up to "
            f"{time_text(r.horizon_t)} (commit {r.horizon_commit}); {verb} {r.removed:,}, "
            f"kept {r.kept:,}; observations in the log: {before:,}"
            + ("" if r.dry_run else f" -> {after:,}"))
    if r.bytes_before is not None and r.bytes_after is not None:
        change = r.bytes_after - r.bytes_before
        lines.append(f"store size: {_size(r.bytes_before)} -> {_size(r.bytes_after)} "
                     f"({'+' if change >= 0 else '-'}{_size(abs(change))}"
                     + (", vacuumed)" if r.reclaimed else
                        "; deleted rows leave free pages: --vacuum gives them back)"))
    document(args, doc, lines)
    return 0


def _size(n: int) -> str:
    """Bytes for a person: 812 B, 41.3 KB, 2.06 MB."""
    if n < 1000:
        return f"{n} B"
    size = float(n)
    for unit in ("KB", "MB", "GB", "TB"):
        size /= 1000
        if size < 1000 or unit == "TB":
            return f"{size:.3g} {unit}"
    return f"{n} B"  # pragma: no cover


# -- pictures ----------------------------------------------------------------------------------
def parser_map(sub: Sub) -> None:
    text = ("write a browser map of a scope: one self-contained HTML file (no network "
            "needed) with rooms, furniture and items seen from above, their labels, status "
            "and confidence, hover details, and a time slider over the event log")
    p = sub.add_parser("map", help=text, description=text)
    p.add_argument("store", metavar="STORE", help="path of a locimem store file")
    p.add_argument("-o", "--out", required=True, metavar="FILE.html",
                   help="the HTML file to write (replaced if it exists); open "
                        "FILE.html#t=SECONDS to start at a time")
    add_scope(p, "the scope to draw")
    p.add_argument("--title", help="the page title (default: 'locimem map: SCOPE')")
    add_json(p)
    p.set_defaults(func=cmd_map)


def cmd_map(args: argparse.Namespace) -> int:
    from locimem.viz.map import write_map

    with open_memory(args) as mem:
        r = write_map(mem, args.out, title=args.title)
    document(args, {"path": str(r.path), "frames": r.n_frames, "rooms": r.n_rooms,
                    "objects": r.n_objects, "bytes": r.n_bytes},
             [f"wrote {r.path}: {r.n_frames} frames, {r.n_rooms} rooms, {r.n_objects} objects "
              f"({r.n_bytes:,} bytes, self-contained); open it in a browser"])
    return 0


def parser_rerun(sub: Sub) -> None:
    text = ("write a scope's story as a Rerun recording (.rrd): boxes with labels and "
            "confidence colours, status changes, moves as arrows, rooms as floor outlines, "
            "on the scan_time timeline (needs the rerun extra)")
    p = sub.add_parser("rerun", help=text, description=text)
    p.add_argument("store", metavar="STORE", help="path of a locimem store file")
    p.add_argument("-o", "--out", required=True, metavar="FILE.rrd",
                   help="the .rrd file to write (replaced if it exists); view it with "
                        "`rerun FILE.rrd`")
    add_scope(p, "the scope to draw")
    add_json(p)
    p.set_defaults(func=cmd_rerun)


def cmd_rerun(args: argparse.Namespace) -> int:
    from locimem.viz.rerun import write_rerun

    with open_memory(args) as mem:
        r = write_rerun(mem, args.out)
    document(args, {"path": str(r.path), "frames": r.n_frames, "objects": r.n_objects,
                    "rooms": r.n_rooms, "bytes": r.n_bytes},
             [f"wrote {r.path}: {r.n_frames} frames on the scan_time timeline, {r.n_objects} "
              f"objects, {r.n_rooms} rooms ({r.n_bytes:,} bytes); view it with: rerun {r.path}"])
    return 0


PARSERS = (parser_export, parser_import, parser_migrate, parser_validate, parser_snapshot,
           parser_restore, parser_compact, parser_map, parser_rerun)
