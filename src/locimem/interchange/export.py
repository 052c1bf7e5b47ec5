"""A portable memory directory: one scope of a store as files a person can read and ``diff``.

:func:`export_memory` writes one, :func:`import_memory` puts it into a store,
:func:`check_directory` lists what is wrong with one and :func:`verify_directory` raises on it.
The directory::

    manifest.json               what this is; the SHA-256 and size of every other file
    memory.json                 the readable picture (derived, not read back by import):
                                objects with level, room, parents and children; relations;
                                rooms; anchors; the prior map, its deltas, keyframes
    log/commits.jsonl           the record: every row of the scope, every column, one JSON
    log/observations.jsonl      object a line, in id (commits) or seq order
    log/events.jsonl
    state/objects.jsonl         the materialised state, so import needs no replay: objects,
    state/tombstones.jsonl      tombstones, rejection keys, rooms, compaction checkpoints, the
    state/rejection_keys.jsonl  prior map, deltas and keyframes, each in key order
    state/scene.jsonl
    state/checkpoints.jsonl
    state/prior_map.jsonl
    state/deltas.jsonl
    state/keyframes.jsonl
    embeddings/observations.npy float32 (n, d): the embedding of the i-th observation that has
                                one; its line says ``"feature": i`` (``null``: none)
    embeddings/objects.npy      float64 (n, d): the objects' mean embeddings, likewise

Every file is always there (empty tables give empty files and (0, 0) matrices). Positions are
in the map frame, metres, z up; quaternions (w, x, y, z); times in seconds as recorded.

Decisions:

* Byte-deterministic: JSON with sorted keys, no spaces, floats by ``repr`` (exact round trip),
  UTF-8, ``\\n`` line ends; ``created_at`` is the store's, never the export's time; embeddings
  in ``.npy`` files written exactly as ``numpy.save`` writes them. So export → import → export
  gives the same bytes, file for file (tested).
* A column holding JSON text is written as the JSON value it holds, so a line reads as data;
  import encodes it again as the store does, and the rows come back as they were, byte for
  byte (tested). ``objects.label_mass`` is a list of ``[label, mass]`` pairs in stored order:
  the vote's float sum runs in that order. Checkpoints are the decompressed state, not base64
  of the zlib blob: readable, diffable, and independent of the zlib build (import compresses
  them as the store does).
* Rows carry no ``scope`` column: the manifest names the scope, so importing under another
  name rewrites nothing, and two scopes' exports diff line by line.
* The manifest carries its own checksum (``manifest_sha256``, of its canonical JSON without
  that field): an edited manifest is refused like an edited file. To import under another
  scope, pass ``scope=`` rather than editing it.
* Export reads everything — rows and the derived view — in one read transaction of a
  read-only connection: a writer in another process keeps appending, and the export is the
  store at one commit. A store of an older schema is migrated in a temporary copy (the store
  itself is not touched).
* Ids (objects, record seqs, commits) are file-wide in a store. The manifest gives the range
  of each; import refuses a directory whose ids collide with rows already in the target (an
  exact check when the ranges overlap, so two scopes that were written interleaved in one
  file can be put back together).
"""

from __future__ import annotations

import contextlib
import hashlib
import io
import json
import math
import os
import secrets
import shutil
import sqlite3
import tempfile
import time
import zlib
from collections import defaultdict
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import IO, Any

import numpy as np

from locimem.check import check_scope, check_text
from locimem.config import TrackerConfig
from locimem.errors import (
    IntegrityError,
    InvalidInput,
    LocimemError,
    NotAStore,
    NotFound,
    SchemaVersionError,
    ScopeError,
)
from locimem.memory import ObjectMemory
from locimem.store.schema import FORMAT as STORE_FORMAT
from locimem.store.schema import SCHEMA_VERSION
from locimem.store.sqlite import SQLiteStore, _dumps, _encode_fast

__all__ = ["FORMAT", "FORMAT_VERSION", "ExportReport", "FileEntry", "ImportReport", "Manifest",
           "check_directory", "export_memory", "import_memory", "verify_directory"]

FORMAT = "locimem-memory"
FORMAT_VERSION = 1
MANIFEST = "manifest.json"
MEMORY = "memory.json"
OBSERVATION_EMBEDDINGS = "embeddings/observations.npy"
OBJECT_EMBEDDINGS = "embeddings/objects.npy"
BATCH_ROWS = 10_000
CHUNK_BYTES = 1 << 20
ID_KINDS = ("commit", "seq", "object")
_AGAIN = "export the memory again, or copy the directory again from where it was made"

Progress = Callable[..., Iterable[Any]]
"""Called as ``progress(items, total=n)`` and iterated in their place: pass
:func:`locimem.progress.progress` (or ``tqdm``) to draw a bar."""

_line = json.JSONEncoder(sort_keys=True, separators=(",", ":"), allow_nan=False,
                         ensure_ascii=False).encode


def _no_constant(name: str) -> Any:
    raise ValueError(f"{name} is not a JSON number")


_loads = json.JSONDecoder(parse_constant=_no_constant).decode  # (str) NaN and Infinity refused


# -- the tables ------------------------------------------------------------------------------
@dataclass(frozen=True)
class _Table:
    """One table of a scope: its file, its columns (SQL order, ``scope`` left out) and how each
    is written (``v`` as is; ``j`` JSON text as its value; ``pairs`` a JSON object as
    [key, value] pairs in stored order; ``z`` zlib-compressed JSON as its value; ``f32`` /
    ``f64`` an embedding BLOB as its row in the table's ``.npy``), and its key column."""

    name: str
    file: str
    columns: tuple[str, ...]
    codecs: tuple[str, ...]
    key: str
    embeddings: str | None
    specials: tuple[tuple[int, str], ...]  # (index, codec) of the columns not written as is


