"""The command line's contract: every command once in text and once with ``--json``, on a
store with one scope and on one with two — exit codes, JSON that parses (JSON Lines for the
streams, one document otherwise) and carries what the text shows; scopes resolved or refused
by name; corrections recorded, audited, kept across reopening and valid."""

from __future__ import annotations

import json
import shutil
from collections.abc import Callable
from pathlib import Path

import pytest

from locimem import Detection, ObjectMemory
from locimem.cli import build_parser, main
from locimem.interchange.validate import validate_store

TABLE = Detection("kitchen table", 0.9, (1.0, 1.0, 0.375), (1.2, 0.8, 0.75))
BOOK = Detection("book", 0.9, (0.8, 1.0, 0.78), (0.2, 0.15, 0.05))
KEYS = Detection("keys", 0.9, (1.3, 0.9, 0.76), (0.08, 0.04, 0.02))
MUG = Detection("mug", 0.9, (3.0, 1.0, 0.9), (0.08, 0.08, 0.1))
MUG_TOO = Detection("mug", 0.9, (3.6, 1.0, 0.9), (0.08, 0.08, 0.1))
BIKE = Detection("bike", 0.9, (10.0, 1.0, 0.5), (1.7, 0.5, 1.0))
T0 = 1764600000.0  # scans on the Unix clock: text shows ISO 8601

STREAMS = {"events", "audit", "history"}  # JSON Lines; everything else: one document
NOT_DRIVEN = {"mcp"}  # a protocol server: tests/test_mcp.py drives it (stdio and HTTP)


def _build(path: Path, scopes: tuple[str, ...]) -> None:
    with ObjectMemory.open(path, scope=scopes[0]) as mem:
        mem.define_room("kitchen", [(0, 0), (5, 0), (5, 3), (0, 3)])
        for i in range(7):
            mem.observe(T0 + i, [TABLE, BOOK, KEYS, MUG, MUG_TOO])
    for scope in scopes[1:]:
        with ObjectMemory.open(path, scope=scope) as mem:
            for i in range(7):
                mem.observe(T0 + i, [BIKE])


@pytest.fixture(params=[("flat",), ("flat", "garage")], ids=["one scope", "two scopes"])
def store(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory,
          tmp_path: Path) -> tuple[Path, tuple[str, ...]]:
    scopes = request.param
    built = tmp_path_factory.getbasetemp() / f"built-{len(scopes)}.loci"
    if not built.exists():
        _build(built, scopes)
    path = tmp_path / "home.loci"
    shutil.copyfile(built, path)
    return path, scopes


def _commands(path: Path, tmp: Path) -> dict[str, tuple[list[str], int]]:
    """Each command's arguments (without --json and --scope) and its exit status."""
    s = str(path)
    tmp.mkdir(exist_ok=True)
    scans = tmp / "scans.jsonl"
    scans.write_text(json.dumps({"t": T0 + 10, "detections": [
        {"label": "cup", "confidence": 0.9, "center": [2, 2, 0.9],
         "size": [0.08, 0.08, 0.1]}]}) + "\n")
    return {
        "demo": (["demo", "--store", str(tmp / "demo.loci")], 0),
        "inspect": (["inspect", s], 0),
        "events": (["events", s], 0),
        "history": (["history", s, "2"], 0),
        "recall": (["recall", s, "keys"], 0),
        "describe": (["describe", s, "2"], 0),
        "query": (["query", s, "what is the book on"], 0),
        "find": (["find", s, "something to drink from"], 0),
        "near": (["near", s, "1.0", "1.0", "0.8", "--radius", "0.5"], 0),
        "audit": (["audit", s], 0),
        "deltas": (["deltas", s], 0),
        "relabel": (["relabel", s, "2", "novel", "--actor", "alice", "--reason", "r"], 0),
        "move": (["move", s, "3", "1.2", "0.9", "0.76", "--actor", "alice"], 0),
        "set": (["set", s, "2", "color=red", "fragile=true", "--actor", "alice"], 0),
        "merge": (["merge", s, "4", "5", "--actor", "alice", "--reason", "one mug"], 0),
        "split": (["split", s, "4", "3.6", "1.0", "0.9", "--label", "cup", "--actor", "bob"],
                  0),
        "forget": (["forget", s, "3", "--actor", "alice", "--reason", "private"], 0),
        "rooms": (["rooms", "list", s], 0),
        "consolidate": (["consolidate", s], 0),
        "compact": (["compact", s, "--dry-run", "--older-than", "1"], 0),
        "export": (["export", s, str(tmp / "export-dir"), "--quiet"], 0),
        "import": (["import", str(tmp / "export-dir"), str(tmp / "copy.loci"), "--quiet"], 0),
        "migrate": (["migrate", s, str(tmp / "migrated.loci"), "--quiet"], 0),
        "validate": (["validate", s], 0),
        "snapshot": (["snapshot", s, "--out", str(tmp / "home.snap"), "--quiet"], 0),
        "restore": (["restore", str(tmp / "home.snap"), str(tmp / "restored.loci")], 0),
        "ingest": (["ingest", str(scans), s, "--quiet"], 0),
        "map": (["map", s, "-o", str(tmp / "map.html")], 0),
        "rerun": (["rerun", s, "-o", str(tmp / "memory.rrd")], 0),
        "bench": (["bench", "crowd"], 0),
    }


