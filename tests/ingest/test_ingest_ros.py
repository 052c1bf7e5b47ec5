"""ROS 2 recordings in: a bag written with the rosbags writer gives exactly the memory that
feeding the same scans through the Python API gives."""

from __future__ import annotations

import json
import math
import sqlite3
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

pytest.importorskip("rosbags")

from locimem import ObjectMemory
from locimem.errors import InvalidInput
from locimem.ingest import IngestError, NothingIngested, ingest
from locimem.ingest.ros import BagOptions, load_label_map, ros_typestore
from locimem.ingest.synth import synth_run, write_bag
from tests.ingest_helpers import api_store, assert_same, fingerprint

SOURCE = "ros:/detections"
# a cup seen throughout; a box seen for 10 scans and then gone (the camera keeps seeing the
# wall behind its place: doubted, then lost); a mug that appears late
OBJECTS = [("cup", (3.0, 0.2, 0.8), 0, 29), ("box", (3.4, -0.5, 0.6), 0, 9),
           ("mug", (2.8, 0.6, 0.75), 12, 29)]


@pytest.fixture(scope="module")
def run():
    return synth_run(30, objects=OBJECTS)


@pytest.fixture(scope="module")
def api(run, tmp_path_factory):
    path = tmp_path_factory.mktemp("api") / "api.loci"
    return fingerprint(api_store(path, run.scans, SOURCE))


def _events(fp):
    return [e[0] for e in fp["events"]]


@pytest.mark.parametrize(("storage", "encoding"), [("sqlite3", "16UC1"), ("mcap", "32FC1")])
@pytest.mark.parametrize("detection_frame", ["map", "camera_optical_frame", "base_link"])
def test_bag_gives_the_api_memory(run, api, tmp_path, storage, encoding, detection_frame):
    bag = write_bag(tmp_path / "run", run, storage=storage, detection_frame=detection_frame,
                    depth_encoding=encoding)
    summary = ingest(bag, tmp_path / "bag.loci")
    got = fingerprint(tmp_path / "bag.loci")
    assert_same(got, api)
    # the run exercised what it claims: camera evidence lost the box, keyframes were kept
    assert {"APPEARED", "PROMOTED", "LOST", "KEYFRAME"} <= set(_events(got))
    assert [o["label"] for o in got["objects"]] == ["cup", "box", "mug"]
    assert [o["status"] for o in got["objects"]] == ["confirmed", "lost", "confirmed"]
    assert all(c[4] is not None and c[4]["depth_shape"] == [48, 64] for c in got["commits"])
    assert summary.scans_read == summary.scans_ingested == 30
    assert summary.skipped == {} and summary.scans_resumed == 0
    assert summary.detections == sum(len(s.detections) for s in run.scans)
    assert summary.objects_created == 3 and summary.objects_in_memory == 3
    assert summary.events == {k: _events(got).count(k) for k in set(_events(got))}
    assert summary.inputs["camera_frame"] == "camera_optical_frame"
    assert summary.inputs["optical"] is True
    assert summary.inputs["depth"] == "/camera/depth/image_rect_raw"


@pytest.mark.parametrize(("storage", "suffix"), [("mcap", ".mcap"), ("sqlite3", ".db3")])
def test_a_bag_file_path_reads_like_its_directory(run, api, tmp_path, storage, suffix):
    bag = write_bag(tmp_path / "run", run, storage=storage)
    ingest(bag / f"run{suffix}", tmp_path / "bag.loci")
    assert_same(fingerprint(tmp_path / "bag.loci"), api)


def test_a_bag_without_type_definitions_uses_the_shipped_vision_msgs(run, api, tmp_path):
    """Recorders before ROS 2 Iron stored no message definitions: the types come from
    ROS 2 Humble's standard set plus the vision_msgs .msg files shipped in locimem."""
    from rosbags.rosbag2 import Reader
    from rosbags.typesys import Stores, get_typestore

    bag = write_bag(tmp_path / "run", run)
    con = sqlite3.connect(next(bag.glob("*.db3")))
    con.execute("DELETE FROM message_definitions")
    con.commit()
    con.close()
    with Reader(bag) as r:
        assert {c.msgdef.format.name for c in r.connections} == {"NONE"}
    assert "vision_msgs/msg/Detection3DArray" not in get_typestore(Stores.ROS2_HUMBLE).types
    ingest(bag, tmp_path / "bag.loci")
    assert_same(fingerprint(tmp_path / "bag.loci"), api)


