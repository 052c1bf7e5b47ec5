"""Restoring a snapshot: :func:`restore` checks an archive (:mod:`locimem.interchange.snapshot`
says what one holds and why it is built so) and puts its store back, never writing under the
destination's name until the store is complete and checked.
"""

from __future__ import annotations

import contextlib
import hashlib
import lzma
import math
import os
import shutil
import zlib
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import IO

from locimem.errors import (
    IntegrityError,
    InvalidInput,
    NotFound,
    SchemaVersionError,
)
from locimem.files import open_regular
from locimem.interchange.snapshot import (
    _SQLITE_MAGIC,
    CHUNK_BYTES,
    PAYLOAD_OFFSET,
    Progress,
    SnapshotInfo,
    _Damaged,
    _new_temp,
    _open_database,
    _refuse_postgres,
    _store_version,
    read_info,
)
from locimem.store.sqlite.files import fsync_directory, stamp_pid, writer_lock, writer_lock_path
from locimem.store.sqlite.open_check import check_schema
from locimem.store.sqlite.schema import SCHEMA_VERSION

__all__ = ["FREE_DISK_RESERVE_BYTES", "MAX_RESTORE_BYTES", "restore"]

MAX_RESTORE_BYTES = 64 << 30
"""The largest store :func:`restore` writes unless told otherwise (``max_bytes=``): 64 GiB."""
FREE_DISK_RESERVE_BYTES = 64 << 20
"""What a restore leaves free on the destination's disk (besides the store itself)."""


# -- restore ---------------------------------------------------------------------------------
def restore(archive: str | os.PathLike[str], store: str | os.PathLike[str], *,
            force: bool = False, progress: Progress | None = None,
            max_bytes: int = MAX_RESTORE_BYTES) -> SnapshotInfo:
    """Check the archive, then write its store at ``store``.

    Everything is checked before anything is written at the destination: the header, the
    archive's length, and the SHA-256 and size of the decompressed database (decompressed to
    a temporary file beside ``store``). An existing store is replaced only with
    ``force=True``, and never while it is open for writing; its stale ``-wal`` and ``-shm``
    go with it. A failed restore leaves the destination as it was, and no temporary file.
    ``progress`` (see :data:`Progress`) wraps the decompression pass.

    The decompression is bounded before it starts and while it runs: a store larger than
    ``max_bytes`` (default :data:`MAX_RESTORE_BYTES`), or than the destination's free disk less
    :data:`FREE_DISK_RESERVE_BYTES`, is refused before anything is written; the first bytes
    out must be a SQLite header whose page size times page count is the declared size; and the
    stream stops the moment it passes the declared size. A forged archive (a "gzip bomb" with
    a consistent header) is stopped within its first chunk, not after filling the disk.

    Raises:
        NotFound: no archive, or the directory of ``store`` does not exist.
        InvalidInput: ``store`` is a PostgreSQL URL; ``archive`` is not a snapshot archive;
            ``store`` exists (without ``force``) or is a directory; the store would be
            larger than ``max_bytes`` or than the free disk allows.
        IntegrityError: the archive is truncated, altered or damaged.
        SchemaVersionError: the archive holds a store newer than this locimem opens.
        StoreLocked: the store at ``store`` is open for writing.
    """
    _refuse_postgres(store, "restore")
    info = read_info(archive)
    if info.schema_version > SCHEMA_VERSION:
        raise SchemaVersionError(
            f"{str(info.path)!r} holds a store of schema version {info.schema_version}, newer "
            f"than this locimem opens ({SCHEMA_VERSION}); upgrade locimem to restore it")
    dest = Path(store)
    _check_not_the_archive(info.path, dest)
    _check_destination(dest, force)
    _check_room(info, dest, max_bytes)
    with contextlib.ExitStack() as stack:
        lock = None
        if os.path.exists(writer_lock_path(dest)):  # refuse a live writer before the long part
            lock = stack.enter_context(_writer_lock(dest))
        temp = _new_temp(dest.parent, dest.name)
        stack.callback(temp.unlink, missing_ok=True)
        _inflate_into(info, temp, progress)
        with _open_database(temp) as conn:
            version = _store_version(conn, f"the database in {str(info.path)!r}", IntegrityError)
        if version != info.schema_version:
            raise IntegrityError(
                f"{str(info.path)!r} is damaged or was altered: its header says schema version "
                f"{info.schema_version}, the database in it has {version}; use another snapshot")
        with _open_database(temp) as conn:  # a trigger, a view, another index: refused
            check_schema(conn, str(info.path), version, IntegrityError, hint=(
                "nothing was restored: the store it holds had its schema altered (a trigger "
                "or index there changes what locimem's statements do) — drop that from the "
                "store the snapshot was taken of and take a new one, or use another snapshot"))
        if lock is None:
            lock = stack.enter_context(_writer_lock(dest))
        _check_destination(dest, force)  # again, now that no writer can come in between
        stamp_pid(lock)
        if os.path.exists(dest):
            os.chmod(temp, os.stat(dest).st_mode & 0o7777)
        _replace_store(temp, dest)
    return info


