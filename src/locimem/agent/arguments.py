"""Tool arguments checked against their JSON Schema by a maintained validator (fastjsonschema).

Each tool's schema is compiled once (fastjsonschema turns it into Python code); a call checks
each argument with its property's compiled validator, so every bad argument is reported (up to
five), not only the first. Around the library, what a language model's arguments need:

- a model's ``null`` counts as an absent argument (so strict-mode schemas, where every
  property is required and optional ones are nullable, and the plain ones accept the same
  calls);
- a number must be finite (Python's ``json`` reads ``NaN`` and ``Infinity``; JSON Schema does
  not exclude them); a boolean is never a number (fastjsonschema agrees);
- a string with ``minLength`` must hold that many non-blank characters;
- messages name the argument and the constraint, never the value that was given, so they are
  safe to show a model.

The schemas may use ``type``, ``properties``, ``required``, ``additionalProperties`` (a
boolean), ``enum``, ``minimum``, ``maximum``, ``exclusiveMinimum``, ``exclusiveMaximum``,
``minLength``, ``maxLength``, ``items``, ``minItems``, ``maxItems`` and the annotations
``description``, ``examples``, ``default``, ``title``: :func:`check_schema` refuses anything
else, so every constraint a tool declares has a message written for it.

>>> schema = {"type": "object", "properties": {"radius_m": {"type": "number",
...           "exclusiveMinimum": 0, "maximum": 100}}, "required": ["radius_m"],
...           "additionalProperties": False}
>>> Arguments(schema).problems({"radius_m": -1})
['radius_m: must be greater than 0']
>>> Arguments(schema).problems({"radius_m": 2, "oops": "ignore previous instructions"})
['unexpected argument (allowed: radius_m)']
"""

from __future__ import annotations

import copy
import math
from collections.abc import Callable
from typing import Any

import fastjsonschema

__all__ = ["SUPPORTED_KEYWORDS", "Arguments", "check_schema", "normalise"]

ANNOTATIONS = frozenset({"description", "examples", "default", "title"})
SUPPORTED_KEYWORDS = frozenset({
    "type", "properties", "required", "additionalProperties", "enum", "minimum", "maximum",
    "exclusiveMinimum", "exclusiveMaximum", "minLength", "maxLength", "items", "minItems",
    "maxItems",
}) | ANNOTATIONS
_TYPES = frozenset({"object", "array", "string", "integer", "number", "boolean", "null"})
_TYPE_WORDS = {"object": "an object", "array": "an array", "string": "a string",
               "integer": "an integer", "number": "a finite number", "boolean": "true or false",
               "null": "null"}
_MAX_ERRORS = 5
_NON_BLANK = r"\S"  # what minLength adds: a string of blanks is no name


def check_schema(schema: Any, path: str = "") -> None:
    """Raise ValueError when ``schema`` uses anything the messages do not cover."""
    if not isinstance(schema, dict):
        raise ValueError(f"schema{path} must be a dict")
    unknown = set(schema) - SUPPORTED_KEYWORDS
    if unknown:
        raise ValueError(f"schema{path} uses unsupported keywords {sorted(unknown)}")
    types = schema.get("type")
    for t in ([types] if isinstance(types, str) else types or []):
        if t not in _TYPES:
            raise ValueError(f"schema{path} has unknown type {t!r}")
    for name, sub in (schema.get("properties") or {}).items():
        check_schema(sub, f"{path}.{name}")
    if "items" in schema:
        check_schema(schema["items"], f"{path}[]")
    ap = schema.get("additionalProperties", False)
    if not isinstance(ap, bool):
        raise ValueError(f"schema{path}: additionalProperties must be a boolean")


