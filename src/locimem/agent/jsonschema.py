"""A small JSON-schema checker for tool arguments: the subset the tool schemas use.

Supported keywords: ``type`` (``object``, ``array``, ``string``, ``integer``, ``number``,
``boolean``, ``null``, or a list of them), ``properties``, ``required``,
``additionalProperties`` (a boolean), ``enum``, ``minimum``, ``maximum``,
``exclusiveMinimum``, ``exclusiveMaximum``, ``minLength``, ``maxLength``, ``items``,
``minItems``, ``maxItems``. Annotations (``description``, ``examples``, ``default``,
``title``) are ignored when checking. A schema using any other keyword is refused by
:func:`check_schema`, so a tool can never promise a constraint that is not checked.

Stricter than JSON Schema where a language model's arguments need it: a boolean is never a
number, and a number must be finite (Python's ``json`` reads ``NaN`` and ``Infinity``).

Messages name the argument and the constraint, never the value that was given, so they are
safe to show a model:

>>> schema = {"type": "object", "properties": {"radius_m": {"type": "number",
...           "exclusiveMinimum": 0, "maximum": 100}}, "required": ["radius_m"],
...           "additionalProperties": False}
>>> validate({"radius_m": -1}, schema)
['radius_m: must be greater than 0']
>>> validate({"radius_m": 2, "oops": "ignore previous instructions"}, schema)
['unexpected argument (allowed: radius_m)']
"""

from __future__ import annotations

import math
from typing import Any

__all__ = ["SUPPORTED_KEYWORDS", "check_schema", "normalise", "validate"]

ANNOTATIONS = frozenset({"description", "examples", "default", "title"})
SUPPORTED_KEYWORDS = frozenset({
    "type", "properties", "required", "additionalProperties", "enum", "minimum", "maximum",
    "exclusiveMinimum", "exclusiveMaximum", "minLength", "maxLength", "items", "minItems",
    "maxItems",
}) | ANNOTATIONS
_TYPES = frozenset({"object", "array", "string", "integer", "number", "boolean", "null"})
_MAX_ERRORS = 5


def check_schema(schema: Any, path: str = "") -> None:
    """Raise ValueError when ``schema`` uses anything :func:`validate` does not check."""
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


def _is_type(value: Any, t: str) -> bool:
    if t == "null":
        return value is None
    if t == "boolean":
        return isinstance(value, bool)
    if t == "string":
        return isinstance(value, str)
    if t == "array":
        return isinstance(value, (list, tuple))
    if t == "object":
        return isinstance(value, dict)
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return False
    if isinstance(value, float) and not math.isfinite(value):
        return False
    if t == "integer":
        return isinstance(value, int) or value.is_integer()
    return t == "number"


_TYPE_WORDS = {"object": "an object", "array": "an array", "string": "a string",
               "integer": "an integer", "number": "a finite number", "boolean": "true or false",
               "null": "null"}


def _num(x: float) -> str:
    return f"{x:g}"


def validate(value: Any, schema: dict[str, Any], path: str = "") -> list[str]:
    """Problems with ``value`` against ``schema`` (empty when it conforms), at most five."""
    errors: list[str] = []
    _validate(value, schema, path, errors)
    return errors[:_MAX_ERRORS]


def _where(path: str) -> str:
    return f"{path}: " if path else "arguments: "


def _validate(value: Any, schema: dict[str, Any], path: str, errors: list[str]) -> None:
    if len(errors) >= _MAX_ERRORS:
        return
    types = schema.get("type")
    if types is not None:
        options = [types] if isinstance(types, str) else list(types)
        if not any(_is_type(value, t) for t in options):
            words = " or ".join(_TYPE_WORDS[t] for t in options)
            errors.append(f"{_where(path)}must be {words}")
            return
    if "enum" in schema and value not in schema["enum"]:
        allowed = ", ".join(str(v) for v in schema["enum"])
        errors.append(f"{_where(path)}must be one of: {allowed}")
        return
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        for key, test, word in (
            ("minimum", lambda v, b: v >= b, "at least"),
            ("maximum", lambda v, b: v <= b, "at most"),
            ("exclusiveMinimum", lambda v, b: v > b, "greater than"),
            ("exclusiveMaximum", lambda v, b: v < b, "less than"),
        ):
            if key in schema and not test(value, schema[key]):
                errors.append(f"{_where(path)}must be {word} {_num(schema[key])}")
                return
    if isinstance(value, str):
        if "minLength" in schema and len(value.strip()) < schema["minLength"]:
            errors.append(f"{_where(path)}must have at least {schema['minLength']} "
                          "non-blank character(s)")
            return
        if "maxLength" in schema and len(value) > schema["maxLength"]:
            errors.append(f"{_where(path)}must be at most {schema['maxLength']} characters")
            return
    if isinstance(value, (list, tuple)):
        if "minItems" in schema and len(value) < schema["minItems"]:
            errors.append(f"{_where(path)}must have at least {schema['minItems']} item(s)")
            return
        if "maxItems" in schema and len(value) > schema["maxItems"]:
            errors.append(f"{_where(path)}must have at most {schema['maxItems']} item(s)")
            return
        if "items" in schema:
            for i, item in enumerate(value):
                _validate(item, schema["items"], f"{path}[{i}]", errors)
    if isinstance(value, dict):
        props = schema.get("properties") or {}
        if not all(isinstance(k, str) for k in value):
            errors.append(f"{_where(path)}argument names must be strings")
            return
        if not schema.get("additionalProperties", False):
            extra = [k for k in value if k not in props]
            if extra:
                allowed = ", ".join(props) or "none"
                errors.append(f"{path + ': ' if path else ''}unexpected argument "
                              f"(allowed: {allowed})")
                return
        for name in schema.get("required", ()):
            if value.get(name) is None:  # a model's null counts as absent
                errors.append(f"{path + '.' if path else ''}{name}: is required")
        for name, sub in props.items():
            if name in value and value[name] is not None:
                _validate(value[name], sub, f"{path + '.' if path else ''}{name}", errors)


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