SCOPED = {"inspect", "events", "history", "recall", "describe", "query", "find", "near",
          "audit", "deltas", "relabel", "move", "set", "merge", "split", "forget",
          "consolidate", "compact", "export", "ingest", "map", "rerun", "rooms"}


# what lists objects, as every command's JSON shows one (status, confidence, room, ...)
OBJECT_COMMANDS = {"inspect", "recall", "query", "find", "near", "relabel", "move", "set",
                   "merge", "split"}


def _subcommands() -> set[str]:
    parser = build_parser()
    (action,) = [a for a in parser._actions if a.dest == "command"]
    return set(action.choices)


def test_every_command_is_driven(tmp_path: Path) -> None:
    commands = _commands(Path("x.loci"), tmp_path)
    assert set(commands) | NOT_DRIVEN == _subcommands()
    assert set(commands) >= SCOPED


def _run(capsys: pytest.CaptureFixture[str], argv: list[str]) -> tuple[int, str, str]:
    code = main(argv)
    out, err = capsys.readouterr()
    return code, out, err


def _check_json(name: str, out: str) -> list[dict]:
    """The output parses as the contract says; returns its records (one for a document)."""
    if name in STREAMS:
        records = [json.loads(line) for line in out.splitlines()]
        assert all(isinstance(r, dict) for r in records)
        return records
    doc = json.loads(out)
    assert isinstance(doc, dict)
    return [doc]


def _objects(doc: dict) -> list[dict]:
    found = [o for key in ("objects", "published", "others") for o in doc.get(key) or []]
    found += [doc[key] for key in ("object", "anchor") if doc.get(key)]
    if isinstance(doc.get("scopes"), dict):  # inspect
        found += [o for scope in doc["scopes"].values() for o in scope["published"]]
    return found


@pytest.mark.parametrize("mode", ["text", "json"])
def test_every_command_keeps_the_output_contract(store, tmp_path, capsys, mode) -> None:
    path, scopes = store
    for name, (argv, status) in _commands(path, tmp_path / mode).items():
        if name in SCOPED and len(scopes) > 1:
            argv = [*argv, "--scope", "flat"]
        if name == "bench" and mode == "text":
            continue  # the same suite, printed: test_cli runs the text benches
        argv = [*argv, "--json"] if mode == "json" else argv
        code, out, err = _run(capsys, argv)
        assert code == status, (name, err)
        if mode == "text":
            assert out.strip(), name
            with pytest.raises(json.JSONDecodeError):
                json.loads(out.splitlines()[0])
            continue
        records = _check_json(name, out)
        if name in OBJECT_COMMANDS:
            objects = [o for r in records for o in _objects(r)]
            assert objects, name
            for obj in objects:
                assert {"id", "label", "status", "confidence", "room"} <= set(obj), name
        if name == "demo":
            (tmp_path / mode / "demo.loci").unlink()


def test_text_shows_rooms_iso_times_and_grammar(store, capsys) -> None:
    path, scopes = store
    scope = ["--scope", "flat"] if len(scopes) > 1 else []
    code, out, _ = _run(capsys, ["recall", str(path), "keys", *scope])
    assert code == 0
    assert out == ("The keys (#3) are on the kitchen table (#1) in the kitchen; last seen just "
                   "now (2025-12-01T14:40:06Z).\n")
    code, out, _ = _run(capsys, ["recall", str(path), "mug", *scope])
    assert "Also called that (1):" in out and "#5 " in out and "in the kitchen" in out
    code, out, _ = _run(capsys, ["near", str(path), "1.0", "1.0", "0.8", *scope])
    assert "in the kitchen" in out
    code, out, _ = _run(capsys, ["events", str(path), *scope])
    lines = out.splitlines()
    assert lines[0] == f"{'t=0.00 s':>24}  ROOM_DEFINED  kitchen"  # before any scan: seconds
    assert lines[1].startswith("2025-12-01T14:40:00.000Z  APPEARED      #1 kitchen table")
    assert "KEYFRAME" not in out
    code, out, _ = _run(capsys, ["audit", str(path), *scope, "--json"])
    for line in out.splitlines():
        for ev in json.loads(line)["events"]:
            for value in _numbers(ev["data"]):
                assert value == round(value, 4)


