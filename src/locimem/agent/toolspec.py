"""What a tool is: its declaration (:class:`ToolSpec`), the JSON-schema fragments the
declarations share, and the strict-mode form of a schema (:func:`strict_parameters`)."""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Protocol

from locimem.errors import InvalidInput

if TYPE_CHECKING:
    from locimem.query.reader import MemoryReader

__all__ = [
    "DEFAULT_ACTOR",
    "ID",
    "LABEL_FILTER",
    "MAX_ARGUMENT_CHARS",
    "POINT",
    "RADIUS",
    "ROOM",
    "STRICT_KEYWORDS",
    "STYLES",
    "TIME",
    "TIME_TEXT",
    "Context",
    "MemoryWriter",
    "ToolSpec",
    "limit_schema",
    "params_schema",
    "strict_parameters",
]


STYLES = ("openai", "responses", "anthropic", "mcp")
# what OpenAI's strict mode accepts in a schema; string lengths and defaults go into the
# description (every bound is still checked when the tool is called)
STRICT_KEYWORDS = frozenset({"type", "properties", "required", "additionalProperties", "enum",
                             "minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum",
                             "items", "minItems", "maxItems", "description"})
MAX_ARGUMENT_CHARS = 20_000
MAX_ID = 2**53 - 1
COORD_M = 100_000.0
DEFAULT_ACTOR = "agent"

# -- schema fragments ---------------------------------------------------------------------------
ID = {"type": "integer", "minimum": 1, "maximum": MAX_ID,
       "description": "An object id from another tool's result (cite it as #id)."}
POINT = {"type": "array", "minItems": 3, "maxItems": 3,
          "items": {"type": "number", "minimum": -COORD_M, "maximum": COORD_M},
          "description": "x, y, z in metres, map frame, z up."}
RADIUS = {"type": "number", "exclusiveMinimum": 0, "maximum": 100, "default": 1.0,
           "description": "Search radius in metres (greater than 0, at most 100)."}
LABEL_FILTER = {"type": "string", "minLength": 1, "maxLength": 100,
                 "description": "Only objects whose label contains these whole words."}
ROOM = {"type": "string", "minLength": 1, "maxLength": 64,
         "description": "A room name as listed by list_rooms."}
TIME: dict[str, Any] = {"type": "number", "minimum": -1e12, "maximum": 1e12,
                        "description": "A scan time in seconds (the memory's clock)."}
TIME_TEXT = {"type": "string", "minLength": 1, "maxLength": 40,
              "description": "A time: seconds (120), ISO 8601 (2026-12-03T10:00:00Z) or a "
                             "clock time on the day of the latest scan (10:00)."}


def limit_schema(default: int, most: int = 100) -> dict[str, Any]:
    return {"type": "integer", "minimum": 1, "maximum": most, "default": default,
            "description": f"At most this many results (1 to {most})."}


def params_schema(properties: dict[str, Any], required: tuple[str, ...] = (),
            examples: tuple[dict[str, Any], ...] = ({},)) -> dict[str, Any]:
    return {"type": "object", "properties": properties, "required": list(required),
            "additionalProperties": False, "examples": [dict(e) for e in examples]}


# -- the registry -------------------------------------------------------------------------------
@dataclass
class Context:
    """What a handler gets besides its arguments: the reader, who writes, and the memory the
    write tools write to (None when writes are not offered)."""

    reader: MemoryReader
    actor: str
    writer: MemoryWriter | None = None


class MemoryWriter(Protocol):
    """The corrections the write tools make (an open :class:`~locimem.ObjectMemory`)."""

    @property
    def read_only(self) -> bool: ...

    def relabel(self, object_id: int, label: str, *, actor: str = ...,
                reason: str | None = ..., t: float | None = ...) -> Any: ...

    def forget(self, object_id: int, *, actor: str = ..., reason: str | None = ...,
               t: float | None = ...) -> Any: ...


Handler = Callable[[Context, dict[str, Any]], dict[str, Any]]


