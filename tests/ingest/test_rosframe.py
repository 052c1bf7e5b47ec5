"""A live robot: the guide's rclpy node, run without ROS (stand-in rclpy, message_filters and
tf2_ros modules, stand-in messages), feeds the memory what a recording of it would; and
``frame_from_messages`` on plain message objects."""

from __future__ import annotations

import re
import sys
import types
from pathlib import Path
from types import SimpleNamespace as NS
from typing import Any

import numpy as np
import pytest

from locimem import ObjectMemory
from locimem.errors import InvalidInput
from locimem.ingest.rosframe import frame_from_messages, pose_of
from tests.ingest.test_ingest_2d import CAMERA_UP_M, DARK, OBJECTS, Q_OPTICAL, K, box_of, render

GUIDE = Path(__file__).resolve().parents[2] / "docs" / "guide.md"
FRAME = "camera_color_optical_frame"


def header(t: float, frame: str = FRAME) -> NS:
    sec = int(t)
    return NS(stamp=NS(sec=sec, nanosec=round((t - sec) * 1e9)), frame_id=frame)


def image(t: float, array: np.ndarray, encoding: str) -> NS:
    h, w = array.shape
    return NS(header=header(t), height=h, width=w, encoding=encoding, is_bigendian=0,
              step=w * array.itemsize, data=array.tobytes())


def messages(t: float, y: float) -> tuple[NS, NS, NS, np.ndarray]:
    """(detections, camera info, depth) of the test scene from a camera at (0, y, 0.6), and
    the instance image (value k: detections[k - 1])."""
    pos = np.array([0.0, y, CAMERA_UP_M])
    scene = [(lo, hi) for _, lo, hi in OBJECTS] + [DARK[1:]]
    depth, which = render(K, pos, scene)
    depth[which == len(scene)] = 0.0  # the dark one: no return
    dets = []
    for name, lo, hi in OBJECTS:
        x0, y0, x1, y1 = box_of(pos, lo, hi)
        hyp = NS(hypothesis=NS(class_id=name, score=0.9))
        dets.append(NS(results=[hyp], id="", bbox=NS(
            center=NS(position=NS(x=(x0 + x1) / 2, y=(y0 + y1) / 2), theta=0.0),
            size_x=x1 - x0, size_y=y1 - y0)))
    info = NS(header=header(t), k=[K.fx, 0, K.cx, 0, K.fy, K.cy, 0, 0, 1], width=K.width,
              height=K.height)
    raw = np.round(depth * 1000).astype("<u2")
    return (NS(header=header(t), detections=dets), info, image(t, raw, "16UC1"),
            np.where(which <= len(OBJECTS), which, 0).astype(np.uint8))


def transform_stamped(y: float) -> NS:
    q = Q_OPTICAL
    return NS(header=header(0.0, "map"), child_frame_id=FRAME, transform=NS(
        translation=NS(x=0.0, y=y, z=CAMERA_UP_M), rotation=NS(w=q[0], x=q[1], y=q[2], z=q[3])))


class _Ros:
    """Stand-ins for the modules the guide's node imports, recording what it does."""

    def __init__(self) -> None:
        self.callbacks: list[Any] = []
        self.warnings: list[str] = []
        self.poses: dict[float, NS] = {}
        self.subscribed: list[tuple[Any, str]] = []
        ros = self

        class TransformException(Exception):
            pass

        class Buffer:
            def lookup_transform(self, target: str, source: str, when: Any) -> NS:
                assert (target, source) == ("map", FRAME)
                if round(when, 6) not in ros.poses:
                    raise TransformException(f"extrapolation into the future at {when}")
                return ros.poses[round(when, 6)]

        class Node:
            def __init__(self, name: str) -> None:
                self.name = name

            def get_logger(self) -> NS:
                return NS(warning=ros.warnings.append)

        class Synchronizer:
            def __init__(self, subs: list[Any], queue_size: int, slop: float) -> None:
                assert slop == 0.02 and len(subs) == 3

            def registerCallback(self, fn: Any) -> None:
                ros.callbacks.append(fn)

        def subscriber(node: Any, kind: Any, topic: str) -> None:
            ros.subscribed.append((kind, topic))

        def time_from_msg(stamp: NS) -> float:
            return stamp.sec + stamp.nanosec * 1e-9

        self.modules = {
            "rclpy": types.ModuleType("rclpy"),
            "rclpy.node": NS(Node=Node), "rclpy.time": NS(Time=NS(from_msg=time_from_msg)),
            "message_filters": NS(ApproximateTimeSynchronizer=Synchronizer,
                                  Subscriber=subscriber),
            "tf2_ros": NS(Buffer=Buffer, TransformException=TransformException,
                          TransformListener=lambda buffer, node: None),
            "sensor_msgs": types.ModuleType("sensor_msgs"),
            "sensor_msgs.msg": NS(CameraInfo="CameraInfo", Image="Image"),
            "vision_msgs": types.ModuleType("vision_msgs"),
            "vision_msgs.msg": NS(Detection2DArray="Detection2DArray"),
        }


