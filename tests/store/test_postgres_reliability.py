"""A PostgreSQL writer that keeps going (issue 37, items 2 and 9): a write the server refuses
leaves the memory usable (the state is put back after the transaction rolled back, not read
from the aborted one); a schema PostgreSQL reserves (``pg_*``) is refused with the reason; a
backend terminated between calls or in the middle of a write costs the one call (a typed
error, nothing written) and the next call works on a new connection; corrections beside a
busy writer of the same scope never fail with WriteConflict. Skipped without
``LOCIMEM_TEST_POSTGRES``."""

from __future__ import annotations

import itertools
import threading
import time
from typing import Any

import pytest

from locimem import Detection, ObjectMemory
from locimem.errors import ConnectionLost, InvalidInput
from locimem.interchange.validate import validate
from tests import pg
from tests.helpers import det

pytestmark = pg.needs_postgres


def _terminate(pid: int) -> None:
    """End a server session from another connection, as an operator (or a failover) does."""
    import psycopg

    assert pg.URL is not None
    with psycopg.connect(pg.URL, autocommit=True) as admin:
        assert admin.execute("SELECT pg_terminate_backend(%s)", (pid,)).fetchone() == (True,)


def _pid(mem: ObjectMemory) -> int:
    return mem._live.store._connection().info.backend_pid  # type: ignore[attr-defined]


def _consistent(mem: ObjectMemory, url: str) -> None:
    assert mem.snapshot() == mem.rebuild_from_log().snapshot()
    assert validate(url).ok


# -- a write the server refuses ----------------------------------------------------------------
def test_a_refused_write_leaves_the_memory_usable() -> None:
    """A value past the boundary's checks (forced in here: the boundary flushes subnormals)
    makes the server refuse the write; the state is put back and the next scan lands. It was
    StoreClosed for good: the restore read from the aborted transaction."""
    url = pg.new_url("refused")
    with ObjectMemory.open(url, scope="home") as mem:
        mem.observe(0.0, [det("cup", 1.0, 1.0)])
        before, pid = mem.snapshot(), _pid(mem)
        bad = Detection("box", 0.9, (5.0, 5.0, 0.5), (0.2, 0.2, 0.2))
        object.__setattr__(bad, "size", (5e-324, 0.2, 0.2))  # half of it underflows there
        with pytest.raises(InvalidInput, match=r"refused a value of this write \(value out of "
                                               r"range: underflow\); nothing was written"):
            mem.observe(1.0, [det("cup", 1.0, 1.0), bad])
        assert mem.snapshot() == before and mem._live.store.count("commits", "home") == 1
        r = mem.observe(2.0, [det("cup", 1.0, 1.0), det("box", 5.0, 5.0)])
        assert list(r.assignments) == [1, 2] and _pid(mem) == pid  # the same connection
        assert [o.label for o in mem.objects()] == ["cup", "box"]
        _consistent(mem, url)


@pytest.mark.parametrize("schema", ["pg_catalog", "pg_toast", "pg_temp", "pg_robots"])
def test_a_schema_postgresql_reserves_is_refused_with_the_reason(schema: str) -> None:
    assert pg.URL is not None
    with pytest.raises(InvalidInput, match=rf"schema '{schema}' starts with 'pg_', which "
                                           "PostgreSQL reserves for its own schemas"):
        ObjectMemory.open(f"{pg.URL}?schema={schema}", scope="home")
    with ObjectMemory.open(pg.new_url("scope"), scope="pg_catalog") as mem:  # a scope is a
        mem.observe(0.0, [det("cup", 1.0, 1.0)])  # value in a column: any name is fine
        assert mem._live.store.scopes() == ["pg_catalog"]


