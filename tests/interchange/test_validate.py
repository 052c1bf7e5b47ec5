"""validate(): a store built by the memory passes every rule; a copy with one violation seeded
by SQL reports exactly that violation — its rule, scope and ids — and nothing else it did not
cause; the v1 fixture passes once migrated; a memory directory is checked file by file and as
the store it imports to."""

from __future__ import annotations

import json
import shutil
import sqlite3
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from locimem import ObjectMemory
from locimem.errors import NotFound
from locimem.interchange.validate import (
    RULES,
    ValidationReport,
    Violation,
    validate,
    validate_store,
)
from locimem.model import Commit, Event, EventKind
from locimem.store.base import RowChanges
from locimem.store.sqlite import SQLiteStore
from tests.helpers import det

FIXTURES = Path(__file__).parents[1] / "fixtures"
ALL_RULES = ("sqlite_integrity", "schema_version", "schema_tables", "ids_unique", "log_order",
             "record_kinds", "appeared", "observations_accounted", "confidence_range",
             "object_fields", "parents_exist", "relations_live", "levels_rooms",
             "cache_matches_log", "deltas_valid", "keyframes_bounded", "checkpoints_valid")
# the built store's ids: home has a kitchen with a table (1), a cup (2) and a plate (3) on it,
# a forgotten lamp (4) seen again since, a sock (5) seen once that expired, and a ghost
# rejected at every scan; office has a desk (6) and a stapler (7) on it
TABLE, CUP, PLATE, LAMP, SOCK, DESK, STAPLER = range(1, 8)
FRAME = {"t": 0.0, "commit": 1, "seq": 0, "position": [0.0, 0.0, 1.0],
         "quaternion": [1.0, 0.0, 0.0, 0.0], "intrinsics": None, "image": None,
         "embedding": None, "coverage": 1.0, "novelty": 1.0, "depth": None, "score": 0.5}


def _build(path: Path) -> None:
    with ObjectMemory.open(path, scope="home", durable=False, clock=lambda: 1000.0) as mem:
        mem.define_room("kitchen", [(0, 0), (4, 0), (4, 4), (0, 4)])
        scan = [det("kitchen table", 1.5, 1.5, 0.375, size=(1.2, 0.8, 0.75)),
                det("cup", 1.2, 1.4, 0.80, size=(0.08, 0.08, 0.1)),
                det("plate", 1.6, 1.5, 0.76, size=(0.2, 0.2, 0.02)),
                det("lamp", 3.0, 3.0, 1.0, size=(0.3, 0.3, 0.5)),
                det("ghost", 3.5, 0.5, conf=0.01)]
        mem.observe(0.0, [*scan, det("sock", 2.0, 3.5, 0.05)])
        for t in range(1, 8):
            mem.observe(float(t), scan)
        mem.forget(LAMP, actor="bob", reason="privacy")
        mem.observe(8.0, [])  # commit 11: an empty scan
        for t in range(9, 60):
            mem.observe(float(t), scan)
        mem.compact(older_than_s=10.0, trail_s=5.0)
        for t in range(60, 63):
            mem.observe(float(t), scan)
        # the cup's prior-map entry, a delta and kept keyframes: events and rows, as the
        # memory writes them
        _, seq, commit = mem._live.store.counters()
        t = mem.now
        entry = {"label": "cup", "center": [1.2, 1.4, 0.8], "size": [0.08, 0.08, 0.1],
                 "orientation": None, "attributes": {}, "confidence": 1.0,
                 "source": "prior:home", "prior_id": None}
        delta = {"id": 1, "kind": "moved", "object": CUP, "label": "cup",
                 "prior": {"center": [1.2, 1.4, 0.8], "size": [0.08, 0.08, 0.1]},
                 "observed": {"center": [1.5, 1.4, 0.8], "size": [0.08, 0.08, 0.1]},
                 "status": "pending", "opened_at": t,
                 "evidence": {"n": 1, "first_t": t, "last_t": t, "keyframes": [0]},
                 "history": [{"t": t, "status": "pending", "by": "evidence", "reason": None}]}
        kept = [{**FRAME, "t": float(i), "seq": i} for i in range(3)]
        mem._live.store.append("home", [
            Commit(commit, "prior", t, 1000.0, "mapper", None, 0),
            Event(seq, commit, t, EventKind.PRIOR, CUP, "cup", {"entry": entry}),
            Event(seq + 1, commit, t, EventKind.DELTA, CUP, "cup", delta),
            Event(seq + 2, commit, t, EventKind.KEYFRAME, CUP, "cup", {"kept": kept}),
        ], RowChanges(prior={CUP: entry}, deltas={1: delta}, keyframes={CUP: kept}))
    with ObjectMemory.open(path, scope="office", durable=False, clock=lambda: 1000.0) as mem:
        for t in range(7):
            mem.observe(100.0 + t, [det("desk", 1.0, 1.0, 0.4, size=(1.4, 0.7, 0.8)),
                                    det("stapler", 1.1, 1.0, 0.82, size=(0.15, 0.05, 0.05))])


