"""Snapshots: a consistent archive of a store, taken while a writer appends to it, and a
restore that checks everything before it writes anything — and on any refusal leaves the
destination byte-identical, with no temporary file behind."""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import random
import shutil
import sqlite3
import textwrap
import time
from collections.abc import Iterable, Iterator
from pathlib import Path

import pytest

from locimem import ObjectMemory
from locimem.errors import (
    IntegrityError,
    InvalidInput,
    NotAStore,
    NotFound,
    SchemaVersionError,
    StoreLocked,
)
from locimem.interchange.restore import restore
from locimem.interchange.snapshot import (
    HEADER_BYTES,
    MAGIC,
    PAYLOAD_OFFSET,
    SnapshotInfo,
    read_info,
    snapshot,
)
from locimem.store.sqlite.schema import SCHEMA_VERSION
from tests.helpers import det, kill_at_random, start_child

SCOPE = "home"
T0 = 1718119812.25  # 2024-06-11 15:30:12.25 UTC
FIXTURES = Path(__file__).parents[1] / "fixtures"

CHILD = textwrap.dedent(
    """
    import random
    import sys

    from locimem import Detection, ObjectMemory

    path, seed, ready = sys.argv[1], int(sys.argv[2]), sys.argv[3]
    rng = random.Random(seed)
    mem = ObjectMemory.open(path, scope="home", durable=False)
    open(ready, "w").close()
    t = 0.0
    while True:
        t += rng.choice([0.5, 1.0, 3.0, 40.0])
        mem.observe(t, [
            Detection(rng.choice(["cup", "mug", "book"]), rng.uniform(0.3, 1.0),
                      (rng.uniform(0.0, 3.0), rng.uniform(0.0, 3.0), 0.9), (0.1, 0.1, 0.1))
            for _ in range(rng.randint(0, 5))
        ])
    """
)


def _build(path: Path) -> dict:
    """A small store at ``path``: a cup and a book seen, the cup moved; return its snapshot."""
    with ObjectMemory.open(path, scope=SCOPE) as mem:
        for i in range(8):
            mem.observe(float(i), [det("cup", 1.0, 1.0), det("book", 2.0, 0.5, 0.4)])
        for i in range(8, 12):
            mem.observe(float(i), [det("cup", 1.6, 1.2), det("book", 2.0, 0.5, 0.4)])
        mem.observe(60.0)
        return mem.snapshot()


def _files(directory: Path) -> dict[str, bytes]:
    """Every file in ``directory`` with its bytes: to assert that nothing changed."""
    return {p.name: p.read_bytes() for p in sorted(directory.iterdir()) if p.is_file()}


def _temps(directory: Path) -> list[str]:
    return sorted(p.name for p in directory.iterdir() if p.name.endswith(".tmp"))


def _assert_consistent(path: Path) -> int:
    """The store at ``path`` opens, its cache equals its replayed log, and no scan is in it
    halfway; return its number of commits."""
    with ObjectMemory.open(path, scope=SCOPE, read_only=True) as mem:
        assert mem.snapshot() == mem.rebuild_from_log().snapshot()
        one = mem._live.store.conn.execute
        assert one("PRAGMA integrity_check").fetchall() == [("ok",)]
        commits = one("SELECT id, n_detections FROM commits ORDER BY id").fetchall()
        assert [c[0] for c in commits] == list(range(1, len(commits) + 1))
        rows = dict(one("SELECT commit_id, count(*) FROM observations GROUP BY commit_id"))
        assert [rows.get(c, 0) for c, _ in commits] == [n for _, n in commits]
        return len(commits)


def _rewrite_header(path: Path, **changes: object) -> None:
    data = bytearray(path.read_bytes())
    header = json.loads(data[len(MAGIC):PAYLOAD_OFFSET])
    header.update(changes)
    data[len(MAGIC):PAYLOAD_OFFSET] = json.dumps(header).encode().ljust(HEADER_BYTES - 1) + b"\n"
    path.write_bytes(bytes(data))


