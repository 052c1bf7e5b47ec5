"""The column-at-a-time paths of export and import write and accept exactly what the row-by-row
paths do: the same text for every value (commas, quotes, escapes, non-ASCII, extreme floats,
nulls, JSON columns with unsorted keys), the same rows for the store, and — for anything
unusual — the row-by-row path's own error."""

from __future__ import annotations

import json
import math

import pytest

from locimem.errors import IntegrityError
from locimem.interchange.directory import TABLES, _encode_value, _line
from locimem.interchange.export import _BatchEncoder, _encode_line
from locimem.store.sqlite.codec import encode_json

COMMITS = next(t for t in TABLES if t.name == "commits")
EVENTS = next(t for t in TABLES if t.name == "events")

_STRINGS = ["", "a", "a,b", 'say "hi"', "back\\slash", "tab\tnew\nline", "café", "日本,語",
            "\u2028", "😀", "\x7f", "null", "[1,2]", ",", ",,"]
_FLOATS = [0.0, -0.0, 1e-300, 5e300, 0.1 + 0.2, -123.456, 1.0, 2.5e-7, 1e16, 123456789.0]
_JSON = [None, "1", "[]", "{}", '{"b":1,"a":[1,2,{"d":null,"c":"x,y"}]}', '"caf\\u00e9"',
         '{"z":"日本","a":-0.0}', "[1.5,2e-9,3]", '{"k":[[1,2],[3,4]]}', "true", "null"]


def _commit_rows(n: int, offset: int = 0) -> list[tuple]:
    rows = []
    for i in range(n):
        k = i + offset
        rows.append((
            k + 1, _STRINGS[k % len(_STRINGS)], _FLOATS[k % len(_FLOATS)],
            None if k % 3 == 0 else _FLOATS[(k + 1) % len(_FLOATS)] + k,
            _STRINGS[(k + 3) % len(_STRINGS)], None if k % 2 else _STRINGS[k % len(_STRINGS)],
            k * 7 if k % 5 else -(2**63), _JSON[k % len(_JSON)], _JSON[(k + 2) % len(_JSON)],
            None if k % 4 else 0.25, _JSON[(k + 5) % len(_JSON)], _JSON[(k + 7) % len(_JSON)]))
    return rows


def _by_rows(table, rows):
    return "".join(_encode_line(table, row, None) for row in rows)


@pytest.mark.parametrize("n", [1, 2, 7, 40, 300])
def test_batch_text_is_the_row_text(n):
    rows = _commit_rows(n)
    _BatchEncoder(COMMITS, None)._columns(rows)  # the column path takes them (no fallback)
    assert _BatchEncoder(COMMITS, None)(rows) == _by_rows(COMMITS, rows)
    events = [(i, i // 3, float(i) / 7, "APPEARED", i if i % 2 else 0,
               None if i % 5 == 0 else _STRINGS[i % len(_STRINGS)], _JSON[1 + i % 10])
              for i in range(1, n + 1)]
    assert _BatchEncoder(EVENTS, None)(events) == _by_rows(EVENTS, events)


def test_single_string_columns_and_values():
    for s in _STRINGS:
        assert _encode_value(s) == _line(s)
    for value in (*_FLOATS, 0, -5, 2**70, None, True, [], {}, {"b": 1, "a": "é"}, [1, [2, 3]]):
        assert _encode_value(value) == _line(value)


def test_a_non_finite_number_is_refused_as_row_by_row():
    rows = _commit_rows(5)
    rows[3] = (*rows[3][:2], math.nan, *rows[3][3:])
    with pytest.raises(IntegrityError, match=r"a row of commits \(id 4\) cannot be written"):
        _BatchEncoder(COMMITS, None)(rows)


def test_a_blob_where_text_belongs_is_refused_as_row_by_row():
    rows = _commit_rows(3)
    rows[1] = (*rows[1][:4], b"\x00", *rows[1][5:])
    with pytest.raises(TypeError):
        _by_rows(COMMITS, rows)
    with pytest.raises(TypeError):
        _BatchEncoder(COMMITS, None)(rows)


def test_canonical_json_encoder_is_encode_json():
    from locimem.interchange.directory import _value_encoder

    fast = _value_encoder(encode_json)
    for text in _JSON[1:]:
        value = json.loads(text)
        assert fast(value) == encode_json(value)
    for s in _STRINGS:
        assert fast(s) == encode_json(s)
    with pytest.raises(ValueError):
        fast([math.inf])
