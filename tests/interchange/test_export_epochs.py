"""A memory directory and map epochs: the manifest names the memory's frame epoch, the
directory lists every epoch with its transform (``state/epochs.jsonl``, format 2), import
restores them and refuses a description that disagrees with the events, a provisional
epoch's own scope stays out, and every earlier format version still imports."""

from __future__ import annotations

import contextlib
import hashlib
import json
import shutil
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from locimem import Detection, ObjectMemory
from locimem.errors import IntegrityError, SchemaVersionError
from locimem.frames import invert
from locimem.interchange.directory import EPOCHS, FILES, FORMAT_VERSION, files_of
from locimem.interchange.export import (
    MANIFEST,
    check_directory,
    export_memory,
    import_memory,
    verify_directory,
)
from locimem.interchange.validate import validate_directory
from locimem.store.sqlite import SQLiteStore
from tests import pg
from tests.helpers import file_tree
from tests.memory.test_map_epochs import FRAME_B, FURNITURE, ITEMS, SLOW, day

FIXTURES = Path(__file__).parents[1] / "fixtures"
EARLIER = {1: ("directory_v1", "directory_v1_epochs")}
"""The fixture directories of each earlier format version (tests/fixtures/make_directory_v1.py
wrote those of version 1)."""
LAMP = Detection("lamp", 0.9, (20.0, 20.0, 0.5), (0.3, 0.3, 1.0))
BOOT3 = invert(FRAME_B)  # boot-3 is in day 2's frame, and its transform is given


def _build(path: Path) -> None:
    """A memory of four SLAM sessions: boot-1 its own frame (base), boot-2 aligned by the
    furniture, boot-3 given before its first scan, boot-4 provisional (a lamp far away)."""
    world = {**FURNITURE, **ITEMS}
    with ObjectMemory.open(path, scope="home", config=SLOW, clock=lambda: 1.8e9) as mem:
        day(mem, world, 0.0, np.eye(4), "boot-1", 0, n=30)
        day(mem, world, 1000.0, FRAME_B, "boot-2", 1, n=30)
        mem.align_epoch("boot-3", BOOT3, actor="map-server", reason="the saved map")
        day(mem, world, 2000.0, FRAME_B, "boot-3", 2, n=5)
        for k in range(4):
            mem.observe(3000.0 + k, [LAMP], map_epoch="boot-4")
        assert [(e.name, e.status) for e in mem.map_epochs()] == [
            ("boot-1", "base"), ("boot-2", "aligned"), ("boot-3", "given"),
            ("boot-4", "provisional")]
        assert mem._live.store.scopes() == ["home", "home/epochs/boot-2", "home/epochs/boot-4"]


