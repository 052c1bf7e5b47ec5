"""Recordings into a memory: ROS 2 bags (the ``ros`` extra) and JSON-lines scan files.

``ingest(source, store)`` opens the store, reads the source into scans (map frame, metres,
seconds), feeds the ones the store does not hold yet through ``observe`` — one atomic commit
per scan — and returns an :class:`IngestSummary`. Re-running it on the same source resumes:
every scan is ingested exactly once (see :mod:`locimem.ingest.feed`).

- :mod:`locimem.ingest.frames`: transforms, the tf tree, the optical frame, camera intrinsics
  and depth units (pure maths).
- :mod:`locimem.ingest.ros`: rosbag2 directories, ``.db3`` and ``.mcap`` files, with
  ``Detection3DArray`` detections; :mod:`locimem.ingest.ros2d`: ``Detection2DArray`` ones,
  lifted with the depth image; :mod:`locimem.ingest.rosbag`: the reader both build on;
  :mod:`locimem.ingest.rosmsg`: the message types, stamps and topic choice they share;
  :mod:`locimem.ingest.rosframe`: one frame of live ROS messages (a node's callback) to
  what ``observe`` takes.
- :mod:`locimem.ingest.jsonl`: the JSON-lines format (one scan per line).
- :mod:`locimem.ingest.feed`: resume, skip, observe, count.
"""

from __future__ import annotations

import contextlib
import os
from pathlib import Path
from typing import Any, TextIO

from locimem.config import TrackerConfig
from locimem.errors import InvalidInput, LocimemError
from locimem.files import check_regular
from locimem.ingest.feed import IngestError, Interrupted, MapJump, feed
from locimem.ingest.summary import IngestSummary
from locimem.memory import ObjectMemory
from locimem.store.base import is_postgres_url
from locimem.store.sqlite import MEMORY
from locimem.store.sqlite.files import writer_lock_path

__all__ = ["IngestError", "IngestSummary", "Interrupted", "NothingIngested", "ingest",
           "source_kind"]

JSONL_SUFFIXES = (".jsonl", ".ndjson")
BAG_SUFFIXES = (".db3", ".mcap")


def source_kind(path: str | os.PathLike[str]) -> str:
    """``"bag"`` for a rosbag2 directory or a ``.db3`` / ``.mcap`` file, ``"jsonl"`` for a
    ``.jsonl`` / ``.ndjson`` file."""
    p = Path(path)
    if not p.exists():
        raise InvalidInput(f"no such file or directory: {p}")
    if p.is_dir():
        _check_bag_directory(p)
        return "bag"
    suffix = p.suffix.lower()
    if suffix in BAG_SUFFIXES or suffix in JSONL_SUFFIXES:
        what = "the recording" if suffix in BAG_SUFFIXES else "the scan file"
        check_regular(p, what, f"expected a {suffix} file")  # a FIFO would never return
        return "bag" if suffix in BAG_SUFFIXES else "jsonl"
    raise InvalidInput(f"cannot tell what {p} is: expected a rosbag2 directory, a .db3 or "
                       ".mcap file, or a .jsonl scan file")


def _check_bag_directory(path: Path) -> None:
    """The files of a rosbag2 directory a reader opens (``metadata.yaml``, ``.db3``,
    ``.mcap``) are regular files."""
    for entry in sorted(path.iterdir()):
        if entry.name == "metadata.yaml" or entry.suffix.lower() in BAG_SUFFIXES:
            check_regular(entry, "the recording's file",
                          "expected a rosbag2 directory of regular files")


class NothingIngested(LocimemError):
    """A recording gave the memory nothing: no scans, or every scan skipped (a map frame the
    tf tree lacks, a transform missing). The message says why, cause by cause, and what to
    pass; ``summary`` has the counts. A store this run created is removed again."""

    def __init__(self, summary: IngestSummary) -> None:
        super().__init__("\n".join(summary.why_nothing()))
        self.summary = summary


