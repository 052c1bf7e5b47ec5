"""Retention: which observations a compaction keeps. Pure: rows in, kept sequence numbers out.

Per object (and, for rejected evidence, per rejection key) the policy keeps the first and the
last sighting, every sighting in a commit where the object's place or label changed (MOVED,
LABEL_CHANGED, REACQUIRED, REVIVED, CORRECTED), and a thinned trail of one sighting per
``trail_s`` seconds. Events, commits, tombstones and the audit trail are never thinned.
"""

from __future__ import annotations

import math
from collections.abc import Iterable

from locimem.model import ObservationMeta

CHANGE_KINDS = ("APPEARED", "MOVED", "LABEL_CHANGED", "REACQUIRED", "REVIVED", "CORRECTED")


def select_kept(rows: Iterable[ObservationMeta], changes: set[tuple[int, int]],
                trail_s: float) -> set[int]:
    """The seqs to keep among ``rows`` (in seq order). ``changes`` holds (object id, commit)
    pairs where the object's place or label changed."""
    groups: dict[object, list[ObservationMeta]] = {}
    for row in rows:
        group = row.object_id if row.object_id is not None else ("key", row.key)
        groups.setdefault(group, []).append(row)
    kept: set[int] = set()
    for group_rows in groups.values():
        kept.add(group_rows[0].seq)
        kept.add(group_rows[-1].seq)
        start = group_rows[0].t
        windows: set[int] = set()
        for row in group_rows:
            if row.object_id is not None and (row.object_id, row.commit) in changes:
                kept.add(row.seq)
            window = math.floor((row.t - start) / trail_s) if trail_s > 0 else row.seq
            if window not in windows:
                windows.add(window)
                kept.add(row.seq)
    return kept
