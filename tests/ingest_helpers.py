"""Comparing memories built by ingest with memories built through the Python API."""

from __future__ import annotations

import math
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from locimem import ObjectMemory
from locimem.ingest.feed import Scan


def api_store(path: Path, scans: Iterable[Scan], source: str, scope: str = "default") -> Path:
    """Feed ``scans`` through ``observe`` into a new store at ``path``."""
    with ObjectMemory.open(path, scope=scope) as mem:
        for s in scans:
            mem.observe(s.t, s.detections, s.camera, source=source)
    return path


def fingerprint(path: Path, scope: str = "default") -> dict[str, Any]:
    """Everything a memory believes and recorded, minus record (wall-clock) times."""
    with ObjectMemory.open(path, scope=scope, read_only=True) as mem:
        objects = [
            {"id": o.id, "label": o.label, "status": o.status.value, "confidence": o.confidence,
             "center": o.center, "size": o.size, "n": o.n_detections,
             "votes": o.label_votes, "track": o.track_id, "orientation": o.orientation,
             "first": o.first_seen, "last": o.last_seen, "source": o.source}
            for o in mem.objects()
        ]
        events = [(e.kind.value, e.object_id, e.label, e.t, e.data) for e in mem.events()]
        keyframes = {o["id"]: [k.to_dict() for k in mem.keyframes(o["id"])] for o in objects}
        commits = [(c.kind, c.t, c.actor, c.n_detections, c.camera, list(c.missed),
                    list(c.miss_credits), [list(p) for p in c.together])
                   for c in mem._live.store.commits(scope)]
        observations = [(o.commit, o.t, o.index, o.label, o.confidence, o.center, o.size,
                         o.object_id, o.tier, o.weight, o.rejected, o.track_id, o.orientation)
                        for o in mem._live.store.observations(scope)]
    return {"objects": objects, "events": events, "keyframes": keyframes, "commits": commits,
            "observations": observations}


def assert_same(a: Any, b: Any, path: str = "memory", tol: float = 1e-9) -> None:
    """Equal, with floats equal to ``tol`` (transforms through tf round differently)."""
    if isinstance(a, bool) or isinstance(b, bool) or a is None or b is None \
            or isinstance(a, str) or isinstance(b, str):
        assert a == b, f"{path}: {a!r} != {b!r}"
    elif isinstance(a, (int, float)) and isinstance(b, (int, float)):
        assert math.isclose(a, b, rel_tol=tol, abs_tol=tol), f"{path}: {a!r} != {b!r}"
    elif isinstance(a, dict) and isinstance(b, dict):
        assert sorted(a) == sorted(b), f"{path}: keys {sorted(a)} != {sorted(b)}"
        for k in a:
            assert_same(a[k], b[k], f"{path}.{k}", tol)
    elif isinstance(a, (list, tuple)) and isinstance(b, (list, tuple)):
        assert len(a) == len(b), f"{path}: length {len(a)} != {len(b)}"
        for i, (x, y) in enumerate(zip(a, b, strict=True)):
            assert_same(x, y, f"{path}[{i}]", tol)
    else:
        assert a == b, f"{path}: {a!r} != {b!r}"