@pytest.fixture
def archive(tmp_path: Path) -> tuple[SnapshotInfo, dict]:
    """A snapshot of a small store in ``tmp_path/src``, and the store's ``snapshot()``."""
    (tmp_path / "src").mkdir()
    store = tmp_path / "src" / "home.loci"
    snap = _build(store)
    return snapshot(store, tmp_path / "src" / "home.loci-snapshot", clock=lambda: T0), snap


# -- round trip ------------------------------------------------------------------------------
@pytest.mark.parametrize("compression", ["gzip", "lzma"])
def test_round_trip(tmp_path: Path, compression: str) -> None:
    store = tmp_path / "home.loci"
    snap = _build(store)
    info = snapshot(store, tmp_path / "a.loci-snapshot", compression=compression,
                    clock=lambda: T0)

    assert info.path == tmp_path / "a.loci-snapshot"
    assert (info.schema_version, info.created_at, info.store_name, info.compression) == (
        SCHEMA_VERSION, T0, "home.loci", compression)
    assert info.compressed_size == info.path.stat().st_size - PAYLOAD_OFFSET < info.size
    assert read_info(info.path) == info
    assert info.path.read_bytes().startswith(MAGIC + b'{"compressed_size": ')

    restored = tmp_path / "restored.loci"
    assert restore(info.path, restored) == info
    assert hashlib.sha256(restored.read_bytes()).hexdigest() == info.sha256
    assert restored.stat().st_size == info.size
    assert _assert_consistent(restored) == 13
    with ObjectMemory.open(restored, scope=SCOPE) as mem:  # and it takes new scans
        assert mem.snapshot() == snap
        mem.observe(61.0, [det("plate", 5.0, 5.0)])
        assert mem.snapshot() == mem.rebuild_from_log().snapshot()
    assert _temps(tmp_path) == []


def test_default_name_is_beside_the_store_and_never_overwritten(tmp_path: Path) -> None:
    store = tmp_path / "home.loci"
    _build(store)
    info = snapshot(store, clock=lambda: T0)
    assert info.path == tmp_path / "home-20240611T153012Z.loci-snapshot"

    outdir = tmp_path / "backups"
    outdir.mkdir()
    assert snapshot(store, outdir, clock=lambda: T0).path == outdir / info.path.name

    before = _files(tmp_path)
    with pytest.raises(InvalidInput, match=r"home-20240611T153012Z.loci-snapshot' exists; "
                                           r"a snapshot never overwrites a file"):
        snapshot(store, clock=lambda: T0)
    assert _files(tmp_path) == before
    with pytest.raises(NotFound, match=r"the directory '.*nowhere' does not exist"):
        snapshot(store, tmp_path / "nowhere" / "x.loci-snapshot")


def test_a_store_open_in_this_process_is_snapshotted_as_committed(tmp_path: Path) -> None:
    store = tmp_path / "home.loci"
    with ObjectMemory.open(store, scope=SCOPE) as mem:
        for i in range(5):
            mem.observe(float(i), [det("cup", 1.0, 1.0)])
        info = snapshot(store, tmp_path / "live.loci-snapshot")
        snap = mem.snapshot()
    restore(info.path, tmp_path / "back.loci")
    assert _assert_consistent(tmp_path / "back.loci") == 5
    with ObjectMemory.open(tmp_path / "back.loci", scope=SCOPE, read_only=True) as back:
        assert back.snapshot() == snap


def test_older_schema_store_snapshots_and_restores_unchanged(tmp_path: Path) -> None:
    store = tmp_path / "old.loci"
    shutil.copyfile(FIXTURES / "store_v1.loci", store)
    info = snapshot(store, tmp_path / "old.loci-snapshot")
    assert info.schema_version == 1
    restore(info.path, tmp_path / "back.loci")
    assert hashlib.sha256((tmp_path / "back.loci").read_bytes()).hexdigest() == info.sha256


