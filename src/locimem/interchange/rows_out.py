"""Writing a store's rows as a memory directory's files: a batch of a table's rows as JSON
lines a column at a time (:class:`_BatchEncoder`, row by row where it cannot), files hashed
as they are written, and embedding matrices streamed into ``.npy`` files.
:mod:`locimem.interchange.export` drives them; :mod:`locimem.interchange.rows_in` reads them
back.
"""

from __future__ import annotations

import hashlib
import io
import json
import operator
import os
import sqlite3
import zlib
from pathlib import Path
from typing import IO, Any

import numpy as np

from locimem.errors import IntegrityError
from locimem.interchange.directory import (
    _EMBEDDING_DTYPES,
    FileEntry,
    _encode_value,
    _Table,
)
from locimem.interchange.signing import canonical_line as _line

_NULL = "null"




class _Fallback(Exception):
    """A batch the column-at-a-time encoder does not take: it is written row by row."""


class _BatchEncoder:
    """A batch of a table's rows as JSON lines, a column at a time: each column's values
    encoded in one pass (a column of numbers and nulls in one call of the C encoder), then
    every line put together from one template of the sorted keys. The text is the one
    :func:`_encode_line` writes, row by row (tested); a batch with anything unusual — a
    non-finite number, a value of an unexpected type, an embedding of another width — is
    written by :func:`_encode_line`, which raises what it always raised."""

    def __init__(self, table: _Table, matrix: _NpyWriter | None) -> None:
        self.table, self.matrix = table, matrix
        order = sorted(range(len(table.columns)), key=lambda i: table.columns[i])
        self.order = order
        self.keys = [f"{_line(table.columns[i])}:" for i in order]
        self.codecs = dict(table.specials)

    def __call__(self, batch: list[tuple[Any, ...]]) -> str:
        try:
            columns, blobs = self._columns(batch)
        except Exception:  # row by row says what is wrong (or writes it)
            return "".join([_encode_line(self.table, row, self.matrix) for row in batch])
        if blobs:
            self.matrix.extend(blobs)  # type: ignore[union-attr]
        return self._lines(columns)

    def _lines(self, columns: list[list[str]]) -> str:
        """The lines of a batch's column texts, from one template of the sorted keys: a
        column of one text throughout the batch (all null, one tier, one weight) is written
        into the template, the others substituted line by line."""
        n = len(columns[0])
        same = [col[0] if col.count(col[0]) == n else None for col in columns]
        if all(text is not None for text in same):
            return ("{" + ",".join(map(operator.add, self.keys, same)) + "}\n") * n
        template = "{" + ",".join(key + ("%s" if text is None else text.replace("%", "%%"))
                                  for key, text in zip(self.keys, same, strict=True)) + "}\n"
        varying = [col for col, text in zip(columns, same, strict=True) if text is None]
        return "".join(map(template.__mod__, zip(*varying, strict=True)))

    def _columns(self, batch: list[tuple[Any, ...]]) -> tuple[list[list[str]], list[bytes]]:
        values = list(zip(*batch, strict=True))
        out: list[list[str]] = []
        blobs: list[bytes] = []
        for i in self.order:
            column = values[i]
            codec = self.codecs.get(i, "v")
            if codec == "v":
                out.append(_column_texts(column))
            elif codec == "j":  # each distinct text decoded and encoded once (str keys:
                # equal only when the same text)
                texts = {v: _NULL if v is None else _encode_value(json.loads(v))
                         for v in dict.fromkeys(column)}
                out.append(list(map(texts.__getitem__, column)))
            elif codec == "pairs":
                out.append([_NULL if v is None else _encode_value(
                    [[k, m] for k, m in json.loads(v).items()]) for v in column])
            elif codec == "z":
                out.append([_NULL if v is None else _encode_value(
                    json.loads(zlib.decompress(v))) for v in column])
            else:  # embeddings: their rows in the matrix, from the next one on
                blobs = [v for v in column if v is not None]
                if not self.matrix.fits(blobs):  # type: ignore[union-attr]
                    raise _Fallback
                start = self.matrix.written  # type: ignore[union-attr]
                if len(blobs) == len(column):
                    out.append(list(map(str, range(start, start + len(blobs)))))
                else:
                    rows = iter(range(start, start + len(blobs)))
                    out.append([_NULL if v is None else str(next(rows)) for v in column])
        return out, blobs


_FLOAT_OR_NONE = frozenset({float, type(None)})
_SAMPLE = 256  # values of a column looked at to decide whether it repeats


