"""A stateful fuzzer over the whole writing surface (issue #13).

A hypothesis ``RuleBasedStateMachine`` drives one on-disk memory through scans (with and without
a camera and a depth image, with embeddings, with bad values), every governance verb, rooms, a
prior map and its deltas, compaction, export + import into a new store, read-only opens and
close + reopen. After every step: the live state equals a replay of the log, ``validate`` finds
nothing, and every error raised was a :class:`LocimemError` that changed nothing (neither the
live state nor a row of the file).

It runs on both backends: SQLite, and PostgreSQL when ``LOCIMEM_TEST_POSTGRES`` names a
server (a fresh schema per example; "nothing changed" there compares each table's rows).
The quick suite runs a bounded number of examples per backend (fixed under ``CI``); the long
run (``LOCIMEM_SLOW=1``) keeps drawing new examples for ``LOCIMEM_FUZZ_MINUTES`` (default 30)
per backend and prints how many it ran.
"""

from __future__ import annotations

import math
import os
import shutil
import tempfile
import time
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from hypothesis import HealthCheck, event, settings
from hypothesis import strategies as st
from hypothesis.stateful import (
    RuleBasedStateMachine,
    initialize,
    invariant,
    rule,
    run_state_machine_as_test,
)

from locimem import Camera, Detection, ObjectMemory
from locimem.errors import LocimemError
from locimem.interchange.export import export_memory
from locimem.interchange.load import import_memory
from locimem.interchange.validate import validate_store
from tests import pg

LABELS = ("cup", "mug", "box", "kitchen table", "book")
ROOMS = ("kitchen", "hall", "den")
DIM = 4  # the embedding width of the fuzzed store
SCOPE = "fz"

coord = st.one_of(st.sampled_from([0.0, 0.05, 0.1, 0.5, 1.0, 1.02, 1.5, 2.0, 3.0]),
                  st.floats(-1.0, 4.0, allow_nan=False, allow_infinity=False),
                  st.sampled_from([1e7, -1e300, math.nan, math.inf]),  # refused at the boundary
                  st.sampled_from([5e-324, -1e-310]))  # subnormal: 0.0 on every backend
safe = st.floats(-1.0, 4.0, allow_nan=False, allow_infinity=False)
extent = st.one_of(st.sampled_from([0.0, 0.08, 0.1, 0.3, 1.2]),
                   st.floats(0.0, 2.0, allow_nan=False), st.sampled_from([-0.1, 1e19]))
embedding = st.one_of(
    st.none(),
    st.sampled_from([tuple(np.eye(DIM)[i]) for i in range(DIM)]),
    st.lists(st.floats(-1, 1, allow_nan=False, width=32), min_size=DIM, max_size=DIM),
    st.just((1.0, 0.0)),  # the wrong width: refused
)
detection_args = st.fixed_dictionaries({
    "label": st.sampled_from(LABELS),
    "confidence": st.one_of(st.sampled_from([0.01, 0.3, 0.6, 0.9, 1.0]),
                            st.sampled_from([1.5, 5e-324])),
    "center": st.tuples(coord, coord, st.sampled_from([0.0, 0.4, 0.8, 0.9])),
    "size": st.tuples(extent, extent, extent),
    "feature": embedding,
    "track_id": st.sampled_from([None, None, 1, 2, "t3"]),
})


TABLES = ("commits", "observations", "events", "objects", "deltas", "prior_map", "scene",
          "tombstones", "rejection_keys")


