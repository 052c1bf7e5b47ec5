"""Fixtures: an in-memory memory (``mem``) and a path for an on-disk store (``store_path``).

Every writable store the suite opens is validated (``locimem.interchange.validate``) just before
it closes, on its own connection (``:memory:`` stores too), and a violation fails the test whose
run closed it (at teardown, so module-scoped fixtures count too). A test that damages its stores
on purpose opts out with ``@pytest.mark.no_validate``; ``LOCIMEM_TEST_VALIDATE=0`` turns the
hook off (to time the suite without it).
"""

from __future__ import annotations

import contextlib
import os
import weakref
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from hypothesis import settings

from locimem import ObjectMemory
from locimem.interchange.validate import validate_store
from locimem.store.sqlite import SQLiteStore

# CI explores a fixed set of examples (reproducible, never red by the luck of the draw);
# a developer's run draws new ones each time, which is how rare cases get found.
settings.register_profile("ci", derandomize=True, print_blob=True)
if os.environ.get("CI"):
    settings.load_profile("ci")

# onnxruntime must load before usearch (see locimem.index.vectors._import_usearch), whatever
# order the tests import them in
with contextlib.suppress(ImportError):
    import onnxruntime  # noqa: F401


@pytest.fixture
def mem() -> Iterator[ObjectMemory]:
    memory = ObjectMemory.open(":memory:", scope="test")
    try:
        yield memory
    finally:
        memory.close()


@pytest.fixture
def store_path(tmp_path: Path) -> Path:
    return tmp_path / "m.loci"


# -- every store the suite builds is validated when it closes ----------------------------------
_VALIDATE = os.environ.get("LOCIMEM_TEST_VALIDATE", "1") != "0"
_opened: weakref.WeakSet[SQLiteStore] = weakref.WeakSet()  # opened writable, not yet closed
_found: list[str] = []  # violations found since the running test's last report
_running: list[pytest.Item] = []
_patch = pytest.MonkeyPatch()


@pytest.fixture(scope="module")
def house_day_store(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A store (scope "home") holding :func:`tests.helpers.house_day`: the furnished house
    with a cup moved, a phone lost and keys dropped in the hall. One per test module."""
    from tests.helpers import house_day

    path = tmp_path_factory.mktemp("house") / "house.loci"
    with ObjectMemory.open(path, scope="home") as mem:
        house_day(mem)
    return path


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line(
        "markers", "no_validate: the test damages its stores on purpose; they are not "
                   "validated when they close")
    if not _VALIDATE:
        return
    init, close = SQLiteStore.__init__, SQLiteStore.close

    def validated_init(self: SQLiteStore, *args: Any, **kwargs: Any) -> None:
        init(self, *args, **kwargs)
        if not self.read_only:  # opened (and created or migrated) without an error
            _opened.add(self)

    def validating_close(self: SQLiteStore) -> None:
        if self in _opened:
            _opened.discard(self)
            _validate_before_close(self)
        close(self)

    _patch.setattr(SQLiteStore, "__init__", validated_init)
    _patch.setattr(SQLiteStore, "close", validating_close)


def pytest_unconfigure(config: pytest.Config) -> None:
    _patch.undo()
    from tests import pg

    pg.drop_all()  # the PostgreSQL schemas this run made


def _validate_before_close(store: SQLiteStore) -> None:
    item = _running[-1] if _running else None
    if item is not None and item.get_closest_marker("no_validate") is not None:
        return
    if store.conn is None or store.conn.in_transaction:  # closed, or mid-way through a write
        return
    try:
        report = validate_store(store, quick=True)
    except Exception as exc:  # pragma: no cover - validate_store reports, it does not raise
        _found.append(f"validate_store({store.path!r}) raised {type(exc).__name__}: {exc}")
        return
    if not report.ok:
        _found.append(str(report))


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_protocol(item: pytest.Item, nextitem: pytest.Item | None) -> Iterator[None]:
    _running.append(item)
    try:
        yield
    finally:
        _running.pop()


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item: pytest.Item, call: pytest.CallInfo[None]) -> Iterator[None]:
    outcome = yield
    if call.when != "teardown" or not _found:
        return
    report = outcome.get_result()
    text = "validate() found violations in a store this test closed:\n" + "\n".join(_found)
    _found.clear()
    if report.failed and report.longrepr:  # keep what else went wrong at teardown
        text = f"{report.longrepr}\n\n{text}"
    report.outcome = "failed"
    report.longrepr = text
