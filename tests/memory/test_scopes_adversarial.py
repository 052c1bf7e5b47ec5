"""Scopes, adversarially: three scopes share one file, with the same labels at the same places,
interleaved commit by commit. No read path — objects, tracked, get, history, events, recall,
rejected, rejections, tombstones, audit, as-of views, the CLI — ever shows another scope's data;
mutators refuse another scope's ids and write nothing; bad scope names never reach the file."""

from __future__ import annotations

import contextlib
import io
import json
import shutil
import subprocess
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from locimem import EventKind, ObjectMemory, TrackerConfig
from locimem.cli import main
from locimem.errors import NotFound, ScopeError
from locimem.query.reader import MemoryReader
from tests.helpers import det

CONFIG = TrackerConfig(promote_after=2)
# "home/kitchen" starts with "home" and "HOME" differs only by case: prefix or
# case-insensitive matching anywhere would leak between them
SCOPES = ("home", "home/kitchen", "HOME")
TABLES = ("commits", "observations", "events", "objects", "tombstones", "rejection_keys",
          "checkpoints")


def _all_rows(conn: Any) -> dict[str, list[tuple[Any, ...]]]:
    return {t: conn.execute(f"SELECT * FROM {t} ORDER BY 1, 2").fetchall() for t in TABLES}


def _scan(t: float) -> list[Any]:
    return [det("cup", 1.0, 1.0), det("mug", 2.0, 2.0), det("glass", 3.0, 3.0, conf=0.01)]


# every scope runs the same story, step by step, the scopes interleaved
STEPS: list[Callable[[ObjectMemory, dict[str, int]], Any]] = [
    lambda m, ids: ids.update(
        zip(("cup", "mug"), m.observe(0.0, _scan(0.0)).assignments[:2], strict=True)),
    lambda m, ids: m.observe(1.0, _scan(1.0)),
    lambda m, ids: m.relabel(ids["cup"], "vase", actor=f"{m.scope}-op", t=2.0),
    lambda m, ids: m.move(ids["mug"], (2.5, 2.0, 0.9), actor=f"{m.scope}-op", t=2.0),
    lambda m, ids: m.set_attributes(ids["cup"], {"owner": m.scope}, t=2.0),
    lambda m, ids: ids.update(plate=m.observe(3.0, [*_scan(3.0), det("plate", 4.0, 4.0)])
                              .assignments[-1]),
    lambda m, ids: m.forget(ids["plate"], actor=f"{m.scope}-op", reason="privacy", t=3.0),
    lambda m, ids: m.observe(4.0, [det("plate", 4.0, 4.0)]),  # suppressed in its own scope
    lambda m, ids: m.compact(older_than_s=1.0, trail_s=1.0),
    lambda m, ids: m.observe(5.0, [det("cup", 1.0, 1.0), det("glass", 3.0, 3.0, conf=0.01)]),
]


def _build(path: Path) -> dict[str, dict[str, int]]:
    ids: dict[str, dict[str, int]] = {s: {} for s in SCOPES}
    for step in STEPS:
        for scope in SCOPES:
            with ObjectMemory.open(path, scope=scope, config=CONFIG, durable=False) as memory:
                step(memory, ids[scope])
    return ids


@pytest.fixture(scope="module")
def shared(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, dict[str, dict[str, int]]]:
    path = tmp_path_factory.mktemp("scopes") / "shared.loci"
    return path, _build(path)


@pytest.fixture
def copy(shared: tuple[Path, dict[str, dict[str, int]]], tmp_path: Path
         ) -> tuple[Path, dict[str, dict[str, int]]]:
    """A private copy of the shared store, for tests that write."""
    src, ids = shared
    dst = tmp_path / "copy.loci"
    shutil.copyfile(src, dst)
    for suffix in ("-wal", "-shm"):
        if Path(str(src) + suffix).exists():
            shutil.copyfile(str(src) + suffix, str(dst) + suffix)
    return dst, ids