def _node_code() -> str:
    text = GUIDE.read_text()
    (block,) = [b for b in re.findall(r"```python\n(.*?)```", text, flags=re.S)
                if "frame_from_messages" in b]
    assert 25 <= len(block.strip().splitlines()) <= 45  # about thirty lines
    return block


def test_the_guides_node_feeds_the_memory(monkeypatch):
    ros = _Ros()
    for name, module in ros.modules.items():
        monkeypatch.setitem(sys.modules, name, module)
    scope: dict[str, Any] = {}
    exec(compile(_node_code(), "docs/guide.md", "exec"), scope)
    with ObjectMemory.open(":memory:") as mem:
        node = scope["MemoryNode"](mem)
        assert [topic for _, topic in ros.subscribed] == [
            "/detections", "/camera/color/camera_info",
            "/camera/aligned_depth_to_color/image_raw"]
        (callback,) = ros.callbacks
        t0 = 1_700_000_000.0
        for i in range(6):
            t, y = t0 + 0.1 * i, -0.1 + 0.04 * i
            dets, info, depth, _ = messages(t, y)
            if i != 4:  # tf has no pose for frame 4
                ros.poses[round(t, 6)] = transform_stamped(y)
            # message_filters calls back with the subscribers' messages, in their order
            callback(dets, info, depth)
        assert node.name == "locimem"
        assert len(ros.warnings) == 1 and ros.warnings[0].startswith(
            "frame skipped, no camera pose: extrapolation")
        assert len(mem._live.store.commits("default")) == 5  # nothing for the skipped one
        got = {o.label: o.center for o in mem.objects()}
    assert sorted(got) == sorted(n for n, _, _ in OBJECTS)
    for name, lo, hi in OBJECTS:
        assert np.linalg.norm(np.subtract(got[name], np.add(lo, hi) / 2)) < 0.03, name


def test_frame_from_messages_with_masks_and_a_plain_pose():
    dets, info, depth, instances = messages(10.0, 0.0)
    pose = ((0.0, 0.0, CAMERA_UP_M), Q_OPTICAL)
    frame = frame_from_messages(dets, depth, info, pose, masks=image(10.0, instances, "mono8"))
    assert frame.t == 10.0 and frame.indices == [0, 1, 2] and frame.skipped == []
    assert [d.label for d in frame.detections] == [n for n, _, _ in OBJECTS]
    for det, (_, lo, hi) in zip(frame.detections, OBJECTS, strict=True):
        assert np.linalg.norm(np.subtract(det.center, np.add(lo, hi) / 2)) < 0.03
    assert frame.camera.depth is not None and frame.camera.depth.shape == (120, 160)
    assert pose_of(transform_stamped(0.0)) == pose_of(pose)


def test_frame_from_messages_says_what_is_wrong():
    dets, info, depth, instances = messages(10.0, 0.0)
    pose = ((0.0, 0.0, CAMERA_UP_M), Q_OPTICAL)
    with pytest.raises(InvalidInput, match=r"the instance mask is 80x60, the colour image "
                       r"160x120: masks must be at the boxes' image size"):
        frame_from_messages(dets, depth, info, pose,
                            masks=image(10.0, instances[::2, ::2].copy(), "mono8"))
    depth.header.frame_id = "camera_depth_optical_frame"
    with pytest.raises(InvalidInput, match=r"give a depth image aligned to the colour image"):
        frame_from_messages(dets, depth, info, pose)
    depth.header.frame_id = FRAME
    dets.detections[0].results = []
    dets.detections[1].bbox.center.position.x = -500.0
    frame = frame_from_messages(dets, depth, info, pose)
    assert frame.indices == [2] and [i for i, _ in frame.skipped] == [0, 1]
    assert frame.dropped == {"not lifted: no hypothesis": 1, "not lifted: outside the image": 1}
    with pytest.raises(InvalidInput,
                       match=r"^detections\[1\]: class id 'bin' is not in the label map"):
        frame_from_messages(dets, depth, info, pose, label_map={"cube": "box"})
