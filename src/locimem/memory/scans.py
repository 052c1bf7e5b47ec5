"""Scans: what perception saw at one time, checked, decided and committed.

:class:`Scans` is the scan verb of :class:`~locimem.memory.facade.ObjectMemory` in the
memory's own frame (a named map epoch's scans come through
:class:`~locimem.memory.epochs.MapEpochs` first). A scan holds the scope's write turn while
it checks, decides and appends, so on a server store another writer cannot land a commit in
between.
"""

from __future__ import annotations

import dataclasses
import logging
import math
from collections.abc import Iterable, Sequence

from locimem.errors import InvalidInput
from locimem.memory.base import Service
from locimem.model import Camera, Detection, Event, ScanResult
from locimem.perception import LiftedFrame
from locimem.tracker.decide import decide

logger = logging.getLogger("locimem")
_FUTURE_S = 86400.0  # a latest scan further ahead of the wall clock than this looks wrong
SCAN_WARNING = "scan at t=%s: %s"
"""How ``observe`` logs a scan's warnings (a caller that reports them itself may filter these
records out: their ``msg`` is this string)."""


class Scans(Service):
    """The scans of one scope in the memory's frame."""

    def scan(self, t: float, detections: Iterable[Detection], camera: Camera | None,
             source: str) -> ScanResult:
        """One scan in the memory's frame (checked time and source)."""
        live = self._live
        # the scope's write lock, caught up on other writers' commits: the checks and the
        # decision see every commit before this one
        # (a failed turn — a refused write, a lost connection — puts back the store's state)
        with live._turn():
            dets = self._check(t, detections, camera, source)
            with live._all_or_nothing():  # decide refreshes the state's loss queue
                decision = decide(live._state, live._config, t, dets, camera,
                                  recorded_at=float(live._clock()), actor=source)
                records = live._commit(decision.records, camera)
        live._own_now[source] = max(live._own_now.get(source, t), t)
        self._note_embedding_width(dets)
        events = tuple(r for r in records if isinstance(r, Event))
        for warning in decision.warnings:
            logger.warning(SCAN_WARNING, t, warning)
        return ScanResult(commit=decision.commit_id, t=t,
                          assignments=decision.assignments, events=events,
                          rejected=decision.rejected, warnings=decision.warnings)

    def _check(self, t: float, detections: Iterable[Detection], camera: Camera | None,
               source: str) -> list[Detection]:
        live = self._live
        now, own, late_s = live._state.now, live._own_now.get(source), live._late_s
        # a scan may trail the latest commit by late_s, never this writer's own previous scan
        # of the same source
        limit = max(-math.inf if now is None else now - late_s,
                    -math.inf if own is None else own)
        if t < limit:
            stuck = self._stuck_in_future(t)
            if own is not None and t < own:  # behind this writer's own scan: never
                raise InvalidInput(f"t={t} is before the latest scan (t={now}); scans must "
                                   f"not go back in time{stuck}")
            need = _late_hint((now or 0.0) - t)  # (now is set: t < limit)
            late = (f" by more than late_s={late_s} s (the store's late-scan "
                    "tolerance)" if late_s else "")
            raise InvalidInput(
                f"t={t} is before the latest scan (t={now}){late}; scans must not go back in "
                f"time. If another robot or recording wrote it (clocks that disagree, or an "
                f"overlapping recording), raise the tolerance to at least {need} s: "
                f"ObjectMemory.open(..., late_s={need}) (--late-s {need}), or ?late_s={need} "
                f"in a PostgreSQL URL{stuck}")
        if camera is not None and not isinstance(camera, Camera):
            raise InvalidInput(f"camera must be a Camera or None, got {type(camera).__name__}")
        dets = checked_list(detections)
        dim = self._embedding_width(dets)
        for i, det in enumerate(dets):
            if det.feature is not None:
                width = int(det.feature.shape[0])
                if dim is None:
                    dim = width
                elif width != dim:
                    raise InvalidInput(
                        f"detections[{i}].feature has width {width}, but this memory's "
                        f"embeddings have width {dim}"
                    )
        return dets

    def _stuck_in_future(self, t: float) -> str:
        """When the scope's latest scan is more than a day ahead of the wall clock and ``t``
        is not: how to take the scope back to before the scan a wrong clock wrote."""
        live = self._live
        now, wall, scope = live._state.now, float(live._clock()), live._scope
        if now is None or now <= wall + _FUTURE_S or t > wall + _FUTURE_S:
            return ""
        good = live.store.last_commit_at(scope, t=wall + _FUTURE_S)
        where = f"--until-commit {good}" if good else "--until-commit N"
        return (f". The latest scan (t={now}) is {(now - wall) / 86400:,.0f} days ahead of "
                "this machine's clock: if a wrong clock wrote it, start a store from the scope "
                f"as it was before it: locimem export STORE DIR --scope {scope} {where} "
                f"(the last commit at a time up to a day from now), then locimem import DIR "
                "NEW_STORE")

    def _embedding_width(self, dets: Sequence[Detection]) -> int | None:
        """The width every embedding of this scope must have: fixed by the first one recorded
        — accepted (the state knows it) or rejected (its embedding is logged too, and a scope's
        logged embeddings are one matrix when exported). Looked up in the log at most once per
        memory, and only while no accepted embedding has fixed it."""
        live = self._live
        dim = live._state.feature_dim
        if dim is not None or all(d.feature is None for d in dets):
            return dim
        if not live._logged_width_known:
            live._logged_width = live.store.logged_feature_dim(live._scope)
            live._logged_width_known = True
        return live._logged_width

    def _note_embedding_width(self, dets: Sequence[Detection]) -> None:
        """After a scan landed: the first logged embedding fixes the width (see above)."""
        live = self._live
        if live._logged_width is None and live._logged_width_known:
            width = next((d.feature.shape[0] for d in dets if d.feature is not None), None)
            live._logged_width = None if width is None else int(width)


def checked_list(detections: Iterable[Detection]) -> list[Detection]:
    """A scan's detections as a list, each a :class:`~locimem.model.Detection`."""
    if isinstance(detections, (str, bytes, Detection)) or not hasattr(detections, "__iter__"):
        raise InvalidInput(
            f"detections must be a list of Detection, got {type(detections).__name__}")
    out = list(detections)
    for i, det in enumerate(out):
        if not isinstance(det, Detection):
            raise InvalidInput(f"detections[{i}] must be a Detection, got "
                               f"{type(det).__name__}")
    return out


def by_box(n_boxes: int, lifted: LiftedFrame, result: ScanResult) -> ScanResult:
    """A lifted frame's scan result indexed by box: ``assignments[i]`` is the object box
    ``i`` became (None if it did not); a box that could not be lifted is ``rejected`` with
    ``"not lifted: "`` and the reason."""
    assignments: list[int | None] = [None] * n_boxes
    rejected = {box: f"not lifted: {why}" for box, why in lifted.skipped}
    for i, box in enumerate(lifted.indices):
        assignments[box] = result.assignments[i]
        if i in result.rejected:
            rejected[box] = result.rejected[i]
    return dataclasses.replace(result, assignments=tuple(assignments),
                               rejected=dict(sorted(rejected.items())))


def _late_hint(behind_s: float) -> str:
    """A tolerance that would take a scan ``behind_s`` late, rounded up to read well."""
    return f"{math.ceil(behind_s):g}" if behind_s >= 1 else f"{math.ceil(behind_s * 10) / 10:g}"