def _table(name: str, file: str, spec: str, key: str, embeddings: str | None = None) -> _Table:
    cols = [c.partition(":") for c in spec.split()]
    codecs = tuple(k or "v" for _, _, k in cols)
    return _Table(name, file, tuple(c for c, _, _ in cols), codecs, key, embeddings,
                  tuple((i, c) for i, c in enumerate(codecs) if c != "v"))


TABLES = (
    _table("commits", "log/commits.jsonl",
           "id kind t recorded_at actor reason n_detections camera:j missed:j miss_credit "
           "together:j", "id"),
    _table("observations", "log/observations.jsonl",
           "seq commit_id t idx object_id label confidence cx cy cz sx sy sz weight tier "
           "rejected track_id orientation:j feature:f32 key", "seq", OBSERVATION_EMBEDDINGS),
    _table("events", "log/events.jsonl", "seq commit_id t kind object_id label data:j", "seq"),
    _table("objects", "state/objects.jsonl",
           "id label cx cy cz sx sy sz px py pz first_seen last_seen n_detections promoted lost "
           "lost_at track_id orientation:j label_mass:pairs feature:f64 n_features pinned_label "
           "attributes:j n_missed place_sx place_sy place_sz place_t seen_camera absence_s "
           "held:j together:j merged_from:j source label_by", "id", OBJECT_EMBEDDINGS),
    _table("tombstones", "state/tombstones.jsonl", "id forgotten_at data:j", "id"),
    _table("rejection_keys", "state/rejection_keys.jsonl",
           "key reason count first_seq last_seq last_t", "key"),
    _table("scene", "state/scene.jsonl", "rooms:j", "rooms"),
    _table("checkpoints", "state/checkpoints.jsonl", "commit_id t state:z", "commit_id"),
    _table("prior_map", "state/prior_map.jsonl", "id data:j", "id"),
    _table("deltas", "state/deltas.jsonl", "id object_id status data:j", "id"),
    _table("keyframes", "state/keyframes.jsonl", "object_id data:j", "object_id"),
)
_EMBEDDING_DTYPES = {OBSERVATION_EMBEDDINGS: np.dtype(np.float32),
                     OBJECT_EMBEDDINGS: np.dtype(np.float64)}
FILES = tuple(sorted([MEMORY, *(t.file for t in TABLES), *_EMBEDDING_DTYPES]))
"""Every file of a memory directory besides ``manifest.json``."""
COUNTS = (*(t.name for t in TABLES), "observation_embeddings", "object_embeddings")
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
_TARGET_IDS = {  # the ids a store already uses in a range, whatever their scope
    "commit": ("SELECT id FROM commits WHERE id BETWEEN ? AND ?",),
    "seq": ("SELECT seq FROM observations WHERE seq BETWEEN ? AND ?",
            "SELECT seq FROM events WHERE seq BETWEEN ? AND ?"),
    "object": ("SELECT id FROM objects WHERE id BETWEEN ? AND ?",
               "SELECT id FROM tombstones WHERE id BETWEEN ? AND ?",
               "SELECT DISTINCT object_id FROM events WHERE object_id BETWEEN ? AND ? "
               "AND object_id != 0"),
}
_ID_COLUMNS = {  # where each kind of id sits in the files (table, column)
    "commit": (("commits", "id"),),
    "seq": (("observations", "seq"), ("events", "seq")),
    "object": (("events", "object_id"), ("observations", "object_id"), ("objects", "id"),
               ("tombstones", "id")),
}


# -- results ---------------------------------------------------------------------------------
@dataclass(frozen=True)
class FileEntry:
    """A file's SHA-256 (hex) and size in bytes, as the manifest lists it."""

    sha256: str
    bytes: int


@dataclass(frozen=True)
class Manifest:
    """A memory directory's ``manifest.json``, checked.

    ``counts`` has the rows of each table (and of each embedding matrix); ``ids`` the
    (lowest, highest) commit id, record seq and object id in the directory (None when there
    is none); ``memory_version`` the last commit's id and valid time ``t``; ``created_at`` the
    store's creation time (seconds since the epoch); ``map_frame`` the frame (name, units,
    up axis, quaternion order).
    """

    directory: Path
    format_version: int
    schema_version: int
    scope: str
    scene: str | None
    map_frame: dict[str, str]
    created_at: float | None
    memory_version: dict[str, Any]
    counts: dict[str, int]
    ids: dict[str, tuple[int, int] | None]
    files: dict[str, FileEntry]


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


@dataclass(frozen=True)
class ImportReport:
    """What :func:`import_memory` did: the store, the scope written, the rows per table,
    whether the store was created, and — when an older store was migrated first — its old
    schema version and where its backup went."""

    store: Path
    scope: str
    counts: dict[str, int]
    created: bool
    seconds: float
    migrated_from: int | None = None
    backup_path: str | None = None


