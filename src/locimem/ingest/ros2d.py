"""Scans from a recording of a 2D detector: ``vision_msgs/msg/Detection2DArray`` lifted to
3D with an aligned depth image, the camera's ``CameraInfo`` and ``/tf``.

The bag is read in the two passes of :class:`~locimem.ingest.ros.BagReader`: pass 1 keeps
``/tf``, ``/tf_static``, the camera infos and the detection arrays (as messages: they are
small); pass 2 streams the depth topic and the instance mask topic once, in record order,
and pairs each array with the image of each whose header stamp is nearest its own within
``depth_tolerance_s``. Each frame is then lifted by
:func:`~locimem.ingest.rosframe.frame_from_messages` (the function a live node calls) and
observed with the lifted camera, so absence is judged on the same depth image.

Never silently dropped:

- A frame is **skipped** (nothing of it written; counted by reason, with the stretches of
  stamps it covers, in the summary) when it has no depth image within the tolerance, no
  camera info at or before its stamp (within the tolerance) yet, or no transform from the
  camera's frame to the map frame at its stamp (never extrapolated).
- A frame whose instance mask is missing (a mask topic is read, but none lies within the
  tolerance) is **lifted from its boxes alone** and counted as a warning: its boxes are
  still evidence, only looser (a box's margin may hold the floor or a wall at the object's
  depth), and skipping it would also drop the camera's look.
- A box that cannot be lifted (no hypothesis, outside the image, too few depth readings, only
  background depth) is counted in the summary's dropped detections, by reason.

The depth image may have another resolution than the colour image (the camera info's, which
the boxes are in): it is taken as the same view resampled, intrinsics scaled by the ratio.
"""

from __future__ import annotations

import bisect
from dataclasses import dataclass
from typing import Any

from locimem.errors import InvalidInput
from locimem.ingest.feed import IngestError, Scan, SkipScan
from locimem.ingest.rosbag import BagReader, CameraInfoSample
from locimem.ingest.rosframe import frame_from_messages
from locimem.ingest.rosmsg import DETECTIONS_2D_TYPE, IMAGE_TYPE, pick_topic, stamp_s

__all__ = ["Reader2D"]


@dataclass(frozen=True, slots=True)
class _RawFrame:
    """A detection array as pass 1 keeps it: its stamp, record order, where, and message."""

    t: float
    order: int
    where: str
    msg: Any


class Reader2D(BagReader):
    """``vision_msgs/msg/Detection2DArray`` detections, lifted with the depth image."""

    detections_type = DETECTIONS_2D_TYPE

    def _check_topics(self, topics: dict[str, Any]) -> None:
        images = sorted(t for t, i in topics.items() if i.msgtype == IMAGE_TYPE)
        if self.info_topic is None:
            why = ("--camera-info none was given" if self.options.camera_info_topic is None
                   else "the bag has no sensor_msgs/msg/CameraInfo topic")
            raise IngestError("bag", f"{self.det_topic} holds 2D detections, which need the "
                              f"colour camera's CameraInfo to be lifted, but {why}: record "
                              "the camera_info topic, or pass --camera-info TOPIC")
        if self.depth_topic is None:
            why = ("--depth none was given" if self.options.depth_topic is None
                   else "the bag has no Image topic named *depth*")
            raise IngestError("bag", f"{self.det_topic} holds 2D detections, which need an "
                              f"aligned depth image to be lifted, but {why}; its Image "
                              f"topics: {images or 'none'}: pass --depth TOPIC")
        masks = self.options.masks_topic
        self.masks_topic = pick_topic(topics, masks, IMAGE_TYPE, "instance mask Image",
                                      "--masks", name_hint="mask" if masks == "auto" else None)
        if self.masks_topic == self.depth_topic:
            raise IngestError("bag", f"{self.depth_topic!r} cannot be both the depth and the "
                              "masks topic")

    @property
    def streams(self) -> tuple[str, ...]:
        assert self.depth_topic is not None  # checked in _check_topics
        return (self.depth_topic,) if self.masks_topic is None else (self.depth_topic,
                                                                     self.masks_topic)

    def _raw_scan(self, msg: Any, order: int, where: str) -> _RawFrame:
        return _RawFrame(stamp_s(msg.header, where), order, where, msg)

    def _info_within(self, t: float) -> CameraInfoSample | None:
        """The latest camera info at or before ``t`` (within the depth tolerance after it)."""
        i = bisect.bisect_right(self.info_times, t + self.options.depth_tolerance_s)
        return self.infos[i - 1] if i > 0 else None

    def _build(self, raw: Any, paired: dict[str, Any], where: str) -> Scan:
        o = self.options
        tol = o.depth_tolerance_s
        info = self._info_within(raw.t)
        if info is None:
            raise SkipScan(f"no CameraInfo yet on {self.info_topic} (the first is at "
                           f"t={self.infos[0].t:.3f} s)",
                           "the camera info starts after the detections: record it from the "
                           "start of the run")
        depth = paired.get(self.depth_topic) if self.depth_topic else None
        if depth is None:
            raise SkipScan(f"no depth image within {tol} s on {self.depth_topic}",
                           "pass a larger --depth-tolerance S if the depth stamps lag the "
                           "detections'; frames without depth cannot be lifted")
        frame = self._camera_frame(info)
        pose = self._lookup(frame, raw.t, where, role="camera")
        masks = paired.get(self.masks_topic) if self.masks_topic else None
        warnings: tuple[str, ...] = ()
        if self.masks_topic is not None and masks is None:
            warnings = (f"no instance mask within {tol} s on {self.masks_topic}: the frame "
                        "was lifted from its boxes alone",)
        info_msg = _InfoView(info)
        try:
            lifted = frame_from_messages(raw.msg, depth, info_msg, pose, masks=masks,
                                         optical=self._optical(frame),
                                         label_map=o.label_map, range_m=(0.1, o.range_m),
                                         min_pixels=o.min_pixels)
        except InvalidInput as exc:
            raise IngestError(where, str(exc)) from None
        return Scan(raw.t, lifted.detections, lifted.camera, lifted.dropped, warnings)

    def _more_inputs(self) -> dict[str, Any]:
        return {"masks": self.masks_topic}


class _InfoView:
    """A kept camera info as the message :func:`frame_from_messages` reads (``k``,
    ``width``, ``height``, ``header.frame_id``)."""

    def __init__(self, info: CameraInfoSample) -> None:
        self.k, self.width, self.height = list(info.k), info.width, info.height
        self.header = _Header(info.frame)


class _Header:
    def __init__(self, frame_id: str) -> None:
        self.frame_id = frame_id
