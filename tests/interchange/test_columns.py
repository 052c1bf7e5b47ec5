"""The column-at-a-time paths of export and import write and accept exactly what the row-by-row
paths do: the same text for every value (commas, quotes, escapes, non-ASCII, extreme floats,
nulls, JSON columns with unsorted keys), the same rows for the store, and — for anything
unusual — the row-by-row path's own error."""

from __future__ import annotations

import contextlib
import json
import math

import pytest

from locimem.errors import IntegrityError
from locimem.interchange.directory import TABLES, _encode_value
from locimem.interchange.rows_out import _BatchEncoder, _encode_line
from locimem.interchange.signing import canonical_line as _line

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


@pytest.mark.parametrize("settings", [
    {"sort_keys": True, "separators": (",", ":"), "allow_nan": False},
    {"separators": (",", ":"), "allow_nan": False},
    {"sort_keys": True, "separators": (",", ":"), "allow_nan": False, "ensure_ascii": False},
])
def test_one_shot_encoder_is_the_encoders_encode(settings):
    from locimem.jsontext import one_shot

    encoder = json.JSONEncoder(**settings)
    fast = one_shot(encoder)
    for text in _JSON[1:]:
        value = json.loads(text)
        assert fast(value) == encoder.encode(value)
    for s in _STRINGS:
        assert fast(s) == encoder.encode(s)
    for value in ({"b": 1.5, "a": [1, None, True]}, 0.1 + 0.2, -0.0, 10**20, [], {}):
        assert fast(value) == encoder.encode(value)
    for bad in ([math.inf], {"a": math.nan}, {"k": object()}):
        with pytest.raises((ValueError, TypeError)):
            encoder.encode(bad)
        with pytest.raises((ValueError, TypeError)):
            fast(bad)


# -- import ------------------------------------------------------------------------------------
def _memory(path):
    import numpy as np

    from locimem import Detection, ObjectMemory

    with ObjectMemory.open(path, scope="home") as m:
        for t in range(12):
            m.observe(float(t), [
                Detection("cup", 0.9, (1.0 + 0.01 * t, 1.0, 0.8), (0.1, 0.1, 0.1),
                          feature=np.ones(4)),
                Detection("café, the", 0.8, (3.0, 1.0, 0.8), (0.2, 0.1, 0.1),
                          feature=np.arange(4.0)),
                Detection("plate", 0.7, (5.0, 2.0, 0.8), (0.2, 0.2, 0.02))])
        m.define_room("kitchen", [(0.0, 0.0), (6.0, 0.0), (6.0, 6.0), (0.0, 6.0)])


@pytest.fixture(scope="module")
def directory(tmp_path_factory):
    from locimem.interchange.export import export_memory

    root = tmp_path_factory.mktemp("columns")
    _memory(root / "src.loci")
    export_memory(root / "src.loci", root / "dir", scope="home")
    return root / "dir"


@pytest.mark.parametrize("batch", [1, 2, 3, 7, 10_000])
def test_import_in_batches_of_any_size_round_trips(directory, tmp_path, monkeypatch, batch):
    from locimem.interchange import load, rows_in
    from locimem.interchange.export import export_memory, import_memory

    monkeypatch.setattr(load, "BATCH_ROWS", batch)
    monkeypatch.setattr(rows_in, "BATCH_ROWS", batch)
    taken = []
    real = rows_in.RowReader._batch

    def spy(self, lines):
        rows = real(self, lines)
        taken.append(rows is not None)
        return rows

    monkeypatch.setattr(rows_in.RowReader, "_batch", spy)
    import_memory(directory, tmp_path / "m.loci")
    assert any(taken)  # the column path took batches
    export_memory(tmp_path / "m.loci", tmp_path / "again", scope="home")
    for name in ("manifest.json", "log/observations.jsonl", "state/objects.jsonl",
                 "embeddings/observations.npy", "embeddings/objects.npy"):
        assert (tmp_path / "again" / name).read_bytes() == (directory / name).read_bytes()


def _reseal(copy):
    import hashlib

    from locimem.interchange.export import _document, _manifest_digest

    manifest = json.loads((copy / "manifest.json").read_text())
    for name, entry in manifest["files"].items():
        data = copy.joinpath(*name.split("/")).read_bytes()
        entry["sha256"], entry["bytes"] = hashlib.sha256(data).hexdigest(), len(data)
    manifest["manifest_sha256"] = _manifest_digest(manifest)
    (copy / "manifest.json").write_bytes(_document(manifest).encode())


