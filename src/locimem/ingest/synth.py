"""A synthetic robot run, as ground-truth scans and as the ROS 2 recording a robot would make.

Used by the tests and by ``locimem bench bag``: the same scans fed through the Python API and
read back from a bag must give the same memory. The robot drives slowly (constant velocity
along its heading, constant yaw rate), so tf samples interpolated at a scan's stamp give the
exact pose (to rounding); the camera looks forward from a mast; the depth image is a wall
``wall_m`` ahead (forward distance), with a few pixels of no reading.

Frames: ``map`` -> ``odom`` (static) -> ``base_link`` (``/tf``, every ``tf_dt_s``) ->
``camera_link`` (static; locimem's body convention, x forward) -> ``camera_optical_frame``
(static; z forward, x right, y down).
"""

from __future__ import annotations

import math
import random
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from locimem.ingest.feed import Scan
from locimem.ingest.frames import OPTICAL_TO_BODY, Transform
from locimem.model import Camera, Detection

__all__ = ["SynthRun", "stamp_of", "synth_run", "write_bag"]

MAP_ODOM = Transform((0.5, -0.25, 0.0), (math.cos(0.05), 0.0, 0.0, math.sin(0.05)))
BASE_CAMERA = Transform((0.2, 0.0, 1.1), (math.cos(0.1), 0.0, math.sin(0.1), 0.0))  # 0.2 rad down
WIDTH, HEIGHT, FOCAL = 64, 48, 40.0  # pixels


def stamp_of(t_s: float) -> tuple[int, int]:
    """(sec, nanosec) of a time in seconds."""
    sec = math.floor(t_s)
    nanosec = round((t_s - sec) * 1e9)
    if nanosec >= 1_000_000_000:
        sec, nanosec = sec + 1, nanosec - 1_000_000_000
    return int(sec), int(nanosec)


def _t(stamp: tuple[int, int]) -> float:
    return stamp[0] + stamp[1] * 1e-9  # exactly as the reader computes it


def base_pose(t_s: float, t0_s: float) -> Transform:
    """``T_odom_base_link`` at ``t_s``: 2 cm/s along x, yaw 0.2 °/s (interpolation-exact)."""
    dt = t_s - t0_s
    yaw = math.radians(0.2) * dt
    return Transform((0.02 * dt, 0.0, 0.0), (math.cos(yaw / 2), 0.0, 0.0, math.sin(yaw / 2)))


def camera_body_pose(t_s: float, t0_s: float) -> Transform:
    """``T_map_camera`` (body frame: x forward, y left, z up) at ``t_s``."""
    return MAP_ODOM.compose(base_pose(t_s, t0_s)).compose(BASE_CAMERA)


@dataclass(frozen=True)
class SynthRun:
    """Ground truth: ``scans`` in the map frame (with body-frame cameras), the run's start."""

    t0_s: float
    scans: list[Scan]
    wall_m: float


def _depth(wall_m: float) -> np.ndarray:
    depth = np.full((HEIGHT, WIDTH), wall_m, dtype=np.float32)
    depth[0, :3] = np.nan  # no reading
    depth[HEIGHT - 1, WIDTH - 1] = np.nan
    return depth


