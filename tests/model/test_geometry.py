"""Camera geometry: frames, the pinhole model, fields of view, visibility against depth."""

from __future__ import annotations

import math

import numpy as np
import pytest

from locimem import Camera, InvalidInput
from locimem.geometry import (
    Place,
    Visibility,
    check_points,
    in_view,
    intrinsics,
    look_at,
    pixel_index,
    pixel_rays,
    place_looks,
    place_states,
    project,
    quaternion_wxyz_from_matrix,
    rotation_matrix_from_wxyz,
    to_camera_frame,
    view_box,
    visibility,
)

YAW_90 = (math.cos(math.pi / 4), 0.0, 0.0, math.sin(math.pi / 4))  # body x -> map +y


def cam(quat=(1.0, 0.0, 0.0, 0.0), pos=(0.0, 0.0, 0.0), fov=90.0, vfov=90.0, rng=5.0,
        depth=None) -> Camera:
    return Camera(pos, quat, fov, rng, vfov, depth=depth)


# -- frames ---------------------------------------------------------------------------------------
def test_identity_pose_is_a_translation():
    c = cam(pos=(1.0, 2.0, 3.0))
    np.testing.assert_allclose(to_camera_frame(c, [[2.0, 2.5, 2.0]]), [[1.0, 0.5, -1.0]])


def test_yaw_90_maps_map_y_to_forward_and_map_minus_x_to_left():
    c = cam(YAW_90)
    body = to_camera_frame(c, [[0.0, 2.0, 0.0], [-1.0, 2.0, 0.5]])
    np.testing.assert_allclose(body, [[2.0, 0.0, 0.0], [2.0, 1.0, 0.5]], atol=1e-12)


def test_body_to_map_round_trip_with_random_rotations():
    rng = np.random.default_rng(0)
    for _ in range(50):
        q = rng.normal(size=4)
        q /= np.linalg.norm(q)
        c = cam(tuple(q), pos=tuple(rng.normal(size=3)))
        pts = rng.normal(size=(7, 3))
        body = to_camera_frame(c, pts)
        back = body @ rotation_matrix_from_wxyz(c.quaternion).T + np.asarray(c.position)
        np.testing.assert_allclose(back, pts, atol=1e-12)


def test_matrix_quaternion_round_trip_covers_every_branch():
    rng = np.random.default_rng(1)
    quats = [(1, 0, 0, 0), (0, 1, 0, 0), (0, 0, 1, 0), (0, 0, 0, 1)]
    quats += [tuple(rng.normal(size=4)) for _ in range(100)]
    for q in quats:
        q = np.asarray(q, dtype=float) / np.linalg.norm(q)
        q = q if q[0] >= 0 else -q
        back = quaternion_wxyz_from_matrix(rotation_matrix_from_wxyz(q))
        assert back[0] >= 0
        np.testing.assert_allclose(back, q, atol=1e-12)


def test_rotation_matrix_is_scipys_for_any_quaternion():
    """The closed form is scipy's ``from_quat(...).as_matrix()`` (its arithmetic: within an
    ulp or two of whichever scipy is installed, the bits of the one it was written against),
    for quaternions of any scale, with zeros, unit or not; a rotation, read-only."""
    from scipy.spatial.transform import Rotation

    rng = np.random.default_rng(7)
    for k in range(3000):
        q = rng.normal(size=4) * 10.0 ** rng.uniform(-3, 3)
        if k % 5 == 0:
            q[rng.integers(4)] = 0.0
        w, x, y, z = (float(v) for v in q)
        mine = rotation_matrix_from_wxyz((w, x, y, z))
        np.testing.assert_array_max_ulp(mine, Rotation.from_quat([x, y, z, w]).as_matrix(),
                                        maxulp=2)
        np.testing.assert_allclose(mine @ mine.T, np.eye(3), atol=1e-14)
        assert not mine.flags.writeable
    assert rotation_matrix_from_wxyz(YAW_90).round(15).tolist() == [
        [0.0, -1.0, 0.0], [1.0, 0.0, 0.0], [0.0, 0.0, 1.0]]
    with pytest.raises(InvalidInput):
        rotation_matrix_from_wxyz((0.0, 0.0, 0.0, 0.0))