def test_ids_commits_and_seqs_never_collide(shared: tuple[Path, Any]) -> None:
    path, ids = shared
    all_ids = [oid for scope in SCOPES for oid in ids[scope].values()]
    assert len(all_ids) == len(set(all_ids)) == 9
    assert ids["home"] == {"cup": 1, "mug": 2, "plate": 7}
    assert ids["home/kitchen"] == {"cup": 3, "mug": 4, "plate": 8}
    assert ids["HOME"] == {"cup": 5, "mug": 6, "plate": 9}
    with ObjectMemory.open(path, scope="home", read_only=True) as memory:
        one = memory._live.store.conn.execute
        assert [r[0] for r in one("SELECT DISTINCT scope FROM commits ORDER BY 1")] == sorted(
            SCOPES)
        # every record carries its commit's scope
        for table in ("observations", "events"):
            assert one(f"SELECT count(*) FROM {table} r JOIN commits c ON c.id = r.commit_id "
                       "WHERE c.scope != r.scope").fetchone() == (0,)
        assert one("SELECT count(*) FROM (SELECT object_id FROM events WHERE kind = 'APPEARED' "
                   "GROUP BY object_id HAVING count(DISTINCT scope) > 1)").fetchone() == (0,)
        assert one("SELECT count(*) FROM objects o JOIN events e ON e.object_id = o.id AND "
                   "e.kind = 'APPEARED' WHERE e.scope != o.scope").fetchone() == (0,)


def _check_isolated(reader: MemoryReader, own: dict[str, int], others: list[int],
                    own_commits: set[int]) -> None:
    """Nothing of another scope on any read path of ``reader``."""
    own_ids = set(own.values())
    assert {o.id for o in reader.objects()} <= own_ids
    assert {o.id for o in reader.tracked()} <= own_ids
    for status in ("confirmed", "tentative", "doubted", "lost", "forgotten"):
        assert {o.id for o in reader.objects(status=status)} <= own_ids
    assert {o.id for o in reader.objects(label="cup")} <= own_ids
    for oid in others:
        with pytest.raises(NotFound):
            reader.get(oid)
        with pytest.raises(NotFound):
            reader.history(oid)
        assert reader.events(object_id=oid) == []
        assert reader.audit(object_id=oid) == []
    assert {e.object_id for e in reader.events()} <= own_ids | {0}
    assert {e.commit for e in reader.events()} <= own_commits
    for kind in EventKind:
        assert {e.object_id for e in reader.events(kind=kind)} <= own_ids | {0}
    for name in ("cup", "vase", "mug", "plate", "glass"):
        found = reader.recall(name)
        assert found.object_id is None or found.object_id in own_ids
        assert set(found.others) <= own_ids
    assert {o.commit for o in reader.rejected()} <= own_commits
    for key in ("glass@15,15,4", f"tomb:{own['plate']}"):
        assert {o.commit for o in reader.rejected(key=key)} <= own_commits
    for oid in others:
        assert reader.rejected(key=f"tomb:{oid}") == []
    for r in reader.rejections():
        assert r.count <= 4  # this scope's own glass sightings only (four scans)
    assert {t.object_id for t in reader.tombstones()} <= own_ids
    assert {a.commit for a in reader.audit()} <= own_commits
    assert {ev.object_id for a in reader.audit() for ev in a.events} <= own_ids | {0}
    snap = reader.snapshot()
    assert set(snap["objects"]) <= own_ids and set(snap["tombstones"]) <= own_ids
    # spatial, temporal and search read paths
    every = ["confirmed", "tentative", "doubted", "lost"]
    for point in ((1.0, 1.0, 0.9), (2.0, 2.0, 0.9), (4.0, 4.0, 0.9)):
        assert {o.id for o in reader.near(point, 100.0, status=every)} <= own_ids
        assert {o.id for o in reader.nearest(point, 50, status=every)} <= own_ids
    assert {o.id for o in reader.within((-9, -9, -9), (9, 9, 9), status=every)} <= own_ids
    assert {o.id for o in reader.recent(100)} <= own_ids
    assert {o.id for o in reader.stale(1e9, status=every)} <= own_ids
    assert {c.object_id for c in reader.changes_since(-1e9)} <= own_ids | {0}
    for text in ("cup", "vase", "mug", "plate", "something to drink from"):
        assert {f.object.id for f in reader.find(text, status=every)} <= own_ids
    for label in ("cup", "vase", "mug", "plate"):
        last = reader.last_seen(label)
        assert last is None or last.id in own_ids
    for oid in others:
        assert reader.where_was(oid, 1e9).found is False
        with pytest.raises(NotFound):
            reader.describe(oid)
        with pytest.raises(NotFound):
            reader.relations(oid)
    if reader.now is not None:
        for obj in reader.objects():
            for r in reader.history(obj.id):
                assert r.commit in own_commits


