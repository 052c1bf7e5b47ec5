"""Reading a memory directory into a store: :func:`import_memory`.

Everything is checked before a row reaches the target — the directory
(:func:`~locimem.interchange.directory.verify_directory`: checksums, and the HMAC signature
when a key is given), then every row's types and domain
(:mod:`locimem.interchange.row_checks`) as it goes into a *scratch* store beside the target,
then the scratch store as a whole (:func:`~locimem.interchange.validate.validate_store`), then
the target store — and only then are the rows copied into the target, as they were exported,
in one transaction: nothing is replayed. The format itself is
:mod:`locimem.interchange.directory`.

Ids (objects, record seqs, commits) are file-wide in a store. The manifest gives the range of
each; import refuses a directory whose ids collide with rows already in the target (an exact
check when the ranges overlap, so two scopes that were written interleaved in one file can be
put back together).
"""

from __future__ import annotations

import contextlib
import json
import math
import os
import secrets
import sqlite3
import tempfile
import time
from collections.abc import Generator, Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from locimem.check import check_scope
from locimem.errors import IntegrityError, InvalidInput, NotFound, ScopeError
from locimem.interchange import store_check
from locimem.interchange.directory import (
    _AGAIN,
    BATCH_ROWS,
    EPOCHS,
    EPOCHS_SINCE,
    TABLES,
    Manifest,
    Progress,
    _fsync_directory,
    _loads,
    _Table,
    _Ticks,
    epoch_lines,
    verify_directory,
)
from locimem.interchange.rows_in import ID_COLUMNS, NpyReader, RowReader
from locimem.interchange.signing import canonical_line as _line
from locimem.interchange.store_file import _read_only, _store_version
from locimem.store.base import RowsRejected, is_postgres_url
from locimem.store.sqlite import SQLiteStore
from locimem.tracker.apply import EPOCH_KINDS
from locimem.tracker.load import gc_paused, replay_stale_cache

if TYPE_CHECKING:
    from locimem.integrity.checker import ValidationReport

__all__ = ["ImportReport", "import_memory"]

_EPOCH_KINDS = [k.value for k in sorted(EPOCH_KINDS)]

_TARGET_IDS = {  # the ids a store already uses in a range, whatever their scope
    "commit": ("SELECT id FROM commits WHERE id BETWEEN ? AND ?",),
    "seq": ("SELECT seq FROM observations WHERE seq BETWEEN ? AND ?",
            "SELECT seq FROM events WHERE seq BETWEEN ? AND ?"),
    "object": ("SELECT id FROM objects WHERE id BETWEEN ? AND ?",
               "SELECT id FROM tombstones WHERE id BETWEEN ? AND ?",
               "SELECT DISTINCT object_id FROM events WHERE object_id BETWEEN ? AND ? "
               "AND object_id != 0"),
}


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


def import_memory(directory: str | os.PathLike[str], store_path: str | os.PathLike[str], *,
                  scope: str | None = None, progress: Progress | None = None,
                  hmac_key: bytes | None = None) -> ImportReport:
    """Put a memory directory into the store at ``store_path``, under its own scope or under
    ``scope``.

    Everything is checked first — the manifest and the size and SHA-256 of every file (and,
    with ``hmac_key``, the manifest's HMAC-SHA256 signature: the checksums prove integrity, the
    signature authenticity), every row's types and domain as it goes into a scratch store
    beside ``store_path``, every rule of ``validate`` on that scratch store, and that the
    target has no data for the scope and no rows with the directory's ids — and then every row
    goes into the target in one transaction, as it was exported: nothing is replayed, and a
    refused or failed import writes nothing. A new store is the scratch store, renamed into
    place when complete (it takes the exported store's ``created_at``). An existing store of
    an older schema is migrated first, with a backup (see
    :class:`~locimem.store.sqlite.SQLiteStore`).

    Raises:
        NotFound: no directory there, or the directory of ``store_path`` does not exist.
        IntegrityError: the directory is damaged, incomplete or was edited; a row is of the
            wrong type or outside locimem's domain; the imported memory does not pass
            ``validate``; the directory is signed and ``hmac_key`` is missing or wrong, or a
            key is given and it is not signed.
        InvalidInput: ``hmac_key`` is not bytes of at least 16.
        SchemaVersionError: the directory, or the store, is from a newer locimem.
        ScopeError: the store already has data for the scope, or rows with the directory's
            ids (it came from this store, or a copy of it): import into a new store.
        StoreLocked: the store is open for writing.
        NotAStore: ``store_path`` is not a locimem store.
    """
    return _import_memory(directory, store_path, scope=scope, progress=progress,
                          hmac_key=hmac_key, check_signature=True)


