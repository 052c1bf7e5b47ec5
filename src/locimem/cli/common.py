"""What every command shares: the store and scope it opens, and one output contract.

**Opening.** :func:`open_memory` opens the store a command names, for the scope it names —
or, without ``--scope``, the store's only scope (``default`` when it holds none, or when
``default`` is one of several). A scope the store does not hold is an error that lists the
scopes it does hold (exit status 2), except where the command creates one (``ingest``,
``import``).

**Output.** Text for a person, or with ``--json`` for a program: streams (``events``,
``audit``, ``history``) as JSON Lines, one object per line; everything else as one JSON
document. The JSON carries at least what the text shows. In text, a valid time that looks
like Unix time is shown as ISO 8601 (UTC), anything else as seconds.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from locimem.errors import NotFound, ScopeError
from locimem.jsontext import rounded as rounded  # (re-exported: the commands use it)
from locimem.language.hedge import sanitize
from locimem.times import time_text as time_text  # (re-exported: the commands use it)

if TYPE_CHECKING:
    from locimem.memory import ObjectMemory, Readable
    from locimem.model import TrackedObject

# -- arguments ---------------------------------------------------------------------------------
def add_store(p: argparse.ArgumentParser, *, scope: str = "the scope to read",
              json_help: str = "print JSON instead of text") -> argparse.ArgumentParser:
    """The arguments of a command on one store: STORE, --scope, --json."""
    p.add_argument("store", metavar="STORE", help="path of a locimem store file")
    add_scope(p, scope)
    add_json(p, json_help)
    return p


def add_scope(p: argparse.ArgumentParser, what: str = "the scope to read") -> None:
    p.add_argument("--scope", help=f"{what} (default: the store's only scope, or 'default')")


def add_json(p: argparse.ArgumentParser, text: str = "print JSON instead of text") -> None:
    p.add_argument("--json", action="store_true", help=text)


def add_quiet(p: argparse.ArgumentParser) -> None:
    p.add_argument("--quiet", action="store_true", help="no progress bar")


SINCE_HELP = ("seconds (120), ISO 8601 (2026-12-03T10:00:00Z) or a clock time (10:00: the "
              "latest such moment, on the day of the store's latest scan)")


def add_since(p: argparse.ArgumentParser, what: str) -> None:
    p.add_argument("--since", metavar="TIME", help=f"only {what} at or after this time: "
                                                   + SINCE_HELP)


def since_time(mem: Readable, args: argparse.Namespace) -> float | None:
    """``--since`` as a valid time (None when not given); a clock time is on ``mem``'s day."""
    from locimem.times import parse_time

    return None if args.since is None else parse_time(args.since, now=mem.now, what="--since")


def add_who(p: argparse.ArgumentParser, actor: str = "operator") -> None:
    p.add_argument("--actor", default=actor, help=f"who is doing it, for the audit (default "
                                                  f"{actor!r})")
    p.add_argument("--reason", help="why, for the audit")


# -- the store and its scope ---------------------------------------------------------------------
def store_scopes(path: str) -> list[str]:
    """The scopes the store at ``path`` (a file or a ``postgresql://`` URL) holds (raises
    NotFound when there is no store)."""
    from locimem.store import open_store

    store = open_store(path, read_only=True, check="header")
    try:
        return store.scopes()
    finally:
        store.close()


def scopes_if_any(path: str) -> list[str]:
    """The scopes of the store at ``path``, or none when there is no store yet (a new file,
    a PostgreSQL schema that does not exist: the command creates it)."""
    from locimem.store.base import is_postgres_url

    if not is_postgres_url(path):
        return store_scopes(path) if Path(path).is_file() else []
    try:
        return store_scopes(path)
    except NotFound:
        return []


def resolve_scope(path: str, requested: str | None, *, new_ok: bool = False,
                  scopes: Sequence[str] | None = None) -> str:
    """The scope a command on ``path`` works in (see the module). ``new_ok``: the command
    may create ``requested``."""
    if scopes is None:
        scopes = store_scopes(path)
    if requested is not None:
        if scopes and requested not in scopes and not new_ok:
            raise ScopeError(f"{path} holds no scope {requested!r}; its scopes: "
                             f"{_names(scopes)}")
        return requested
    if len(scopes) == 1:
        return scopes[0]
    if not scopes or "default" in scopes:
        return "default"
    raise ScopeError(f"{path} holds {len(scopes)} scopes ({_names(scopes)}): pass --scope "
                     "to say which")


def _names(scopes: Sequence[str]) -> str:
    return ", ".join(repr(s) for s in scopes)


def open_memory(args: argparse.Namespace, *, write: bool = False,
                **kwargs: Any) -> ObjectMemory:
    """Open ``args.store`` for a command: its scope resolved and checked (``args.scope`` is
    set to it), read-only unless ``write``, with ``--config``'s tracker settings. A command is
    one call: nothing is built ahead of need (``warm=False``)."""
    from locimem.memory import ObjectMemory

    args.scope = resolve_scope(args.store, args.scope)
    config = getattr(args, "tracker_config", None)
    kwargs.setdefault("warm", False)
    return ObjectMemory.open(args.store, scope=args.scope, read_only=not write, config=config,
                             **kwargs)


# -- output ----------------------------------------------------------------------------------
def document(args: argparse.Namespace, doc: Any, lines: Iterable[str]) -> None:
    """Print one result: ``doc`` as one JSON document with ``--json``, else ``lines``."""
    if getattr(args, "json", False):
        print(json.dumps(doc, indent=2, default=_plain))
    else:
        for line in lines:
            print(line)


def stream_line(doc: Any) -> str:
    """One JSON Lines record."""
    return json.dumps(doc, sort_keys=True, default=_plain)


def _plain(value: Any) -> Any:
    """numpy scalars, arrays and tuples-in-disguise as JSON values."""
    if hasattr(value, "tolist"):
        return value.tolist()
    if hasattr(value, "value"):  # enums
        return value.value
    raise TypeError(f"{type(value).__name__} is not JSON serialisable")


def place(c: Sequence[float]) -> str:
    return f"({c[0]:.2f}, {c[1]:.2f}, {c[2]:.2f})"


def room_of(mem: Readable, object_id: int) -> str | None:
    try:
        return mem.room_of(object_id)
    except NotFound:
        return None


def object_doc(mem: Readable, o: TrackedObject, **extra: Any) -> dict[str, Any]:
    """An object as every command's JSON shows it."""
    return {"id": o.id, "label": o.label, "status": o.status.value,
            "confidence": round(o.confidence, 3), "center": rounded(list(o.center)),
            "size": rounded(list(o.size)), "room": room_of(mem, o.id), "level": o.level,
            "last_seen": o.last_seen, **extra}


def object_line(doc: dict[str, Any], extra: str = "") -> str:
    """An object (as :func:`object_doc` gives it) as one line of text."""
    room = f"  in the {sanitize(doc['room'])}" if doc.get("room") else ""
    return (f"#{doc['id']:<5} {sanitize(doc['label']):<24} {place(doc['center'])}  "
            f"{doc['status']:<9} confidence {doc['confidence']:.2f}{room}{extra}")


def fail(message: str) -> int:
    """An error for the command line: one line on stderr, exit status 2."""
    print(f"error: {message}", file=sys.stderr)
    return 2
