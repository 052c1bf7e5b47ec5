"""Row-by-row checks of a memory directory's tables, before a row reaches a store.

The manifest's checksums say the files are as exported, not that what is in them is sane:
whoever edits a file can recompute them. So :mod:`locimem.interchange.load` checks every value
of every row against its column — its SQLite type (an ``INTEGER`` is a 64-bit integer, a
``REAL`` a finite number, a ``TEXT`` a string), ``NOT NULL``, and the domain locimem itself
enforces on input: positions within :data:`~locimem.check.MAX_ABS_COORD_M` of the origin,
sizes within :data:`~locimem.check.MAX_SIZE_M`, confidences in [0, 1] (none of these
subnormal: :data:`~locimem.check.MIN_NORMAL`), labels and track ids of
at most :data:`~locimem.check.MAX_LABEL_CHARS` characters, no lone surrogate, control or
invisible format character in any string (also inside JSON columns), label masses that are
``[label, mass]`` pairs with finite masses >= 0, and room polygons, centres, positions and
sizes inside JSON columns within the domain. :func:`row_problem` returns the first problem as
text (None when the row is fine); the caller names the file and line.

What these checks cannot see — a row that is well-typed but disagrees with the log — is left
to :func:`~locimem.interchange.validate.validate_store`, which the import runs on the scratch
store before anything touches the target.
"""

from __future__ import annotations

import math
from typing import Any

from locimem.check import (
    MAX_ABS_COORD_M,
    MAX_LABEL_CHARS,
    MAX_SIZE_M,
    MIN_NORMAL,
    check_clean_chars,
)
from locimem.errors import InvalidInput

__all__ = ["MAX_JSON_NODES", "MAX_TEXT_CHARS", "columns_fine", "row_problem"]

MAX_TEXT_CHARS = 10_000
"""The longest string a row may hold (labels and track ids: ``MAX_LABEL_CHARS``)."""
MAX_JSON_NODES = 1_000_000
"""The most values one JSON column may hold (a checkpoint of a large memory is the biggest)."""
_INT_MIN, _INT_MAX = -(2**63), 2**63 - 1
_COORDS = frozenset({"cx", "cy", "cz", "px", "py", "pz"})
_SIZES = frozenset({"sx", "sy", "sz", "place_sx", "place_sy", "place_sz"})
_UNIT = frozenset({("observations", "confidence"), ("observations", "weight")})
_LABELS = frozenset({"label", "pinned_label", "track_id"})
_NON_EMPTY_LABELS = frozenset({("objects", "label"), ("observations", "label")})
# what a person typed (ObjectMemory's check_text): one line, single-spaced, at most this long;
# text like any other (HTML in an actor's name is text, escaped wherever it is shown)
_SAID = {("commits", "actor"): 100, ("commits", "reason"): 1000}
_DOMAIN_COLUMNS = _COORDS | _SIZES | {column for _, column in _UNIT}
# what the public boundary flushes when subnormal (check.MIN_NORMAL), so no store holds it
_NORMAL = _COORDS | _SIZES | {"confidence"}
# keys of JSON objects whose values are places or extents (metres, map frame)
_JSON_PLACES = frozenset({"center", "position", "polygon", "place", "z_range"})
_JSON_SIZES = frozenset({"size"})


def row_problem(table: str, columns: tuple[str, ...], codecs: tuple[str, ...],
                types: dict[str, tuple[str, bool]], values: list[Any]) -> str | None:
    """The first problem with one row of ``table`` as read from its JSON line (``values`` in
    ``columns`` order, JSON columns not yet encoded), or None. ``types`` maps a column to its
    declared SQLite type and whether it is ``NOT NULL``."""
    for column, codec, value in zip(columns, codecs, values, strict=True):
        declared = types.get(column, ("", False))
        if codec == "v" and value.__class__ is float and declared[0] == "REAL" and \
                column not in _DOMAIN_COLUMNS and math.isfinite(value):
            continue  # the common case, without a call
        problem = _value_problem(table, column, codec, declared, value)
        if problem is not None:
            return f"{column} {problem}"
    return None


_NONE = type(None)
_INTS = frozenset({int})
_NUMBERS = frozenset({int, float})
_STRS = frozenset({str})


