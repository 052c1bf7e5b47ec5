"""The memory on PostgreSQL: the memory-level behaviours that are not SQLite's own, run on both
backends (replay == rebuild, scopes, governance, as-of, export → import → export across
backends), moving between backends, validate, the late-scan policy, and a dropped connection.
PostgreSQL cases skip without ``LOCIMEM_TEST_POSTGRES`` (see ``tests/pg.py``)."""

from __future__ import annotations

import filecmp
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from locimem import ObjectMemory
from locimem.errors import ConnectionLost, InvalidInput, NotFound, ScopeError
from locimem.interchange.export import export_memory
from locimem.interchange.load import import_memory
from locimem.interchange.move import migrate
from locimem.interchange.validate import validate
from tests import pg
from tests.helpers import det
from tests.store.scans import pairs

Where = Callable[[Path], str]
BACKENDS = [pytest.param(lambda tmp: str(tmp / "m.loci"), id="sqlite"),
            pytest.param(lambda tmp: pg.new_url("mem"), id="postgres",
                         marks=pg.needs_postgres)]


@pytest.fixture(params=BACKENDS)
def where(request: pytest.FixtureRequest, tmp_path: Path) -> str:
    """A new store of each backend: a file, or a fresh PostgreSQL schema."""
    return request.param(tmp_path)


def day(mem: ObjectMemory) -> None:
    """Scans, a correction, a forget, a room and a move: most kinds of record."""
    mem.define_room("kitchen", [(0, 0), (6, 0), (6, 4), (0, 4)])
    for t in range(8):
        mem.observe(float(t), [det("table", 1.0, 1.0, 0.375, size=(1.2, 0.8, 0.75)),
                               det("cup", 0.8, 1.0, 0.8, feature=[1.0, 0.0, 0.0]),
                               det("book", 3.0, 2.0)])
    mem.relabel(2, "mug", actor="ana", reason="it is a mug")
    mem.forget(3, actor="ana", reason="private")
    for t in range(8, 14):
        mem.observe(float(t), [det("table", 1.0, 1.0, 0.375, size=(1.2, 0.8, 0.75)),
                               det("mug", 4.5, 1.0, 0.8, feature=[1.0, 0.0, 0.0])])


# -- the same memory on both backends --------------------------------------------------------
def test_replay_equals_rebuild_and_reopen(where: str) -> None:
    with ObjectMemory.open(where, scope="home") as mem:
        day(mem)
        snap = mem.snapshot()
        assert mem.rebuild_from_log().snapshot() == snap
        assert [(e.kind.value, e.object_id) for e in mem.events(kind="CORRECTED")] == [
            ("CORRECTED", 2)]
    with ObjectMemory.open(where, scope="home", read_only=True) as again:
        assert again.snapshot() == snap
        assert again.get(2).label == "mug" and again.get(2).label_by == "ana"
        with pytest.raises(NotFound):
            again.get(3)  # forgotten
        assert [a.actor for a in again.audit(kind=["correction", "forget"])] == ["ana", "ana"]
        past = again.as_of(5.0)
        assert past.get(2).label == "cup" and past.now == 5.0
    report = validate(where)
    assert report.ok, str(report)


def test_scopes_stay_apart(where: str) -> None:
    with ObjectMemory.open(where, scope="home") as a:
        home = pairs(a, "cup", 0.0)
    with ObjectMemory.open(where, scope="office") as b:
        pairs(b, "book", 0.0)
        assert [o.label for o in b.objects()] == ["book", "book"]
        assert b.events(label="cup") == []
    with ObjectMemory.open(where, scope="home") as a:
        assert [o.id for o in a.objects()] == home and {o.label for o in a.objects()} == {"cup"}
    assert validate(where).ok


def test_export_import_export_is_byte_identical_across_backends(tmp_path: Path) -> None:
    if pg.URL is None:
        pytest.skip(pg.SKIP_REASON)
    lite = tmp_path / "lite.loci"
    with ObjectMemory.open(lite, scope="home") as mem:
        day(mem)
    first = tmp_path / "first"
    export_memory(lite, first, scope="home")
    server = pg.new_url("imported")
    import_memory(first, server)
    second = tmp_path / "second"
    export_memory(server, second, scope="home")  # from PostgreSQL
    back = tmp_path / "back.loci"
    import_memory(second, back)
    third = tmp_path / "third"
    export_memory(back, third, scope="home")  # and from SQLite again
    for a, b in ((first, second), (first, third)):
        cmp = filecmp.dircmp(a, b)
        assert not (cmp.diff_files or cmp.left_only or cmp.right_only), cmp.report()
        for sub in ("log", "state", "embeddings"):
            sub_cmp = filecmp.dircmp(a / sub, b / sub)
            assert not (sub_cmp.diff_files or sub_cmp.left_only or sub_cmp.right_only)
        assert all((a / f).read_bytes() == (b / f).read_bytes()
                   for f in ("manifest.json", "memory.json"))
    with pytest.raises(ScopeError, match="already has scope"):
        import_memory(first, server)


