"""A portable memory directory: one scope of a store as files a person can read and ``diff``.

:func:`export_memory` writes one (this module), :func:`import_memory` puts it into a store
(:mod:`locimem.interchange.load`), :func:`check_directory` lists what is wrong with one and
:func:`verify_directory` raises on it (:mod:`locimem.interchange.directory`, which also
describes the layout and the format's decisions). Every public name of the three is importable
from here.

Export reads everything — rows and the derived view — in one read transaction of a read-only
connection: a writer in another process keeps appending, and the export is the store at one
commit. A store of an older schema is migrated in a temporary copy (the store itself is not
touched).
"""

from __future__ import annotations

import contextlib
import json
import math
import os
import secrets
import shutil
import sqlite3
import tempfile
import time
from collections import defaultdict
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from locimem.check import check_scope, check_text
from locimem.config import TrackerConfig
from locimem.errors import InvalidInput, NotAStore, NotFound
from locimem.frames import memory_epoch
from locimem.interchange.directory import (
    BATCH_ROWS,
    COUNTS,
    EPOCHS,
    FILES,
    FORMAT,
    FORMAT_VERSION,
    MANIFEST,
    MEMORY,
    TABLES,
    FileEntry,
    Manifest,
    Progress,
    _fsync_directory,
    _Table,
    _Ticks,
    check_directory,
    epoch_lines,
    verify_directory,
)
from locimem.interchange.directory import CHUNK_BYTES as CHUNK_BYTES  # re-exported, as before
from locimem.interchange.directory import ID_KINDS as ID_KINDS
from locimem.interchange.directory import OBJECT_EMBEDDINGS as OBJECT_EMBEDDINGS
from locimem.interchange.directory import OBSERVATION_EMBEDDINGS as OBSERVATION_EMBEDDINGS
from locimem.interchange.directory import read_memory as read_memory
from locimem.interchange.load import ImportReport, import_memory
from locimem.interchange.rows_out import (
    _BatchEncoder,
    _encode_line,
    _HashedFile,
    _NpyWriter,
    _write_file,
)
from locimem.interchange.signing import _manifest_digest, check_hmac_key, manifest_signature
from locimem.interchange.signing import canonical_line as _line
from locimem.interchange.store_file import _read_only, _store_version
from locimem.memory.base import LiveMemory
from locimem.store.base import is_postgres_url
from locimem.store.sqlite import SQLiteStore
from locimem.store.sqlite.schema import SCHEMA_VERSION
from locimem.tracker.apply import EPOCH_KINDS
from locimem.tracker.load import gc_paused, replay_stale_cache

__all__ = ["FORMAT", "FORMAT_VERSION", "ExportReport", "FileEntry", "ImportReport", "Manifest",
           "check_directory", "export_memory", "import_memory", "verify_directory"]

_EPOCH_KINDS = [k.value for k in sorted(EPOCH_KINDS)]
_ID_QUERIES = {  # (min, max) of each kind of file-wide id in one scope
    "commit": "SELECT min(id), max(id) FROM commits WHERE scope = ?1",
    "seq": "SELECT min(a), max(b) FROM (SELECT min(seq) a, max(seq) b FROM observations "
           "WHERE scope = ?1 UNION ALL SELECT min(seq), max(seq) FROM events WHERE scope = ?1)",
    "object": "SELECT min(a), max(b) FROM ("
              "SELECT min(object_id) a, max(object_id) b FROM events "
              "WHERE scope = ?1 AND object_id != 0 "
              "UNION ALL SELECT min(object_id), max(object_id) FROM observations WHERE scope = ?1 "
              "UNION ALL SELECT min(id), max(id) FROM objects WHERE scope = ?1 "
              "UNION ALL SELECT min(id), max(id) FROM tombstones WHERE scope = ?1)",
}