def columns_fine(table: str, columns: tuple[str, ...], codecs: tuple[str, ...],
                 types: dict[str, tuple[str, bool]], values: list[tuple[Any, ...]]) -> bool:
    """Whether :func:`row_problem` finds nothing in any of a batch of rows, checked a column
    at a time (``values``: one tuple a column, in ``columns`` order): True only when it would
    say None of every row. False says only "look row by row" — :func:`row_problem` then
    names the first problem (or finds none: this check is stricter, never looser)."""
    try:
        return all(_column_fine(table, column, codec, types.get(column, ("", False)), col)
                   for column, codec, col in zip(columns, codecs, values, strict=True))
    except (TypeError, ValueError, OverflowError):
        return False  # an unusual value: row by row


def _column_fine(table: str, column: str, codec: str, declared: tuple[str, bool],
                 col: tuple[Any, ...]) -> bool:
    kind, not_null = declared
    kinds = set(map(type, col))
    present: Any = col
    if _NONE in kinds:
        if not_null:
            return False
        kinds.discard(_NONE)
        present = [v for v in col if v is not None]
        if not present:
            return True
    if codec in ("j", "z"):
        return all(_json_fine(v) for v in present)
    if codec == "pairs":
        return all(_mass_problem(v) is None for v in present)
    if codec in ("f32", "f64"):
        return True  # row indices into the .npy, checked as they are read
    if kind == "INTEGER":
        return kinds <= _INTS and min(present) >= _INT_MIN and max(present) <= _INT_MAX
    if kind == "REAL":
        if not kinds <= _NUMBERS or not math.isfinite(sum(present)):  # any inf or nan: so is
            return False  # the sum (an overflowing sum of finite ones: row by row)
        if column in _COORDS and max(map(abs, present)) > MAX_ABS_COORD_M:
            return False
        if column in _SIZES and not (min(present) >= 0.0 and max(present) <= MAX_SIZE_M):
            return False
        if column in _NORMAL and min((abs(v) for v in present if v), default=1.0) < MIN_NORMAL:
            return False
        return (table, column) not in _UNIT or (min(present) >= 0.0 and max(present) <= 1.0)
    if kind == "TEXT":
        if not kinds <= _STRS:
            return False
        lengths = list(map(len, present))
        if max(lengths) > (MAX_LABEL_CHARS if column in _LABELS else MAX_TEXT_CHARS):
            return False
        if (table, column) in _NON_EMPTY_LABELS and min(lengths) == 0:
            return False
        if (table, column) in _SAID and not all(_said_problem(table, column, v) is None
                                                for v in present):
            return False
        text = "".join(present)  # ASCII and printable as a whole iff each string is
        return (text.isascii() and text.isprintable()) or all(
            _text_problem(v) is None for v in present)
    return True


def _json_fine(value: Any) -> bool:
    """``_json_problem(value) is None``, with a shortcut for a flat list of finite floats or
    of 64-bit integers (no key, so no place or size to check)."""
    if value.__class__ is list and 0 < len(value) < MAX_JSON_NODES:
        kinds = set(map(type, value))
        if kinds == {float}:
            if math.isfinite(sum(value)):
                return True
        elif kinds == _INTS and min(value) >= _INT_MIN and max(value) <= _INT_MAX:
            return True
    return _json_problem(value) is None


def _value_problem(table: str, column: str, codec: str, declared: tuple[str, bool],
                   value: Any) -> str | None:
    kind, not_null = declared
    if value is None:
        return "must not be null" if not_null else None
    if codec in ("j", "z"):
        return _json_problem(value)
    if codec == "pairs":
        return _mass_problem(value)
    if codec in ("f32", "f64"):
        return None  # a row index into the .npy, checked as it is read
    if kind == "INTEGER":
        if type(value) is not int or not _INT_MIN <= value <= _INT_MAX:
            return f"must be a 64-bit integer, got {_short(value)}"
        return None
    if kind == "REAL":
        if isinstance(value, bool) or not isinstance(value, (int, float)) or \
                not _finite(value):
            return f"must be a finite number, got {_short(value)}"
        if column in _COORDS and abs(value) > MAX_ABS_COORD_M:
            return f"must lie within {MAX_ABS_COORD_M:g} m of the origin, got {value!r}"
        if column in _SIZES and not 0.0 <= value <= MAX_SIZE_M:
            return f"must be in [0, {MAX_SIZE_M:g}] m, got {value!r}"
        if (table, column) in _UNIT and not 0.0 <= value <= 1.0:
            return f"must be in [0, 1], got {value!r}"
        if column in _NORMAL and value and abs(value) < MIN_NORMAL:
            return (f"is subnormal ({value!r}); locimem flushes such numbers to 0.0 where they "
                    "come in, so no store it writes holds one")
        return None
    if kind == "TEXT":
        if not isinstance(value, str):
            return f"must be a string, got {_short(value)}"
        limit = MAX_LABEL_CHARS if column in _LABELS else MAX_TEXT_CHARS
        if len(value) > limit:
            return f"must be at most {limit} characters, got {len(value)}"
        if not value and (table, column) in _NON_EMPTY_LABELS:
            return "must not be empty"
        if (table, column) in _SAID:
            problem = _said_problem(table, column, value)
            if problem is not None:
                return problem
        return _text_problem(value)
    return None


