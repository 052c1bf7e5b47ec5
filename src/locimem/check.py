"""Boundary checks: normalise public inputs and raise :class:`InvalidInput` that names
what was expected and what came.

Everything inside the package trusts values that passed through here.
"""

from __future__ import annotations

import math
import unicodedata
from typing import Any

import numpy as np

from locimem.errors import InvalidInput

MAX_LABEL_CHARS = 200


def _describe(value: Any) -> str:
    text = repr(value)
    return text if len(text) <= 60 else text[:57] + "..."


def check_float(value: Any, name: str) -> float:
    """A finite real number, as a Python float."""
    if isinstance(value, bool) or not isinstance(value, (int, float, np.integer, np.floating)):
        raise InvalidInput(f"{name} must be a finite number, got {_describe(value)}")
    out = float(value)
    if not math.isfinite(out):
        raise InvalidInput(f"{name} must be a finite number, got {out}")
    return out


def check_time(value: Any, name: str = "t") -> float:
    """A finite time in seconds (any epoch the caller likes, used consistently)."""
    return check_float(value, name)


def check_unit_interval(value: Any, name: str) -> float:
    """A finite number in [0, 1]."""
    out = check_float(value, name)
    if not 0.0 <= out <= 1.0:
        raise InvalidInput(f"{name} must be in [0, 1], got {out}")
    return out


def check_positive(value: Any, name: str, *, allow_zero: bool = False) -> float:
    """A finite number > 0 (or >= 0 with ``allow_zero``)."""
    out = check_float(value, name)
    if out < 0.0 or (out == 0.0 and not allow_zero):
        bound = ">= 0" if allow_zero else "> 0"
        raise InvalidInput(f"{name} must be {bound}, got {out}")
    return out


def check_vec(value: Any, name: str, n: int = 3) -> tuple[float, ...]:
    """A sequence of ``n`` finite numbers, as a tuple of floats."""
    if isinstance(value, np.ndarray):
        if value.shape != (n,):
            raise InvalidInput(f"{name} must have shape ({n},), got shape {value.shape}")
        if value.dtype.kind not in "iuf":
            raise InvalidInput(f"{name} must hold numbers, got dtype {value.dtype}")
        value = value.tolist()
    elif not isinstance(value, (tuple, list)):
        raise InvalidInput(f"{name} must be a sequence of {n} numbers, got {_describe(value)}")
    if len(value) != n:
        raise InvalidInput(f"{name} must have {n} numbers, got {len(value)}")
    return tuple(check_float(x, f"{name}[{i}]") for i, x in enumerate(value))


def check_size(value: Any, name: str = "size") -> tuple[float, float, float]:
    """Box extents in metres: three finite numbers, each >= 0."""
    out = check_vec(value, name, 3)
    if any(x < 0.0 for x in out):
        raise InvalidInput(f"{name} must not be negative, got {out}")
    return out  # type: ignore[return-value]


def check_quaternion(value: Any, name: str = "orientation") -> tuple[float, float, float, float]:
    """A unit quaternion (w, x, y, z); normalised, with w >= 0 for one canonical sign."""
    q = check_vec(value, name, 4)
    norm = math.sqrt(sum(x * x for x in q))
    if norm < 1e-9:
        raise InvalidInput(f"{name} must be a non-zero quaternion (w, x, y, z), got {q}")
    if abs(norm - 1.0) > 1e-3:
        raise InvalidInput(f"{name} must be a unit quaternion (w, x, y, z); its norm is {norm:.6g}")
    q = tuple(x / norm for x in q)
    if q[0] < 0.0:
        q = tuple(-x for x in q)
    return q  # type: ignore[return-value]


def check_label(value: Any, name: str = "label") -> str:
    """A non-empty label without control characters, whitespace collapsed and lower-cased."""
    return check_text(value, name, max_chars=MAX_LABEL_CHARS).lower()


def check_feature(value: Any, name: str = "feature") -> np.ndarray:
    """An embedding: a 1-D array of finite numbers with a non-zero norm, as float32."""
    try:
        arr = np.asarray(value, dtype=np.float32)
    except (TypeError, ValueError) as exc:
        raise InvalidInput(f"{name} must be a 1-D array of numbers: {exc}") from None
    if arr.ndim != 1 or arr.size == 0:
        raise InvalidInput(f"{name} must be a non-empty 1-D array, got shape {arr.shape}")
    if not np.all(np.isfinite(arr)):
        raise InvalidInput(f"{name} must be finite")
    if float(np.linalg.norm(arr)) == 0.0:
        raise InvalidInput(f"{name} must have a non-zero norm")
    arr = arr.copy()
    arr.setflags(write=False)
    return arr


def check_track_id(value: Any, name: str = "track_id") -> str | None:
    """A perception track id (int or str), normalised to a string."""
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, (int, str, np.integer)):
        raise InvalidInput(f"{name} must be an int or a string, got {_describe(value)}")
    out = str(int(value)) if not isinstance(value, str) else value.strip()
    if not out or len(out) > MAX_LABEL_CHARS:
        raise InvalidInput(f"{name} must be 1 to {MAX_LABEL_CHARS} characters")
    return out