# -- export ----------------------------------------------------------------------------------
def export_memory(store_path: str | os.PathLike[str], directory: str | os.PathLike[str], *,
                  scope: str, scene: str | None = None, map_frame: str = "map",
                  progress: Progress | None = None) -> ExportReport:
    """Write one scope of the store at ``store_path`` to a new memory directory.

    Safe while another process writes to the store: everything is read in one read
    transaction, so the directory is the memory at one commit. The directory is built
    beside ``directory`` and renamed into place when complete; ``directory`` must not exist,
    or be empty. ``scene`` names the scene (a building, a simulator's world) in the manifest;
    ``map_frame`` is the name of the frame positions are in (metres, z up).

    Raises:
        NotFound: no store at ``store_path``, no scope ``scope`` in it, or the parent of
            ``directory`` does not exist.
        NotAStore: the file is not a locimem store.
        SchemaVersionError: the store is from a newer locimem.
        InvalidInput: ``directory`` exists and is not empty; a bad ``scene`` or ``map_frame``.
    """
    started = time.perf_counter()
    scope = check_scope(scope)
    if scene is not None:
        scene = check_text(scene, "scene", max_chars=128)
    frame = check_text(map_frame, "map_frame", max_chars=64)
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
        memory = ObjectMemory(store, scope, TrackerConfig(), time.time)
        part = target.parent / f".{target.name}.{secrets.token_hex(4)}.partial"
        part.mkdir()  # with the usual permissions (mkdtemp's are private)
        stack.callback(shutil.rmtree, part, ignore_errors=True)
        files, counts = _write_tables(conn, scope, part, progress)
        files[MEMORY] = _write_file(part, MEMORY, _document(
            _memory_document(memory, conn, scope, scene, frame)).encode())
        last_id, last_t = conn.execute(
            "SELECT id, t FROM commits WHERE scope = ? ORDER BY id DESC LIMIT 1",
            (scope,)).fetchone()
        created = dict(conn.execute("SELECT key, value FROM meta").fetchall()).get("created_at")
        manifest: dict[str, Any] = {
            "format": FORMAT, "format_version": FORMAT_VERSION,
            "schema_version": SCHEMA_VERSION, "scope": scope, "scene": scene,
            "map_frame": _frame(frame),
            "created_at": None if created is None else float(created),
            "memory_version": {"commit": last_id, "t": last_t},
            "counts": counts,
            "ids": {kind: _range(conn.execute(sql, (scope,)).fetchone())
                    for kind, sql in _ID_QUERIES.items()},
            "files": {name: {"sha256": e.sha256, "bytes": e.bytes}
                      for name, e in sorted(files.items())},
        }
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
                        migrated_from=migrated_from)


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
    SQLiteStore(copy).close()  # migrates it (its backup stays in the temporary directory)
    store = SQLiteStore(copy, read_only=True)
    stack.callback(store.close)
    return store, version


def _read_only(path: Path) -> sqlite3.Connection:
    try:
        conn = sqlite3.connect(path.resolve().as_uri() + "?mode=ro", uri=True,
                               isolation_level=None)
        conn.execute("PRAGMA busy_timeout=5000")
    except sqlite3.Error as exc:
        raise NotAStore(f"{str(path)!r} is not a locimem store ({exc})") from None
    return conn


def _store_version(conn: sqlite3.Connection, path: Path) -> int:
    try:
        meta = dict(conn.execute("SELECT key, value FROM meta").fetchall())
    except sqlite3.Error as exc:
        raise NotAStore(f"{str(path)!r} is not a locimem store ({exc})") from None
    if meta.get("format") != STORE_FORMAT:
        raise NotAStore(f"{str(path)!r} is a SQLite file but not a locimem store")
    try:
        version = int(meta.get("schema_version", ""))
    except ValueError:
        raise NotAStore(f"{str(path)!r} has an unreadable schema version; it is damaged or "
                        "not a locimem store") from None
    if version > SCHEMA_VERSION:
        raise SchemaVersionError(f"{str(path)!r} has schema version {version}, newer than this "
                                 f"locimem understands ({SCHEMA_VERSION}); upgrade locimem")
    if version < 1:
        raise NotAStore(f"{str(path)!r} has an impossible schema version {version}")
    return version


def _write_tables(conn: sqlite3.Connection, scope: str, part: Path,
                  progress: Progress | None) -> tuple[dict[str, FileEntry], dict[str, int]]:
    """Every table of the scope as JSON lines (and the embeddings as ``.npy``)."""
    sizes = {t.name: conn.execute(f"SELECT count(*) FROM {t.name} WHERE scope = ?",
                                  (scope,)).fetchone()[0] for t in TABLES}
    ticks = _Ticks(progress, sum(math.ceil(n / BATCH_ROWS) for n in sizes.values()))
    files: dict[str, FileEntry] = {}
    counts: dict[str, int] = {}
    for table in TABLES:
        out = _HashedFile(part, table.file)
        matrix = None
        if table.embeddings is not None:
            matrix = _NpyWriter(part, table.embeddings, conn, table, scope)
        rows = conn.execute(f"SELECT {', '.join(table.columns)} FROM {table.name} "
                            f"WHERE scope = ? ORDER BY {table.key}", (scope,))
        n = 0
        while batch := rows.fetchmany(BATCH_ROWS):
            out.write("".join([_encode_line(table, row, matrix) for row in batch]).encode())
            n += len(batch)
            ticks.advance()
        files[table.file] = out.close()
        counts[table.name] = n
        if matrix is not None:
            files[table.embeddings], rows_written = matrix.close()  # type: ignore[index]
            counts[f"{table.name[:-1]}_embeddings"] = rows_written
    ticks.close()
    return files, {k: counts[k] for k in COUNTS}