def test_look_at_points_the_optical_axis_at_the_target_with_a_level_horizon():
    c = look_at((1.0, 1.0, 1.3), (3.0, 2.0, 0.8))
    body = to_camera_frame(c, [[3.0, 2.0, 0.8]])
    np.testing.assert_allclose(body[0, 1:], [0.0, 0.0], atol=1e-12)
    assert body[0, 0] == pytest.approx(math.dist((1, 1, 1.3), (3, 2, 0.8)))
    y_axis = rotation_matrix_from_wxyz(c.quaternion)[:, 1]
    assert y_axis[2] == pytest.approx(0.0, abs=1e-12)  # no roll


def test_look_at_straight_down_is_defined():
    c = look_at((0, 0, 2), (0, 0, 0))
    np.testing.assert_allclose(rotation_matrix_from_wxyz(c.quaternion)[:, 0], [0, 0, -1],
                               atol=1e-12)
    with pytest.raises(InvalidInput, match="distinct"):
        look_at((1, 1, 1), (1, 1, 1))


def test_check_points_names_the_expected_and_received_shape():
    assert check_points((1, 2, 3)).shape == (1, 3)
    assert check_points([]).shape == (0, 3)
    with pytest.raises(InvalidInput, match=r"shape \(n, 3\) or \(3,\), got shape \(2, 2\)"):
        check_points([[1, 2], [3, 4]])
    with pytest.raises(InvalidInput, match="finite"):
        check_points([[0, 0, np.nan]])


# -- field of view --------------------------------------------------------------------------------
def test_in_view_boundaries_are_included_and_behind_or_beyond_range_is_not():
    c = cam(fov=90.0, vfov=60.0, rng=4.0)
    tan_h, tan_v = math.tan(math.radians(45)), math.tan(math.radians(30))
    pts = [
        [2.0, 2.0 * tan_h, 0.0],  # exactly on the horizontal edge (45 degrees)
        [2.0, 2.0001, 0.0],  # just outside it
        [2.0, 0.0, 2.0 * tan_v - 1e-9],  # just inside the vertical edge
        [2.0, 0.0, 2.0 * tan_v + 1e-6],  # just outside it
        [4.0, 0.0, 0.0],  # at range
        [4.0001, 0.0, 0.0],  # beyond range
        [-1.0, 0.0, 0.0],  # behind
        [0.0, 0.0, 0.0],  # at the camera
    ]
    assert in_view(c, pts).tolist() == [True, False, True, False, True, False, False, False]


def test_the_field_of_view_is_a_pinhole_rectangle_not_a_cone():
    # A corner ray is inside both half-angles although its angle off the axis is larger.
    c = cam(fov=90.0, vfov=90.0)
    assert in_view(c, [[1.0, 0.99, 0.99]]).tolist() == [True]


# -- pinhole projection ---------------------------------------------------------------------------
def test_intrinsics_follow_the_fields_of_view():
    c = cam(fov=90.0, vfov=60.0)
    fx, fy, cx, cy = intrinsics(c, (30, 40))
    assert fx == pytest.approx(20.0)
    assert fy == pytest.approx(15.0 / math.tan(math.radians(30)))
    assert (cx, cy) == (20.0, 15.0)
    with pytest.raises(InvalidInput, match="image shape"):
        intrinsics(c)


def test_project_puts_left_at_small_columns_and_up_at_small_rows():
    c = cam(fov=90.0, vfov=90.0)
    rows, cols = project(c, [[1, 0, 0], [1, 1, 0], [1, -1, 0], [1, 0, 1], [1, 0, -1],
                             [-1, 0, 0]], shape=(10, 20))
    np.testing.assert_allclose(rows[:5], [5, 5, 5, 0, 10], atol=1e-12)
    np.testing.assert_allclose(cols[:5], [10, 0, 20, 10, 10], atol=1e-12)
    assert math.isnan(rows[5]) and math.isnan(cols[5])