def test_progress_wraps_the_pass_through_the_data(tmp_path: Path) -> None:
    store = tmp_path / "home.loci"
    _build(store)
    totals: list[int] = []

    def progress(chunks: Iterable[bytes], total: int) -> Iterator[bytes]:
        totals.append(total)
        yield from chunks

    info = snapshot(store, tmp_path / "a.loci-snapshot", progress=progress)
    restore(info.path, tmp_path / "b.loci", progress=progress)
    assert totals == [1, 1]


# -- online ----------------------------------------------------------------------------------
def _wait_for_commits(store: Path, n: int) -> int:
    """Wait until the store holds more than ``n`` commits (at most 10 s); return how many."""
    deadline = time.monotonic() + 10.0
    with contextlib.closing(sqlite3.connect(store.resolve().as_uri() + "?mode=ro",
                                            uri=True)) as conn:
        while True:
            count = conn.execute("SELECT count(*) FROM commits").fetchone()[0]
            if count > n:
                return count
            if time.monotonic() > deadline:  # pragma: no cover - a stuck writer
                pytest.fail(f"the writer made {count} commits in 10 s, expected more than {n}")
            time.sleep(0.02)


def test_snapshots_taken_while_another_process_writes_are_consistent(tmp_path: Path) -> None:
    script = tmp_path / "child.py"
    script.write_text(CHILD)
    store = tmp_path / "live.loci"
    proc = start_child(script, store, 7, tmp_path / "ready")
    infos = []
    try:
        seen = 0
        for i in range(3):
            seen = _wait_for_commits(store, seen + 20)
            infos.append(snapshot(store, tmp_path / f"s{i}.loci-snapshot"))
            seen = _wait_for_commits(store, 0)  # at least as many as the snapshot holds
        before = _files(tmp_path)
        with pytest.raises(StoreLocked, match=rf"open for writing \(pid {proc.pid}\); close"):
            restore(infos[0].path, store, force=True)
        # nothing new beside the store (its bytes move on: the writer checkpoints)
        assert _files(tmp_path).keys() == before.keys()
    finally:
        kill_at_random(proc, random.Random(0), 0.0, 0.0)
    counts = []
    for i, info in enumerate(infos):
        restored = tmp_path / f"r{i}.loci"
        restore(info.path, restored)
        counts.append(_assert_consistent(restored))
    assert 0 < counts[0] < counts[1] < counts[2], counts  # the writer kept appending
    assert _temps(tmp_path) == []


# -- refusals: the archive -------------------------------------------------------------------
def _refused(archive: Path, error: type[Exception], match: str, *, dest: Path | None = None,
             force: bool = False) -> None:
    """``restore`` raises ``error`` and writes nothing: the destination's directory is
    byte-identical afterwards (no store, no temporary file)."""
    dest = dest if dest is not None else archive.parent / "dest.loci"
    before = _files(dest.parent)
    with pytest.raises(error, match=match):
        restore(archive, dest, force=force)
    assert _files(dest.parent) == before
    assert _temps(dest.parent) == []


@pytest.mark.parametrize("where", ["gzip header", "middle", "crc", "length"])
def test_a_tampered_payload_byte_is_refused(archive: tuple[SnapshotInfo, dict],
                                            where: str) -> None:
    info, _ = archive
    data = bytearray(info.path.read_bytes())
    at = {"gzip header": PAYLOAD_OFFSET + 1, "middle": PAYLOAD_OFFSET + info.compressed_size // 2,
          "crc": len(data) - 6, "length": len(data) - 1}[where]
    data[at] ^= 0x40
    info.path.write_bytes(bytes(data))
    _refused(info.path, IntegrityError,
             r"home.loci-snapshot' is damaged or was altered: .*; nothing was restored; copy "
             r"the archive again, or use another snapshot")


