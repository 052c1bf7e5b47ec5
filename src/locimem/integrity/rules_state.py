"""The state rules of :mod:`locimem.interchange.validate`.

The per-scope rules about the materialised state and what it refers to
(``confidence_range``, ``object_fields``, ``parents_exist``, ``relations_live``,
``levels_rooms``, ``cache_matches_log``, ``deltas_valid``, ``keyframes_bounded``). Each check
is a function of the :class:`~locimem.integrity.checker.Checker` and the
:class:`~locimem.integrity.checker.Scope`, named for its rule; it reports through
``c.add`` (``c.warn`` for what is odd but legitimate). The rules are documented in the
docstring of :mod:`locimem.interchange.validate`.
"""

from __future__ import annotations

import contextlib
import json
import math
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from locimem.errors import CorruptStore
from locimem.evidence.keyframes import N_KEYFRAMES
from locimem.model import HELD_MAX, Commit, Event, EventKind, ObjectState, Observation
from locimem.scene.levels import OBJECT_LEVELS, level_of
from locimem.store.sqlite import SQLiteStore
from locimem.tracker.apply import TOMB_KEY, apply
from locimem.tracker.state import MemoryState

if TYPE_CHECKING:
    from locimem.integrity.checker import Checker, Scope

DELTA_STATUSES = ("pending", "confirmed", "rejected", "applied")
_SUPPORT = ("on", "under", "in")  # relations that order levels: never furniture to an item


def confidence_range(c: Checker, s: Scope) -> None:
    rule = "confidence_range"
    for seq, oid, conf in c.q(
            "SELECT seq, object_id, confidence FROM observations WHERE scope = ? AND NOT "
            "(typeof(confidence) IN ('real', 'integer') AND confidence >= 0 AND "
            "confidence <= 1) ORDER BY seq", (s.name,)):
        whose = "rejected" if oid is None else f"of object #{oid}"
        c.add(rule, (seq,), f"observation seq {seq} ({whose}) has confidence {conf!r}")
    state = s.cache
    if state is None:
        return
    objects = [*state.objects.values(), *(t.obj for t in state.tombstones.values())]
    for obj in sorted(objects, key=lambda o: o.id):
        bad = {k: m for k, m in obj.label_mass.items()
               if not isinstance(m, (int, float)) or not math.isfinite(m) or m < 0}
        if bad:
            c.add(rule, (obj.id,), f"object #{obj.id} has label masses {bad}")
    now, cfg = state.now or 0.0, c.config
    for oid, obj in sorted(state.objects.items()):
        try:
            conf = obj.confidence(now, cfg.tau_s, cfg.tau_unseen_s)
        except (ArithmeticError, TypeError, ValueError) as exc:
            conf = f"unreadable ({exc})"
        if not isinstance(conf, float) or not 0.0 <= conf <= 1.0:
            c.add(rule, (oid,), f"object #{oid} reads confidence {conf} at t={now}")
    for (a, relation, b), conf in sorted(state.scene.relations.all().items()):
        if not 0.0 < conf <= 1.0:
            c.add(rule, (a, b), f"relation #{a} {relation} #{b} has confidence {conf}")


def object_fields(c: Checker, s: Scope) -> None:
    state = s.cache
    if state is None:
        return
    objects = [*state.objects.values(), *(t.obj for t in state.tombstones.values())]
    for obj in sorted(objects, key=lambda o: o.id):
        problems = _object_problems(obj)
        if problems:
            c.add("object_fields", (obj.id,), f"object #{obj.id}: " + "; ".join(problems))