def test_migrate_sqlite_to_postgres_and_back_gives_the_same_memory(tmp_path: Path) -> None:
    if pg.URL is None:
        pytest.skip(pg.SKIP_REASON)
    lite = tmp_path / "lite.loci"
    with ObjectMemory.open(lite, scope="home") as mem:
        day(mem)
        snap = mem.snapshot()
    with ObjectMemory.open(lite, scope="office") as mem:
        pairs(mem, "pen", 0.0)
    server = pg.new_url("migrated")
    ticks: list[int] = []

    def progress(items: object, total: int) -> object:
        ticks.append(total)
        return items

    report = migrate(lite, server, progress=progress)
    assert report.scopes == ("home", "office") and ticks == [11, 11]
    with ObjectMemory.open(lite, scope="home", read_only=True) as mem:
        home_commits = mem._live.store.count("commits", "home")
    assert report.rows["commits"] == home_commits + 7  # and office's 7 scans
    with ObjectMemory.open(server, scope="home") as mem:
        assert mem.snapshot() == snap and mem.rebuild_from_log().snapshot() == snap
        mem.observe(20.0, [det("plate", 2.0, 3.0)])  # it keeps counting from the copy
        after = mem.snapshot()
    assert validate(server).ok
    home_back = tmp_path / "home.loci"
    migrate(server, home_back, scopes=["home"])
    with ObjectMemory.open(home_back, scope="home", read_only=True) as mem:
        assert mem.snapshot() == after
    with pytest.raises(ScopeError, match="already has scope"):
        migrate(lite, server, scopes=["home"])


@pytest.mark.no_validate  # broken on purpose
@pg.needs_postgres
def test_validate_finds_a_broken_postgres_store() -> None:
    url = pg.new_url("broken")
    with ObjectMemory.open(url, scope="home") as mem:
        pairs(mem, "cup", 0.0)
        mem._live.store._execute("UPDATE objects SET n_detections = 99 WHERE id = 1")  # type: ignore[attr-defined]
    report = validate(url)
    assert not report.ok and {v.rule for v in report.violations} == {"cache_matches_log"}
    assert report.scopes == ("home",)


# -- the fleet's time policy -----------------------------------------------------------------
@pg.needs_postgres
def test_a_late_scan_is_kept_within_late_s_with_its_own_time() -> None:
    url = pg.new_url("late")
    with ObjectMemory.open(url, scope="home") as a, ObjectMemory.open(url, scope="home") as b:
        assert a._live.store.late_s == 1.0
        a.observe(10.0, [det("cup", 0.0, 0.0)])
        b.observe(10.05, [det("cup", 0.0, 0.0)])
        r = a.observe(10.0, [det("cup", 0.0, 0.0)])  # arrived after b's, 0.05 s older
        assert r.assignments == (1,) and a.now == 10.05
        assert [c.t for c in a._live.store.commits("home")] == [10.0, 10.05, 10.0]
        with ObjectMemory.open(url, scope="home") as c, \
                pytest.raises(InvalidInput, match=r"late_s=1\.0"):
            c.observe(9.0, [det("cup", 0.0, 0.0)])  # more than 1 s behind b's
        with pytest.raises(InvalidInput, match="go back in time"):
            a.observe(9.9, [det("cup", 0.0, 0.0)])  # behind a's own latest scan
        assert a.snapshot() == a.rebuild_from_log().snapshot()
    assert validate(url).ok


