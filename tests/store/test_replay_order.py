"""``replay_order`` gives the records in exactly the order a ``heapq.merge`` of the three
streams on ``(commit id, commit first, seq)`` gives — ties and records whose commit is not
in range included — and decodes each observation as ``observation_from_row`` does."""

from __future__ import annotations

import heapq
import random

import numpy as np
import pytest

from locimem.model import Commit, EventKind
from locimem.store.sqlite import codec
from locimem.store.sqlite.codec import (
    event_from_row,
    events_from_rows,
    observation_from_row,
    replay_order,
)


def _rows(rng: random.Random) -> tuple[list, list, list]:
    commits = sorted(rng.sample(range(1, 60), rng.randint(0, 25)))
    observations, events = [], []
    for seq in range(1, rng.randint(1, 200)):
        cid = rng.choice([*commits, rng.randint(1, 70)]) if commits else rng.randint(1, 70)
        if rng.random() < 0.7:
            observations.append((seq, cid))
        else:
            events.append((seq, cid))
    if observations and rng.random() < 0.3:  # a tie on (commit, seq): observation first
        events.append(observations[0])
    observations.sort(key=lambda r: r[0])
    events.sort(key=lambda r: r[0])
    commit_rows = [(c, "s", "scan", float(c), 0.0, "tracker", None, 0, None, None, None,
                    None, None) for c in commits]
    obs_rows = [(s, c, "s", 0.0, 0, None, "cup", 0.9, 0, 0, 0, 1, 1, 1, 0.0, "new", "x",
                 None, None, None, None) for s, c in observations]
    ev_rows = [(s, c, "s", 0.0, EventKind.LOST.value, 1, None, "{}") for s, c in events]
    return commit_rows, obs_rows, ev_rows


def _name(record: object) -> tuple:
    kind = "c" if isinstance(record, Commit) else type(record).__name__[0]
    return (kind, record.id) if isinstance(record, Commit) else (kind, record.seq,
                                                                 record.commit)


def test_replay_order_is_the_merge_on_the_key() -> None:
    for seed in range(300):
        commit_rows, obs_rows, ev_rows = _rows(random.Random(seed))
        expected = [kind_id for _, kind_id in heapq.merge(
            (((r[0], 0, 0), ("c", r[0])) for r in commit_rows),
            (((r[1], 1, r[0]), ("O", r[0], r[1])) for r in obs_rows),
            (((r[1], 1, r[0]), ("E", r[0], r[1])) for r in ev_rows),
            key=lambda kv: kv[0])]
        got = [_name(r) for r in replay_order(commit_rows, obs_rows, ev_rows)]
        assert got == expected, seed


def _merged(commit_rows: list, obs_rows: list, ev_rows: list) -> list:
    return [kind_id for _, kind_id in heapq.merge(
        (((r[0], 0, 0), ("c", r[0])) for r in commit_rows),
        (((r[1], 1, r[0]), ("O", r[0], r[1])) for r in obs_rows),
        (((r[1], 1, r[0]), ("E", r[0], r[1])) for r in ev_rows),
        key=lambda kv: kv[0])]


def _log_rows(rng: random.Random) -> tuple[list, list, list]:
    """Rows as a log holds them: seq rising with the commit id (the runs between commits
    and events are then found by bisection), some commits empty, some records outside the
    commits' range, and an event tying an observation on (commit, seq) now and then."""
    commit_rows, obs_rows, ev_rows = _rows(random.Random(0))  # the row shapes
    commits = sorted(rng.sample(range(1, 80), rng.randint(0, 30)))
    observations, events, seq = [], [], 0
    for cid in sorted({*commits, *rng.sample(range(1, 90), 5)}):
        for _ in range(rng.choice([0, 1, 2, 5, 40])):
            seq += 1
            (observations if rng.random() < 0.85 else events).append((seq, cid))
    if observations and rng.random() < 0.3:
        events.append(rng.choice(observations))
        events.sort()
    return ([(c, *commit_rows[0][1:]) for c in commits] if commit_rows else [],
            [(s, c, *obs_rows[0][2:]) for s, c in observations],
            [(s, c, *ev_rows[0][2:]) for s, c in events])