def test_pixel_rays_pass_through_pixel_centres_and_have_unit_forward_component():
    c = look_at((0.5, -1.0, 1.2), (3.0, 1.0, 0.4), fov_deg=70.0, vfov_deg=50.0)
    shape = (6, 8)
    rays = pixel_rays(c, shape)
    body = to_camera_frame(c, (np.asarray(c.position) + rays).reshape(-1, 3))
    np.testing.assert_allclose(body[:, 0], 1.0, atol=1e-12)
    rows, cols = project(c, (np.asarray(c.position) + 2.5 * rays).reshape(-1, 3), shape)
    ii, jj = np.meshgrid(np.arange(6) + 0.5, np.arange(8) + 0.5, indexing="ij")
    np.testing.assert_allclose(rows, ii.ravel(), atol=1e-9)
    np.testing.assert_allclose(cols, jj.ravel(), atol=1e-9)


def test_pixel_index_floors_and_clips_the_far_border_into_the_image():
    r, c = pixel_index(np.array([0.0, 2.999, 3.0, np.nan]), np.array([0.5, 4.0, 1.2, 1.0]),
                       (3, 4))
    assert r.tolist() == [0, 2, 2, 0]
    assert c.tolist() == [0, 3, 1, 1]


# -- visibility -----------------------------------------------------------------------------------
def test_without_depth_every_in_view_point_is_visible():
    c = cam()
    v = visibility(c, [[2, 0, 0], [-2, 0, 0], [9, 0, 0]])
    assert v.tolist() == [Visibility.VISIBLE, Visibility.OUT_OF_VIEW, Visibility.OUT_OF_VIEW]
    assert v.dtype == np.int8


def test_depth_decides_visible_occluded_and_no_depth_at_the_margin_exactly():
    depth = np.full((4, 4), 2.0)
    depth[0, 0] = np.nan  # top-left: no reading
    depth[0, 3] = 0.0  # top-right: no reading
    c = cam(depth=depth, rng=10.0)
    pts = [
        [2.0, 0.0, 0.0],  # at the surface
        [2.1, 0.0, 0.0],  # 0.1 m behind it: depth == forward - margin -> VISIBLE
        [2.1 + 1e-6, 0.0, 0.0],  # just beyond the margin -> OCCLUDED
        [1.0, 0.0, 0.0],  # in front of the surface
        [2.0, 1.9, 1.9],  # top-left pixel: NaN
        [2.0, -1.9, 1.9],  # top-right pixel: 0
        [-2.0, 0.0, 0.0],  # behind the camera stays OUT_OF_VIEW
    ]
    assert [Visibility(v).name for v in visibility(c, pts, margin_m=0.1)] == [
        "VISIBLE", "VISIBLE", "OCCLUDED", "VISIBLE", "NO_DEPTH", "NO_DEPTH", "OUT_OF_VIEW"]


def test_margins_may_be_given_per_point():
    c = cam(depth=np.full((2, 2), 2.0), rng=10.0)
    v = visibility(c, [[2.5, 0, 0], [2.5, 0, 0]], margin_m=np.array([0.6, 0.4]))
    assert v.tolist() == [Visibility.VISIBLE, Visibility.OCCLUDED]
    with pytest.raises(InvalidInput, match=r"margin_m must be a number or an array of shape"):
        visibility(c, [[2.5, 0, 0]], margin_m=np.array([0.1, 0.2]))
    with pytest.raises(InvalidInput, match="finite and >= 0"):
        visibility(c, [[2.5, 0, 0]], margin_m=-0.1)


