"""Fixtures: an in-memory memory (``mem``) and a path for an on-disk store (``store_path``)."""

from __future__ import annotations

import contextlib
import os
from collections.abc import Iterator
from pathlib import Path

import pytest
from hypothesis import settings

from locimem import ObjectMemory

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
