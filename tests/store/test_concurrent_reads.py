"""One committed state per read: a read-only open while another process writes loads a state
the writer committed — never a mix of two commits (issue #13, item 3)."""

from __future__ import annotations

from pathlib import Path

from locimem.bench.load import run_load


def test_readers_opening_during_writes_never_see_a_torn_state(tmp_path: Path) -> None:
    f = run_load(tmp_path / "load.loci", seconds=4.0, readers=2, per_scan=30, rebuild=True)
    assert f.errors == []
    assert f.torn == 0
    assert f.scans >= 20 and f.opens >= 10  # the two really overlapped


def test_a_loaded_state_is_read_in_one_transaction(tmp_path: Path) -> None:
    """The reader's connection is inside a read transaction for the whole load, and out of
    it afterwards (so it does not pin an old snapshot)."""
    from locimem import Detection, ObjectMemory

    path = tmp_path / "m.loci"
    with ObjectMemory.open(path) as mem:
        mem.observe(0.0, [Detection("cup", 0.9, (0, 0, 0.5), (0.1, 0.1, 0.1))])
    with ObjectMemory.open(path, read_only=True) as mem:
        seen: list[bool] = []
        store = mem._live.store
        real = store.load_objects

        def spy(scope: str) -> list:
            seen.append(store.conn.in_transaction)
            return real(scope)

        store.load_objects = spy  # type: ignore[method-assign]
        mem._live._state = mem._live._load_state(from_log=False)
        assert seen == [True]
        assert not store.conn.in_transaction
