"""Small builders shared by the test files (import with ``from tests.helpers import det``)."""

from __future__ import annotations

from typing import Any

from locimem import Detection, ObjectMemory

TABLES = ("commits", "observations", "events", "objects")


def det(
    label: str,
    x: float,
    y: float,
    z: float = 0.9,
    conf: float = 0.9,
    size: tuple[float, float, float] = (0.1, 0.1, 0.1),
    **kw: Any,
) -> Detection:
    """A detection of ``label`` at (x, y, z) in the map frame, metres."""
    return Detection(label, conf, (x, y, z), size, **kw)


def row_counts(mem: ObjectMemory) -> dict[str, Any]:
    """Rows per log table, both through the store's API (this scope) and raw SQL (whole file)."""
    conn = mem.store.conn
    return {
        "scoped": {t: mem.store.count(t, mem.scope) for t in TABLES},
        "raw": {t: conn.execute(f"SELECT count(*) FROM {t}").fetchone()[0] for t in TABLES},
    }
