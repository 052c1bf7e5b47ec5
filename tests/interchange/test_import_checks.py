"""Imports checked row by row (issue 13, item 4): a crafted directory whose checksums were
recomputed is refused with a typed error and nothing written — every row's types and domain
are checked, the rows go into a scratch store that must pass ``validate`` before anything
touches the target, id ranges are bounded and checked against the target — and a signed
export (HMAC) is refused without the right key."""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from locimem import Detection, ObjectMemory
from locimem.errors import IntegrityError, LocimemError
from locimem.interchange.directory import MANIFEST, MAX_IMPORT_ID
from locimem.interchange.export import _document, _manifest_digest, export_memory
from locimem.interchange.load import import_memory
from locimem.interchange.validate import validate_store

KEY = b"0123456789abcdef-a-test-key"


def _build(path: Path, scope: str = "home") -> None:
    with ObjectMemory.open(path, scope=scope) as m:
        for t in range(5):
            m.observe(float(t), [Detection("cup", 0.9, (1.0, 1.0, 0.8), (0.1, 0.1, 0.1),
                                           feature=np.ones(4))])
        m.define_room("kitchen", [(0.0, 0.0), (3.0, 0.0), (3.0, 3.0), (0.0, 3.0)])


@pytest.fixture(scope="module")
def exported(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Scope "home" exported to ``dir``; scope "other", written after it in the same file (so
    its ids do not collide with home's), exported to ``other``."""
    root = tmp_path_factory.mktemp("export")
    _build(root / "src.loci")
    with ObjectMemory.open(root / "src.loci", scope="other") as m:
        m.observe(9.0, [Detection("plate", 0.9, (5.0, 5.0, 0.8), (0.2, 0.2, 0.02))])
    export_memory(root / "src.loci", root / "dir", scope="home")
    export_memory(root / "src.loci", root / "other", scope="other")
    _OTHER[:] = [root / "other"]
    return root / "dir"


_OTHER: list[Path] = []  # the "other" export (set by the fixture)


def _target(tmp_path: Path) -> Path:
    """An existing store holding scope "other" (ids after home's)."""
    target = tmp_path / "target" / "m.loci"
    target.parent.mkdir(exist_ok=True)
    if not target.exists():
        import_memory(_OTHER[0], target)
    return target


def _reseal(directory: Path, **manifest_changes: Any) -> None:
    """Recompute every file's size and SHA-256 and the manifest's own checksum: what an
    attacker who edits a directory does."""
    doc = json.loads((directory / MANIFEST).read_text())
    for name, entry in doc["files"].items():
        data = directory.joinpath(*name.split("/")).read_bytes()
        entry["sha256"], entry["bytes"] = hashlib.sha256(data).hexdigest(), len(data)
    for key, value in manifest_changes.items():
        doc[key] = value
    doc["manifest_sha256"] = _manifest_digest(doc)
    (directory / MANIFEST).write_text(_document(doc))


def _forge(exported: Path, tmp_path: Path, file: str,
           edit: Callable[[list[dict[str, Any]]], None], **manifest: Any) -> Path:
    copy = tmp_path / "forged"
    shutil.copytree(exported, copy)
    path = copy.joinpath(*file.split("/"))
    rows = [json.loads(line) for line in path.read_text().splitlines()]
    edit(rows)
    path.write_text("".join(json.dumps(r, sort_keys=True, separators=(",", ":")) + "\n"
                            for r in rows))
    _reseal(copy, **manifest)
    return copy


def _tree(directory: Path) -> dict[str, bytes]:
    """The store files of ``directory`` (SQLite's -wal/-shm and the writer lock left out: a
    read-only probe may leave them) and no other file."""
    return {p.name: p.read_bytes() for p in sorted(directory.iterdir())
            if not p.name.endswith(("-wal", "-shm", "-writer"))}


def _refused(directory: Path, tmp_path: Path, match: str) -> None:
    """Refused into a new store (nothing created) and into an existing one (unchanged, still
    writable), with a typed error."""
    new = tmp_path / "new" / "m.loci"
    new.parent.mkdir(exist_ok=True)
    with pytest.raises(IntegrityError, match=match):
        import_memory(directory, new)
    assert os.listdir(new.parent) == []
    target = _target(tmp_path)
    before = _tree(target.parent)
    with pytest.raises(IntegrityError, match=match):
        import_memory(directory, target)
    assert _tree(target.parent) == before
    with ObjectMemory.open(target, scope="other") as m:  # still writable, still valid
        m.observe(10.0, [Detection("plate", 0.9, (5.0, 5.0, 0.8), (0.2, 0.2, 0.02))])
    assert validate_store(target).ok


def _objects(edit: Callable[[dict[str, Any]], None]) -> Callable[[list[dict[str, Any]]], None]:
    def apply(rows: list[dict[str, Any]]) -> None:
        edit(rows[0])
    return apply


def test_an_intact_directory_still_imports_into_new_and_existing_stores(exported, tmp_path):
    assert import_memory(exported, tmp_path / "a.loci").counts["objects"] == 1
    target = _target(tmp_path)
    assert not import_memory(exported, target).created
    with ObjectMemory.open(target, scope="home") as m:
        assert [o.label for o in m.objects()] == ["cup"]
    assert validate_store(target).ok


def test_an_object_centre_that_is_a_string_is_refused(exported, tmp_path):
    forged = _forge(exported, tmp_path, "state/objects.jsonl",
                    _objects(lambda r: r.update(cx="1.0")))
    _refused(forged, tmp_path, r"objects.jsonl line 1: cx")


@pytest.mark.parametrize("mass", [[["cup", "4.5"]], [["cup", -1.0]], [["cup", 4.5, 1]], "cup",
                                  [[7, 4.5]]])
def test_a_bad_label_mass_is_refused(exported, tmp_path, mass):
    forged = _forge(exported, tmp_path, "state/objects.jsonl",
                    _objects(lambda r: r.update(label_mass=mass)))
    _refused(forged, tmp_path, r"objects.jsonl line 1: label_mass")


def test_a_room_at_1e300_is_refused(exported, tmp_path):
    def far(rows: list[dict[str, Any]]) -> None:
        rows[0]["rooms"]["rooms"][0]["polygon"][1] = [1e300, 0.0]
    forged = _forge(exported, tmp_path, "state/scene.jsonl", far)
    _refused(forged, tmp_path, r"scene.jsonl line 1: rooms")


def test_a_nul_laden_100k_character_label_is_refused(exported, tmp_path):
    label = ("cup\x00" * 25_000)
    forged = _forge(exported, tmp_path, "state/objects.jsonl",
                    _objects(lambda r: r.update(label=label)))
    _refused(forged, tmp_path, r"objects.jsonl line 1: label")


@pytest.mark.parametrize(("actor", "problem"), [
    ("a" * 101, "must be at most 100 characters, got 101"),
    ("alice\nbob", "must be one line, single-spaced"),
    ("alice  bob", "must be one line, single-spaced"),
    ("", "must not be empty"),
])
def test_an_actor_the_api_would_not_keep_is_refused(exported, tmp_path, actor, problem):
    def first(rows: list[dict[str, Any]]) -> None:
        rows[0]["actor"] = actor
    forged = _forge(exported, tmp_path, "log/commits.jsonl", first)
    _refused(forged, tmp_path, rf"commits.jsonl line 1: actor {problem}")


def test_markup_in_an_actor_is_text_and_imports(exported, tmp_path):
    # the API takes it (a name is text); every page that shows it escapes it
    def first(rows: list[dict[str, Any]]) -> None:
        rows[0]["actor"] = "<b>alice</b>"
    forged = _forge(exported, tmp_path, "log/commits.jsonl", first)
    import_memory(forged, tmp_path / "m.loci")
    with ObjectMemory.open(tmp_path / "m.loci", scope="home", read_only=True) as mem:
        assert mem._live.store.commits("home")[0].actor == "<b>alice</b>"


@pytest.mark.no_validate  # the scratch store is invalid on purpose (and then deleted)
def test_rows_that_pass_the_type_checks_but_not_validate_are_refused(exported, tmp_path):
    # a well-typed row whose cache disagrees with the log: only validate can tell
    forged = _forge(exported, tmp_path, "state/objects.jsonl",
                    _objects(lambda r: r.update(n_detections=7)))
    _refused(forged, tmp_path, r"does not pass validation.*cache_matches_log")


def test_an_event_seq_of_2_63_minus_1_is_refused(exported, tmp_path):
    doc = json.loads((exported / MANIFEST).read_text())
    lo = doc["ids"]["seq"][0]

    def last(rows: list[dict[str, Any]]) -> None:
        rows[-1]["seq"] = 2**63 - 1
    forged = _forge(exported, tmp_path, "log/events.jsonl", last,
                    ids={**doc["ids"], "seq": [lo, 2**63 - 1]})
    _refused(forged, tmp_path, rf"ids.seq.*{MAX_IMPORT_ID}")


def test_a_store_that_imported_ids_at_the_ceiling_writes_none_past_it(exported, tmp_path):
    # a directory with seq = 2**53 was taken, the store went on counting, and then an export
    # of another scope of that store (ids past 2**53) could not be imported
    doc = json.loads((exported / MANIFEST).read_text())
    lo = doc["ids"]["seq"][0]

    def last(rows: list[dict[str, Any]]) -> None:
        rows[-1]["seq"] = MAX_IMPORT_ID
    at_cap = _forge(exported, tmp_path, "log/events.jsonl", last,
                    ids={**doc["ids"], "seq": [lo, MAX_IMPORT_ID]})
    store = tmp_path / "capped.loci"
    import_memory(at_cap, store)
    with ObjectMemory.open(store, scope="other") as mem:
        with pytest.raises(IntegrityError, match=r"this commit would use id 9007199254740994, "
                                                 r"past the largest a store writes"):
            mem.observe(0.0, [Detection("cup", 0.9, (1.0, 1.0, 0.8), (0.1, 0.1, 0.1))])
        assert mem.objects() == [] and mem.now is None
    assert validate_store(store).ok
    with ObjectMemory.open(store, scope="home", read_only=True) as reader:
        assert reader._live.store.scopes() == ["home"]  # nothing of "other" was written
    export_memory(store, tmp_path / "again", scope="home")
    import_memory(tmp_path / "again", tmp_path / "again.loci")  # every export imports


@pytest.mark.parametrize("kind", ["object", "commit", "seq"])
def test_manifest_id_ranges_past_63_bits_are_refused(exported, tmp_path, kind):
    doc = json.loads((exported / MANIFEST).read_text())
    copy = tmp_path / "forged"
    shutil.copytree(exported, copy)
    _reseal(copy, ids={**doc["ids"], kind: [1, 2**64]})
    _refused(copy, tmp_path, rf"ids.{kind}")


@pytest.mark.parametrize("shape", [(5, 2**40), (2**40, 4), (5, 4, 3)])
def test_npy_headers_with_huge_shapes_are_refused(exported, tmp_path, shape):
    copy = tmp_path / "forged"
    shutil.copytree(exported, copy)
    path = copy / "embeddings" / "observations.npy"
    data = path.read_bytes()
    header_len = int.from_bytes(data[8:10], "little")
    body = data[10 + header_len:]
    header = "{'descr': '<f4', 'fortran_order': False, 'shape': " + repr(shape) + ", }"
    header = header.ljust(header_len - 1) + "\n"
    path.write_bytes(data[:8] + len(header).to_bytes(2, "little") + header.encode() + body)
    _reseal(copy)
    _refused(copy, tmp_path, r"observations.npy")


def test_deep_json_in_a_row_is_refused(exported, tmp_path):
    deep: Any = 1
    for _ in range(100_000):
        deep = [deep]
    copy = tmp_path / "forged"
    shutil.copytree(exported, copy)
    path = copy / "state" / "objects.jsonl"
    line = path.read_text().replace('"attributes":{}', '"attributes":' + "[" * 100_000 +
                                    "]" * 100_000)
    path.write_text(line)
    _reseal(copy)
    _refused(copy, tmp_path, r"objects.jsonl line 1")


# -- signed exports --------------------------------------------------------------------------
@pytest.fixture(scope="module")
def signed(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("signed")
    _build(root / "src.loci")
    export_memory(root / "src.loci", root / "dir", scope="home", hmac_key=KEY)
    return root / "dir"


def test_a_signed_export_imports_with_its_key(signed, tmp_path):
    doc = json.loads((signed / MANIFEST).read_text())
    assert len(doc["hmac_sha256"]) == 64
    assert import_memory(signed, tmp_path / "m.loci", hmac_key=KEY).counts["objects"] == 1


def test_a_signed_export_without_the_key_is_refused(signed, tmp_path):
    with pytest.raises(IntegrityError, match=r"is signed.*hmac_key"):
        import_memory(signed, tmp_path / "m.loci")
    with pytest.raises(IntegrityError, match="signature does not match"):
        import_memory(signed, tmp_path / "m.loci", hmac_key=b"another key of 16+ bytes")
    assert not (tmp_path / "m.loci").exists()


def test_an_unsigned_export_is_refused_when_a_key_is_given(exported, tmp_path):
    with pytest.raises(IntegrityError, match="not signed"):
        import_memory(exported, tmp_path / "m.loci", hmac_key=KEY)


def test_a_resealed_signed_export_is_refused(signed, tmp_path):
    copy = tmp_path / "forged"
    shutil.copytree(signed, copy)
    path = copy / "state" / "objects.jsonl"
    path.write_text(path.read_text().replace('"n_missed":0', '"n_missed":1'))
    _reseal(copy)  # checksums recomputed; the signature cannot be
    with pytest.raises(IntegrityError, match="signature does not match"):
        import_memory(copy, tmp_path / "m.loci", hmac_key=KEY)


def test_short_keys_are_refused(tmp_path):
    with pytest.raises(LocimemError, match="16 bytes"):
        import_memory(tmp_path, tmp_path / "m.loci", hmac_key=b"short")


def _run(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "locimem", *args], capture_output=True,
                          text=True, check=False)


def test_cli_signs_and_checks_with_a_key_file(tmp_path):
    _build(tmp_path / "src.loci", scope="default")
    key = tmp_path / "key"
    key.write_bytes(KEY)
    proc = _run("export", str(tmp_path / "src.loci"), str(tmp_path / "dir"),
                "--hmac-key-file", str(key), "--quiet")
    assert proc.returncode == 0, proc.stderr
    assert "signed (HMAC-SHA256)" in proc.stdout
    proc = _run("import", str(tmp_path / "dir"), str(tmp_path / "m.loci"), "--quiet")
    assert proc.returncode == 2 and proc.stderr.count("\n") == 1 and "is signed" in proc.stderr
    proc = _run("import", str(tmp_path / "dir"), str(tmp_path / "m.loci"), "--quiet",
                "--hmac-key-file", str(key))
    assert proc.returncode == 0, proc.stderr


def test_cli_import_prior_of_deeply_nested_json_is_one_line(exported, tmp_path):
    copy = tmp_path / "forged"
    shutil.copytree(exported, copy)
    (copy / "memory.json").write_text("[" * 200_000 + "]" * 200_000)
    _reseal(copy)
    proc = _run("import", str(copy), str(tmp_path / "m.loci"), "--prior")
    assert proc.returncode == 2, proc.stderr
    assert "Traceback" not in proc.stderr and proc.stderr.count("\n") == 1
    assert "memory.json" in proc.stderr
    proc = (copy / "memory.json").write_text('{"objects": [{"id": "x"}]}')
    _reseal(copy)
    proc = _run("import", str(copy), str(tmp_path / "m.loci"), "--prior")
    assert proc.returncode == 2 and "Traceback" not in proc.stderr, proc.stderr
    assert not (tmp_path / "m.loci").exists()


def test_validate_checks_a_signature_only_with_the_key(signed):
    from locimem.interchange.validate import validate_directory

    unchecked = validate_directory(signed)
    assert unchecked.ok
    assert [w.message for w in unchecked.warnings] == [
        "the directory is signed (HMAC-SHA256); its signature was not checked (no key given)"]
    assert validate_directory(signed, hmac_key=KEY).ok
    wrong = validate_directory(signed, hmac_key=b"another key of 16+ bytes")
    assert [v.rule for v in wrong.violations] == ["directory_imports"]
    assert "signature does not match" in wrong.violations[0].message