def parents_exist(c: Checker, s: Scope) -> None:
    rule = "parents_exist"
    known = s.known
    missing: dict[int, list[str]] = {}

    def need(oid: Any, what: str) -> None:
        if isinstance(oid, int) and oid not in known:
            missing.setdefault(oid, []).append(what)
        elif oid is not None and not isinstance(oid, int):
            missing.setdefault(-1, []).append(f"{what} names {oid!r}, not an id")

    for seq, subject, target, relation in c.q(
            "SELECT seq, object_id, json_extract(data, '$.object'), "
            "json_extract(data, '$.relation') FROM events WHERE scope = ? AND "
            "kind = 'RELATION' AND json_valid(data) ORDER BY seq", (s.name,)):
        need(target, f"the relation #{subject} {relation} (event seq {seq})")
    for seq, kind, oid, into, split_from, replaced_by in c.q(
            "SELECT seq, kind, object_id, json_extract(data, '$.into'), "
            "json_extract(data, '$.split_from'), json_extract(data, '$.replaced_by') "
            "FROM events WHERE scope = ? AND kind IN ('SPLIT', 'APPEARED', 'LOST', "
            "'EXPIRED') AND json_valid(data) AND (json_extract(data, '$.into') IS NOT NULL "
            "OR json_extract(data, '$.split_from') IS NOT NULL OR "
            "json_extract(data, '$.replaced_by') IS NOT NULL) ORDER BY seq", (s.name,)):
        for value, key in ((into, "into"), (split_from, "split_from"),
                           (replaced_by, "replaced_by")):
            need(value, f"{kind} of #{oid} (seq {seq}) {key}")
    for table, column, what in (("prior_map", "id", "a prior-map entry"),
                                ("deltas", "object_id", "a delta"),
                                ("keyframes", "object_id", "keyframes")):
        for (oid,) in c.q(f"SELECT {column} FROM {table} WHERE scope = ? ORDER BY 1",
                             (s.name,)):
            need(oid, what)
    if s.cache is not None:
        for oid, obj in sorted(s.cache.objects.items()):
            for gone in obj.merged_from:
                if gone not in s.absorbed:
                    missing.setdefault(gone, []).append(
                        f"the merged_from of #{oid} (no MERGED event absorbed it)")
    for oid in sorted(missing):
        whats = missing[oid]
        shown = "; ".join(whats[:5]) + (f"; … {len(whats) - 5} more" if len(whats) > 5
                                        else "")
        if oid == -1:
            c.add(rule, (), shown)
        else:
            c.add(rule, (oid,), f"object #{oid} does not exist, but is named by {shown}")


def relations_live(c: Checker, s: Scope) -> None:
    rule = "relations_live"
    state = s.cache
    if state is None:
        return

    def dead(oid: int) -> str | None:
        obj = state.objects.get(oid)
        if obj is None:
            return "forgotten" if oid in state.tombstones else "not a live object"
        if oid in state.tombstones:
            return "forgotten"
        if not obj.promoted:
            return "not published"
        return "lost" if obj.lost else None

    for (a, relation, b), _ in sorted(state.scene.relations.all().items()):
        why = [f"#{i} is {w}" for i in (a, b) if (w := dead(i)) is not None]
        if why:
            c.add(rule, (a, b), f"relation #{a} {relation} #{b}: " + ", ".join(why))
    for a, relation, b in s.standing:
        why = [f"#{i} is {w}" for i in (a, b) if (w := dead(i)) is not None]
        if why:
            c.add(rule, (a, b), f"the RELATION events leave #{a} {relation} #{b} "
                                   "standing, but " + ", ".join(why))


def levels_rooms(c: Checker, s: Scope) -> None:
    state = s.cache
    if state is None:
        return
    objects = state.objects
    derived = sorted(state.scene.relations.all())
    for where, relations in (("", derived), ("the RELATION events say ", s.standing)):
        for a, relation, b in relations:
            if relation in _SUPPORT and a in objects and b in objects \
                    and level_of(objects[a]) == "furniture" \
                    and level_of(objects[b]) == "item":
                c.add("levels_rooms", (a, b),
                         f"{where}furniture #{a} {objects[a].label!r} is {relation} item "
                         f"#{b} {objects[b].label!r}")
    rooms = state.scene.rooms
    if not rooms.names():
        return
    for oid, obj in sorted(objects.items()):
        if not obj.promoted or obj.lost or oid in state.tombstones:
            continue
        level = level_of(obj)
        if level in OBJECT_LEVELS and rooms.assign(obj.center, obj.size) is None:
            x, y, z = obj.center
            c.warn("levels_rooms", (oid,),
                      f"{level} #{oid} {obj.label!r} at ({x:.2f}, {y:.2f}, {z:.2f}) lies "
                      "outside every room")


def _cause(exc: BaseException) -> str:
    """What went wrong, as ``Type: message`` — of the cause, for a CorruptStore the store
    made of it (the report says where already; the cause is what a reader needs)."""
    if isinstance(exc, CorruptStore) and exc.__cause__ is not None:
        exc = exc.__cause__
    return f"{type(exc).__name__}: {exc}"


