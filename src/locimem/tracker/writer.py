"""The records of one commit, numbered as they are written."""

from __future__ import annotations

from typing import Any

from locimem.model import Commit, Detection, Event, EventKind, Observation, Record


class RecordWriter:
    """Builds one commit's records, numbering them from ``next_seq``."""

    def __init__(self, commit: Commit, next_seq: int) -> None:
        self.commit = commit
        self.records: list[Record] = [commit]
        self.seq = next_seq

    def event(self, kind: EventKind, oid: int, label: str, data: dict[str, Any]) -> Event:
        ev = Event(self.seq, self.commit.id, self.commit.t, kind, oid, label, data)
        self.seq += 1
        self.records.append(ev)
        return ev

    def observation(self, index: int, det: Detection, oid: int | None, tier: str | None,
                    weight: float, rejected: str | None, key: str | None = None) -> Observation:
        obs = Observation(
            seq=self.seq, commit=self.commit.id, t=self.commit.t, index=index, label=det.label,
            confidence=det.confidence, center=det.center, size=det.size, object_id=oid,
            tier=tier, weight=weight, rejected=rejected, track_id=det.track_id,
            orientation=det.orientation, feature=det.feature, key=key,
        )
        self.seq += 1
        self.records.append(obs)
        return obs
