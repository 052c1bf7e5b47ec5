"""Opening a file a user named: a regular file, read within a size limit, never a FIFO.

Every path a person types where a file is read (a config, a key or token file, a scan file or
bag, an archive, the files of an imported directory) goes through here, so ``/dev/zero`` or a
named pipe is refused with a typed error instead of hanging the command: the path is
``stat``-ed before it is opened (opening a FIFO for reading blocks until a writer comes),
opened non-blocking, and checked again on the open descriptor (in case it was swapped in
between). A missing or unreadable file raises the ``OSError`` for the caller to word.

And creating the temporary file an export is written through before its rename
(:func:`new_file`), with the mode every new file gets.
"""

from __future__ import annotations

import os
import secrets
import stat
from pathlib import Path
from typing import BinaryIO

from locimem.errors import InvalidInput

__all__ = ["KIB", "MIB", "check_regular", "new_file", "open_regular", "read_regular"]

KIB = 1024
MIB = 1024 * KIB

_KINDS = ((stat.S_ISDIR, "a directory"), (stat.S_ISFIFO, "a FIFO (named pipe)"),
          (stat.S_ISCHR, "a character device"), (stat.S_ISBLK, "a block device"),
          (stat.S_ISSOCK, "a socket"))


def _kind(mode: int) -> str:
    for test, name in _KINDS:
        if test(mode):
            return name
    return "not a file"


def _size(n: int) -> str:
    for unit, scale in (("MiB", MIB), ("KiB", KIB)):
        if n >= scale and n % scale == 0:
            return f"{n // scale} {unit}"
    return f"{n:,} bytes"


def _require_regular(st: os.stat_result, shown: str, what: str, expected: str) -> None:
    if not stat.S_ISREG(st.st_mode):
        raise InvalidInput(f"{what} {shown!r} is {_kind(st.st_mode)}, not a regular file: "
                           f"{expected}")


def check_regular(path: str | os.PathLike[str], what: str,
                  expected: str = "expected a file") -> os.stat_result:
    """The ``stat`` of ``path`` (symbolic links followed), which must be a regular file; for
    a path handed to a library that opens it itself. Raises :class:`InvalidInput` naming
    ``what`` (e.g. "the config"), the path, what it is and ``expected``; ``OSError`` when it
    cannot be read (e.g. ``FileNotFoundError``).

    >>> check_regular("/dev/null", "the key file", "expected a file holding the key")
    Traceback (most recent call last):
    ...
    locimem.errors.InvalidInput: the key file '/dev/null' is a character device, not a \
regular file: expected a file holding the key
    """
    shown = os.fspath(path)
    st = os.stat(shown)
    _require_regular(st, shown, what, expected)
    return st


def open_regular(path: str | os.PathLike[str], what: str,
                 expected: str = "expected a file") -> BinaryIO:
    """``path`` opened for reading in binary, refusing (see :func:`check_regular`) anything
    but a regular file — before opening it, and again on the open file."""
    shown = os.fspath(path)
    check_regular(shown, what, expected)
    flags = os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_CLOEXEC", 0) \
        | getattr(os, "O_BINARY", 0) | getattr(os, "O_NOCTTY", 0)
    fd = os.open(shown, flags)
    try:
        _require_regular(os.fstat(fd), shown, what, expected)
        if hasattr(os, "set_blocking"):
            os.set_blocking(fd, True)
        return os.fdopen(fd, "rb")
    except BaseException:
        os.close(fd)
        raise


def read_regular(path: str | os.PathLike[str], what: str, max_bytes: int,
                 expected: str = "expected a file") -> bytes:
    """The bytes of the regular file ``path`` (see :func:`open_regular`), read with a bounded
    read: a file larger than ``max_bytes`` is refused with :class:`InvalidInput`."""
    with open_regular(path, what, expected) as f:
        data = f.read(max_bytes + 1)
    if len(data) > max_bytes:
        raise InvalidInput(f"{what} {os.fspath(path)!r} is larger than {_size(max_bytes)}: "
                           f"{expected}")
    return data


def new_file(directory: Path, prefix: str, suffix: str) -> Path:
    """Create an empty file ``PREFIX<random>SUFFIX`` in ``directory`` with the mode a new file
    gets under the umask (``0o666 & ~umask``, like every export; ``mkstemp`` would make it
    owner-only)."""
    while True:
        path = directory / f"{prefix}{secrets.token_hex(4)}{suffix}"
        try:
            os.close(os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o666))
        except FileExistsError:  # pragma: no cover - 2**32 names
            continue
        return path