def test_a_checksum_that_does_not_match_is_refused(archive: tuple[SnapshotInfo, dict]) -> None:
    info, _ = archive
    _rewrite_header(info.path, sha256="0" * 64)
    assert read_info(info.path).sha256 == "0" * 64  # the header alone looks fine
    _refused(info.path, IntegrityError,
             rf"the SHA-256 of its database is {info.sha256}, its header says 0{{64}}")


def test_a_size_that_does_not_match_is_refused(archive: tuple[SnapshotInfo, dict]) -> None:
    info, _ = archive
    _rewrite_header(info.path, size=info.size - 1)
    _refused(info.path, IntegrityError,
             rf"its SQLite header says {info.size:,} bytes .* its archive header "
             rf"{info.size - 1:,}")  # stopped at the database's first 100 bytes
    _rewrite_header(info.path, size=info.size + 1)
    _refused(info.path, IntegrityError,
             rf"its SQLite header says {info.size:,} bytes .* its archive header "
             rf"{info.size + 1:,}")


@pytest.mark.parametrize("keep", ["payload", "header", "magic", "nothing"])
def test_a_truncated_archive_is_refused(archive: tuple[SnapshotInfo, dict], keep: str) -> None:
    info, _ = archive
    data = info.path.read_bytes()
    cut = {"payload": len(data) - 100, "header": PAYLOAD_OFFSET - 1, "magic": 5,
           "nothing": 0}[keep]
    info.path.write_bytes(data[:cut])
    error, match = {
        "payload": (IntegrityError, rf"is truncated: its header says {len(data)} bytes, the "
                                    rf"file has {cut}; copy the archive again"),
        "header": (IntegrityError, r"is truncated: it ends inside its header"),
        "magic": (InvalidInput, r"is not a locimem snapshot archive"),
        "nothing": (InvalidInput, r"is not a locimem snapshot archive"),
    }[keep]
    _refused(info.path, error, match)


def test_bytes_after_the_data_are_refused(archive: tuple[SnapshotInfo, dict]) -> None:
    info, _ = archive
    with open(info.path, "ab") as f:
        f.write(b"junk")
    _refused(info.path, IntegrityError, r"has 4 unexpected bytes after its data")


def test_a_file_that_is_not_a_snapshot_is_refused(archive: tuple[SnapshotInfo, dict],
                                                  tmp_path: Path) -> None:
    text = tmp_path / "notes.txt"
    text.write_text("hello\n")
    _refused(text, InvalidInput, r"'.*notes.txt' is not a locimem snapshot archive \(it does "
                                 r"not begin with b'locimem-snapshot\\n'\)")
    _refused(tmp_path / "src" / "home.loci", InvalidInput,
             r"is a SQLite database \(a store\?\), not a snapshot archive", dest=text.parent / "d")
    with pytest.raises(NotFound, match=r"no snapshot archive at '.*missing'"):
        restore(tmp_path / "missing", tmp_path / "d.loci")


@pytest.mark.parametrize(("change", "error", "match"), [
    ({"format": "other"}, IntegrityError, r"has a damaged header \(not the JSON of a "
                                          r"locimem-snapshot\); copy the archive again"),
    ({"size": "12"}, IntegrityError, r"damaged header \(size should be an integer, got '12'\)"),
    ({"created_at": None}, IntegrityError, r"created_at should be a number, got None"),
    ({"compression": "zstd"}, IntegrityError, r"impossible compression 'zstd'"),
    ({"sha256": "abc"}, IntegrityError, r"impossible sha256 'abc'"),
    ({"format_version": 99}, SchemaVersionError,
     r"snapshot format version 99, newer than this locimem reads \(1\); upgrade locimem"),
    ({"schema_version": SCHEMA_VERSION + 1}, SchemaVersionError,
     rf"schema version {SCHEMA_VERSION + 1}, newer than this locimem opens"),
    ({"schema_version": SCHEMA_VERSION - 1} if SCHEMA_VERSION > 1 else {"schema_version": 0},
     IntegrityError, r"header says schema version|impossible schema_version"),
])
def test_a_wrong_header_is_refused(archive: tuple[SnapshotInfo, dict], change: dict,
                                   error: type[Exception], match: str) -> None:
    info, _ = archive
    _rewrite_header(info.path, **change)
    _refused(info.path, error, match)


