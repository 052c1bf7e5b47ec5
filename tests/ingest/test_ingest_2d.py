"""A 2D detector's recording in: Detection2DArray + aligned depth + CameraInfo + tf, written
as a rosbag2 bag by the test, lifted and ingested; every object lands within 3 cm, and what
cannot be lifted or paired is counted, never dropped silently."""

from __future__ import annotations

import json
import sqlite3
import subprocess
import sys
from pathlib import Path
from typing import Any

import numpy as np
import pytest

pytest.importorskip("rosbags")

from locimem import ObjectMemory
from locimem.geometry import rotation_matrix_from_wxyz
from locimem.ingest import IngestError, ingest
from locimem.ingest.frames import Transform
from locimem.ingest.ros import BagOptions, ros_typestore
from locimem.ingest.synth import stamp_of
from locimem.perception import Intrinsics

K = Intrinsics(120.0, 120.0, 79.5, 59.5, 160, 120)  # the colour image: 160x120
Q_OPTICAL = (0.5, -0.5, 0.5, -0.5)  # base_link -> optical frame: looking along base +x
CAMERA_UP_M = 0.6
T0 = 1_700_000_000.0
DT = 0.1
N = 10
DEPTH = "/camera/aligned_depth_to_color/image_raw"
MASKS = "/detections/masks"
# (label, lo, hi) in the map frame, on the floor (z = 0), in front of a wall at x = 3.5
OBJECTS = [("cube", (2.0, -0.55, 0.0), (2.3, -0.25, 0.3)),
           ("bin", (2.4, 0.45, 0.0), (2.6, 0.65, 0.4)),
           ("crate", (1.7, -0.05, 0.0), (1.95, 0.35, 0.25))]
DARK = ("dark", (2.2, -1.2, 0.0), (2.5, -0.9, 0.3))  # gives no return: only the wall around
GHOST_BOX = (150.0, 2.0, 159.0, 20.0)  # a box over pixels with no reading at all
WALL_X = 3.5


def base_y(t: float) -> float:
    return -0.1 + 0.2 * (t - T0) / (N * DT)  # the robot drives 20 cm to its left


def render(k: Intrinsics, pos: np.ndarray, boxes: list[tuple[Any, Any]]
           ) -> tuple[np.ndarray, np.ndarray]:
    """(z-depth in metres, 0 for none; instance index from 1, 0 for the background) of
    ``boxes``, the floor and the wall, seen from ``pos`` by the optical frame Q_OPTICAL."""
    rot = rotation_matrix_from_wxyz(Q_OPTICAL)
    u, v = np.meshgrid(np.arange(k.width), np.arange(k.height))
    rays = np.stack([(u - k.cx) / k.fx, (v - k.cy) / k.fy, np.ones(u.shape)], -1) @ rot.T
    t = np.full(u.shape, np.inf)
    which = np.zeros(u.shape, int)
    with np.errstate(divide="ignore", invalid="ignore"):
        for i, (lo, hi) in enumerate(boxes):
            t1, t2 = (np.asarray(lo) - pos) / rays, (np.asarray(hi) - pos) / rays
            near = np.nanmax(np.minimum(t1, t2), -1)
            far = np.nanmin(np.maximum(t1, t2), -1)
            hit = (far >= near) & (near > 0) & (near < t)
            t, which = np.where(hit, near, t), np.where(hit, i + 1, which)
        for axis, value in ((2, 0.0), (0, WALL_X)):
            tp = (value - pos[axis]) / rays[..., axis]
            hit = (tp > 0) & (tp < t)
            t, which = np.where(hit, tp, t), np.where(hit, 0, which)
    t[~np.isfinite(t)] = 0.0  # the ray's optical z is 1: t is the z-depth
    return t.astype(np.float32), which


