"""Compact JSON text made fast: a :class:`json.JSONEncoder`'s ``encode`` without the C encoder
``JSONEncoder.encode`` builds on every call; and JSON values rounded for a person to read
(:func:`rounded`).

Every JSON column a scan writes (label masses, beliefs, event data) is a small value, and for
a small value most of ``encode``'s cost is making a fresh C encoder (about 0.7 of its 1.6 µs
here). :func:`one_shot` makes that encoder once, with the same settings, and calls it.
"""

from __future__ import annotations

import json
import math
from collections.abc import Callable
from typing import Any

__all__ = ["one_shot", "rounded"]


def one_shot(encoder: json.JSONEncoder) -> Callable[[Any], str]:
    """``encoder.encode``, faster: the same C encoder with the same settings, made once —
    without the check for circular references (what we encode is built from JSON values and
    numbers, never a cycle; a cycle would raise ``RecursionError`` rather than
    ``ValueError``). Its text is ``encode``'s, value for value, and so is what it refuses
    (NaN when ``allow_nan`` is off, a key or value JSON has no form for)."""
    make_encoder = getattr(json.encoder, "c_make_encoder", None)
    if make_encoder is None or encoder.indent is not None:  # pragma: no cover - CPython
        return encoder.encode
    strings = (json.encoder.encode_basestring_ascii if encoder.ensure_ascii
               else json.encoder.encode_basestring)
    make = make_encoder(None, encoder.default, strings, None, encoder.key_separator,
                        encoder.item_separator, encoder.sort_keys, encoder.skipkeys,
                        encoder.allow_nan)

    def encode(value: Any) -> str:
        if isinstance(value, str):  # as JSONEncoder.encode does
            return strings(value)
        return "".join(make(value, 0))

    return encode


def rounded(value: Any, digits: int = 4) -> Any:
    """``value`` with every float rounded (for a person reading JSON: no 0.30000000000000004)."""
    if isinstance(value, float):
        return round(value, digits) if math.isfinite(value) else value
    if isinstance(value, dict):
        return {k: rounded(v, digits) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [rounded(v, digits) for v in value]
    return value
