"""Reading a memory directory's files back into rows for a store: :class:`RowReader` decodes
a table's JSON lines in batches, checking the columns, the key order, the ids against the
manifest's ranges and the embeddings' order as it goes; :class:`NpyReader` reads an embedding
matrix row by row. :mod:`locimem.interchange.load` drives them.
"""

from __future__ import annotations

import itertools
import operator
import os
import re
from collections.abc import Iterator
from pathlib import Path
from typing import IO, Any, NamedTuple

import numpy as np

from locimem.check import MAX_FEATURE_DIM
from locimem.errors import IntegrityError
from locimem.interchange.directory import (
    _AGAIN,
    _EMBEDDING_DTYPES,
    ADDED_COLUMNS,
    BATCH_ROWS,
    Manifest,
    _loads,
    _Table,
    _Ticks,
)
from locimem.interchange.row_checks import columns_fine, row_problem
from locimem.store.sqlite.codec import encode_checkpoint, encode_json, encode_json_ordered

__all__ = ["ID_COLUMNS", "NpyReader", "RowReader"]

_scan = _loads.__self__.scan_once  # type: ignore[attr-defined]  # one JSON value at an index
_INTS = frozenset({int})
_INT_OR_NONE = frozenset({int, type(None)})
_ROWS_IN_A_LINE = re.compile(r"\}\s*,\s*\{")  # (what joins two objects of an array)
ID_COLUMNS = {  # where each kind of id sits in the files (table, column)
    "commit": (("commits", "id"),),
    "seq": (("observations", "seq"), ("events", "seq")),
    "object": (("events", "object_id"), ("observations", "object_id"), ("objects", "id"),
               ("tombstones", "id")),
}


class _Batch(NamedTuple):
    """A batch's rows for the store, and the iterator of their first column (``scope``),
    whose length hint says how many rows have been taken."""

    rows: Iterator[tuple[Any, ...]]
    scopes: itertools.repeat[str]


