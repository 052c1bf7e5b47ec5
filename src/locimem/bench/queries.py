"""Query benchmarks: latency of near, nearest, find (text; embeddings exact and approximate),
relational queries, and relation maintenance, at growing numbers of objects.

A building is laid out as rooms of tables, each with a few items on it; every object is
published (``promote_after=1``) so relations exist. Figures are medians over many queries,
with each read query's p99 and max beside them; the machine is shared, so compare rows of one
run.
"""

from __future__ import annotations

import random
import statistics
import tempfile
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import TextIO

import numpy as np

from locimem.bench.phases import percentile
from locimem.config import TrackerConfig
from locimem.index.vectors import ExactIndex
from locimem.memory import ObjectMemory, reader_of
from locimem.model import Detection
from locimem.progress import progress
from locimem.query.semantic import SemanticIndex

ITEMS = ("cup", "mug", "glass", "bottle", "plate", "bowl", "fork", "knife", "spoon", "book",
         "remote", "phone", "keys", "wallet", "pen", "notebook", "laptop", "lamp", "vase",
         "apple", "banana", "orange", "toy", "box", "candle", "clock", "headphones", "charger")
FURNITURE = ("table", "desk", "counter", "shelf")
PER_TABLE = 4  # items on each table


def _layout(n: int, seed: int = 0) -> list[Detection]:
    """About ``n`` detections: tables 2.5 m apart, each with ``PER_TABLE`` items on top."""
    rng = random.Random(seed)
    n_tables = max(1, n // (PER_TABLE + 1))
    side = int(n_tables ** 0.5) + 1
    out = []
    for k in range(n_tables):
        x, y = (k % side) * 2.5, (k // side) * 2.5
        out.append(Detection(FURNITURE[k % len(FURNITURE)], 0.9, (x, y, 0.375),
                             (1.2, 0.8, 0.75)))
        for j in range(PER_TABLE):
            out.append(Detection(rng.choice(ITEMS), 0.9,
                                 (x - 0.45 + 0.3 * j, y + rng.uniform(-0.2, 0.2), 0.8),
                                 (0.08, 0.08, 0.1)))
    return out[:n]


Timing = tuple[float, float, float]
"""A query's median, p99 and max, ms."""


def _timing(seconds: list[float]) -> Timing:
    ms = sorted(v * 1e3 for v in seconds)
    return statistics.median(ms), percentile(ms, 0.99), ms[-1]


def _timed(fn: Callable[[int], object], runs: int) -> Timing:
    times = []
    for i in range(runs):
        t0 = time.perf_counter()
        fn(i)
        times.append(time.perf_counter() - t0)
    return _timing(times)


def _median_ms_in_turns(fns: dict[str, Callable[[int], object]], runs: int,
                        turns: int = 5) -> dict[str, float]:
    """Median ms per call of each function, timed side by side: in ``turns`` rounds, each
    function runs a block of ``runs / turns`` calls in a tight loop (as a lone benchmark would
    run it), so a burst of load on the shared machine falls on every function alike."""
    times: dict[str, list[float]] = {name: [] for name in fns}
    block = max(1, runs // turns)
    for turn in range(turns):
        for name, fn in fns.items():
            for i in range(turn * block, (turn + 1) * block):
                t0 = time.perf_counter()
                fn(i)
                times[name].append(time.perf_counter() - t0)
    return {name: statistics.median(t) * 1e3 for name, t in times.items()}


def _encoder() -> tuple[object, str]:
    try:
        from locimem.language.encoder import MiniLMEncoder

        return MiniLMEncoder(), "MiniLM"
    except Exception:  # the text extra is not installed: a stand-in with the same cost shape
        from locimem.language.encoder import HashingEncoder

        return HashingEncoder(384), "hashing stand-in"


def bench_queries(n: int, runs: int = 200, with_vectors: bool = True
                  ) -> tuple[dict[str, float], dict[str, Timing]]:
    """Median milliseconds per query at ``n`` objects, and the read queries' median, p99 and
    max."""
    dets = _layout(n)
    config = TrackerConfig(promote_after=1)
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "q.loci"
        with ObjectMemory.open(path, config=config, durable=False) as mem:
            for s in progress(range(0, len(dets), 30), label=f"  building {n} objects"):
                mem.observe(s / 3000, dets[s:s + 30])
        words = random.Random(2).choices(ITEMS, k=runs)
        tails = _bench_reads(path, config, words, runs)
        if with_vectors:  # the reads' memory is gone by now: one store's state at a time
            tails.update(_bench_encoded_find(path, config, runs))
        out = {name: timing[0] for name, timing in tails.items()}
        if with_vectors:
            out.update(_bench_vectors(path, config, words, runs))
    return out, tails


def _bench_reads(path: Path, config: TrackerConfig, words: Sequence[str],
                 runs: int) -> dict[str, Timing]:
    """near, nearest, find by text, one relational query and one relation update."""
    rng = random.Random(1)
    with ObjectMemory.open(path, config=config, read_only=True) as mem:
        objects = mem.objects()
        tables = [o for o in objects if o.label in FURNITURE]
        xs = [o.center for o in objects]
        points = [(p[0] + rng.uniform(-1, 1), p[1] + rng.uniform(-1, 1), 0.8)
                  for p in rng.choices(xs, k=runs)]
        out = {
            "near 1 m": _timed(lambda i: mem.near(points[i], 1.0), runs),
            "nearest 5": _timed(lambda i: mem.nearest(points[i], 5), runs),
            "find (text)": _timed(lambda i: mem.find(words[i], 10), runs),
            "on the table": _timed(
                lambda i: mem.related(tables[i % len(tables)].id, "on"), runs),
        }
        state = reader_of(mem).state
        movers = rng.choices([o.id for o in objects if o.label in ITEMS], k=runs)

        def relation_update(i: int) -> None:  # one object settling somewhere new
            obj = state.objects[movers[i]]
            state.scene.place(obj)
            state.scene.pending.clear()

        out["relation update"] = _timed(relation_update, runs)
    return out


def _bench_encoded_find(path: Path, config: TrackerConfig, runs: int) -> dict[str, Timing]:
    """``find`` through the encoder as a robot's or a model's questions reach it: the memory
    opened with the encoder (its labels encoded at open), then ``runs`` questions, a quarter
    of them new and the rest asked before (the last queries' embeddings are kept). The first
    question after open is its own row."""
    encoder, _ = _encoder()
    rng = random.Random(3)
    asked = [f"something like a {a} or a {b}" for a, b in zip(
        rng.choices(ITEMS, k=runs), rng.choices(ITEMS, k=runs), strict=True)]
    questions = [asked[i] if i < runs // 4 or rng.random() < 0.25 else
                 asked[rng.randrange(runs // 4)] for i in range(runs)]
    with ObjectMemory.open(path, config=config, read_only=True, warm=True,
                           encoder=encoder) as mem:  # type: ignore[arg-type]
        t0 = time.perf_counter()
        mem.find("where is my phone", 10)
        first = time.perf_counter() - t0
        timing = _timed(lambda i: mem.find(questions[i], 10), runs)
    return {"find (text, encoder): first after open": (first * 1e3,) * 3,
            "find (text, encoder)": timing}


def _bench_vectors(path: Path, config: TrackerConfig, words: Sequence[str],
                   runs: int) -> dict[str, float]:
    """Embedding search as ``find`` runs it (one vector per label, then the label's objects),
    timed side by side with a bare numpy product over the per-object vectors and, for scale,
    with an exact index holding one vector per object (as it was before labels shared one)."""
    encoder, _ = _encoder()
    out: dict[str, float] = {}
    queries = encoder.encode(list(words))  # type: ignore[attr-defined]
    k = 10
    for name in ("exact", "usearch"):
        try:
            mem = ObjectMemory.open(path, config=config, read_only=True,
                                    encoder=encoder, vector_index=name)  # type: ignore[arg-type]
            index = reader_of(mem).semantic_index()  # build the index before timing
        except Exception:  # the vectors extra is not installed
            continue
        try:
            fns = {f"vector top-{k} ({name})": _top_k(index, queries, k)}
            if name == "exact":
                fns.update(_per_object(index, queries, k))
            out.update(_median_ms_in_turns(fns, runs))
        finally:
            mem.close()
    return out


def _top_k(index: SemanticIndex, queries: np.ndarray, k: int) -> Callable[[int], object]:
    """The index's top-``k`` search for query ``i``."""
    return lambda i: index.by_embedding(queries[i], k)


def _per_object(index: SemanticIndex, queries: np.ndarray, k: int
                ) -> dict[str, Callable[[int], object]]:
    """Searches over one vector per object (ids ascending): ExactIndex, a bare product, and
    a bare product plus the cheapest top-k (``argpartition``, unsorted)."""
    ids = sorted(index._label_of)
    matrix = np.stack([index._label_vec[index._label_of[oid]] for oid in ids]).astype(np.float32)
    per_object = ExactIndex(matrix.shape[1], capacity=len(ids))
    per_object.add_many(ids, matrix)
    cut = max(len(ids) - k, 0)
    return {
        f"ExactIndex top-{k}, one vector per object": lambda i: per_object.search(queries[i], k),
        "bare numpy M @ q": lambda i: matrix @ queries[i],
        f"bare numpy M @ q + argpartition top-{k}":
            lambda i: np.argpartition(matrix @ queries[i], cut)[cut:],
    }


def run_query_suite(out: TextIO, sizes: Sequence[int] = (1_000, 10_000, 100_000),
                    runs: int = 200) -> None:
    _, encoder_name = _encoder()
    out.write(f"# locimem query benchmark (median ms per query; embeddings: {encoder_name})\n\n")
    both = {n: bench_queries(n, runs) for n in sizes}
    rows = {n: figures for n, (figures, _) in both.items()}
    names = list(next(iter(rows.values())))
    for figures in rows.values():
        names += [k for k in figures if k not in names]
    out.write("| query | " + " | ".join(f"{n:,} objects" for n in sizes) + " |\n")
    out.write("|---|" + "---:|" * len(sizes) + "\n")
    for name in names:
        cells = [f"{rows[n][name]:.3f}" if name in rows[n] else "n/a" for n in sizes]
        out.write(f"| {name} | " + " | ".join(cells) + " |\n")
    if all("bare numpy M @ q" in rows[n] for n in sizes):
        def ratios(name: str, base: str = "bare numpy M @ q") -> str:
            return ", ".join(f"{rows[n][name] / rows[n][base]:.3g}x at {n:,}" for n in sizes)

        per_object = "ExactIndex top-10, one vector per object"
        out.write("\nExact vector search as find runs it (one vector per distinct label) vs a "
                  f"bare numpy product over the per-object vectors: "
                  f"{ratios('vector top-10 (exact)')}.\n")
        out.write(f"ExactIndex holding one vector per object vs the same product: "
                  f"{ratios(per_object)}; vs the product plus argpartition: "
                  f"{ratios(per_object, 'bare numpy M @ q + argpartition top-10')}.\n")
    out.write("\n'relation update' is the cost of re-deriving one object's relations when it "
              "settles somewhere new (a MOVED, APPEARED-and-promoted, corrected or re-acquired "
              "object); a scan pays it once per such object. 'find (text, encoder)': the "
              "memory opened with the encoder, questions a quarter of which are new (the "
              "rest asked before), end to end.\n")
    out.write("\nThe read queries' tails (ms: median / p99 / max):\n\n"
              "| query | " + " | ".join(f"{n:,} objects" for n in sizes) + " |\n"
              "|---|" + "---:|" * len(sizes) + "\n")
    tail_names = list(next(iter(both.values()))[1])
    for name in tail_names:
        if name.endswith("first after open"):
            continue
        cells = [" / ".join(f"{v:.3f}" for v in both[n][1][name]) if name in both[n][1]
                 else "n/a" for n in sizes]
        out.write(f"| {name} | " + " | ".join(cells) + " |\n")
    out.flush()
