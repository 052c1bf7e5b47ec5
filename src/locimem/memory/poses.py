"""Pose corrections: a SLAM loop closure moves what the robot saw while its poses were wrong.

:meth:`PoseCorrections.correct_poses` takes the stretches a pose graph corrected, re-anchors
every object whose sightings were made in them (:mod:`locimem.tracker.reanchor`) and merges
the duplicates the wrong poses made, in one correction commit.
"""

from __future__ import annotations

import itertools
from collections.abc import Iterable, Sequence
from typing import Any

from locimem.check import check_text, check_valid_time
from locimem.errors import InvalidInput
from locimem.frames import check_transform, compose, invert
from locimem.memory.base import Service, in_turn
from locimem.model import Event, EventKind, Observation
from locimem.tracker.reanchor import Stretch, Stretches, decide_reanchor

MAX_CORRECTIONS = 100_000
"""The most stretches one ``correct_poses`` call takes (a pose graph's keyframes, say one a
second for a day)."""


class PoseCorrections(Service):
    """The pose-correction verb of :class:`~locimem.memory.facade.ObjectMemory`."""

    @in_turn
    def correct_poses(self, corrections: Iterable[Sequence[Any]], *,
                      map_epoch: str | None = None, actor: str = "slam",
                      reason: str | None = None) -> list[Event]:
        """Apply a pose-graph correction (a loop closure) to what was seen meanwhile.

        ``corrections`` is a list of ``(t_from, t_to, transform)``: every scan made at a time
        in ``[t_from, t_to]`` had a camera pose off by ``transform``, the correction of the
        map frame (its corrected pose is ``transform · pose``, so a sighting at ``x`` belongs
        at ``transform · x``). ``transform`` is a 4x4 rigid matrix or ``(translation_xyz,
        quaternion_wxyz)`` (:func:`locimem.frames.check_transform`). Stretches must not
        overlap; a drift that grows along a walk is many short stretches, each with the
        correction of its moment. ``map_epoch`` names the frame the transforms are in (a
        loop closure of a later SLAM session, in that session's frame): an aligned epoch's
        correction is turned into the memory's frame; a provisional one's is refused (its
        frame is not tied to the memory's yet: align it first).

        Every object with sightings in a stretch is re-anchored: its centre moves by as much
        as the correction moves the running mean of its sightings (a REANCHORED event), and
        its settled place too when those sightings settled it; objects seen only outside
        the stretches do not move. Same-label identities that now overlap and were never
        seen together — the duplicates the drift made — are MERGED into the older. One
        correction commit with ``actor`` and ``reason`` (see :meth:`audit`), at the latest
        scan's time: ``as_of`` an earlier time reads what was believed before. Returns its
        events (empty: nothing was seen in the stretches; nothing is written then).
        """
        self._live._writable("correct_poses")
        stretches = Stretches(self._in_memory_frame(_check_corrections(corrections),
                                                    map_epoch))
        actor = check_text(actor, "actor")
        reason = None if reason is None else check_text(reason, "reason", max_chars=1000)
        chains = self._chains(stretches)
        state = self._live._state
        records = decide_reanchor(state, self._live._config, stretches, chains,
                                  float(state.now or 0.0), actor, reason,
                                  float(self._live._clock()))
        if len(records) == 1:  # the commit alone: nothing moved
            return []
        done = self._live._commit(records)
        return [r for r in done if isinstance(r, Event)
                and r.kind in (EventKind.REANCHORED, EventKind.MERGED)]

    def _in_memory_frame(self, stretches: list[Stretch], map_epoch: str | None
                         ) -> list[Stretch]:
        """Corrections given in map epoch ``map_epoch``'s frame, in the memory's."""
        if map_epoch is None:
            return stretches
        from locimem.memory.epochs import check_epoch

        epochs = self._live._state.epochs
        epoch = epochs.get(check_epoch(map_epoch))
        if epoch is None:
            known = ", ".join(repr(e) for e in sorted(epochs)) or "none"
            raise InvalidInput(f"no map epoch {map_epoch!r} in scope {self._live._scope!r} (its "
                               f"epochs: {known})")
        if epoch.status == "base":
            return stretches
        if epoch.transform is None:
            raise InvalidInput(f"map epoch {map_epoch!r} is provisional: its frame is not tied "
                               "to the memory's yet; correct its poses once it is aligned "
                               "(by the memory, or by align_epoch)")
        into = check_transform(epoch.transform)
        back = invert(into)
        return [(a, b, compose(into, compose(m, back))) for a, b, m in stretches]

    def _chains(self, stretches: Stretches) -> dict[int, list[Observation]]:
        """Each live object sighted in a stretch -> its accepted sightings (its absorbed
        identities' too), by seq."""
        store, scope, state = self._live.store, self._live._scope, self._live._state
        t_from, t_to = stretches.span
        # the commits that can hold a sighting in the span (a late scan trails by late_s)
        after = store.last_commit_at(scope, t=t_from - self._live._late_s - 1e-9) or 0
        until = store.last_commit_at(scope, t=t_to + self._live._late_s)
        if until is None or until <= after:
            return {}
        survivor = {oid: oid for oid in state.objects}
        for oid, obj in state.objects.items():
            for gone in obj.merged_from:
                survivor[gone] = oid
        sighted = {survivor[m.object_id] for m in store.observation_meta(scope, after, until)
                   if m.object_id in survivor and stretches.at(m.t) is not None}
        chains: dict[int, list[Observation]] = {}
        for oid in sorted(sighted):
            chain: list[Observation] = []
            for member in (oid, *state.objects[oid].merged_from):
                chain.extend(store.observations(scope, object_id=member, rejected=False))
            chain.sort(key=lambda o: o.seq)
            chains[oid] = chain
        return chains


def _check_corrections(corrections: Any) -> list[Stretch]:
    if isinstance(corrections, (str, bytes)) or not hasattr(corrections, "__iter__"):
        raise InvalidInput("corrections must be a list of (t_from, t_to, transform)")
    out: list[Stretch] = []
    for i, item in enumerate(corrections):
        if len(out) >= MAX_CORRECTIONS:
            raise InvalidInput(f"at most {MAX_CORRECTIONS} corrections in one call")
        if isinstance(item, (str, bytes)) or not hasattr(item, "__len__") or len(item) != 3:
            raise InvalidInput(f"corrections[{i}] must be (t_from, t_to, transform)")
        t_from = check_valid_time(item[0], f"corrections[{i}] t_from")
        t_to = check_valid_time(item[1], f"corrections[{i}] t_to")
        if t_to < t_from:
            raise InvalidInput(f"corrections[{i}]: t_to={t_to} is before t_from={t_from}")
        try:
            transform = check_transform(item[2])
        except InvalidInput as exc:
            raise InvalidInput(f"corrections[{i}]: {exc}") from None
        out.append((t_from, t_to, transform))
    if not out:
        raise InvalidInput("corrections is empty: give at least one (t_from, t_to, transform)")
    out.sort(key=lambda c: c[0])
    for (a0, a1, _), (b0, _b1, _) in itertools.pairwise(out):
        if b0 <= a1:
            raise InvalidInput(f"corrections overlap: [{a0}, {a1}] and one from {b0}; a "
                               "moment has one correction")
    return out