def test_the_late_scan_tolerance_is_set_by_open_kept_and_only_raised(where: str) -> None:
    with ObjectMemory.open(where, scope="home") as mem:
        assert mem._live.store.late_s == (1.0 if where.startswith("postgresql") else 0.0)
    with ObjectMemory.open(where, scope="home", late_s=3) as mem:
        assert mem._live.store.late_s == 3.0
        mem.observe(10.0, [det("cup", 0.0, 0.0)], source="robot-a")
        mem.observe(7.5, [det("cup", 0.0, 0.0)], source="robot-b")  # 2.5 s late: kept
    with ObjectMemory.open(where, scope="home") as mem:  # the store keeps it
        assert mem._live.store.late_s == 3.0
        with pytest.raises(InvalidInput, match=r"^t=6\.0 is before the latest scan \(t=10\.0\) "
                           r"by more than late_s=3\.0 s .* raise the tolerance to at least 4 s"):
            mem.observe(6.0, [det("cup", 0.0, 0.0)], source="robot-b")
        assert [c.t for c in mem._live.store.commits("home")] == [10.0, 7.5]
    with pytest.raises(InvalidInput, match=r"late_s=1\.0 is below the store's late_s=3\.0"):
        ObjectMemory.open(where, scope="home", late_s=1.0)
    with pytest.raises(InvalidInput, match=r"^late_s must be a finite number of seconds"):
        ObjectMemory.open(where, scope="home", late_s=float("nan"))
    with ObjectMemory.open(where, scope="home", read_only=True) as mem:
        assert mem._live.store.late_s == 3.0
    assert validate(where).ok


@pg.needs_postgres
def test_the_url_sets_the_late_scan_tolerance() -> None:
    url = pg.new_url("lateurl") + "&late_s=5"
    with ObjectMemory.open(url, scope="home") as mem:
        assert mem._live.store.late_s == 5.0
        assert "late_s" not in mem._live.store._conninfo  # type: ignore[attr-defined]
    with pytest.raises(InvalidInput, match=r"^late_s in the URL must be a number of seconds"):
        ObjectMemory.open(url.replace("late_s=5", "late_s=soon"), scope="home")


def _skewed_day(mem: ObjectMemory, skew_s: float) -> list[int | None]:
    """Robots a and b see one cup and one plate, b's clock ``skew_s`` behind a's; their
    scans reach the memory interleaved, as a fleet's do."""
    ids: list[int | None] = []
    for k in range(8):
        t = 100.0 + k
        for source, when in (("robot-a", t), ("robot-b", t - skew_s)):
            r = mem.observe(when, [det("cup", 0.0, 0.0), det("plate", 1.0, 0.0)],
                            source=source)
            ids += r.assignments
    return ids


def test_two_robots_whose_clocks_disagree_by_2_s(where: str) -> None:
    with ObjectMemory.open(where, scope="home") as mem:
        mem.observe(100.0, [det("cup", 0.0, 0.0)], source="robot-a")
        with pytest.raises(InvalidInput, match=r"^t=98\.0 is before the latest scan "
                           r"\(t=100\.0\).* raise the tolerance to at least 2 s: "
                           r"ObjectMemory\.open\(\.\.\., late_s=2\) \(--late-s 2\), or "
                           r"\?late_s=2 in a PostgreSQL URL$"):
            mem.observe(98.0, [det("cup", 0.0, 0.0)], source="robot-b")
        assert mem._live.store.count("commits", "home") == 1  # the refused scan wrote nothing
    second = where if where.startswith("postgresql") else where + "2"
    with ObjectMemory.open(second, scope="fleet", late_s=3) as mem:
        ids = _skewed_day(mem, 2.0)
        assert set(ids) == {1, 2}  # one cup and one plate, whoever saw them
        assert [o.label for o in mem.tracked()] == ["cup", "plate"]
        assert mem.now == 107.0
        by_source = {}
        for c in mem._live.store.commits("fleet"):
            by_source.setdefault(c.actor, []).append(c.t)
        assert by_source == {"robot-a": [100.0 + k for k in range(8)],
                             "robot-b": [98.0 + k for k in range(8)]}
        with pytest.raises(InvalidInput, match=r"go back in time$"):
            mem.observe(104.0, [], source="robot-b")  # behind robot b's own latest scan
        assert mem.snapshot() == mem.rebuild_from_log().snapshot()
    assert validate(second).ok


def test_a_late_look_is_no_evidence_against_what_was_seen_after_it(where: str) -> None:
    from locimem import Camera

    looking = Camera((0.0, 0.0, 0.9), (1.0, 0.0, 0.0, 0.0), 60.0, 6.0)  # along +x
    cup = det("cup", 2.0, 0.0)
    with ObjectMemory.open(where, scope="home", late_s=5) as mem:
        for t in (10.0, 11.0, 12.0):
            mem.observe(t, [cup], looking, source="robot-a")
        late = mem.observe(9.0, [], looking, source="robot-b")  # looked before t=12: no miss
        assert mem._live.store.commits("home")[-1].missed == ()
        assert mem._live.store.load_objects("home")[0].n_missed == 0 and late.events == ()
        mem.observe(13.0, [], looking, source="robot-b")  # a look after it: a miss
        assert mem._live.store.commits("home")[-1].missed == (1,)
        assert mem._live.store.load_objects("home")[0].n_missed == 1
        assert mem.snapshot() == mem.rebuild_from_log().snapshot()


