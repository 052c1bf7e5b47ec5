"""The one transform form: both ways of writing a rigid transform read the same, round trip
through a (translation, quaternion) pair, and everything that is not a rigid motion is
refused at the boundary."""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from locimem.errors import InvalidInput
from locimem.frames import (
    IDENTITY,
    as_pair,
    check_transform,
    compose,
    invert,
    transform_points,
    yaw_of,
    yaw_transform,
)

angles = st.floats(-179.9, 180.0, allow_nan=False)
offsets = st.floats(-50.0, 50.0, allow_nan=False)


def test_a_yaw_of_90_degrees_turns_x_into_y() -> None:
    turn = yaw_transform(90.0, 1.0, 2.0, 0.5)
    assert transform_points(turn, (1.0, 0.0, 0.0)) == pytest.approx((1.0, 3.0, 0.5))
    assert yaw_of(turn) == pytest.approx(90.0)
    # the same transform as a pair: a quaternion of 90 degrees about z
    half = math.sqrt(0.5)
    pair = ((1.0, 2.0, 0.5), (half, 0.0, 0.0, half))
    assert check_transform(pair) == pytest.approx(turn)
    translation, quaternion = as_pair(turn)
    assert translation == pytest.approx([1.0, 2.0, 0.5])
    assert quaternion == pytest.approx([half, 0.0, 0.0, half])


@settings(max_examples=60, deadline=None)
@given(angles, offsets, offsets, offsets, angles, offsets)
def test_compose_invert_and_the_pair_round_trip(yaw, tx, ty, tz, yaw2, tx2) -> None:
    a = check_transform(yaw_transform(yaw, tx, ty, tz))
    b = yaw_transform(yaw2, tx2, 0.0, 0.0)
    assert compose(a, invert(a)) == pytest.approx(IDENTITY, abs=1e-9)
    assert check_transform(as_pair(a)) == pytest.approx(a, abs=1e-9)
    turn = (yaw_of(compose(a, b)) - yaw - yaw2) % 360.0  # yaws add (modulo a full turn)
    assert min(turn, 360.0 - turn) < 1e-6
    points = np.array([[0.0, 0.0, 0.0], [1.0, -2.0, 3.0]])
    assert transform_points(invert(a), transform_points(a, points)) == pytest.approx(points)


def test_an_accepted_transform_cannot_be_changed_in_place() -> None:
    checked = check_transform(np.eye(4))
    with pytest.raises(ValueError):
        checked[0, 3] = 1.0


@pytest.mark.parametrize("value, message", [
    (np.diag([1.0, 1.0, -1.0, 1.0]), "reflection"),
    (np.diag([2.0, 1.0, 1.0, 1.0]), "not orthonormal"),
    (np.eye(3), r"shape \(3, 3\)"),
    ("identity", "must be a 4x4 rigid matrix or"),
    ([[1, 0, 0, 0], [0, 1, 0, 0], [0, 0, 1, 0], [0, 0, 1, 1]], "bottom row must be 0 0 0 1"),
    (np.full((4, 4), np.inf), "non-finite"),
    (((0.0, 0.0, 0.0), (0.0, 0.0, 0.0, 0.0)), "unit quaternion"),
    (((0.0, 0.0, math.nan), (1.0, 0.0, 0.0, 0.0)), "non-finite"),
    (((1.0, 2.0), (1.0, 0.0, 0.0, 0.0)), "3 translation numbers"),
    (((1.0, 2.0, 3.0), "q"), "must be a 4x4 rigid matrix or"),
    (yaw_transform(0.0, 2e6), "position domain"),
])
def test_what_is_not_a_rigid_transform_is_refused(value, message) -> None:
    with pytest.raises(InvalidInput, match=message):
        check_transform(value)