def test_a_file_that_is_not_a_bag_is_a_typed_error(tmp_path):
    (tmp_path / "junk.mcap").write_bytes(b"not an mcap file at all")
    with pytest.raises(InvalidInput, match=r"cannot read .*junk\.mcap as a ROS 2 recording"):
        ingest(tmp_path / "junk.mcap", tmp_path / "bag.loci")
    assert not (tmp_path / "bag.loci").exists()
    (tmp_path / "old.bag").write_bytes(b"#ROSBAG V2.0")
    with pytest.raises(InvalidInput, match=r"cannot tell what .*old\.bag is"):
        ingest(tmp_path / "old.bag", tmp_path / "bag.loci")


@pytest.mark.parametrize(("camera_frame", "optical"), [
    ("camera_link", None),  # REP 103 body frame: used as is
    ("cam_zfwd", True),  # an optical frame without the usual name: said explicitly
])
def test_camera_conventions(run, api, tmp_path, camera_frame, optical):
    bag = write_bag(tmp_path / "run", run, camera_frame=camera_frame,
                    detection_frame="camera_optical_frame")
    ingest(bag, tmp_path / "bag.loci", bag_options=BagOptions(optical=optical))
    assert_same(fingerprint(tmp_path / "bag.loci"), api)


def test_an_optical_frame_read_as_body_frame_is_not_the_same_memory(run, api, tmp_path):
    bag = write_bag(tmp_path / "run", run)
    ingest(bag, tmp_path / "bag.loci", bag_options=BagOptions(optical=False))
    got = fingerprint(tmp_path / "bag.loci")
    with pytest.raises(AssertionError):  # the camera looks the wrong way: other evidence
        assert_same(got["commits"], api["commits"])


def test_a_missing_transform_skips_the_scans_and_says_so(run, tmp_path):
    last_tf = run.scans[24].t + 0.1  # /tf ends soon after scan 24: scans 25..29 have no pose
    bag = write_bag(tmp_path / "run", run, tf_until_s=last_tf,
                    detection_frame="camera_optical_frame")
    summary = ingest(bag, tmp_path / "bag.loci")
    assert summary.scans_ingested == 25 and summary.scans_read == 30
    reason = "tf odom <- base_link: no data around the stamp (would extrapolate)"
    assert summary.skipped == {reason: 5}
    assert summary.first_skipped_t == {reason: run.scans[25].t}
    expected = fingerprint(api_store(tmp_path / "api.loci", run.scans[:25], SOURCE))
    assert_same(fingerprint(tmp_path / "bag.loci"), expected)
    assert f"skipped 5 scans: {reason}" in "\n".join(summary.lines())


def test_a_map_frame_the_bag_lacks_ingests_nothing_and_names_the_fix(run, tmp_path):
    bag = write_bag(tmp_path / "run", run, depth_encoding=None)
    with pytest.raises(NothingIngested) as caught:
        ingest(bag, tmp_path / "bag.loci", bag_options=BagOptions(map_frame="world"))
    summary = caught.value.summary
    assert summary.scans_ingested == 0 and summary.scans_read == 30
    assert summary.skipped == {"tf world <- map: frames not connected": 30}
    assert str(caught.value).splitlines() == [
        f"none of the 30 scans of {bag} could be ingested:",
        "  30 skipped: tf world <- map: frames not connected",
        "    the bag's tf has no frame 'world' (its frames: base_link, camera_link, "
        "camera_optical_frame, map, odom): pass --map-frame map"]
    # the store this run would have created is not left behind, empty
    assert sorted(p.name for p in tmp_path.iterdir()) == ["run"]