@pytest.mark.parametrize(("line", "column", "value", "match"), [
    (5, "cx", 1e9, r"observations.jsonl line 5: cx must lie within"),
    (6, "confidence", 1.5, r"observations.jsonl line 6: confidence must be in \[0, 1\]"),
    (4, "label", "", r"observations.jsonl line 4: label must not be empty"),
    (7, "label", "cup\u200b", r"observations.jsonl line 7: label"),
    (3, "seq", "3", r"observations.jsonl line 3: seq '3' is not after"),
    (8, "t", True, r"observations.jsonl line 8: t must be a finite number"),
    (2, "idx", 2**64, r"observations.jsonl line 2: idx must be a 64-bit integer"),
    (9, "orientation", [1.0, "a\x00", 0.0, 0.0], r"observations.jsonl line 9: orientation"),
    (5, "sz", -0.5, r"observations.jsonl line 5: sz must be in \[0,"),
    (6, "feature", 99, r"observations.jsonl line 6: feature cannot be stored"),
    (4, "commit_id", None, r"observations.jsonl line 4: commit_id must not be null"),
    (3, "t", 10**400, r"observations.jsonl line 3: t must be a finite number"),  # (it was an
    # OverflowError, not a refusal, before 2026-12-01)
    # subnormal numbers are flushed to 0.0 at the boundary, so no store holds one
    (5, "cx", 5e-324, r"observations.jsonl line 5: cx is subnormal \(5e-324\); locimem"),
    (6, "sz", 1e-310, r"observations.jsonl line 6: sz is subnormal \(1e-310\)"),
    (7, "confidence", 1e-320, r"observations.jsonl line 7: confidence is subnormal"),
])
@pytest.mark.parametrize("batch", [4, 10_000])
def test_a_bad_value_in_any_batch_is_refused_at_its_line(directory, tmp_path, monkeypatch,
                                                         batch, line, column, value, match):
    import shutil

    from locimem.interchange import load, rows_in
    from locimem.interchange.export import import_memory

    monkeypatch.setattr(load, "BATCH_ROWS", batch)
    monkeypatch.setattr(rows_in, "BATCH_ROWS", batch)
    copy = tmp_path / "forged"
    shutil.copytree(directory, copy)
    path = copy / "log" / "observations.jsonl"
    rows = [json.loads(x) for x in path.read_text().splitlines()]
    if column == "feature":  # the row of another observation's embedding
        value = rows[line - 2]["feature"]
    rows[line - 1][column] = value
    path.write_text("".join(_line(r) + "\n" for r in rows))
    _reseal(copy)
    with pytest.raises(IntegrityError, match=match):
        import_memory(copy, tmp_path / "m.loci")
    assert not (tmp_path / "m.loci").exists()


