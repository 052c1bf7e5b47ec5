"""The store contract's fixtures: every test of ``tests/store/test_contract.py`` runs once per
backend. A backend is one :class:`Backend` in :data:`BACKENDS` — to run the suite against
PostgreSQL, add its factory there (and, if it persists, ``reopen``).

The contract tests write hand-made records that no tracker decided, so their stores are not
validated when they close (``validate`` replays the log against the cache)."""

from __future__ import annotations

import os
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from locimem.store.base import Store
from locimem.store.sqlite import MEMORY, SQLiteStore
from tests import pg


@dataclass(frozen=True)
class Backend:
    """How the suite makes stores of one backend.

    ``new(tmp_path)`` makes an empty, writable store; ``reopen(store, read_only=...)`` opens
    the same store again (another connection, as another process would), or is None for a
    backend whose stores live and die with their one connection; ``open_copy(target)`` opens
    what :meth:`Store.backup` wrote at ``target``, read-only; ``copy_target(tmp_path)`` names
    a new place for a backup (a file; for PostgreSQL, a new schema)."""

    name: str
    new: Callable[[Path], Store]
    reopen: Callable[..., Store] | None
    open_copy: Callable[[str | os.PathLike[str]], Store]
    copy_target: Callable[[Path], str | os.PathLike[str]] = lambda tmp: tmp / "copy.loci"


def _sqlite_reopen(store: Store, *, read_only: bool) -> Store:
    return SQLiteStore(store.path, read_only=read_only)


def _sqlite_copy(target: str | os.PathLike[str]) -> Store:
    return SQLiteStore(target, read_only=True)


def _pg_new(tmp: Path) -> Store:
    from locimem.store.postgres import PostgresStore

    return PostgresStore(pg.new_url("contract"))


def _pg_reopen(store: Store, *, read_only: bool) -> Store:
    from locimem.store.postgres import PostgresStore

    return PostgresStore(store.url, read_only=read_only)  # type: ignore[attr-defined]


def _pg_copy(target: str | os.PathLike[str]) -> Store:
    from locimem.store.postgres import PostgresStore

    return PostgresStore(str(target), read_only=True)


BACKENDS = {
    "sqlite-file": Backend("sqlite-file", lambda tmp: SQLiteStore(tmp / "contract.loci"),
                           _sqlite_reopen, _sqlite_copy),
    "sqlite-memory": Backend("sqlite-memory", lambda tmp: SQLiteStore(MEMORY), None,
                             _sqlite_copy),
    # a fresh schema per store; skipped (with the reason) without LOCIMEM_TEST_POSTGRES
    "postgres": Backend("postgres", _pg_new, _pg_reopen, _pg_copy,
                        lambda tmp: pg.new_url("copy")),
}


def _marks(name: str) -> list[pytest.MarkDecorator]:
    return [pg.needs_postgres] if name == "postgres" else []


def _params(names: list[str]) -> list[object]:
    return [pytest.param(n, id=n, marks=_marks(n)) for n in names]


@pytest.fixture(params=_params(list(BACKENDS)))
def backend(request: pytest.FixtureRequest) -> Backend:
    return BACKENDS[request.param]


@pytest.fixture(params=_params([name for name, b in BACKENDS.items() if b.reopen is not None]))
def shared_backend(request: pytest.FixtureRequest) -> Backend:
    """The backends whose stores another connection can open (readers beside a writer)."""
    return BACKENDS[request.param]


@pytest.fixture
def store(backend: Backend, tmp_path: Path) -> Iterator[Store]:
    """An empty, writable store of each backend."""
    s = backend.new(tmp_path)
    yield s
    s.close()
