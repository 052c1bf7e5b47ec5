"""Fixtures: an in-memory memory (``mem``) and a path for an on-disk store (``store_path``)."""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from pathlib import Path

import pytest

from locimem import ObjectMemory

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
