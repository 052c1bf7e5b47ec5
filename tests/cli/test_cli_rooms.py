"""``locimem rooms``: define, link, remove and load rooms as a user types it; each change is
recorded, a rejected one writes nothing, and the memory stays valid through export/import."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from locimem import Detection, ObjectMemory
from locimem.cli import main
from locimem.interchange.validate import validate_store

MUG = Detection("mug", 0.9, (5.0, 1.0, 0.9), (0.08, 0.08, 0.1))


def _run(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    code = main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


def _commits(path: Path) -> int:
    with ObjectMemory.open(path, read_only=True) as mem:
        return len(mem._live.store.commits(mem.scope))


def test_define_creates_the_store_and_list_shows_the_rooms(tmp_path, capsys) -> None:
    s = str(tmp_path / "home.loci")
    code, out, err = _run(capsys, "rooms", "define", s, "Kitchen", "0,0", "4,0", "4,3", "0,3",
                          "--z", "0,2.6", "--actor", "alice", "--reason", "floor plan")
    assert (code, err) == (0, "")
    assert out.splitlines()[0] == "ROOM_DEFINED  kitchen"
    code, out, _ = _run(capsys, "rooms", "define", s, "hall", "4,0", "6,0", "6,3", "4,3")
    assert code == 0
    code, out, _ = _run(capsys, "rooms", "connect", s, "kitchen", "hall")
    assert (code, out.splitlines()[0]) == (0, "ROOMS_CONNECTED kitchen <-> hall")
    code, out, _ = _run(capsys, "rooms", "list", s)
    assert code == 0
    assert out.splitlines() == [
        "hall                6.00 m2  x 4..6, y 0..3; 0 objects; linked to: kitchen",
        "kitchen            12.00 m2  x 0..4, y 0..3, z 0..2.6 m; 0 objects; linked to: hall"]
    code, out, _ = _run(capsys, "rooms", "list", s, "--json")
    doc = json.loads(out)
    assert doc["scope"] == "default"
    assert [(r["name"], r["area_m2"], r["z_range"], r["connected"]) for r in doc["rooms"]] == [
        ("hall", 6.0, None, ["kitchen"]), ("kitchen", 12.0, [0.0, 2.6], ["hall"])]
    code, out, _ = _run(capsys, "audit", s, "--actor", "alice", "--json")
    (commit,) = [json.loads(line) for line in out.splitlines()]
    assert commit["reason"] == "floor plan"


def test_remove_lets_a_room_be_drawn_again_and_objects_follow(tmp_path, capsys) -> None:
    path = tmp_path / "home.loci"
    s = str(path)
    assert _run(capsys, "rooms", "define", s, "kitchen", "0,0", "4,0", "4,3", "0,3")[0] == 0
    with ObjectMemory.open(path) as mem:
        for i in range(7):
            mem.observe(100.0 + i, [MUG])
        (mug,) = mem.objects()
        assert mem.room_of(mug.id) is None  # x = 5: the kitchen was drawn too small
    code, out, _ = _run(capsys, "rooms", "remove", s, "kitchen", "--reason", "too small")
    assert (code, out.splitlines()) == (0, ["ROOM_REMOVED  kitchen", "",
                                            "no rooms defined (locimem rooms define STORE "
                                            "NAME X,Y X,Y X,Y ...)"])
    code, out, _ = _run(capsys, "rooms", "define", s, "kitchen", "0,0", "6,0", "6,3", "0,3")
    assert code == 0
    assert out.splitlines()[-1] == ("kitchen            18.00 m2  x 0..6, y 0..3; 1 objects; "
                                    "linked to: none")
    with ObjectMemory.open(path, read_only=True) as mem:
        assert mem.room_of(mug.id) == "kitchen"
        assert [r.polygon[1] for r in mem.rooms()] == [(6.0, 0.0)]
        before = mem.as_of(100.0)  # the story keeps the first drawing
        assert [r.polygon[1] for r in before.rooms()] == [(4.0, 0.0)]
    assert not validate_store(path).violations
    export = tmp_path / "export"
    assert _run(capsys, "export", s, str(export), "--quiet")[0] == 0
    assert _run(capsys, "import", str(export), str(tmp_path / "copy.loci"), "--quiet")[0] == 0
    with ObjectMemory.open(tmp_path / "copy.loci", read_only=True) as copy:
        assert [(r.name, r.polygon[1]) for r in copy.rooms()] == [("kitchen", (6.0, 0.0))]
    code, out, _ = _run(capsys, "events", s, "--kind", "ROOM_REMOVED")
    assert out.splitlines()[0].endswith("ROOM_REMOVED  kitchen")


@pytest.mark.parametrize("argv, message", [
    (["define", "kitchen", "0,0", "4,0"], "at least 3"),
    (["define", "kitchen", "0,0", "4", "4,3"], "each vertex must be two numbers separated by "
                                              "a comma (like 4,2.5), got '4'"),
    (["define", "kitchen", "0,0", "4,0", "\u0664,3"], "got '\u0664,3'"),  # Arabic-Indic 4
    (["define", "kitchen", "0,0", "4,0", "4,3", "--z", "2,nan"], "--z must be two numbers"),
    (["define", "hall", "0,0", "4,0", "4,3"], "a room named 'hall' is already defined"),
    (["connect", "hall", "garage"], "no room 'garage' (rooms: hall)"),
    (["connect", "hall", "hall"], "cannot connect room 'hall' to itself"),
    (["remove", "garage"], "no room 'garage' (rooms: hall)"),
])
def test_a_bad_change_is_refused_and_writes_nothing(tmp_path, capsys, argv, message) -> None:
    path = tmp_path / "home.loci"
    s = str(path)
    assert _run(capsys, "rooms", "define", s, "hall", "0,0", "4,0", "4,3")[0] == 0
    before = _commits(path)
    code, out, err = _run(capsys, "rooms", argv[0], s, *argv[1:])
    assert (code, out) == (2, "")
    assert err.startswith("error: ") and message in err, err
    assert _commits(path) == before


def test_connect_and_remove_need_an_existing_store(tmp_path, capsys) -> None:
    missing = tmp_path / "nothing.loci"
    for argv in (["connect", str(missing), "a", "b"], ["remove", str(missing), "a"],
                 ["list", str(missing)]):
        code, _, err = _run(capsys, "rooms", *argv)
        assert code == 2 and "nothing.loci" in err
    assert not missing.exists()


def test_load_takes_a_floor_plan_all_or_nothing(tmp_path, capsys) -> None:
    path = tmp_path / "home.loci"
    s = str(path)
    plan = tmp_path / "plan.json"
    rooms = [{"name": "kitchen", "polygon": [[0, 0], [4, 0], [4, 3], [0, 3]],
              "z_range": [0, 2.6]},
             {"name": "hall", "polygon": [[4, 0], [6, 0], [6, 3], [4, 3]]}]
    bad = [*rooms, {"name": "attic", "polygon": [[0, 0], [1, 0]]}]
    plan.write_text(json.dumps({"rooms": bad, "connections": [["kitchen", "hall"]]}))
    code, _, err = _run(capsys, "rooms", "load", s, str(plan))
    assert code == 2 and "at least 3" in err
    assert not path.exists() or _commits(path) == 0
    plan.write_text(json.dumps({"rooms": rooms, "connections": [["kitchen", "hall"]]}))
    code, out, err = _run(capsys, "rooms", "load", s, str(plan), "--json")
    assert (code, err) == (0, "")
    doc = json.loads(out)
    assert [e["kind"] for e in doc["events"]] == ["ROOM_DEFINED", "ROOM_DEFINED",
                                                  "ROOMS_CONNECTED"]
    assert len({e["commit"] for e in doc["events"]}) == 1  # one commit
    assert doc["reason"] is None
    assert [(r["name"], r["connected"]) for r in doc["rooms"]] == [("hall", ["kitchen"]),
                                                                  ("kitchen", ["hall"])]
    assert _commits(path) == 1
    for text, message in ((b"{not json", "is not JSON"), (b"\xff\xfe", "is not JSON")):
        plan.write_bytes(text)
        code, _, err = _run(capsys, "rooms", "load", s, str(plan))
        assert code == 2 and message in err and "polygon" in err
    code, _, err = _run(capsys, "rooms", "load", s, str(tmp_path))
    assert code == 2 and "is a directory, not a regular file: expected a floor plan" in err
    assert _commits(path) == 1


def test_remove_room_in_python(tmp_path) -> None:
    from locimem.errors import NotFound, ReadOnly

    with ObjectMemory.open(tmp_path / "home.loci") as mem:
        mem.define_room("kitchen", [(0, 0), (4, 0), (4, 3)])
        mem.define_room("hall", [(4, 0), (6, 0), (6, 3)])
        mem.connect_rooms("kitchen", "hall")
        ev = mem.remove_room("Hall", actor="bob")
        assert (ev.kind.value, ev.object_id, ev.data) == ("ROOM_REMOVED", 0, {"name": "hall"})
        assert [(r.name, r.connected) for r in mem.rooms()] == [("kitchen", ())]
        with pytest.raises(NotFound, match="no room 'hall'"):
            mem.remove_room("hall")
    with ObjectMemory.open(tmp_path / "home.loci", read_only=True) as mem:
        assert [r.name for r in mem.rooms()] == ["kitchen"]
        assert mem.rebuild_from_log().scene.rooms.names() == ["kitchen"]
        with pytest.raises(ReadOnly):
            mem.remove_room("kitchen")
