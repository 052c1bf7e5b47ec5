"""How records and object states become SQLite rows, and back.

Every column list, every insert statement and every row codec of the SQLite backend lives
here, so a row has one definition. JSON columns come in two spellings: :func:`encode_json`
(keys sorted: canonical, for values compared or checksummed) and :func:`encode_json_ordered`
(keys as given, faster: label masses, the hot columns written every scan). Embeddings are raw
``float32`` (observations) or ``float64`` (objects) bytes; checkpoints are zlib-compressed
canonical JSON.
"""

from __future__ import annotations

import itertools
import json
import zlib
from collections.abc import Callable, Iterable, Iterator, Sequence
from operator import itemgetter
from typing import Any, cast

import numpy as np

from locimem.jsontext import one_shot
from locimem.model import (
    NO_IDS,
    Commit,
    Event,
    EventKind,
    ObjectState,
    Observation,
    Record,
)
from locimem.model.rows import RowChanges

__all__ = [
    "COMMIT_COLUMNS", "EVENT_COLUMNS", "INSERT_COMMIT", "INSERT_EVENT", "INSERT_OBSERVATION",
    "MAX_ID", "OBJECT_COLUMNS", "OBSERVATION_COLUMNS", "UPSERT_OBJECT", "commit_from_row",
    "decode_checkpoint", "encode_checkpoint", "encode_json", "encode_json_ordered",
    "event_from_row", "events_from_rows", "object_from_row", "object_row", "objects_from_rows",
    "observation_from_row",
    "observation_row", "record_rows", "state_rows",
]

MAX_ID = 2**62
"""An id above every real one: the open upper bound of a commit range."""

OBSERVATION_COLUMNS = (
    "seq, commit_id, scope, t, idx, object_id, label, confidence, cx, cy, cz, sx, sy, sz, "
    "weight, tier, rejected, track_id, orientation, feature, key"
)
EVENT_COLUMNS = "seq, commit_id, scope, t, kind, object_id, label, data"
COMMIT_COLUMNS = ("id, scope, kind, t, recorded_at, actor, reason, n_detections, camera, "
                  "missed, miss_credit, together, miss_credits")
OBJECT_COLUMNS = (
    "id, scope, label, cx, cy, cz, sx, sy, sz, px, py, pz, first_seen, last_seen, "
    "n_detections, promoted, lost, lost_at, track_id, orientation, label_mass, feature, "
    "n_features, pinned_label, attributes, n_missed, place_sx, place_sy, place_sz, place_t, "
    "seen_camera, absence_s, held, together, merged_from, source, label_by, belief"
)

INSERT_OBSERVATION = (f"INSERT INTO observations ({OBSERVATION_COLUMNS}) "
                      f"VALUES ({', '.join('?' * 21)})")
INSERT_EVENT = f"INSERT INTO events ({EVENT_COLUMNS}) VALUES ({', '.join('?' * 8)})"
INSERT_COMMIT = f"INSERT INTO commits ({COMMIT_COLUMNS}) VALUES ({', '.join('?' * 13)})"
UPSERT_OBJECT = (
    f"INSERT INTO objects ({OBJECT_COLUMNS}) VALUES ({', '.join('?' * 38)}) "
    "ON CONFLICT (id) DO UPDATE SET "
    + ", ".join(f"{c} = excluded.{c}" for c in OBJECT_COLUMNS.split(", ")[1:])
)
"""Insert one object row (:func:`object_row`), or replace every column of the one with its id."""

UPDATE_MISSED = "UPDATE objects SET n_missed = ?, absence_s = ? WHERE id = ?"
"""An object looked at and missed, nothing else (``RowChanges.missed``): two columns change."""

encode_json = one_shot(json.JSONEncoder(separators=(",", ":"), sort_keys=True,
                                       allow_nan=False))
"""Canonical compact JSON (keys sorted, no NaN): the text of every JSON column but the hot
ones."""
encode_json_ordered = one_shot(json.JSONEncoder(separators=(",", ":"), allow_nan=False))
"""Compact JSON with keys in the order given (faster; label masses, held sightings, miss
credits)."""


def encode_checkpoint(state: dict[str, Any]) -> bytes:
    """A checkpoint's state as stored: canonical JSON, zlib level 6."""
    return zlib.compress(encode_json(state).encode(), 6)


def decode_checkpoint(blob: bytes) -> dict[str, Any]:
    return json.loads(zlib.decompress(blob))


