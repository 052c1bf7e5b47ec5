"""Locks on the file, not the name (issue #13, item 5): every name of one store file — the
path itself, a symlink to it, a hard link to it — meets the same single-writer lock."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from locimem import Detection, ObjectMemory
from locimem.errors import StoreLocked

pytestmark = pytest.mark.skipif(sys.platform == "win32", reason="POSIX locks")


def _store(path: Path) -> None:
    with ObjectMemory.open(path) as mem:
        mem.observe(0.0, [Detection("cup", 0.9, (0, 0, 0.5), (0.1, 0.1, 0.1))])


def _names(tmp_path: Path, how: str) -> tuple[Path, Path]:
    real = tmp_path / "real" / "m.loci"
    real.parent.mkdir()
    _store(real)
    other = tmp_path / "elsewhere" / "alias.loci"
    other.parent.mkdir()
    if how == "symlink":
        other.symlink_to(real)
    elif how == "dir-symlink":
        (tmp_path / "linkdir").symlink_to(real.parent, target_is_directory=True)
        other = tmp_path / "linkdir" / "m.loci"
    else:
        os.link(real, other)
    return real, other


@pytest.mark.parametrize("how", ["symlink", "dir-symlink", "hardlink"])
@pytest.mark.parametrize("first", ["real", "alias"])
def test_a_second_writer_through_another_name_is_refused(tmp_path: Path, how: str,
                                                         first: str) -> None:
    real, alias = _names(tmp_path, how)
    a, b = (real, alias) if first == "real" else (alias, real)
    with ObjectMemory.open(a) as mem:
        message = "under another name" if how == "hardlink" else "already open for writing"
        with pytest.raises(StoreLocked, match=message):
            ObjectMemory.open(b)
        with ObjectMemory.open(b, read_only=True) as reader:  # readers are always welcome
            assert reader.get(1).label == "cup"
        mem.observe(1.0, [Detection("cup", 0.9, (0, 0, 0.5), (0.1, 0.1, 0.1))])
    with ObjectMemory.open(b) as mem:  # released with the first writer
        assert mem.get(1).label == "cup"


def test_a_second_process_through_a_hard_link_is_refused(tmp_path: Path) -> None:
    real, alias = _names(tmp_path, "hardlink")
    child = textwrap.dedent(f"""
        from locimem import ObjectMemory
        from locimem.errors import StoreLocked
        try:
            ObjectMemory.open({str(alias)!r})
        except StoreLocked as exc:
            print("locked:", exc)
    """)
    with ObjectMemory.open(real):
        out = subprocess.run([sys.executable, "-c", child], capture_output=True, text=True,
                             check=True, timeout=60)
    assert out.stdout.startswith("locked: ") and "under another name" in out.stdout


def test_a_new_store_takes_its_identity_lock(tmp_path: Path) -> None:
    path = tmp_path / "new.loci"
    with ObjectMemory.open(path):
        alias = tmp_path / "alias.loci"
        os.link(path, alias)
        with pytest.raises(StoreLocked, match="under another name"):
            ObjectMemory.open(alias)
