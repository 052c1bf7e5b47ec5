"""Command-line edges an attacker (or a typo) reaches: numbers beyond any index, store paths
no file can be made at. Each is one line on stderr and exit status 2, never a traceback."""

from __future__ import annotations

import pytest

from locimem import Detection, ObjectMemory
from locimem.cli import main

CUP = Detection("cup", 0.9, (1.0, 1.0, 0.9), (0.08, 0.08, 0.1))


@pytest.fixture
def store(tmp_path):
    path = tmp_path / "home.loci"
    with ObjectMemory.open(path) as mem:
        for i in range(7):
            mem.observe(float(i), [CUP])
    return str(path)


def _run(capsys, *argv: str) -> tuple[int, str, str]:
    code = main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


def test_a_limit_beyond_any_index_is_refused(store, capsys) -> None:
    code, out, err = _run(capsys, "events", store, "--limit", "99999999999999999999999")
    assert (code, out) == (2, "")
    assert err == ("error: limit must be <= 9223372036854775807, got "
                   "99999999999999999999999\n")
    code, out, _ = _run(capsys, "events", store, "--limit", "9223372036854775807")
    assert code == 0 and len(out.splitlines()) == 2  # APPEARED, PROMOTED
    code, _, err = _run(capsys, "audit", store, "--limit", "99999999999999999999999")
    assert code == 2 and "limit must be <= 9223372036854775807" in err


@pytest.mark.parametrize("where, why", [
    ("/proc/x.loci", "No such file or directory (/proc/x.loci-writer); choose a path in a "
                     "directory you can write to"),
    ("/proc/self/nothing/x.loci", "its directory does not exist (create it first)"),
])
def test_a_store_where_no_file_can_be_made(capsys, where, why) -> None:
    code, _, err = _run(capsys, "demo", "--store", where)
    assert (code, err) == (2, f"error: cannot create a store at {where!r}: {why}\n")