def check_int(value: Any, name: str, *, lo: int | None = None, hi: int | None = None) -> int:
    """An integer within optional bounds."""
    if isinstance(value, bool) or not isinstance(value, (int, np.integer)):
        raise InvalidInput(f"{name} must be an integer, got {_describe(value)}")
    out = int(value)
    if lo is not None and out < lo:
        raise InvalidInput(f"{name} must be >= {lo}, got {out}")
    if hi is not None and out > hi:
        raise InvalidInput(f"{name} must be <= {hi}, got {out}")
    return out


def check_scope(value: Any) -> str:
    """A scope name: 1 to 64 characters of letters, digits, ``-``, ``_``, ``.`` or ``/``."""
    from locimem.errors import ScopeError

    if not isinstance(value, str) or not 1 <= len(value) <= 64:
        raise ScopeError(f"scope must be a string of 1 to 64 characters, got {_describe(value)}")
    if not all(c.isalnum() or c in "-_./" for c in value):
        raise ScopeError(
            f"scope may hold only letters, digits and - _ . /, got {_describe(value)}"
        )
    if any(part in ("", ".", "..") for part in value.split("/")):
        raise ScopeError(
            "scope parts separated by / must be non-empty and not '.' or '..' "
            f"(e.g. 'fleet/home1'), got {_describe(value)}"
        )
    return value


def check_text(value: Any, name: str, *, max_chars: int = 100) -> str:
    """A non-empty, single-line string without control characters (whitespace collapsed)."""
    if not isinstance(value, str):
        raise InvalidInput(f"{name} must be a string, got {_describe(value)}")
    out = " ".join(value.split())
    if not out:
        raise InvalidInput(f"{name} must not be empty")
    if len(out) > max_chars:
        raise InvalidInput(f"{name} must be at most {max_chars} characters, got {len(out)}")
    if any(unicodedata.category(c) == "Cc" for c in out):
        raise InvalidInput(f"{name} must not contain control characters")
    return out


def check_attributes(values: Any) -> dict[str, str | float | int | bool]:
    """Object attributes: up to 32 short names mapped to strings, finite numbers or booleans."""
    if not isinstance(values, dict):
        raise InvalidInput(f"attributes must be a dict, got {_describe(values)}")
    if len(values) > 32:
        raise InvalidInput(f"at most 32 attributes at a time, got {len(values)}")
    out: dict[str, str | float | int | bool] = {}
    for key, value in values.items():
        name = check_text(key, "attribute name", max_chars=64)
        if isinstance(value, bool):
            out[name] = value
        elif isinstance(value, (int, np.integer)):
            out[name] = int(value)
        elif isinstance(value, (float, np.floating)):
            out[name] = check_float(value, f"attribute {name!r}")
        elif isinstance(value, str):
            out[name] = check_text(value, f"attribute {name!r}", max_chars=200)
        else:
            raise InvalidInput(
                f"attribute {name!r} must be a string, number or boolean, got {_describe(value)}"
            )
    return out


# -- domain limits -----------------------------------------------------------------------------
# What a memory of one map can hold. Far past any building or campus, and far inside what the
# float and integer arithmetic downstream (grids, areas, SQLite's 64-bit integers) handles
# exactly, so a value that passes here cannot overflow later.
MAX_COORD_M = 1e6  # |x|, |y|, |z| of a position or a room vertex, metres from the map origin
MAX_EXTENT_M = 1e4  # one extent of a box (a detection, a prior entry), metres
MAX_ID = 2**63 - 1  # ids are SQLite integers (signed 64-bit)


def check_position(value: Any, name: str, n: int = 3) -> tuple[float, ...]:
    """``n`` finite coordinates (metres, map frame), each within ±:data:`MAX_COORD_M`."""
    out = check_vec(value, name, n)
    for i, x in enumerate(out):
        if abs(x) > MAX_COORD_M:
            raise InvalidInput(f"{name}[{i}] must be within ±{MAX_COORD_M:g} m of the map "
                               f"origin, got {x:g}")
    return out


def check_coordinate(value: Any, name: str) -> float:
    """One finite coordinate (metres, map frame) within ±:data:`MAX_COORD_M`."""
    out = check_float(value, name)
    if abs(out) > MAX_COORD_M:
        raise InvalidInput(f"{name} must be within ±{MAX_COORD_M:g} m of the map origin, "
                           f"got {out:g}")
    return out


def check_extent(value: Any, name: str = "size") -> tuple[float, float, float]:
    """Box extents in metres: three finite numbers in [0, :data:`MAX_EXTENT_M`]."""
    out = check_size(value, name)
    for i, x in enumerate(out):
        if x > MAX_EXTENT_M:
            raise InvalidInput(f"{name}[{i}] must be at most {MAX_EXTENT_M:g} m, got {x:g}")
    return out


def check_id(value: Any, name: str) -> int:
    """An id: an integer within 63 bits (what the store can hold; negative ids are simply
    never found)."""
    return check_int(value, name, lo=-MAX_ID - 1, hi=MAX_ID)
