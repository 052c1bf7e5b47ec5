"""A store with bytes flipped anywhere in its file either works — opened, rebuilt from its log
and validated, with a rebuild that agrees with the live state when validate says ok — or is a
typed error (CorruptStore naming ``locimem validate``, or NotAStore): never a raw
``JSONDecodeError``, ``sqlite3.OperationalError`` or ``KeyError`` from deep in a replay (issue:
2 of 12 bit-flipped stores opened, then ``rebuild_from_log()`` raised one)."""

from __future__ import annotations

import sqlite3
from pathlib import Path

import pytest

from locimem import ObjectMemory
from locimem.errors import CorruptStore, NotAStore
from locimem.interchange.validate import validate_store
from tests.helpers import det


@pytest.fixture(scope="module")
def intact(tmp_path_factory: pytest.TempPathFactory) -> bytes:
    path = tmp_path_factory.mktemp("intact") / "m.loci"
    with ObjectMemory.open(path, scope="home") as m:
        for t in range(30):
            m.observe(float(t), [det("cup", 1.0 + t % 3, 1.0), det("plate", 3.0, 2.0 + t % 2)])
    with sqlite3.connect(path) as conn:  # everything in the main file, none in a WAL
        conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    conn.close()
    return path.read_bytes()


def _offsets(size: int, page: int) -> list[int]:
    """Two a page: one in the last 512 bytes (where a page keeps its rows' cells) and one
    anywhere in it, spread by a fixed stride: deterministic, and over the whole file."""
    out = []
    for p in range(size // page):
        out.append(p * page + page - 1 - (p * 131) % 512)
        out.append(p * page + (p * 997 + 211) % page)
    return out


def _outcome(path: Path) -> str:
    """What opening, rebuilding and validating the copy at ``path`` came to."""
    try:
        with ObjectMemory.open(path, scope="home", read_only=True) as mem:
            live = mem._live._state.snapshot()
            rebuilt = mem.rebuild_from_log().snapshot()
        report = validate_store(path)
    except CorruptStore as exc:
        assert "locimem validate" in str(exc)
        return "corrupt"
    except NotAStore:
        return "not a store"
    if report.ok:
        assert rebuilt == live, "validate passed a store whose cache and log disagree"
        return "ok"
    return "reported"


@pytest.mark.no_validate
def test_flipped_bytes_anywhere_are_a_typed_error_or_a_consistent_store(
        intact: bytes, tmp_path: Path) -> None:
    page = int.from_bytes(intact[16:18], "big")
    seen: dict[str, int] = {}
    for n, offset in enumerate(_offsets(len(intact), page)):
        for flip in (0xFF, 1 << (n % 8)):
            damaged = bytearray(intact)
            damaged[offset] ^= flip
            path = tmp_path / f"c{n}-{flip}.loci"
            path.write_bytes(bytes(damaged))
            try:
                outcome = _outcome(path)
            except Exception as exc:  # the test names what escaped
                pytest.fail(f"byte {offset} ^ {flip:#x}: {type(exc).__name__}: {exc}")
            seen[outcome] = seen.get(outcome, 0) + 1
            for leftover in tmp_path.glob(f"c{n}-{flip}.loci*"):
                leftover.unlink()
    assert seen.get("corrupt", 0) >= 10 and seen.get("ok", 0) >= 10, seen


@pytest.mark.no_validate
@pytest.mark.parametrize(("sql", "error"), [
    ("UPDATE events SET data = '{\"distance_m\":1.0,' WHERE kind = 'MOVED'", "JSONDecodeError"),
    ("UPDATE events SET data = CAST(x'7b22ff22' AS TEXT) WHERE kind = 'MOVED'",
     "OperationalError"),
    ("UPDATE events SET kind = 'M_VED' WHERE kind = 'MOVED'", "ValueError"),
    ("UPDATE events SET data = '{}' WHERE kind = 'APPEARED'", "KeyError"),
], ids=["json", "utf8", "kind", "key"])
def test_a_damaged_event_is_a_corrupt_store_from_rebuild(intact: bytes, tmp_path: Path,
                                                         sql: str, error: str) -> None:
    path = tmp_path / "m.loci"
    path.write_bytes(intact)
    with sqlite3.connect(path) as conn:
        assert conn.execute(sql).rowcount > 0
    conn.close()
    with ObjectMemory.open(path, scope="home", read_only=True) as mem:  # the cache is intact
        with pytest.raises(CorruptStore, match=rf"is damaged: .*\({error}: .*locimem validate"):
            mem.rebuild_from_log()
        assert mem._live.store.count("observations", "home") == 60  # still usable
    assert not validate_store(path).ok