def _encode_line(table: _Table, row: tuple[Any, ...], matrix: _NpyWriter | None) -> str:
    values = list(row)
    for i, codec in table.specials:
        value = values[i]
        if value is None:
            continue
        if codec == "j":
            values[i] = json.loads(value)
        elif codec == "pairs":
            values[i] = [[k, v] for k, v in json.loads(value).items()]
        elif codec == "z":
            values[i] = json.loads(zlib.decompress(value))
        else:  # an embedding: its row in the matrix
            values[i] = matrix.append(value)  # type: ignore[union-attr]
    try:
        return _line(dict(zip(table.columns, values, strict=True))) + "\n"
    except ValueError as exc:  # a non-finite float: JSON has no way to say it
        key = row[table.columns.index(table.key)]
        raise IntegrityError(f"a row of {table.name} ({table.key} {key!r}) cannot be written "
                             f"as JSON ({exc}); the store may be damaged") from None


class _HashedFile:
    """A new file, hashed and counted as it is written, fsynced on close."""

    def __init__(self, root: Path, name: str) -> None:
        path = root.joinpath(*name.split("/"))
        path.parent.mkdir(parents=True, exist_ok=True)
        self.file: IO[bytes] = open(path, "xb")  # noqa: SIM115 - closed in close()
        self.digest = hashlib.sha256()
        self.size = 0

    def write(self, data: bytes) -> None:
        self.file.write(data)
        self.digest.update(data)
        self.size += len(data)

    def close(self) -> FileEntry:
        self.file.flush()
        os.fsync(self.file.fileno())
        self.file.close()
        return FileEntry(self.digest.hexdigest(), self.size)


def _write_file(root: Path, name: str, data: bytes) -> FileEntry:
    out = _HashedFile(root, name)
    out.write(data)
    return out.close()