class RowReader:
    """Decode a table's JSON lines into rows for the store, checking as it goes: the columns,
    keys in strictly increasing order, ids within the manifest's ranges, embeddings in
    order."""

    def __init__(self, table: _Table, manifest: Manifest, scope: str,
                 matrix: NpyReader | None, ticks: _Ticks,
                 types: dict[str, tuple[str, bool]]) -> None:
        self.table, self.scope, self.matrix, self.ticks = table, scope, matrix, ticks
        self.types = types
        self.columns = set(table.columns)
        # columns a directory of an older schema version does not have (they default to NULL)
        self.added = frozenset(c for v, name, c in ADDED_COLUMNS
                               if name == table.name and manifest.schema_version < v)
        self.n = 0
        self.ranges = []  # (column index, kind, (lo, hi) | None)
        for kind, places in ID_COLUMNS.items():
            for name, column in places:
                if name == table.name:
                    self.ranges.append((table.columns.index(column), kind, manifest.ids[kind]))
        self.key = table.columns.index(table.key)
        self.key_type = str if table.key == "key" else int
        self.last: Any = None  # the key of the last row read
        self.getters = [operator.itemgetter(c) for c in table.columns]
        self.specials = sorted(table.specials, key=lambda s: s[1] in ("f32", "f64"))
        self._matrix_at: int | None = None
        self._taking: tuple[itertools.repeat[str], int, int] | None = None  # see line()

    def _bad(self, what: str) -> IntegrityError:
        return IntegrityError(f"{self.table.file} line {self.n}: {what}; nothing was imported "
                              f"— {_AGAIN}")

    def rows(self, f: IO[bytes]) -> Iterator[tuple[Any, ...]]:
        """The rows of the file, for the store: each batch of lines checked and decoded a
        column at a time (:meth:`_batch`) when it can be; a batch it does not take (an odd
        line, a problem anywhere in it) goes line by line (:meth:`_lines`), which names the
        first problem and its line, as it always did."""
        while lines := list(itertools.islice(f, BATCH_ROWS)):
            batch = self._batch(lines)
            if batch is None:
                yield from self._lines(lines)
                continue
            if (self.n + len(lines)) // BATCH_ROWS > self.n // BATCH_ROWS:
                self.ticks.advance()
            self._taking = (batch.scopes, self.n, len(lines))
            yield from batch.rows  # (no Python frame a row: see line())
            self._taking = None
            self.n += len(lines)
        if self.n % BATCH_ROWS:
            self.ticks.advance()

    def line(self) -> int:
        """The line of the row the store took last (the one it refused, on RowsRejected):
        in a batch, one past the rows before it plus as many as its ``scope`` column (the
        first of each row's values) has handed out."""
        if self._taking is None:
            return self.n
        scopes, before, rows = self._taking
        return before + rows - operator.length_hint(scopes)

    def _batch(self, lines: list[bytes]) -> _Batch | None:
        """The rows of a batch of lines, every check of :meth:`_lines` made a column at a
        time; None when it is not taken as a whole (then nothing was read or changed)."""
        table, columns = self.table, self.table.columns
        if self.added or table.name == "scene" or len(columns) < 2:
            return None
        try:
            raw = b"".join(lines).decode("utf-8")
            text = raw.split("\n")
            if len(text) != len(lines) + 1 or text.pop():  # every line ends with a newline
                return None
            # the lines as one JSON array, in one call of the scanner (it then reads each key
            # once, not once a line). Each line is exactly one of its values: the array has one
            # object a line, and no line holds "}" "," "{" (spaces between allowed) — without
            # it no comma between two objects can come from inside a line, so the n - 1
            # commas joining the lines are the array's n - 1 separators
            joined = "[" + ",".join(text) + "]"
            docs, end = _scan(joined, 0)
            if end != len(joined) or len(docs) != len(text) or _ROWS_IN_A_LINE.search(raw) \
                    or set(map(type, docs)) != {dict} or set(map(len, docs)) != {len(columns)}:
                return None
            # exactly the columns: as many keys, and every column among them (a column at a
            # time: half the time of one getter a row, then transposed)
            values: list[Any] = [tuple(map(get, docs)) for get in self.getters]
        except Exception:  # not UTF-8, not JSON, a column missing: line by line
            return None
        keys = values[self.key]
        if set(map(type, keys)) != {self.key_type} or not (
                (self.last is None or keys[0] > self.last)
                and all(map(operator.lt, keys, keys[1:]))):
            return None
        for index, kind, span in self.ranges:
            col = values[index]
            if not set(map(type, col)) <= _INT_OR_NONE:
                return None
            ids = [v for v in col if v] if kind == "object" else \
                [v for v in col if v is not None]
            if ids and (span is None or min(ids) < span[0] or max(ids) > span[1]):
                return None
        if not columns_fine(table.name, columns, table.codecs, self.types, values):
            return None
        decoded: dict[int, list[Any]] = {}
        self._matrix_at = None if self.matrix is None else self.matrix.next
        try:
            for i, codec in self.specials:  # the embeddings last
                col = values[i]
                if codec == "j":
                    decoded[i] = [None if v is None else encode_json(v) for v in col]
                elif codec in ("f32", "f64"):
                    decoded[i] = self._embeddings(col)  # (last: it reads the .npy)
                else:
                    decoded[i] = [None if v is None else self._decode(codec, v) for v in col]
        except Exception:  # anything the line-by-line path says more about
            if self.matrix is not None and self.matrix.next != self._matrix_at:
                raise  # pragma: no cover - the .npy is read last, and only when it can be
            return None
        self.last = keys[-1]
        for i, col in decoded.items():
            values[i] = col
        scopes = itertools.repeat(self.scope, len(lines))
        return _Batch(zip(scopes, *values, strict=True), scopes)

    def _embeddings(self, col: tuple[Any, ...]) -> list[bytes | None]:
        """The rows of an embedding column (row indices, in order, from the matrix's next
        one), read from the matrix in one go."""
        matrix = self.matrix
        assert matrix is not None
        present = [v for v in col if v is not None]
        if not set(map(type, present)) <= _INTS or \
                present != list(range(matrix.next, matrix.next + len(present))) or \
                matrix.next + len(present) > matrix.rows:
            raise ValueError("not the next rows")
        rows = iter(matrix.take_many(len(present)))
        return [None if v is None else next(rows) for v in col]

    def _lines(self, lines: list[bytes]) -> Iterator[tuple[Any, ...]]:
        table, specials, columns = self.table, self.table.specials, self.table.columns
        last: Any = self.last
        for line in lines:
            self.n += 1
            if self.n % BATCH_ROWS == 0:
                self.ticks.advance()
            try:
                doc = _loads(line.decode("utf-8"))
            except (ValueError, RecursionError) as exc:
                raise self._bad(f"not JSON ({exc})") from None
            if isinstance(doc, dict) and self.added and self.added.isdisjoint(doc):
                doc = {**doc, **dict.fromkeys(self.added)}  # an older directory
            if not isinstance(doc, dict) or doc.keys() != self.columns:
                raise self._bad(f"not a row of {table.name} (it should have the columns "
                                f"{', '.join(columns)})")
            values = [doc[c] for c in columns]
            key = values[self.key]
            if table.name == "scene":
                if self.n > 1:
                    raise self._bad("a scope has one row of rooms")
            elif type(key) is not self.key_type or (last is not None and key <= last):
                raise self._bad(f"{table.key} {key!r} is not after {last!r}: rows must be in "
                                f"{table.key} order, each once")
            last = key
            for index, kind, span in self.ranges:
                value = values[index]
                if value is None or (kind == "object" and value == 0):
                    continue
                if type(value) is not int or span is None or not span[0] <= value <= span[1]:
                    raise self._bad(f"{columns[index]} {value!r} is outside the manifest's "
                                    f"{kind} ids {span}")
            problem = row_problem(table.name, columns, table.codecs, self.types, values)
            if problem is not None:
                raise self._bad(problem)
            for i, codec in specials:
                value = values[i]
                if value is None:
                    continue
                try:
                    values[i] = self._decode(codec, value)
                except (TypeError, ValueError) as exc:
                    raise self._bad(f"{columns[i]} cannot be stored ({exc})") from None
            self.last = last
            yield (self.scope, *values)

    def _decode(self, codec: str, value: Any) -> Any:
        if codec == "j":
            return encode_json(value)
        if codec == "pairs":
            if not isinstance(value, list) or not all(
                    isinstance(p, list) and len(p) == 2 and isinstance(p[0], str)
                    for p in value):
                raise ValueError("it should be a list of [label, mass] pairs")
            return encode_json_ordered(dict(value))
        if codec == "z":
            return encode_checkpoint(value)
        if isinstance(value, bool) or not isinstance(value, int):
            raise ValueError(f"an embedding is a row index, got {value!r}")
        return self.matrix.take(value)  # type: ignore[union-attr]


