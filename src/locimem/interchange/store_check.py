"""Checking a store by every rule: :func:`validate_store` — a SQLite file or open store
checked in place (:func:`locimem.integrity.sqlite.check_sqlite`), a server's scopes each
copied into a scratch file first. The rules are documented in
:mod:`locimem.interchange.validate`.
"""

from __future__ import annotations

import os

from locimem.errors import NotFound
from locimem.integrity.checker import ValidationReport
from locimem.integrity.sqlite import check_sqlite
from locimem.progress import Progress
from locimem.store.base import Store, is_postgres_url
from locimem.store.sqlite import SQLiteStore

__all__ = ["validate_store"]


def validate_store(store: Store | str | os.PathLike[str], *, scope: str | None = None,
                   quick: bool = False, progress: Progress | None = None) -> ValidationReport:
    """Check every rule (see :mod:`locimem.interchange.validate`) on ``store``: an open
    store, a path (opened read-only) or a PostgreSQL URL. Every scope, or only ``scope``.
    ``quick`` runs SQLite's ``quick_check`` instead of the full ``integrity_check``.

    Raises:
        NotFound: there is no file at the path, or no ``scope`` in it.
    """
    if is_postgres_url(store) or not isinstance(store, (SQLiteStore, str, os.PathLike)):
        return _validate_server(store, scope)  # type: ignore[arg-type]
    return check_sqlite(store, scope=scope, quick=quick, progress=progress)


def _validate_server(store: Store | str, scope: str | None) -> ValidationReport:
    """A server store (PostgreSQL): each scope is copied, as of one commit, into a scratch
    SQLite file (:func:`~locimem.interchange.move.scratch_copy`) and checked there by every
    rule; the server's own integrity is the server's (``sqlite_integrity`` then checks the
    copy). Violations name the scope they were found in."""
    from locimem.interchange.move import open_store, scratch_copy

    opened = open_store(store, read_only=True) if isinstance(store, str) else None
    src = opened if opened is not None else store
    try:
        scopes = src.scopes()  # type: ignore[union-attr]
        if scope is not None:
            if scope not in scopes:
                raise NotFound(f"no scope {scope!r} in {src.path!r}")  # type: ignore[union-attr]
            scopes = [scope]
        report = ValidationReport(src.path)  # type: ignore[union-attr]
        for name in scopes:
            with scratch_copy(src, name) as path:
                part = check_sqlite(path, quick=True)
            report.rules = part.rules
            report.violations += part.violations
            report.warnings += part.warnings
        report.scopes = tuple(scopes)
        return report
    finally:
        if opened is not None:
            opened.close()