def test_a_header_that_is_not_json_is_refused(archive: tuple[SnapshotInfo, dict]) -> None:
    info, _ = archive
    data = bytearray(info.path.read_bytes())
    data[len(MAGIC)] = ord("[")
    info.path.write_bytes(bytes(data))
    _refused(info.path, IntegrityError, r"has a damaged header")


# -- refusals: the destination ---------------------------------------------------------------
def _store_with_wal(path: Path) -> None:
    """A store whose ``-wal`` and ``-shm`` hold the last scans, as a killed writer leaves it."""
    with ObjectMemory.open(path, scope=SCOPE) as mem:
        for i in range(3):
            mem.observe(float(i), [det("sofa", 4.0, 4.0)])
        wal = Path(f"{path}-wal").read_bytes()
        shm = Path(f"{path}-shm").read_bytes()
    assert len(wal) > 0
    Path(f"{path}-wal").write_bytes(wal)
    Path(f"{path}-shm").write_bytes(shm)


def test_an_existing_store_is_replaced_only_with_force(archive: tuple[SnapshotInfo, dict],
                                                       tmp_path: Path) -> None:
    info, snap = archive
    dest = tmp_path / "dest.loci"
    _store_with_wal(dest)
    os.chmod(dest, 0o640)
    _refused(info.path, InvalidInput, r"dest.loci' exists; pass force=True \(--force\) to "
                                      r"replace it", dest=dest)

    assert restore(info.path, dest, force=True) == info
    assert not Path(f"{dest}-wal").exists()  # the old WAL would be replayed into the new file
    assert not Path(f"{dest}-shm").exists()
    assert hashlib.sha256(dest.read_bytes()).hexdigest() == info.sha256
    assert dest.stat().st_mode & 0o777 == 0o640
    assert _assert_consistent(dest) == 13
    with ObjectMemory.open(dest, scope=SCOPE) as mem:
        assert mem.snapshot() == snap
    assert _temps(tmp_path) == []


def test_restore_is_refused_while_the_store_is_open_for_writing(
        archive: tuple[SnapshotInfo, dict], tmp_path: Path) -> None:
    info, snap = archive
    dest = tmp_path / "dest.loci"
    with ObjectMemory.open(dest, scope=SCOPE) as mem:
        mem.observe(1.0, [det("sofa", 4.0, 4.0)])
        _refused(info.path, StoreLocked,
                 rf"dest.loci' is open for writing \(pid {os.getpid()}\); close that memory "
                 r"before restoring over it", dest=dest, force=True)
    restore(info.path, dest, force=True)
    with ObjectMemory.open(dest, scope=SCOPE) as mem:
        assert mem.snapshot() == snap


def test_restore_through_a_symlink_meets_the_writer_lock(
        archive: tuple[SnapshotInfo, dict], tmp_path: Path) -> None:
    """The lock follows the file, not its name: restoring over a symlink to a store open for
    writing is refused like restoring over the store itself."""
    info, _ = archive
    (tmp_path / "real").mkdir()
    dest = tmp_path / "real" / "dest.loci"
    link = tmp_path / "link.loci"
    with ObjectMemory.open(dest, scope=SCOPE) as mem:
        mem.observe(1.0, [det("sofa", 4.0, 4.0)])
        link.symlink_to(dest)
        with pytest.raises(StoreLocked, match=r"link.loci' is open for writing"):
            restore(info.path, link, force=True)
        assert mem.get(1).label == "sofa"


def test_a_directory_is_not_a_destination(archive: tuple[SnapshotInfo, dict],
                                          tmp_path: Path) -> None:
    info, _ = archive
    (tmp_path / "d").mkdir()
    _refused(info.path, InvalidInput, r"is a directory; name the store file",
             dest=tmp_path / "d", force=True)
    with pytest.raises(NotFound, match=r"the directory '.*nowhere' does not exist"):
        restore(info.path, tmp_path / "nowhere" / "x.loci")


