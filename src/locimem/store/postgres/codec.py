"""Rows between PostgreSQL and the *interchange encoding* — SQLite's rows
(:mod:`locimem.store.sqlite.codec`), which bulk loads take and :meth:`rows` gives.

The two encodings differ in two ways only: embeddings are arrays here (``real[]`` for an
observation's float32 embedding, ``double precision[]`` for an object's float64 mean) and raw
bytes there; and flags are written as integers (SQLite reads Python booleans as 0/1,
PostgreSQL refuses them for an integer column). Everything else — canonical JSON text, zlib'd
checkpoints, floats — is stored as it is, so a row makes the round trip bit for bit.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

__all__ = ["FEATURE_DTYPES", "FLAG_COLUMNS", "from_pg", "to_pg", "to_pg_converter"]

FEATURE_DTYPES: dict[str, np.dtype[Any]] = {
    "observations": np.dtype(np.float32), "objects": np.dtype(np.float64)}
"""The dtype of each table's ``feature`` column (the embedding)."""
FLAG_COLUMNS = frozenset({"promoted", "lost", "seen_camera"})


def _feature_to_list(dtype: np.dtype) -> Any:
    def convert(value: Any) -> Any:
        if value is None or isinstance(value, list):
            return value
        return np.frombuffer(value, dtype=dtype).tolist()
    return convert


def _flag(value: Any) -> Any:
    return None if value is None else int(value)


def to_pg_converter(table: str, columns: Sequence[str]) -> Any:
    """A function turning one row of ``table`` (``columns``, interchange encoding) into the
    row PostgreSQL stores; None when no column needs converting."""
    fixes = []
    for i, column in enumerate(columns):
        if column == "feature" and table in FEATURE_DTYPES:
            fixes.append((i, _feature_to_list(FEATURE_DTYPES[table])))
        elif column in FLAG_COLUMNS and table == "objects":
            fixes.append((i, _flag))
    if not fixes:
        return None

    def convert(row: Sequence[Any]) -> tuple[Any, ...]:
        out = list(row)
        for i, fix in fixes:
            out[i] = fix(out[i])
        return tuple(out)
    return convert


def to_pg(table: str, columns: Sequence[str], rows: list[tuple[Any, ...]]
          ) -> list[tuple[Any, ...]]:
    """Rows of ``table`` in the interchange encoding, as PostgreSQL stores them."""
    convert = to_pg_converter(table, columns)
    return rows if convert is None else [convert(r) for r in rows]


def from_pg(table: str, columns: Sequence[str]) -> Any:
    """A function turning a stored row of ``table`` (``columns``) into the interchange
    encoding; None when the rows are already in it."""
    if "feature" not in columns or table not in FEATURE_DTYPES:
        return None
    i, dtype = list(columns).index("feature"), FEATURE_DTYPES[table]

    def convert(row: Sequence[Any]) -> tuple[Any, ...]:
        value = row[i]
        if value is None:
            return tuple(row)
        out = list(row)
        out[i] = np.asarray(value, dtype=dtype).tobytes()
        return tuple(out)
    return convert