@pytest.mark.parametrize("event_page", [1, 3, 256])
def test_replay_order_is_the_merge_on_a_log_in_order(event_page: int,
                                                     monkeypatch: pytest.MonkeyPatch) -> None:
    """Logs as stored (runs of observations between commits and events, ties), and the
    made-up streams of the test above, give the merge's order, whatever the page of events
    decoded at once."""
    monkeypatch.setattr(codec, "EVENT_PAGE", event_page)
    for seed in range(300):
        rng = random.Random(seed)
        for commit_rows, obs_rows, ev_rows in (_log_rows(rng), _rows(rng)):
            expected = _merged(commit_rows, obs_rows, ev_rows)
            got = [_name(r) for r in replay_order(commit_rows, obs_rows, ev_rows)]
            assert got == expected, seed


def test_replay_order_decodes_an_observation_as_observation_from_row() -> None:
    """``replay_order``'s default observation decode gives the record
    ``observation_from_row`` gives — embeddings (one width, another, empty, none),
    orientations, rejections and keys included — its embedding float32 and read-only."""
    rng = np.random.default_rng(0)

    def row(seq: int, feature: bytes | None, **kw: object) -> tuple:
        return (seq, 1, "s", 0.5 * seq, seq % 3, kw.get("oid", 7), "cup", 0.9,
                0.1 * seq, 2.0, 0.25, 0.1, 0.2, 0.3, kw.get("weight", 0.5), "tight",
                kw.get("rejected"), kw.get("track"), kw.get("orientation"), feature,
                kw.get("key"))

    rows = [row(0, rng.standard_normal(8).astype(np.float32).tobytes()),
            row(1, rng.standard_normal(4).astype(np.float32).tobytes()), row(2, b""),
            row(3, None), row(4, None, oid=None, rejected="low_confidence", key="cup@1,2,0"),
            row(5, None, track="t9", orientation="[1.0,0.0,0.0,0.0]")]
    got = list(replay_order([], rows, []))
    expected = list(replay_order([], rows, [], observation=observation_from_row))
    assert got == expected == [observation_from_row(r) for r in rows]
    for a, b in zip(got, expected, strict=True):
        assert (a.feature is None) == (b.feature is None)
        if a.feature is not None:
            assert a.feature.dtype == b.feature.dtype == np.float32
            assert a.feature.tobytes() == b.feature.tobytes()
            assert not a.feature.flags.writeable


def test_a_page_of_events_decodes_as_each_row_alone() -> None:
    """events_from_rows equals event_from_row row for row (the data parsed as one array);
    a page with a text that is not one JSON value, or an unknown kind, is decoded row by
    row, lazily: the rows before the damaged one decode, and it raises as it does alone."""
    def row(seq: int, kind: str, data: str) -> tuple:
        return (seq, 3, "s", 1.5, kind, 7, "cup", data)

    good = [row(1, "RELATION", '{"added":true,"object":1,"relation":"on"}'),
            row(2, "LOST", '{"belief":0.1}'), row(3, "APPEARED", "null"),
            row(4, "MOVED", '{"to":[1.0,2.0,3.0],"nested":{"a":[1,{"b":2}]}}')]
    expected = [event_from_row(r) for r in good]
    assert list(events_from_rows(good)) == expected
    assert list(events_from_rows([])) == []
    got = list(events_from_rows(good))
    assert got[0].kind is EventKind.RELATION and got[2].data is None
    for bad in (row(5, "LOST", '{"a":1},{"b":2}'), row(5, "LOST", ""),
                row(5, "LOST", '{"a":'), row(5, "BOGUS", "{}")):
        with pytest.raises(ValueError) as alone:
            event_from_row(bad)
        decoded = iter(events_from_rows([*good, bad, *good]))
        assert [next(decoded) for _ in good] == expected
        with pytest.raises(ValueError) as paged:
            next(decoded)
        assert str(paged.value) == str(alone.value)