def test_no_read_path_shows_another_scope(shared: tuple[Path, Any]) -> None:
    path, ids = shared
    for scope in SCOPES:
        others = [oid for s in SCOPES if s != scope for oid in ids[s].values()]
        with ObjectMemory.open(path, scope=scope, config=CONFIG, read_only=True) as memory:
            own_commits = {c.id for c in memory._live.store.commits(scope)}
            assert len(own_commits) == len(STEPS)
            _check_isolated(memory, ids[scope], others, own_commits)
            # what each scope holds is exactly its own story
            assert [o.id for o in memory.objects()] == [ids[scope]["cup"], ids[scope]["mug"]]
            assert memory.get(ids[scope]["cup"]).attributes == {"owner": scope}
            assert [t.object_id for t in memory.tombstones()] == [ids[scope]["plate"]]
            assert memory.tombstones()[0].suppressed == 1
            assert [(r.key, r.count) for r in memory.rejections()] == [("glass@15,15,4", 4)]
            assert {a.actor for a in memory.audit()} == {"tracker", f"{scope}-op", "operator",
                                                         "maintenance"}
            assert len(memory.audit(kind="maintenance")) == 1
            assert memory.snapshot() == memory.rebuild_from_log().snapshot()
            for t in (-1.0, 0.0, 1.0, 2.0, 3.0, 4.0, 5.0):
                _check_isolated(memory.as_of(t), ids[scope], others, own_commits)
            for c in memory._live.store.commits(scope):
                _check_isolated(memory.as_of(recorded=c.recorded_at), ids[scope], others,
                                own_commits)


def test_identical_stories_give_identical_memories_up_to_ids(shared: tuple[Path, Any]) -> None:
    path, ids = shared
    pictures = []
    for scope in SCOPES:
        with ObjectMemory.open(path, scope=scope, config=CONFIG, read_only=True) as memory:
            rename = {v: k for k, v in ids[scope].items()}
            pictures.append(sorted(
                (rename[o.id], o.label, o.center, o.n_detections, o.label_votes, o.status.value)
                for o in memory.objects()))
    assert pictures[0] == pictures[1] == pictures[2]
    assert pictures[0] == [
        ("cup", "vase", (1.0, 1.0, 0.9), 4, {"cup": 0.9 + 0.9 + 0.9 + 0.9}, "confirmed"),
        ("mug", "mug", (2.0, 2.0, 0.9), 3, {"mug": 0.9 + 0.9 + 0.9}, "confirmed"),
    ]


def _run_cli(*args: str) -> subprocess.CompletedProcess[str]:
    """The command, in process (a subprocess each took a second: 13 s for this test)."""
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        code = main(list(args))
    return subprocess.CompletedProcess(args, code, out.getvalue(), err.getvalue())