def box_of(pos: np.ndarray, lo: Any, hi: Any) -> tuple[float, float, float, float]:
    rot = rotation_matrix_from_wxyz(Q_OPTICAL)
    corners = np.array([[x, y, z] for x in (lo[0], hi[0]) for y in (lo[1], hi[1])
                        for z in (lo[2], hi[2])])
    p = (corners - pos) @ rot
    u = p[:, 0] / p[:, 2] * K.fx + K.cx + 0.5
    v = p[:, 1] / p[:, 2] * K.fy + K.cy + 0.5
    return float(u.min()), float(v.min()), float(u.max()), float(v.max())


class _Bag:
    """A rosbag2 writer for the scene: one message a call, written in record order."""

    def __init__(self, store: Any) -> None:
        self.store = store
        self.log: list[tuple[int, int, str, Any, str]] = []

    def msg(self, name: str, **kw: Any) -> Any:
        return self.store.types[name](**kw)

    def header(self, t: float, frame: str) -> Any:
        sec, nanosec = stamp_of(t)
        return self.msg("std_msgs/msg/Header", frame_id=frame,
                        stamp=self.msg("builtin_interfaces/msg/Time", sec=sec, nanosec=nanosec))

    def put(self, t: float, topic: str, msgtype: str, msg: Any) -> None:
        sec, nanosec = stamp_of(t)
        self.log.append((sec * 1_000_000_000 + nanosec, len(self.log), topic, msg, msgtype))

    def tf(self, t: float, parent: str, child: str, tr: Transform) -> Any:
        p, q = tr.translation_m, tr.quat_wxyz
        vec = self.msg("geometry_msgs/msg/Vector3", x=p[0], y=p[1], z=p[2])
        rot = self.msg("geometry_msgs/msg/Quaternion", w=q[0], x=q[1], y=q[2], z=q[3])
        return self.msg("geometry_msgs/msg/TransformStamped", header=self.header(t, parent),
                        child_frame_id=child,
                        transform=self.msg("geometry_msgs/msg/Transform", translation=vec,
                                           rotation=rot))

    def image(self, t: float, frame: str, array: np.ndarray, encoding: str) -> Any:
        h, w = array.shape
        return self.msg("sensor_msgs/msg/Image", header=self.header(t, frame), height=h,
                        width=w, encoding=encoding, is_bigendian=0, step=w * array.itemsize,
                        data=np.frombuffer(array.tobytes(), np.uint8))

    def detection(self, box: tuple[float, float, float, float], label: str, score: float,
                  track: str) -> Any:
        x0, y0, x1, y1 = box
        origin = self.msg("geometry_msgs/msg/Pose",
                          position=self.msg("geometry_msgs/msg/Point", x=0.0, y=0.0, z=0.0),
                          orientation=self.msg("geometry_msgs/msg/Quaternion", w=1.0, x=0.0,
                                               y=0.0, z=0.0))
        hyp = self.msg("vision_msgs/msg/ObjectHypothesisWithPose",
                       hypothesis=self.msg("vision_msgs/msg/ObjectHypothesis", class_id=label,
                                           score=score),
                       pose=self.msg("geometry_msgs/msg/PoseWithCovariance",
                                     covariance=np.zeros(36), pose=origin))
        center = self.msg("vision_msgs/msg/Pose2D", theta=0.0,
                          position=self.msg("vision_msgs/msg/Point2D", x=(x0 + x1) / 2,
                                            y=(y0 + y1) / 2))
        bbox = self.msg("vision_msgs/msg/BoundingBox2D", center=center, size_x=x1 - x0,
                        size_y=y1 - y0)
        return self.msg("vision_msgs/msg/Detection2D", header=self.header(0.0, ""),
                        results=[hyp], bbox=bbox, id=track)

    def write(self, path: Path, storage: str) -> Path:
        from rosbags.rosbag2 import StoragePlugin, Writer

        plugin = {"sqlite3": StoragePlugin.SQLITE3, "mcap": StoragePlugin.MCAP}[storage]
        with Writer(path, version=9, storage_plugin=plugin) as w:
            conns: dict[str, Any] = {}
            for ns, _, topic, msg, msgtype in sorted(self.log, key=lambda e: (e[0], e[1])):
                if topic not in conns:
                    conns[topic] = w.add_connection(topic, msgtype, typestore=self.store)
                w.write(conns[topic], ns, self.store.serialize_cdr(msg, msgtype))
        return path


