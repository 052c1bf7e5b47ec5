"""Tools a language model can call: one registry, JSON schemas for the common shapes, strict
argument checks, safe errors, results that cite object ids.

>>> from locimem import Detection, ObjectMemory
>>> with ObjectMemory.open(":memory:") as mem:
...     for t in range(6):
...         _ = mem.observe(float(t), [Detection("cup", 0.9, (0.4, 0.1, 0.9), (0.1, 0.1, 0.1))])
...     tools = mem.tools()
...     r = tools.call("where_is", {"name": "cup"})
...     r["answer"], r["cite"]
('The "cup" (#1) is at (0.40, 0.10, 0.90); last seen just now (t=5.0 s).', [1])

Every argument is untrusted: each tool's schema bounds its integers, requires finite
coordinates and positive radii, lists enums and caps string lengths, and :meth:`call` checks
the arguments against it before anything runs. Any failure — a bad argument, an unknown id,
a read-only memory, an internal error — surfaces as :class:`~locimem.errors.ToolError` whose
message is written here, names only the tool's own argument names, and never carries the
value given, an exception's text or a traceback. Every result is JSON-ready and lists the
object ids it speaks of under ``cite``; every perception-derived string in it is cleaned
(:func:`locimem.agent.safety.clean`).

Write tools (``correct_label``, ``forget_object``) exist but are only offered, and only
callable, when the registry is built with ``allow_writes=True`` on a writable memory.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import TYPE_CHECKING, Any

from locimem.agent.arguments import Arguments, normalise
from locimem.agent.catalog import SPECS
from locimem.agent.toolspec import (
    DEFAULT_ACTOR,
    MAX_ARGUMENT_CHARS,
    STRICT_KEYWORDS,
    STYLES,
    Context,
    MemoryWriter,
    ToolSpec,
    strict_parameters,
)
from locimem.errors import (
    InvalidInput,
    LocimemError,
    NotFound,
    ReadOnly,
    StoreClosed,
    ToolError,
)

if TYPE_CHECKING:
    from locimem.query.reader import MemoryReader

__all__ = ["SPECS", "STRICT_KEYWORDS", "STYLES", "ToolRegistry", "ToolSpec", "strict_parameters"]


class ToolRegistry:
    """The tools over one memory (or as-of view). Build it with ``mem.tools()``.

    Args:
        reader: the memory the tools read (its scope only).
        allow_writes: also offer ``correct_label`` and ``forget_object``. Refused with
            :class:`~locimem.errors.ReadOnly` unless ``writer`` (by default ``reader``) is
            a writable :class:`~locimem.ObjectMemory`.
        actor: who the audit trail names for writes made through the tools.
        writer: the memory the write tools correct, when it is not ``reader`` itself
            (``mem.tools()`` reads the memory's reader and writes through the memory).
    """

    def __init__(self, reader: MemoryReader, allow_writes: bool = False, *,
                 actor: str = DEFAULT_ACTOR, writer: MemoryWriter | None = None) -> None:
        if not isinstance(allow_writes, bool):
            raise InvalidInput("allow_writes must be True or False")
        target: Any = reader if writer is None else writer
        if allow_writes:
            _check_writable(target)
        self._ctx = Context(reader, actor, target if allow_writes else None)
        self._allow_writes = allow_writes
        self._specs = {s.name: s for s in SPECS if allow_writes or not s.writes}

    @property
    def allow_writes(self) -> bool:
        return self._allow_writes

    def names(self) -> list[str]:
        """The names of the tools offered, in declaration order."""
        return list(self._specs)

    def __contains__(self, name: object) -> bool:
        return name in self._specs

    def __iter__(self) -> Iterator[ToolSpec]:
        return iter(self._specs.values())

    def __len__(self) -> int:
        return len(self._specs)

    def spec(self, name: str) -> ToolSpec:
        """The :class:`ToolSpec` of an offered tool (ToolError if it is not offered)."""
        return self._lookup(name)

    def schemas(self, style: str = "openai", *, strict: bool = False) -> list[dict[str, Any]]:
        """Every offered tool's declaration: ``"openai"`` (chat-completions ``tools``),
        ``"responses"`` (the Responses API's ``tools``), ``"anthropic"`` (messages ``tools``)
        or ``"mcp"`` (``inputSchema``); ``strict=True`` for OpenAI's strict mode."""
        if style not in STYLES:
            raise InvalidInput(f"style must be one of {', '.join(STYLES)}, got {style!r}")
        return [s.schema(style, strict=strict) for s in self._specs.values()]

    def _lookup(self, name: Any) -> ToolSpec:
        if isinstance(name, str) and name in self._specs:
            return self._specs[name]
        if isinstance(name, str) and name in _WRITE_NAMES:
            raise ToolError(f"the tool {name} is disabled: this memory's tools are read-only")
        raise ToolError(f"unknown tool; the tools are: {', '.join(self._specs)}")

    def call(self, name: str, arguments: dict[str, Any] | str | None = None) -> dict[str, Any]:
        """Run a tool. ``arguments`` is a dict, a JSON object in a string (as function-calling
        APIs deliver it) or None. Returns a JSON-ready dict whose ``cite`` lists the object
        ids it speaks of. Raises :class:`~locimem.errors.ToolError` (a safe message) on any
        failure."""
        spec = self._lookup(name)
        args = _parse_arguments(spec, arguments)
        try:
            result = spec.handler(self._ctx, args)
        except ToolError:
            raise
        except NotFound:
            raise ToolError(f"{spec.name}: not found: no such object or room in this memory "
                            "(find ids with find_objects, rooms with list_rooms)") from None
        except ReadOnly:
            raise ToolError(f"{spec.name}: this memory is read-only") from None
        except StoreClosed:
            raise ToolError(f"{spec.name}: the memory is closed") from None
        except InvalidInput:
            raise ToolError(f"{spec.name}: invalid arguments; see the tool's schema") from None
        except LocimemError:
            raise ToolError(f"{spec.name}: the memory refused the request") from None
        except Exception as exc:  # a bug must not leak internals to a model
            raise ToolError(f"{spec.name}: internal error; the call was not completed") \
                from exc
        result["cite"] = sorted(_ids_in(result))
        return result

    def call_json(self, name: str, arguments: dict[str, Any] | str | None = None) -> str:
        """:meth:`call`, returning the result as JSON text — or, on failure, a JSON object
        ``{"error": message}`` (never raising for a tool failure), ready to send back to a
        model as the tool's output."""
        try:
            return json.dumps(self.call(name, arguments), ensure_ascii=False)
        except ToolError as exc:
            return json.dumps({"error": str(exc)}, ensure_ascii=False)


_WRITE_NAMES = frozenset({"correct_label", "forget_object"})


def _check_writable(reader: Any) -> None:
    relabel = getattr(reader, "relabel", None)
    if relabel is None or not callable(getattr(reader, "forget", None)):
        raise ReadOnly("allow_writes=True needs a writable ObjectMemory; this reader is a "
                       "read-only view (as_of views never take writes)")
    if getattr(reader, "read_only", True):
        raise ReadOnly("allow_writes=True needs a writable ObjectMemory; this memory was "
                       "opened with read_only=True")


def _parse_arguments(spec: ToolSpec, arguments: Any) -> dict[str, Any]:
    if arguments is None:
        arguments = {}
    if isinstance(arguments, (str, bytes)):
        if len(arguments) > MAX_ARGUMENT_CHARS:
            raise ToolError(f"{spec.name}: arguments are too long")
        try:
            arguments = json.loads(arguments or "{}")
        except (ValueError, RecursionError, UnicodeDecodeError):
            raise ToolError(f"{spec.name}: arguments must be a JSON object") from None
    if not isinstance(arguments, dict):
        raise ToolError(f"{spec.name}: arguments must be a JSON object")
    try:
        problems = _checker(spec).problems(arguments)
    except RecursionError:
        raise ToolError(f"{spec.name}: arguments are nested too deeply") from None
    if problems:
        raise ToolError(f"{spec.name}: invalid arguments: {'; '.join(problems)}")
    return normalise(arguments, spec.parameters)


_CHECKERS: dict[str, Arguments] = {}  # compiled once per tool (the specs are constants)


def _checker(spec: ToolSpec) -> Arguments:
    checker = _CHECKERS.get(spec.name)
    if checker is None or checker.schema is not spec.parameters:
        checker = _CHECKERS[spec.name] = Arguments(spec.parameters)
    return checker


def _ids_in(value: Any) -> set[int]:
    out: set[int] = set()
    stack = [value]
    while stack:
        v = stack.pop()
        if isinstance(v, dict):
            oid = v.get("id")
            if isinstance(oid, int) and not isinstance(oid, bool):
                out.add(oid)
            stack.extend(x for k, x in v.items() if k != "cite")
        elif isinstance(v, list):
            stack.extend(v)
    return out


for _spec in SPECS:  # a schema may only use what the checker words messages for
    _checker(_spec)