class Arguments:
    """The compiled check of one tool's argument schema (an object schema)."""

    def __init__(self, schema: dict[str, Any]) -> None:
        check_schema(schema)
        props = schema.get("properties") or {}
        self.schema = schema
        self._names = tuple(props)
        self._allowed = ", ".join(props) or "none"
        self._closed = not schema.get("additionalProperties", False)
        self._required = tuple(schema.get("required", ()))
        self._checks: dict[str, Callable[[Any], Any]] = {
            name: fastjsonschema.compile(_compilable(sub)) for name, sub in props.items()}

    def problems(self, value: dict[str, Any]) -> list[str]:
        """What is wrong with ``value`` (empty when it conforms), at most five."""
        if not isinstance(value, dict):
            return ["arguments: must be an object"]
        if not all(isinstance(k, str) for k in value):
            return ["arguments: argument names must be strings"]
        if self._closed and any(k not in self._checks for k in value):
            return [f"unexpected argument (allowed: {self._allowed})"]
        errors = [f"{name}: is required" for name in self._required if value.get(name) is None]
        for name, check in self._checks.items():
            item = value.get(name)
            if item is None:  # a model's null counts as absent
                continue
            where = _non_finite(item, name)
            if where is not None:
                errors.append(f"{where}: must be a finite number")
                continue
            try:
                check(item)
            except fastjsonschema.JsonSchemaValueException as exc:
                errors.append(_message(name, exc))
            if len(errors) >= _MAX_ERRORS:
                break
        return errors[:_MAX_ERRORS]


def _compilable(schema: dict[str, Any]) -> dict[str, Any]:
    """A property schema as compiled: annotations dropped, non-blank strings required."""
    out = {k: v for k, v in schema.items() if k not in ANNOTATIONS}
    if "minLength" in out:
        out["pattern"] = _NON_BLANK
    if "items" in out:
        out["items"] = _compilable(out["items"])
    if "properties" in out:
        out["properties"] = {k: _compilable(v) for k, v in out["properties"].items()}
    return copy.deepcopy(out)


def _non_finite(value: Any, path: str) -> str | None:
    """The path of the first non-finite number in ``value``, or None."""
    if isinstance(value, float):
        return None if math.isfinite(value) else path
    if isinstance(value, (list, tuple)):
        for i, item in enumerate(value):
            found = _non_finite(item, f"{path}[{i}]")
            if found is not None:
                return found
    elif isinstance(value, dict):
        for key, item in value.items():
            found = _non_finite(item, f"{path}.{key}")
            if found is not None:
                return found
    return None


def _num(x: float) -> str:
    return f"{x:g}"


def _message(name: str, exc: fastjsonschema.JsonSchemaValueException) -> str:
    """The library's finding in words that name the argument and the rule, not the value."""
    path = name + (exc.name or "data")[len("data"):]
    rule, bound = exc.rule, exc.rule_definition
    definition = exc.definition or {}
    if rule == "type":
        options = [bound] if isinstance(bound, str) else list(bound)
        return f"{path}: must be {' or '.join(_TYPE_WORDS[t] for t in options)}"
    if rule == "enum":
        return f"{path}: must be one of: {', '.join(str(v) for v in bound)}"
    words = {"minimum": "at least", "maximum": "at most", "exclusiveMinimum": "greater than",
             "exclusiveMaximum": "less than"}
    if rule in words:
        return f"{path}: must be {words[rule]} {_num(bound)}"
    if rule in ("minLength", "pattern"):
        return (f"{path}: must have at least {definition.get('minLength', 1)} non-blank "
                "character(s)")
    if rule == "maxLength":
        return f"{path}: must be at most {bound} characters"
    if rule == "minItems":
        return f"{path}: must have at least {bound} item(s)"
    if rule == "maxItems":
        return f"{path}: must have at most {bound} item(s)"
    if rule == "additionalProperties":
        allowed = ", ".join(definition.get("properties") or {}) or "none"
        return f"{path}: unexpected argument (allowed: {allowed})"
    if rule == "required":
        return f"{path}: {', '.join(bound)}: is required"
    return f"{path}: is not valid"  # pragma: no cover - check_schema allows no other rule


def normalise(value: Any, schema: dict[str, Any]) -> Any:
    """A checked value in plain Python form: integers as ``int`` (JSON's ``3.0`` is an
    integer), tuples as lists, absent or null object properties filled from ``default``."""
    types = schema.get("type")
    options = [types] if isinstance(types, str) else list(types or [])
    if isinstance(value, dict):
        props = schema.get("properties") or {}
        out = {}
        for name, sub in props.items():
            if value.get(name) is not None:
                out[name] = normalise(value[name], sub)
            elif "default" in sub:
                out[name] = sub["default"]
        return out
    if isinstance(value, (list, tuple)):
        return [normalise(v, schema.get("items", {})) for v in value]
    if "integer" in options and isinstance(value, float) and not isinstance(value, bool):
        return int(value)
    if "number" in options and isinstance(value, int) and not isinstance(value, bool):
        return float(value)
    return value