# -- a lost connection -------------------------------------------------------------------------
def test_a_backend_terminated_between_calls_costs_one_call() -> None:
    url = pg.new_url("between")
    with ObjectMemory.open(url, scope="home") as mem:
        mem.observe(0.0, [det("cup", 1.0, 1.0)])
        before, pid = mem.snapshot(), _pid(mem)
        _terminate(pid)
        with pytest.raises(ConnectionLost, match="nothing of the interrupted call was written"):
            mem.observe(1.0, [det("cup", 1.0, 1.0), det("book", 3.0, 1.0)])
        assert mem.snapshot() == before  # (read on a new connection)
        r = mem.observe(1.0, [det("cup", 1.0, 1.0), det("book", 3.0, 1.0)])
        assert list(r.assignments) == [1, 2] and _pid(mem) != pid
        _terminate(_pid(mem))  # a correction's turn, too
        with pytest.raises(ConnectionLost):
            mem.relabel(2, "novel")
        assert mem.relabel(2, "novel").object_id == 2
        assert [o.label for o in mem.objects()] == ["cup", "novel"]
        assert mem._live.store.count("commits", "home") == 3
        _consistent(mem, url)


def _kill_on_insert(mem: ObjectMemory, label: str) -> None:
    """A trigger in the store's schema: the session that inserts an observation of ``label``
    terminates itself, mid-statement."""
    mem._live.store._connection().execute(  # type: ignore[attr-defined]
        "CREATE FUNCTION doom() RETURNS trigger LANGUAGE plpgsql AS $$ BEGIN "
        "PERFORM pg_terminate_backend(pg_backend_pid()); PERFORM pg_sleep(5); RETURN NEW; "
        f"END $$; CREATE TRIGGER doom BEFORE INSERT ON observations FOR EACH ROW WHEN "
        f"(NEW.label = '{label}') EXECUTE FUNCTION doom()")


def _disarm(mem: ObjectMemory) -> None:
    mem._live.store._connection().execute(  # type: ignore[attr-defined]
        "DROP TRIGGER IF EXISTS doom ON observations")


@pytest.mark.parametrize("at", ["append", "rows", "commit"])
def test_a_backend_terminated_during_a_write_writes_nothing_and_the_next_call_works(
        at: str, monkeypatch: pytest.MonkeyPatch) -> None:
    """Terminated while the rows go in, or just before the turn commits: the call raises
    ConnectionLost, the store holds none of it, the memory is what the store holds, and the
    next scan and correction land on a new connection."""
    url = pg.new_url("during")
    with ObjectMemory.open(url, scope="home") as mem:
        mem.observe(0.0, [det("cup", 1.0, 1.0)])
        before = mem.snapshot()
        store = mem._live.store
        if at == "append":
            import locimem.store.postgres.store as pg_module

            write_rows = pg_module.write_rows

            def killed(conn: Any, *args: object) -> None:
                write_rows(conn, *args)  # half of the scan's rows are in, uncommitted
                _terminate(conn.info.backend_pid)
                conn.execute("SELECT 1")

            monkeypatch.setattr(pg_module, "write_rows", killed)
        elif at == "rows":  # the server ends the session while a batch of rows goes in
            _kill_on_insert(mem, "book")
        else:
            lock = store._lock  # type: ignore[attr-defined]
            calls = []

            def killed(conn: Any, scope: str) -> None:  # the append's (second) lock call
                lock(conn, scope)
                calls.append(scope)
                if len(calls) == 2:
                    _terminate(conn.info.backend_pid)

            monkeypatch.setattr(store, "_lock", killed)
        with pytest.raises(ConnectionLost, match="nothing of the interrupted call was written"):
            mem.observe(1.0, [det("cup", 1.0, 1.0), det("book", 3.0, 1.0)])
        monkeypatch.undo()
        assert mem.snapshot() == before
        _disarm(mem)
        assert mem._live.store.count("commits", "home") == 1
        assert mem._live.store.count("observations", "home") == 1
        r = mem.observe(2.0, [det("cup", 1.0, 1.0), det("book", 3.0, 1.0)])
        assert list(r.assignments) == [1, 2]
        mem.move(2, (3.5, 1.0, 0.9))
        assert mem.get(2).center == (3.5, 1.0, 0.9)
        _consistent(mem, url)


