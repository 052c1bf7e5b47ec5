"""Boundary checks: normalise public inputs and raise :class:`InvalidInput` that names
what was expected and what came.

Everything inside the package trusts values that passed through here.
"""

from __future__ import annotations

import math
import sys
import unicodedata
from typing import Any

import numpy as np

from locimem.errors import InvalidInput

MAX_LABEL_CHARS = 200


def _describe(value: Any) -> str:
    text = repr(value)
    return text if len(text) <= 60 else text[:57] + "..."


MIN_NORMAL = sys.float_info.min
"""The smallest normal float (2.2e-308). A number closer to 0 — a *subnormal* such as 5e-324
— is flushed to 0.0 as it comes in (:func:`check_float`), so every backend holds the same
values: PostgreSQL refuses arithmetic that underflows (half of 5e-324 in a box is an error
there), SQLite does not."""


def flush_subnormal(value: float) -> float:
    """``value``, or 0.0 when it is subnormal (non-zero and smaller than :data:`MIN_NORMAL`).

    >>> flush_subnormal(5e-324), flush_subnormal(-1e-310), flush_subnormal(2.5e-308)
    (0.0, 0.0, 2.5e-308)
    """
    return 0.0 if value != 0.0 and -MIN_NORMAL < value < MIN_NORMAL else value


def check_float(value: Any, name: str) -> float:
    """A finite real number, as a Python float; a subnormal one is flushed to 0.0 (see
    :data:`MIN_NORMAL`)."""
    if isinstance(value, bool) or not isinstance(value, (int, float, np.integer, np.floating)):
        raise InvalidInput(f"{name} must be a finite number, got {_describe(value)}")
    try:
        out = float(value)
    except OverflowError:  # an int past a float's range
        raise InvalidInput(f"{name} must be a finite number, got an integer of "
                           f"{int(value).bit_length()} bits") from None
    if not math.isfinite(out):
        raise InvalidInput(f"{name} must be a finite number, got {out}")
    return flush_subnormal(out)


def check_time(value: Any, name: str = "t") -> float:
    """A finite time in seconds (any epoch the caller likes, used consistently)."""
    return check_float(value, name)


MAX_ABS_TIME_S = 1e10
"""The valid-time domain of what is written (a scan's ``t``, a correction's): within
±1e10 s of t = 0 — Unix time up to the year 2286, or any simulation clock. One scan far
outside it would make every later real scan "go back in time"; a clock in milliseconds or
nanoseconds is the usual cause, and the error says so."""

_TIME_UNITS = ((1e3, "milliseconds"), (1e6, "microseconds"), (1e9, "nanoseconds"))


def check_valid_time(value: Any, name: str = "t") -> float:
    """A time to record: finite and within :data:`MAX_ABS_TIME_S` of 0.

    >>> check_valid_time(1764600000.5)
    1764600000.5
    >>> check_valid_time(1764600000500)
    Traceback (most recent call last):
    ...
    locimem.errors.InvalidInput: t=1764600000500.0 is outside the valid-time domain (within \
±1e+10 s of t=0: Unix time up to the year 2286); it looks like milliseconds since the epoch: \
give seconds (t / 1000)
    """
    out = check_float(value, name)
    if abs(out) <= MAX_ABS_TIME_S:
        return out
    hint = "; give seconds of valid time"
    for scale, unit in _TIME_UNITS:
        if 1e9 <= out / scale < 1e10:  # Unix time (2001..2286) in a finer unit
            hint = f"; it looks like {unit} since the epoch: give seconds (t / {scale:g})"
            break
    raise InvalidInput(f"{name}={out!r} is outside the valid-time domain (within "
                       f"\u00b1{MAX_ABS_TIME_S:g} s of t=0: Unix time up to the year 2286){hint}")


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
    for x in value:  # the common case, Python floats that need no change, returned as they are
        if type(x) is not float or not (x == 0.0 or MIN_NORMAL <= abs(x) < math.inf):
            return tuple(check_float(x, f"{name}[{i}]") for i, x in enumerate(value))
    return tuple(value)


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
    q = tuple(flush_subnormal(x / norm) for x in q)
    if q[0] < 0.0:
        q = tuple(-x for x in q)
    return q  # type: ignore[return-value]


