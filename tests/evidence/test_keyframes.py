"""Keyframe evidence: visibility, novelty, the score, the record form and the retention policy."""

from __future__ import annotations

import dataclasses
import json
import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from locimem import Camera, InvalidInput
from locimem.evidence.keyframes import (
    N_KEYFRAMES,
    W_COVERAGE,
    W_DEPTH,
    W_NOVELTY,
    Keyframe,
    could_join,
    make_candidate,
    novelty,
    offer,
    sample_points,
    score,
    visibility,
)
from locimem.geometry import look_at

IDENTITY = (1.0, 0.0, 0.0, 0.0)


def cam(depth=None, fov=90.0, vfov=90.0, rng=5.0) -> Camera:
    """At the origin, looking along map +x (body = map frame)."""
    return Camera((0.0, 0.0, 0.0), IDENTITY, fov, rng, vfov, depth=depth)


def frame(seq: int, s: float = 0.5, t: float | None = None,
          position=(1.0, 0.0, 0.0)) -> Keyframe:
    return Keyframe(t=float(seq) if t is None else t, commit=seq, seq=seq, position=position,
                    quaternion=IDENTITY, coverage=s, novelty=s, depth=s, score=s)


# -- visibility: coverage ---------------------------------------------------------------------
def test_sample_points_are_corners_face_centres_and_centre():
    pts = sample_points((1.0, 2.0, 3.0), (2.0, 4.0, 6.0))
    assert pts.shape == (15, 3)
    assert {tuple(p) for p in pts[:8].tolist()} == {
        (x, y, z) for x in (0.0, 2.0) for y in (0.0, 4.0) for z in (0.0, 6.0)}
    assert pts[8:14].tolist() == [[0.0, 2.0, 3.0], [2.0, 2.0, 3.0], [1.0, 0.0, 3.0],
                                  [1.0, 4.0, 3.0], [1.0, 2.0, 0.0], [1.0, 2.0, 6.0]]
    assert pts[14].tolist() == [1.0, 2.0, 3.0]


def test_an_object_straight_ahead_is_fully_covered():
    camera = look_at((0.0, 0.0, 1.0), (2.0, 0.0, 1.0), fov_deg=90.0, vfov_deg=60.0, range_m=4.0)
    assert visibility(camera, (2.0, 0.0, 1.0), (0.3, 0.3, 0.3)) == (1.0, None)


def test_an_object_behind_the_camera_is_not_covered():
    assert visibility(cam(), (-2.0, 0.0, 0.0), (0.3, 0.3, 0.3)) == (0.0, None)
    # with a depth image: no pixel's ray reaches it either
    assert visibility(cam(np.full((4, 4), 2.0)), (-2.0, 0.0, 0.0), (0.3, 0.3, 0.3)) == (0.0, 0.0)


def test_an_object_beyond_range_is_not_covered():
    assert visibility(cam(rng=3.0), (4.0, 0.0, 0.0), (0.2, 0.2, 0.2)) == (0.0, None)


def test_an_object_across_the_edge_of_the_view_is_partly_covered():
    # fov 90: the left edge is the plane y = x. The box spans x 1.9..2.1, y 0.95..2.95:
    # in view are the 4 corners and the face centre at y = 0.95 (5 points); at y = 1.95 the
    # +x face (x 2.1), the +-z faces and the centre (x 2) but not the -x face (x 1.9)
    # (4 points); nothing at y = 2.95. 9 of 15.
    coverage, depth = visibility(cam(), (2.0, 1.95, 0.0), (0.2, 2.0, 0.2))
    assert coverage == 9 / 15
    assert depth is None