def cache_matches_log(c: Checker, s: Scope) -> None:
    rule = "cache_matches_log"
    try:
        cache = (s.cache if s.cache is not None else c.load(s.name, from_log=False)).snapshot()
    except Exception as exc:
        c.add(rule, (), f"the cache does not load: {_cause(exc)}")
        return
    try:
        log = c.load(s.name, from_log=True).snapshot()
    except Exception as exc:
        record = _failing_record(c.store, s.name, c.config.lost_after_s)
        ids, where = _record_ids(record), _record_text(record)
        c.add(rule, ids, f"the log does not replay{where}: {_cause(exc)}")
        return
    for section, what in (("objects", "object"), ("tombstones", "tombstone"),
                          ("prior", "prior-map entry"), ("keyframes", "keyframes of")):
        for oid, text in _differences(cache[section], log[section]):
            c.add(rule, (int(oid),), f"{what} #{oid} {text}")
    for did, text in _differences(cache["deltas"], log["deltas"]):
        obj = (cache["deltas"].get(did) or log["deltas"].get(did) or {}).get("object")
        c.add(rule, (obj,) if isinstance(obj, int) else (), f"delta {did} {text}")
    for key, text in _differences(cache["rejections"], log["rejections"]):
        c.add(rule, (), f"rejection key {key!r} {text}")
    for section in ("rooms", "now", "feature_dim"):
        if cache[section] != log[section]:
            c.add(rule, (), f"{section}: the cache holds {_short(cache[section])}, "
                               f"replay {_short(log[section])}")


def deltas_valid(c: Checker, s: Scope) -> None:
    problems: dict[int, list[str]] = {}
    for did, oid, status, data in c.q(
            "SELECT id, object_id, status, data FROM deltas WHERE scope = ?", (s.name,)):
        found = problems.setdefault(did, [])
        if status not in DELTA_STATUSES:
            found.append(f"status {status!r}")
        try:
            d = json.loads(data)
        except ValueError:
            found.append("unreadable data")
            continue
        if not isinstance(d, dict):
            found.append("data is not an object")
            continue
        for key, column in (("id", did), ("object", oid), ("status", status)):
            if d.get(key) != column:
                found.append(f"data {key} {d.get(key)!r} but column {column!r}")
    for seq, data in c.q("SELECT seq, data FROM events WHERE scope = ? AND "
                            "kind = 'DELTA' ORDER BY seq", (s.name,)):
        with contextlib.suppress(ValueError, AttributeError):
            d = json.loads(data)
            if d.get("status") not in DELTA_STATUSES and isinstance(d.get("id"), int):
                problems.setdefault(d["id"], []).append(
                    f"DELTA event seq {seq} sets status {d.get('status')!r}")
    for did in sorted(problems):
        if problems[did]:
            c.add("deltas_valid", (did,), f"delta {did}: " + "; ".join(problems[did])
                     + f" (statuses are {', '.join(DELTA_STATUSES)})")


def keyframes_bounded(c: Checker, s: Scope) -> None:
    problems: dict[int, list[str]] = {}
    for oid, data in c.q("SELECT object_id, data FROM keyframes WHERE scope = ?",
                            (s.name,)):
        kept = _loads(data)
        if not isinstance(kept, list):
            problems.setdefault(oid, []).append("the kept frames are not a list")
        elif len(kept) > N_KEYFRAMES:
            problems.setdefault(oid, []).append(f"{len(kept)} kept frames")
    for seq, oid, data in c.q("SELECT seq, object_id, data FROM events WHERE scope = ? "
                                 "AND kind = 'KEYFRAME' ORDER BY seq", (s.name,)):
        kept = (_loads(data) or {}).get("kept") if data else None
        if isinstance(kept, list) and len(kept) > N_KEYFRAMES:
            problems.setdefault(oid, []).append(
                f"KEYFRAME event seq {seq} keeps {len(kept)} frames")
    for oid in sorted(problems):
        c.add("keyframes_bounded", (oid,), f"object #{oid}: " + "; ".join(problems[oid])
                 + f" (at most {N_KEYFRAMES})")


# -- helpers ----------------------------------------------------------------------------------
def _finite(values: Any) -> bool:
    try:
        return all(math.isfinite(v) for v in values)
    except TypeError:
        return False


