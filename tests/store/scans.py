"""Memories filled the same way by the memory-level store tests."""

from __future__ import annotations

from pathlib import Path

from locimem import ObjectMemory
from tests.helpers import det


def pairs(memory: ObjectMemory, label: str, x0: float, t0: float = 0.0, n: int = 7) -> list[int]:
    """``n`` scans of two ``label`` objects a metre apart; returns their ids."""
    ids: list[int] = []
    for i in range(n):
        result = memory.observe(t0 + i, [det(label, x0, 0.0), det(label, x0 + 1.0, 0.0)])
        ids = list(result.assignments)  # type: ignore[arg-type]
    return ids


def fill_two_scopes(path: Path) -> dict[str, list[int]]:
    ids: dict[str, list[int]] = {}
    with ObjectMemory.open(path, scope="home/kitchen") as a:
        ids["a"] = pairs(a, "cup", 0.0)
    with ObjectMemory.open(path, scope="office") as b:
        ids["b"] = pairs(b, "book", 0.0)  # same places and times as the cups
    with ObjectMemory.open(path, scope="home/kitchen") as a:
        a.observe(7.0, [det("plate", 5.0, 5.0)])
        ids["a"].append(a.objects(label="plate")[0].id)
    with ObjectMemory.open(path, scope="office") as b:
        b.observe(100.0, [det("pen", 5.0, 5.0, conf=0.01)])  # rejected, and cups are LOST
    return ids