def _import_memory(directory: str | os.PathLike[str], store_path: str | os.PathLike[str], *,
                   scope: str | None, progress: Progress | None, hmac_key: bytes | None,
                   check_signature: bool, validated: list[ValidationReport] | None = None
                   ) -> ImportReport:
    """:func:`import_memory`; with ``validated`` (a new store only), the validation of the
    imported store is the full one (``integrity_check``, not ``quick_check``), and its report
    is appended there — for :func:`~locimem.interchange.validate.validate_directory`, which
    would otherwise validate the same store again."""
    if is_postgres_url(store_path):
        return _import_into_server(directory, str(store_path), scope=scope, progress=progress,
                                   hmac_key=hmac_key, check_signature=check_signature)
    started = time.perf_counter()
    source = Path(directory)
    manifest = verify_directory(source, progress=progress, hmac_key=hmac_key,
                                check_signature=check_signature)
    target_scope = manifest.scope if scope is None else check_scope(scope)
    dest = Path(store_path)
    if not dest.parent.is_dir():
        raise NotFound(f"cannot import into {str(dest)!r}: the directory {str(dest.parent)!r} "
                       "does not exist")
    if dest.is_dir():
        raise InvalidInput(f"{str(dest)!r} is a directory; name the store file to import into")
    if not (dest.exists() and dest.stat().st_size > 0):
        counts = _import_new(source, manifest, dest, target_scope, progress, validated)
        return ImportReport(store=dest, scope=target_scope, counts=counts, created=True,
                            seconds=time.perf_counter() - started)
    with contextlib.closing(_read_only(dest)) as probe:
        version = _store_version(probe, dest)
        _check_target(probe, dest, manifest, target_scope)  # before anything is opened writable
    scratch = _scratch_path(dest)
    try:
        counts = _build_scratch(source, manifest, scratch, target_scope, progress,
                                created_at=False)
        store = SQLiteStore(dest)
        try:
            replay_stale_cache(store)  # a store this open migrated: its cache first
            _copy_scratch(store, scratch, dest, manifest, target_scope)
            backup = store.backup_path
        finally:
            store.close()
    finally:
        _remove_store_files(scratch)
    return ImportReport(store=dest, scope=target_scope, counts=counts, created=False,
                        seconds=time.perf_counter() - started,
                        migrated_from=version if backup is not None else None,
                        backup_path=backup)


def _import_into_server(directory: str | os.PathLike[str], url: str, *, scope: str | None,
                        progress: Progress | None, hmac_key: bytes | None,
                        check_signature: bool) -> ImportReport:
    """Import into a PostgreSQL store: every check of a file import, into a new scratch SQLite
    file, then that file's scope copied into the server in one transaction
    (:func:`~locimem.interchange.move.copy_scope`; refused if the scope is there)."""
    from locimem.interchange.move import copy_scope, open_store

    started = time.perf_counter()
    with tempfile.TemporaryDirectory(prefix="locimem-import-") as folder:
        scratch = Path(folder) / "scratch.loci"
        report = _import_memory(directory, scratch, scope=scope, progress=progress,
                                hmac_key=hmac_key, check_signature=check_signature)
        with contextlib.closing(open_store(url)) as target:
            if target.head(report.scope):
                raise ScopeError(f"{target.path!r} already has scope {report.scope!r}; "
                                 "nothing was imported")
            with contextlib.closing(SQLiteStore(scratch, read_only=True)) as src:
                copy_scope(src, target, report.scope)
            where = target.path
    return ImportReport(store=where, scope=report.scope, counts=report.counts,  # type: ignore[arg-type]
                        created=False, seconds=time.perf_counter() - started)


def _scratch_path(dest: Path) -> Path:
    return dest.parent / f".{dest.name}.{secrets.token_hex(4)}.importing"