@pytest.fixture(scope="module")
def built(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("validate") / "built.loci"
    _build(path)
    return path


@pytest.fixture
def damaged(built: Path, tmp_path: Path) -> Iterator[Callable[..., Path]]:
    """A copy of the built store with SQL run on it (each argument: one seed)."""

    def make(*seeds: Callable[[sqlite3.Connection], Any]) -> Path:
        path = tmp_path / "damaged.loci"
        shutil.copyfile(built, path)
        conn = sqlite3.connect(path)
        for seed in seeds:
            seed(conn)
        conn.commit()
        conn.close()
        return path

    yield make


def _found(report: ValidationReport) -> set[tuple[str, tuple[int, ...], str | None]]:
    return {(v.rule, v.ids, v.scope) for v in report.violations}


# -- seeds ------------------------------------------------------------------------------------
def _one(conn: sqlite3.Connection, sql: str, args: Any = ()) -> Any:
    return conn.execute(sql, args).fetchone()[0]


def _new_commit(conn: sqlite3.Connection, scope: str) -> tuple[int, int, float]:
    """A new empty scan at the scope's latest time: (commit id, next seq, t)."""
    commit = _one(conn, "SELECT max(id) + 1 FROM commits")
    t = _one(conn, "SELECT t FROM commits WHERE scope = ? ORDER BY id DESC LIMIT 1", (scope,))
    conn.execute("INSERT INTO commits (id, scope, kind, t, recorded_at, actor, n_detections) "
                 "VALUES (?, ?, 'scan', ?, 1000.0, 'test', 0)", (commit, scope, t))
    seq = _one(conn, "SELECT max(seq) + 1 FROM (SELECT seq FROM observations UNION ALL "
                     "SELECT seq FROM events)")
    return commit, seq, t


def _relation(subject: int, relation: str, target: int) -> Callable[[sqlite3.Connection], None]:
    def seed(conn: sqlite3.Connection) -> None:
        commit, seq, t = _new_commit(conn, "home")
        data = {"added": True, "confidence": 1.0, "object": target, "object_label": "x",
                "relation": relation}
        conn.execute("INSERT INTO events VALUES (?, ?, 'home', ?, 'RELATION', ?, 'x', ?)",
                     (seq, commit, t, subject, json.dumps(data)))
    return seed


def _sql(*statements: str) -> Callable[[sqlite3.Connection], None]:
    def seed(conn: sqlite3.Connection) -> None:
        for statement in statements:
            conn.execute(statement)
    return seed


def _appeared_again_in_office(conn: sqlite3.Connection) -> None:
    commit, seq, t = _new_commit(conn, "office")
    conn.execute("INSERT INTO events SELECT ?, ?, 'office', ?, kind, object_id, label, data "
                 f"FROM events WHERE kind = 'APPEARED' AND object_id = {PLATE}", (seq, commit, t))


LAST_GHOST = "(SELECT max(seq) FROM observations WHERE key LIKE 'ghost@%')"
SIX_FRAMES = json.dumps([{**FRAME, "t": float(i), "seq": i} for i in range(6)])
DAMAGE: dict[str, tuple[Callable[[sqlite3.Connection], None],
                        set[tuple[str, tuple[int, ...], str | None]]]] = {
    # an id that APPEARED in two scopes; office's log now holds an object its cache lacks
    "ids_unique": (_appeared_again_in_office, {("ids_unique", (PLATE,), None),
                                               ("cache_matches_log", (PLATE,), "office")}),
    # an event whose time is not its commit's (a RELATION event: replay ignores it)
    "log_order": (_sql("UPDATE events SET t = t + 1 WHERE kind = 'RELATION' AND scope = 'home' "
                       "AND json_extract(data, '$.relation') = 'next_to'"),
                  {("log_order", (43,), None)}),
    # the empty scan at t=8 moved back before the forget at t=7
    "commit_time": (_sql("UPDATE commits SET t = 1.0 WHERE id = 11"),
                    {("log_order", (11,), "home")}),
    "record_kinds": (_sql("UPDATE commits SET kind = 'party' WHERE kind = 'scene'"),
                     {("record_kinds", (1,), None)}),
    # (replay starts from the checkpoint, which already holds the plate: only the rule fires)
    "appeared": (_sql("DELETE FROM events WHERE kind = 'APPEARED' AND scope = 'home' AND "
                      f"object_id = {PLATE}"),
                 {("appeared", (PLATE,), "home")}),
    # an observation of an object that never was: and replay stops at it
    "observations_accounted": (
        _sql("UPDATE observations SET object_id = 999 WHERE seq = (SELECT max(seq) FROM "
             f"observations WHERE object_id = {PLATE})"),
        {("observations_accounted", (999,), "home"), ("cache_matches_log", (999,), "home")}),
    # a rejected detection's confidence out of range (it counts for nothing in the state)
    "confidence_range": (_sql(f"UPDATE observations SET confidence = 1.5 WHERE seq = {LAST_GHOST}"),
                         {("confidence_range", (328,), "home")}),
    "object_fields": (_sql(f"UPDATE objects SET lost_at = 5.0 WHERE id = {PLATE}"),
                      {("object_fields", (PLATE,), "home"),
                       ("cache_matches_log", (PLATE,), "home")}),
    # the cup on an object that never was: the relation also stands on nothing live
    "parents_exist": (_relation(CUP, "on", 999), {("parents_exist", (999,), "home"),
                                                  ("relations_live", (CUP, 999), "home")}),
    # the cup on the forgotten lamp
    "relations_live": (_relation(CUP, "on", LAMP), {("relations_live", (CUP, LAMP), "home")}),
    # the table on the cup: furniture on an item
    "levels_rooms": (_relation(TABLE, "on", CUP), {("levels_rooms", (TABLE, CUP), "home")}),
    "cache_matches_log": (_sql(f"UPDATE objects SET n_detections = n_detections + 1 "
                               f"WHERE id = {PLATE}"),
                          {("cache_matches_log", (PLATE,), "home")}),
    # row and event agree (so the cache matches the log) on a status that does not exist
    "deltas_valid": (_sql("UPDATE deltas SET status = 'bogus', "
                          "data = json_set(data, '$.status', 'bogus')",
                          "UPDATE events SET data = json_set(data, '$.status', 'bogus') "
                          "WHERE kind = 'DELTA'"),
                     {("deltas_valid", (1,), "home")}),
    "keyframes_bounded": (_sql(f"UPDATE keyframes SET data = '{SIX_FRAMES}'",
                               "UPDATE events SET data = json_set(data, '$.kept', "
                               f"json('{SIX_FRAMES}')) WHERE kind = 'KEYFRAME'"),
                          {("keyframes_bounded", (CUP,), "home")}),
    "checkpoints_valid": (_sql("DELETE FROM events WHERE kind = 'COMPACTED'"),
                          {("checkpoints_valid", (52,), "home")}),
}


# -- a clean store ----------------------------------------------------------------------------
def test_a_built_store_passes_every_rule(built: Path) -> None:
    report = validate_store(built)
    assert report.rules == RULES == ALL_RULES
    assert report.scopes == ("home", "office")
    assert (report.violations, report.warnings, report.ok) == ([], [], True)
    assert str(report) == f"{built}: 17 rules checked, scopes: home, office: ok"
    assert report.to_dict() == {"target": str(built), "ok": True, "rules": list(ALL_RULES),
                                "scopes": ["home", "office"], "violations": [],
                                "warnings": []}
    assert validate(built).to_dict() == report.to_dict()
    only = validate_store(built, scope="office", quick=True)
    assert (only.scopes, only.ok) == (("office",), True)
    with pytest.raises(NotFound, match=r"^no scope 'garage' in '.*built\.loci' \(scopes: "
                                       r"'home', 'office'\)$"):
        validate_store(built, scope="garage")


def test_the_built_store_holds_what_the_seeds_aim_at(built: Path) -> None:
    conn = sqlite3.connect(built)
    one = conn.execute
    assert one("SELECT id, kind, t FROM commits WHERE id IN (1, 10, 11, 52)").fetchall() == [
        (1, "scene", 0.0), (10, "forget", 7.0), (11, "scan", 8.0), (52, "scan", 49.0)]
    assert one("SELECT seq, object_id FROM events WHERE kind = 'RELATION' AND scope = 'home' "
               "AND json_extract(data, '$.relation') = 'next_to'").fetchall() == [(43, CUP)]
    assert one(f"SELECT seq, rejected FROM observations WHERE seq = {LAST_GHOST}").fetchall() \
        == [(328, "below_min_confidence")]
    assert one("SELECT commit_id FROM checkpoints").fetchall() == [(52,)]
    assert one("SELECT id, scope FROM tombstones").fetchall() == [(LAMP, "home")]
    assert one("SELECT object_id FROM events WHERE kind = 'EXPIRED'").fetchall() == [(SOCK,)]
    assert one("SELECT id, label FROM objects ORDER BY id").fetchall() == [
        (TABLE, "kitchen table"), (CUP, "cup"), (PLATE, "plate"), (DESK, "desk"),
        (STAPLER, "stapler")]
    conn.close()


# -- seeded violations ------------------------------------------------------------------------
@pytest.mark.parametrize("name", sorted(DAMAGE))
def test_each_seeded_violation_is_reported_with_its_rule_and_ids(
        damaged: Callable[..., Path], name: str) -> None:
    seed, expected = DAMAGE[name]
    report = validate_store(damaged(seed))
    assert _found(report) == expected
    assert report.rules == ALL_RULES and report.warnings == [] and not report.ok


def test_every_seeded_violation_is_reported_in_one_store(damaged: Callable[..., Path]) -> None:
    report = validate_store(damaged(*(seed for seed, _ in DAMAGE.values())))
    found = _found(report)
    expected = set().union(*(pairs for _, pairs in DAMAGE.values()))
    # replay now stops at the observation of #999, so it compares nothing else in home
    unreachable = {("cache_matches_log", (PLATE,), "home")}
    assert expected - unreachable <= found
    assert {v.rule for v in report.violations} == {rule for rule, _, _ in expected}
    assert found - expected == set()


def test_a_furniture_moved_out_of_every_room_is_a_warning(damaged: Callable[..., Path]) -> None:
    report = validate_store(damaged(_sql(
        f"UPDATE objects SET cx = 50.0, cy = 50.0 WHERE id = {TABLE}")))
    assert _found(report) == {("cache_matches_log", (TABLE,), "home")}  # moved in the cache
    assert report.warnings == [Violation(
        "levels_rooms", (TABLE,),
        "furniture #1 'kitchen table' at (50.00, 50.00, 0.38) lies outside every room", "home")]
    text = str(report)
    assert text.startswith(f"{report.target}: 17 rules checked, scopes: home, office: "
                           "1 violation, 1 warning\n")
    assert text.endswith("\n  warning [levels_rooms] scope 'home': furniture #1 'kitchen "
                         "table' at (50.00, 50.00, 0.38) lies outside every room")


@pytest.mark.parametrize(("seed", "expected"), [
    # counts that no longer agree with the observations carrying the key (and the checkpoint)
    (_sql("UPDATE rejection_keys SET count = count + 1"),
     {("observations_accounted", (), "home"), ("cache_matches_log", (), "home")}),
    (_sql("UPDATE tombstones SET data = json_set(data, '$.suppressed', 3)"),
     {("observations_accounted", (LAMP,), "home"), ("cache_matches_log", (LAMP,), "home")}),
    # a detection of the last scan gone (no compaction covers it): the key's count is off too
    (_sql(f"DELETE FROM observations WHERE seq = {LAST_GHOST}"),
     {("observations_accounted", (66,), "home"), ("observations_accounted", (), "home"),
      ("cache_matches_log", (), "home")}),
    (_sql(f"UPDATE observations SET rejected = ' ' WHERE seq = {LAST_GHOST}"),
     {("observations_accounted", (328,), "home"), ("cache_matches_log", (), "home")}),
    # one seq for an observation and an event (the event now sits among another commit's)
    (_sql("UPDATE events SET seq = (SELECT max(seq) FROM observations) WHERE seq = (SELECT "
          "max(seq) FROM events WHERE kind = 'RELATION' AND scope = 'office')"),
     {("ids_unique", (350,), None), ("log_order", (350,), None)}),
], ids=["rejection-count", "suppressed-count", "missing-detection", "no-reason", "seq-twice"])
def test_more_seeded_violations(damaged: Callable[..., Path], seed: Any,
                                expected: set[Any]) -> None:
    assert _found(validate_store(damaged(seed))) == expected


def test_messages_name_what_is_wrong(damaged: Callable[..., Path]) -> None:
    report = validate_store(damaged(*(DAMAGE[name][0] for name in (
        "observations_accounted", "parents_exist", "deltas_valid"))))
    assert [str(v) for v in report.violations] == [
        "[observations_accounted] scope 'home': 1 accepted observation(s) (first seq 326) "
        "belong to object #999, which is neither live, a tombstone nor ended",
        "[parents_exist] scope 'home': object #999 does not exist, but is named by the "
        "relation #2 on (event seq 351)",
        "[relations_live] scope 'home': the RELATION events leave #2 on #999 standing, but "
        "#999 is not a live object",
        "[cache_matches_log] scope 'home': the log does not replay at observation seq 326: "
        "KeyError: 999",
        "[deltas_valid] scope 'home': delta 1: status 'bogus'; DELTA event seq 330 sets "
        "status 'bogus' (statuses are pending, confirmed, rejected, applied)",
    ]
    assert json.loads(json.dumps(report.to_dict()))["violations"][0] == {
        "rule": "observations_accounted", "ids": [999], "scope": "home",
        "message": report.violations[0].message}


@pytest.mark.parametrize(("seed", "rule", "message"), [
    (_sql("PRAGMA writable_schema = ON",
          "UPDATE sqlite_master SET sql = replace(sql, '(scope, label, seq)', "
          "'(scope, kind, seq)') WHERE name = 'events_label'"),
     "sqlite_integrity", "integrity_check: row 1 missing from index events_label; "),
    (_sql("UPDATE migrations SET name = '0002_renamed' WHERE version = 2"), "schema_version",
     "the migrations table holds [('0001_initial', 1), ('0002_renamed', 2), "
     "('0003_existence_belief', 3)], expected [('0001_initial', 1), "
     "('0002_sources_prior_keyframes', 2), ('0003_existence_belief', 3)]"),
    (_sql("DROP INDEX events_label"), "schema_tables", "index events_label is missing"),
], ids=["index-out-of-step", "migrations", "index-missing"])
def test_a_damaged_file_stops_at_the_first_broken_foundation(
        damaged: Callable[..., Path], seed: Any, rule: str, message: str) -> None:
    report = validate_store(damaged(seed))
    assert report.rules == ALL_RULES[:ALL_RULES.index(rule) + 1]
    assert [(v.rule, v.ids, v.scope) for v in report.violations] == [(rule, (), None)]
    assert report.violations[0].message.startswith(message)
    assert report.scopes == ()


# -- other targets ----------------------------------------------------------------------------
def test_the_v1_fixture_validates_clean_after_migration(tmp_path: Path) -> None:
    path = tmp_path / "store_v1.loci"
    shutil.copyfile(FIXTURES / "store_v1.loci", path)
    before = validate_store(path)  # read-only: the file is left as it is
    assert [(v.rule, v.message) for v in before.violations] == [
        ("schema_version", "schema version '1'; this locimem reads 3 (open the store once "
                           "writable to migrate it; a backup is taken first)")]
    assert path.read_bytes() == (FIXTURES / "store_v1.loci").read_bytes()
    ObjectMemory.open(path, scope="home").close()  # migrates
    report = validate_store(path)
    assert (report.ok, report.warnings, report.rules, report.scopes) == (
        True, [], ALL_RULES, ("home",))
    assert validate_store(tmp_path / "store_v1.loci.backup-v1").rules == ALL_RULES[:2]


@pytest.mark.no_validate
def test_an_open_store_is_checked_on_its_own_connection() -> None:
    with ObjectMemory.open(":memory:", scope="lab") as mem:
        mem.observe(0.0, [det("cup", 1.0, 1.0)])
        assert validate_store(mem._live.store).ok
        mem._live.store.conn.execute("UPDATE objects SET label = 'mug'")
        report = validate_store(mem._live.store)
        assert (report.target, report.scopes) == (":memory:", ("lab",))
        assert [str(v) for v in report.violations] == [
            "[cache_matches_log] scope 'lab': object #1 differs from replay in label "
            "(label: cache 'mug', log 'cup')"]
        assert not mem._live.store.conn.in_transaction  # its read transaction is over
        mem.observe(1.0, [])  # and the memory writes on


def test_what_is_not_a_store(tmp_path: Path) -> None:
    text = tmp_path / "notes.txt"
    text.write_bytes(b"shopping list\n" * 400)
    report = validate(text)
    assert [(v.rule, v.message) for v in report.violations] == [
        ("sqlite_integrity", "not a readable SQLite database (file is not a database)")]
    with pytest.raises(NotFound, match=r"^no store at '.*nowhere\.loci'$"):
        validate_store(tmp_path / "nowhere.loci")
    with pytest.raises(NotFound, match=r"^no directory at"):
        from locimem.interchange.validate import validate_directory

        validate_directory(tmp_path / "nowhere")
    store = SQLiteStore(":memory:")
    store.close()
    with pytest.raises(NotFound, match=r"^the store ':memory:' is closed$"):
        validate_store(store)


def test_a_memory_directory_is_checked_as_files_and_as_the_store_it_imports_to(
        built: Path, tmp_path: Path) -> None:
    from locimem.interchange.export import export_memory

    directory = tmp_path / "home-export"
    export_memory(built, directory, scope="home")
    report = validate(directory)
    assert (report.ok, report.scopes, report.warnings) == (True, ("home",), [])
    assert report.rules == ("manifest_checksums", "directory_imports", *ALL_RULES)
    with (directory / "log" / "events.jsonl").open("a") as f:
        f.write("\n")
    report = validate(directory)
    assert report.rules == ("manifest_checksums",)
    assert [v.rule for v in report.violations] == ["manifest_checksums"]
    assert "log/events.jsonl" in report.violations[0].message


def test_a_directory_s_store_is_validated_once_in_full(built: Path, tmp_path: Path,
                                                      monkeypatch: pytest.MonkeyPatch) -> None:
    """The import validates the store it builds (with integrity_check, not quick_check), and
    that report is the directory's: the store is not validated a second time."""
    from locimem.interchange import store_check as module
    from locimem.interchange.export import export_memory

    export_memory(built, tmp_path / "d", scope="home")
    calls: list[bool] = []
    real = module.validate_store

    def spy(store: Any, **kw: Any) -> Any:
        calls.append(kw.get("quick", False))
        return real(store, **kw)

    monkeypatch.setattr(module, "validate_store", spy)
    report = validate(tmp_path / "d")
    assert (report.ok, report.scopes) == (True, ("home",)) and calls == [False]


def test_the_suite_validates_every_store_it_closes() -> None:
    # tests/conftest.py wraps SQLiteStore.close (unless LOCIMEM_TEST_VALIDATE=0)
    import os

    if os.environ.get("LOCIMEM_TEST_VALIDATE", "1") != "0":
        assert SQLiteStore.close.__name__ == "validating_close"


def _records_table(pairs: list[tuple[int, int, bool]]) -> sqlite3.Connection:
    conn = sqlite3.connect(":memory:")
    for table in ("observations", "events"):
        conn.execute(f"CREATE TABLE {table} (seq INTEGER PRIMARY KEY, commit_id INTEGER)")
        conn.execute(f"CREATE INDEX {table}_commit ON {table} (commit_id)")
    for seq, commit, is_event in pairs:
        conn.execute(f"INSERT OR IGNORE INTO {'events' if is_event else 'observations'} "
                     "VALUES (?, ?)", (seq, commit))
    return conn


@settings(max_examples=300, deadline=None)
@given(st.lists(st.tuples(st.integers(1, 40), st.integers(1, 8), st.booleans()), max_size=30))
def test_the_quick_commit_order_check_agrees_with_the_window_query(pairs) -> None:
    """log_order's quick check (each commit's span of seqs, from the commit indexes) says the
    records are in commit order only when the window query finds none out of place, and —
    each seq once — exactly then."""
    from locimem.integrity.rules_log import _out_of_order, _records_in_commit_order

    conn = _records_table(pairs)
    records = ("(SELECT seq AS k, commit_id AS v, '' AS p FROM observations UNION ALL "
               "SELECT seq, commit_id, '' FROM events)")
    quick, found = _records_in_commit_order(conn), _out_of_order(conn, records)
    if quick:
        assert not found
    twice = conn.execute("SELECT count(*) FROM observations JOIN events USING (seq)").fetchone()
    if twice == (0,):
        assert quick == (not found)
