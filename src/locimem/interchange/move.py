"""Moving memories between stores and backends: SQLite files and PostgreSQL schemas.

:func:`migrate` copies every scope (or the ones named) of one store into another — a file into
a server, a server into files, or any pair — rows as stored, each scope from one committed
state of the source and in one transaction of the target, with progress. Nothing is decided or
replayed: the rows move in the *interchange encoding* (:meth:`Store.rows` gives it,
:meth:`Store.bulk_load` takes it), so the memory that arrives is the memory that left, and
``locimem export`` of either gives byte-identical directories.

Ids: a SQLite file allocates ids file-wide, PostgreSQL per scope. A PostgreSQL store's scopes
may therefore share ids, and two of them cannot go into one SQLite file — move each into its
own (:func:`migrate` with ``scopes=[...]``); the collision is refused before anything is
written.

The same copy serves the tools that read SQLite files directly: export, validate and
snapshots of a PostgreSQL scope work on a scratch SQLite copy of it
(:func:`scratch_copy`).

    >>> import tempfile, pathlib
    >>> from locimem import Detection, ObjectMemory
    >>> d = pathlib.Path(tempfile.mkdtemp())
    >>> with ObjectMemory.open(d / "a.loci", scope="home") as mem:
    ...     _ = mem.observe(0.0, [Detection("cup", 0.9, (1.0, 2.0, 0.8), (0.1, 0.1, 0.1))])
    >>> report = migrate(d / "a.loci", d / "b.loci")
    >>> report.scopes, report.rows["commits"], report.rows["observations"]
    (('home',), 1, 1)
"""

from __future__ import annotations

import contextlib
import os
import tempfile
import time
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from locimem.errors import NotFound, ScopeError
from locimem.interchange.directory import TABLES
from locimem.progress import Progress
from locimem.store import open_store
from locimem.store.base import RowsRejected, Store
from locimem.store.sqlite import SQLiteStore

__all__ = ["MigrationReport", "copy_scope", "migrate", "open_store", "scratch_copy"]

_META = ("created_at", "late_s")  # carried with the rows (the rest is each backend's own)


@dataclass
class MigrationReport:
    """What :func:`migrate` moved: the scopes, rows per table (all scopes), and the time."""

    source: str
    target: str
    scopes: tuple[str, ...] = ()
    rows: dict[str, int] = field(default_factory=dict)
    seconds: float = 0.0


def copy_scope(source: Store, target: Store, scope: str, *, progress: Progress | None = None,
               counts: dict[str, int] | None = None) -> None:
    """Copy one scope's rows from ``source`` (one committed state) into ``target`` (one
    transaction), with the source's creation time. ``counts`` (if given) adds the rows per
    table.

    Raises:
        NotFound: ``scope`` has no commit in ``source``.
        ScopeError: ``target`` has the scope already, or (a SQLite file) ids of another
            scope it holds collide with the scope's.
    """
    if target.head(scope):
        raise ScopeError(f"{target.path!r} already has scope {scope!r}; nothing was copied")
    tally = counts if counts is not None else {}
    with source.snapshot_read():
        if not source.head(scope):
            raise NotFound(f"no scope {scope!r} in {source.path!r} "
                           f"(scopes: {', '.join(map(repr, source.scopes())) or 'none'})")
        meta = {k: v for k, v in source.meta().items() if k in _META}
        steps = iter(TABLES) if progress is None else iter(progress(TABLES, total=len(TABLES)))

        def tables() -> Iterator[tuple[str, Sequence[str], Iterator[tuple[Any, ...]]]]:
            for table in steps:
                yield (table.name, ("scope", *table.columns),
                       _counted(tally, table.name,
                                ((scope, *row) for row in source.rows(table.name, scope,
                                                                       table.columns))))

        try:
            target.bulk_load(tables(), meta=meta)
        except RowsRejected as exc:
            raise ScopeError(
                f"scope {scope!r} does not fit {target.path!r} ({exc.reason}); a SQLite "
                "file's ids are file-wide, so scopes of a PostgreSQL store that share ids "
                "go into files of their own — nothing was copied") from None


def _counted(tally: dict[str, int], name: str, rows: Iterator[tuple[Any, ...]]
             ) -> Iterator[tuple[Any, ...]]:
    tally.setdefault(name, 0)
    for row in rows:
        tally[name] += 1
        yield row


def migrate(source: str | os.PathLike[str], target: str | os.PathLike[str], *,
            scopes: Sequence[str] | None = None, progress: Progress | None = None
            ) -> MigrationReport:
    """Copy ``scopes`` (default: every scope) of the store at ``source`` into the store at
    ``target`` (created if missing), scope by scope — a SQLite file or a
    ``postgresql://…?schema=…`` URL at either end. The source is only read (another process
    may keep writing; each scope is copied as of one commit).

    Raises:
        NotFound: no store at ``source``, or a named scope is not in it.
        ScopeError: ``target`` has one of the scopes already, or their ids collide there;
            the scopes copied before it stay copied (each is one transaction).
    """
    started = time.perf_counter()
    report = MigrationReport(str(source), str(target))
    with contextlib.closing(open_store(source, read_only=True)) as src, \
            contextlib.closing(open_store(target)) as dst:
        report.source, report.target = src.path, dst.path
        names = list(src.scopes()) if scopes is None else list(scopes)
        for scope in names:
            copy_scope(src, dst, scope, progress=progress, counts=report.rows)
        report.scopes = tuple(names)
    report.seconds = time.perf_counter() - started
    return report


@contextlib.contextmanager
def scratch_copy(source: str | os.PathLike[str] | Store, scope: str) -> Iterator[Path]:
    """A SQLite file holding one scope of ``source`` (a store, or its path or URL), in a
    temporary directory deleted afterwards: how the file tools — export, validate — read a
    PostgreSQL scope."""
    with tempfile.TemporaryDirectory(prefix="locimem-scratch-") as folder:
        path = Path(folder) / "scope.loci"
        if isinstance(source, (str, os.PathLike)):
            with contextlib.closing(open_store(source, read_only=True)) as src, \
                    contextlib.closing(SQLiteStore(path)) as dst:
                copy_scope(src, dst, scope)
        else:
            with contextlib.closing(SQLiteStore(path)) as dst:
                copy_scope(source, dst, scope)
        yield path