def test_sqlite_keeps_scans_in_time_order(tmp_path: Path) -> None:
    with ObjectMemory.open(tmp_path / "m.loci", scope="home") as mem:
        mem.observe(10.0, [])
        with pytest.raises(InvalidInput, match=r"t=9.99 is before the latest scan"):
            mem.observe(9.99, [])


# -- a dropped connection ----------------------------------------------------------------------
def _kill_backend(pid: int) -> None:
    import psycopg  # (the postgres extra: imported only where PostgreSQL runs)

    assert pg.URL is not None
    with psycopg.connect(pg.URL, autocommit=True) as admin:
        admin.execute("SELECT pg_terminate_backend(%s)", (pid,))


@pg.needs_postgres
def test_a_dropped_connection_mid_scan_writes_nothing_and_the_writer_recovers(
        monkeypatch: pytest.MonkeyPatch) -> None:
    url = pg.new_url("drop")
    with ObjectMemory.open(url, scope="home") as mem:
        ids = pairs(mem, "cup", 0.0)
        before = mem.snapshot()
        commits = mem._live.store.count("commits", "home")
        import locimem.store.postgres.store as pg_module

        write_rows = pg_module.write_rows

        def dropped(conn: Any, *args: object) -> None:
            _kill_backend(conn.info.backend_pid)  # the server ends the session mid-scan
            write_rows(conn, *args)

        monkeypatch.setattr(pg_module, "write_rows", dropped)
        with pytest.raises(ConnectionLost, match="nothing of the interrupted call"):
            mem.observe(7.0, [det("cup", 0.0, 0.0), det("cup", 1.0, 0.0)])
        monkeypatch.undo()
        assert mem.snapshot() == before  # the memory is as the store says
        # meanwhile another writer lands a scan; this one reconnects, catches up, goes on
        with ObjectMemory.open(url, scope="home") as other:
            other.observe(7.5, [det("cup", 0.0, 0.0), det("plate", 3.0, 0.0)])
        r = mem.observe(8.0, [det("cup", 0.0, 0.0), det("cup", 1.0, 0.0),
                              det("plate", 3.0, 0.0)])
        assert list(r.assignments) == [*ids, 3]  # nothing duplicated
        assert mem._live.store.count("commits", "home") == commits + 2
        assert mem.snapshot() == mem.rebuild_from_log().snapshot()
    assert validate(url).ok


@pg.needs_postgres
def test_a_reader_reconnects_after_its_connection_drops() -> None:
    url = pg.new_url("reader")
    with ObjectMemory.open(url, scope="home") as w:
        pairs(w, "cup", 0.0)
    with ObjectMemory.open(url, scope="home", read_only=True) as r:
        _kill_backend(r._live.store._connection().info.backend_pid)  # type: ignore[attr-defined]
        with pytest.raises(ConnectionLost):
            r.refresh()
        with ObjectMemory.open(url, scope="home") as w:
            w.observe(7.0, [det("book", 5.0, 5.0)])
        assert r.refresh() == 1
        assert [o.label for o in r.objects()] == ["cup", "cup", "book"]


@pg.needs_postgres
@pytest.mark.parametrize("page", [1, 2, 7])
def test_the_log_streams_through_server_side_cursors_in_pages(
        page: int, monkeypatch: pytest.MonkeyPatch) -> None:
    """iter_log reads each stream a page at a time; any page size gives the same records
    in the same order as one read of everything (a replay of a day, compared with SQLite's)."""
    import locimem.store.postgres.store as pg_store
    from locimem.store import open_store

    url = pg.new_url("pages")
    with ObjectMemory.open(url, scope="home") as mem:
        day(mem)
    with ObjectMemory.open(":memory:", scope="home") as mem:
        day(mem)
        expected = list(mem._live.store.iter_log("home"))
    store = open_store(url, read_only=True)
    try:
        whole = list(store.iter_log("home"))
        monkeypatch.setattr(pg_store, "LOG_PAGE", page)
        paged = list(store.iter_log("home"))
        assert len(paged) == len(expected) > 50
        assert [type(r).__name__ for r in paged] == [type(r).__name__ for r in expected]
        assert [getattr(r, "seq", None) for r in paged] == [getattr(r, "seq", None)
                                                           for r in whole]
        assert paged[10:20] == whole[10:20] and paged[-1] == whole[-1]
        tail = list(store.iter_log("home", after_commit=3))  # bounds hold across pages
        assert tail and tail == [r for r in whole if getattr(r, "commit", getattr(r, "id", 0)) > 3]
    finally:
        store.close()