def ingest(source: str | os.PathLike[str], store: str | os.PathLike[str], *,
           scope: str = "default", source_name: str | None = None,
           bag_options: object | None = None, durable: bool = True,
           progress: TextIO | None = None, config: TrackerConfig | None = None,
           late_s: float | None = None, map_epoch: str | None = None) -> IngestSummary:
    """Ingest a recording into ``store`` (created if missing: a file, or a PostgreSQL schema)
    under ``scope``.

    Args:
        source: a rosbag2 directory, ``.db3`` or ``.mcap`` file, or a ``.jsonl`` scan file.
        store: the store file, or a ``postgresql://`` URL.
        scope: whose memory the scans belong to.
        source_name: the scans' ``source`` (their actor in the audit, and the ``source`` of
            the objects they create); default ``ros:<detections topic>`` (the topic read)
            or ``jsonl``.
            Resuming is per source: another source's scans of the same hours do not count.
        bag_options: a :class:`~locimem.ingest.ros.BagOptions` for bags.
        durable: fsync every scan (see :meth:`ObjectMemory.open`).
        progress: where to draw a progress bar (drawn only on a TTY; default stderr).
        config: tracker settings (default: the published design's).
        late_s: the store's late-scan tolerance (see :meth:`ObjectMemory.open`): raise it
            to ingest a recording that overlaps what another source wrote.
        map_epoch: the SLAM session whose map frame the recording is in (``observe``'s
            ``map_epoch``): a robot that starts a new map at each boot names each boot (say,
            the bag's name); None for one fixed map frame (a saved map). A bag's map-frame
            jumps (loop closures) are applied as pose corrections either way (see
            :mod:`locimem.ingest.ros`).

    Raises:
        IngestError: bad input, naming the line or stamp, or a scan too late for the store's
            tolerance (scans before it are committed; run again after fixing it to resume).
        NothingIngested: the recording gave nothing (see there).
        Interrupted: Ctrl-C (a ``KeyboardInterrupt``; the scans before it are committed).
        RosUnavailable: a bag, without the ``ros`` extra.
    """
    kind = source_kind(source)
    if map_epoch is not None:
        from locimem.memory.epochs import check_epoch

        map_epoch = check_epoch(map_epoch)
    new_files = _missing_store_files(store)
    options = None
    if kind == "bag":
        from locimem.ingest.ros import BagOptions

        options = bag_options if bag_options is not None else BagOptions()
        if not isinstance(options, BagOptions):
            raise InvalidInput(f"bag_options must be a BagOptions, got {type(options).__name__}")
    try:
        summary = _ingest(kind, source, store, scope, source_name, options, durable, progress,
                          config, late_s, map_epoch)
    except NothingIngested:
        _remove(new_files)
        raise
    return summary


def _ingest(kind: str, source: str | os.PathLike[str], store: str | os.PathLike[str],
            scope: str, source_name: str | None, options: Any, durable: bool,
            progress: TextIO | None, config: TrackerConfig | None,
            late_s: float | None, map_epoch: str | None) -> IngestSummary:
    def memory() -> ObjectMemory:
        return ObjectMemory.open(store, scope=scope, durable=durable, config=config,
                                 late_s=late_s)

    if kind == "jsonl":
        from locimem.ingest.jsonl import count_scans, plan_jsonl

        summary = IngestSummary(str(source), _store_name(store), scope, source_name or "jsonl",
                                inputs={"path": str(source), "format": "jsonl",
                                        "map_epoch": map_epoch})
        with memory() as mem:
            feed(mem, plan_jsonl(source), summary, total=count_scans(source), stream=progress,
                 map_epoch=map_epoch)
    else:
        from locimem.ingest.ros import cli_warning, open_bag

        with open_bag(source, options) as (plan, total, inputs):
            name = source_name or f"ros:{inputs['detections']}"
            summary = IngestSummary(str(source), _store_name(store), scope, name,
                                    inputs={**inputs, "map_epoch": map_epoch})
            jumps = [MapJump(j["t"], j["since"], (tuple(j["translation"]),
                                                  tuple(j["quaternion"])))
                     for j in inputs["map_jumps"]]
            with memory() as mem:
                feed(mem, plan, summary, total=total, stream=progress,
                     warning_text=cli_warning, map_epoch=map_epoch, jumps=jumps)
    if summary.took_nothing:
        raise NothingIngested(summary)
    return summary


def _store_name(store: str | os.PathLike[str]) -> str:
    """The store as messages name it (a URL without its password)."""
    if is_postgres_url(store):
        from locimem.store.base import redacted

        return redacted(str(store))
    return str(store)


def _missing_store_files(store: str | os.PathLike[str]) -> list[Path]:
    """The files a new SQLite store at ``store`` would create that are not there yet."""
    if is_postgres_url(store) or str(store) == MEMORY:
        return []
    path = Path(store)
    if path.exists():
        return []
    files = [path, *(Path(f"{path}{end}") for end in ("-wal", "-shm", "-journal")),
             Path(writer_lock_path(path))]
    return [f for f in files if not f.exists()]


def _remove(files: list[Path]) -> None:
    for f in files:
        with contextlib.suppress(FileNotFoundError):
            f.unlink()
