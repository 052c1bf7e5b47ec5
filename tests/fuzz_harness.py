"""A fuzz harness over locimem's input boundary: ``Detection`` and ``Camera`` built from fuzzed
bytes and passed to ``observe``, and ``tools().call`` with fuzzed names and arguments.

The property: every exception is a :class:`~locimem.errors.LocimemError` (``ToolError`` for the
tools), no tool call ends in the tools' "internal error" (which wraps an untyped exception),
and no warning escapes (numpy's cast warnings meant a value was silently changed). Anything
else is a finding.

Run it under atheris (``pip install atheris``), coverage-guided, for a bounded time::

    PYTHONPATH=src python tests/fuzz_harness.py -max_total_time=600 -artifact_prefix=/tmp/

``tests/test_fuzz_atheris.py`` does that for a bounded time as a slow test, and runs the same
harness over seeded random bytes (no atheris needed) in the quick suite.
"""

from __future__ import annotations

import json
import math
import random
import sys
import warnings
from typing import Any

import numpy as np

from locimem import Camera, Detection, ObjectMemory
from locimem.errors import LocimemError, ToolError

TOOL_NAMES = ("find_objects", "where_is", "objects_near_point", "objects_near_object",
              "related_objects", "room_contents", "list_rooms", "path_between_rooms",
              "recent_changes", "recently_seen", "describe_object", "object_history",
              "scene_summary", "ask_memory", "correct_label", "forget_object")
ARG_NAMES = ("text", "name", "point", "radius_m", "object_id", "room", "from_room", "to_room",
             "since_t", "since", "n", "limit", "budget_tokens", "focus", "question", "label",
             "reason", "top_k", "relation", "status", "k", "t")
FLOATS = (0.0, -0.0, 1.0, -1.0, 0.5, 1e-300, 1e6, -1e6, 1e6 + 1, 1e19, 1e300, 1e308,
          math.inf, -math.inf, math.nan, 2.0**63, 179.9, 180.0)
INTS = (0, 1, -1, 2, 7, 2**31, 2**53, 2**63 - 1, 2**63, -(2**63) - 1, 10**30)
STRINGS = ("cup", "", " ", "kitchen", "cup\ud800", "cup\u202e", "a\x00b", "\x1b[31m", "é",
           "x" * 300, "the cup", "🍵", "\n", "table", "1", "1e308", "NaN")


class RandomBytes:
    """The subset of ``atheris.FuzzedDataProvider`` the harness uses, over seeded random
    choices (for the quick suite, where atheris may not be installed)."""

    def __init__(self, rng: random.Random) -> None:
        self.rng = rng

    def ConsumeIntInRange(self, lo: int, hi: int) -> int:  # atheris names them so
        return self.rng.randint(lo, hi)

    def ConsumeBool(self) -> bool:
        return self.rng.random() < 0.5

    def ConsumeFloat(self) -> float:
        return self.rng.choice(FLOATS) if self.rng.random() < 0.5 else \
            self.rng.uniform(-10.0, 10.0)

    def ConsumeUnicode(self, n: int) -> str:
        return "".join(chr(self.rng.randint(0, 0x10FFFF if self.rng.random() < 0.3 else 0x7F))
                       for _ in range(self.rng.randint(0, n)))


def value(fdp: Any, depth: int = 0) -> Any:
    """Any value a caller might pass: numbers of every edge, strings with every kind of
    character, None, bools, lists, tuples, dicts and numpy arrays of several dtypes."""
    kind = fdp.ConsumeIntInRange(0, 12 if depth < 2 else 7)
    if kind == 0:
        return fdp.ConsumeFloat()
    if kind == 1:
        return FLOATS[fdp.ConsumeIntInRange(0, len(FLOATS) - 1)]
    if kind == 2:
        return INTS[fdp.ConsumeIntInRange(0, len(INTS) - 1)]
    if kind == 3:
        return fdp.ConsumeIntInRange(-5, 20)
    if kind == 4:
        return STRINGS[fdp.ConsumeIntInRange(0, len(STRINGS) - 1)]
    if kind == 5:
        return fdp.ConsumeUnicode(12)
    if kind == 6:
        return None
    if kind == 7:
        return fdp.ConsumeBool()
    if kind in (8, 9):
        items = [value(fdp, depth + 1) for _ in range(fdp.ConsumeIntInRange(0, 5))]
        return items if kind == 8 else tuple(items)
    if kind == 10:
        return {fdp.ConsumeUnicode(4): value(fdp, depth + 1)
                for _ in range(fdp.ConsumeIntInRange(0, 3))}
    if kind == 11:
        return vector(fdp, fdp.ConsumeIntInRange(0, 6))
    return array(fdp)


def vector(fdp: Any, n: int) -> Any:
    """Mostly well-formed: ``n`` numbers, now and then one of any value."""
    return [fdp.ConsumeFloat() if fdp.ConsumeIntInRange(0, 9) else value(fdp, 2)
            for _ in range(n)]