def test_cli_inspect_and_events_show_only_the_scope(shared: tuple[Path, Any]) -> None:
    path, ids = shared
    counts, audits = {}, {}
    for scope in SCOPES:
        with ObjectMemory.open(path, scope=scope, read_only=True) as memory:
            counts[scope] = {t: memory._live.store.count(t, scope)
                             for t in ("commits", "observations", "events")}
            audits[scope] = len(memory.audit())
    for scope in SCOPES:
        proc = _run_cli("inspect", str(path), "--scope", scope, "--json")
        assert proc.returncode == 0, proc.stderr
        report = json.loads(proc.stdout)
        assert list(report["scopes"]) == [scope]
        mine = report["scopes"][scope]
        assert {k: mine[k] for k in ("commits", "observations", "events")} == counts[scope]
        assert mine["objects"]["forgotten"] == 1
        assert {o["id"] for o in mine["published"]} <= set(ids[scope].values())
        assert mine["rejected"] == 4 + 1  # four glass sightings and one suppressed plate
        proc = _run_cli("events", str(path), "--scope", scope, "--json")
        assert proc.returncode == 0, proc.stderr
        seen = {json.loads(line)["object_id"] for line in proc.stdout.splitlines()}
        assert seen <= set(ids[scope].values()) | {0}
        assert ids[scope]["cup"] in seen
        proc = _run_cli("audit", str(path), "--scope", scope, "--json")
        assert proc.returncode == 0, proc.stderr
        entries = [json.loads(line) for line in proc.stdout.splitlines()]
        assert len(entries) == audits[scope]
        assert {ev["object_id"] for e in entries for ev in e["events"]} <= (
            set(ids[scope].values()) | {0})
        assert {e["actor"] for e in entries} >= {f"{scope}-op"}
        assert not {e["actor"] for e in entries} & {f"{s}-op" for s in SCOPES if s != scope}
        proc = _run_cli("recall", str(path), "vase", "--scope", scope, "--json")
        assert proc.returncode == 0, proc.stderr
        assert json.loads(proc.stdout)["object_id"] == ids[scope]["cup"]
    whole = json.loads(_run_cli("inspect", str(path), "--json").stdout)
    assert sorted(whole["scopes"]) == sorted(SCOPES)
    for scope in SCOPES:
        assert whole["scopes"][scope]["commits"] == counts[scope]["commits"]


MUTATORS: dict[str, Callable[[ObjectMemory, int], Any]] = {
    "relabel": lambda m, oid: m.relabel(oid, "hacked"),
    "move": lambda m, oid: m.move(oid, (9.0, 9.0, 9.0)),
    "set_attributes": lambda m, oid: m.set_attributes(oid, {"x": 1}),
    "forget": lambda m, oid: m.forget(oid),
}


@pytest.mark.parametrize("name", list(MUTATORS))
def test_mutators_refuse_another_scopes_ids(copy: tuple[Path, Any], name: str) -> None:
    path, ids = copy
    with ObjectMemory.open(path, scope="home", config=CONFIG) as memory:
        before = _all_rows(memory._live.store.conn)
        for scope in ("home/kitchen", "HOME"):
            for oid in ids[scope].values():
                with pytest.raises(NotFound, match=rf"^no object {oid} in scope 'home'$"):
                    MUTATORS[name](memory, oid)
        assert _all_rows(memory._live.store.conn) == before
    for scope in ("home/kitchen", "HOME"):
        with ObjectMemory.open(path, scope=scope, config=CONFIG) as other:
            assert other.snapshot() == other.rebuild_from_log().snapshot()
            assert other.get(ids[scope]["cup"]).label == "vase"


def test_forgetting_in_one_scope_does_not_suppress_another(copy: tuple[Path, Any]) -> None:
    path, ids = copy
    with ObjectMemory.open(path, scope="home", config=CONFIG) as home:
        home.forget(ids["home"]["cup"], t=6.0)
        assert home.observe(6.0, [det("vase", 1.0, 1.0)]).rejected == {0: "forgotten"}
    with ObjectMemory.open(path, scope="home/kitchen", config=CONFIG) as kitchen:
        result = kitchen.observe(6.0, [det("vase", 1.0, 1.0)])
        assert result.assignments == (ids["home/kitchen"]["cup"],)
        assert result.rejected == {}
    with ObjectMemory.open(path, scope="fresh", config=CONFIG) as fresh:
        # a scope that never saw anything: the same sightings are new objects
        result = fresh.observe(0.0, [det("vase", 1.0, 1.0), det("plate", 4.0, 4.0)])
        assert result.rejected == {}
        assert result.assignments == (10, 11)
        assert [e.kind for e in result.events] == [EventKind.APPEARED] * 2
        assert fresh.tombstones() == [] and fresh.rejections() == []