# -- records ---------------------------------------------------------------------------------
def record_rows(scope: str, records: Sequence[Record]) -> tuple[list, list, list]:
    """The (commit, observation, event) rows of ``records``, in the order given."""
    commits, observations, events = [], [], []
    for r in records:
        if isinstance(r, Observation):
            observations.append(observation_row(scope, r))
        elif isinstance(r, Event):
            events.append((r.seq, r.commit, scope, r.t, r.kind.value, r.object_id, r.label,
                           encode_json(r.data)))
        else:
            commits.append((r.id, scope, r.kind, r.t, r.recorded_at, r.actor, r.reason,
                            r.n_detections, None if r.camera is None else encode_json(r.camera),
                            encode_json(list(r.missed)) if r.missed else None,
                            None,
                            encode_json([list(p) for p in r.together]) if r.together else None,
                            encode_json_ordered(list(r.miss_credits)) if r.missed else None))
    return commits, observations, events


def observation_row(scope: str, o: Observation) -> tuple[Any, ...]:
    return (
        o.seq, o.commit, scope, o.t, o.index, o.object_id, o.label, o.confidence,
        *o.center, *o.size, o.weight, o.tier, o.rejected, o.track_id,
        None if o.orientation is None else encode_json(list(o.orientation)),
        None if o.feature is None else o.feature.astype(np.float32).tobytes(),
        o.key,
    )


def observation_from_row(row: Sequence[Any]) -> Observation:
    # unpacked at once and passed by position, in the dataclass's field order (a replay
    # decodes a million of these)
    (seq, commit, _, t, index, oid, label, confidence, cx, cy, cz, sx, sy, sz, weight, tier,
     rejected, track_id, orientation, feature, key) = row
    return Observation(
        seq, commit, t, index, label, confidence, (cx, cy, cz), (sx, sy, sz), oid, tier,
        weight, rejected, track_id,
        None if orientation is None else tuple(json.loads(orientation)),
        None if feature is None else _frombuffer(feature, _F32), key,
    )


_frombuffer, _F32 = np.frombuffer, np.dtype(np.float32)  # a dtype, by position: the cheapest


def event_from_row(row: Sequence[Any]) -> Event:
    # positional, in the dataclass's field order; the kind by its value from a dict (the
    # member ``EventKind(value)`` gives, without the enum's call), an unknown one by the call
    # (the ValueError it raises)
    kind = _EVENT_KINDS.get(row[4])
    return Event(row[0], row[1], row[3], EventKind(row[4]) if kind is None else kind, row[5],
                 row[6], _loads(row[7]))


_EVENT_KINDS: dict[Any, EventKind] = {kind.value: kind for kind in EventKind}
_loads = json.loads


EVENT_PAGE = 256
"""Event rows :func:`replay_order` decodes at a time (:func:`events_from_rows`)."""


def events_from_rows(rows: Sequence[Sequence[Any]]) -> Iterable[Event]:
    """:func:`event_from_row` of every row, equal event for event: the ``data`` texts parsed
    in one ``json.loads`` of them joined into an array (each value as its own text gives
    it). A page holding a text that is not one JSON value alone, or a kind that is not an
    :class:`EventKind`, is decoded lazily row by row, so a damaged row raises where it
    stands in the log, as it did read one at a time."""
    kinds = [_EVENT_KINDS.get(row[4]) for row in rows]
    try:
        data = None if None in kinds else _loads("[" + ",".join([r[7] for r in rows]) + "]")
    except (TypeError, ValueError):
        data = None
    if data is None or len(data) != len(rows):
        return map(event_from_row, rows)
    new, known = Event, cast("list[EventKind]", kinds)  # no None among them: checked above
    return [new(row[0], row[1], row[3], kind, row[5], row[6], value)
            for row, kind, value in zip(rows, known, data, strict=True)]


def _event_pages(rows: Iterable[Sequence[Any]]) -> Iterator[Event]:
    it = iter(rows)
    return itertools.chain.from_iterable(map(events_from_rows, iter(
        lambda: list(itertools.islice(it, EVENT_PAGE)), [])))


def commit_from_row(row: Sequence[Any]) -> Commit:
    missed = () if row[9] is None else tuple(json.loads(row[9]))
    if row[12] is not None:
        credits = tuple(json.loads(row[12]))
    else:  # a version-2 commit: one credit for every missed object
        credits = (0.0 if row[10] is None else row[10],) * len(missed)
    return Commit(id=row[0], kind=row[2], t=row[3], recorded_at=row[4], actor=row[5],
                  reason=row[6], n_detections=row[7],
                  camera=None if row[8] is None else json.loads(row[8]),
                  missed=missed, miss_credits=credits,
                  together=() if row[11] is None else tuple(
                      (a, b) for a, b in json.loads(row[11])))