def _object_problems(obj: ObjectState) -> list[str]:
    problems = []
    if not isinstance(obj.label, str) or not obj.label.strip():
        problems.append(f"label {obj.label!r}")
    for name in ("center", "place"):
        if not _finite(getattr(obj, name)):
            problems.append(f"{name} {getattr(obj, name)} is not finite")
    for name in ("size", "place_size"):
        value = getattr(obj, name)
        if not _finite(value) or min(value) < 0:
            problems.append(f"{name} {value} is not finite and >= 0")
    if not _finite((obj.first_seen, obj.last_seen)) or obj.first_seen > obj.last_seen:
        problems.append(f"first_seen {obj.first_seen} after last_seen {obj.last_seen}")
    if obj.lost != (obj.lost_at is not None):
        problems.append(f"lost={obj.lost} but lost_at={obj.lost_at}")
    for name in ("n_detections", "n_features", "n_missed", "n_looked_seen", "n_looked_missed"):
        if getattr(obj, name) < 0:
            problems.append(f"{name}={getattr(obj, name)}")
    if not _finite((obj.absence_s,)) or obj.absence_s < 0:
        problems.append(f"absence_s={obj.absence_s}")
    if not _finite((obj.pos_info,)) or obj.pos_info < 0:
        problems.append(f"pos_info={obj.pos_info}")
    if len(obj.held) > HELD_MAX:
        problems.append(f"{len(obj.held)} held sightings (at most {HELD_MAX})")
    return problems


def _differences(cache: dict[Any, Any], log: dict[Any, Any]) -> list[tuple[Any, str]]:
    out = []
    for key in sorted(set(cache) | set(log), key=lambda k: (str(type(k)), k)):
        if key not in log:
            out.append((key, "is in the cache but not in the replayed log"))
        elif key not in cache:
            out.append((key, "is in the replayed log but not in the cache"))
        elif cache[key] != log[key]:
            a, b = cache[key], log[key]
            if isinstance(a, dict) and isinstance(b, dict):
                fields = sorted(k for k in set(a) | set(b) if a.get(k) != b.get(k))
                detail = "; ".join(f"{f}: cache {_short(a.get(f))}, log {_short(b.get(f))}"
                                   for f in fields[:4])
                out.append((key, f"differs from replay in {', '.join(fields)} ({detail})"))
            else:
                out.append((key, f"differs from replay (cache {_short(a)}, log {_short(b)})"))
    return out


def _short(value: Any, limit: int = 80) -> str:
    text = repr(value)
    return text if len(text) <= limit else text[:limit - 1] + "…"


def _loads(data: Any) -> Any:
    try:
        return json.loads(data)
    except (TypeError, ValueError):
        return None


def _failing_record(store: SQLiteStore, scope: str, lost_after_s: float
                    ) -> Commit | Observation | Event | None:
    """The record the replay of ``scope`` fails at (None if it fails elsewhere)."""
    try:
        checkpoint = store.latest_checkpoint(scope)
        state = MemoryState() if checkpoint is None else MemoryState.from_snapshot(
            checkpoint[1], 1.0)
        after = 0 if checkpoint is None else checkpoint[0]
        records = store.iter_log(scope, after_commit=after)
    except Exception:
        return None
    while True:
        try:
            record = next(records)
        except StopIteration:
            return None
        except Exception:  # a row that does not decode
            return None
        try:
            apply(state, record, lost_after_s)
        except Exception:
            return record


def _record_ids(record: Commit | Observation | Event | None) -> tuple[int, ...]:
    if isinstance(record, Observation):
        if record.object_id is not None:
            return (record.object_id,)
        if record.key is not None and record.key.startswith(TOMB_KEY):
            with contextlib.suppress(ValueError):
                return (int(record.key[len(TOMB_KEY):]),)
        return ()
    if isinstance(record, Event):
        ids = [record.object_id] if record.object_id else []
        absorbed = record.data.get("absorbed") if isinstance(record.data, dict) else None
        if record.kind is EventKind.MERGED and isinstance(absorbed, int):
            ids.append(absorbed)
        return tuple(ids)
    if isinstance(record, Commit):
        return tuple(record.missed)
    return ()


def _record_text(record: Commit | Observation | Event | None) -> str:
    if isinstance(record, Observation):
        return f" at observation seq {record.seq}"
    if isinstance(record, Event):
        return f" at {record.kind.value} event seq {record.seq}"
    if isinstance(record, Commit):
        return f" at commit {record.id}"
    return ""


CHECKS: tuple[Callable[..., None], ...] = (
    confidence_range, object_fields, parents_exist, relations_live, levels_rooms,
    cache_matches_log, deltas_valid, keyframes_bounded)
