"""The memory directory format — its layout, its tables, its manifest — and the checks that
say whether a directory is intact.

:func:`check_directory` lists what is wrong with one, :func:`verify_directory` raises on it
and returns its :class:`Manifest`, :func:`read_memory` reads its readable picture. Writing one
is :mod:`locimem.interchange.export`; putting one into a store is
:mod:`locimem.interchange.load`. The directory::


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
    state/epochs.jsonl          the scope's map epochs (format 2 on), one a line, oldest first
    embeddings/observations.npy float32 (n, d): the embedding of the i-th observation that has
                                one; its line says ``"feature": i`` (``null``: none)
    embeddings/objects.npy      float64 (n, d): the objects' mean embeddings, likewise

Every file is always there (empty tables give empty files and (0, 0) matrices). Positions are
in the memory's frame, metres, z up; quaternions (w, x, y, z); times in seconds as recorded.

The frame. The manifest's ``map_frame`` (and ``memory.json``'s) says which frame the
positions are in: ``name`` (``map`` unless ``export_memory(map_frame=)`` says otherwise),
``units`` ``m``, ``up`` ``z``, ``quaternion`` ``wxyz``, and ``epoch``: the map epoch whose
frame is the memory's (the ``base`` one), or null for a scope that never named its first
frame (:func:`locimem.frames.memory_epoch`). ``state/epochs.jsonl`` lists every map epoch
of the scope, as ``map_epochs()`` does, oldest first (valid time ``since``, then name):
``name``, ``status`` (``base``, ``provisional``, ``aligned``, ``given``), ``since``,
``transform`` (``[translation_xyz, quaternion_wxyz]`` into the memory's frame, null while
none is known), ``yaw_deg``, ``residual_m`` and ``inliers`` (the fit's, for an automatic
alignment; ``inliers`` is how many pairs), ``scope`` (where a provisional epoch is tracked,
``SCOPE/epochs/NAME``) and ``source`` (the actor of its latest ``MAP_ALIGNED``: who or what
set the transform; null for ``base`` and ``provisional``). It is a description: the events
(``MAP_EPOCH``, ``MAP_ALIGNED``) are the record, and import refuses a directory whose file
does not say what its events say, or whose ``map_frame.epoch`` is not its base epoch.

A provisional epoch's own scope is not part of the directory: its objects are not the
memory's (they are in the epoch's frame, and were never matched to the memory's). The epoch
is listed, with its status and its scope; export that scope as well (``scope=
"home/epochs/NAME"``) to keep what was seen in it, and import both into one store. Imported
alone, the epoch stays provisional, and its next scans start tracking it afresh. Because the
epoch names its scope, a directory holding a provisional epoch imports only under its own
scope name.

Versions. Import reads every format version up to :data:`FORMAT_VERSION`:

* 1 — no ``state/epochs.jsonl``, no ``counts.epochs``, no ``map_frame.epoch``. Its events
  still carry any map epochs, and an import restores them from there.
* 2 — adds them.

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
* Ids (objects, record seqs, commits) are file-wide in a store. The manifest gives the range
  of each (:mod:`locimem.interchange.load` checks them against the target store), at most
  :data:`MAX_IMPORT_ID`.
* The checksums are an *integrity* check, not an *authenticity* one: whoever can edit a file
  can recompute them. An export made with an HMAC key carries ``hmac_sha256``, an
  HMAC-SHA256 of the manifest's canonical JSON without its two checksum fields (the manifest
  lists every file's SHA-256, so it covers them all); import checks it with the same key and
  refuses a signed directory without one. Either way, import checks every row
  (:mod:`locimem.interchange.row_checks`) and validates the result before the target is
  touched.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import math
import os
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import numpy as np

from locimem.check import check_scope
from locimem.errors import (
    IntegrityError,
    InvalidInput,
    LocimemError,
    NotFound,
    SchemaVersionError,
)
from locimem.files import check_regular
from locimem.interchange.signing import (
    CANONICAL_JSON as _LINE,
)
from locimem.interchange.signing import (
    _check_signature,
    _manifest_digest,
    check_hmac_key,
)
from locimem.jsontext import one_shot
from locimem.memory.base import MAX_STORE_ID
from locimem.model import Event, EventKind
from locimem.progress import Progress
from locimem.store.sqlite.schema import SCHEMA_VERSION

__all__ = ["FORMAT", "FORMAT_VERSION", "MAX_IMPORT_ID", "FileEntry", "Manifest", "check_directory",
           "epoch_lines", "read_memory", "verify_directory"]

FORMAT = "locimem-memory"
FORMAT_VERSION = 2
"""The format version export writes. Import reads every version from 1 to this one."""
MANIFEST = "manifest.json"
MEMORY = "memory.json"
EPOCHS = "state/epochs.jsonl"
EPOCHS_SINCE = 2  # the first format version with EPOCHS
OBSERVATION_EMBEDDINGS = "embeddings/observations.npy"
OBJECT_EMBEDDINGS = "embeddings/objects.npy"
BATCH_ROWS = 10_000
CHUNK_BYTES = 1 << 20
ID_KINDS = ("commit", "seq", "object")
MAX_IMPORT_ID = MAX_STORE_ID
"""The largest id (commit, record seq or object) a directory may hold: exact as a JSON number
in every language. It is also the largest id a store writes (a commit that would pass it is
refused, see :data:`locimem.memory.base.MAX_STORE_ID`), so every export of every scope of a
store imports again — even of a store that imported a directory at the ceiling."""
_AGAIN = "export the memory again, or copy the directory again from where it was made"




_encode_value = one_shot(_LINE)
"""``_line`` of one value, faster."""


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
           "together:j miss_credits:j", "id"),
    _table("observations", "log/observations.jsonl",
           "seq commit_id t idx object_id label confidence cx cy cz sx sy sz weight tier "
           "rejected track_id orientation:j feature:f32 key", "seq", OBSERVATION_EMBEDDINGS),
    _table("events", "log/events.jsonl", "seq commit_id t kind object_id label data:j", "seq"),
    _table("objects", "state/objects.jsonl",
           "id label cx cy cz sx sy sz px py pz first_seen last_seen n_detections promoted lost "
           "lost_at track_id orientation:j label_mass:pairs feature:f64 n_features pinned_label "
           "attributes:j n_missed place_sx place_sy place_sz place_t seen_camera absence_s "
           "held:j together:j merged_from:j source label_by belief:j", "id", OBJECT_EMBEDDINGS),
    _table("tombstones", "state/tombstones.jsonl", "id forgotten_at data:j", "id"),
    _table("rejection_keys", "state/rejection_keys.jsonl",
           "key reason count first_seq last_seq last_t", "key"),
    _table("scene", "state/scene.jsonl", "rooms:j", "rooms"),
    _table("checkpoints", "state/checkpoints.jsonl", "commit_id t state:z", "commit_id"),
    _table("prior_map", "state/prior_map.jsonl", "id data:j", "id"),
    _table("deltas", "state/deltas.jsonl", "id object_id status data:j", "id"),
    _table("keyframes", "state/keyframes.jsonl", "object_id data:j", "object_id"),
)
# (schema version, table, column): columns added after the first version, NULL in a directory
# written before that version
ADDED_COLUMNS = ((3, "commits", "miss_credits"), (3, "objects", "belief"))
_EMBEDDING_DTYPES: dict[str, np.dtype] = {OBSERVATION_EMBEDDINGS: np.dtype(np.float32),
                                         OBJECT_EMBEDDINGS: np.dtype(np.float64)}
FILES = tuple(sorted([MEMORY, EPOCHS, *(t.file for t in TABLES), *_EMBEDDING_DTYPES]))
"""Every file of a memory directory besides ``manifest.json`` (of the current version)."""
COUNTS = (*(t.name for t in TABLES), "observation_embeddings", "object_embeddings", "epochs")


def files_of(version: int) -> tuple[str, ...]:
    """The files (besides the manifest) of a directory of format ``version``."""
    return FILES if version >= EPOCHS_SINCE else tuple(f for f in FILES if f != EPOCHS)


def counts_of(version: int) -> tuple[str, ...]:
    """The counts the manifest of format ``version`` gives."""
    return COUNTS if version >= EPOCHS_SINCE else tuple(c for c in COUNTS if c != "epochs")


EPOCH_FIELDS = ("name", "status", "since", "transform", "yaw_deg", "residual_m", "inliers",
                "scope", "source")
"""The keys of a line of ``state/epochs.jsonl``."""


def epoch_lines(events: Iterable[Event]) -> list[dict[str, Any]]:
    """The lines of ``state/epochs.jsonl`` for a scope's ``MAP_EPOCH`` and ``MAP_ALIGNED``
    events (in seq order): each epoch folded as the memory folds it
    (:func:`~locimem.tracker.apply.apply_epoch`), oldest first, with the actor of its latest
    ``MAP_ALIGNED`` as ``source``."""
    from locimem.tracker.apply import apply_epoch

    folded = SimpleNamespace(epochs={})
    source: dict[str, Any] = {}
    for ev in events:
        apply_epoch(folded, ev)  # type: ignore[arg-type]
        if ev.kind is EventKind.MAP_ALIGNED:
            source[ev.data["epoch"]] = ev.data.get("actor")
    out = []
    for epoch in sorted(folded.epochs.values(), key=lambda e: (e.since, e.name)):
        line = {**epoch.to_dict(), "source": source.get(epoch.name)}
        out.append({k: line[k] for k in EPOCH_FIELDS})
    return out


# -- the manifest ----------------------------------------------------------------------------
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
    up axis, quaternion order, and from format 2 on ``epoch``: the memory's frame's map
    epoch, or None); ``epoch`` that epoch (None also for a format-1 directory, which does not
    say).
    """

    directory: Path
    format_version: int
    schema_version: int
    scope: str
    scene: str | None
    map_frame: dict[str, Any]
    created_at: float | None
    memory_version: dict[str, Any]
    counts: dict[str, int]
    ids: dict[str, tuple[int, int] | None]
    files: dict[str, FileEntry]
    hmac_sha256: str | None = None  # the signature of a signed export (manifest_signature)
    raw: dict[str, Any] | None = field(default=None, repr=False, compare=False)  # as read

    @property
    def epoch(self) -> str | None:
        return self.map_frame.get("epoch")