def replay_order(commit_rows: Iterable[Sequence[Any]],
                 observation_rows: Iterable[Sequence[Any]],
                 event_rows: Iterable[Sequence[Any]], *,
                 observation: Callable[[Sequence[Any]], Observation] | None = None
                 ) -> Iterator[Record]:
    """The records of commit rows (by id), observation rows and event rows (each by seq) in
    replay order: by ``(commit id, commit first, seq)``, an observation before an event on a
    tie — the order a ``heapq.merge`` of the three on that key gives, one comparison or two a
    record instead of a key tuple and a heap step. ``observation`` decodes an observation row
    (default: this codec's :func:`observation_from_row`; a backend with other column types
    passes its own).

    Each row is decoded as it comes (not a page ahead: a replay then applies a record while
    its row is still in the cache, and its objects' memory is reused by the next). Once an
    observation comes next, the ones after it follow in a tight loop for as long as they
    stay before the next commit and the next event — the bounds read once, not per row.
    Events are decoded :data:`EVENT_PAGE` at a time (:func:`events_from_rows`: their JSON
    parsed as one array), each yielded when its turn comes."""
    decode = observation or observation_from_row
    commits, observations = iter(commit_rows), iter(observation_rows)
    events = _event_pages(event_rows)
    c, o, e = next(commits, None), next(observations, None), next(events, None)
    while True:
        if o is not None and (e is None or o[1] < e.commit or (o[1] == e.commit
                                                                and o[0] <= e.seq)):
            if c is not None and c[0] <= o[1]:
                yield commit_from_row(c)
                c = next(commits, None)
                continue
            # o is next, and so is every observation after it before c and e
            c_id = MAX_ID if c is None else c[0]
            e_commit, e_seq = (MAX_ID, MAX_ID) if e is None else (e.commit, e.seq)
            while True:
                yield decode(o)
                o = next(observations, None)
                if o is None:
                    break
                oc = o[1]
                if oc >= c_id or oc > e_commit or (oc == e_commit and o[0] > e_seq):
                    break
        elif e is not None:
            if c is not None and c[0] <= e.commit:
                yield commit_from_row(c)
                c = next(commits, None)
            else:
                yield e
                e = next(events, None)
        elif c is not None:
            yield commit_from_row(c)
            c = next(commits, None)
        else:
            return


def state_rows(scope: str, delta: RowChanges) -> dict[str, list[tuple[Any, ...]]]:
    """The parameter rows of a commit's kept state beside its objects, by table, in each
    table's column order — both backends write these, each with its own upsert."""
    return {
        "tombstones": [(i, scope, tomb.forgotten_at, encode_json(tomb.to_dict()))
                       for i, tomb in delta.tombstones.items()],
        "deltas": [(scope, did, d["object"], d["status"], encode_json(d))
                   for did, d in delta.deltas.items()],
        "keyframes": [(scope, oid, encode_json(kept)) for oid, kept in delta.keyframes.items()],
        "rejection_keys": [(scope, key, r.reason, r.count, r.first_seq, r.last_seq, r.last_t)
                           for key, r in delta.rejections.items()],
    }


# -- object states ---------------------------------------------------------------------------
def object_row(scope: str, o: ObjectState) -> tuple[Any, ...]:
    """The ``objects`` row of ``o``, in :data:`OBJECT_COLUMNS` order."""
    return (
        o.id, scope, o.label, *o.center, *o.size, *o.place, o.first_seen, o.last_seen,
        o.n_detections, o.promoted, o.lost, o.lost_at, o.track_id,
        None if o.orientation is None else encode_json(list(o.orientation)),
        encode_json_ordered(o.label_mass),
        None if o.feature is None else o.feature.astype(np.float64).tobytes(),
        o.n_features, o.pinned_label, encode_json(o.attributes), o.n_missed, *o.place_size,
        o.place_t, o.seen_camera, o.absence_s,
        encode_json_ordered(o.held) if o.held else None,
        encode_json_ordered(sorted(o.together)) if o.together else None,
        encode_json_ordered(o.merged_from) if o.merged_from else None,
        o.source, o.label_by, _belief_json(o),
    )


def _belief_json(o: ObjectState) -> str | None:
    if not (o.n_looked_seen or o.n_looked_missed or o.pos_info or o.moved_from is not None):
        return None
    belief: dict[str, Any] = {"info": o.pos_info, "looked": o.n_looked_seen,
                              "unseen": o.n_looked_missed}
    if o.moved_from is not None:  # a move told by looks alone (absent in most rows)
        belief["from"] = list(o.moved_from)
    return encode_json(belief)