class _NpyWriter:
    """One (n, d) matrix of a table's embedding BLOBs, streamed into an ``.npy`` exactly as
    ``numpy.save`` writes it (n and d are read first, in the same transaction)."""

    def __init__(self, root: Path, name: str, conn: sqlite3.Connection, table: _Table,
                 scope: str) -> None:
        self.name = name
        self.dtype = _EMBEDDING_DTYPES[name]
        column = table.columns[table.codecs.index("f32" if self.dtype.itemsize == 4 else "f64")]
        n, lo, hi = conn.execute(
            f"SELECT count(*), min(length({column})), max(length({column})) FROM {table.name} "
            f"WHERE scope = ? AND {column} IS NOT NULL", (scope,)).fetchone()
        if n and (lo != hi or lo % self.dtype.itemsize):
            raise IntegrityError(
                f"the {table.name} of scope {scope!r} hold embeddings of different widths "
                f"({lo} to {hi} bytes); one matrix cannot hold them — the store may be damaged")
        self.rows, self.width = n, (lo or 0)
        self.written = 0
        self.out = _HashedFile(root, name)
        header = io.BytesIO()
        np.lib.format.write_array_header_1_0(header, {
            "descr": np.lib.format.dtype_to_descr(self.dtype), "fortran_order": False,
            "shape": (n, self.width // self.dtype.itemsize)})
        self.out.write(header.getvalue())

    def append(self, blob: bytes) -> int:
        if len(blob) != self.width or self.written >= self.rows:  # pragma: no cover - one read
            raise IntegrityError(f"the embeddings changed while {self.name} was written")
        self.out.write(blob)
        self.written += 1
        return self.written - 1

    def close(self) -> tuple[FileEntry, int]:
        if self.written != self.rows:  # pragma: no cover - one read transaction
            raise IntegrityError(f"the embeddings changed while {self.name} was written")
        return self.out.close(), self.rows


class _Ticks:
    """Advance a progress bar of ``total`` steps from inside loops that are not its own."""

    def __init__(self, progress: Progress | None, total: int) -> None:
        self._steps: Iterator[Any] | None = None
        if progress is not None:
            self._steps = iter(progress(range(total), total=total))

    def advance(self) -> None:
        if self._steps is not None:
            next(self._steps, None)

    def close(self) -> None:
        if self._steps is not None:
            for _ in self._steps:  # the bar finishes (and prints its newline)
                pass


def _range(row: tuple[Any, Any]) -> list[int] | None:
    return None if row[0] is None else [row[0], row[1]]


def _frame(name: str) -> dict[str, str]:
    return {"name": name, "units": "m", "up": "z", "quaternion": "wxyz"}


# -- the readable picture --------------------------------------------------------------------
def _memory_document(memory: ObjectMemory, conn: sqlite3.Connection, scope: str,
                     scene: str | None, frame: str) -> dict[str, Any]:
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
        "format": FORMAT, "scope": scope, "scene": scene, "map_frame": _frame(frame),
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


def _manifest_digest(manifest: dict[str, Any]) -> str:
    body = {k: v for k, v in manifest.items() if k != "manifest_sha256"}
    return hashlib.sha256(_line(body).encode()).hexdigest()


def _fsync_directory(path: Path) -> None:
    with contextlib.suppress(OSError):  # not every platform can open a directory
        fd = os.open(path, os.O_RDONLY)
        try:
            os.fsync(fd)
        finally:
            os.close(fd)


# -- checking a directory --------------------------------------------------------------------
@dataclass(frozen=True)
class _Problem:
    text: str
    error: type[LocimemError] = IntegrityError


def check_directory(directory: str | os.PathLike[str]) -> list[str]:
    """Everything wrong with a memory directory, one line each (empty: it is intact): a
    missing, extra, truncated or changed file, a damaged or edited manifest, a version this
    locimem cannot read. Reads every byte; raises nothing."""
    _, problems = _inspect(Path(directory), None)
    return [p.text for p in problems]


def verify_directory(directory: str | os.PathLike[str], *,
                     progress: Progress | None = None) -> Manifest:
    """Check a memory directory — the manifest, and the size and SHA-256 of every file — and
    return its manifest.

    Raises:
        NotFound: no directory there.
        IntegrityError: a file is missing, extra, truncated or changed, or the manifest is
            damaged or was edited (the message names the first problem and counts the rest;
            :func:`check_directory` lists them all).
        SchemaVersionError: the directory was written by a newer locimem.
    """
    path = Path(directory)
    manifest, problems = _inspect(path, progress)
    if problems:
        first = problems[0]
        more = f" ({len(problems) - 1} more problem{'s' * (len(problems) > 2)})" \
            if len(problems) > 1 else ""
        if first.error is IntegrityError:
            raise IntegrityError(f"memory directory {str(path)!r} is damaged or incomplete: "
                                 f"{first.text}{more}; {_AGAIN}")
        if first.error is NotFound:
            raise NotFound(first.text)
        raise first.error(f"memory directory {str(path)!r}: {first.text}")
    assert manifest is not None
    return manifest


def _inspect(path: Path, progress: Progress | None
             ) -> tuple[Manifest | None, list[_Problem]]:
    if not path.is_dir():
        what = "it is not a directory" if path.exists() else "nothing is there"
        return None, [_Problem(f"no memory directory at {str(path)!r} ({what})", NotFound)]
    problems: list[_Problem] = []
    manifest = _read_manifest(path, problems)
    present = set()
    folders = {name.split("/")[0] for name in FILES if "/" in name}
    for root, dirs, names in os.walk(path):
        here = Path(root).relative_to(path).as_posix()
        for name in sorted(dirs):
            rel = name if here == "." else f"{here}/{name}"
            if rel not in folders:
                problems.append(_Problem(f"{rel}/ is not part of a memory directory (an extra "
                                         "directory: remove it)"))
        dirs[:] = sorted(d for d in dirs if (d if here == "." else f"{here}/{d}") in folders)
        for name in sorted(names):
            rel = name if here == "." else f"{here}/{name}"
            present.add(rel)
            if rel != MANIFEST and rel not in FILES:
                problems.append(_Problem(f"{rel} is not part of a memory directory (an extra "
                                         "file: remove it)"))
    problems += [_Problem(f"{name} is missing") for name in FILES if name not in present]
    if manifest is None:
        return None, problems
    to_hash = []
    for name, entry in manifest.files.items():
        if name not in present:
            continue
        size = path.joinpath(*name.split("/")).stat().st_size
        if size == entry.bytes:
            to_hash.append((name, entry))
        else:
            problems.append(_Problem(f"{name} has {size} bytes, the manifest says {entry.bytes} "
                                     f"({'truncated' if size < entry.bytes else 'changed'})"))
    ticks = _Ticks(progress, sum(math.ceil(e.bytes / CHUNK_BYTES) for _, e in to_hash))
    for name, entry in to_hash:
        if _sha256(path.joinpath(*name.split("/")), ticks) != entry.sha256:
            problems.append(_Problem(f"{name} was changed: its SHA-256 differs from the "
                                     "manifest's"))
    ticks.close()
    return (manifest if not problems else None), problems


def _sha256(path: Path, ticks: _Ticks) -> str:
    digest = hashlib.sha256()
    with open(path, "rb") as f:
        while chunk := f.read(CHUNK_BYTES):
            digest.update(chunk)
            ticks.advance()
    return digest.hexdigest()


def _read_manifest(path: Path, problems: list[_Problem]) -> Manifest | None:
    """The manifest, checked field by field (None when it cannot be used; the reasons are
    appended to ``problems``)."""
    file = path / MANIFEST
    if not file.is_file():
        problems.append(_Problem(f"{MANIFEST} is missing: this is not a (complete) locimem "
                                 "memory directory"))
        return None
    try:
        doc = _loads(file.read_bytes().decode("utf-8"))
    except (ValueError, RecursionError) as exc:
        problems.append(_Problem(f"{MANIFEST} is not valid JSON ({exc})"))
        return None
    if not isinstance(doc, dict) or doc.get("format") != FORMAT:
        problems.append(_Problem(f"{MANIFEST} is not a {FORMAT} manifest (format "
                                 f"{doc.get('format') if isinstance(doc, dict) else None!r})"))
        return None
    version = doc.get("format_version")
    if isinstance(version, int) and not isinstance(version, bool) and version > FORMAT_VERSION:
        problems.append(_Problem(f"it is in {FORMAT} format version {version}, newer than this "
                                 f"locimem reads ({FORMAT_VERSION}); upgrade locimem to read it",
                                 SchemaVersionError))
        return None
    schema = doc.get("schema_version")
    if isinstance(schema, int) and not isinstance(schema, bool) and schema != SCHEMA_VERSION:
        if schema > SCHEMA_VERSION:
            text = (f"it holds a memory of store schema version {schema}, newer than this "
                    f"locimem writes ({SCHEMA_VERSION}); upgrade locimem to import it")
        else:
            text = (f"it holds a memory of store schema version {schema}; this locimem "
                    f"imports version {SCHEMA_VERSION} only (no converter from {schema})")
        problems.append(_Problem(text, SchemaVersionError))
        return None
    if doc.get("manifest_sha256") != _manifest_digest(doc):
        problems.append(_Problem(f"{MANIFEST} was edited or damaged (its manifest_sha256 does "
                                 "not match its content; to import under another scope, pass "
                                 "scope= instead of editing it)"))
        return None
    try:
        return _manifest_from(path, doc)
    except (KeyError, TypeError, ValueError, IndexError, AttributeError, LocimemError) as exc:
        problems.append(_Problem(f"{MANIFEST} is malformed ({exc})"))
        return None


def _manifest_from(path: Path, doc: dict[str, Any]) -> Manifest:
    def integer(value: Any, name: str, lo: int = 0) -> int:
        if not isinstance(value, int) or isinstance(value, bool) or value < lo:
            raise ValueError(f"{name} should be an integer >= {lo}, got {value!r}")
        return value

    files = doc["files"]
    if not isinstance(files, dict) or sorted(files) != list(FILES):
        listed = sorted(files) if isinstance(files, dict) else files
        raise ValueError(f"files should list {', '.join(FILES)}; it lists {listed!r}")
    entries = {}
    for name, e in files.items():
        digest = e["sha256"]
        if not isinstance(digest, str) or len(digest) != 64 or digest.strip("0123456789abcdef"):
            raise ValueError(f"the SHA-256 of {name} is not 64 hex digits")
        entries[name] = FileEntry(digest, integer(e["bytes"], f"the size of {name}"))
    counts = doc["counts"]
    if not isinstance(counts, dict) or sorted(counts) != sorted(COUNTS):
        raise ValueError(f"counts should give {', '.join(COUNTS)}")
    ids: dict[str, tuple[int, int] | None] = {}
    for kind in ID_KINDS:
        r = doc["ids"][kind]
        if r is not None:
            lo, hi = integer(r[0], f"ids.{kind}"), integer(r[1], f"ids.{kind}")
            if lo > hi or len(r) != 2:
                raise ValueError(f"ids.{kind} should be [lowest, highest], got {r!r}")
            r = (lo, hi)
        ids[kind] = r
    created = doc["created_at"]
    if created is not None and not (isinstance(created, (int, float))
                                    and not isinstance(created, bool)
                                    and math.isfinite(created)):
        raise ValueError(f"created_at should be a time in seconds, got {created!r}")
    scene = doc["scene"]
    if scene is not None and not isinstance(scene, str):
        raise ValueError(f"scene should be a string or null, got {scene!r}")
    if not isinstance(doc["memory_version"], dict) or not isinstance(doc["map_frame"], dict):
        raise ValueError("memory_version and map_frame should be objects")
    return Manifest(
        directory=path, format_version=integer(doc["format_version"], "format_version", 1),
        schema_version=doc["schema_version"], scope=check_scope(doc["scope"]), scene=scene,
        map_frame=doc["map_frame"], created_at=None if created is None else float(created),
        memory_version=doc["memory_version"],
        counts={k: integer(counts[k], f"counts.{k}") for k in COUNTS}, ids=ids, files=entries)


# -- import ----------------------------------------------------------------------------------
def read_memory(directory: str | os.PathLike[str]) -> tuple[Manifest, dict[str, Any]]:
    """The directory's manifest and its ``memory.json`` (the readable picture: objects with
    level, source, pose, box, parents and children; relations; rooms; anchors; the prior map
    and deltas), after every checksum was verified. This is what ``locimem import --prior``
    loads as a prior map."""
    manifest = verify_directory(directory)
    with open(Path(directory) / "memory.json", encoding="utf-8") as f:
        return manifest, json.load(f)


def import_memory(directory: str | os.PathLike[str], store_path: str | os.PathLike[str], *,
                  scope: str | None = None, progress: Progress | None = None) -> ImportReport:
    """Put a memory directory into the store at ``store_path``, under its own scope or under
    ``scope``.

    Everything is checked first — the manifest and the size and SHA-256 of every file, then
    that the store has no data for the scope and no rows with the directory's ids — and then
    every row is inserted in one transaction, as it was exported: nothing is replayed, and a
    refused or failed import writes nothing. A new store is built in a temporary file beside
    ``store_path`` and renamed into place when complete (it takes the exported store's
    ``created_at``). An existing store of an older schema is migrated first, with a backup
    (see :class:`~locimem.store.sqlite.SQLiteStore`).

    Raises:
        NotFound: no directory there, or the directory of ``store_path`` does not exist.
        IntegrityError: the directory is damaged, incomplete or was edited.
        SchemaVersionError: the directory, or the store, is from a newer locimem.
        ScopeError: the store already has data for the scope, or rows with the directory's
            ids (it came from this store, or a copy of it): import into a new store.
        StoreLocked: the store is open for writing.
        NotAStore: ``store_path`` is not a locimem store.
    """
    started = time.perf_counter()
    source = Path(directory)
    manifest = verify_directory(source, progress=progress)
    target_scope = manifest.scope if scope is None else check_scope(scope)
    dest = Path(store_path)
    if not dest.parent.is_dir():
        raise NotFound(f"cannot import into {str(dest)!r}: the directory {str(dest.parent)!r} "
                       "does not exist")
    if dest.is_dir():
        raise InvalidInput(f"{str(dest)!r} is a directory; name the store file to import into")
    if not (dest.exists() and dest.stat().st_size > 0):
        counts = _import_new(source, manifest, dest, target_scope, progress)
        return ImportReport(store=dest, scope=target_scope, counts=counts, created=True,
                            seconds=time.perf_counter() - started)
    with contextlib.closing(_read_only(dest)) as probe:
        version = _store_version(probe, dest)
        _check_target(probe, dest, manifest, target_scope)  # before anything is opened writable
    store = SQLiteStore(dest)
    try:
        with store.atomic() as conn:
            _check_target(conn, dest, manifest, target_scope)  # again, under the writer lock
            counts = _insert_all(conn, source, manifest, target_scope, progress)
        backup = store.backup_path
    finally:
        store.close()
    return ImportReport(store=dest, scope=target_scope, counts=counts, created=False,
                        seconds=time.perf_counter() - started,
                        migrated_from=version if backup is not None else None,
                        backup_path=backup)


def _import_new(source: Path, manifest: Manifest, dest: Path, scope: str,
                progress: Progress | None) -> dict[str, int]:
    """Build a new store in a temporary file beside ``dest``; rename it into place."""
    temp = dest.parent / f".{dest.name}.{secrets.token_hex(4)}.importing"
    try:
        store = SQLiteStore(temp)
        try:
            with store.atomic() as conn:
                if manifest.created_at is not None:
                    conn.execute("INSERT OR REPLACE INTO meta (key, value) VALUES "
                                 "('created_at', ?)", (repr(manifest.created_at),))
                counts = _insert_all(conn, source, manifest, scope, progress)
            store.conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
        finally:
            store.close()
        if dest.exists() and dest.stat().st_size > 0:
            raise InvalidInput(f"{str(dest)!r} appeared while the memory was being imported; "
                               "nothing was written to it — import again")
        os.replace(temp, dest)
        _fsync_directory(dest.parent)
    finally:
        for leftover in (temp, *(Path(f"{temp}{s}") for s in ("-wal", "-shm", "-writer"))):
            leftover.unlink(missing_ok=True)
    return counts


def _check_target(conn: sqlite3.Connection, dest: Path, manifest: Manifest, scope: str) -> None:
    """Refuse a store that has data for ``scope``, or rows with the directory's ids."""
    tables = {r[0] for r in conn.execute("SELECT name FROM sqlite_master WHERE type = 'table'")}
    for table in TABLES:
        if table.name in tables and conn.execute(
                f"SELECT 1 FROM {table.name} WHERE scope = ? LIMIT 1", (scope,)).fetchone():
            raise ScopeError(
                f"{str(dest)!r} already has data for scope {scope!r}; import under another "
                "name (scope=...), or into a new store")
    taken: dict[str, set[int]] = {}
    for kind, queries in _TARGET_IDS.items():
        span = manifest.ids[kind]
        if span is not None:
            found = {row[0] for sql in queries for row in conn.execute(sql, span)}
            if found:
                taken[kind] = found
    if not taken:
        return
    clashes = {kind: sorted(ids & taken[kind])
               for kind, ids in _directory_ids(manifest.directory, taken).items()}
    clashes = {k: v for k, v in clashes.items() if v}
    if clashes:
        what = "; ".join(f"{kind} ids {', '.join(map(str, ids[:5]))}"
                         f"{' …' if len(ids) > 5 else ''} ({len(ids)})"
                         for kind, ids in clashes.items())
        raise ScopeError(
            f"the ids of {str(manifest.directory)!r} collide with rows already in "
            f"{str(dest)!r} ({what}): ids are unique across a store file, and these records "
            "came from this store or a copy of it — import into a new store")


def _directory_ids(directory: Path, kinds: Iterable[str]) -> dict[str, set[int]]:
    """The ids of ``kinds`` used in a directory's files (read only when ranges overlap)."""
    out: dict[str, set[int]] = {}
    for kind in kinds:
        found: set[int] = set()
        for table_name, column in _ID_COLUMNS[kind]:
            table = next(t for t in TABLES if t.name == table_name)
            with open(directory.joinpath(*table.file.split("/")), "rb") as f:
                for n, line in enumerate(f, start=1):
                    try:
                        value = json.loads(line)[column]
                    except (ValueError, TypeError, KeyError):
                        raise IntegrityError(f"{table.file} line {n} is not a row of "
                                             f"{table.name}; {_AGAIN}") from None
                    if isinstance(value, int) and not (kind == "object" and value == 0):
                        found.add(value)
        out[kind] = found
    return out


def _insert_all(conn: sqlite3.Connection, directory: Path, manifest: Manifest, scope: str,
                progress: Progress | None) -> dict[str, int]:
    """Insert every row of the directory under ``scope`` (inside the caller's transaction)."""
    ticks = _Ticks(progress, sum(math.ceil(manifest.counts[t.name] / BATCH_ROWS)
                                 for t in TABLES))
    counts: dict[str, int] = {}
    for table in TABLES:
        sql = (f"INSERT INTO {table.name} (scope, {', '.join(table.columns)}) "
               f"VALUES ({', '.join('?' * (len(table.columns) + 1))})")
        with contextlib.ExitStack() as stack:
            matrix = None
            if table.embeddings is not None:
                matrix = stack.enter_context(_NpyReader(
                    directory, table.embeddings,
                    manifest.counts[f"{table.name[:-1]}_embeddings"]))
            f = stack.enter_context(open(directory.joinpath(*table.file.split("/")), "rb"))
            reader = _RowReader(table, manifest, scope, matrix, ticks)
            try:
                conn.executemany(sql, reader.rows(f))
            except sqlite3.Error as exc:
                raise IntegrityError(
                    f"{table.file} (line {reader.n}) does not fit the store ({exc}); nothing "
                    f"was imported — {_AGAIN}") from None
            if reader.n != manifest.counts[table.name]:
                raise IntegrityError(f"{table.file} has {reader.n} rows, the manifest says "
                                     f"{manifest.counts[table.name]}; nothing was imported — "
                                     f"{_AGAIN}")
            if matrix is not None:
                matrix.finish()
            counts[table.name] = reader.n
    ticks.close()
    counts["observation_embeddings"] = manifest.counts["observation_embeddings"]
    counts["object_embeddings"] = manifest.counts["object_embeddings"]
    return counts


class _RowReader:
    """Decode a table's JSON lines into rows for the store, checking as it goes: the columns,
    keys in strictly increasing order, ids within the manifest's ranges, embeddings in
    order."""

    def __init__(self, table: _Table, manifest: Manifest, scope: str,
                 matrix: _NpyReader | None, ticks: _Ticks) -> None:
        self.table, self.scope, self.matrix, self.ticks = table, scope, matrix, ticks
        self.columns = set(table.columns)
        self.n = 0
        self.ranges = []  # (column index, kind, (lo, hi) | None)
        for kind, places in _ID_COLUMNS.items():
            for name, column in places:
                if name == table.name:
                    self.ranges.append((table.columns.index(column), kind, manifest.ids[kind]))
        self.key = table.columns.index(table.key)
        self.key_type = str if table.key == "key" else int

    def _bad(self, what: str) -> IntegrityError:
        return IntegrityError(f"{self.table.file} line {self.n}: {what}; nothing was imported "
                              f"— {_AGAIN}")

    def rows(self, f: IO[bytes]) -> Iterator[tuple[Any, ...]]:
        table, specials, columns = self.table, self.table.specials, self.table.columns
        last: Any = None
        for line in f:
            self.n += 1
            if self.n % BATCH_ROWS == 0:
                self.ticks.advance()
            try:
                doc = _loads(line.decode("utf-8"))
            except (ValueError, RecursionError) as exc:
                raise self._bad(f"not JSON ({exc})") from None
            if not isinstance(doc, dict) or doc.keys() != self.columns:
                raise self._bad(f"not a row of {table.name} (it should have the columns "
                                f"{', '.join(columns)})")
            values = [doc[c] for c in columns]
            key = values[self.key]
            if table.name == "scene":
                if self.n > 1:
                    raise self._bad("a scope has one row of rooms")
            elif type(key) is not self.key_type or (last is not None and key <= last):
                raise self._bad(f"{table.key} {key!r} is not after {last!r}: rows must be in "
                                f"{table.key} order, each once")
            last = key
            for index, kind, span in self.ranges:
                value = values[index]
                if value is None or (kind == "object" and value == 0):
                    continue
                if type(value) is not int or span is None or not span[0] <= value <= span[1]:
                    raise self._bad(f"{columns[index]} {value!r} is outside the manifest's "
                                    f"{kind} ids {span}")
            for i, codec in specials:
                value = values[i]
                if value is None:
                    continue
                try:
                    values[i] = self._decode(codec, value)
                except (TypeError, ValueError) as exc:
                    raise self._bad(f"{columns[i]} cannot be stored ({exc})") from None
            yield (self.scope, *values)
        if self.n % BATCH_ROWS:
            self.ticks.advance()

    def _decode(self, codec: str, value: Any) -> Any:
        if codec == "j":
            return _dumps(value)
        if codec == "pairs":
            if not isinstance(value, list) or not all(
                    isinstance(p, list) and len(p) == 2 and isinstance(p[0], str)
                    for p in value):
                raise ValueError("it should be a list of [label, mass] pairs")
            return _encode_fast(dict(value))
        if codec == "z":
            return zlib.compress(_dumps(value).encode(), 6)
        if isinstance(value, bool) or not isinstance(value, int):
            raise ValueError(f"an embedding is a row index, got {value!r}")
        return self.matrix.take(value)  # type: ignore[union-attr]


class _NpyReader:
    """The rows of an embedding matrix, read in order (each row exactly once)."""

    def __init__(self, directory: Path, name: str, rows: int) -> None:
        self.name = name
        self.file: IO[bytes] = open(directory.joinpath(*name.split("/")), "rb")  # noqa: SIM115
        want = _EMBEDDING_DTYPES[name]
        try:
            version = np.lib.format.read_magic(self.file)
            read = (np.lib.format.read_array_header_1_0 if version == (1, 0)
                    else np.lib.format.read_array_header_2_0)
            shape, fortran, dtype = read(self.file)
        except (ValueError, OSError) as exc:
            self.file.close()
            raise self._bad(f"not a readable .npy file ({exc})") from None
        if (len(shape) != 2 or fortran or dtype.kind != "f" or dtype.itemsize != want.itemsize
                or shape[0] != rows):
            self.file.close()
            raise self._bad(f"should be a {want.name} matrix of {rows} rows; it is "
                            f"{dtype.name} of shape {shape}")
        self.dtype, self.rows, self.next = dtype, rows, 0
        self.row_bytes = shape[1] * dtype.itemsize

    def _bad(self, what: str) -> IntegrityError:
        return IntegrityError(f"{self.name} {what}; nothing was imported — {_AGAIN}")

    def __enter__(self) -> _NpyReader:
        return self

    def __exit__(self, *exc: object) -> None:
        self.file.close()

    def take(self, index: int) -> bytes:
        if index != self.next or index >= self.rows:
            raise ValueError(f"embedding row {index} is out of order (expected {self.next}, "
                             f"of {self.rows})")
        data = self.file.read(self.row_bytes)
        if len(data) != self.row_bytes:
            raise ValueError(f"{self.name} ends early")
        self.next += 1
        if self.dtype.isnative:
            return data
        return np.frombuffer(data, self.dtype).astype(self.dtype.newbyteorder("=")).tobytes()

    def finish(self) -> None:
        if self.next != self.rows or self.file.read(1):
            raise self._bad(f"has {self.rows} rows; {self.next} were referenced")