# -- visibility: depth ------------------------------------------------------------------------
def test_depth_counts_valid_readings_where_the_box_projects():
    # a wall-sized box fills the 4 x 4 image: 16 pixels, 4 without a reading
    depth = np.full((4, 4), 2.0)
    depth[0, 0] = np.nan
    depth[0, 1] = 0.0
    depth[3, 3] = np.inf
    depth[2, 1] = -1.0
    coverage, share = visibility(cam(depth), (2.0, 0.0, 0.0), (0.2, 10.0, 10.0))
    assert share == 12 / 16
    assert coverage == 3 / 15  # only the +-x face centres and the centre are in view


def test_depth_counts_only_the_pixels_the_box_projects_to():
    # fx = fy = 2: pixel centres' rays have y / x, z / x in {0.75, 0.25, -0.25, -0.75}; a box
    # of half-width 0.6 at x 1.9..2.1 is crossed by the 0.25 rays only: the central 2 x 2
    depth = np.full((4, 4), 2.0)
    depth[0, :] = np.nan  # outside the box's pixels: not counted
    depth[:, 3] = 0.0
    depth[1, 1] = np.nan
    depth[2, 2] = 0.0
    coverage, share = visibility(cam(depth), (2.0, 0.0, 0.0), (0.2, 1.2, 1.2))
    assert (coverage, share) == (1.0, 2 / 4)


def test_depth_when_the_box_reaches_behind_the_camera():
    # the camera inside the box: every pixel's ray crosses it
    depth = np.full((3, 5), 1.0)
    depth[1, :] = np.nan
    _, share = visibility(cam(depth), (0.0, 0.0, 0.0), (4.0, 4.0, 4.0))
    assert share == 10 / 15


def test_depth_is_zero_when_no_pixel_sees_the_box():
    _, share = visibility(cam(np.full((4, 4), 2.0)), (2.0, 5.0, 0.0), (0.2, 0.2, 0.2))
    assert share == 0.0


def test_no_depth_image_gives_none():
    assert visibility(cam(), (2.0, 0.0, 0.0), (0.2, 0.2, 0.2))[1] is None


def test_visibility_checks_its_box():
    with pytest.raises(InvalidInput, match=r"size must not be negative"):
        visibility(cam(), (2.0, 0.0, 0.0), (0.2, -0.2, 0.2))
    with pytest.raises(InvalidInput, match=r"center must have 3 numbers, got 2"):
        visibility(cam(), (2.0, 0.0), (0.2, 0.2, 0.2))


# -- novelty ----------------------------------------------------------------------------------
CENTER = (1.0, 1.0, 0.5)


def viewed_from(direction, distance=2.0) -> Keyframe:
    d = np.asarray(direction, dtype=float)
    pos = np.asarray(CENTER) + distance * d / np.linalg.norm(d)
    return frame(1, position=tuple(pos.tolist()))


def at(direction, distance=3.0) -> tuple[float, ...]:
    d = np.asarray(direction, dtype=float)
    return tuple((np.asarray(CENTER) + distance * d / np.linalg.norm(d)).tolist())


def test_novelty_is_one_when_nothing_is_kept():
    assert novelty(at((1, 0, 0)), CENTER, ()) == 1.0


def test_novelty_of_the_same_direction_is_zero():
    assert novelty(at((1, 0, 0), 5.0), CENTER, [viewed_from((1, 0, 0))]) == pytest.approx(0.0)


def test_novelty_of_a_perpendicular_view_is_one():
    assert novelty(at((0, 1, 0)), CENTER, [viewed_from((1, 0, 0))]) == pytest.approx(1.0)
    assert novelty(at((-1, 0, 0)), CENTER, [viewed_from((1, 0, 0))]) == 1.0  # 180: clipped


def test_novelty_of_a_45_degree_view_is_one_half():
    assert novelty(at((1, 1, 0)), CENTER, [viewed_from((1, 0, 0))]) == pytest.approx(0.5)
    assert novelty(at((1, 0, 1)), CENTER, [viewed_from((0, 0, 1))]) == pytest.approx(0.5)


