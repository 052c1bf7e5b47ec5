"""Checking a store by every rule: :func:`validate_store` (a file, an open store, or a
server's scopes copied into scratch files). The rules are documented in
:mod:`locimem.interchange.validate`.
"""

from __future__ import annotations

import os
import sqlite3
from collections.abc import Callable
from pathlib import Path

from locimem.errors import NotFound
from locimem.interchange import rules_log, rules_state
from locimem.interchange.checker import Checker, ValidationReport, Violation
from locimem.progress import Progress
from locimem.store.base import Store, is_postgres_url
from locimem.store.sqlite import SQLiteStore

__all__ = ["CHECKS", "validate_store"]

# each rule's check: rules_log holds the file-level and log rules, rules_state the state rules
CHECKS: dict[str, Callable[..., None]] = {
    check.__name__: check for check in (*rules_log.CHECKS, *rules_state.CHECKS)}


def validate_store(store: Store | str | os.PathLike[str], *, scope: str | None = None,
                   quick: bool = False, progress: Progress | None = None) -> ValidationReport:
    """Check every rule (see the module docstring) on ``store``: an open store, checked on its
    own connection, or a path, opened read-only. Every scope in the file, or only ``scope``.
    ``quick`` runs SQLite's ``quick_check`` instead of the full ``integrity_check``.

    Raises:
        NotFound: there is no file at the path, or no ``scope`` in it.
    """
    if is_postgres_url(store) or not isinstance(store, (SQLiteStore, str, os.PathLike)):
        return _validate_server(store, scope)  # type: ignore[arg-type]
    if isinstance(store, SQLiteStore):
        if store.conn is None:
            raise NotFound(f"the store {store.path!r} is closed")
        return Checker(store.path, store.conn, lambda: store, scope, quick, CHECKS, progress).run()
    path = Path(store)
    if not path.is_file():
        raise NotFound(f"no store at {str(path)!r}")
    try:
        conn = sqlite3.connect(path.resolve().as_uri() + "?mode=ro", uri=True,
                               isolation_level=None)
    except sqlite3.Error as exc:
        return ValidationReport(str(path), [Violation("sqlite_integrity", (), str(exc))],
                                ("sqlite_integrity",))
    opened: list[SQLiteStore] = []

    def open_store() -> SQLiteStore:  # (after sqlite_integrity passed: the open's own
        # quick_check would only repeat it)
        opened.append(SQLiteStore(path, read_only=True, check="header"))
        return opened[-1]

    try:
        return Checker(str(path), conn, open_store, scope, quick, CHECKS, progress).run()
    finally:
        for s in opened:
            s.close()
        conn.close()


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
                part = validate_store(path, quick=True)
            report.rules = part.rules
            report.violations += part.violations
            report.warnings += part.warnings
        report.scopes = tuple(scopes)
        return report
    finally:
        if opened is not None:
            opened.close()