def test_an_unused_scope_reads_empty(shared: tuple[Path, Any]) -> None:
    path, _ = shared
    with pytest.raises(ScopeError, match=r"holds no scope 'home/kitchen/drawer'; its scopes: "
                                         r"'HOME', 'home', 'home/kitchen'$") as caught:
        ObjectMemory.open(path, scope="home/kitchen/drawer", read_only=True)
    assert caught.value.scopes == ["HOME", "home", "home/kitchen"]
    # a writer may open a scope that holds nothing yet (it is about to write one)
    with ObjectMemory.open(path, scope="home/kitchen/drawer") as memory:
        assert memory.now is None
        assert memory.objects() == [] and memory.events() == [] and memory.audit() == []
        assert memory.rejected() == [] and memory.rejections() == []
        assert memory.tombstones() == []
        assert memory.recall("cup").found is False
        with pytest.raises(NotFound):
            memory.get(1)
        assert memory.as_of(100.0).objects() == []


BAD_SCOPES: list[Any] = ["a'; DROP TABLE x;--", "", "a" * 65, "home kitchen", "home\x00",
                         "home%", "h*", "x\ny", None, 5, b"home"]


@pytest.mark.parametrize("scope", BAD_SCOPES, ids=[f"bad{i}" for i in range(len(BAD_SCOPES))])
def test_bad_scope_names_raise_and_touch_nothing(copy: tuple[Path, Any], tmp_path: Path,
                                                 scope: Any) -> None:
    path, _ = copy
    before = path.read_bytes()
    with pytest.raises(ScopeError):
        ObjectMemory.open(path, scope=scope)
    with pytest.raises(ScopeError):
        ObjectMemory.open(path, scope=scope, read_only=True)
    assert path.read_bytes() == before
    fresh = tmp_path / "never.loci"
    with pytest.raises(ScopeError):
        ObjectMemory.open(fresh, scope=scope)
    assert not fresh.exists()
    with ObjectMemory.open(path, scope="home", read_only=True) as memory:
        assert memory._live.store.scopes() == sorted(SCOPES)
        tables = {r[0] for r in memory._live.store.conn.execute(
            "SELECT name FROM sqlite_master WHERE type = 'table'")}
        assert {"commits", "observations", "events", "objects"} <= tables


def test_sixty_four_characters_is_the_limit(tmp_path: Path) -> None:
    with ObjectMemory.open(tmp_path / "s.loci", scope="a" * 64) as memory:
        assert memory.scope == "a" * 64


@pytest.mark.parametrize("scope", ["../x", "..", ".", "./x", "a/../b", "a//b", "/abs",
                                   "a/", "x/.."])
def test_path_like_scopes_raise_and_touch_nothing(tmp_path: Path, scope: str) -> None:
    path = tmp_path / "s.loci"
    with pytest.raises(ScopeError, match=r"^scope parts separated by / must be non-empty"):
        ObjectMemory.open(path, scope=scope)
    assert list(tmp_path.iterdir()) == []


def test_hierarchical_scope_names_are_opaque_and_isolated(tmp_path: Path) -> None:
    """Allowed names with dots and slashes never become file paths, and never leak."""
    work = tmp_path / "work"
    work.mkdir()
    path = work / "s.loci"
    with ObjectMemory.open(path, scope="fleet/home1") as home:
        home.observe(0.0, [det("cup", 1.0, 1.0)])
    for scope in ("fleet", "fleet/home1.v2", "fleet/home", "home1"):
        with ObjectMemory.open(path, scope=scope) as other:
            assert other.objects() == [] and other.events() == [] and other.audit() == []
    with ObjectMemory.open(path, scope="fleet/home1.v2") as odd:
        odd.observe(0.0, [det("cup", 1.0, 1.0)])
        assert [o.id for o in odd.objects()] == [2]
    assert sorted(p.name for p in tmp_path.iterdir()) == ["work"]
    assert sorted(p.name for p in work.iterdir()) == ["s.loci", "s.loci-writer"]
    with ObjectMemory.open(path, scope="fleet/home1", read_only=True) as home:
        assert [o.id for o in home.objects()] == [1]
        assert home._live.store.scopes() == ["fleet/home1", "fleet/home1.v2"]
