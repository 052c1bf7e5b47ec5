"""Levels of the scene graph: rooms contain furniture (and structure), furniture supports items.

An object's level comes from its ``level`` attribute when a person set one, else from its label:
things that support others (tables, shelves, drawers …) and large fixtures are furniture;
everything else is an item.
"""

from __future__ import annotations

import functools
from typing import TYPE_CHECKING

from locimem.words import fold, support_role

if TYPE_CHECKING:
    from locimem.model import ObjectState

LEVEL_ATTRIBUTE = "level"
OBJECT_LEVELS = ("furniture", "item")
# fixtures that are furniture though nothing is said to sit on or in them
_FURNITURE_HEADS = frozenset({
    "chair", "stool", "sofa", "couch", "bed", "armchair", "bench", "fridge", "refrigerator",
    "oven", "stove", "dishwasher", "washer", "dryer", "toilet", "bathtub", "tub", "door",
    "window", "radiator", "piano", "wardrobe", "dresser", "tv", "television", "lamp",
    # large containers: things go in them, and they stay put
    "drawer", "cabinet", "cupboard", "closet", "bookcase", "bookshelf", "freezer", "microwave",
    "sink", "locker", "chest",
})


def level_of(obj: ObjectState) -> str:
    """``furniture`` or ``item`` (a ``level`` attribute overrides the label). Surfaces are
    furniture; of the containers only the large ones are (a drawer is furniture, a cup that
    things go *in* is still an item)."""
    level = obj.attributes.get(LEVEL_ATTRIBUTE) if obj.attributes else None
    if level in OBJECT_LEVELS:
        return str(level)
    return _level_of_label(obj.label)


@functools.lru_cache(maxsize=4096)
def _level_of_label(label: str) -> str:
    """The level a label implies (cached: every object view reads it)."""
    words = fold(label)
    head = words[-1] if words else ""
    if support_role(label) == "surface" or head in _FURNITURE_HEADS:
        return "furniture"
    return "item"


def role_of(obj: ObjectState) -> str | None:
    """``surface`` (things sit on it), ``container`` (things go in it) or None."""
    return _role_of_label(obj.label)


@functools.lru_cache(maxsize=4096)
def _role_of_label(label: str) -> str | None:
    """The role a label implies (cached, like the level: an open reads every object's)."""
    return support_role(label)