def test_a_writer_whose_backend_is_terminated_at_random_keeps_writing() -> None:
    """About 100 kills at random moments (between calls, in a scan, in a correction): every
    call either lands or raises ConnectionLost, the memory never closes itself (it did within
    a few seconds: a kill that lands while rows go in leaves the driver mid-batch, and the
    restore read on in it), and the store is whole."""
    import random

    import psycopg
    from psycopg.pq import TransactionStatus

    IDLE = TransactionStatus.IDLE
    assert pg.URL is not None
    url = pg.new_url("random")
    rng, stop, kills = random.Random(7), threading.Event(), []
    with ObjectMemory.open(url, scope="home") as mem:
        mem.observe(0.0, [det("cup", 1.0, 1.0), det("book", 3.0, 1.0)])

        def killer() -> None:
            with psycopg.connect(pg.URL, autocommit=True) as admin:  # type: ignore[arg-type]
                while not stop.wait(rng.uniform(0.0, 0.01)):
                    conn = mem._live._store._conn  # type: ignore[union-attr]
                    # mostly while a write is open (its transaction begun), now and then
                    # between calls
                    busy = conn is not None and conn.info.transaction_status != IDLE
                    if conn is not None and rng.random() < (0.3 if busy else 0.02):
                        admin.execute("SELECT pg_terminate_backend(%s)",
                                      (conn.info.backend_pid,))
                        kills.append(1)

        thread = threading.Thread(target=killer)
        thread.start()
        landed, lost, t, deadline = 0, 0, 0.0, time.monotonic() + 3.0
        try:
            for k in itertools.count():
                if (len(kills) >= 100 and landed >= 100) or time.monotonic() > deadline:
                    break
                t += 0.1
                try:
                    if k % 5 == 4:
                        mem.relabel(1, "mug" if k % 10 == 4 else "cup")
                    else:
                        mem.observe(t, [det("cup", 1.0, 1.0), det("book", 3.0, 1.0)])
                    landed += 1
                except ConnectionLost:
                    lost += 1
        finally:
            stop.set()
            thread.join(timeout=30)
        assert lost >= 5 and landed >= 20
        try:  # (the last kill may cost the next call)
            mem.observe(t + 1.0, [det("cup", 1.0, 1.0), det("book", 3.0, 1.0)])
        except ConnectionLost:
            mem.observe(t + 1.0, [det("cup", 1.0, 1.0), det("book", 3.0, 1.0)])
        assert [o.id for o in mem.objects()] == [1, 2]
        # a call the drop cut off after the server committed is whole in the store
        assert 2 + landed <= mem._live.store.count("commits", "home") <= 2 + landed + lost + 1
        _consistent(mem, url)


# -- many writers ----------------------------------------------------------------------------------
def test_corrections_beside_a_busy_writer_all_land() -> None:
    """One writer scans the scope as fast as it can while another relabels, moves and sets
    attributes: every correction lands (about half failed with WriteConflict five times in a
    row: they were decided outside the scope's lock)."""
    url = pg.new_url("busy")
    with ObjectMemory.open(url, scope="home") as mem:
        mem.observe(0.0, [det("cup", 1.0, 1.0), det("book", 3.0, 1.0)])
    stop, started, errors, scans = threading.Event(), threading.Event(), [], []

    def scanner() -> None:
        try:
            with ObjectMemory.open(url, scope="home") as robot:
                t = 1.0
                while not stop.is_set():
                    robot.observe(t, [det("cup", 1.0, 1.0), det("book", 3.0, 1.0)],
                                  source="robot")
                    scans.append(t)
                    if len(scans) == 3:
                        started.set()
                    t += 0.01
        except BaseException as exc:  # pragma: no cover - reported below
            errors.append(exc)
            started.set()

    thread = threading.Thread(target=scanner)
    thread.start()
    try:
        with ObjectMemory.open(url, scope="home") as person:
            assert started.wait(30)  # the robot is writing
            for k in range(30):
                person.relabel(1, f"mug{k % 3}")
                person.move(2, (3.0 + k * 0.001, 1.0, 0.9))
                person.set_attributes(1, {"k": k})
    finally:
        stop.set()
        thread.join(timeout=30)
    assert errors == [] and len(scans) >= 3
    with ObjectMemory.open(url, scope="home", read_only=True) as mem:
        kinds = [c.kind for c in mem._live.store.commits("home")]
        assert kinds.count("correction") == 90 and kinds.count("scan") == 1 + len(scans)
        assert mem.get(1).label == "mug2" and mem.get(1).attributes == {"k": 29}
        moves = mem.events(kind="CORRECTED", object_id=2)
        assert len(moves) == 30
        assert mem.snapshot() == mem.rebuild_from_log().snapshot()
    assert validate(url).ok