def test_novelty_takes_the_nearest_kept_view():
    kept = [viewed_from((-1, 0, 0)), viewed_from((1, 1, 0)), viewed_from((0, 0, 1))]
    assert novelty(at((1, 0, 0)), CENTER, kept) == pytest.approx(0.5)


def test_novelty_of_a_camera_at_the_centre_is_zero():
    assert novelty(CENTER, CENTER, [viewed_from((1, 0, 0))]) == 0.0


# -- score ------------------------------------------------------------------------------------
def test_score_weights():
    assert (W_COVERAGE, W_NOVELTY, W_DEPTH) == (0.5, 0.3, 0.2)
    assert score(1.0, 0.0, 0.0) == 0.5
    assert score(0.0, 1.0, 0.0) == 0.3
    assert score(0.0, 0.0, 1.0) == 0.2
    assert score(1.0, 1.0, 1.0) == 1.0
    assert score(0.0, 0.0, 0.0) == 0.0
    assert score(0.4, 0.5, 0.25) == pytest.approx(0.5 * 0.4 + 0.3 * 0.5 + 0.2 * 0.25)


def test_score_without_depth_renormalises_coverage_and_novelty():
    assert score(1.0, 0.0, None) == pytest.approx(0.5 / 0.8)
    assert score(0.0, 1.0, None) == pytest.approx(0.3 / 0.8)
    assert score(1.0, 1.0, None) == 1.0
    assert score(0.4, 0.5, None) == pytest.approx((0.5 * 0.4 + 0.3 * 0.5) / 0.8)


def test_score_checks_its_inputs():
    with pytest.raises(InvalidInput, match=r"coverage must be in \[0, 1\], got 1.5"):
        score(1.5, 0.0, 0.0)
    with pytest.raises(InvalidInput, match=r"depth must be a finite number, got nan"):
        score(0.5, 0.0, math.nan)


# -- the record form --------------------------------------------------------------------------
def full_frame() -> Keyframe:
    return Keyframe(t=12.25, commit=3, seq=41, position=(0.1, -2.0, 1.3),
                    quaternion=(0.9238795325112867, 0.0, 0.0, 0.3826834323650898),
                    intrinsics=(525.0, 525.0, 319.5, 239.5, 640.0, 480.0),
                    image="frames/000041.png", embedding=(0.1, -0.2, 0.3 + 1e-17, 1 / 3),
                    coverage=0.6, novelty=1 / 3, depth=0.875, score=score(0.6, 1 / 3, 0.875))


def test_to_dict_from_dict_round_trips_exactly_through_json():
    for k in (full_frame(), frame(7), Keyframe(
            t=0.0, commit=1, seq=2, position=(0, 0, 1), quaternion=(1, 0, 0, 0),
            coverage=1, novelty=1, depth=None, score=1)):
        data = json.loads(json.dumps(k.to_dict()))
        back = Keyframe.from_dict(data)
        assert back == k
        assert back.to_dict() == k.to_dict()
        for name in ("position", "quaternion", "intrinsics", "embedding"):
            value = getattr(back, name)
            assert value is None or type(value) is tuple
        assert type(back.t) is float and type(back.seq) is int


def test_keyframes_are_frozen_and_normalised():
    k = Keyframe(t=1, commit=1, seq=1, position=[0, 0, 1], quaternion=[1, 0, 0, 0],
                 coverage=1, novelty=0, depth=None, score=1, embedding=np.array([0.5, 0.5]))
    assert k.position == (0.0, 0.0, 1.0) and type(k.position) is tuple
    assert k.embedding == (0.5, 0.5) and type(k.embedding) is tuple
    with pytest.raises(AttributeError):
        k.score = 0.0  # type: ignore[misc]