def test_resume_ingests_every_scan_exactly_once(run, api, tmp_path):
    first = write_bag(tmp_path / "first", synth_run(30, objects=OBJECTS).__class__(
        run.t0_s, run.scans[:13], run.wall_m))
    full = write_bag(tmp_path / "full", run)
    store = tmp_path / "bag.loci"
    a = ingest(first, store)
    assert (a.scans_ingested, a.scans_resumed) == (13, 0)
    b = ingest(full, store)
    assert (b.scans_read, b.scans_ingested, b.scans_resumed) == (30, 17, 13)
    assert b.resume_from_t == run.scans[12].t
    assert_same(fingerprint(store), api)
    c = ingest(full, store)  # nothing left to do
    assert (c.scans_ingested, c.scans_resumed, c.events) == (0, 30, {})
    assert_same(fingerprint(store), api)


def test_numeric_class_ids_through_a_label_map(run, api, tmp_path):
    ids = {"cup": "41", "box": "7", "mug": "3"}
    bag = write_bag(tmp_path / "run", run, class_ids=ids)
    (tmp_path / "labels.json").write_text(json.dumps({v: k for k, v in ids.items()}))
    label_map = load_label_map(tmp_path / "labels.json")
    ingest(bag, tmp_path / "bag.loci", bag_options=BagOptions(label_map=label_map))
    assert_same(fingerprint(tmp_path / "bag.loci"), api)
    # a text label map: line n names class n
    (tmp_path / "labels.txt").write_text("\n".join(f"c{i}" for i in range(42)) + "\n")
    assert load_label_map(tmp_path / "labels.txt")["41"] == "c41"
    # an id the map does not know: a typed error naming the stamp, nothing written
    with pytest.raises(IngestError, match=r"/detections stamp 1700000000\.250000000 s: "
                       r"detections\[0\]: class id '41' is not in the label map"):
        ingest(bag, tmp_path / "other.loci",
               bag_options=BagOptions(label_map={"7": "box", "3": "mug"}))
    with ObjectMemory.open(tmp_path / "other.loci", read_only=True) as mem:
        assert mem.now is None and mem.objects() == []


def _bag_with_depth(tmp_path: Path, run, encoding: str, data: np.ndarray) -> Path:
    """The run's bag, with one depth image replaced (encoding and payload)."""
    from rosbags.rosbag2 import Reader, Writer

    src = write_bag(tmp_path / "src", run, depth_encoding="32FC1")
    store = ros_typestore()
    out = tmp_path / "bad"
    with Reader(src) as r, Writer(out, version=9) as w:
        conns = {c.id: w.add_connection(c.topic, c.msgtype, typestore=store)
                 for c in r.connections}
        n = 0
        for c, ns, raw in r.messages():
            if c.topic.endswith("image_rect_raw"):
                n += 1
                if n == 4:
                    msg = store.deserialize_cdr(raw, c.msgtype)
                    msg.encoding = encoding
                    msg.data = data
                    raw = store.serialize_cdr(msg, c.msgtype)
            w.write(conns[c.id], ns, raw)
    return out


def test_an_unknown_depth_encoding_is_a_typed_error_naming_the_stamp(run, tmp_path):
    bag = _bag_with_depth(tmp_path, run, "rgb8", np.zeros(48 * 64 * 4, np.uint8))
    with pytest.raises(IngestError, match=r"/detections stamp 1700000006\.250000000 s \(depth "
                       r"image stamp 1700000006\.254000000 s\): unknown depth encoding 'rgb8'"):
        ingest(bag, tmp_path / "bag.loci")
    # the three scans before it are in; nothing of the fourth
    with ObjectMemory.open(tmp_path / "bag.loci", read_only=True) as mem:
        assert mem.now == run.scans[2].t
        assert len(mem._live.store.commits("default")) == 3


def test_a_truncated_depth_image_is_a_typed_error(run, tmp_path):
    bag = _bag_with_depth(tmp_path, run, "16UC1", np.zeros(100, np.uint8))
    with pytest.raises(IngestError, match=r"1700000006\.254000000 s\): depth image of 64x48 "
                       r"16UC1 with step 256 needs 12288 bytes, got 100"):
        ingest(bag, tmp_path / "bag.loci")


