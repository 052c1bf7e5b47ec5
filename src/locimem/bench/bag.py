"""Bag ingestion beside the Python API: what reading a ROS 2 recording costs per scan.

The same synthetic run (``locimem.ingest.synth``: a robot at 30 Hz, 30 detections a scan,
tf at 100 Hz; optionally camera info and a 64x48 depth image) is fed two ways into fresh
stores in fast mode (no fsync): through ``observe`` (the Python API, timed from plain numbers,
so building each ``Detection`` and ``Camera`` counts, as it does for any caller), and by
``ingest`` from a rosbag2 recording written with the rosbags writer (reading, decoding, tf
lookups, conversion, then the same ``observe``). ``overhead`` = bag seconds / API seconds.
Times are this process's CPU seconds (``time.process_time``; fast mode has no fsync to wait
for), so a machine shared with other work gives stable ratios. ``read_ms`` is the reader
alone: opening the bag and building every scan, without ``observe``.
"""

from __future__ import annotations

import tempfile
import time
from dataclasses import dataclass
from pathlib import Path
from typing import TextIO

from locimem.memory import ObjectMemory
from locimem.model import Camera, Detection

__all__ = ["BagFigures", "bench_bag", "run_bag_suite"]


@dataclass(frozen=True)
class BagFigures:
    storage: str
    camera: bool
    scans: int
    per_scan: int
    bag_mb: float
    api_scans_per_s: float
    bag_scans_per_s: float
    read_ms_per_scan: float

    @property
    def overhead(self) -> float:
        return self.api_scans_per_s / self.bag_scans_per_s


def bench_bag(*, scans: int = 300, per_scan: int = 30, storage: str = "mcap",
              camera: bool = False, workdir: Path | None = None) -> BagFigures:
    """Time ``scans`` scans from a bag and through the API (fresh stores, fast mode)."""
    from locimem.ingest import ingest
    from locimem.ingest.ros import open_bag
    from locimem.ingest.synth import synth_run, write_bag

    run = synth_run(scans, dt_s=1 / 30, per_scan=per_scan, camera=camera)
    with tempfile.TemporaryDirectory(dir=workdir) as tmp:
        bag = write_bag(Path(tmp) / "run", run, storage=storage, tf_dt_s=0.01,
                        depth_encoding="16UC1" if camera else None, extra_hypothesis=False)
        size_mb = sum(f.stat().st_size for f in bag.iterdir()) / 1e6
        plain = [(s.t, [(d.label, d.confidence, d.center, d.size, d.track_id, d.orientation)
                        for d in s.detections],
                  None if s.camera is None else (s.camera.position, s.camera.quaternion,
                                                 s.camera.fov_deg, s.camera.range_m,
                                                 s.camera.vfov_deg, s.camera.depth))
                 for s in run.scans]
        start = time.process_time()
        with ObjectMemory.open(Path(tmp) / "api.loci", durable=False) as mem:
            for t, dets, cam in plain:
                mem.observe(t, [Detection(a, b, c, d, track_id=e, orientation=f)
                                for a, b, c, d, e, f in dets],
                            None if cam is None else Camera(*cam[:5], depth=cam[5]),
                            source="ros:/detections")
        api_s = time.process_time() - start
        start = time.process_time()
        summary = ingest(bag, Path(tmp) / "bag.loci", durable=False)
        bag_s = time.process_time() - start
        start = time.process_time()
        with open_bag(bag) as (plan, _, _):
            for planned in plan:
                planned.build()
        read_s = time.process_time() - start
        if summary.scans_ingested != scans:
            raise RuntimeError(f"the bag gave {summary.scans_ingested} of {scans} scans: "
                               f"{summary.skipped}")
    return BagFigures(storage, camera, scans, per_scan, size_mb, scans / api_s, scans / bag_s,
                      read_s / scans * 1e3)


def run_bag_suite(out: TextIO, scans: int = 300) -> None:
    """Print the bag-versus-API table (needs the ``ros`` extra)."""
    try:
        import rosbags  # noqa: F401
    except ImportError:
        out.write('\nBag ingestion: skipped (needs the ros extra: pip install "locimem[ros]")\n')
        return
    out.write("\n| bag | camera | scans | det/scan | bag MB | API scans/s | bag scans/s "
              "| bag overhead | reader ms/scan |\n|---|---|---:|---:|---:|---:|---:|---:|---:|\n")
    out.flush()
    for storage, camera in (("mcap", False), ("db3", False), ("mcap", True)):
        f = bench_bag(scans=scans, storage="sqlite3" if storage == "db3" else storage,
                      camera=camera)
        cam = "+ depth 64x48" if camera else "none"
        out.write(f"| .{storage} | {cam} | {f.scans} | {f.per_scan} | {f.bag_mb:.1f} | "
                  f"{f.api_scans_per_s:,.0f} | {f.bag_scans_per_s:,.0f} | "
                  f"{f.overhead:.2f}x | {f.read_ms_per_scan:.2f} |\n")
        out.flush()