# -- shared by writing, checking and reading -------------------------------------------------
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
                     progress: Progress | None = None,
                     hmac_key: bytes | None = None, check_signature: bool = True) -> Manifest:
    """Check a memory directory — the manifest, and the size and SHA-256 of every file — and
    return its manifest.

    The checksums prove *integrity* (the files are as the manifest lists them), not
    *authenticity*: whoever edits a file can recompute them. A directory exported with
    ``hmac_key`` carries an HMAC-SHA256 signature of its manifest (``hmac_sha256``); pass the
    same key to check it. A signed directory is refused without the key, an unsigned one
    when a key is given. ``check_signature=False`` checks integrity only when no key is given
    (``validate`` does, and says so).

    Raises:
        NotFound: no directory there.
        IntegrityError: a file is missing, extra, truncated or changed, or the manifest is
            damaged or was edited (the message names the first problem and counts the rest;
            :func:`check_directory` lists them all); the signature is missing, unexpected or
            does not match ``hmac_key``.
        SchemaVersionError: the directory was written by a newer locimem.
    """
    path = Path(directory)
    key = None if hmac_key is None else check_hmac_key(hmac_key)
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
    if check_signature or key is not None:
        _check_signature(path, manifest.raw or {}, key)
    return manifest


def _inspect(path: Path, progress: Progress | None
             ) -> tuple[Manifest | None, list[_Problem]]:
    if not path.is_dir():
        what = "it is not a directory" if path.exists() else "nothing is there"
        return None, [_Problem(f"no memory directory at {str(path)!r} ({what})", NotFound)]
    problems: list[_Problem] = []
    manifest = _read_manifest(path, problems)
    expected = FILES if manifest is None else files_of(manifest.format_version)
    present = set()
    irregular: set[str] = set()
    folders = {name.split("/")[0] for name in expected if "/" in name}
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
            try:
                check_regular(Path(root) / name, f"the directory's {rel}",
                              "a memory directory holds only regular files")
            except (InvalidInput, OSError) as exc:  # a FIFO would hang the hashing below
                irregular.add(rel)
                problems.append(_Problem(str(exc) if isinstance(exc, InvalidInput) else
                                         f"{rel} cannot be read: {exc.strerror or exc}"))
                continue
            if rel != MANIFEST and rel not in expected:
                problems.append(_Problem(f"{rel} is not part of a memory directory (an extra "
                                         "file: remove it)"))
    problems += [_Problem(f"{name} is missing") for name in expected if name not in present]
    if manifest is None:
        return None, problems
    to_hash = []
    for name, entry in manifest.files.items():
        if name not in present or name in irregular:
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

    version = integer(doc["format_version"], "format_version", 1)
    names = files_of(version)
    files = doc["files"]
    if not isinstance(files, dict) or sorted(files) != list(names):
        listed = sorted(files) if isinstance(files, dict) else files
        raise ValueError(f"files should list {', '.join(names)}; it lists {listed!r}")
    entries = {}
    for name, e in files.items():
        digest = e["sha256"]
        if not isinstance(digest, str) or len(digest) != 64 or digest.strip("0123456789abcdef"):
            raise ValueError(f"the SHA-256 of {name} is not 64 hex digits")
        entries[name] = FileEntry(digest, integer(e["bytes"], f"the size of {name}"))
    counts = doc["counts"]
    kinds = counts_of(version)
    if not isinstance(counts, dict) or sorted(counts) != sorted(kinds):
        raise ValueError(f"counts should give {', '.join(kinds)}")
    ids: dict[str, tuple[int, int] | None] = {}
    for kind in ID_KINDS:
        r = doc["ids"][kind]
        if r is not None:
            lo, hi = integer(r[0], f"ids.{kind}"), integer(r[1], f"ids.{kind}")
            if lo > hi or len(r) != 2:
                raise ValueError(f"ids.{kind} should be [lowest, highest], got {r!r}")
            if hi > MAX_IMPORT_ID:
                raise ValueError(f"ids.{kind} go up to {hi}, past the largest id an import "
                                 f"takes ({MAX_IMPORT_ID} = 2**53)")
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
    if version >= EPOCHS_SINCE:
        epoch = doc["map_frame"]["epoch"]
        if epoch is not None and not isinstance(epoch, str):
            raise ValueError(f"map_frame.epoch should be a map epoch's name or null, got "
                             f"{epoch!r}")
    return Manifest(
        directory=path, format_version=version,
        schema_version=doc["schema_version"], scope=check_scope(doc["scope"]), scene=scene,
        map_frame=doc["map_frame"], created_at=None if created is None else float(created),
        memory_version=doc["memory_version"],
        counts={k: integer(counts[k], f"counts.{k}") for k in kinds}, ids=ids, files=entries,
        hmac_sha256=doc.get("hmac_sha256") if isinstance(doc.get("hmac_sha256"), str) else None,
        raw=doc)