@dataclass(frozen=True)
class ToolSpec:
    """One tool: its name, description, JSON schema (with ``examples``), whether it writes,
    and the handler that runs it."""

    name: str
    description: str
    parameters: dict[str, Any]
    handler: Handler = field(repr=False, compare=False)
    writes: bool = False

    @property
    def examples(self) -> list[dict[str, Any]]:
        return list(self.parameters.get("examples", []))

    def schema(self, style: str = "openai", *, strict: bool = False) -> dict[str, Any]:
        """This tool's declaration in one function-calling ``style``: ``"openai"`` (Chat
        Completions: ``{"type": "function", "function": {...}}``), ``"responses"`` (the
        Responses API's flat ``{"type": "function", "name", ...}``), ``"anthropic"`` or
        ``"mcp"``. ``strict``: OpenAI's strict mode (``"strict": true``, see
        :func:`strict_parameters`; openai and responses styles only)."""
        params = json.loads(json.dumps(self.parameters))  # a private copy
        if strict:
            if style not in ("openai", "responses"):
                raise InvalidInput(f"strict schemas are OpenAI's (style openai or responses), "
                                   f"not {style!r}")
            params = strict_parameters(params)
        if style == "openai":
            function = {"name": self.name, "description": self.description,
                        "parameters": params}
            if strict:
                function["strict"] = True
            return {"type": "function", "function": function}
        if style == "responses":
            return {"type": "function", "name": self.name, "description": self.description,
                    "parameters": params, "strict": strict}
        if style == "anthropic":
            return {"name": self.name, "description": self.description, "input_schema": params}
        if style == "mcp":
            return {"name": self.name, "description": self.description, "inputSchema": params}
        raise InvalidInput(f"style must be one of {', '.join(STYLES)}, got {style!r}")

    def strict_examples(self) -> list[dict[str, Any]]:
        """The examples as a strict-mode call sends them: every argument present, null
        where the example leaves one out."""
        names = list(self.parameters.get("properties", {}))
        return [{name: example.get(name) for name in names} for example in self.examples]


def strict_parameters(schema: dict[str, Any]) -> dict[str, Any]:
    """An argument schema in OpenAI's strict mode: every property required, the optional
    ones nullable (``["integer", "null"]``; an enum also lists null), no additional
    properties, and only the keywords strict mode takes (:data:`STRICT_KEYWORDS`) — a
    default and string lengths are said in the description instead. A call with null for
    an optional argument is the same call without it (the registry reads null as absent).

    >>> limit = strict_parameters({"type": "object", "properties": {"limit": {
    ...     "type": "integer", "minimum": 1, "maximum": 5, "default": 3, "description": "At most"
    ...     " this many."}}, "required": [], "additionalProperties": False})["properties"]["limit"]
    >>> limit["type"], limit["description"]
    (['integer', 'null'], 'At most this many. Default: 3 (send null for it).')
    """
    required = set(schema.get("required", ()))
    props = {}
    for name, sub in (schema.get("properties") or {}).items():
        props[name] = _strict_property(sub, optional=name not in required)
    return {"type": "object", "properties": props, "required": list(props),
            "additionalProperties": False}


def _strict_property(sub: dict[str, Any], *, optional: bool) -> dict[str, Any]:
    out = {k: v for k, v in sub.items() if k in STRICT_KEYWORDS}
    notes = []
    if "minLength" in sub or "maxLength" in sub:
        notes.append(f"{sub.get('minLength', 0)} to {sub.get('maxLength', 'any number of')} "
                     "characters.")
    if "default" in sub:
        notes.append(f"Default: {json.dumps(sub['default'])} (send null for it).")
    if notes:
        out["description"] = " ".join([out.get("description", ""), *notes]).strip()
    if "items" in out:
        out["items"] = _strict_property(out["items"], optional=False)
    if optional:
        types = out.get("type")
        types = [types] if isinstance(types, str) else list(types or [])
        if "null" not in types:
            out["type"] = [*types, "null"]
        if "enum" in out and None not in out["enum"]:
            out["enum"] = [*out["enum"], None]
    return dict(sorted(out.items(), key=lambda kv: _KEY_ORDER.get(kv[0], 50)))


_KEY_ORDER = {"type": 0, "enum": 1, "minimum": 2, "exclusiveMinimum": 3, "maximum": 4,
              "exclusiveMaximum": 5, "minItems": 6, "maxItems": 7, "items": 8,
              "description": 99}