class MemoryMachine(RuleBasedStateMachine):
    """One store, one scope; ``self.t`` is the next scan's time. ``backend`` is "sqlite" or
    "postgres" (set on a subclass)."""

    examples = 0  # machines built (one per example), counted for the long run's report
    backend = "sqlite"

    def __init__(self) -> None:
        super().__init__()
        MemoryMachine.examples += 1
        self.dir = Path(tempfile.mkdtemp(prefix="locimem-fuzz-"))
        self.path: Path | str = self.dir / "fz.loci"
        self.peek: Any = None  # PostgreSQL: a connection of the harness's own, to read rows
        if self.backend == "postgres":
            import psycopg

            self.path = pg.new_url("fz")
            self.schema = self.path.rsplit("schema=", 1)[1]
            self.peek = psycopg.connect(pg.URL, autocommit=True)
        self.mem = ObjectMemory.open(self.path, scope=SCOPE, durable=False)
        self.t = 0.0
        self.n = 0

    def teardown(self) -> None:
        try:
            self.mem.close()
        finally:
            if self.peek is not None:
                self.peek.execute(f'DROP SCHEMA IF EXISTS "{self.schema}" CASCADE')
                self.peek.close()
            shutil.rmtree(self.dir, ignore_errors=True)

    # -- the harness: every call either lands whole or raises a LocimemError changing nothing --
    def _rows(self) -> tuple[Any, ...]:
        if self.peek is None:
            conn = self.mem._live.store.conn
            return tuple(conn.execute(f"SELECT count(*), coalesce(max(rowid), 0) FROM {table}")
                         .fetchone()[i] for table in TABLES for i in (0, 1))
        return tuple(self.peek.execute(  # every row, as text: a changed row shows too
            f'SELECT count(*), md5(coalesce(string_agg(r::text, \'|\' ORDER BY r::text), \'\')) '
            f'FROM "{self.schema}".{table} r').fetchone() for table in TABLES)

    def attempt(self, what: str, call: Any) -> Any:
        before = (self.mem.snapshot(), self._rows(), self.mem._live._state.relations_snapshot())
        try:
            out = call()
        except LocimemError as exc:
            after = (self.mem.snapshot(), self._rows(), self.mem._live._state.relations_snapshot())
            assert after == before, "a refused call changed something"
            event(f"{what}: {type(exc).__name__}")
            return None
        event(f"{what}: ok")
        return out

    def ids(self, data: st.DataObject) -> int:
        known = sorted(self.mem._live._state.objects)
        return data.draw(st.one_of(st.sampled_from(known), st.sampled_from(known),
                                   st.sampled_from(known), st.integers(-2, 10**4),
                                   st.sampled_from([2**63, 2**64]))
                         if known else st.integers(-2, 50))

    # -- rules -------------------------------------------------------------------------------
    @initialize(prior=st.booleans(), rooms=st.booleans())
    def start(self, prior: bool, rooms: bool) -> None:
        """Often a furnished start, so deltas, consolidation and relations get exercised."""
        if rooms:
            self.mem.define_room("kitchen", [(-1, -1), (2.5, -1), (2.5, 4), (-1, 4)])
        if prior:
            self.mem.load_prior([
                {"label": "kitchen table", "center": (1.0, 1.0, 0.4), "size": (1.2, 0.8, 0.8)},
                {"label": "cup", "center": (1.0, 1.0, 0.9), "size": (0.08, 0.08, 0.1)},
                {"label": "box", "center": (2.0, 0.5, 0.4), "size": (0.3, 0.3, 0.3)},
            ], scene="survey")

    @rule(steps=st.integers(3, 10), where=st.sampled_from([(1.0, 1.0, 0.9), (1.5, 1.0, 0.9),
                                                           (2.0, 1.5, 0.9), (3.0, 0.5, 0.4)]),
          label=st.sampled_from(["cup", "box", "book"]))
    def sustained_sighting(self, steps: int, where: tuple[float, float, float],
                           label: str) -> None:
        """The same thing seen in several scans (what promotes objects and confirms deltas)."""
        for _ in range(steps):
            self.t += 1.0
            t = self.t
            self.attempt("observe", lambda t=t: self.mem.observe(
                t, [Detection(label, 0.9, where, (0.1, 0.1, 0.1))]))

    @rule(data=st.data(), n=st.integers(0, 6), dt=st.sampled_from([0.0, 0.5, 1.0, 2.0, 40.0]),
          camera=st.sampled_from([None, "plain", "depth"]),
          source=st.sampled_from(["tracker", "head-cam/yolo"]))
    def observe(self, data: st.DataObject, n: int, dt: float, camera: str | None,
                source: str) -> None:
        dets = []
        for _ in range(n):
            args = data.draw(detection_args)
            try:
                dets.append(Detection(**args))
            except LocimemError:
                continue  # refused at the boundary: typed, and nothing exists to write
        cam = None
        if camera is not None:
            depth = None if camera == "plain" else np.full((6, 8), data.draw(
                st.sampled_from([0.5, 2.0, 5.0, math.inf])), dtype=np.float32)
            cam = Camera((-1.0, 1.5, 1.0), (1.0, 0.0, 0.0, 0.0), 90.0, 8.0, depth=depth)
        t = self.t + dt
        if self.attempt("observe", lambda: self.mem.observe(t, dets, camera=cam, source=source)):
            self.t = t

    @rule()
    def observe_in_the_past(self) -> None:
        if self.mem.now is not None:
            # beyond the store's late-scan tolerance (SQLite 0 s, a new PostgreSQL schema 1 s)
            t = self.mem.now - self.mem._live.store.late_s - 1.0
            assert self.attempt("observe", lambda: self.mem.observe(t, [])) is None

    @rule(data=st.data(), label=st.sampled_from(["vase", "cup", "", "a\x00b"]))
    def relabel(self, data: st.DataObject, label: str) -> None:
        oid = self.ids(data)
        self.attempt("relabel", lambda: self.mem.relabel(oid, label, actor="alice", reason="fuzz"))

    @rule(data=st.data(), to=st.one_of(st.tuples(safe, safe, safe), st.tuples(coord, coord,
                                                                              coord)))
    def move(self, data: st.DataObject, to: tuple[float, float, float]) -> None:
        oid = self.ids(data)
        self.attempt("move", lambda: self.mem.move(oid, to))

    @rule(data=st.data(), values=st.dictionaries(st.sampled_from(["color", "mobile", ""]),
                                                 st.one_of(st.text(max_size=5), st.booleans(),
                                                           st.floats(allow_nan=True),
                                                           st.sampled_from([2**63, 10**4000,
                                                                            -(2**63)])),
                                                 max_size=2),
          remove=st.lists(st.sampled_from(["color", "mobile"]), max_size=2))
    def set_attributes(self, data: st.DataObject, values: dict[str, Any],
                       remove: list[str]) -> None:
        oid = self.ids(data)
        self.attempt("set_attributes", lambda: self.mem.set_attributes(oid, values, remove=remove))

    @rule(data=st.data())
    def forget(self, data: st.DataObject) -> None:
        oid = self.ids(data)
        self.attempt("forget", lambda: self.mem.forget(oid, reason="fuzz"))

    @rule(name=st.sampled_from(ROOMS), x=st.sampled_from([-1.0, 0.0, 2.0, 1e7]),
          w=st.sampled_from([0.0, 1.0, 2.5, 4.0]), h=st.sampled_from([1.0, 3.0]))
    def define_room(self, name: str, x: float, w: float, h: float) -> None:
        poly = [(x, 0.0), (x + w, 0.0), (x + w, h), (x, h)]
        self.attempt("define_room", lambda: self.mem.define_room(name, poly))

    @rule(a=st.sampled_from(ROOMS), b=st.sampled_from(ROOMS))
    def connect_rooms(self, a: str, b: str) -> None:
        self.attempt("connect_rooms", lambda: self.mem.connect_rooms(a, b))

    @rule(name=st.sampled_from(ROOMS))
    def remove_room(self, name: str) -> None:
        self.attempt("remove_room", lambda: self.mem.remove_room(name))

    @rule(data=st.data())
    def merge(self, data: st.DataObject) -> None:
        """Two identities are one (among them a prior object with an open delta: the merge
        settles the absorbed one's deltas, so a later scan still validates)."""
        keep, absorb = self.ids(data), self.ids(data)
        self.attempt("merge", lambda: self.mem.merge(keep, absorb, actor="alice"))

    @rule(data=st.data(), at=st.tuples(safe, safe, safe))
    def split(self, data: st.DataObject, at: tuple[float, float, float]) -> None:
        oid = self.ids(data)
        self.attempt("split", lambda: self.mem.split(oid, at, label="box", actor="bob"))

    @rule(t=st.sampled_from([1e300, -1e300, 1.7646e12, 1.7646e18, 1e10 + 1e4]))
    def observe_at_a_time_outside_the_domain(self, t: float) -> None:
        """A clock in ms or ns, or garbage: refused, so it cannot make every later scan
        'go back in time'."""
        cup = Detection("cup", 0.9, (1.0, 1.0, 0.9), (0.1, 0.1, 0.1))
        assert self.attempt("observe", lambda: self.mem.observe(t, [cup])) is None

    @rule(names=st.lists(st.sampled_from(ROOMS), min_size=1, max_size=2),
          link=st.booleans())
    def import_rooms(self, names: list[str], link: bool) -> None:
        rooms = [{"name": n, "polygon": [(4.0 + i, 0), (5.0 + i, 0), (5.0 + i, 1)]}
                 for i, n in enumerate(names)]
        data = {"rooms": rooms, "connections": [names[:2]] if link and len(names) == 2 else []}
        self.attempt("import_rooms", lambda: self.mem.import_rooms(data))

    @rule(data=st.data(), n=st.integers(0, 3))
    def load_prior(self, data: st.DataObject, n: int) -> None:
        entries = [{"label": data.draw(st.sampled_from(LABELS)),
                    "center": data.draw(st.tuples(coord, coord, coord)),
                    "size": data.draw(st.tuples(extent, extent, extent))} for _ in range(n)]
        self.attempt("load_prior", lambda: self.mem.load_prior(entries, scene="survey"))

    @rule(data=st.data(), confirm=st.booleans())
    def review_delta(self, data: st.DataObject, confirm: bool) -> None:
        known = sorted(self.mem._live._state.deltas)
        did = data.draw(st.one_of(st.sampled_from(known), st.integers(0, 99))
                        if known else st.integers(0, 9))
        verb = self.mem.confirm_delta if confirm else self.mem.reject_delta
        self.attempt("confirm_delta" if confirm else "reject_delta",
                     lambda: verb(did, actor="alice"))

    @rule()
    def consolidate(self) -> None:
        self.attempt("consolidate", lambda: self.mem.consolidate(actor="alice"))

    @rule(older=st.sampled_from([0.0, 1.0, 5.0, 60.0]), trail=st.sampled_from([0.5, 10.0]))
    def compact(self, older: float, trail: float) -> None:
        self.attempt("compact", lambda: self.mem.compact(older_than_s=older, trail_s=trail))

    @rule()
    def reopen(self) -> None:
        before = self.mem.snapshot()
        self.mem.close()
        self.mem = ObjectMemory.open(self.path, scope=SCOPE, durable=False)
        assert self.mem.snapshot() == before

    @rule()
    def read_only_open(self) -> None:
        with ObjectMemory.open(self.path, scope=SCOPE, read_only=True) as reader:
            assert reader.snapshot() == self.mem.snapshot()

    @rule()
    def export_and_import(self) -> None:
        if self.mem._live.store.count("commits", SCOPE) == 0:
            return
        self.n += 1
        out, copy = self.dir / f"export{self.n}", self.dir / f"import{self.n}.loci"
        export_memory(self.path, out, scope=SCOPE)
        import_memory(out, copy)
        with ObjectMemory.open(copy, scope=SCOPE, read_only=True) as imported:
            assert imported.snapshot() == self.mem.snapshot()
        shutil.rmtree(out)

    # -- after every step ----------------------------------------------------------------------
    @invariant()
    def live_state_is_the_log(self) -> None:
        state = self.mem._live._state
        replay = self.mem.rebuild_from_log()
        assert self.mem.snapshot() == replay.snapshot()
        assert state.relations_snapshot() == replay.relations_snapshot()

    @invariant()
    def store_validates(self) -> None:
        report = validate_store(self.mem._live.store, quick=True)
        assert report.ok, str(report)