def _column_texts(column: tuple[Any, ...]) -> list[str]:
    """The JSON text of each value of a column, in one call of the C encoder: "[v1,v2,...]"
    split at its commas when it holds exactly n - 1 (they are then its separators, and the
    pieces are the values' own texts; a comma inside a string: value by value). A column of
    floats that repeat (a size, a confidence, the time of a scan's thirty rows) has only its
    distinct values encoded, each text then looked up — ``repr`` of a float is most of an
    export's time. Only floats and nulls, and no zero: 0.0 and -0.0 are equal keys of a dict
    with different texts (and so would be 1 and 1.0, or True, which the type check keeps out)."""
    if len(set(column[:_SAMPLE])) * 4 <= min(len(column), _SAMPLE):
        distinct = dict.fromkeys(column)
        if len(distinct) * 4 <= len(column) and 0.0 not in distinct and \
                set(map(type, column)) <= _FLOAT_OR_NONE:
            keys = list(distinct)
            parts = _line(keys)[1:-1].split(",")
            if len(parts) == len(keys):
                return list(map(dict(zip(keys, parts, strict=True)).__getitem__, column))
    parts = _line(column)[1:-1].split(",")
    if len(parts) != len(column):  # a comma inside a value (a string)
        parts = list(map(_encode_value, column))
    return parts


def _encode_line(table: _Table, row: tuple[Any, ...], matrix: _NpyWriter | None) -> str:
    values = list(row)
    for i, codec in table.specials:
        value = values[i]
        if value is None:
            continue
        if codec == "j":
            values[i] = json.loads(value)
        elif codec == "pairs":
            values[i] = [[k, v] for k, v in json.loads(value).items()]
        elif codec == "z":
            values[i] = json.loads(zlib.decompress(value))
        else:  # an embedding: its row in the matrix
            values[i] = matrix.append(value)  # type: ignore[union-attr]
    try:
        return _line(dict(zip(table.columns, values, strict=True))) + "\n"
    except ValueError as exc:  # a non-finite float: JSON has no way to say it
        key = row[table.columns.index(table.key)]
        raise IntegrityError(f"a row of {table.name} ({table.key} {key!r}) cannot be written "
                             f"as JSON ({exc}); the store may be damaged") from None


class _HashedFile:
    """A new file, hashed and counted as it is written, fsynced on close."""

    def __init__(self, root: Path, name: str) -> None:
        path = root.joinpath(*name.split("/"))
        path.parent.mkdir(parents=True, exist_ok=True)
        self.file: IO[bytes] = open(path, "xb")  # noqa: SIM115 - closed in close()
        self.digest = hashlib.sha256()
        self.size = 0

    def write(self, data: bytes) -> None:
        self.file.write(data)
        self.digest.update(data)
        self.size += len(data)

    def close(self) -> FileEntry:
        self.file.flush()
        os.fsync(self.file.fileno())
        self.file.close()
        return FileEntry(self.digest.hexdigest(), self.size)


def _write_file(root: Path, name: str, data: bytes) -> FileEntry:
    out = _HashedFile(root, name)
    out.write(data)
    return out.close()


class _NpyWriter:
    """One (n, d) matrix of a table's embedding BLOBs, streamed into an ``.npy`` exactly as
    ``numpy.save`` writes it (n and d are read first, in the same transaction)."""

    def __init__(self, root: Path, name: str, conn: sqlite3.Connection, table: _Table,
                 scope: str, scope_term: str = "scope") -> None:
        self.name = name
        self.dtype = _EMBEDDING_DTYPES[name]
        column = table.columns[table.codecs.index("f32" if self.dtype.itemsize == 4 else "f64")]
        n, lo, hi = conn.execute(
            f"SELECT count(*), min(length({column})), max(length({column})) FROM {table.name} "
            f"WHERE {scope_term} = ? AND {column} IS NOT NULL", (scope,)).fetchone()
        if n and (lo != hi or lo % self.dtype.itemsize):
            raise IntegrityError(
                f"the {table.name} of scope {scope!r} hold embeddings of different widths "
                f"({lo} to {hi} bytes); one matrix cannot hold them — the store may be damaged")
        self.rows, self.width = n, (lo or 0)
        self.written = 0
        self.out = _HashedFile(root, name)
        header = io.BytesIO()
        np.lib.format.write_array_header_1_0(header, {
            "descr": np.lib.format.dtype_to_descr(self.dtype), "fortran_order": False,
            "shape": (n, self.width // self.dtype.itemsize)})
        self.out.write(header.getvalue())

    def fits(self, blobs: list[bytes]) -> bool:
        """Whether ``blobs`` can be the next rows (BLOBs of the width, within the count)."""
        return self.written + len(blobs) <= self.rows and (not blobs or (
            set(map(type, blobs)) == {bytes} and set(map(len, blobs)) == {self.width}))

    def extend(self, blobs: list[bytes]) -> None:
        """Append rows that :meth:`fits`."""
        self.out.write(b"".join(blobs))
        self.written += len(blobs)

    def append(self, blob: bytes) -> int:
        if len(blob) != self.width or self.written >= self.rows:  # pragma: no cover - one read
            raise IntegrityError(f"the embeddings changed while {self.name} was written")
        self.out.write(blob)
        self.written += 1
        return self.written - 1

    def close(self) -> tuple[FileEntry, int]:
        if self.written != self.rows:  # pragma: no cover - one read transaction
            raise IntegrityError(f"the embeddings changed while {self.name} was written")
        return self.out.close(), self.rows
