"""Recordings into a memory: ROS 2 bags (the ``ros`` extra) and JSON-lines scan files.

``ingest(source, store)`` opens the store, reads the source into scans (map frame, metres,
seconds), feeds the ones the store does not hold yet through ``observe`` — one atomic commit
per scan — and returns an :class:`IngestSummary`. Re-running it on the same source resumes:
every scan is ingested exactly once (see :mod:`locimem.ingest.feed`).

- :mod:`locimem.ingest.frames`: transforms, the tf tree, the optical frame, camera intrinsics
  and depth units (pure maths).
- :mod:`locimem.ingest.ros`: rosbag2 directories, ``.db3`` and ``.mcap`` files.
- :mod:`locimem.ingest.jsonl`: the JSON-lines format (one scan per line).
- :mod:`locimem.ingest.feed`: resume, skip, observe, count.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import TextIO

from locimem.errors import InvalidInput
from locimem.ingest.feed import IngestError, feed
from locimem.ingest.summary import IngestSummary
from locimem.memory import ObjectMemory

__all__ = ["IngestError", "IngestSummary", "ingest", "source_kind"]

JSONL_SUFFIXES = (".jsonl", ".ndjson")
BAG_SUFFIXES = (".db3", ".mcap")


def source_kind(path: str | os.PathLike[str]) -> str:
    """``"bag"`` for a rosbag2 directory or a ``.db3`` / ``.mcap`` file, ``"jsonl"`` for a
    ``.jsonl`` / ``.ndjson`` file."""
    p = Path(path)
    if not p.exists():
        raise InvalidInput(f"no such file or directory: {p}")
    if p.is_dir() or p.suffix.lower() in BAG_SUFFIXES:
        return "bag"
    if p.suffix.lower() in JSONL_SUFFIXES:
        return "jsonl"
    raise InvalidInput(f"cannot tell what {p} is: expected a rosbag2 directory, a .db3 or "
                       ".mcap file, or a .jsonl scan file")


def ingest(source: str | os.PathLike[str], store: str | os.PathLike[str], *,
           scope: str = "default", source_name: str | None = None,
           bag_options: object | None = None, durable: bool = True,
           progress: TextIO | None = None) -> IngestSummary:
    """Ingest a recording into ``store`` (created if missing) under ``scope``.

    Args:
        source: a rosbag2 directory, ``.db3`` or ``.mcap`` file, or a ``.jsonl`` scan file.
        store: the store file.
        scope: whose memory the scans belong to.
        source_name: the scans' ``source`` (their actor in the audit, and the ``source`` of
            the objects they create); default ``ros:<detections topic>`` or ``jsonl``.
        bag_options: a :class:`~locimem.ingest.ros.BagOptions` for bags.
        durable: fsync every scan (see :meth:`ObjectMemory.open`).
        progress: where to draw a progress bar (drawn only on a TTY; default stderr).

    Raises:
        IngestError: bad input, naming the line or stamp (scans before it are committed;
            run again after fixing it to resume).
        RosUnavailable: a bag, without the ``ros`` extra.
    """
    kind = source_kind(source)
    if kind == "jsonl":
        from locimem.ingest.jsonl import count_scans, plan_jsonl

        summary = IngestSummary(str(source), str(store), scope, source_name or "jsonl",
                                inputs={"path": str(source), "format": "jsonl"})
        with ObjectMemory.open(store, scope=scope, durable=durable) as mem:
            feed(mem, plan_jsonl(source), summary, total=count_scans(source), stream=progress)
        return summary
    from locimem.ingest.ros import BagOptions, open_bag

    options = bag_options if bag_options is not None else BagOptions()
    if not isinstance(options, BagOptions):
        raise InvalidInput(f"bag_options must be a BagOptions, got {type(options).__name__}")
    name = source_name or f"ros:{options.detections_topic}"
    with open_bag(source, options) as (plan, total, inputs):
        summary = IngestSummary(str(source), str(store), scope, name, inputs=inputs)
        with ObjectMemory.open(store, scope=scope, durable=durable) as mem:
            feed(mem, plan, summary, total=total, stream=progress)
    return summary