@pytest.fixture(scope="module")
def source(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("epochs") / "home.loci"
    _build(path)
    return path


@pytest.fixture(scope="module")
def exported(source: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    directory = tmp_path_factory.mktemp("exports") / "home"
    export_memory(source, directory, scope="home")
    return directory


def _epochs(path: Path | str, scope: str = "home") -> list[Any]:
    with ObjectMemory.open(path, scope=scope, read_only=True) as mem:
        return mem.map_epochs()


def _lines(directory: Path) -> list[dict[str, Any]]:
    return [json.loads(x) for x in (directory / EPOCHS).read_text().splitlines()]


def _write_manifest(directory: Path, doc: dict[str, Any]) -> None:
    """Write ``doc`` as the manifest, with its checksum recomputed."""
    from locimem.interchange.export import _document, _manifest_digest

    doc["manifest_sha256"] = _manifest_digest(doc)
    (directory / MANIFEST).write_text(_document(doc))


def _rewrite(directory: Path, name: str, text: str, **manifest: Any) -> None:
    """Replace a file of the directory and update the manifest consistently (its size and
    SHA-256, and ``manifest`` fields: a dict value updates that field's keys), as a careful
    editor would."""
    (directory / name).write_text(text)
    doc = json.loads((directory / MANIFEST).read_text())
    data = (directory / name).read_bytes()
    doc["files"][name] = {"sha256": hashlib.sha256(data).hexdigest(), "bytes": len(data)}
    for key, value in manifest.items():
        doc[key] = {**doc[key], **value} if isinstance(value, dict) else value
    _write_manifest(directory, doc)


def _refused(directory: Path, tmp_path: Path, match: str, error: type[Exception] = IntegrityError,
             **kwargs: Any) -> None:
    """Importing ``directory`` is refused with ``match``, and nothing is left behind."""
    before = sorted(p.name for p in tmp_path.iterdir())
    with pytest.raises(error, match=match):
        import_memory(directory, tmp_path / "new.loci", **kwargs)
    assert sorted(p.name for p in tmp_path.iterdir()) == before
    assert not (tmp_path / "new.loci").exists()


# -- what the directory says -----------------------------------------------------------------
def test_the_manifest_names_the_memory_s_frame_epoch(exported: Path) -> None:
    frame = {"name": "map", "units": "m", "up": "z", "quaternion": "wxyz", "epoch": "boot-1"}
    manifest = json.loads((exported / MANIFEST).read_text())
    assert manifest["format_version"] == FORMAT_VERSION == 2
    assert manifest["map_frame"] == frame
    assert json.loads((exported / "memory.json").read_text())["map_frame"] == frame
    assert manifest["counts"]["epochs"] == 4
    assert EPOCHS in manifest["files"] and EPOCHS in FILES
    info = verify_directory(exported)
    assert (info.format_version, info.epoch, info.map_frame) == (2, "boot-1", frame)
    assert check_directory(exported) == [] and validate_directory(exported).ok


def test_the_directory_lists_every_epoch_with_its_transform(exported: Path,
                                                            source: Path) -> None:
    lines = _lines(exported)
    epochs = _epochs(source)
    assert [line["name"] for line in lines] == ["boot-1", "boot-2", "boot-3", "boot-4"]
    for line, epoch in zip(lines, epochs, strict=True):  # what map_epochs() says, exactly
        assert sorted(line) == ["inliers", "name", "residual_m", "scope", "since", "source",
                                "status", "transform", "yaw_deg"]
        assert (line["name"], line["status"], line["since"], line["yaw_deg"],
                line["residual_m"], line["inliers"], line["scope"]) == (
            epoch.name, epoch.status, epoch.since, epoch.yaw_deg, epoch.residual_m,
            epoch.inliers, epoch.scope)
        assert line["transform"] == (None if epoch.transform is None else
                                     [list(epoch.transform[0]), list(epoch.transform[1])])
    base, aligned, given, provisional = lines
    assert base == {"name": "boot-1", "status": "base", "since": 0.0, "transform": None,
                    "yaw_deg": None, "residual_m": None, "inliers": 0, "scope": None,
                    "source": None}
    assert aligned["status"] == "aligned" and aligned["since"] == 1000.0
    assert aligned["yaw_deg"] == pytest.approx(-35.0, abs=0.5)
    assert 0 < aligned["residual_m"] < 0.05 and aligned["inliers"] >= 4
    assert aligned["scope"] == "home/epochs/boot-2"  # where it was tracked before
    assert aligned["source"] == "tracker"  # the memory aligned it, in a scan of that source
    translation, quaternion = given["transform"]
    assert np.allclose(translation, BOOT3[:3, 3]) and len(quaternion) == 4
    assert (given["status"], given["source"], given["residual_m"], given["inliers"],
            given["scope"]) == ("given", "map-server", None, 0, None)
    assert given["yaw_deg"] == pytest.approx(-35.0)
    assert provisional == {"name": "boot-4", "status": "provisional", "since": 3000.0,
                           "transform": None, "yaw_deg": None, "residual_m": None,
                           "inliers": 0, "scope": "home/epochs/boot-4", "source": None}
    text = (exported / EPOCHS).read_text()
    assert text.count("\n") == 4 and text.endswith("}\n")  # one epoch a line


def test_a_provisional_epoch_s_own_scope_is_not_exported(exported: Path,
                                                         source: Path) -> None:
    with ObjectMemory.open(source, scope="home/epochs/boot-4", read_only=True) as sub:
        (lamp,) = sub.objects()
    assert lamp.label == "lamp"
    objects = [json.loads(x) for x in (exported / "state/objects.jsonl").open()]
    assert "lamp" not in {o["label"] for o in objects} and lamp.id not in {o["id"] for o in
                                                                           objects}
    observations = [json.loads(x) for x in (exported / "log/observations.jsonl").open()]
    assert "lamp" not in {o["label"] for o in observations}
    picture = json.loads((exported / "memory.json").read_text())
    assert "lamp" not in {o["label"] for o in picture["objects"]}
    assert verify_directory(exported).ids["object"][1] < lamp.id


# -- import ----------------------------------------------------------------------------------
def test_import_restores_the_epochs_and_exports_the_same_bytes(exported: Path, source: Path,
                                                               tmp_path: Path) -> None:
    store = tmp_path / "copy.loci"
    report = import_memory(exported, store)
    assert report.counts["epochs"] == 4 and report.counts == verify_directory(exported).counts
    assert _epochs(store) == _epochs(source)
    with contextlib.closing(SQLiteStore(store, read_only=True)) as opened:
        assert opened.scopes() == ["home"]  # no epoch's scope came with it
    export_memory(store, tmp_path / "again", scope="home")
    assert file_tree(tmp_path / "again") == file_tree(exported)


def test_a_provisional_epoch_imported_alone_starts_its_tracking_afresh(exported: Path,
                                                                      tmp_path: Path) -> None:
    store = tmp_path / "alone.loci"
    import_memory(exported, store)
    with ObjectMemory.open(store, scope="home", config=SLOW) as mem:
        before = {o.id: o.center for o in mem.objects()}
        mem.observe(3010.0, [LAMP], map_epoch="boot-4")
        assert [(e.name, e.status) for e in mem.map_epochs()][-1] == ("boot-4", "provisional")
        assert {o.id: o.center for o in mem.objects()} == before  # not the memory's
    with ObjectMemory.open(store, scope="home/epochs/boot-4", read_only=True) as sub:
        (lamp,) = sub.objects()
        assert (lamp.label, lamp.n_detections, lamp.first_seen) == ("lamp", 1, 3010.0)


def test_a_provisional_epoch_s_scope_exported_beside_it_joins_it_again(
        exported: Path, source: Path, tmp_path: Path) -> None:
    export_memory(source, tmp_path / "boot-4", scope="home/epochs/boot-4")
    assert _lines(tmp_path / "boot-4") == []  # that scope named no epoch of its own
    store = tmp_path / "both.loci"
    import_memory(exported, store)
    import_memory(tmp_path / "boot-4", store)
    with ObjectMemory.open(store, scope="home/epochs/boot-4", read_only=True) as sub:
        assert [o.label for o in sub.objects()] == ["lamp"]
    with ObjectMemory.open(store, scope="home", config=SLOW) as mem:  # and it goes on
        before = len(mem.objects())
        mem.observe(3010.0, [LAMP], map_epoch="boot-4")
        assert mem.map_epochs()[-1].status == "provisional" and len(mem.objects()) == before
        assert mem._live.store.scopes() == ["home", "home/epochs/boot-4"]
    with ObjectMemory.open(store, scope="home/epochs/boot-4", read_only=True) as sub:
        ((_, lamp),) = [(o.label, o) for o in sub.objects()]
        assert lamp.n_detections == 5  # the four exported sightings and the new one


def test_a_provisional_epoch_imports_only_under_its_own_scope(exported: Path,
                                                              tmp_path: Path) -> None:
    _refused(exported, tmp_path, "holds map epoch 'boot-4', still provisional and tracked in "
             "scope 'home/epochs/boot-4': it cannot be imported as scope 'guest'",
             scope="guest")


def test_an_export_at_an_earlier_commit_lists_the_epochs_of_then(source: Path,
                                                                 tmp_path: Path) -> None:
    with ObjectMemory.open(source, scope="home", read_only=True) as mem:
        (given,) = [e for e in mem.events(kind=["MAP_ALIGNED"]) if e.data["epoch"] == "boot-3"]
    export_memory(source, tmp_path / "then", scope="home", until_commit=given.commit - 1)
    assert [(e["name"], e["status"]) for e in _lines(tmp_path / "then")] == [
        ("boot-1", "base"), ("boot-2", "aligned")]
    assert verify_directory(tmp_path / "then").epoch == "boot-1"


# -- a description that disagrees with the events ---------------------------------------------
def _edited(exported: Path, tmp_path: Path, lines: list[Any], intact: bool = True,
            **manifest: Any) -> Path:
    """A copy of the directory with ``lines`` as its epochs (and ``manifest`` changes), its
    checksums consistent: ``intact`` (the default), only what it says is wrong."""
    copy = tmp_path / "copy"
    shutil.copytree(exported, copy)
    text = "".join((x if isinstance(x, str) else json.dumps(x)) + "\n" for x in lines)
    _rewrite(copy, EPOCHS, text, **manifest)
    assert (check_directory(copy) == []) == intact
    return copy


def test_an_epoch_line_that_disagrees_with_the_events_is_refused(exported: Path,
                                                                  tmp_path: Path) -> None:
    lines = _lines(exported)
    lines[2]["transform"][0][0] += 1.0  # boot-3's transform, moved by a metre
    lines[2]["yaw_deg"] = 10.0
    copy = _edited(exported, tmp_path, lines)
    _refused(copy, tmp_path, r"state/epochs.jsonl line 3 does not say what the events "
             r"\(MAP_EPOCH, MAP_ALIGNED\) of '.*' say of map epoch 'boot-3' \(they differ in "
             r"transform, yaw_deg\): it says .*; nothing was imported")
    report = validate_directory(copy)
    assert [v.rule for v in report.violations] == ["directory_imports"]
    assert "line 3 does not say what the events" in report.violations[0].message


@pytest.mark.parametrize(("edit", "match"), [
    (lambda lines: lines[:3], r"state/epochs.jsonl has 3 lines, the manifest says 4"),
    (lambda lines: [*lines, {**lines[3], "name": "boot-5"}],
     r"state/epochs.jsonl has 5 lines, the manifest says 4"),
    (lambda lines: [lines[1], lines[0], *lines[2:]],
     r"line 1 does not say what the events .* say of map epoch 'boot-1' \(they differ in "
     r"inliers, name, residual_m, scope, since, source, status, transform, yaw_deg\)"),
    (lambda lines: [*lines[:3], {**lines[3], "status": "aligned"}],
     r"line 4 .* of map epoch 'boot-4' \(they differ in status\)"),
    (lambda lines: [*lines[:3], {**lines[3], "why": "a guess"}],
     r"line 4 .* of map epoch 'boot-4' \(they differ in why\)"),
    (lambda lines: [*lines[:3], "[1, 2"], r"state/epochs.jsonl line 4 is not JSON"),
    (lambda lines: [*lines[:3], "[]"], r"line 4 does not say what .*: it says \[\]"),
])
def test_a_changed_epoch_list_is_refused(edit: Any, match: str, exported: Path,
                                         tmp_path: Path) -> None:
    _refused(_edited(exported, tmp_path, edit(_lines(exported))), tmp_path, match)


def test_epochs_the_events_do_not_record_are_refused(exported: Path, tmp_path: Path) -> None:
    lines = _lines(exported)
    copy = _edited(exported, tmp_path, lines[:3], counts={"epochs": 3})
    _refused(copy, tmp_path, r"state/epochs.jsonl lists 3 map epochs, the events of '.*' "
             r"record 4 \(boot-1, boot-2, boot-3, boot-4\); nothing was imported")
    copy = tmp_path / "copy"
    shutil.rmtree(copy)
    extra = {**lines[3], "name": "boot-5"}
    copy = _edited(exported, tmp_path, [*lines, extra], counts={"epochs": 5})
    _refused(copy, tmp_path, r"lists 5 map epochs, the events of '.*' record 4")


@pytest.mark.parametrize("epoch", ["boot-2", None])
def test_a_manifest_naming_another_frame_epoch_is_refused(epoch: str | None, exported: Path,
                                                          tmp_path: Path) -> None:
    copy = _edited(exported, tmp_path, _lines(exported), map_frame={"epoch": epoch})
    _refused(copy, tmp_path, rf"the manifest of '.*' says the memory's frame is map epoch "
             rf"{epoch!r}, but its events make it 'boot-1' \(the base epoch\); nothing was "
             r"imported")


def test_a_manifest_without_a_frame_epoch_is_malformed(exported: Path, tmp_path: Path) -> None:
    copy = _edited(exported, tmp_path, _lines(exported), False, map_frame={"epoch": 7})
    _refused(copy, tmp_path, r"manifest.json is malformed \(map_frame.epoch should be a map "
             r"epoch's name or null, got 7\)")
    doc = json.loads((copy / MANIFEST).read_text())
    del doc["map_frame"]["epoch"]
    _write_manifest(copy, doc)
    _refused(copy, tmp_path, r"manifest.json is malformed \('epoch'\)")


def test_a_format_2_directory_without_its_epochs_file_is_refused(exported: Path,
                                                                 tmp_path: Path) -> None:
    copy = tmp_path / "copy"
    shutil.copytree(exported, copy)
    (copy / EPOCHS).unlink()
    _refused(copy, tmp_path, "incomplete: state/epochs.jsonl is missing")


# -- earlier format versions -----------------------------------------------------------------
def test_every_earlier_format_version_has_a_fixture() -> None:
    assert sorted(EARLIER) == list(range(1, FORMAT_VERSION))
    for version, names in EARLIER.items():
        for name in names:
            manifest = verify_directory(FIXTURES / name)
            assert manifest.format_version == version
            assert sorted(file_tree(FIXTURES / name)) == sorted([MANIFEST, *files_of(version)])


@pytest.mark.parametrize("name", EARLIER[1])
def test_a_format_1_directory_imports_and_exports_again_as_format_2(name: str,
                                                                    tmp_path: Path) -> None:
    old = FIXTURES / name
    manifest = verify_directory(old)
    assert (manifest.format_version, manifest.epoch) == (1, None)
    assert "epoch" not in manifest.map_frame and "epochs" not in manifest.counts
    assert check_directory(old) == [] and validate_directory(old).ok
    store = tmp_path / "imported.loci"
    report = import_memory(old, store)
    assert "epochs" not in report.counts
    export_memory(store, tmp_path / "again", scope="home", scene="fixture")
    again = file_tree(tmp_path / "again")
    before = file_tree(old)
    for file in files_of(1):  # every row as it was
        if file != "memory.json":
            assert again[file] == before[file], file
    new = json.loads((tmp_path / "again" / MANIFEST).read_text())
    assert new["format_version"] == 2
    lines = _lines(tmp_path / "again")
    if name == "directory_v1":  # a memory that never named an epoch: none
        assert _epochs(store) == [] and lines == []
        assert new["map_frame"]["epoch"] is None and new["counts"]["epochs"] == 0
        return
    epochs = _epochs(store)  # the events carried them
    assert [(e.name, e.status, e.since, e.scope) for e in epochs] == [
        ("boot-1", "base", 0.0, None), ("boot-2", "given", 8.0, None),
        ("boot-3", "provisional", 40.0, "home/epochs/boot-3")]
    assert epochs[1].transform == ((1.0, 0.5, 0.0), (0.7071067811865476, 0.0, 0.0,
                                                     0.7071067811865475))
    assert epochs[1].yaw_deg == 90.0
    assert [(e["name"], e["source"]) for e in lines] == [
        ("boot-1", None), ("boot-2", "map-server"), ("boot-3", None)]
    assert new["map_frame"]["epoch"] == "boot-1" and new["counts"]["epochs"] == 3
    with ObjectMemory.open(store, scope="home", read_only=True) as mem:
        assert [(o.label, [round(c, 6) for c in o.center]) for o in mem.objects()] == [
            ("kitchen table", [1.0, 1.0, 0.375]), ("cup", [0.8, 1.0, 0.8])]


def test_a_format_1_directory_with_an_epochs_file_has_an_extra_file(tmp_path: Path) -> None:
    copy = tmp_path / "copy"
    shutil.copytree(FIXTURES / "directory_v1", copy)
    (copy / EPOCHS).write_text("")
    _refused(copy, tmp_path, "state/epochs.jsonl is not part of a memory directory")


def test_a_format_1_directory_with_a_provisional_epoch_keeps_its_scope(tmp_path: Path) -> None:
    _refused(FIXTURES / "directory_v1_epochs", tmp_path,
             "holds map epoch 'boot-3', still provisional", scope="guest")
    import_memory(FIXTURES / "directory_v1", tmp_path / "guest.loci", scope="guest")


def test_a_newer_format_version_is_refused(exported: Path, tmp_path: Path) -> None:
    copy = _edited(exported, tmp_path, _lines(exported), False,
                   format_version=FORMAT_VERSION + 1)
    _refused(copy, tmp_path, f"format version {FORMAT_VERSION + 1}, newer than this",
             SchemaVersionError)


# -- PostgreSQL ------------------------------------------------------------------------------
@pg.needs_postgres
def test_the_epochs_round_trip_through_postgresql(exported: Path, source: Path,
                                                  tmp_path: Path) -> None:
    server = pg.new_url("epochs")
    import_memory(exported, server)
    assert _epochs(server) == _epochs(source)
    export_memory(server, tmp_path / "again", scope="home")
    assert file_tree(tmp_path / "again") == file_tree(exported)