def synth_run(n_scans: int, *, dt_s: float = 2.0, t0_s: float = 1_700_000_000.25,
              objects: Sequence[tuple[Any, ...]] | None = None,
              per_scan: int | None = None, camera: bool = True, wall_m: float = 6.0,
              seed: int = 7) -> SynthRun:
    """``n_scans`` scans ``dt_s`` apart. ``objects``: (label, map centre, first scan, last
    scan[, size]) — seen (with a little deterministic jitter) in scans first..last; size
    default 0.1 x 0.1 x 0.12 m. With
    ``per_scan`` instead, a lattice of that many objects in front of the robot, all seen in
    every scan (the benchmark's load)."""
    rng = random.Random(seed)
    if objects is None:
        k = per_scan or 3
        objects = [(f"thing{i % 20}", (3.0 + 0.5 * (i // 6), -1.0 + 0.4 * (i % 6), 0.8),
                    0, n_scans - 1) for i in range(k)]
    scans = []
    for k in range(n_scans):
        t = _t(stamp_of(t0_s + k * dt_s))
        dets = []
        for i, (label, (x, y, z), first, last, *rest) in enumerate(objects):
            if first <= k <= last:
                j = (rng.uniform(-0.01, 0.01), rng.uniform(-0.01, 0.01),
                     rng.uniform(-0.005, 0.005))
                dets.append(Detection(label, round(rng.uniform(0.6, 0.95), 3),
                                      (x + j[0], y + j[1], z + j[2]),
                                      tuple(rest[0]) if rest else (0.1, 0.1, 0.12),
                                      track_id=f"trk{i}", orientation=(1.0, 0.0, 0.0, 0.0)))
        cam = None
        if camera:
            pose = camera_body_pose(t, t0_s)
            fov = math.degrees(2 * math.atan(WIDTH / 2 / FOCAL))
            vfov = math.degrees(2 * math.atan(HEIGHT / 2 / FOCAL))
            cam = Camera(pose.translation_m, pose.quat_wxyz, fov, 8.0, vfov_deg=vfov,
                         depth=_depth(wall_m))
        scans.append(Scan(t, dets, cam))
    return SynthRun(t0_s, scans, wall_m)


def _msg(store: Any, name: str, **kw: Any) -> Any:
    return store.types[name](**kw)


def _header(store: Any, t_s: float, frame: str, offset_ns: int = 0) -> Any:
    sec, nanosec = stamp_of(t_s)
    sec, nanosec = divmod(sec * 1_000_000_000 + nanosec + offset_ns, 1_000_000_000)
    return _msg(store, "std_msgs/msg/Header",
                stamp=_msg(store, "builtin_interfaces/msg/Time", sec=sec, nanosec=nanosec),
                frame_id=frame)


def _pose(store: Any, p: Sequence[float], q: Sequence[float]) -> Any:
    return _msg(store, "geometry_msgs/msg/Pose",
                position=_msg(store, "geometry_msgs/msg/Point", x=p[0], y=p[1], z=p[2]),
                orientation=_msg(store, "geometry_msgs/msg/Quaternion",
                                 x=q[1], y=q[2], z=q[3], w=q[0]))


def _tf(store: Any, t_s: float, parent: str, child: str, tr: Transform) -> Any:
    p, q = tr.translation_m, tr.quat_wxyz
    return _msg(store, "geometry_msgs/msg/TransformStamped", header=_header(store, t_s, parent),
                child_frame_id=child, transform=_msg(
                    store, "geometry_msgs/msg/Transform",
                    translation=_msg(store, "geometry_msgs/msg/Vector3", x=p[0], y=p[1], z=p[2]),
                    rotation=_msg(store, "geometry_msgs/msg/Quaternion",
                                  x=q[1], y=q[2], z=q[3], w=q[0])))


def write_bag(path: str | Path, run: SynthRun, *, storage: str = "sqlite3",
              detection_frame: str = "map", camera_frame: str = "camera_optical_frame",
              depth_encoding: str | None = "16UC1", tf_dt_s: float = 0.5,
              tf_until_s: float | None = None, class_ids: dict[str, str] | None = None,
              extra_hypothesis: bool = True, principal_shift_px: tuple[int, int] = (0, 0),
              tf_static: bool = True,
              map_odom: Transform | Callable[[float], Transform] = MAP_ODOM) -> Path:
    """Write ``run`` as a rosbag2 recording at ``path`` (a new directory).

    ``detection_frame``: ``map``, ``base_link`` or ``camera_optical_frame`` (detections are
    expressed in it). ``camera_frame``: the camera info's frame (``camera_optical_frame``,
    ``camera_link``, or any other name for the optical frame, published with the same pose).
    ``depth_encoding``: ``16UC1``, ``32FC1`` or None (no depth topic). ``tf_until_s``: stop
    ``/tf`` there (scans after it have no transform). ``class_ids``: publish these ids instead
    of labels. ``extra_hypothesis``: add a weaker second hypothesis to each detection.
    ``principal_shift_px``: move the camera info's principal point by (columns, rows).
    ``tf_static``: write ``/tf_static`` (map to odom, base_link to the camera; False: a
    recording started after the static transforms were published). ``map_odom``: the
    ``map -> odom`` the robot publishes (a transform: static; a function of time: on ``/tf``
    with every sample — SLAM's belief, which may be off and jump). Detections in
    ``base_link`` or the camera frame are what the robot really sees (the true
    :data:`MAP_ODOM`), so a ``map_odom`` other than it places them off by the difference.
    """
    from rosbags.rosbag2 import StoragePlugin, Writer

    from locimem.ingest.ros import ros_typestore

    store = ros_typestore()
    plugin = {"sqlite3": StoragePlugin.SQLITE3, "mcap": StoragePlugin.MCAP}[storage]
    path = Path(path)
    t0 = run.t0_s
    times = [s.t for s in run.scans]
    optical_names = {"camera_optical_frame"} | (
        set() if camera_frame in ("camera_link", "camera_optical_frame") else {camera_frame})
    with Writer(path, version=9, storage_plugin=plugin) as w:
        def conn(topic: str, msgtype: str) -> Any:
            return w.add_connection(topic, msgtype, typestore=store)

        c_det = conn("/detections", "vision_msgs/msg/Detection3DArray")
        c_tf = conn("/tf", "tf2_msgs/msg/TFMessage")
        c_static = conn("/tf_static", "tf2_msgs/msg/TFMessage")
        c_info = conn("/camera/camera_info", "sensor_msgs/msg/CameraInfo")
        c_depth = conn("/camera/depth/image_rect_raw", "sensor_msgs/msg/Image") \
            if depth_encoding else None
        log: list[tuple[int, int, Any, Any, str]] = []  # (ns, order, conn, msg, type)

        def put(t_s: float, c: Any, msg: Any) -> None:
            ns = stamp_of(t_s)
            log.append((ns[0] * 1_000_000_000 + ns[1], len(log), c, msg, c.msgtype))

        statics = [_tf(store, t0, "base_link", "camera_link", BASE_CAMERA)]
        if isinstance(map_odom, Transform):
            statics.insert(0, _tf(store, t0, "map", "odom", map_odom))
        statics += [_tf(store, t0, "camera_link", name, OPTICAL_TO_BODY.inverse())
                    for name in sorted(optical_names)]
        if tf_static:
            put(t0 - 1.0, c_static, _msg(store, "tf2_msgs/msg/TFMessage", transforms=statics))
        t_end = times[-1] + tf_dt_s if tf_until_s is None else tf_until_s
        k = 0
        while t0 - tf_dt_s + k * tf_dt_s <= t_end + 1e-9:
            ts = t0 - tf_dt_s + k * tf_dt_s
            moving = [] if isinstance(map_odom, Transform) else [
                _tf(store, ts, "map", "odom", map_odom(ts))]
            put(ts, c_tf, _msg(store, "tf2_msgs/msg/TFMessage", transforms=[
                *moving, _tf(store, ts, "odom", "base_link", base_pose(ts, t0))]))
            k += 1
        dc, dr = principal_shift_px
        k_mat = np.array([FOCAL, 0, WIDTH / 2 - 0.5 + dc, 0, FOCAL, HEIGHT / 2 - 0.5 + dr,
                          0, 0, 1.0])
        roi = _msg(store, "sensor_msgs/msg/RegionOfInterest", x_offset=0, y_offset=0, height=0,
                   width=0, do_rectify=False)
        for i, scan in enumerate(run.scans):
            t = scan.t
            if i % 5 == 0 and scan.camera is not None:  # camera info, now and then
                put(t - 0.01, c_info, _msg(
                    store, "sensor_msgs/msg/CameraInfo", header=_header(store, t, camera_frame),
                    height=HEIGHT, width=WIDTH, distortion_model="plumb_bob", d=np.zeros(5),
                    k=k_mat, r=np.eye(3).reshape(-1), p=np.zeros(12), binning_x=0, binning_y=0,
                    roi=roi))
            depth = None if scan.camera is None else scan.camera.depth
            if c_depth is not None and depth is not None:
                if depth_encoding == "16UC1":
                    raw = np.where(np.isfinite(depth), np.round(depth * 1000), 0).astype("<u2")
                else:
                    raw = depth.astype("<f4")
                put(t + 0.004, c_depth, _msg(
                    store, "sensor_msgs/msg/Image", header=_header(store, t, camera_frame,
                                                                   offset_ns=4_000_000),
                    height=HEIGHT, width=WIDTH, encoding=depth_encoding, is_bigendian=0,
                    step=WIDTH * raw.itemsize, data=np.frombuffer(raw.tobytes(), np.uint8)))
            to_frame = _frame_from_map(detection_frame, t, t0)
            dets = []
            for d in scan.detections:
                label = d.label if class_ids is None else class_ids[d.label]
                hyps = [(label, d.confidence)]
                if extra_hypothesis:
                    hyps.append(("decoy", d.confidence / 2))
                dets.append(_msg(
                    store, "vision_msgs/msg/Detection3D", header=_header(store, t, ""),
                    results=[_msg(store, "vision_msgs/msg/ObjectHypothesisWithPose",
                                  hypothesis=_msg(store, "vision_msgs/msg/ObjectHypothesis",
                                                  class_id=c, score=s),
                                  pose=_msg(store, "geometry_msgs/msg/PoseWithCovariance",
                                            pose=_pose(store, (0, 0, 0), (1, 0, 0, 0)),
                                            covariance=np.zeros(36)))
                             for c, s in hyps],
                    bbox=_msg(store, "vision_msgs/msg/BoundingBox3D",
                              center=_pose(store, to_frame.apply(d.center),
                                           to_frame.rotate(d.orientation or (1, 0, 0, 0))),
                              size=_msg(store, "geometry_msgs/msg/Vector3",
                                        x=d.size[0], y=d.size[1], z=d.size[2])),
                    id=d.track_id or ""))
            put(t + 0.03, c_det, _msg(store, "vision_msgs/msg/Detection3DArray",
                                      header=_header(store, t, detection_frame),
                                      detections=dets))
        for ns, _, c, msg, msgtype in sorted(log, key=lambda e: (e[0], e[1])):
            w.write(c, ns, store.serialize_cdr(msg, msgtype))
    return path


def _frame_from_map(frame: str, t_s: float, t0_s: float) -> Transform:
    """``T_frame_map`` for the frames the synthetic robot has."""
    if frame == "map":
        return Transform.identity()
    if frame == "base_link":
        return MAP_ODOM.compose(base_pose(t_s, t0_s)).inverse()
    if frame == "camera_optical_frame":
        return camera_body_pose(t_s, t0_s).compose(OPTICAL_TO_BODY.inverse()).inverse()
    raise ValueError(f"unknown frame {frame!r}")