def read_memory(directory: str | os.PathLike[str], *, hmac_key: bytes | None = None
                ) -> tuple[Manifest, dict[str, Any]]:
    """The directory's manifest and its ``memory.json`` (the readable picture: objects with
    level, source, pose, box, parents and children; relations; rooms; anchors; the prior map
    and deltas), after every checksum (and the signature, with ``hmac_key``) was verified.
    This is what ``locimem import --prior`` loads as a prior map.

    Raises:
        IntegrityError: as :func:`verify_directory`, or ``memory.json`` is not a JSON object
            (too deeply nested, not JSON, or without an ``objects`` list).
    """
    manifest = verify_directory(directory, hmac_key=hmac_key)
    try:
        data = _loads((Path(directory) / MEMORY).read_bytes().decode("utf-8"))
    except (ValueError, RecursionError) as exc:
        reason = "it is nested too deeply" if isinstance(exc, RecursionError) else str(exc)
        raise IntegrityError(f"{MEMORY} of {str(directory)!r} is not readable JSON "
                             f"({reason}); {_AGAIN}") from None
    if not isinstance(data, dict) or not isinstance(data.get("objects"), list):
        raise IntegrityError(f"{MEMORY} of {str(directory)!r} is not a memory picture (it "
                             f"should be an object with an 'objects' list); {_AGAIN}")
    return manifest, data
