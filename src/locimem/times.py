"""One time contract for every front end: how valid times are read from a person and shown.

locimem's times are seconds on the caller's clock (``Detection`` scans, ``as_of``, ``since``).
A robot stamps them with ROS time or Unix time; a simulation with seconds from its start. So:

- **Shown** (text a person reads): a time that looks like Unix time (in
  :data:`UNIX_TIME`, 2001-09-09 to 2286) as ISO 8601 in UTC, anything else as seconds
  (``t=12.00 s``). JSON carries the seconds, and beside them the ISO form where there is one
  (:func:`time_doc`).
- **Read** (``--since``, ``as of``, "since 10:00"): :func:`parse_time` takes seconds
  (``120``, ``1764600000.5``), ISO 8601 (``2026-12-03T10:00:00Z``, ``2026-12-03 10:00``, an
  offset such as ``+01:00``; without one it is UTC), or a clock time ``HH:MM[:SS]``: the
  latest such moment not after the store's latest scan, on its UTC day (the day before if
  that moment is still to come). A store whose times are not Unix time has a day that starts
  at ``t = 0``: ``10:00`` is ``t = 36000``.

Pure functions; nothing here reads the wall clock.
"""

from __future__ import annotations

import math
import re
from datetime import datetime, timezone
from typing import Any

from locimem.errors import InvalidInput

__all__ = ["UNIX_TIME", "clock_time", "iso", "looks_unix", "parse_time", "time_doc",
           "time_text"]

UNIX_TIME = (1e9, 1e10)
"""A valid time in ``[UNIX_TIME[0], UNIX_TIME[1])`` (2001-09-09 to 2286) reads as Unix time."""

DAY_S = 86400.0
_CLOCK = re.compile(r"^(\d{1,2}):(\d{2})(?::(\d{2}(?:\.\d+)?))?$")


def looks_unix(t: float | None) -> bool:
    """Whether ``t`` (seconds) reads as Unix time.

    >>> looks_unix(1764600000.0), looks_unix(12.0), looks_unix(None)
    (True, False, False)
    """
    return t is not None and UNIX_TIME[0] <= t < UNIX_TIME[1]


def iso(t: float | None, *, ms: bool = True) -> str | None:
    """``t`` as ISO 8601 in UTC (to the millisecond, or the second), or None when it does not
    look like Unix time.

    >>> iso(1764600000.25), iso(1764600000.25, ms=False), iso(12.0)
    ('2025-12-01T14:40:00.250Z', '2025-12-01T14:40:00Z', None)
    """
    if not looks_unix(t):
        return None
    assert t is not None
    moment = datetime.fromtimestamp(t, tz=timezone.utc)
    if not ms:
        return moment.strftime("%Y-%m-%dT%H:%M:%SZ")
    return moment.strftime("%Y-%m-%dT%H:%M:%S.") + f"{moment.microsecond // 1000:03d}Z"


def time_text(t: float | None, *, ms: bool = True, digits: int = 2) -> str:
    """A valid time for a person: ISO 8601 (UTC) when it looks like Unix time, else seconds.

    >>> time_text(1764600000.0), time_text(12.0), time_text(12.0, digits=1), time_text(None)
    ('2025-12-01T14:40:00.000Z', 't=12.00 s', 't=12.0 s', 't=?')
    """
    if t is None:
        return "t=?"
    return iso(t, ms=ms) or f"t={t:.{digits}f} s"


def time_doc(t: float | None) -> dict[str, Any]:
    """A time for JSON a person may read too: the seconds, and their ISO 8601 form (None when
    the time is not Unix time).

    >>> time_doc(1764600000.0)
    {'t': 1764600000.0, 'iso': '2025-12-01T14:40:00.000Z'}
    """
    return {"t": t, "iso": iso(t)}


def clock_time(seconds_of_day: float, now: float | None) -> float:
    """A clock time (seconds since midnight) as a valid time: on the UTC day of ``now`` when
    times look like Unix time — the latest such moment not after ``now`` — else counted from
    ``t = 0`` (a store's first day).

    >>> clock_time(36000.0, 1764600000.0)  # 10:00 on 2025-12-01 (now is 14:40)
    1764583200.0
    >>> clock_time(54000.0, 1764600000.0)  # 15:00 is still to come: the day before
    1764514800.0
    >>> clock_time(36000.0, 500.0)
    36000.0
    """
    if now is None or not looks_unix(now):
        return seconds_of_day
    midnight = now - (now % DAY_S)
    t = midnight + seconds_of_day
    return t - DAY_S if t > now else t


def parse_time(text: str | float | int, *, now: float | None = None,
               what: str = "time") -> float:
    """A valid time from a person: seconds, ISO 8601, or a clock time ``HH:MM[:SS]`` (see the
    module); ``now`` is the store's latest scan time (for clock times). Raises
    :class:`InvalidInput` naming ``what`` and the forms it takes.

    >>> parse_time("120"), parse_time("2025-12-01T14:40:00Z"), parse_time("10:00", now=500)
    (120.0, 1764600000.0, 36000.0)
    >>> parse_time("2025-12-01T15:40:00+01:00")
    1764600000.0
    """
    if isinstance(text, bool):
        raise InvalidInput(f"{what} must be a time, got {text!r}")
    value: float | None
    if isinstance(text, (int, float)):
        value = float(text)
    else:
        s = str(text).strip()
        value = _number(s)
        if value is None:
            clock = _CLOCK.match(s)
            if clock is not None:
                h, m, sec = int(clock[1]), int(clock[2]), float(clock[3] or 0.0)
                if h > 23 or m > 59 or sec >= 60:
                    raise InvalidInput(f"{what}: {s!r} is not a clock time (00:00 to 23:59:59)")
                return clock_time(h * 3600.0 + m * 60.0 + sec, now)
            value = _iso_seconds(s, what)
    if not math.isfinite(value):
        raise InvalidInput(f"{what} must be finite, got {text!r}")
    return value


def _number(s: str) -> float | None:
    try:
        return float(s)
    except ValueError:
        return None


def _iso_seconds(s: str, what: str) -> float:
    text = s[:-1] + "+00:00" if s.endswith(("Z", "z")) else s
    try:
        moment = datetime.fromisoformat(text)
    except ValueError:
        raise InvalidInput(
            f"{what}: {s!r} is not a time; give seconds (120, 1764600000.5), ISO 8601 "
            "(2026-12-03T10:00:00Z) or a clock time on the store's day (10:00)") from None
    if moment.tzinfo is None:
        moment = moment.replace(tzinfo=timezone.utc)
    return moment.timestamp()