def write_2d_bag(path: Path, *, storage: str = "sqlite3", encoding: str = "16UC1",
                 no_depth: tuple[int, ...] = (), masks: bool = False,
                 no_mask: tuple[int, ...] = (), depth_size: tuple[int, int] | None = None,
                 info_from: int = 0, tf_frames: int = N) -> Path:
    """The scene recorded for N frames at 10 Hz: /tf (map -> base_link, 50 Hz), /tf_static
    (base_link -> camera_color_optical_frame), the colour CameraInfo (from frame
    ``info_from``), the aligned depth (none for the frames ``no_depth``; at ``depth_size``
    (w, h) if given), the detections (the OBJECTS, the dark object and a ghost box) and, with
    ``masks``, an instance image per array (none for ``no_mask``); /tf covers the first
    ``tf_frames`` frames."""
    bag = _Bag(ros_typestore())
    camera = "camera_color_optical_frame"
    to_camera = Transform((0.0, 0.0, CAMERA_UP_M), Q_OPTICAL)
    bag.put(T0 - 1.0, "/tf_static", "tf2_msgs/msg/TFMessage", bag.msg(
        "tf2_msgs/msg/TFMessage", transforms=[bag.tf(T0 - 1.0, "base_link", camera,
                                                     to_camera)]))
    for i in range(-5, 5 * tf_frames - 4 if tf_frames < N else 5 * N + 5):
        ts = T0 + i * 0.02
        bag.put(ts, "/tf", "tf2_msgs/msg/TFMessage", bag.msg(
            "tf2_msgs/msg/TFMessage", transforms=[bag.tf(
                ts, "map", "base_link", Transform((0.0, base_y(ts), 0.0), (1, 0, 0, 0)))]))
    dk = K if depth_size is None else K.scaled(*depth_size)
    k_row = [K.fx, 0, K.cx, 0, K.fy, K.cy, 0, 0, 1.0]
    roi = bag.msg("sensor_msgs/msg/RegionOfInterest", x_offset=0, y_offset=0, height=0,
                  width=0, do_rectify=False)
    scene = [(lo, hi) for _, lo, hi in OBJECTS] + [DARK[1:]]
    for f in range(N):
        t = T0 + f * DT
        pos = np.array([0.0, base_y(t), CAMERA_UP_M])
        if f >= info_from:
            bag.put(t, "/camera/color/camera_info", "sensor_msgs/msg/CameraInfo", bag.msg(
                "sensor_msgs/msg/CameraInfo", header=bag.header(t, camera), height=K.height,
                width=K.width, distortion_model="plumb_bob", d=np.zeros(5),
                k=np.array(k_row), r=np.eye(3).reshape(-1), p=np.zeros(12), binning_x=0,
                binning_y=0, roi=roi))
        depth, _ = render(dk, pos, scene)
        _, which = render(K, pos, scene)
        dark = len(OBJECTS) + 1
        depth[render(dk, pos, scene)[1] == dark] = 0.0  # the dark object: no return
        depth[:25, 150 * dk.width // K.width:] = 0.0  # the ghost's corner: no reading
        if f not in no_depth:
            raw = (np.round(depth * 1000).astype("<u2") if encoding == "16UC1"
                   else np.where(depth > 0, depth, np.nan).astype("<f4"))
            bag.put(t + 0.004, DEPTH, "sensor_msgs/msg/Image",
                    bag.image(t + 0.004, camera, raw, encoding))
        boxes = [box_of(pos, lo, hi) for _, lo, hi in OBJECTS]
        x0, y0, x1, y1 = box_of(pos, *DARK[1:])
        boxes += [(x0 - 8, y0 - 8, x1 + 8, y1 + 8), GHOST_BOX]  # the dark one, with a margin
        labels = [n for n, _, _ in OBJECTS] + ["dark", "ghost"]
        dets = [bag.detection(b, n, 0.9, str(j))
                for j, (b, n) in enumerate(zip(boxes, labels, strict=True))]
        bag.put(t + 0.03, "/detections", "vision_msgs/msg/Detection2DArray", bag.msg(
            "vision_msgs/msg/Detection2DArray", header=bag.header(t, camera), detections=dets))
        if masks and f not in no_mask:
            inst = np.where(which <= len(OBJECTS), which, 0).astype(np.uint8)
            bag.put(t + 0.03, MASKS, "sensor_msgs/msg/Image",
                    bag.image(t, camera, inst, "mono8"))
    return bag.write(path, storage)


def assert_within_3cm(store: Path) -> None:
    with ObjectMemory.open(store, read_only=True) as mem:
        objects = mem.objects()
    got = {o.label: o for o in objects}
    assert sorted(got) == sorted(n for n, _, _ in OBJECTS)  # no dark, no ghost, no wall
    for name, lo, hi in OBJECTS:
        centre = np.add(lo, hi) / 2
        assert np.linalg.norm(np.subtract(got[name].center, centre)) < 0.03, name
    assert all(o.center[0] < WALL_X - 0.5 for o in objects)  # nothing on the wall


def rows(store: Path, table: str) -> int:
    with sqlite3.connect(store) as db:
        return int(db.execute(f"SELECT count(*) FROM {table}").fetchone()[0])


DROPPED = {"not lifted: background depth only": N, "not lifted: no depth": N}


@pytest.mark.parametrize(("storage", "encoding"), [("sqlite3", "16UC1"), ("mcap", "32FC1")])
def test_a_2d_bag_lands_every_object_within_3cm(tmp_path, storage, encoding):
    bag = write_2d_bag(tmp_path / "run", storage=storage, encoding=encoding)
    summary = ingest(bag, tmp_path / "a.loci")
    assert summary.scans_read == summary.scans_ingested == N and summary.skipped == {}
    assert summary.inputs["detections_type"] == "vision_msgs/msg/Detection2DArray"
    assert summary.inputs["depth"] == DEPTH and summary.inputs["masks"] is None
    assert summary.inputs["camera_info"] == "/camera/color/camera_info"
    assert summary.detections == 3 * N and summary.detections_dropped == DROPPED
    assert summary.source == "ros:/detections"
    assert_within_3cm(tmp_path / "a.loci")
    # every frame's camera is the lifted one: its depth image, at the colour image's size
    assert rows(tmp_path / "a.loci", "commits") == N
    with ObjectMemory.open(tmp_path / "a.loci", read_only=True) as mem:
        commits = mem._live.store.commits("default")
    assert all(c.camera["depth_shape"] == [120, 160] for c in commits)


def test_depth_missing_for_a_stretch_skips_just_it_and_says_so(tmp_path):
    bag = write_2d_bag(tmp_path / "run", no_depth=(3, 4, 5, 8))
    store = tmp_path / "a.loci"
    summary = ingest(bag, store)
    reason = f"no depth image within 0.02 s on {DEPTH}"
    assert summary.skipped == {reason: 4} and summary.scans_ingested == N - 4
    at = [T0 + f * DT for f in range(N)]
    assert summary.skipped_stretches == {reason: [[at[3], at[5]], [at[8], at[8]]]}
    assert any(line.startswith(f"  skipped 4 scans: {reason} (") and " to " in line
               for line in summary.lines())
    # nothing written for a refused frame: one commit per ingested frame, its detections only
    assert rows(store, "commits") == N - 4
    assert rows(store, "observations") == 3 * (N - 4)
    assert_within_3cm(store)


def test_the_json_summary_of_a_2d_bag(tmp_path):
    bag = write_2d_bag(tmp_path / "run", storage="mcap", no_depth=(0, 1), info_from=1)
    proc = subprocess.run([sys.executable, "-m", "locimem", "ingest", str(bag),
                           str(tmp_path / "a.loci"), "--json"], capture_output=True, text=True,
                          check=False)
    assert proc.returncode == 0, proc.stderr
    out = json.loads(proc.stdout)
    assert out["scans"] == {"read": N, "ingested": N - 2, "resumed": 0, "skipped": 2}
    no_info = next(r for r in out["skipped"] if r.startswith("no CameraInfo yet"))
    no_depth = f"no depth image within 0.02 s on {DEPTH}"
    assert out["skipped"][no_info] == {"scans": 1, "first_t": T0, "stretches": [[T0, T0]]}
    assert out["skipped"][no_depth]["stretches"] == [[T0 + DT, T0 + DT]]
    assert set(out["hints"]) == {no_info, no_depth}
    assert out["detections"] == 3 * (N - 2)
    assert out["detections_dropped"] == {k: N - 2 for k in DROPPED}
    assert out["inputs"]["detections_type"] == "vision_msgs/msg/Detection2DArray"
    assert out["inputs"]["masks"] is None


def test_masks_and_a_frame_without_its_mask(tmp_path):
    bag = write_2d_bag(tmp_path / "run", masks=True, no_mask=(6,))
    summary = ingest(bag, tmp_path / "a.loci")
    assert summary.inputs["masks"] == MASKS and summary.scans_ingested == N
    # in the masked frames the dark object and the ghost have no mask pixels; frame 6 is
    # lifted from its boxes alone, as without masks
    assert summary.detections_dropped == {
        "not lifted: empty mask": 2 * (N - 1),
        "not lifted: background depth only": 1, "not lifted: no depth": 1}
    assert summary.warnings == {f"no instance mask within 0.02 s on {MASKS}: the frame was "
                                "lifted from its boxes alone": 1}
    assert_within_3cm(tmp_path / "a.loci")
    none = ingest(bag, tmp_path / "b.loci", bag_options=BagOptions(masks_topic=None))
    assert none.inputs["masks"] is None and none.warnings == {}


def test_a_depth_image_at_another_resolution(tmp_path):
    bag = write_2d_bag(tmp_path / "run", depth_size=(80, 60))
    summary = ingest(bag, tmp_path / "a.loci")
    assert summary.scans_ingested == N and summary.detections == 3 * N
    assert_within_3cm(tmp_path / "a.loci")
    with ObjectMemory.open(tmp_path / "a.loci", read_only=True) as mem:
        (commit, *_) = mem._live.store.commits("default")
    assert commit.camera["depth_shape"] == [60, 80]


def test_a_frame_without_a_transform_is_skipped_by_reason(tmp_path):
    bag = write_2d_bag(tmp_path / "run", tf_frames=7)  # /tf stops at frame 6's stamp
    summary = ingest(bag, tmp_path / "a.loci")
    ((reason, n),) = summary.skipped.items()
    assert reason.startswith("tf map <- base_link") and n == 3
    assert summary.skipped_stretches[reason] == [[T0 + 7 * DT, T0 + 9 * DT]]
    assert "the transform's samples do not cover the scan's stamp" in summary.hints[reason]
    assert rows(tmp_path / "a.loci", "commits") == N - 3


def test_a_2d_bag_needs_depth_and_says_what_to_pass(tmp_path):
    bag = write_2d_bag(tmp_path / "run")
    with pytest.raises(IngestError, match=r"^bag: /detections holds 2D detections, which need "
                       r"an aligned depth image to be lifted, but --depth none was given; its "
                       r"Image topics: \['/camera/aligned_depth_to_color/image_raw'\]: pass "
                       r"--depth TOPIC"):
        ingest(bag, tmp_path / "a.loci", bag_options=BagOptions(depth_topic=None))
    assert not (tmp_path / "a.loci").exists()