class NpyReader:
    """The rows of an embedding matrix, read in order (each row exactly once)."""

    def __init__(self, directory: Path, name: str, rows: int) -> None:
        self.name = name
        self.file: IO[bytes] = open(directory.joinpath(*name.split("/")), "rb")  # noqa: SIM115
        want = _EMBEDDING_DTYPES[name]
        try:
            version = np.lib.format.read_magic(self.file)
            read = (np.lib.format.read_array_header_1_0 if version == (1, 0)
                    else np.lib.format.read_array_header_2_0)
            shape, fortran, dtype = read(self.file)
        except (ValueError, OSError) as exc:
            self.file.close()
            raise self._bad(f"not a readable .npy file ({exc})") from None
        if (len(shape) != 2 or fortran or dtype.kind != "f" or dtype.itemsize != want.itemsize
                or shape[0] != rows):
            self.file.close()
            raise self._bad(f"should be a {want.name} matrix of {rows} rows; it is "
                            f"{dtype.name} of shape {shape}")
        if shape[1] > MAX_FEATURE_DIM or (rows > 0) != (shape[1] > 0):
            self.file.close()
            raise self._bad(f"has rows of {shape[1]} values; an embedding has 1 to "
                            f"{MAX_FEATURE_DIM} (and an empty matrix none)")
        self.dtype, self.rows, self.next = dtype, rows, 0
        self.row_bytes = shape[1] * dtype.itemsize
        body = os.fstat(self.file.fileno()).st_size - self.file.tell()
        if body != rows * self.row_bytes:
            self.file.close()
            raise self._bad(f"holds {body:,} bytes of data; its header's shape {shape} needs "
                            f"{rows * self.row_bytes:,}")

    def _bad(self, what: str) -> IntegrityError:
        return IntegrityError(f"{self.name} {what}; nothing was imported — {_AGAIN}")

    def __enter__(self) -> NpyReader:
        return self

    def __exit__(self, *exc: object) -> None:
        self.file.close()

    def take(self, index: int) -> bytes:
        if index != self.next or index >= self.rows:
            raise ValueError(f"embedding row {index} is out of order (expected {self.next}, "
                             f"of {self.rows})")
        data = self.file.read(self.row_bytes)
        if len(data) != self.row_bytes:
            raise ValueError(f"{self.name} ends early")
        self.next += 1
        if self.dtype.isnative:
            return data
        return np.frombuffer(data, self.dtype).astype(self.dtype.newbyteorder("=")).tobytes()

    def take_many(self, n: int) -> list[bytes]:
        """The next ``n`` rows (all there: the caller checked ``next + n <= rows``)."""
        if n == 0:
            return []
        data = self.file.read(n * self.row_bytes)
        if len(data) != n * self.row_bytes:  # pragma: no cover - the size was checked on open
            raise ValueError(f"{self.name} ends early")
        self.next += n
        if not self.dtype.isnative:
            data = np.frombuffer(data, self.dtype).astype(self.dtype.newbyteorder("=")).tobytes()
        size = self.row_bytes
        return [data[i:i + size] for i in range(0, len(data), size)]

    def finish(self) -> None:
        if self.next != self.rows or self.file.read(1):
            raise self._bad(f"has {self.rows} rows; {self.next} were referenced")
