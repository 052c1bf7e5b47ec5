"""``locimem ingest``: a recording (a ROS 2 bag, or a JSON-lines scan file) fed into a store."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any

from locimem.cli.common import (
    add_json,
    add_quiet,
    document,
    resolve_scope,
    scopes_if_any,
)
from locimem.errors import InvalidInput

Sub = Any


# -- ingest ----------------------------------------------------------------------------------
def parser_ingest(sub: Sub) -> None:
    p = sub.add_parser("ingest", help="feed a recording into a store: a ROS 2 bag (rosbag2 "
                       "directory, .db3 or .mcap; the ros extra) or a JSON-lines scan file; "
                       "re-running resumes where the store left off",
                       description="Each scan is committed atomically; a re-run skips the "
                       "scans the store already holds (exactly once). Bags: "
                       "vision_msgs/Detection3DArray detections, /tf and /tf_static into the "
                       "map frame, the camera from CameraInfo (+ optional depth image); or "
                       "vision_msgs/Detection2DArray detections from a 2D detector, lifted to "
                       "3D with an aligned depth image, the colour camera's CameraInfo and tf "
                       "(+ optional instance masks). A scan whose transform, depth image or "
                       "camera info is missing is skipped and reported with its stretches of "
                       "stamps, never guessed.")
    p.add_argument("source", metavar="SOURCE", help="a rosbag2 directory, a .db3 or .mcap "
                   "file, or a .jsonl file (one scan per line; see docs/guide.md)")
    p.add_argument("store", metavar="STORE", help="the store to ingest into (created if new)")
    p.add_argument("--scope", help="whose memory (default: the store's only scope, or "
                   "'default'; a new name starts a new scope)")
    p.add_argument("--source", dest="source_name", metavar="NAME",
                   help="the scans' source, for the audit and resuming (default: "
                   "ros:<detections topic>, or jsonl)")
    p.add_argument("--detections", default="auto", metavar="TOPIC|auto",
                   help="bag: the vision_msgs/msg/Detection3DArray or Detection2DArray topic "
                   "(default auto: the bag's only one); 2D detections are lifted with "
                   "--depth, --camera-info and tf")
    p.add_argument("--map-frame", default="map", metavar="FRAME",
                   help="bag: the tf frame the memory lives in (default map)")
    p.add_argument("--camera-info", default="auto", metavar="TOPIC|auto|none",
                   help="bag: the sensor_msgs/msg/CameraInfo topic (default auto: the only "
                   "one; none: scans without a camera)")
    p.add_argument("--depth", default="auto", metavar="TOPIC|auto|none",
                   help="bag: the depth sensor_msgs/msg/Image topic, 16UC1 mm or 32FC1 m (0 "
                   "or NaN: no reading), registered to the camera (default auto: the only "
                   "Image topic named *depth*; none: no depth, not for 2D detections). For "
                   "2D detections it is aligned to the colour image, at its resolution or "
                   "another (the same view resampled)")
    p.add_argument("--masks", default="auto", metavar="TOPIC|auto|none",
                   help="bag, 2D detections: an instance mask sensor_msgs/msg/Image per "
                   "detection array (mono8 or 16UC1 at the colour image's size; pixel value "
                   "k marks detections[k-1]), paired by stamp (default auto: the only Image "
                   "topic named *mask*; none: boxes only). A frame without its mask is "
                   "lifted from its boxes and counted in the summary")
    p.add_argument("--camera-frame", metavar="FRAME",
                   help="bag: the camera's tf frame (default: the camera info's frame_id)")
    p.add_argument("--optical", choices=["auto", "yes", "no"], default="auto",
                   help="bag: the camera frame is an optical frame, z forward, x right, y down "
                   "(default auto: yes when its name ends in _optical_frame)")
    p.add_argument("--range", type=float, default=8.0, metavar="M",
                   help="bag: how far the detector is trusted to see, metres (default 8)")
    p.add_argument("--depth-tolerance", type=float, default=0.02, metavar="S",
                   help="bag: largest stamp difference between a scan and its depth image "
                   "(and mask), seconds (default 0.02); a scan without a depth image is "
                   "skipped and counted")
    p.add_argument("--label-map", metavar="FILE",
                   help="bag: class ids to labels: a .json object, or one label per line "
                   "(line n = class id n, from 0)")
    p.add_argument("--map-epoch", metavar="NAME",
                   help="the SLAM session the recording's map frame belongs to: a robot that "
                   "starts a new map at each boot names each boot; a new name is aligned to "
                   "the memory by its furniture (docs/guide.md, 'Map frames that move'). "
                   "Default: one fixed map frame (a saved map)")
    p.add_argument("--new-map", action="store_true",
                   help="bag: the recording's map frame is a session of its own, named after "
                   "the recording (--map-epoch with the bag's name)")
    p.add_argument("--map-jump", nargs=2, type=float,
                   metavar=("M", "DEG"),
                   help="bag: a step of map -> odom of M metres or DEG degrees or more between "
                   "two tf samples is a loop closure or relocalisation, applied as a pose "
                   "correction of what was seen since the previous one (default 0.05 1)")
    p.add_argument("--no-map-jumps", action="store_true",
                   help="bag: interpolate map -> odom across every step; correct nothing")
    p.add_argument("--late-s", type=float, metavar="S",
                   help="the store's late-scan tolerance: how far a scan may trail the latest "
                   "scan another source wrote (default: the store's; new files 0, new "
                   "PostgreSQL schemas 1 s). Raise it for robots whose clocks disagree, or "
                   "to ingest a recording that overlaps another source's; it is only raised")
    p.add_argument("--fast", action="store_true",
                   help="do not fsync every scan (a machine crash may lose the last scans; "
                   "a re-run re-ingests them)")
    add_json(p, "print the summary as JSON")
    add_quiet(p)
    p.set_defaults(func=cmd_ingest)


def cmd_ingest(args: argparse.Namespace) -> int:
    import io

    from locimem.ingest import Interrupted, NothingIngested, ingest, source_kind

    kind = source_kind(args.source)
    options = None
    bag_only = {"detections": "auto", "map_frame": "map", "camera_info": "auto",
                "depth": "auto", "masks": "auto", "camera_frame": None, "optical": "auto",
                "range": 8.0,
                "depth_tolerance": 0.02, "label_map": None, "new_map": False,
                "map_jump": None, "no_map_jumps": False}
    used = [f"--{k.replace('_', '-')}" for k, v in bag_only.items() if getattr(args, k) != v]
    if kind == "jsonl" and used:
        raise InvalidInput(f"{', '.join(used)}: options for ROS 2 bags, not JSON lines")
    if kind == "bag":
        from locimem.ingest.ros import BagOptions, load_label_map

        def topic(value: str) -> str | None:
            return None if value == "none" else value

        jump_m, jump_deg = (BagOptions.jump_m, BagOptions.jump_deg) if args.map_jump is None \
            else args.map_jump
        options = BagOptions(
            detections_topic=args.detections, map_frame=args.map_frame,
            camera_info_topic=topic(args.camera_info), depth_topic=topic(args.depth),
            masks_topic=topic(args.masks),
            camera_frame=args.camera_frame,
            optical={"auto": None, "yes": True, "no": False}[args.optical],
            range_m=args.range, depth_tolerance_s=args.depth_tolerance,
            label_map=None if args.label_map is None else load_label_map(args.label_map),
            jump_m=None if args.no_map_jumps else jump_m, jump_deg=jump_deg)
    map_epoch = args.map_epoch
    if args.new_map:
        if map_epoch is not None:
            raise InvalidInput("--new-map names the epoch after the recording; give either "
                               "it or --map-epoch")
        map_epoch = epoch_name_of(args.source)
    scope = resolve_scope(args.store, args.scope, new_ok=True,
                          scopes=scopes_if_any(args.store))
    late_s = args.late_s if args.late_s is not None else getattr(args, "store_late_s", None)
    try:
        summary = ingest(args.source, args.store, scope=scope, source_name=args.source_name,
                         bag_options=options, durable=not args.fast,
                         progress=io.StringIO() if args.quiet or args.json else None,
                         config=getattr(args, "tracker_config", None), late_s=late_s,
                         map_epoch=map_epoch)
    except NothingIngested as nothing:
        if args.json:
            document(args, nothing.summary.to_dict(), [])
        lines = nothing.summary.why_nothing()
        print(f"error: {lines[0]}", *lines[1:], sep="\n", file=sys.stderr)
        return 1
    except Interrupted as stop:
        done = stop.summary
        print(f"interrupted after {done.scans_ingested} scans; run the same command again "
              "to resume", file=sys.stderr)
        return 130
    document(args, summary.to_dict(), summary.lines())
    return 0


def epoch_name_of(source: str) -> str:
    """A map epoch's name from a recording's path: its name without the suffix, other
    characters than letters, digits, ``-``, ``_`` and ``.`` turned into ``-``, at most 40.

    >>> epoch_name_of("/bags/2026-12-04 boot #2.mcap")
    '2026-12-04-boot--2'
    """

    path = Path(source.rstrip("/"))
    stem = path.stem if path.suffix.lower() in (".db3", ".mcap") else path.name
    name = "".join(c if c.isascii() and (c.isalnum() or c in "-_.") else "-" for c in stem)
    return name.strip(".")[:40] or "recording"


PARSERS = (parser_ingest,)