@dataclass(frozen=True)
class ExportReport:
    """What :func:`export_memory` wrote. ``migrated_from`` is the source store's schema
    version when it was older (a migrated temporary copy was exported; the store was not
    touched), else None."""

    directory: Path
    scope: str
    counts: dict[str, int]
    files: int
    bytes: int
    seconds: float
    migrated_from: int | None = None
    signed: bool = False  # the manifest carries an HMAC-SHA256 signature (hmac_key=)


# -- export ----------------------------------------------------------------------------------
def export_memory(store_path: str | os.PathLike[str], directory: str | os.PathLike[str], *,
                  scope: str, scene: str | None = None, map_frame: str = "map",
                  progress: Progress | None = None,
                  hmac_key: bytes | None = None,
                  until_commit: int | None = None) -> ExportReport:
    """Write one scope of the store at ``store_path`` to a new memory directory.

    Safe while another process writes to the store: everything is read in one read
    transaction, so the directory is the memory at one commit. The directory is built
    beside ``directory`` and renamed into place when complete; ``directory`` must not exist,
    or be empty. ``scene`` names the scene (a building, a simulator's world) in the manifest;
    ``map_frame`` is the name of the frame positions are in (metres, z up): the memory's
    frame, whose map epoch the manifest names too (``map_frame.epoch``; the scope's epochs,
    with their transforms into it, are ``state/epochs.jsonl``). A provisional epoch's own
    scope is not exported with it (see :mod:`locimem.interchange.directory`).

    The manifest's SHA-256 checksums prove integrity, not authenticity (anyone who edits a
    file can recompute them). With ``hmac_key`` (bytes, at least 16) the manifest is also
    signed (``hmac_sha256``: HMAC-SHA256 of its canonical JSON, which lists every file's
    SHA-256); :func:`~locimem.interchange.load.import_memory` then refuses the directory
    unless given the same key.

    ``until_commit`` exports the scope as it was at that commit: its records up to it and
    the state they imply (:mod:`locimem.interchange.prefix`) — how an operator drops what
    landed after it (a scan whose clock was years ahead) and starts a store from the rest.

    Raises:
        NotFound: no store at ``store_path``, no scope ``scope`` in it, or the parent of
            ``directory`` does not exist.
        NotAStore: the file is not a locimem store.
        SchemaVersionError: the store is from a newer locimem.
        InvalidInput: ``directory`` exists and is not empty; a bad ``scene`` or ``map_frame``;
            ``until_commit`` is not a commit of the scope.
    """
    if until_commit is not None:
        from locimem.interchange.prefix import prefix_copy

        _check_export_target(Path(directory))
        with prefix_copy(store_path, check_scope(scope), until_commit) as copy:
            return export_memory(copy, directory, scope=scope, scene=scene,
                                 map_frame=map_frame, progress=progress, hmac_key=hmac_key)
    if is_postgres_url(store_path):  # a PostgreSQL scope: exported from a scratch copy
        from locimem.interchange.move import scratch_copy

        with scratch_copy(str(store_path), check_scope(scope)) as copy:
            return export_memory(copy, directory, scope=scope, scene=scene,
                                 map_frame=map_frame, progress=progress, hmac_key=hmac_key)
    started = time.perf_counter()
    scope = check_scope(scope)
    if scene is not None:
        scene = check_text(scene, "scene", max_chars=128)
    frame = check_text(map_frame, "map_frame", max_chars=64)
    key = None if hmac_key is None else check_hmac_key(hmac_key)
    source, target = Path(store_path), Path(directory)
    _check_export_target(target)
    with contextlib.ExitStack() as stack:
        store, migrated_from = _open_source(source, target.parent, stack)
        conn = store.conn
        conn.execute("BEGIN")  # one read transaction: the store at one commit
        stack.callback(_end_read, conn)
        if conn.execute("SELECT 1 FROM commits WHERE scope = ? LIMIT 1", (scope,)).fetchone() \
                is None:
            known = ", ".join(repr(s) for s in store.scopes()) or "none"
            raise NotFound(f"no scope {scope!r} in {str(source)!r} (scopes: {known})")
        memory = LiveMemory(store, scope, TrackerConfig(), time.time)  # (reads only)
        part = target.parent / f".{target.name}.{secrets.token_hex(4)}.partial"
        part.mkdir()  # with the usual permissions (mkdtemp's are private)
        stack.callback(shutil.rmtree, part, ignore_errors=True)
        with gc_paused():  # batches of rows live together: see _write_tables
            files, counts = _write_tables(conn, scope, part, progress)
        epochs = epoch_lines(store.events(scope, kind=_EPOCH_KINDS))
        files[EPOCHS] = _write_file(part, EPOCHS, "".join(
            _line(e) + "\n" for e in epochs).encode())
        counts["epochs"] = len(epochs)
        frame_doc = _frame(frame, memory_epoch(memory.state.epochs))
        files[MEMORY] = _write_file(part, MEMORY, _document(
            _memory_document(memory, conn, scope, scene, frame_doc)).encode())
        last_id, last_t = conn.execute(
            "SELECT id, t FROM commits WHERE scope = ? ORDER BY id DESC LIMIT 1",
            (scope,)).fetchone()
        created = dict(conn.execute("SELECT key, value FROM meta").fetchall()).get("created_at")
        manifest: dict[str, Any] = {
            "format": FORMAT, "format_version": FORMAT_VERSION,
            "schema_version": SCHEMA_VERSION, "scope": scope, "scene": scene,
            "map_frame": frame_doc,
            "created_at": None if created is None else float(created),
            "memory_version": {"commit": last_id, "t": last_t},
            "counts": counts,
            "ids": {kind: _range(conn.execute(sql, (scope,)).fetchone())
                    for kind, sql in _ID_QUERIES.items()},
            "files": {name: {"sha256": e.sha256, "bytes": e.bytes}
                      for name, e in sorted(files.items())},
        }
        if key is not None:
            manifest["hmac_sha256"] = manifest_signature(manifest, key)
        manifest["manifest_sha256"] = _manifest_digest(manifest)
        _write_file(part, MANIFEST, _document(manifest).encode())
        for folder in sorted({name.split("/")[0] for name in FILES if "/" in name}):
            _fsync_directory(part / folder)
        _fsync_directory(part)
        if os.path.lexists(target) and (not target.is_dir() or any(target.iterdir())):
            raise InvalidInput(f"{str(target)!r} appeared while the memory was being exported; "
                               "nothing was written over it — choose another directory")
        os.replace(part, target)  # an empty directory there is replaced
        _fsync_directory(target.parent)
    total = sum(e.bytes for e in files.values()) + (target / MANIFEST).stat().st_size
    return ExportReport(directory=target, scope=scope, counts=counts, files=len(files) + 1,
                        bytes=total, seconds=time.perf_counter() - started,
                        migrated_from=migrated_from, signed=key is not None)


