"""``replay_order`` gives the records in exactly the order a ``heapq.merge`` of the three
streams on ``(commit id, commit first, seq)`` gives — ties and records whose commit is not
in range included."""

from __future__ import annotations

import heapq
import random

from locimem.model import Commit, EventKind
from locimem.store.sqlite.codec import replay_order


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
