"""A path a user names where a file is read must be a regular file, read within a size limit:
a FIFO (opening one for reading waits for a writer that never comes) or a device such as
``/dev/zero`` (endless) is refused at once with an error naming the path and what was expected,
by every command that reads one (issue 36, item 5). Each command runs in a thread with a
timeout, so a regression fails instead of hanging the suite."""

from __future__ import annotations

import contextlib
import os
import threading
from pathlib import Path

import pytest

from locimem import Detection, ObjectMemory
from locimem.cli import main
from locimem.errors import InvalidInput
from locimem.files import check_regular, open_regular, read_regular

pytestmark = pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="POSIX FIFOs")

FIFO = "is a FIFO (named pipe), not a regular file"


def _fifo(path: Path) -> Path:
    os.mkfifo(path)
    return path


def _release(fifos: list[Path]) -> None:
    """Open each FIFO for writing and close it: a reader stuck in open() returns."""
    for fifo in fifos:
        with contextlib.suppress(OSError):
            os.close(os.open(fifo, os.O_WRONLY | os.O_NONBLOCK))


def _run(argv: list[str], capsys, fifos: list[Path] = ()) -> tuple[int, str]:
    """``main(argv)`` in a thread that must finish within 10 s; (exit status, stderr)."""
    result: list[int] = []
    thread = threading.Thread(target=lambda: result.append(main(argv)), daemon=True)
    thread.start()
    thread.join(timeout=10.0)
    if thread.is_alive():
        _release(list(fifos))
        thread.join(timeout=5.0)
        pytest.fail(f"locimem {' '.join(argv)} did not return within 10 s")
    return result[0], capsys.readouterr().err


@pytest.fixture
def store(tmp_path: Path) -> Path:
    path = tmp_path / "home.loci"
    with ObjectMemory.open(path, scope="home") as mem:
        for t in range(3):
            mem.observe(float(t), [Detection("cup", 0.9, (1, 1, 1), (0.1, 0.1, 0.1))])
    return path


def test_a_fifo_config_is_refused(tmp_path, store, capsys) -> None:
    fifo = _fifo(tmp_path / "robot.toml")
    code, err = _run(["--config", str(fifo), "inspect", str(store)], capsys, [fifo])
    assert (code, err) == (2, f"error: the config {str(fifo)!r} {FIFO}: expected a TOML file "
                              "of at most 1 MiB\n")


@pytest.mark.parametrize("command", ["import", "export", "validate"])
@pytest.mark.parametrize("key", ["fifo", "/dev/zero"])
def test_an_hmac_key_file_that_is_not_a_file_is_refused(tmp_path, store, capsys, command,
                                                        key) -> None:
    path = _fifo(tmp_path / "key") if key == "fifo" else Path(key)
    argv = {"import": ["import", str(tmp_path / "exported"), str(tmp_path / "new.loci")],
            "export": ["export", str(store), str(tmp_path / "exported")],
            "validate": ["validate", str(store)]}[command]
    code, err = _run([*argv, "--hmac-key-file", str(path)], capsys, [path])
    kind = "a FIFO (named pipe)" if key == "fifo" else "a character device"
    assert (code, err) == (2, f"error: the HMAC key file {str(path)!r} is {kind}, not a "
                              "regular file: expected a file holding the key (16 bytes to "
                              "4 KiB)\n")
    assert not (tmp_path / "exported").exists() and not (tmp_path / "new.loci").exists()


def test_an_hmac_key_file_larger_than_4_kib_is_refused(tmp_path, store, capsys) -> None:
    key = tmp_path / "key"
    key.write_bytes(b"k" * 4097)
    code, err = _run(["export", str(store), str(tmp_path / "exported"), "--hmac-key-file",
                      str(key)], capsys)
    assert (code, err) == (2, f"error: the HMAC key file {str(key)!r} is larger than 4 KiB: "
                              "expected a file holding the key (16 bytes to 4 KiB)\n")
    key.write_bytes(b"k" * 4096)  # at the limit: a key
    assert _run(["export", str(store), str(tmp_path / "exported"), "--hmac-key-file",
                 str(key), "--quiet"], capsys)[0] == 0


@pytest.mark.parametrize(("name", "what", "expected"), [
    ("scans.jsonl", "the scan file", "expected a .jsonl file"),
    ("run.mcap", "the recording", "expected a .mcap file"),
    ("run.db3", "the recording", "expected a .db3 file"),
])
def test_ingest_of_a_fifo_returns_at_once(tmp_path, capsys, name, what, expected) -> None:
    fifo = _fifo(tmp_path / name)
    target = tmp_path / "new.loci"
    code, err = _run(["ingest", str(fifo), str(target)], capsys, [fifo])
    assert (code, err) == (2, f"error: {what} {str(fifo)!r} {FIFO}: {expected}\n")
    assert sorted(p.name for p in tmp_path.iterdir()) == [name]  # no store made