def _end_read(conn: sqlite3.Connection) -> None:
    with contextlib.suppress(sqlite3.Error):  # (already ended if SQLite gave up on it)
        conn.execute("ROLLBACK")


def _check_export_target(target: Path) -> None:
    if not target.parent.is_dir():
        raise NotFound(f"cannot export to {str(target)!r}: the directory "
                       f"{str(target.parent)!r} does not exist")
    if os.path.lexists(target):
        if not target.is_dir():
            raise InvalidInput(f"{str(target)!r} exists and is not a directory; export to a "
                               "new directory")
        if any(target.iterdir()):
            raise InvalidInput(f"{str(target)!r} exists and is not empty; an export never "
                               "writes into one — choose a new directory, or remove that one")


def _open_source(source: Path, scratch: Path, stack: contextlib.ExitStack
                 ) -> tuple[SQLiteStore, int | None]:
    """The store, read-only; for an older schema, a migrated copy in a temporary directory
    (the store itself is left as it is). Returns it and the old version (None: current)."""
    if not source.exists():
        raise NotFound(f"no store at {str(source)!r}")
    if source.is_dir():
        raise NotAStore(f"{str(source)!r} is a directory, not a locimem store")
    with contextlib.closing(_read_only(source)) as probe:
        version = _store_version(probe, source)
    if version >= SCHEMA_VERSION:
        store = SQLiteStore(source, read_only=True)
        stack.callback(store.close)
        return store, None
    temp = Path(stack.enter_context(tempfile.TemporaryDirectory(dir=scratch,
                                                                prefix=".locimem-export-")))
    copy = temp / "store.loci"
    with contextlib.closing(_read_only(source)) as src, \
            contextlib.closing(sqlite3.connect(copy)) as dst:
        src.backup(dst)  # one read transaction: a consistent copy
    with contextlib.closing(SQLiteStore(copy)) as migrated:  # migrates it (its backup stays
        replay_stale_cache(migrated)  # in the temporary directory), then replays its cache
    store = SQLiteStore(copy, read_only=True)
    stack.callback(store.close)
    return store, version


