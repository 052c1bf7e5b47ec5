"""The effects table: one entry per event kind, its meaning and its rows side by side."""

from __future__ import annotations

from locimem.model import EventKind
from locimem.tracker.effects import EFFECTS


def test_every_kind_has_one_effect_on_the_state() -> None:
    assert set(EFFECTS) == set(EventKind)
