"""ObjectMemory.observe_frame: a 2D detector's frame lifted with depth and observed, the
result indexed by box."""

from __future__ import annotations

import numpy as np
import pytest

from locimem import ObjectMemory
from locimem.errors import InvalidInput
from locimem.model import Observation
from locimem.perception import Box2D, lift_frame
from tests.perception.test_lift import CUBE, K, box_of, scene

POS = (0.0, 0.0, 0.7)


def _frame():
    _, q, depth, _ = scene(POS, floor=None)
    depth = depth.copy()
    depth[:, :100] = 0.0  # no return on the left
    boxes = [Box2D(10, 200, 90, 300, "ghost", 0.8),  # over no return: not lifted
             Box2D(*box_of(K, POS, q, *CUBE), "box", 0.9)]
    return q, depth, boxes


def test_a_frame_is_lifted_observed_and_answered_by_box(tmp_path) -> None:
    q, depth, boxes = _frame()
    with ObjectMemory.open(tmp_path / "m.loci", durable=False) as mem:
        for t in range(3):
            r = mem.observe_frame(float(t), boxes, depth, K, POS, q, source="cam/yolo")
            assert r.assignments == (None, 1)
            assert list(r.rejected) == [0] and r.rejected[0].startswith("not lifted: no depth")
        (obj,) = mem.objects()  # the ghost left nothing behind
        assert (obj.id, obj.label, obj.status.value) == (1, "box", "confirmed")
        np.testing.assert_allclose(obj.center, (2.2, 0.0, 0.7), atol=0.02)
        assert {e.actor for e in mem.audit()} == {"cam/yolo"}
        # what was observed is what lift_frame makes of the frame
        lifted = lift_frame(boxes, depth, K, POS, q)
        sightings = [r for r in mem.history(1) if isinstance(r, Observation)]
        assert len(sightings) == 3
        assert [tuple(s.center) for s in sightings] == [tuple(lifted.detections[0].center)] * 3


def test_a_bad_box_writes_nothing(tmp_path) -> None:
    q, depth, boxes = _frame()
    store = tmp_path / "m.loci"
    with ObjectMemory.open(store, durable=False) as mem:
        with pytest.raises(InvalidInput):
            mem.observe_frame(0.0, [*boxes, Box2D(600, 400, 900, 700, "off", 0.9)], depth, K,
                              POS, q)
        with pytest.raises(InvalidInput):
            mem.observe_frame(0.0, boxes, depth[:100], K, POS, q)  # depth of another size
        assert mem.events() == [] and mem.audit() == [] and mem.now is None