def test_topics_are_checked_by_name_and_type(run, tmp_path):
    bag = write_bag(tmp_path / "run", run)
    with pytest.raises(IngestError, match=r"no vision_msgs/msg/Detection3DArray or "
                       r"Detection2DArray topic '/objects' \(--detections\); "
                       r"Detection3DArray topics in the bag: \['/detections'\]; "
                       r"Detection2DArray topics: \[\]"):
        ingest(bag, tmp_path / "a.loci", bag_options=BagOptions(detections_topic="/objects"))
    with pytest.raises(IngestError, match=r"topic '/tf' is tf2_msgs/msg/TFMessage, not "
                       r"sensor_msgs/msg/Image"):
        ingest(bag, tmp_path / "a.loci", bag_options=BagOptions(depth_topic="/tf"))
    assert not (tmp_path / "a.loci").exists()


def test_without_camera_topics_the_scans_have_no_camera(run, tmp_path):
    bag = write_bag(tmp_path / "run", run)
    ingest(bag, tmp_path / "bag.loci",
           bag_options=BagOptions(camera_info_topic=None, depth_topic=None))
    no_camera = [type(s)(s.t, s.detections, None) for s in run.scans]
    expected = fingerprint(api_store(tmp_path / "api.loci", no_camera, SOURCE))
    assert_same(fingerprint(tmp_path / "bag.loci"), expected)


def test_cli_ingest_json_summary_and_resume(run, api, tmp_path):
    bag = write_bag(tmp_path / "run", run, storage="mcap")
    store = tmp_path / "cli.loci"
    cmd = [sys.executable, "-m", "locimem", "ingest", str(bag), str(store), "--json"]
    proc = subprocess.run(cmd, capture_output=True, text=True, check=False)
    assert proc.returncode == 0, proc.stderr
    out = json.loads(proc.stdout)
    assert out["scans"] == {"read": 30, "ingested": 30, "resumed": 0, "skipped": 0}
    assert out["objects"] == {"created": 3, "in_memory": 3}
    assert out["source"] == SOURCE and out["inputs"]["map_frame"] == "map"
    assert_same(fingerprint(store), api)
    proc = subprocess.run(cmd[:-1], capture_output=True, text=True, check=False)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.splitlines()[0].startswith(f"ingested 0 of 30 scans from {bag}")
    assert "30 scans already in the store" in proc.stdout
    proc = subprocess.run([*cmd[:-1], "--map-frame", "world"], capture_output=True, text=True,
                          check=False)
    assert proc.returncode == 0
    bad = subprocess.run([sys.executable, "-m", "locimem", "ingest", str(bag), str(store),
                          "--detections", "/nope"], capture_output=True, text=True, check=False)
    assert bad.returncode == 2
    assert bad.stderr.startswith("error: bag: no vision_msgs/msg/Detection3DArray or "
                                 "Detection2DArray topic '/nope'")
    assert len(bad.stderr.splitlines()) == 1


def test_the_bag_benchmark_runs_on_a_small_run(tmp_path):
    from locimem.bench.bag import bench_bag

    f = bench_bag(scans=12, per_scan=3, storage="sqlite3", camera=True, workdir=tmp_path)
    assert (f.scans, f.per_scan, f.camera) == (12, 3, True)
    assert f.bag_mb > 0 and f.api_scans_per_s > 0 and f.bag_scans_per_s > 0


V3 = {  # vision_msgs 3.x (ROS 2 Foxy), as a Foxy recorder would embed them
    "Detection3DArray": "std_msgs/Header header\nDetection3D[] detections\n",
    "Detection3D": "std_msgs/Header header\nObjectHypothesisWithPose[] results\n"
                   "BoundingBox3D bbox\nsensor_msgs/PointCloud2 source_cloud\n"
                   "bool is_tracking\nstring tracking_id\n",
    "ObjectHypothesisWithPose": "string id\nfloat64 score\ngeometry_msgs/PoseWithCovariance pose\n",
    "BoundingBox3D": "geometry_msgs/Pose center\ngeometry_msgs/Vector3 size\n",
}