class PostgresMachine(MemoryMachine):
    backend = "postgres"


MACHINES = {"sqlite": MemoryMachine, "postgres": PostgresMachine}
BACKENDS = [pytest.param("sqlite"), pytest.param("postgres", marks=pg.needs_postgres)]


def _run(backend: str, max_examples: int, steps: int, **kw: Any) -> None:
    run_state_machine_as_test(MACHINES[backend], settings=settings(
        max_examples=max_examples, stateful_step_count=steps, deadline=None,
        suppress_health_check=list(HealthCheck), **kw))


@pytest.mark.parametrize("backend", BACKENDS)
def test_fuzz_state_machine_bounded(backend: str) -> None:
    """The quick suite's run: a bounded number of examples (fixed ones under CI)."""
    _run(backend, max_examples=20 if backend == "sqlite" else 8, steps=30)


@pytest.mark.slow
@pytest.mark.skipif(not os.environ.get("LOCIMEM_SLOW"), reason="long run: set LOCIMEM_SLOW=1")
@pytest.mark.parametrize("backend", BACKENDS)
def test_fuzz_state_machine_long(backend: str) -> None:
    """Keeps drawing new examples for LOCIMEM_FUZZ_MINUTES (default 30); prints the count."""
    minutes = float(os.environ.get("LOCIMEM_FUZZ_MINUTES", "30"))
    stop = time.monotonic() + minutes * 60
    start = MemoryMachine.examples
    batches = 0
    while time.monotonic() < stop:
        _run(backend, max_examples=50, steps=40, derandomize=False, database=None)
        batches += 1
    print(f"\nfuzz ({backend}): {MemoryMachine.examples - start} examples in {batches} batches, "
          f"{minutes:g} min, nothing found")