def check_label(value: Any, name: str = "label") -> str:
    """A non-empty label without control characters, whitespace collapsed and lower-cased."""
    return check_text(value, name, max_chars=MAX_LABEL_CHARS).lower()


def check_feature(value: Any, name: str = "feature") -> np.ndarray:
    """An embedding: a 1-D array of finite numbers with a non-zero norm, as float32 (a
    float32-subnormal value flushed to 0.0, as :func:`check_float` flushes numbers)."""
    try:
        raw = np.asarray(value)
        if raw.dtype.kind == "c":
            raise InvalidInput(f"{name} must hold real numbers, got dtype {raw.dtype}")
        with np.errstate(over="ignore"):  # past float32's range: refused as not finite below
            arr = raw.astype(np.float32) if raw.dtype.kind in "biuf" else \
                np.asarray(value, dtype=np.float32)
    except (TypeError, ValueError, OverflowError) as exc:
        if isinstance(exc, InvalidInput):
            raise
        raise InvalidInput(f"{name} must be a 1-D array of numbers: {exc}") from None
    if arr.ndim != 1 or arr.size == 0:
        raise InvalidInput(f"{name} must be a non-empty 1-D array, got shape {arr.shape}")
    check_feature_width(arr, name)
    if not np.all(np.isfinite(arr)):
        raise InvalidInput(f"{name} must be finite")
    arr = arr.copy()
    arr[(arr != 0.0) & (np.abs(arr) < np.finfo(np.float32).tiny)] = 0.0  # subnormal: flushed
    if float(np.linalg.norm(arr)) == 0.0:
        raise InvalidInput(f"{name} must have a non-zero norm")
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
    return check_clean_chars(out, name)


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
    return check_clean_chars(out, name)


def check_attributes(values: Any) -> dict[str, str | float | int | bool]:
    """Object attributes: up to 32 short names mapped to strings, finite numbers (integers
    within 64 bits, as a store holds them) or booleans."""
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
            number = int(value)
            if not -MAX_ID - 1 <= number <= MAX_ID:
                raise InvalidInput(f"attribute {name!r} must be an integer within 64 bits "
                                   f"(-2**63 to 2**63 - 1), got one of {number.bit_length()} "
                                   "bits; give a float or a string for larger numbers")
            out[name] = number
        elif isinstance(value, (float, np.floating)):
            out[name] = check_float(value, f"attribute {name!r}")
        elif isinstance(value, str):
            out[name] = check_text(value, f"attribute {name!r}", max_chars=200)
        else:
            raise InvalidInput(
                f"attribute {name!r} must be a string, number or boolean, got {_describe(value)}"
            )
    return out


# -- domains and clean text (issue 13: reliability) -------------------------------------------
MAX_ABS_COORD_M = 1e6
"""The documented coordinate domain: every position locimem accepts (detection centres, camera
positions, query points) has ``|x|, |y|, |z| <= MAX_ABS_COORD_M`` metres in the map frame —
1000 km, far beyond any map a robot keeps, and small enough that sums, squares and grid cells
stay exact and finite."""
MAX_SIZE_M = 1e4
"""Box extents are at most this many metres (10 km: past any building or campus, and far inside
what the box grid's integer cells and the areas downstream handle exactly); query radii and a
camera's range at most twice that."""
MAX_FEATURE_DIM = 4096
"""The widest embedding accepted, in floats (one store uses one width)."""
MAX_ID = 2**63 - 1
"""Object ids, record seqs and commit ids are SQLite integers (64-bit, signed); locimem's own
are >= 1."""


def check_coordinate(value: Any, name: str) -> float:
    """One finite coordinate (metres, map frame) within ``MAX_ABS_COORD_M`` of the origin (a
    room vertex, a z range)."""
    out = check_float(value, name)
    if abs(out) > MAX_ABS_COORD_M:
        raise InvalidInput(f"{name} must be within {MAX_ABS_COORD_M:g} m of the map origin, "
                           f"got {out:g}")
    return out


def check_coordinate_domain(value: Any, name: str) -> tuple[float, float, float]:
    """A point (x, y, z), metres, map frame, inside the documented domain
    (``|coordinate| <= MAX_ABS_COORD_M``), as a tuple of floats."""
    out = check_vec(value, name, 3)
    if any(abs(x) > MAX_ABS_COORD_M for x in out):
        raise InvalidInput(f"{name} must lie within {MAX_ABS_COORD_M:g} m of the origin on "
                           f"every axis (the map frame's domain), got {out}")
    return out  # type: ignore[return-value]