def object_from_row(row: Sequence[Any]) -> ObjectState:
    return ObjectState(
        id=row[0], label=row[2], center=(row[3], row[4], row[5]), size=(row[6], row[7], row[8]),
        place=(row[9], row[10], row[11]), first_seen=row[12], last_seen=row[13],
        n_detections=row[14], promoted=bool(row[15]), lost=bool(row[16]), lost_at=row[17],
        track_id=row[18], orientation=None if row[19] is None else tuple(json.loads(row[19])),
        label_mass=json.loads(row[20]),
        feature=None if row[21] is None else np.frombuffer(row[21], dtype=np.float64).copy(),
        n_features=row[22], pinned_label=row[23], attributes=json.loads(row[24]),
        n_missed=row[25], place_size=(row[26], row[27], row[28]), place_t=row[29],
        seen_camera=bool(row[30]), absence_s=row[31],
        held=() if row[32] is None else tuple(tuple(h) for h in json.loads(row[32])),
        together=frozenset(json.loads(row[33]) if row[33] is not None else ()) or NO_IDS,
        merged_from=() if row[34] is None else tuple(json.loads(row[34])),
        source=row[35], label_by=row[36],
        **({} if row[37] is None else _belief_fields(json.loads(row[37]))),
    )


def _json_column(rows: Sequence[Sequence[Any]], i: int, empty: str | None = None
                 ) -> Iterable[Any]:
    """Column ``i`` of ``rows`` decoded, None kept: one ``json.loads`` over all the column's
    texts joined into an array (each value as ``json.loads`` of its own text gives it); the
    text ``empty`` (``"{}"``), when given, decodes to a new empty dict without the parser.
    Every value None (or ``empty``: the caller makes the default) gives ``repeat(None)``."""
    texts = [row[i] for row in rows]
    present = [t for t in texts if t is not None and t != empty]
    if not present:
        return itertools.repeat(None)
    values = json.loads("[" + ",".join(present) + "]")
    if len(present) == len(texts):
        return values
    it = iter(values)
    return [None if t is None else {} if t == empty else next(it) for t in texts]


_INDEXED_NUMBERS = {i: OBJECT_COLUMNS.split(", ")[i]
                    for i in (3, 4, 5, 9, 10, 11, 13, 26, 27, 28, 29)}
"""The columns the indexes read (centre, place, last sighting, settled size and time) by
position: checked on open, since the indexes that would trip over them are built later."""


def _check_numbers(rows: Sequence[Sequence[Any]]) -> None:
    """ValueError if a column the indexes read holds anything but numbers (a damaged row):
    one C-level ``sum`` a column, as an open used to find it building the indexes."""
    for i, name in _INDEXED_NUMBERS.items():
        try:
            sum(map(itemgetter(i), rows))
        except TypeError:
            raise ValueError(f"objects.{name} holds a value that is not a number") from None


def objects_from_rows(rows: Sequence[Sequence[Any]]) -> list[ObjectState]:
    """:func:`object_from_row` of every row, equal object for object, decoded column by
    column (an open reads every row): each JSON column in one pass, each object made with
    positional fields from the row unpacked."""
    if not rows:
        return []
    _check_numbers(rows)
    columns = zip(rows, _json_column(rows, 20), _json_column(rows, 19),
                  _json_column(rows, 24, "{}"), _json_column(rows, 32), _json_column(rows, 33),
                  _json_column(rows, 34), _json_column(rows, 37),
                  strict=False)  # rows sets the length: an all-None column is repeat(None)
    frombuffer, f64, new = np.frombuffer, np.float64, ObjectState
    return [
        new(  # positional, in the dataclass's field order
            oid, label, (cx, cy, cz), (sx, sy, sz), (px, py, pz), first_seen, last_seen,
            {} if mass is None else mass, n_detections, bool(promoted), bool(lost), lost_at,
            track_id, None if orientation is None else tuple(orientation),
            None if feature is None else frombuffer(feature, dtype=f64).copy(),
            n_features, pinned_label, {} if attributes is None else attributes, n_missed,
            (psx, psy, psz), place_t, bool(seen_camera), absence_s,
            () if held is None else tuple(map(tuple, held)),
            frozenset(together) if together else NO_IDS,
            () if merged is None else tuple(merged), source, label_by,
            0 if belief is None else belief["looked"],
            0 if belief is None else belief["unseen"],
            0.0 if belief is None else belief["info"],
            None if belief is None or belief.get("from") is None else tuple(belief["from"]),
        )
        for ((oid, _, label, cx, cy, cz, sx, sy, sz, px, py, pz, first_seen, last_seen,
              n_detections, promoted, lost, lost_at, track_id, _, _, feature, n_features,
              pinned_label, _, n_missed, psx, psy, psz, place_t, seen_camera, absence_s,
              _, _, _, source, label_by, _),
             mass, orientation, attributes, held, together, merged, belief) in columns
    ]


def _belief_fields(belief: dict[str, Any]) -> dict[str, Any]:
    moved_from = belief.get("from")
    return {"n_looked_seen": belief["looked"], "n_looked_missed": belief["unseen"],
            "pos_info": belief["info"],
            "moved_from": None if moved_from is None else tuple(moved_from)}