def _remove_store_files(path: Path) -> None:
    for leftover in (path, *(Path(f"{path}{s}") for s in ("-wal", "-shm", "-writer"))):
        leftover.unlink(missing_ok=True)


def _build_scratch(source: Path, manifest: Manifest, path: Path, scope: str,
                   progress: Progress | None, *, created_at: bool,
                   validated: list[ValidationReport] | None = None) -> dict[str, int]:
    """Import the directory into a new store at ``path`` (rows checked one by one), then
    validate that store; raise :class:`IntegrityError` when it does not pass. With
    ``validated``, the validation is the full one and its report is appended there."""
    store = SQLiteStore(path)
    try:
        meta = {}
        if created_at and manifest.created_at is not None:
            meta["created_at"] = repr(manifest.created_at)
        counts = _insert_all(store, source, manifest, scope, progress, meta)
        counts.update(_check_epochs(store, source, manifest, scope))
        store.conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    finally:
        store.close()
    report = store_check.validate_store(path, quick=validated is None)
    if validated is not None:
        validated.append(report)
    if not report.ok:
        first = report.violations[0]
        more = len(report.violations) - 1
        raise IntegrityError(
            f"{str(source)!r} does not pass validation as imported ([{first.rule}] "
            f"{first.message}{f'; {more} more violation' + 's' * (more > 1) if more else ''});"
            f" nothing was imported — {_AGAIN}")
    return counts


def _check_epochs(store: SQLiteStore, source: Path, manifest: Manifest, scope: str
                  ) -> dict[str, int]:
    """Check the directory's map epochs against its events, as imported into ``store``: its
    ``state/epochs.jsonl`` must be what the events say (line for line) and its
    ``map_frame.epoch`` their base epoch (format 2 on; a format-1 directory has neither), and
    a provisional epoch must be tracked in ``scope``'s own epoch scope (it names that scope:
    imported under another name, its next scans would go into another memory's). Returns
    ``{"epochs": n}`` (nothing for format 1)."""
    found = epoch_lines(store.events(scope, kind=_EPOCH_KINDS))
    for epoch in found:
        if epoch["status"] == "provisional" and \
                epoch["scope"] != f"{scope}/epochs/{epoch['name']}":
            raise IntegrityError(
                f"{str(source)!r} holds map epoch {epoch['name']!r}, still provisional and "
                f"tracked in scope {epoch['scope']!r}: it cannot be imported as scope "
                f"{scope!r} (its next scans would go into that scope, another memory's); "
                f"import it under its own name ({manifest.scope!r}), or align the epoch "
                "(align_epoch) and export it again; nothing was imported")
    if manifest.format_version < EPOCHS_SINCE:
        return {}
    where = f"{str(source)!r}"
    base = next((e["name"] for e in found if e["status"] == "base"), None)
    if manifest.epoch != base:
        raise IntegrityError(
            f"the manifest of {where} says the memory's frame is map epoch "
            f"{manifest.epoch!r}, but its events make it {base!r} (the base epoch); nothing "
            f"was imported — {_AGAIN}")
    listed = []
    with open(source.joinpath(*EPOCHS.split("/")), "rb") as f:
        for n, line in enumerate(f, start=1):
            try:
                doc = _loads(line.decode("utf-8"))
            except (ValueError, RecursionError) as exc:
                raise IntegrityError(f"{EPOCHS} line {n} is not JSON ({exc}); nothing was "
                                     f"imported — {_AGAIN}") from None
            listed.append(doc)
    if len(listed) != manifest.counts["epochs"]:
        raise IntegrityError(f"{EPOCHS} has {len(listed)} lines, the manifest says "
                             f"{manifest.counts['epochs']}; nothing was imported — {_AGAIN}")
    for n, (said, recorded) in enumerate(zip(listed, found, strict=False), start=1):
        if said != recorded:
            name = recorded["name"]
            fields = [] if not isinstance(said, dict) else sorted(
                k for k in {*said, *recorded} if said.get(k, ...) != recorded.get(k, ...))
            what = f" (they differ in {', '.join(fields)})" if fields else ""
            raise IntegrityError(
                f"{EPOCHS} line {n} does not say what the events (MAP_EPOCH, MAP_ALIGNED) of "
                f"{where} say of map epoch {name!r}{what}: it says {_line(said)}, the events "
                f"{_line(recorded)}; nothing was imported — {_AGAIN}")
    if len(listed) != len(found):
        names = [e["name"] for e in found]
        raise IntegrityError(
            f"{EPOCHS} lists {len(listed)} map epochs, the events of {where} record "
            f"{len(found)} ({', '.join(names) or 'none'}); nothing was imported — {_AGAIN}")
    return {"epochs": len(listed)}


