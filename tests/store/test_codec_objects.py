"""``objects_from_rows`` (every object row decoded at once, as an open reads them) gives
exactly what ``object_from_row`` gives row by row: same values, types, key order and bytes."""

from __future__ import annotations

import random
from dataclasses import fields
from typing import Any

import numpy as np

from locimem.model import ObjectState
from locimem.store.sqlite.codec import object_from_row, object_row, objects_from_rows


def _random_object(rng: random.Random, oid: int) -> ObjectState:
    def vec() -> tuple[float, float, float]:
        return (rng.uniform(-50, 50), rng.uniform(-50, 50), rng.uniform(0, 3))

    maybe = rng.random
    return ObjectState(
        id=oid, label=rng.choice(("cup", "table", "kitchen table", "ünïcode mug")),
        center=vec(), size=vec(), place=vec(), first_seen=rng.uniform(0, 9),
        last_seen=rng.uniform(9, 99),
        label_mass={"cup": 1.5, "mug": rng.random()} if maybe() < 0.5 else {"b": 0.1, "a": 2.0},
        n_detections=rng.randint(0, 99), promoted=maybe() < 0.5, lost=maybe() < 0.3,
        lost_at=rng.uniform(0, 9) if maybe() < 0.3 else None,
        track_id="t7" if maybe() < 0.3 else None,
        orientation=(1.0, 0.0, 0.0, 0.0) if maybe() < 0.3 else None,
        feature=np.random.default_rng(oid).standard_normal(8) if maybe() < 0.5 else None,
        n_features=rng.randint(0, 9), pinned_label="bowl" if maybe() < 0.2 else None,
        attributes={"level": "furniture", "n": [1, 2.5, None]} if maybe() < 0.3 else {},
        n_missed=rng.randint(0, 3), place_size=vec(), place_t=rng.uniform(0, 9),
        seen_camera=maybe() < 0.5, absence_s=rng.uniform(0, 3),
        held=((1.0, 2.0, 3.0, 4.0, 0.1, 0.2, 0.3, "cup", 0.9, 4),) if maybe() < 0.3 else (),
        together=frozenset({3, 1, 2}) if maybe() < 0.3 else frozenset(),
        merged_from=(9, 4) if maybe() < 0.2 else (),
        source=rng.choice(("tracker", "alice")), label_by="bob" if maybe() < 0.2 else None,
        n_looked_seen=rng.randint(0, 5) if maybe() < 0.5 else 0,
        n_looked_missed=rng.randint(0, 5), pos_info=rng.uniform(0, 40) if maybe() < 0.5 else 0,
        moved_from=vec() if maybe() < 0.3 else None,
    )


def _exact(obj: ObjectState) -> list[Any]:
    out: list[Any] = []
    for f in fields(obj):
        v = getattr(obj, f.name)
        if isinstance(v, np.ndarray):
            v = (v.dtype.str, v.tobytes(), v.flags.writeable, v.flags.owndata)
        elif isinstance(v, dict):
            v = list(v.items())
        elif isinstance(v, set):
            v = sorted(v)
        out.append((f.name, type(v).__name__, repr(v)))
    return out


def test_objects_from_rows_equals_object_from_row() -> None:
    rng = random.Random(5)
    rows = [object_row("s", _random_object(rng, i)) for i in range(1, 400)]
    one_by_one = [object_from_row(r) for r in rows]
    at_once = objects_from_rows(rows)
    assert [_exact(o) for o in at_once] == [_exact(o) for o in one_by_one]
    assert objects_from_rows([]) == []


def test_an_object_row_keeps_every_field() -> None:
    """A row written and read back is the object it was written from, field for field
    (``moved_from`` included: it rides in the ``belief`` JSON column, absent when None)."""
    rng = random.Random(6)
    objs = [_random_object(rng, i) for i in range(1, 200)]
    assert any(o.moved_from is not None for o in objs)
    assert any(o.moved_from is None and not (o.n_looked_seen or o.n_looked_missed
                                              or o.pos_info) for o in objs)
    back = objects_from_rows([object_row("s", o) for o in objs])
    assert [o.to_dict() for o in back] == [o.to_dict() for o in objs]
    assert [ObjectState.from_dict(o.to_dict()).to_dict() for o in objs] == [
        o.to_dict() for o in objs]