def _write_tables(conn: sqlite3.Connection, scope: str, part: Path,
                  progress: Progress | None) -> tuple[dict[str, FileEntry], dict[str, int]]:
    """Every table of the scope as JSON lines (and the embeddings as ``.npy``). Run with the
    cyclic garbage collector paused (a batch's rows live together, and every collection would
    walk them again; reference counting frees each batch)."""
    sizes = {t.name: conn.execute(f"SELECT count(*) FROM {t.name} WHERE scope = ?",
                                  (scope,)).fetchone()[0] for t in TABLES}
    ticks = _Ticks(progress, sum(math.ceil(n / BATCH_ROWS) for n in sizes.values()))
    files: dict[str, FileEntry] = {}
    counts: dict[str, int] = {}
    for table in TABLES:
        out = _HashedFile(part, table.file)
        matrix = None
        if table.embeddings is not None:
            matrix = _NpyWriter(part, table.embeddings, conn, table, scope,
                                _scope_term(conn, table, sizes[table.name]))
        rows = conn.execute(table_query(conn, table, sizes[table.name]), (scope,))
        encode = _BatchEncoder(table, matrix)
        n = 0
        while batch := rows.fetchmany(BATCH_ROWS):
            out.write(encode(batch).encode())
            n += len(batch)
            ticks.advance()
        files[table.file] = out.close()
        counts[table.name] = n
        if matrix is not None:
            files[table.embeddings], rows_written = matrix.close()  # type: ignore[index]
            counts[f"{table.name[:-1]}_embeddings"] = rows_written
    ticks.close()
    return files, {k: counts[k] for k in COUNTS if k != "epochs"}  # (epochs: its own file)


def table_query(conn: sqlite3.Connection, table: _Table, rows: int) -> str:
    """The query of a table's rows in key order. A table keyed by its rowid, of which the
    scope holds at least half the rows, is read in one pass over the table (``+scope``: no
    index, so no sort of the rows through a temporary B-tree); the rows are the same."""
    return (f"SELECT {', '.join(table.columns)} FROM {table.name} "
            f"WHERE {_scope_term(conn, table, rows)} = ? ORDER BY {table.key}")


def _scope_term(conn: sqlite3.Connection, table: _Table, rows: int) -> str:
    """``scope``, or ``+scope`` (no index: one pass over the table) when the table is keyed
    by its rowid and the scope holds at least half of its rows."""
    if table.key in _ROWID_KEYS.get(table.name, ()) and rows and \
            2 * rows >= conn.execute(f"SELECT count(*) FROM {table.name}").fetchone()[0]:
        return "+scope"
    return "scope"


_ROWID_KEYS = {"commits": ("id",), "observations": ("seq",), "events": ("seq",),
               "objects": ("id",), "tombstones": ("id",)}  # INTEGER PRIMARY KEY columns

def _range(row: tuple[Any, Any]) -> list[int] | None:
    return None if row[0] is None else [row[0], row[1]]