def _numbers(value: object) -> list[float]:
    if isinstance(value, float):
        return [value]
    if isinstance(value, dict):
        return [x for v in value.values() for x in _numbers(v)]
    if isinstance(value, list):
        return [x for v in value for x in _numbers(v)]
    return []


def test_events_kinds_can_be_chosen_and_excluded(store, capsys) -> None:
    path, scopes = store
    scope = ["--scope", "flat"] if len(scopes) > 1 else []

    def kinds(*extra: str) -> set[str]:
        code, out, _ = _run(capsys, ["events", str(path), *scope, "--json", *extra])
        assert code == 0
        return {json.loads(line)["kind"] for line in out.splitlines()}

    everything = kinds("--all-kinds")
    assert kinds() == everything - {"KEYFRAME"}
    assert kinds("--kind", "promoted") == {"PROMOTED"}
    assert kinds("--exclude-kind", "RELATION") == everything - {"KEYFRAME", "RELATION"}


def test_scopes_are_resolved_or_refused_by_name(store, capsys) -> None:
    path, scopes = store
    code, out, err = _run(capsys, ["recall", str(path), "mug", "--scope", "attic"])
    names = ", ".join(repr(s) for s in sorted(scopes))
    assert (code, out, err) == (2, "", f"error: {path} holds no scope 'attic'; its scopes: "
                                       f"{names}\n")
    for argv in (["events", str(path)], ["relabel", str(path), "2", "novel"],
                 ["compact", str(path), "--dry-run"], ["export", str(path), "x.usda"]):
        code, out, err = _run(capsys, [*argv, "--scope", "attic"])
        assert (code, err) == (2, f"error: {path} holds no scope 'attic'; its scopes: "
                                  f"{names}\n"), argv
    code, out, err = _run(capsys, ["recall", str(path), "mug"])
    if len(scopes) == 1:  # the only scope needs no --scope
        assert code == 0 and "The mug (#4)" in out
    else:
        assert (code, err) == (2, f"error: {path} holds 2 scopes ({names}): pass --scope to "
                                  "say which\n")


CORRECTIONS: list[tuple[list[str], Callable[[ObjectMemory], None]]] = [
    (["relabel", "2", "novel"],
     lambda m: m.get(2).label == "novel" or pytest.fail("relabel")),
    (["move", "2", "1.1", "1.0", "0.78"],
     lambda m: m.get(2).center == (1.1, 1.0, 0.78) or pytest.fail("move")),
    (["set", "2", "color=red"],
     lambda m: m.get(2).attributes == {"color": "red"} or pytest.fail("set")),
    (["merge", "4", "5"],
     lambda m: [o.id for o in m.objects() if o.label == "mug"] == [4] or pytest.fail("merge")),
    (["split", "4", "3.6", "1.0", "0.9", "--label", "cup"],
     lambda m: [o.label for o in m.objects() if o.center == (3.6, 1.0, 0.9)] == ["cup"]
     or pytest.fail("split")),
    (["forget", "3"],
     lambda m: 3 not in [o.id for o in m.objects()] or pytest.fail("forget")),
]


def test_corrections_are_audited_kept_and_valid(store, capsys) -> None:
    path, scopes = store
    scope = ["--scope", "flat"] if len(scopes) > 1 else []
    for i, (argv, _) in enumerate(CORRECTIONS):
        code, out, err = _run(capsys, [argv[0], str(path), *argv[1:], *scope, "--actor",
                                       "alice", "--reason", f"fix {i}", "--json"])
        assert code == 0, err
        doc = json.loads(out)
        assert (doc["actor"], doc["reason"]) == ("alice", f"fix {i}")
    code, out, _ = _run(capsys, ["audit", str(path), *scope, "--actor", "alice", "--json"])
    entries = [json.loads(line) for line in out.splitlines()]
    assert [e["reason"] for e in entries] == [f"fix {i}" for i in range(len(CORRECTIONS))]
    assert [[ev["kind"] for ev in e["events"] if ev["kind"] != "RELATION"]
            for e in entries] == [["CORRECTED"], ["CORRECTED"], ["CORRECTED"], ["MERGED"],
                                  ["SPLIT", "APPEARED", "PROMOTED", "CORRECTED"],
                                  ["FORGOTTEN"]]
    assert {e["kind"] for e in entries} == {"correction", "forget"}
    with ObjectMemory.open(path, scope="flat", read_only=True) as mem:  # reopened
        for _, holds in CORRECTIONS:
            holds(mem)
        assert mem.snapshot() == mem.rebuild_from_log().snapshot()
        report = validate_store(mem._live.store)
    assert report.ok, report
    code, out, _ = _run(capsys, ["validate", str(path)])
    assert code == 0