def test_visibility_uses_the_pixel_the_point_projects_to():
    depth = np.full((2, 2), 5.0)
    depth[:, 0] = 1.0  # a wall close on the left half
    c = cam(depth=depth, rng=10.0)
    v = visibility(c, [[3.0, 1.0, 0.0], [3.0, -1.0, 0.0]], margin_m=0.1)
    assert v.tolist() == [Visibility.OCCLUDED, Visibility.VISIBLE]


def test_visibility_of_no_points_is_empty():
    assert visibility(cam(), np.zeros((0, 3))).shape == (0,)


# -- places of remembered objects (the tracker's ray check) --------------------------------------
def _table_scene(cup_there: bool, shape=(48, 64), size=(0.1, 0.1, 0.1)):
    """A camera 1.5 m from an item (a 10 cm cup by default) on a table (top at z = 0.75),
    looking down at it."""
    from locimem.sim.render import render_depth

    cup_s = np.array(size)
    cup_c = np.array([2.0, 0.0, 0.75 + size[2] / 2])
    lo = [np.array([1.0, -1.0, 0.71]), np.array([3.0, -3.0, 0.0])]  # table top, far wall
    hi = [np.array([3.0, 1.0, 0.75]), np.array([3.1, 3.0, 3.0])]
    if cup_there:
        lo.append(cup_c - cup_s / 2)
        hi.append(cup_c + cup_s / 2)
    bare = look_at((0.6, 0.0, 1.3), cup_c, fov_deg=60.0, vfov_deg=45.0, range_m=4.0)
    depth = render_depth(bare, np.array(lo), np.array(hi), shape)
    camera = look_at((0.6, 0.0, 1.3), cup_c, fov_deg=60.0, vfov_deg=45.0, range_m=4.0,
                     depth=depth)
    return camera, cup_c, cup_s


def test_a_removed_cup_is_seen_through_even_with_the_table_right_under_it():
    camera, c, s = _table_scene(cup_there=False)
    assert place_states(camera, [c], [s]).tolist() == [Place.EMPTY]
    camera, c, s = _table_scene(cup_there=True)
    assert place_states(camera, [c], [s]).tolist() == [Place.OCCUPIED]
    # an estimate a centimetre off still sees the cup that is there
    assert place_states(camera, [c + np.array([0.0, 0.01, -0.01])], [s]).tolist() == [
        Place.OCCUPIED]


def test_a_place_behind_something_is_occluded_and_one_without_readings_has_no_depth():
    camera, c, s = _table_scene(cup_there=True)
    ray = (c - camera.position) / np.linalg.norm(c - camera.position)
    behind = c + 0.25 * ray  # hidden by the cup from this camera
    assert place_states(camera, [behind], [s * 0.5]).tolist() == [Place.OCCLUDED]
    holes = Camera(camera.position, camera.quaternion, camera.fov_deg, camera.range_m,
                   camera.vfov_deg, depth=np.full(camera.depth.shape, np.nan))
    assert place_states(holes, [c], [s]).tolist() == [Place.NO_DEPTH]


@pytest.mark.parametrize("shape", [(3, 4), (12, 16), (13, 17), (24, 32), (480, 640)])
@pytest.mark.parametrize("size", [(0.1, 0.1, 0.1), (0.18, 0.05, 0.02)])  # a cup; a thin remote
def test_a_small_place_is_judged_at_every_depth_resolution(shape, size):
    """Pixels far wider than the object, even sizes whose pixel centres straddle it: the
    place is still looked at (the pixel its centre falls in), present or removed."""
    from locimem.geometry import LOOKED, place_looks

    for there in (True, False):
        camera, item_c, item_s = _table_scene(there, shape, size)
        looks = place_looks(camera, [item_c], [item_s])
        assert Place(int(looks.states[0])) in LOOKED, (shape, size, there)
        assert looks.visible[0] == 1.0
        if there:
            assert looks.states[0] == Place.OCCUPIED