def _frame(name: str, epoch: str | None) -> dict[str, Any]:
    return {"name": name, "units": "m", "up": "z", "quaternion": "wxyz", "epoch": epoch}


# -- the readable picture --------------------------------------------------------------------
def _memory_document(memory: LiveMemory, conn: sqlite3.Connection, scope: str,
                     scene: str | None, frame: dict[str, Any]) -> dict[str, Any]:
    """Objects with level, room, parents and children (from ``on`` / ``in``), relations,
    rooms, anchors, the prior map, deltas and keyframes — what a person (or a prior-map
    import) reads. Forgotten objects are left out, as from every read."""
    objects = memory.objects()
    relations = {}
    for obj in objects:
        for r in memory.relations(obj.id):
            if r.relation != "contains":  # the container's view of "in"
                relations[(r.subject, r.relation, r.object)] = r
    parents: dict[int, list[dict[str, Any]]] = defaultdict(list)
    children: dict[int, list[dict[str, Any]]] = defaultdict(list)
    for (subject, relation, other), _ in sorted(relations.items()):
        if relation in ("on", "in"):
            parents[subject].append({"id": other, "relation": relation})
            children[other].append({"id": subject, "relation": relation})
    forgotten = {row[0] for row in conn.execute("SELECT id FROM tombstones WHERE scope = ?",
                                                (scope,))}

    def rows(name: str, object_column: str) -> list[dict[str, Any]]:
        table = next(t for t in TABLES if t.name == name)
        found = conn.execute(f"SELECT {', '.join(table.columns)} FROM {name} WHERE scope = ? "
                             f"ORDER BY {table.key}", (scope,))
        out = [json.loads(_encode_line(table, row, None)) for row in found]
        return [r for r in out if r[object_column] not in forgotten]

    return {
        "format": FORMAT, "scope": scope, "scene": scene, "map_frame": frame,
        "now": memory.now,
        "objects": [{
            "id": o.id, "label": o.label, "corrected_label": o.corrected_label,
            "label_by": o.label_by, "source": o.source, "level": memory.level_of(o.id),
            "status": o.status.value, "confidence": o.confidence, "center": list(o.center),
            "size": list(o.size),
            "orientation": None if o.orientation is None else list(o.orientation),
            "attributes": o.attributes, "room": memory.room_of(o.id),
            "parents": parents[o.id], "children": children[o.id],
            "first_seen": o.first_seen, "last_seen": o.last_seen, "lost_at": o.lost_at,
            "n_detections": o.n_detections,
        } for o in objects],
        "relations": [{"subject": s, "relation": k, "object": o, "confidence": r.confidence,
                       "since": r.since, "source": r.source}
                      for (s, k, o), r in sorted(relations.items())],
        "rooms": [{"name": r.name, "polygon": [list(p) for p in r.polygon],
                   "z_range": None if r.z_range is None else list(r.z_range),
                   "connected": list(r.connected)} for r in memory.rooms()],
        "anchors": [o.id for o in memory.anchors()],
        "prior_map": rows("prior_map", "id"),
        "deltas": rows("deltas", "object_id"),
        "keyframes": rows("keyframes", "object_id"),
    }


def _document(doc: dict[str, Any]) -> str:
    """JSON a person can read and ``diff``: one top-level key a line, and each entry of a
    list or object value on a line of its own (compact, keys sorted)."""
    parts = []
    for key in sorted(doc):
        value = doc[key]
        if isinstance(value, dict) and value:
            body = ",\n".join(f"    {_line(k)}:{_line(v)}" for k, v in sorted(value.items()))
            text = "{\n" + body + "\n  }"
        elif isinstance(value, list) and value:
            text = "[\n" + ",\n".join(f"    {_line(v)}" for v in value) + "\n  ]"
        else:
            text = _line(value)
        parts.append(f"  {_line(key)}:{text}")
    return "{\n" + ",\n".join(parts) + "\n}\n"
