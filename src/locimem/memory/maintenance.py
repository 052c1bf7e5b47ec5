"""Maintenance: thinning the observation log (compaction) behind a checkpoint.
"""

from __future__ import annotations

from dataclasses import replace

from locimem.check import (
    check_positive,
    check_text,
)
from locimem.memory.base import Service
from locimem.model import (
    CompactionReport,
    EventKind,
)
from locimem.progress import Progress, Ticker
from locimem.tracker.commit import commit_records
from locimem.tracker.retention import CHANGE_KINDS, select_kept


class Maintenance(Service):
    """The maintenance verbs of :class:`~locimem.memory.facade.ObjectMemory`."""

    def compact(self, *, older_than_s: float = 600.0, trail_s: float = 10.0,
                dry_run: bool = False, reclaim: bool = False, actor: str = "maintenance",
                reason: str | None = None, progress: Progress | None = None
                ) -> CompactionReport:
        """Bound the observation log: thin observations older than ``older_than_s`` (before
        the latest scan) to, per object, the first and last sighting, every sighting where its
        place or label changed, and one sighting per ``trail_s`` seconds. Events, tombstones and
        the audit trail are kept whole.

        A checkpoint of the exact state at the horizon is stored in the same transaction, so
        replay (``rebuild_from_log``, reopening, ``as_of`` at or after the horizon) stays
        exact; ``as_of`` a time inside a thinned stretch is exact for events and labels and
        accurate to the trail for positions and counts. ``dry_run`` reports without writing.

        Deleted rows leave free pages behind: the file does not shrink by itself. With
        ``reclaim`` the store gives that space back afterwards (SQLite: ``VACUUM``, which
        rewrites the file and may take a while on a large store; PostgreSQL: ``VACUUM``, so
        the server reuses it) — even when nothing new was thinned, so a store compacted
        earlier can be shrunk later. The report says the store's bytes before and after.
        ``progress`` (e.g. :func:`locimem.progress.progress`) shows a bar over its steps:
        reading the log, replaying to the horizon, writing, reclaiming.
        """
        if not dry_run:
            self._live._writable("compact")
        older = check_positive(older_than_s, "older_than_s", allow_zero=True)
        trail = check_positive(trail_s, "trail_s")
        actor = check_text(actor, "actor")
        reason = None if reason is None else check_text(reason, "reason", max_chars=1000)
        steps = Ticker(progress, 3 + (not dry_run) + reclaim, "compacting")
        try:
            report = self._thin(older, trail, dry_run, actor, reason, steps)
            if dry_run:
                return report
            if reclaim:
                self._live.store.reclaim()
                steps.tick()
            return replace(report, bytes_after=self._live.store.size_bytes(), reclaimed=reclaim)
        finally:
            steps.close()

    def _thin(self, older: float, trail: float, dry_run: bool, actor: str,
              reason: str | None, steps: Ticker) -> CompactionReport:
        store, scope = self._live.store, self._live._scope
        size = None if dry_run else store.size_bytes()
        now = self._live._state.now
        horizon = None if now is None else store.last_commit_at(scope, t=now - older)
        previous = store.latest_checkpoint(scope)
        after = 0 if previous is None else previous[0]
        if horizon is None or horizon <= after:
            return CompactionReport(horizon, None, 0, 0, dry_run, size)
        rows = store.observation_meta(scope, after, horizon)
        if not rows:  # nothing new to thin: write nothing (not even a checkpoint)
            return CompactionReport(horizon, None, 0, 0, dry_run, size)
        changes = store.change_commits(scope, after, horizon, CHANGE_KINDS)
        steps.tick()  # the log read
        kept = select_kept(rows, changes, trail)
        dropped = [row.seq for row in rows if row.seq not in kept]
        steps.tick()  # what to keep decided
        state_at = self._live._load_state(from_log=True, until_commit=horizon)
        steps.tick()  # the state at the horizon replayed
        report = CompactionReport(horizon, state_at.now, len(rows), len(dropped), dry_run, size)
        if dry_run:
            return report
        out = self._live._writer("maintenance", actor, reason)
        out.event(EventKind.COMPACTED, 0, "", {
            "horizon_commit": horizon, "horizon_t": state_at.now, "examined": len(rows),
            "removed": len(dropped), "trail_s": trail,
        })
        with self._live._all_or_nothing():  # the commit path's checkpointed variant
            done = commit_records(self._live._state, self._live._config, out.records)
            store.compact(scope, checkpoint_commit=horizon, checkpoint_t=state_at.now or 0.0,
                          state=state_at.snapshot(), delete_seqs=dropped, records=done.records)
        steps.tick()  # written
        return report