def _check_not_the_archive(archive: Path, dest: Path) -> None:
    """Refuse a destination that is the archive itself (the same path, or the same file by
    a symbolic or hard link): the restore would replace the snapshot with the store in it."""
    try:
        same = dest.exists() and os.path.samefile(archive, dest)
    except OSError:  # pragma: no cover - vanished in between: nothing to protect
        same = False
    if same:
        raise InvalidInput(f"{str(dest)!r} is the snapshot archive {str(archive)!r} itself; "
                           "restoring onto it would replace the snapshot with the store it "
                           "holds — nothing was restored: name another store path")


def _check_destination(dest: Path, force: bool) -> None:
    if not dest.parent.is_dir():
        raise NotFound(f"cannot restore to {str(dest)!r}: the directory {str(dest.parent)!r} "
                       "does not exist")
    if dest.is_dir():
        raise InvalidInput(f"{str(dest)!r} is a directory; name the store file to restore into")
    if os.path.lexists(dest) and not force:
        raise InvalidInput(f"{str(dest)!r} exists; pass force=True (--force) to replace it with "
                           "the snapshot (what it holds now is lost), or restore to a new path")


def _check_room(info: SnapshotInfo, dest: Path, max_bytes: int) -> None:
    """Refuse a store larger than ``max_bytes`` or than the free disk, before writing."""
    if isinstance(max_bytes, bool) or not isinstance(max_bytes, int) or max_bytes < 0:
        raise InvalidInput(f"max_bytes must be an integer >= 0, got {max_bytes!r}")
    where = repr(str(info.path))
    if info.size > max_bytes:
        raise InvalidInput(f"{where} holds a store of {info.size:,} bytes, more than max_bytes "
                           f"({max_bytes:,}); nothing was restored — pass a larger max_bytes "
                           "if you expect a store that large")
    free = shutil.disk_usage(dest.parent).free
    if info.size > free - FREE_DISK_RESERVE_BYTES:
        raise InvalidInput(f"{where} holds a store of {info.size:,} bytes; {str(dest.parent)!r} "
                           f"has {free:,} bytes free (a restore keeps "
                           f"{FREE_DISK_RESERVE_BYTES:,} free); nothing was restored")


def _check_database_header(first: bytes, size: int) -> None:
    """The decompressed stream must start as a SQLite database of ``size`` bytes: the magic,
    and a page size (bytes 16-17, 1 meaning 65536) times page count (bytes 28-31) equal to
    it, when the header's count is in use (it always is for files SQLite 3.7+ writes)."""
    if not first.startswith(_SQLITE_MAGIC):
        raise _Damaged("its data is not a SQLite database (the first bytes are not a SQLite "
                       "header)")
    page = int.from_bytes(first[16:18], "big")
    page = 65536 if page == 1 else page
    pages = int.from_bytes(first[28:32], "big")
    changes, valid_for = first[24:28], first[92:96]
    if pages and changes == valid_for and page * pages != size:
        raise _Damaged(f"its SQLite header says {page * pages:,} bytes ({pages} pages of "
                       f"{page}), its archive header {size:,}")