def array(fdp: Any) -> np.ndarray:
    shape = tuple(fdp.ConsumeIntInRange(0, 4) for _ in range(fdp.ConsumeIntInRange(0, 3)))
    dtype = (np.float32, np.float64, np.int16, np.complex128, np.bool_, object, np.uint8,
             "U3")[fdp.ConsumeIntInRange(0, 7)]
    size = int(np.prod(shape)) if shape else 1
    data = [fdp.ConsumeFloat() for _ in range(size)]
    try:
        with np.errstate(all="ignore"), warnings.catch_warnings():
            warnings.simplefilter("ignore")  # the harness's own casts, not the library's
            return np.array(data, dtype=dtype).reshape(shape)
    except (ValueError, TypeError, OverflowError):
        return np.zeros(shape, dtype=np.float32)


def pick(fdp: Any, good: Any) -> Any:
    """``good`` most of the time (so later checks are reached), any value otherwise."""
    return good if fdp.ConsumeIntInRange(0, 3) else value(fdp)


def detection(fdp: Any) -> Detection:
    center = vector(fdp, 3) if fdp.ConsumeBool() else [fdp.ConsumeIntInRange(-3, 3) * 0.5,
                                                        0.0, 0.8]
    return Detection(
        pick(fdp, STRINGS[fdp.ConsumeIntInRange(0, len(STRINGS) - 1)]),
        pick(fdp, 0.9), pick(fdp, center), pick(fdp, [0.1, 0.1, 0.1]),
        feature=pick(fdp, None if fdp.ConsumeBool() else [1.0, 0.0, 0.0, 0.5]),
        track_id=pick(fdp, None), orientation=pick(fdp, None))


def camera(fdp: Any) -> Camera:
    return Camera(pick(fdp, [0.0, 0.0, 1.2]), pick(fdp, [1.0, 0.0, 0.0, 0.0]),
                  pick(fdp, 60.0), pick(fdp, 5.0), vfov_deg=pick(fdp, 45.0),
                  depth=pick(fdp, None), image=pick(fdp, None), intrinsics=pick(fdp, None))


class Harness:
    """One memory, fed one fuzz input at a time (reopened now and then, so it stays small)."""

    def __init__(self) -> None:
        self.mem = ObjectMemory.open(":memory:", scope="fuzz")
        self.t = 0.0
        self.calls = 0

    def close(self) -> None:
        self.mem.close()

    def one_input(self, fdp: Any) -> None:
        self.calls += 1
        if self.calls % 500 == 0:  # keep the memory small: the cost per input stays flat
            self.mem.close()
            self.mem = ObjectMemory.open(":memory:", scope="fuzz")
            self.t = 0.0
        if fdp.ConsumeBool():
            self._observe(fdp)
        else:
            self._tool(fdp)

    def _observe(self, fdp: Any) -> None:
        try:
            dets = [detection(fdp) for _ in range(fdp.ConsumeIntInRange(0, 3))]
            cam = camera(fdp) if fdp.ConsumeBool() else None
            self.t += 1.0
            t = pick(fdp, self.t)
            self.mem.observe(t, dets, camera=cam, source=pick(fdp, "fuzz"))
        except LocimemError:
            pass

    def _tool(self, fdp: Any) -> None:
        writes = fdp.ConsumeBool()
        name = TOOL_NAMES[fdp.ConsumeIntInRange(0, len(TOOL_NAMES) - 1)] \
            if fdp.ConsumeIntInRange(0, 9) else value(fdp)
        arguments: Any = {ARG_NAMES[fdp.ConsumeIntInRange(0, len(ARG_NAMES) - 1)]: value(fdp)
                          for _ in range(fdp.ConsumeIntInRange(0, 3))}
        style = fdp.ConsumeIntInRange(0, 5)
        if style == 0:
            try:
                arguments = json.dumps(arguments, ensure_ascii=fdp.ConsumeBool())
            except (TypeError, ValueError):
                arguments = fdp.ConsumeUnicode(20)
        elif style == 1:
            arguments = value(fdp)
        try:
            self.mem.tools(allow_writes=writes).call(name, arguments)
        except ToolError as exc:
            if "internal error" in str(exc):
                raise AssertionError(f"tool {name!r} hit an internal error on {arguments!r}: "
                                     f"{exc.__cause__!r}") from exc.__cause__


def main() -> None:  # pragma: no cover - run by hand, or by tests/test_fuzz_atheris.py
    import atheris

    harness = Harness()
    warnings.simplefilter("error")  # a warning the library lets out (a silent cast) is a finding

    def test_one_input(data: bytes) -> None:
        harness.one_input(atheris.FuzzedDataProvider(data))

    atheris.instrument_all()
    atheris.Setup(sys.argv, test_one_input)
    atheris.Fuzz()


if __name__ == "__main__":  # pragma: no cover
    main()