def test_a_failed_replace_leaves_the_store_and_its_wal_as_they_were(
        archive: tuple[SnapshotInfo, dict], tmp_path: Path,
        monkeypatch: pytest.MonkeyPatch) -> None:
    info, _ = archive
    dest = tmp_path / "dest.loci"
    _store_with_wal(dest)
    real_replace = os.replace

    def failing_replace(src: str | os.PathLike[str], dst: str | os.PathLike[str]) -> None:
        if Path(dst) == dest:
            raise OSError(28, "No space left on device")
        real_replace(src, dst)

    monkeypatch.setattr(os, "replace", failing_replace)
    _refused(info.path, OSError, r"No space left on device", dest=dest, force=True)
    monkeypatch.undo()
    with ObjectMemory.open(dest, scope=SCOPE, read_only=True) as mem:  # the WAL is back
        assert mem._live.store.count("commits", SCOPE) == 3


# -- refusals: snapshot ----------------------------------------------------------------------
def test_snapshot_refuses_what_is_not_a_store(archive: tuple[SnapshotInfo, dict],
                                              tmp_path: Path) -> None:
    info, _ = archive
    text = tmp_path / "notes.txt"
    text.write_text("hello\n")
    plain = tmp_path / "plain.db"
    with sqlite3.connect(plain) as conn:
        conn.execute("CREATE TABLE meta (key TEXT, value TEXT)")
        conn.execute("INSERT INTO meta VALUES ('format', 'other')")
    conn.close()
    cases = [
        (tmp_path / "missing.loci", NotFound, r"no store at '.*missing.loci'"),
        (tmp_path / "src", NotAStore, r"is a directory, not a locimem store"),
        (text, NotAStore, r"notes.txt' is not a locimem store \(file is not a database\)"),
        (plain, NotAStore, r"plain.db' is a SQLite file but not a locimem store"),
        (info.path, NotAStore, r"is a snapshot archive, not a store; restore it"),
    ]
    before = _files(tmp_path)
    for path, error, match in cases:
        with pytest.raises(error, match=match):
            snapshot(path, tmp_path / "out.loci-snapshot")
    with pytest.raises(InvalidInput, match=r"compression must be one of gzip, lzma; got 'zip'"):
        snapshot(tmp_path / "src" / "home.loci", tmp_path / "out.loci-snapshot",
                 compression="zip")
    assert _files(tmp_path) == before


def test_a_failed_snapshot_leaves_no_file_behind(tmp_path: Path) -> None:
    store = tmp_path / "home.loci"
    _build(store)
    before = _files(tmp_path)

    def interrupted(chunks: Iterable[bytes], total: int) -> Iterator[bytes]:
        yield next(iter(chunks))
        raise KeyboardInterrupt

    with pytest.raises(KeyboardInterrupt):
        snapshot(store, tmp_path / "a.loci-snapshot", progress=interrupted)
    after = _files(tmp_path)
    # like any reader of a WAL store, the copy leaves an empty -wal and the -shm index
    assert after.pop("home.loci-wal") == b""
    assert after.pop("home.loci-shm")
    assert after == before


def test_snapshot_refuses_a_damaged_store(tmp_path: Path) -> None:
    store = tmp_path / "home.loci"
    _build(store)
    data = bytearray(store.read_bytes())
    data[6 * 4096:] = b"\xff" * (len(data) - 6 * 4096)  # every page after the sixth
    store.write_bytes(bytes(data))
    with pytest.raises(NotAStore, match=r"home.loci' is damaged \(database disk image is "
                                        r"malformed\); `PRAGMA integrity_check` on it says "
                                        r"where; restore an earlier snapshot"):
        snapshot(store, tmp_path / "a.loci-snapshot")
    assert not (tmp_path / "a.loci-snapshot").exists()
    assert _temps(tmp_path) == []