def _inflate_into(info: SnapshotInfo, temp: Path, progress: Progress | None) -> None:
    """Decompress the payload into ``temp`` (fsynced), checking its size and SHA-256."""
    where = repr(str(info.path))
    damaged = f"{where} is damaged or was altered"
    what_to_do = "nothing was restored; copy the archive again, or use another snapshot"
    digest = hashlib.sha256()
    size = 0
    with open_regular(info.path, "the snapshot archive",
                      "expected a file written by locimem snapshot") as src, \
            open(temp, "wb") as dst:
        src.seek(PAYLOAD_OFFSET)
        chunks: Iterable[bytes] = _read_exactly(src, info.compressed_size)
        if progress is not None:
            chunks = progress(chunks, total=math.ceil(info.compressed_size / CHUNK_BYTES))
        try:
            head = b""
            for piece in _inflate(chunks, info.compression):
                if len(head) < 100:  # nothing is written before the SQLite header is checked
                    head += piece
                    if len(head) < 100:
                        continue
                    piece, head = head, head[:100]
                    _check_database_header(head, info.size)
                size += len(piece)
                if size > info.size:
                    raise _Damaged(f"it decompresses to more than the {info.size} bytes its "
                                   "header says")
                digest.update(piece)
                dst.write(piece)
            if 0 < len(head) < 100:
                raise _Damaged("its data is not a SQLite database (it is shorter than a "
                               "SQLite header)")
        except (_Damaged, zlib.error, lzma.LZMAError, EOFError) as exc:
            raise IntegrityError(f"{damaged}: its compressed data does not decompress "
                                 f"({exc}); {what_to_do}") from None
        dst.flush()
        os.fsync(dst.fileno())
    if size != info.size:
        raise IntegrityError(f"{damaged}: it decompresses to {size} bytes, its header says "
                             f"{info.size}; {what_to_do}")
    if digest.hexdigest() != info.sha256:
        raise IntegrityError(f"{damaged}: the SHA-256 of its database is {digest.hexdigest()}, "
                             f"its header says {info.sha256}; {what_to_do}")


def _read_exactly(src: IO[bytes], n: int) -> Iterator[bytes]:
    while n > 0:
        chunk = src.read(min(CHUNK_BYTES, n))
        if not chunk:
            raise _Damaged("the file ended early; it was truncated while being read")
        n -= len(chunk)
        yield chunk


def _inflate(chunks: Iterable[bytes], compression: str) -> Iterator[bytes]:
    """Decompress one gzip or xz stream, at most :data:`CHUNK_BYTES` of output at a time (a
    forged archive cannot make one step allocate gigabytes)."""
    if compression == "gzip":
        gz = zlib.decompressobj(16 + zlib.MAX_WBITS)
        for chunk in chunks:
            if gz.eof:
                raise _Damaged("bytes follow the end of the compressed stream")
            data = chunk
            while data:
                yield gz.decompress(data, CHUNK_BYTES)
                data = gz.unconsumed_tail
        yield gz.flush()
        eof, unused = gz.eof, gz.unused_data
    else:
        xz = lzma.LZMADecompressor(format=lzma.FORMAT_XZ)
        for chunk in chunks:
            if xz.eof:
                raise _Damaged("bytes follow the end of the compressed stream")
            yield xz.decompress(chunk, CHUNK_BYTES)
            while not xz.needs_input and not xz.eof:
                yield xz.decompress(b"", CHUNK_BYTES)
        eof, unused = xz.eof, xz.unused_data
    if not eof:
        raise _Damaged("the compressed stream ends early")
    if unused:
        raise _Damaged("bytes follow the end of the compressed stream")


def _replace_store(temp: Path, dest: Path) -> None:
    """Move ``temp`` to ``dest``, first parking the old store's ``-wal`` and ``-journal`` (they
    would be replayed into the new file), and put them back if the move fails."""
    parked: list[tuple[Path, Path]] = []
    try:
        for suffix in ("-wal", "-journal"):
            stale = Path(f"{dest}{suffix}")
            if os.path.lexists(stale):
                aside = _new_temp(dest.parent, dest.name)
                try:
                    os.replace(stale, aside)
                except BaseException:
                    aside.unlink(missing_ok=True)
                    raise
                parked.append((stale, aside))
        os.replace(temp, dest)
    except BaseException:
        for stale, aside in reversed(parked):
            with contextlib.suppress(OSError):  # if even this fails, the WAL stays in `aside`
                os.replace(aside, stale)
        raise
    for _, aside in parked:
        aside.unlink(missing_ok=True)
    Path(f"{dest}-shm").unlink(missing_ok=True)
    fsync_directory(dest.parent)


def _writer_lock(dest: Path) -> contextlib.AbstractContextManager[IO[str] | None]:
    """Hold the store's single-writer lock (as SQLiteStore takes it) for the block; the pid is
    stamped only once the restore is committed to writing (:func:`stamp_pid`)."""
    return writer_lock(dest, lambda holder: (
        f"{str(dest)!r} is open for writing (pid {holder}); close that memory before "
        "restoring over it"))
