"""What an ingest run did: counts a person reads at the end, or a program reads as JSON."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

__all__ = ["IngestSummary"]


@dataclass
class IngestSummary:
    """Counts of one ``ingest`` run.

    ``scans_read``: scans found in the source. ``scans_ingested``: committed by this run.
    ``scans_resumed``: passed over because the store already holds the memory up to them
    (their time is before the store's latest scan, or at it and already counted there).
    ``skipped``: scans not ingested, by reason (e.g. a missing transform), with the first
    stamp of each reason in ``first_skipped_t`` (seconds). ``events``: events this run's
    scans produced, by kind. ``objects_created``: identities this run created (``APPEARED``);
    ``objects_in_memory``: objects the scope remembers afterwards. ``inputs``: the topics,
    frames and files that were read.
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

    def skip(self, reason: str, t_s: float) -> None:
        self.skipped[reason] = self.skipped.get(reason, 0) + 1
        self.first_skipped_t.setdefault(reason, t_s)

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
            "skipped": {reason: {"scans": n, "first_t": self.first_skipped_t[reason]}
                        for reason, n in sorted(self.skipped.items())},
            "detections": self.detections,
            "detections_dropped": dict(sorted(self.detections_dropped.items())),
            "objects": {"created": self.objects_created, "in_memory": self.objects_in_memory},
            "events": dict(sorted(self.events.items())),
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
            out.append(f"  read {i['detections']} into frame {i['map_frame']}; {cam}{depth}")
        if self.scans_resumed:
            out.append(f"  {self.scans_resumed} scans already in the store (resumed after "
                       f"t={self.resume_from_t})")
        for reason, n in sorted(self.skipped.items()):
            out.append(f"  skipped {n} scans: {reason} (first at t={self.first_skipped_t[reason]})")
        out.append(f"  {self.detections} detections; objects: {self.objects_created} new, "
                   f"{self.objects_in_memory} in memory")
        for reason, n in sorted(self.detections_dropped.items()):
            out.append(f"  dropped {n} detections: {reason}")
        if self.events:
            out.append("  events: " + ", ".join(f"{k} {v}" for k, v in sorted(self.events.items())))
        return out