def test_ingest_of_a_bag_directory_holding_a_fifo_returns_at_once(tmp_path, capsys) -> None:
    bag = tmp_path / "run"
    bag.mkdir()
    fifo = _fifo(bag / "metadata.yaml")
    code, err = _run(["ingest", str(bag), str(tmp_path / "new.loci")], capsys, [fifo])
    assert (code, err) == (2, f"error: the recording's file {str(fifo)!r} {FIFO}: expected a "
                              "rosbag2 directory of regular files\n")
    assert not (tmp_path / "new.loci").exists()


def test_a_label_map_fifo_is_refused(tmp_path) -> None:
    pytest.importorskip("rosbags")
    from locimem.ingest.ros import load_label_map

    fifo = _fifo(tmp_path / "labels.txt")
    with pytest.raises(InvalidInput) as caught:
        load_label_map(fifo)
    assert str(caught.value) == (f"the label map {str(fifo)!r} {FIFO}: expected a .json or "
                                 "text file of labels")


def test_restore_and_snapshot_of_a_fifo_return_at_once(tmp_path, capsys) -> None:
    fifo = _fifo(tmp_path / "home.loci-snapshot")
    code, err = _run(["restore", str(fifo), str(tmp_path / "new.loci")], capsys, [fifo])
    assert (code, err) == (2, f"error: the snapshot archive {str(fifo)!r} {FIFO}: expected a "
                              "file written by locimem snapshot\n")
    assert not (tmp_path / "new.loci").exists()
    code, err = _run(["snapshot", str(fifo)], capsys, [fifo])
    assert (code, err) == (2, f"error: the store {str(fifo)!r} {FIFO}: expected a locimem "
                              "store file\n")
    assert sorted(p.name for p in tmp_path.iterdir()) == [fifo.name]


def test_an_exported_directory_holding_a_fifo_is_refused_on_import(tmp_path, store,
                                                                  capsys) -> None:
    exported = tmp_path / "exported"
    assert main(["export", str(store), str(exported), "--quiet"]) == 0
    empty = next(p for p in sorted(exported.rglob("*.jsonl")) if p.stat().st_size == 0)
    empty.unlink()
    fifo = _fifo(empty)  # as long as the manifest says (0 bytes): it would be hashed
    rel = fifo.relative_to(exported).as_posix()
    code, err = _run(["import", str(exported), str(tmp_path / "new.loci")], capsys, [fifo])
    assert code == 2
    assert f"the directory's {rel} {str(fifo)!r} {FIFO}: a memory directory holds only " \
           "regular files" in err
    assert not (tmp_path / "new.loci").exists()
    code, err = _run(["validate", str(exported)], capsys, [fifo])
    assert code == 1


def test_a_fifo_token_file_is_refused_at_once(tmp_path) -> None:
    from locimem.mcp.http import read_token_file  # what mcp --token-file reads with

    fifo = _fifo(tmp_path / "token")
    with pytest.raises(InvalidInput) as caught:
        read_token_file(fifo)
    assert str(caught.value).startswith(f"the token file {str(fifo)!r} {FIFO}: expected a "
                                        "file holding the bearer token (e.g. `openssl rand")


# -- the helper --------------------------------------------------------------------------------
def test_the_helper_refuses_what_is_not_a_regular_file(tmp_path) -> None:
    fifo = _fifo(tmp_path / "pipe")
    for call in (lambda: check_regular(fifo, "the input"),
                 lambda: open_regular(fifo, "the input"),
                 lambda: read_regular(fifo, "the input", 10)):
        with pytest.raises(InvalidInput) as caught:
            call()
        assert str(caught.value) == f"the input {str(fifo)!r} {FIFO}: expected a file"
    with pytest.raises(InvalidInput, match=r"^the input '.*' is a directory, not a regular"):
        read_regular(tmp_path, "the input", 10)
    with pytest.raises(FileNotFoundError):  # the caller words a missing file
        read_regular(tmp_path / "absent", "the input", 10)
    plain = tmp_path / "plain"
    plain.write_bytes(b"0123456789")
    assert read_regular(plain, "the input", 10) == b"0123456789"
    with pytest.raises(InvalidInput, match=r"^the input '.*' is larger than 9 bytes: expected"):
        read_regular(plain, "the input", 9)
    link = tmp_path / "link"
    link.symlink_to(plain)  # a link to a file is that file
    with open_regular(link, "the input") as f:
        assert f.read() == b"0123456789"