def check_size_domain(value: Any, name: str = "size") -> tuple[float, float, float]:
    """Box extents (dx, dy, dz) in metres: each >= 0 and at most ``MAX_SIZE_M``."""
    out = check_size(value, name)
    if any(x > MAX_SIZE_M for x in out):
        raise InvalidInput(f"{name} must be at most {MAX_SIZE_M:g} m on every axis, got {out}")
    return out


def check_distance_domain(value: Any, name: str) -> float:
    """A distance in metres, > 0 and at most ``2 * MAX_SIZE_M`` (the domain's diagonal)."""
    out = check_positive(value, name)
    if out > 2 * MAX_SIZE_M:
        raise InvalidInput(f"{name} must be at most {2 * MAX_SIZE_M:g} m, got {out:g}")
    return out


def check_object_id(value: Any, name: str = "object_id") -> int:
    """An id to look up: an integer a SQLite store can hold, in [-2**63, 2**63 - 1] (one
    outside that range cannot name anything; one inside it that names nothing is for the
    caller to report as :class:`~locimem.errors.NotFound`)."""
    if isinstance(value, bool) or not isinstance(value, (int, np.integer)):
        raise InvalidInput(f"{name} must be an integer, got {_describe(value)}")
    out = int(value)
    if not -MAX_ID - 1 <= out <= MAX_ID:
        raise InvalidInput(f"{name} must be an integer that fits in 64 bits (at most 2**63 - 1 "
                           f"= {MAX_ID}), got {out}")
    return out


def check_clean_chars(value: str, name: str) -> str:
    """Refuse what cannot be stored or shown safely: lone surrogates (not UTF-8), control
    characters, and invisible format characters (U+202E right-to-left override, zero-width
    spaces, tag characters, ...)."""
    for c in value:
        category = unicodedata.category(c)
        if category == "Cs":
            raise InvalidInput(f"{name} must not contain a lone surrogate (U+{ord(c):04X}); "
                               "it is not valid Unicode text")
        if category == "Cc":
            raise InvalidInput(f"{name} must not contain control characters")
        if category == "Cf":
            raise InvalidInput(f"{name} must not contain an invisible format character "
                               f"(U+{ord(c):04X})")
    return value


def check_feature_width(arr: np.ndarray, name: str = "feature") -> np.ndarray:
    """An embedding no wider than ``MAX_FEATURE_DIM`` floats."""
    if arr.size > MAX_FEATURE_DIM:
        raise InvalidInput(f"{name} must have at most {MAX_FEATURE_DIM} values, got "
                           f"{arr.size}")
    return arr


def check_depth_image(value: Any, name: str = "camera.depth") -> np.ndarray:
    """A depth image: a (h, w) array of real numbers (metres), as read-only float32."""
    try:
        raw = np.asarray(value)
    except (TypeError, ValueError) as exc:  # ragged nested lists
        raise InvalidInput(f"{name} must be a (h, w) array of numbers: {exc}") from None
    if raw.dtype.kind == "c":
        raise InvalidInput(f"{name} must hold real numbers (distances in metres), got "
                           f"dtype {raw.dtype}")
    if raw.dtype.kind not in "biuf":
        raise InvalidInput(f"{name} must hold numbers, got dtype {raw.dtype}")
    if raw.ndim != 2 or min(raw.shape) < 1:
        raise InvalidInput(f"{name} must be a (h, w) array, got shape {raw.shape}")
    with np.errstate(over="ignore"):  # beyond float32: inf, which reads as "no reading"
        depth = raw.astype(np.float32)  # a copy, never a view of the caller's array
    depth.setflags(write=False)
    return depth


def check_path_text(value: Any, name: str, *, max_chars: int = 4096) -> str:
    """A path or URI, kept exactly as given (spaces included): a non-empty string of at most
    ``max_chars`` characters with no control, format or surrogate characters."""
    if not isinstance(value, str):
        raise InvalidInput(f"{name} must be a string, got {_describe(value)}")
    if not value:
        raise InvalidInput(f"{name} must not be empty")
    if len(value) > max_chars:
        raise InvalidInput(f"{name} must be at most {max_chars} characters, got {len(value)}")
    return check_clean_chars(value, name)
