"""The store file's neighbours: its locks, and making a rename durable.

One writer per file. The writer lock is an advisory ``flock`` on ``STORE-writer`` beside the
file the path resolves to (symlinks meet), holding the writer's pid; a second ``flock`` is keyed
by the file's identity, ``(st_dev, st_ino)``, under :func:`identity_lock_dir`, so a hard link
(another name of the same file, which no path resolution can tell) meets it too. The OS
releases both when the process dies. Locks hold between processes of one machine, not across
a network share. Without ``fcntl`` (Windows) the rule is not enforced.
"""

from __future__ import annotations

import contextlib
import os
import tempfile
from collections.abc import Callable, Iterator
from typing import IO

from locimem.errors import StoreLocked

try:  # POSIX advisory locks; elsewhere the single-writer rule is not enforced
    import fcntl
except ImportError:  # pragma: no cover - Windows
    fcntl = None  # type: ignore[assignment]

__all__ = ["fsync_directory", "identity_lock_dir", "release_identity_lock",
           "release_writer_lock", "stamp_pid", "take_identity_lock", "take_writer_lock",
           "writer_lock", "writer_lock_path"]


def writer_lock_path(path: str | os.PathLike[str]) -> str:
    """The single-writer lock file of the store at ``path``: ``STORE-writer`` beside the
    file that ``path`` resolves to (through any symlinks)."""
    return os.path.realpath(path) + "-writer"


def identity_lock_dir() -> str:
    """Where the file-identity locks live: ``$LOCIMEM_LOCK_DIR``, else ``locimem-locks`` in
    the system's temporary directory. Every process that may write a store must see the same
    directory (one machine; a store on a network share is not locked across machines)."""
    return os.environ.get("LOCIMEM_LOCK_DIR") or os.path.join(tempfile.gettempdir(),
                                                              "locimem-locks")


def take_writer_lock(path: str | os.PathLike[str], locked: Callable[[str], str]
                     ) -> IO[str] | None:
    """Take the single-writer lock of the store at ``path`` without waiting, and return its
    open lock file (None where locks are not enforced). The pid in it is not written yet (see
    :func:`stamp_pid`). When another process holds it, raise :class:`StoreLocked` with the
    message ``locked(holder's pid)``."""
    if fcntl is None:  # pragma: no cover
        return None
    handle = open(writer_lock_path(path), "a+")  # noqa: SIM115 - held until released
    try:
        fcntl.flock(handle.fileno(), fcntl.LOCK_EX | fcntl.LOCK_NB)
    except OSError:
        handle.seek(0)
        holder = handle.read().strip() or "unknown"
        handle.close()
        raise StoreLocked(locked(holder)) from None
    return handle


def stamp_pid(handle: IO[str] | None) -> None:
    """Write this process's pid into a held writer lock (the holder a refused writer names)."""
    if handle is not None:
        handle.seek(0)
        handle.truncate()
        handle.write(str(os.getpid()))
        handle.flush()


def release_writer_lock(handle: IO[str] | None) -> None:
    if handle is not None:
        with contextlib.suppress(OSError):
            fcntl.flock(handle.fileno(), fcntl.LOCK_UN)
        handle.close()


@contextlib.contextmanager
def writer_lock(path: str | os.PathLike[str], locked: Callable[[str], str]
                ) -> Iterator[IO[str] | None]:
    """Hold the single-writer lock of the store at ``path`` for the block (see
    :func:`take_writer_lock`; the pid is stamped only if the block calls :func:`stamp_pid`)."""
    handle = take_writer_lock(path, locked)
    try:
        yield handle
    finally:
        release_writer_lock(handle)


def take_identity_lock(path: str | os.PathLike[str], locked: str) -> int | None:
    """Take the lock keyed by the identity (device and inode) of the file at ``path``, in
    :func:`identity_lock_dir`, and return its descriptor; None when there is no lock directory
    this process may use (the path lock still holds). :class:`StoreLocked` with the message
    ``locked`` when another process holds it."""
    if fcntl is None:  # pragma: no cover
        return None
    st = os.stat(path)
    lock_dir = identity_lock_dir()
    lock_path = os.path.join(lock_dir, f"{st.st_dev}-{st.st_ino}.lock")
    try:
        os.makedirs(lock_dir, exist_ok=True)
        with contextlib.suppress(OSError):  # shared by every user: sticky, like /tmp
            os.chmod(lock_dir, 0o1777)
        fd = os.open(lock_path, os.O_RDWR | os.O_CREAT, 0o666)
    except PermissionError:
        try:
            fd = os.open(lock_path, os.O_RDONLY)  # flock needs no write access
        except OSError:
            return None
    except OSError:
        return None
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except OSError:
        os.close(fd)
        raise StoreLocked(locked) from None
    return fd


def release_identity_lock(fd: int | None) -> None:
    if fd is not None:
        with contextlib.suppress(OSError):
            fcntl.flock(fd, fcntl.LOCK_UN)
        os.close(fd)


def fsync_directory(directory: str | os.PathLike[str]) -> None:
    """Make a rename in ``directory`` durable (POSIX; elsewhere a no-op)."""
    if os.name != "posix":  # pragma: no cover
        return
    fd = os.open(directory, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)