def test_places_partly_out_of_view_or_range_give_no_evidence():
    camera, c, s = _table_scene(cup_there=False)
    edge = camera.position + 3.95 * (c - camera.position) / np.linalg.norm(c - camera.position)
    assert place_states(camera, [edge], [s]).tolist() == [Place.OUT_OF_VIEW]  # beyond range
    bare = Camera(camera.position, camera.quaternion, camera.fov_deg, camera.range_m,
                  camera.vfov_deg)
    assert place_states(bare, [c], [s]).tolist() == [Place.IN_VIEW]  # no depth image
    assert place_states(camera, np.zeros((0, 3)), np.zeros((0, 3))).tolist() == []


@pytest.mark.parametrize("shape", [(24, 32), (480, 640)])
def test_a_book_on_a_shelf_above_the_camera_is_hidden_by_the_shelf(shape):
    """A book lying on a shelf board 1.6 m up, looked at from 1.0 m: the rays that would
    enter its box through its bottom face meet the board first, a few centimetres before the
    box — too close to count as an occluder by depth alone, but the board is what the book
    stands on. From below, the place is occluded (neutral: no evidence of absence); from
    above the board, the same book is plainly visible."""
    from locimem.geometry import place_looks
    from locimem.sim.render import render_depth

    book_c, book_s = np.array([2.0, 0.0, 1.62]), np.array([0.23, 0.16, 0.04])
    board_lo, board_hi = np.array([1.8, -0.5, 1.58]), np.array([2.3, 0.5, 1.60])
    lo = np.array([board_lo, book_c - book_s / 2, [3.0, -3, 0], [0, -3, -0.1]])
    hi = np.array([board_hi, book_c + book_s / 2, [3.1, 3, 3], [3, 3, 0]])
    for eye, expect in (((1.0, 0.0, 1.0), Place.OCCLUDED), ((1.0, 0.0, 2.2), Place.OCCUPIED)):
        bare = look_at(eye, book_c, fov_deg=60.0, vfov_deg=45.0, range_m=4.0)
        camera = look_at(eye, book_c, fov_deg=60.0, vfov_deg=45.0, range_m=4.0,
                         depth=render_depth(bare, lo, hi, shape))
        looks = place_looks(camera, [book_c], [book_s])
        assert Place(int(looks.states[0])) is expect, (shape, eye)
        assert bool(looks.visible[0] < 0.5) is (expect is Place.OCCLUDED)


@pytest.mark.parametrize("seed", range(20))
def test_the_view_box_holds_everything_in_view(seed: int) -> None:
    """Any pose, fields of view and range: every point in view, and the centre of every box
    judged in view, lies inside ``view_box`` — what the miss check's candidates are read from
    (so reading them from it loses none)."""
    rng = np.random.default_rng(seed)
    q = rng.normal(size=4)
    camera = Camera(tuple(rng.uniform(-5, 5, 3)), tuple(q / np.linalg.norm(q)),
                    float(rng.uniform(20, 170)), float(rng.uniform(0.5, 9)),
                    float(rng.uniform(20, 170)))
    lo, hi = view_box(camera)
    points = camera.position + rng.uniform(-1, 1, (4000, 3)) * camera.range_m * 1.5
    inside = np.all((points >= lo) & (points <= hi), axis=1)
    seen = in_view(camera, points)
    assert seen.any() and not (seen & ~inside).any()
    if camera.fov_deg <= 120 and camera.vfov_deg <= 120:  # and leaves what is behind out
        assert (~inside).any()
    looks = place_looks(camera, points, np.full((len(points), 3), 0.05))
    assert not ((looks.states != Place.OUT_OF_VIEW) & ~inside).any()
    # the view's own corners at full range lie on the box's faces, not outside
    tan_h = math.tan(math.radians(camera.fov_deg) / 2)
    tan_v = math.tan(math.radians(camera.vfov_deg) / 2)
    rot = rotation_matrix_from_wxyz(camera.quaternion)
    corners = np.array([[camera.range_m, sy * camera.range_m * tan_h,
                         sz * camera.range_m * tan_v] for sy in (-1, 1) for sz in (-1, 1)])
    mapped = corners @ rot.T + np.asarray(camera.position)
    assert np.all((mapped >= lo) & (mapped <= hi))