def test_a_bag_with_vision_msgs_3_definitions(run, tmp_path):
    from rosbags.rosbag2 import Writer
    from rosbags.typesys import Stores, get_types_from_msg, get_typestore

    store = get_typestore(Stores.ROS2_HUMBLE)
    for name, text in V3.items():
        store.register(get_types_from_msg(text, f"vision_msgs/msg/{name}"))
    T = store.types

    def header(t: float, frame: str):
        sec, nsec = int(t), round((t - int(t)) * 1e9)
        return T["std_msgs/msg/Header"](T["builtin_interfaces/msg/Time"](sec, nsec), frame)

    cloud = T["sensor_msgs/msg/PointCloud2"](header(0.0, ""), 0, 0, [], False, 0, 0,
                                             np.zeros(0, np.uint8), True)
    with Writer(tmp_path / "foxy", version=9) as w:
        c = w.add_connection("/detections", "vision_msgs/msg/Detection3DArray", typestore=store)
        for s in run.scans:
            dets = [T["vision_msgs/msg/Detection3D"](
                header(s.t, ""),
                [T["vision_msgs/msg/ObjectHypothesisWithPose"](
                    d.label, d.confidence, T["geometry_msgs/msg/PoseWithCovariance"](
                        T["geometry_msgs/msg/Pose"](T["geometry_msgs/msg/Point"](0, 0, 0),
                                                    T["geometry_msgs/msg/Quaternion"](0, 0, 0, 1)),
                        np.zeros(36)))],
                T["vision_msgs/msg/BoundingBox3D"](
                    T["geometry_msgs/msg/Pose"](T["geometry_msgs/msg/Point"](*d.center),
                                                T["geometry_msgs/msg/Quaternion"](0, 0, 0, 1)),
                    T["geometry_msgs/msg/Vector3"](*d.size)),
                cloud, True, d.track_id) for d in s.detections]
            msg = T["vision_msgs/msg/Detection3DArray"](header(s.t, "map"), dets)
            w.write(c, round(s.t * 1e9), store.serialize_cdr(msg, msg.__msgtype__))
    ingest(tmp_path / "foxy", tmp_path / "bag.loci")
    no_camera = [type(s)(s.t, s.detections, None) for s in run.scans]
    expected = fingerprint(api_store(tmp_path / "api.loci", no_camera, SOURCE))
    assert_same(fingerprint(tmp_path / "bag.loci"), expected, tol=0.0)


def test_an_empty_camera_info_topic(tmp_path):
    run = synth_run(8, objects=OBJECTS, camera=False)  # the topic is recorded, never published
    bag = write_bag(tmp_path / "run", run, depth_encoding=None)
    summary = ingest(bag, tmp_path / "auto.loci")  # auto: no camera
    assert summary.inputs["camera_info"] is None and summary.scans_ingested == 8
    assert_same(fingerprint(tmp_path / "auto.loci"),
                fingerprint(api_store(tmp_path / "api.loci", run.scans, SOURCE)))
    with pytest.raises(IngestError, match=r"^bag: camera info topic '/camera/camera_info' holds "
                       r"no messages; pass --camera-info none"):
        ingest(bag, tmp_path / "named.loci",
               bag_options=BagOptions(camera_info_topic="/camera/camera_info"))


def test_an_off_centre_principal_point_crops_the_view_to_a_centred_window(run, tmp_path):
    bag = write_bag(tmp_path / "run", run, principal_shift_px=(6, -4))  # cx 37.5, cy 19.5
    ingest(bag, tmp_path / "bag.loci")
    with ObjectMemory.open(tmp_path / "bag.loci", read_only=True) as mem:
        cams = [c.camera for c in mem._live.store.commits("default")]
    # columns 12..63 (centre 38 = cx + 0.5), rows 0..39 (centre 20 = cy + 0.5)
    assert {tuple(c["depth_shape"]) for c in cams} == {(40, 52)}
    assert cams[0]["fov_deg"] == pytest.approx(math.degrees(2 * math.atan(26 / 40)))
    assert cams[0]["vfov_deg"] == pytest.approx(math.degrees(2 * math.atan(20 / 40)))
    # the crop keeps the right pixels: the source's no-reading pixel (47, 63) lands at (39, 51)
    from locimem.ingest.ros import open_bag

    bag = write_bag(tmp_path / "run2", run, principal_shift_px=(6, 4))  # rows 8..47, cols 12..63
    with open_bag(bag) as (plan, n, _):
        depth = next(plan).build().camera.depth
    assert depth.shape == (40, 52) and n == 30
    assert np.argwhere(np.isnan(depth)).tolist() == [[39, 51]]
