"""Keyframe evidence recorded by the memory: frames that saw an object, at most N kept, the
replaced ones archived in the log, all restored exactly by replay."""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np

from locimem import Camera, Detection, ObjectMemory, TrackerConfig

CUP = (2.0, 0.0, 0.5)


def _camera_at(angle_deg: float, **kw: object) -> Camera:
    """A camera 1.5 m from the cup, at ``angle_deg`` around it, looking at it."""
    a = math.radians(angle_deg)
    x, y = CUP[0] + 1.5 * math.cos(a), CUP[1] + 1.5 * math.sin(a)
    yaw = a + math.pi  # face the cup
    q = (math.cos(yaw / 2), 0.0, 0.0, math.sin(yaw / 2))
    return Camera((x, y, 0.5), q, fov_deg=90.0, range_m=5.0, **kw)  # type: ignore[arg-type]


def test_frames_from_new_viewpoints_replace_the_worst_and_are_archived(tmp_path: Path) -> None:
    cup = Detection("cup", 0.9, CUP, (0.1, 0.1, 0.12), feature=np.array([1.0, 0.0, 0.0]))
    config = TrackerConfig(keyframes_kept=3)
    with ObjectMemory.open(tmp_path / "m.loci", scope="home", config=config) as mem:
        angles = [0, 0, 0, 0, 90, 180, 270, 0]
        for k, angle in enumerate(angles):
            mem.observe(float(k), [cup], camera=_camera_at(
                angle, image=f"frames/{k:04d}.png", intrinsics=(500, 500, 320, 240, 640, 480)))
        kept = mem.keyframes(1)
        archived = mem.archived_keyframes(1)
        assert len(kept) == 3
        # every frame that was kept and is no longer is archived, once
        all_seqs = {k.seq for k in kept} | {a.seq for a in archived}
        assert len(archived) == len({a.seq for a in archived})
        assert not {k.seq for k in kept} & {a.seq for a in archived}
        # the kept set is the best by score: nothing archived beats anything kept
        assert min(k.score for k in kept) >= max(a.score for a in archived)
        assert {k.image for k in kept} <= {f"frames/{k:04d}.png" for k in range(len(angles))}
        assert kept[0].intrinsics == (500.0, 500.0, 320.0, 240.0, 640.0, 480.0)
        assert kept[0].embedding == (1.0, 0.0, 0.0)
        assert all(k.coverage == 1.0 for k in kept)
        # the first view, then the new viewpoints (90, 180 degrees) replace the repeats of
        # the first; 270 is no better than what is kept (a tie keeps the kept frame)
        views = sorted(round(math.degrees(math.atan2(k.position[1] - CUP[1],
                                                     k.position[0] - CUP[0]))) % 360
                       for k in kept)
        assert views == [0, 90, 180]
        assert [a.t for a in archived] == [2.0, 1.0] and len(all_seqs) == 5
        assert mem.snapshot() == mem.rebuild_from_log().snapshot()
        snap = mem.snapshot()
    with ObjectMemory.open(tmp_path / "m.loci", scope="home", read_only=True) as again:
        assert again.snapshot() == snap
        assert again.keyframes(1) == kept


def test_no_camera_no_keyframes_and_a_frame_that_misses_the_object_is_not_kept() -> None:
    cup = Detection("cup", 0.9, CUP, (0.1, 0.1, 0.12))
    with ObjectMemory.open(":memory:", scope="home") as mem:
        mem.observe(0.0, [cup])
        assert mem.keyframes(1) == []
        away = Camera((0.0, 0.0, 0.5), (0.0, 0.0, 0.0, 1.0), fov_deg=60.0, range_m=5.0)
        mem.observe(1.0, [cup], camera=away)  # looking the other way
        assert mem.keyframes(1) == []
        mem.observe(2.0, [cup], camera=_camera_at(0))
        assert [k.t for k in mem.keyframes(1)] == [2.0]