def _said_problem(table: str, column: str, value: str) -> str | None:
    """Whether ``value`` is what ``check_text`` gives for an actor or a reason."""
    limit = _SAID[(table, column)]
    if len(value) > limit:
        return f"must be at most {limit} characters, got {len(value)}"
    if " ".join(value.split()) != value:
        return "must be one line, single-spaced, as the API keeps it"
    if not value:
        return "must not be empty"
    return None


def _finite(value: float) -> bool:
    """``math.isfinite``, False (not an error) for an integer too large for a float."""
    try:
        return math.isfinite(value)
    except OverflowError:
        return False


def _text_problem(value: str) -> str | None:
    if value.isascii() and value.isprintable():  # the common case: no control, format or
        return None  # surrogate character can be in it
    try:
        check_clean_chars(value, "it")
    except InvalidInput as exc:
        return str(exc)[3:]  # "it must not ..." -> "must not ..."
    return None


def _mass_problem(value: Any) -> str | None:
    if not isinstance(value, list):
        return "must be a list of [label, mass] pairs"
    for pair in value:
        if not (isinstance(pair, list) and len(pair) == 2 and isinstance(pair[0], str)):
            return f"must be a list of [label, mass] pairs, got {_short(pair)}"
        label, mass = pair
        if not label or len(label) > MAX_LABEL_CHARS or _text_problem(label) is not None:
            return f"holds a label that is not a label: {_short(label)}"
        if isinstance(mass, bool) or not isinstance(mass, (int, float)) or \
                not _finite(mass) or mass < 0:
            return f"holds a mass that is not a finite number >= 0: {_short(mass)}"
    return None


def _json_problem(value: Any) -> str | None:
    """Strings clean, numbers finite and integers 64-bit throughout; places and sizes inside
    the domain. Iterative (no recursion limit) and bounded in size."""
    stack: list[tuple[Any, str | None]] = [(value, None)]
    nodes = 0
    while stack:
        item, key = stack.pop()
        nodes += 1
        if nodes > MAX_JSON_NODES:
            return f"holds more than {MAX_JSON_NODES:,} values"
        if isinstance(item, dict):
            for k, v in item.items():
                problem = _text_problem(k)
                if problem is not None:
                    return f"has a key that {problem}"
                stack.append((v, k))
        elif isinstance(item, list):
            stack.extend((v, key) for v in item)
        elif isinstance(item, str):
            problem = _text_problem(item)
            if problem is not None:
                return f"holds a string that {problem}"
        elif isinstance(item, bool) or item is None:
            continue
        elif isinstance(item, int):
            if not _INT_MIN <= item <= _INT_MAX:
                return f"holds an integer past 64 bits ({_short(item)})"
            problem = _place_problem(key, item)
            if problem is not None:
                return problem
        elif isinstance(item, float):
            if not math.isfinite(item):
                return "holds a number that is not finite"
            problem = _place_problem(key, item)
            if problem is not None:
                return problem
    return None


def _place_problem(key: str | None, value: float) -> str | None:
    if key in _JSON_PLACES and abs(value) > MAX_ABS_COORD_M:
        return (f"holds a {key} coordinate {value!r} beyond {MAX_ABS_COORD_M:g} m of the "
                "origin")
    if key in _JSON_SIZES and not 0.0 <= value <= MAX_SIZE_M:
        return f"holds a size {value!r} outside [0, {MAX_SIZE_M:g}] m"
    return None


def _short(value: Any) -> str:
    text = repr(value)
    return text if len(text) <= 40 else text[:37] + "..."
