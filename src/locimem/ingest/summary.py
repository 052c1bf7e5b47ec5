"""What an ingest run did: counts a person reads at the end, or a program reads as JSON."""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any

from locimem.times import time_text

__all__ = ["IngestSummary", "warning_kind"]


def warning_kind(warning: str) -> str:
    """A scan warning without its leading counts, so one kind of warning is counted once.

    >>> warning_kind("25 of 30 detections lie outside the camera's field of view: check it")
    "detections lie outside the camera's field of view: check it"
    """
    return re.sub(r"^\d+ of \d+ ", "", warning)


@dataclass
class IngestSummary:
    """Counts of one ``ingest`` run.

    ``scans_read``: scans found in the source. ``scans_ingested``: committed by this run.
    ``scans_resumed``: passed over because the store already holds the memory up to them
    (their time is before the store's latest scan, or at it and already counted there).
    ``skipped``: scans not ingested, by reason (e.g. a missing transform), with the first
    stamp of each reason in ``first_skipped_t`` (seconds) and the stretches of consecutive
    scans it skipped in ``skipped_stretches`` (``[from_t, to_t]`` seconds, in order; a scan
    ingested, or skipped for another reason, ends a stretch). ``warnings``: warnings by kind,
    with the number of scans given each (the reader's, like a missing instance mask, and
    ``observe``'s). ``events``: events this run's
    scans produced, by kind. ``objects_created``: identities this run created (``APPEARED``);
    ``objects_in_memory``: objects the scope remembers afterwards. ``inputs``: the topics,
    frames and files that were read. ``map_jumps``: map-frame jumps in the recording's tf
    (loop closures, relocalisations) this run applied as pose corrections;
    ``map_jumps_waiting``: jumps not applied because the run's map epoch is still provisional
    (a re-run after the epoch is aligned applies them).
    """

    source_path: str
    store: str
    scope: str
    source: str
    inputs: dict[str, Any] = field(default_factory=dict)
    scans_read: int = 0
    scans_ingested: int = 0
    scans_resumed: int = 0
    skipped: dict[str, int] = field(default_factory=dict)
    first_skipped_t: dict[str, float] = field(default_factory=dict)
    detections: int = 0
    detections_dropped: dict[str, int] = field(default_factory=dict)
    events: dict[str, int] = field(default_factory=dict)
    objects_created: int = 0
    objects_in_memory: int = 0
    resume_from_t: float | None = None
    seconds: float = 0.0
    hints: dict[str, str] = field(default_factory=dict)  # skip reason -> what would fix it
    warnings: dict[str, int] = field(default_factory=dict)  # warning -> scans it was given
    interrupted: bool = False
    map_jumps: int = 0
    map_jumps_waiting: int = 0
    skipped_stretches: dict[str, list[list[float]]] = field(default_factory=dict)
    _skipping: str | None = field(default=None, repr=False, compare=False)

    def skip(self, reason: str, t_s: float, hint: str | None = None) -> None:
        """Count a scan at ``t_s`` not ingested for ``reason``, extending the stretch of the
        scans before it skipped for the same reason."""
        self.skipped[reason] = self.skipped.get(reason, 0) + 1
        self.first_skipped_t.setdefault(reason, t_s)
        stretches = self.skipped_stretches.setdefault(reason, [])
        if self._skipping == reason and stretches:
            stretches[-1][1] = t_s
        else:
            stretches.append([t_s, t_s])
        self._skipping = reason
        if hint is not None:
            self.hints.setdefault(reason, hint)

    def took(self) -> None:
        """A scan was ingested (or was already in the store): it ends a skipped stretch."""
        self._skipping = None

    def warn(self, warning: str) -> bool:
        """Count a scan's warning (its kind: the text without its leading counts); True the
        first time this kind is seen."""
        kind = warning_kind(warning)
        first = kind not in self.warnings
        self.warnings[kind] = self.warnings.get(kind, 0) + 1
        return first

    @property
    def took_nothing(self) -> bool:
        """Nothing ingested, and nothing held already: the recording gave the memory nothing
        (every scan skipped, or none there)."""
        return self.scans_ingested == 0 and self.scans_resumed == 0

    def why_nothing(self) -> list[str]:
        """Why a run took nothing, cause by cause, each with what to do."""
        topic = self.inputs.get("detections")
        if self.scans_read == 0:
            where = f" on {topic}" if topic else ""
            lines = [f"{self.source_path} holds no scans{where}"]
            topics = self.inputs.get("topics")
            if topics:
                lines.append("  its topics: " + ", ".join(f"{t} {k}" for t, k in topics.items()))
                lines.append("  pass --detections TOPIC to read another "
                             "vision_msgs/msg/Detection3DArray or Detection2DArray topic")
            return lines
        lines = [f"none of the {self.scans_read} scans of {self.source_path} could be "
                 "ingested:"]
        for reason, n in sorted(self.skipped.items(), key=lambda kv: -kv[1]):
            lines.append(f"  {n} skipped: {reason}")
            if reason in self.hints:
                lines.append(f"    {self.hints[reason]}")
        return lines

    def _stretch_text(self, reason: str, most: int = 4) -> str:
        """Where a reason's skipped scans lie: ``t=a to b; t=c`` (the first ``most``)."""
        stretches = self.skipped_stretches.get(reason) or [[self.first_skipped_t[reason]] * 2]
        parts = [time_text(a) if a == b else f"{time_text(a)} to {time_text(b)}"
                 for a, b in stretches[:most]]
        more = len(stretches) - most
        return "; ".join(parts) + (f"; and {more} more stretches" if more > 0 else "")

    def drop(self, reason: str, n: int = 1) -> None:
        self.detections_dropped[reason] = self.detections_dropped.get(reason, 0) + n

    @property
    def scans_skipped(self) -> int:
        return sum(self.skipped.values())

    @property
    def scans_per_s(self) -> float:
        return self.scans_ingested / self.seconds if self.seconds > 0 else 0.0

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready form (``--json``)."""
        return {
            "source_path": self.source_path, "store": self.store, "scope": self.scope,
            "source": self.source, "inputs": self.inputs,
            "scans": {"read": self.scans_read, "ingested": self.scans_ingested,
                      "resumed": self.scans_resumed, "skipped": self.scans_skipped},
            "skipped": {reason: {"scans": n, "first_t": self.first_skipped_t[reason],
                                 "stretches": self.skipped_stretches.get(reason, [])}
                        for reason, n in sorted(self.skipped.items())},
            "detections": self.detections,
            "detections_dropped": dict(sorted(self.detections_dropped.items())),
            "objects": {"created": self.objects_created, "in_memory": self.objects_in_memory},
            "events": dict(sorted(self.events.items())),
            "hints": dict(sorted(self.hints.items())),
            "warnings": dict(sorted(self.warnings.items())),
            "map_jumps": {"applied": self.map_jumps, "waiting": self.map_jumps_waiting},
            "interrupted": self.interrupted,
            "resume_from_t": self.resume_from_t,
            "seconds": round(self.seconds, 3),
            "scans_per_s": round(self.scans_per_s, 1),
        }

    def lines(self) -> list[str]:
        """A short human summary, one fact a line."""
        out = [f"ingested {self.scans_ingested} of {self.scans_read} scans from "
               f"{self.source_path} into {self.store} (scope {self.scope!r}) in "
               f"{self.seconds:.1f} s ({self.scans_per_s:.0f} scans/s)"]
        i = self.inputs
        if "detections" in i:  # a bag: what was read, as chosen or found
            cam = "no camera" if not i.get("camera_info") else (
                f"camera {i['camera_info']} (frame {i['camera_frame']}"
                f"{', optical' if i.get('optical') else ''})")
            depth = f", depth {i['depth']}" if i.get("depth") else ""
            if i.get("detections_type", "").endswith("Detection2DArray"):
                masks = f"masks {i['masks']}" if i.get("masks") else "no masks"
                depth += f", {masks} (2D detections, lifted)"
            out.append(f"  read {i['detections']} into frame {i['map_frame']}; {cam}{depth}")
        if self.scans_resumed:
            out.append(f"  {self.scans_resumed} scans already in the store from source "
                       f"{self.source!r} (resumed after {time_text(self.resume_from_t)})")
        for reason, n in sorted(self.skipped.items()):
            out.append(f"  skipped {n} scans: {reason} ({self._stretch_text(reason)})")
            if reason in self.hints:
                out.append(f"    {self.hints[reason]}")
        for kind, n in sorted(self.warnings.items()):
            out.append(f"  warning, {n} scans: {kind}")
        out.append(f"  {self.detections} detections; objects: {self.objects_created} new, "
                   f"{self.objects_in_memory} in memory")
        for reason, n in sorted(self.detections_dropped.items()):
            out.append(f"  dropped {n} detections: {reason}")
        if self.map_jumps:
            out.append(f"  {self.map_jumps} map-frame jumps (loop closures, relocalisations) "
                       "applied as pose corrections")
        if self.map_jumps_waiting:
            epoch = self.inputs.get("map_epoch")
            out.append(f"  {self.map_jumps_waiting} map-frame jumps wait: map epoch {epoch!r} "
                       "is provisional (not aligned yet); run the ingest again once it is")
        if self.events:
            out.append("  events: " + ", ".join(f"{k} {v}" for k, v in sorted(self.events.items())))
        return out