def test_columns_fine_is_never_looser_than_row_problem(directory):
    """Every value of a list of good and bad ones, put in every column of a batch of real
    rows: when row_problem finds a problem in any row, columns_fine says False."""
    from locimem.interchange.row_checks import columns_fine, row_problem
    from locimem.store.sqlite import SQLiteStore

    candidates = [None, 0, 1, -1, 2**63, -(2**63) - 1, 0.5, 1.5, -0.5, 1e4, 1e9, math.inf,
                  -math.inf, math.nan, True, False, "", "cup", "a\x00b", "x" * 200, "\u200b",
                  [], [1.0, 2.0], [1, "a"], [[1.0, 2.0]], {"a": 1}, {"center": [1e9, 0, 0]},
                  {"size": [-1.0]}, [["cup", 1.0]], [["cup", -1.0]], [["", 1.0]], [math.nan],
                  [2**64], {"\x01": 1}, 10**400, [["cup", 10**400]], 5e-324, -1e-310]
    with contextlib.closing(SQLiteStore(directory.parent / "src.loci", read_only=True)) as store:
        for table in TABLES:
            lines = directory.joinpath(*table.file.split("/")).read_text().splitlines()
            if not lines:
                continue
            types = store.column_types(table.name)
            rows = [[json.loads(x)[c] for c in table.columns] for x in lines]
            assert columns_fine(table.name, table.columns, table.codecs, types,
                                list(zip(*rows, strict=True)))
            for index in range(len(table.columns)):
                for value in candidates:
                    changed = [list(r) for r in rows]
                    changed[len(changed) // 2][index] = value
                    problems = [row_problem(table.name, table.columns, table.codecs, types, r)
                                for r in changed]
                    fine = columns_fine(table.name, table.columns, table.codecs, types,
                                        list(zip(*changed, strict=True)))
                    if any(p is not None for p in problems):
                        assert not fine, (table.name, table.columns[index], value)


@pytest.mark.parametrize("column", [
    (0.5, 0.25, 0.5) * 40,  # repeating floats: their distinct values encoded once
    (0.1 + 0.2, None, 1e16) * 40,
    (0.0, -0.0, 0.5) * 40,  # equal keys of a dict, different texts
    (1.0, 1, 0.5, True) * 40,  # so are 1.0, 1 and True
    (1.5, "1.5", 0.5, "a,b") * 40,
])
def test_repeating_columns_have_each_value_own_text(column):
    from locimem.interchange.rows_out import _column_texts

    assert _column_texts(column) == [_encode_value(v) for v in column]


def test_a_non_finite_number_in_a_repeating_column_is_refused_as_row_by_row():
    rows = [(*r[:2], 0.5, *r[3:]) for r in _commit_rows(120)]
    rows[60] = (*rows[60][:2], math.inf, *rows[60][3:])
    with pytest.raises(IntegrityError, match=r"a row of commits \(id 61\) cannot be written"):
        _BatchEncoder(COMMITS, None)(rows)


@pytest.mark.parametrize("spaces", ["", " ", "\t "])
@pytest.mark.parametrize("batch", [10, 10_000])
def test_a_row_broken_across_lines_is_refused_even_when_the_count_adds_up(
        directory, tmp_path, monkeypatch, batch, spaces):
    """The column path reads a batch of lines as one JSON array (the lines joined by commas):
    a row broken in two at a comma, with two rows put on one line elsewhere, makes as many
    objects as lines — and is still refused at the broken line."""
    import shutil

    from locimem.interchange import load, rows_in
    from locimem.interchange.export import import_memory

    monkeypatch.setattr(load, "BATCH_ROWS", batch)
    monkeypatch.setattr(rows_in, "BATCH_ROWS", batch)
    copy = tmp_path / "forged"
    shutil.copytree(directory, copy)
    path = copy / "log" / "observations.jsonl"
    lines = path.read_text().splitlines()
    head, _, tail = lines[2].partition(",")
    lines[2:3] = [head, tail]  # a row on lines 3 and 4
    lines[6:8] = [lines[6] + "," + spaces + lines[7]]  # two rows on line 7
    path.write_text("".join(x + "\n" for x in lines))
    _reseal(copy)
    with pytest.raises(IntegrityError, match=r"observations.jsonl line 3: not JSON"):
        import_memory(copy, tmp_path / "m.loci")
    assert not (tmp_path / "m.loci").exists()


@pytest.mark.parametrize("batch", [4, 10_000])
@pytest.mark.parametrize("line", [1, 6, 23])
def test_a_row_the_schema_refuses_is_named_by_its_line(directory, tmp_path, monkeypatch,
                                                       batch, line):
    """A row every check of its own passes but the schema refuses (an accepted observation
    with no object) is named by its line, from any batch."""
    import shutil

    from locimem.interchange import load, rows_in
    from locimem.interchange.export import import_memory

    monkeypatch.setattr(load, "BATCH_ROWS", batch)
    monkeypatch.setattr(rows_in, "BATCH_ROWS", batch)
    copy = tmp_path / "forged"
    shutil.copytree(directory, copy)
    path = copy / "log" / "observations.jsonl"
    rows = [json.loads(x) for x in path.read_text().splitlines()]
    assert rows[line - 1]["rejected"] is None
    rows[line - 1]["object_id"] = None
    path.write_text("".join(_line(r) + "\n" for r in rows))
    _reseal(copy)
    with pytest.raises(IntegrityError, match=rf"observations.jsonl \(line {line}\) does not fit "
                                             r"the store \(CHECK constraint failed"):
        import_memory(copy, tmp_path / "m.loci")
    assert not (tmp_path / "m.loci").exists()


@pytest.mark.parametrize("n", [1, 2, 50])
def test_a_column_of_one_text_is_written_into_the_template(n):
    """A column with one text throughout a batch goes into the batch's line template: a
    "%" in it (or in a varying one) is written as it is."""
    rows = [(*r[:4], "50% off %s", f"%d {i}%" if i % 2 else None, *r[6:])
            for i, r in enumerate(_commit_rows(n))]
    assert _BatchEncoder(COMMITS, None)(rows) == _by_rows(COMMITS, rows)
    same = [(r[0], *rows[0][1:]) for r in rows]  # only the key varies
    assert _BatchEncoder(COMMITS, None)(same) == _by_rows(COMMITS, same)
