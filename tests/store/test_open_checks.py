"""A store is checked cheaply when it opens (issue 13): a damaged file is a
:class:`CorruptStore` naming ``locimem validate`` — at open, not later as a raw
``DatabaseError``, ``KeyError`` or ``JSONDecodeError`` — and ``check="off"`` skips the check."""

from __future__ import annotations

import sqlite3
import subprocess
import sys
from pathlib import Path

import pytest

from locimem import ObjectMemory
from locimem.errors import CorruptStore, InvalidInput, LocimemError
from locimem.store.sqlite.open_check import OPEN_CHECKS
from tests.helpers import det


def _build(path: Path, scans: int = 200) -> None:
    with ObjectMemory.open(path, scope="home") as m:
        for t in range(scans):
            m.observe(float(t), [det("cup", 1.0 + (t % 7), 1.0), det("plate", 3.0, 2.0 + t % 5)])


def _run(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "locimem", *args], capture_output=True,
                          text=True, check=False)


def test_the_open_checks_are_named():
    assert OPEN_CHECKS == ("quick", "header", "off")
    with pytest.raises(InvalidInput, match="check must be one of quick, header, off"):
        ObjectMemory.open(":memory:", check="full")


@pytest.mark.no_validate
@pytest.mark.parametrize("read_only", [False, True])
@pytest.mark.parametrize("check", ["quick", "header"])
def test_a_store_truncated_at_99_9_percent_is_a_corrupt_store(tmp_path, read_only, check):
    store = tmp_path / "m.loci"
    _build(store)
    data = store.read_bytes()
    store.write_bytes(data[:int(len(data) * 0.999)])
    before = store.read_bytes()
    with pytest.raises(CorruptStore, match=r"locimem validate") as err:
        ObjectMemory.open(store, scope="home", read_only=read_only, check=check)
    assert str(store) in str(err.value) and isinstance(err.value, LocimemError)
    assert store.read_bytes() == before  # nothing was written to it


@pytest.mark.no_validate
def test_a_damaged_page_is_found_by_the_quick_check(tmp_path):
    store = tmp_path / "m.loci"
    _build(store)
    data = bytearray(store.read_bytes())
    page = int.from_bytes(data[16:18], "big")
    n_pages = len(data) // page
    victim = n_pages - 2  # a b-tree page near the end, not the header page
    data[victim * page + 8: victim * page + 400] = b"\xa5" * 392
    store.write_bytes(bytes(data))
    with pytest.raises(CorruptStore, match=r"locimem validate"):
        ObjectMemory.open(store, scope="home", read_only=True)


@pytest.mark.no_validate
def test_a_damaged_json_column_is_a_corrupt_store_not_a_json_error(tmp_path):
    store = tmp_path / "m.loci"
    _build(store, scans=5)
    with sqlite3.connect(store) as conn:
        conn.execute("UPDATE objects SET label_mass = '{not json'")
    conn.close()
    with pytest.raises(CorruptStore, match=r"scope 'home'.*locimem validate"):
        ObjectMemory.open(store, scope="home", read_only=True)
    with sqlite3.connect(store) as conn:
        conn.execute("UPDATE objects SET label_mass = '{\"cup\": 1.0}', cx = 'x'")
    conn.close()
    with pytest.raises(CorruptStore):
        ObjectMemory.open(store, scope="home", read_only=True)


def test_check_off_skips_the_check_and_an_intact_store_opens_with_every_check(tmp_path):
    store = tmp_path / "m.loci"
    _build(store, scans=5)
    for check in OPEN_CHECKS:
        with ObjectMemory.open(store, scope="home", check=check) as m:
            assert {o.label for o in m.objects()} == {"cup", "plate"}


@pytest.mark.no_validate
def test_the_cli_says_the_store_is_damaged_in_one_line(tmp_path):
    store = tmp_path / "m.loci"
    _build(store)
    data = store.read_bytes()
    store.write_bytes(data[:int(len(data) * 0.999)])
    for cmd in ("inspect", "events"):
        proc = _run(cmd, str(store), "--scope", "home")
        assert proc.returncode == 2, proc.stderr
        assert "Traceback" not in proc.stderr and proc.stderr.count("\n") == 1
        assert "locimem validate" in proc.stderr