def _copy_scratch(store: SQLiteStore, scratch: Path, dest: Path, manifest: Manifest,
                  scope: str) -> None:
    """Copy every row of a validated scratch store into ``store`` in one transaction, after
    checking the target again under its writer lock."""
    conn = store.conn
    conn.execute("ATTACH DATABASE ? AS scratch", (str(scratch),))
    try:
        with store.atomic() as c:
            _check_target(c, dest, manifest, scope)  # again, under the writer lock
            for table in TABLES:
                cols = ", ".join(("scope", *table.columns))
                c.execute(f"INSERT INTO main.{table.name} ({cols}) SELECT {cols} FROM "
                          f"scratch.{table.name} ORDER BY {table.key}")
    finally:
        conn.execute("DETACH DATABASE scratch")


def _import_new(source: Path, manifest: Manifest, dest: Path, scope: str,
                progress: Progress | None,
                validated: list[ValidationReport] | None = None) -> dict[str, int]:
    """Build a new store in a temporary file beside ``dest`` and validate it; rename it into
    place."""
    temp = _scratch_path(dest)
    try:
        counts = _build_scratch(source, manifest, temp, scope, progress, created_at=True,
                                validated=validated)
        if dest.exists() and dest.stat().st_size > 0:
            raise InvalidInput(f"{str(dest)!r} appeared while the memory was being imported; "
                               "nothing was written to it — import again")
        os.replace(temp, dest)
        _fsync_directory(dest.parent)
    finally:
        _remove_store_files(temp)
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
        for table_name, column in ID_COLUMNS[kind]:
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


def _insert_all(store: SQLiteStore, directory: Path, manifest: Manifest, scope: str,
                progress: Progress | None, meta: dict[str, str]) -> dict[str, int]:
    """Insert every row of the directory under ``scope``, and ``meta``, in one bulk load
    (each table's rows checked as the store takes them)."""
    ticks = _Ticks(progress, sum(math.ceil(manifest.counts[t.name] / BATCH_ROWS)
                                 for t in TABLES))
    counts: dict[str, int] = {}
    reading: list[tuple[_Table, RowReader]] = []  # the table being loaded, and its reader

    def tables() -> Generator[tuple[str, tuple[str, ...], Iterator[tuple[Any, ...]]], None, None]:
        for table in TABLES:
            with contextlib.ExitStack() as stack:
                matrix = None
                if table.embeddings is not None:
                    matrix = stack.enter_context(NpyReader(
                        directory, table.embeddings,
                        manifest.counts[f"{table.name[:-1]}_embeddings"]))
                f = stack.enter_context(open(directory.joinpath(*table.file.split("/")), "rb"))
                reader = RowReader(table, manifest, scope, matrix, ticks,
                                    store.column_types(table.name))
                reading[:] = [(table, reader)]
                yield table.name, ("scope", *table.columns), reader.rows(f)
                # the store has taken every row of the table
                if reader.n != manifest.counts[table.name]:
                    raise IntegrityError(f"{table.file} has {reader.n} rows, the manifest says "
                                         f"{manifest.counts[table.name]}; nothing was imported "
                                         f"— {_AGAIN}")
                if matrix is not None:
                    matrix.finish()
                counts[table.name] = reader.n

    try:  # (the rows of a batch live together: the cyclic collector, run every few
        # hundred of them, would walk them all again and again — a fifth of the time)
        with contextlib.closing(tables()) as loading, gc_paused():  # files close on failure
            store.bulk_load(loading, meta=meta)
    except RowsRejected as exc:
        table, reader = reading[0]
        raise IntegrityError(
            f"{table.file} (line {reader.line()}) does not fit the store ({exc.reason}); nothing "
            f"was imported — {_AGAIN}") from None
    ticks.close()
    counts["observation_embeddings"] = manifest.counts["observation_embeddings"]
    counts["object_embeddings"] = manifest.counts["object_embeddings"]
    return counts