def test_keyframe_checks_its_fields():
    good = full_frame().to_dict()
    with pytest.raises(InvalidInput, match=r"keyframe.coverage must be in \[0, 1\], got 1.2"):
        Keyframe.from_dict({**good, "coverage": 1.2})
    with pytest.raises(InvalidInput, match=r"keyframe.intrinsics must have 6 numbers, got 4"):
        Keyframe.from_dict({**good, "intrinsics": [1.0, 1.0, 0.5, 0.5]})
    with pytest.raises(InvalidInput, match=r"keyframe is missing seq, score"):
        Keyframe.from_dict({k: v for k, v in good.items() if k not in ("score", "seq")})
    with pytest.raises(InvalidInput, match=r"keyframe.image must be a string path or None"):
        Keyframe.from_dict({**good, "image": 3})


def test_make_candidate_scores_a_camera_frame():
    camera = look_at((0.0, 0.0, 1.0), (2.0, 0.0, 1.0), fov_deg=90.0, vfov_deg=60.0,
                     range_m=4.0, depth=np.full((6, 8), 2.0))
    k = make_candidate(camera, (2.0, 0.0, 1.0), (1.0, 1.0, 1.0), (), t=5.0, commit=2, seq=9,
                       image="a.png")
    assert (k.coverage, k.novelty, k.depth, k.score) == (1.0, 1.0, 1.0, 1.0)
    assert (k.t, k.commit, k.seq, k.image) == (5.0, 2, 9, "a.png")
    assert k.position == camera.position and k.quaternion == camera.quaternion
    again = make_candidate(camera, (2.0, 0.0, 1.0), (1.0, 1.0, 1.0), (k,), t=6.0, commit=3,
                           seq=10)
    assert again.novelty == 0.0 and again.score == pytest.approx(0.7)


# -- the retention policy ---------------------------------------------------------------------
def test_default_n_is_five():
    assert N_KEYFRAMES == 5
    kept: tuple[Keyframe, ...] = ()
    for seq in range(7):
        kept, archived, was_kept = offer(kept, frame(seq, 0.5))
        assert archived is None and was_kept is (seq < 5)
    assert [k.seq for k in kept] == [0, 1, 2, 3, 4]


def test_a_better_frame_replaces_the_worst_and_goes_to_the_end():
    kept = (frame(0, 0.6), frame(1, 0.2), frame(2, 0.8))
    new = frame(3, 0.3)
    out, archived, was_kept = offer(kept, new, n=3)
    assert [k.seq for k in out] == [0, 2, 3]
    assert archived is kept[1] and was_kept is True
    assert out[0] is kept[0] and out[1] is kept[2] and out[2] is new


def test_an_equal_or_worse_frame_is_not_kept():
    kept = (frame(0, 0.6), frame(1, 0.2))
    for s in (0.2, 0.1):
        out, archived, was_kept = offer(kept, frame(5, s), n=2)
        assert out is kept and archived is None and was_kept is False


def test_among_equally_bad_frames_the_latest_offered_goes():
    kept = (frame(0, 0.2), frame(1, 0.9), frame(2, 0.2, t=2.0), frame(3, 0.2, t=2.0))
    out, archived, _ = offer(kept, frame(4, 0.5), n=4)
    assert archived is kept[3]  # same t as seq 2: the larger seq
    out, archived, _ = offer(out, frame(5, 0.5), n=4)
    assert archived is kept[2]
    assert [k.seq for k in out] == [0, 1, 4, 5]


def test_offer_checks_its_inputs():
    kept = (frame(0), frame(1))
    with pytest.raises(InvalidInput, match=r"at most n=1 keyframes may be kept, got 2"):
        offer(kept, frame(2), n=1)
    with pytest.raises(InvalidInput, match=r"n must be >= 1, got 0"):
        offer((), frame(2), n=0)
    with pytest.raises(InvalidInput, match=r"observation seq=1 already has a kept keyframe"):
        offer(kept, frame(1, 0.9), n=3)


SCORES = st.one_of(st.sampled_from([0.0, 0.25, 0.5, 0.75, 1.0]),  # ties, often
                   st.floats(0.0, 1.0, allow_nan=False))


