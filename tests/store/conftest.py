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


@dataclass(frozen=True)
class Backend:
    """How the suite makes stores of one backend.

    ``new(tmp_path)`` makes an empty, writable store; ``reopen(store, read_only=...)`` opens
    the same store again (another connection, as another process would), or is None for a
    backend whose stores live and die with their one connection; ``open_copy(target)`` opens
    what :meth:`Store.backup` wrote at ``target``, read-only."""

    name: str
    new: Callable[[Path], Store]
    reopen: Callable[..., Store] | None
    open_copy: Callable[[str | os.PathLike[str]], Store]


def _sqlite_reopen(store: Store, *, read_only: bool) -> Store:
    return SQLiteStore(store.path, read_only=read_only)


def _sqlite_copy(target: str | os.PathLike[str]) -> Store:
    return SQLiteStore(target, read_only=True)


BACKENDS = {
    "sqlite-file": Backend("sqlite-file", lambda tmp: SQLiteStore(tmp / "contract.loci"),
                           _sqlite_reopen, _sqlite_copy),
    "sqlite-memory": Backend("sqlite-memory", lambda tmp: SQLiteStore(MEMORY), None,
                             _sqlite_copy),
}


@pytest.fixture(params=list(BACKENDS))
def backend(request: pytest.FixtureRequest) -> Backend:
    return BACKENDS[request.param]


@pytest.fixture(params=[name for name, b in BACKENDS.items() if b.reopen is not None])
def shared_backend(request: pytest.FixtureRequest) -> Backend:
    """The backends whose stores another connection can open (readers beside a writer)."""
    return BACKENDS[request.param]


@pytest.fixture
def store(backend: Backend, tmp_path: Path) -> Iterator[Store]:
    """An empty, writable store of each backend."""
    s = backend.new(tmp_path)
    yield s
    s.close()