CHAIR_C, CHAIR_S = (3.0, 0.0, 0.45), (0.45, 0.45, 0.9)


def _chair_camera(with_chair: bool, shape=(24, 32)):
    """A camera at 1.5 m looking level along +x with a 45-degree vertical view: a chair 3 m
    ahead has its centre in view and its legs below the image (a floor and a wall behind)."""
    from locimem.sim.render import render_depth

    lo, hi = [(5.0, -5.0, 0.0), (-1.0, -5.0, -0.1)], [(5.1, 5.0, 3.0), (6.0, 5.0, 0.0)]
    if with_chair:
        lo.append(tuple(c - s / 2 for c, s in zip(CHAIR_C, CHAIR_S, strict=True)))
        hi.append(tuple(c + s / 2 for c, s in zip(CHAIR_C, CHAIR_S, strict=True)))
    bare = look_at((0, 0, 1.5), (3, 0, 1.5), fov_deg=60.0, vfov_deg=45.0, range_m=6.0)
    depth = render_depth(bare, np.array(lo), np.array(hi), shape)
    return look_at((0, 0, 1.5), (3, 0, 1.5), fov_deg=60.0, vfov_deg=45.0, range_m=6.0,
                   depth=depth)


@pytest.mark.parametrize("shape", [(12, 16), (24, 32), (60, 80)])
def test_a_large_thing_partly_in_view_is_looked_at_a_small_one_is_not(shape) -> None:
    """A chair seldom fits whole in the view: with its centre in view and 64 % of its
    projection inside the image, its place is judged on the pixels that see it — occupied
    when it stands there, seen through when it is gone. A cup likewise cut by the image's
    edge (its centre in view, its sphere not) stays out of view: a small thing's look there
    is a guess. A chair whose centre is below the image is out of view too."""
    there, gone = _chair_camera(True, shape), _chair_camera(False, shape)
    states = [Place(place_states(cam, [CHAIR_C], [CHAIR_S])[0]).name for cam in (there, gone)]
    assert states == ["OCCUPIED", "EMPTY"]
    cup = place_states(there, [(3.0, 1.68, 0.8)], [(0.08, 0.08, 0.1)])[0]
    assert Place(cup) is Place.OUT_OF_VIEW
    assert Place(place_states(there, [(3.0, 0.0, 0.2)], [CHAIR_S])[0]) is Place.OUT_OF_VIEW
    bare = look_at((0, 0, 1.5), (3, 0, 1.5), fov_deg=60.0, vfov_deg=45.0, range_m=6.0)
    assert Place(place_states(bare, [CHAIR_C], [CHAIR_S])[0]) is Place.IN_VIEW


def test_a_chair_taken_away_is_lost_though_its_legs_are_never_in_view() -> None:
    """The memory's side of it: a chair seen six times from 3 m, then looked at with its place
    empty, is lost within five looks (before, its legs out of the image kept the place out of
    view for good, and a chair taken away stayed believed)."""
    from locimem import Detection, ObjectMemory
    from locimem.model import EventKind

    there, gone = _chair_camera(True), _chair_camera(False)
    chair = Detection("chair", 0.9, CHAIR_C, CHAIR_S)
    with ObjectMemory.open() as mem:
        for k in range(6):
            mem.observe(float(k), [chair], there)
        assert [o.label for o in mem.tracked()] == ["chair"]
        lost_at = None
        for k in range(6, 16):
            if any(e.kind is EventKind.LOST for e in mem.observe(float(k), [], gone).events):
                lost_at = k
                break
        assert lost_at is not None and lost_at - 6 + 1 <= 5
        assert mem.tracked() == []