@settings(max_examples=200, deadline=None)
@given(n=st.integers(1, 6),
       offers=st.lists(st.tuples(SCORES, st.sampled_from([0.0, 0.0, 0.5, 2.0])), max_size=30))
def test_retention_keeps_the_top_n_and_archives_every_replaced_frame(n, offers):
    t = 0.0
    frames = []
    for seq, (s, dt) in enumerate(offers):  # log order: t never decreases, seq increases
        t += dt
        frames.append(Keyframe(t=t, commit=seq // 2, seq=seq, position=(float(seq), 1.0, 0.0),
                               quaternion=IDENTITY, coverage=s, novelty=1.0 - s, depth=None,
                               score=s))
    snapshot = {id(f): f.to_dict() for f in frames}

    kept: tuple[Keyframe, ...] = ()
    archive: list[Keyframe] = []
    ever_kept: list[Keyframe] = []
    for i, candidate in enumerate(frames):
        before = kept
        kept, archived, was_kept = offer(kept, candidate, n)
        assert offer(before, candidate, n) == (kept, archived, was_kept)  # deterministic
        assert len(kept) <= n
        assert was_kept is any(k is candidate for k in kept)
        if was_kept:
            ever_kept.append(candidate)
        if archived is not None:
            assert any(k is archived for k in before)
            assert was_kept, "a frame is only archived to make room for a better one"
            archive.append(archived)
        offered = frames[:i + 1]
        # the top n of everything offered, by score, earliest offered first among equals
        best = sorted(range(len(offered)), key=lambda j: (-offered[j].score, j))[:n]
        assert [k.seq for k in kept] == sorted(best)  # kept in offer order
        assert math.fsum(k.score for k in kept) == math.fsum(offered[j].score for j in best)

    ids = [id(f) for f in archive]
    assert len(ids) == len(set(ids)), "a frame archived twice"
    kept_ids = {id(k) for k in kept}
    assert {id(f) for f in ever_kept} == kept_ids | set(ids)
    assert not kept_ids & set(ids)
    assert len(ever_kept) == len(kept) + len(archive)
    for f in (*kept, *archive):  # the very objects offered, unchanged
        assert f is frames[f.seq]
        assert f.to_dict() == snapshot[id(f)]


def test_a_large_box_on_a_large_depth_image_is_sampled_on_a_grid_with_the_same_share() -> None:
    depth = np.full((480, 640), 5.0)
    depth[:, :320] = np.nan  # the left half has no readings
    camera = Camera((0.0, 0.0, 1.0), (1.0, 0.0, 0.0, 0.0), fov_deg=90.0, range_m=8.0,
                    depth=depth)
    coverage, share = visibility(camera, (3.0, 0.0, 1.0), (2.0, 2.0, 1.0))
    assert coverage == 1.0 and share == pytest.approx(0.5, abs=0.01)


def test_could_join_spares_frames_that_cannot_win() -> None:
    center = (2.0, 0.0, 0.5)
    camera = Camera((0.0, 0.0, 0.5), (1.0, 0.0, 0.0, 0.0), fov_deg=90.0, range_m=5.0)
    frame = Keyframe(t=0.0, commit=1, seq=1, position=(0.0, 0.0, 0.5),
                     quaternion=(1.0, 0.0, 0.0, 0.0), coverage=1.0, novelty=0.0, depth=None,
                     score=0.625)
    assert could_join(camera, center, [frame], n=2)  # room left
    assert not could_join(camera, center, [frame, frame], n=2)  # same view: at best 0.625
    side = Camera((2.0, -2.0, 0.5), (1.0, 0.0, 0.0, 0.0), fov_deg=90.0, range_m=5.0)
    assert could_join(side, center, [frame, frame], n=2)  # a new viewpoint could score 1.0
    best = dataclasses.replace(frame, score=1.0)
    assert not could_join(side, center, [best, best], n=2)  # nothing beats 1
