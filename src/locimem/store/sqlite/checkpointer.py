"""Checkpointing the write-ahead log beside the writer, not inside its commits.

SQLite in WAL mode appends each commit to ``STORE-wal`` and, by default, the connection that
commits past 1,000 pages of log copies the log back into the database file (a *checkpoint*)
inside that ``COMMIT``: one scan in a few hundred pays for the copy and its fsync. On the
camera path that was most of the 99th percentile (`locimem bench ingest`, 1,000 objects, with
automatic checkpoints simply turned off as an experiment: p99 12–13 → 4.7–5.2 ms without a
camera, 20–23 → 14–16 ms with one).

So the writer's connection turns automatic checkpoints off (``wal_autocheckpoint=0``) and a
:class:`Checkpointer` thread, with a connection of its own to the same file, checkpoints
(``PASSIVE``: it never waits for the writer or a reader, and never blocks them) when a
commit leaves more than :data:`WAL_PAGES` pages in the log — and then again only once the
log has grown a :data:`STEP`-th of that past what it last copied. The log seldom restarts behind
the thread (a restart needs the writer to begin a transaction with every frame copied, and
the writer commits again while the thread copies), so it stays past the limit; waking the
thread at every commit there made a checkpoint of a few frames per commit, and each wake a
hand-off of the interpreter's lock between the two threads: 0.1-0.2 ms of a 1.3-1.5 ms scan
without a camera, and 0.3-0.45 ms of CPU (side by side, 10k objects). The log's length is
read where
SQLite keeps it, the ``mxFrame`` field of the wal-index header (``STORE-shm``, offset 16,
native byte order: https://www.sqlite.org/walformat.html), half a microsecond a commit — not
from the log file's size, which stays at its high-water mark when SQLite restarts the log
(cutting the file back instead, with ``journal_size_limit``, made every commit that regrew
it slower). Should the thread fall behind a writer in a tight loop (it shares the
interpreter, and a loaded machine may not schedule it), a commit that leaves more than
:data:`BEHIND` times that much checkpoints inline, as SQLite would have — waiting, if the
thread is in the middle of one, for it to finish first (two checkpoints at once: the second
would return at once, having done nothing, while the writer goes on appending). With no
commit landing during it, the writer's checkpoint copies the whole log, so SQLite restarts
it at the next commit: the log stays bounded whatever the rate.

A checkpoint copies only committed pages, so a crash at any point loses nothing a commit
promised (the log is still there to recover from); what changes is only *which thread* pays
for the copy, and a checkpoint that fails never fails the commit before it. A reader that
holds an old snapshot stops a checkpoint short, as it does SQLite's own; the next commit
tries again. Closing the store stops the thread and closes its connection before the
writer's, whose close — the last connection's — checkpoints what is left and removes the
log, as before.
"""

from __future__ import annotations

import os
import sqlite3
import struct
import threading

__all__ = ["BEHIND", "WAL_PAGES", "Checkpointer"]

WAL_PAGES = 1000  # SQLite's own autocheckpoint threshold, in pages of log
BEHIND = 4  # a log this many times WAL_PAGES: the thread is behind, the writer checkpoints
STEP = 16  # the thread is woken again once the log grows a STEP-th of WAL_PAGES past its copy


class Checkpointer:
    """A daemon thread checkpointing ``path``'s log when told a commit landed
    (:meth:`committed`) and the log holds more than ``wal_pages`` pages."""

    def __init__(self, path: str, page_size: int, wal_pages: int = WAL_PAGES) -> None:
        self.path = path
        self._wal = path + "-wal"
        self._frame = page_size + 24  # a log frame: a page and its header
        self.limit = wal_pages  # frames (pages) of log that call for a checkpoint
        try:  # the wal-index: SQLite's own count of the log's frames
            self._shm: int | None = os.open(path + "-shm", os.O_RDONLY)
        except OSError:  # pragma: no cover - no shared index (an unusual VFS): the file
            self._shm = None
        self._wake = threading.Event()
        self._busy = threading.Lock()  # held while either side checkpoints
        self._stop = False
        # the log's length when the thread's last checkpoint copied all it saw (0: none since
        # the log restarted)
        self._copied = 0
        self.checkpoints = 0  # how many checkpoints this thread ran (for tests and stats)
        self.inline = 0  # how many the writer ran because the thread was behind
        self.error: BaseException | None = None  # the first failure, if any (then it stops)
        self._conn = sqlite3.connect(path, isolation_level=None, check_same_thread=False)
        self._conn.execute("PRAGMA busy_timeout=5000")
        self._thread = threading.Thread(target=self._run, name=f"locimem-checkpoint:{path}",
                                        daemon=True)
        self._thread.start()

    def committed(self, writer: sqlite3.Connection) -> None:
        """A commit landed on ``writer``: past the limit, wake the thread (one read of the
        wal-index otherwise); past :data:`BEHIND` times it, the thread is behind: checkpoint on
        the writer now."""
        size = self.frames()
        if size < self._copied:  # the log restarted since
            self._copied = 0
        if size > BEHIND * self.limit:
            try:
                with self._busy:
                    writer.execute("PRAGMA wal_checkpoint(PASSIVE)").fetchall()
                self.inline += 1
            except sqlite3.Error as exc:  # pragma: no cover - the commit stands regardless
                self.error = self.error or exc
        elif (size > self.limit and size - self._copied > self.limit // STEP
              and not self._busy.locked()):  # (not while it copies: it would copy twice)
            self._wake.set()

    def frames(self) -> int:
        """The frames in the log now (0 after SQLite restarted it)."""
        if self._shm is not None:
            header = os.pread(self._shm, 4, 16)
            if len(header) == 4:
                return int(struct.unpack("=I", header)[0])
        try:  # pragma: no cover - the fallback: the file's size (its high-water mark)
            return os.stat(self._wal).st_size // self._frame
        except OSError:  # pragma: no cover
            return 0

    def _run(self) -> None:
        while True:
            self._wake.wait()
            self._wake.clear()
            if self._stop:
                return
            try:
                with self._busy:
                    _, log, copied = self._conn.execute(
                        "PRAGMA wal_checkpoint(PASSIVE)").fetchone()
                if 0 <= log <= copied:  # all it saw (a reader may have stopped it short)
                    self._copied = log
                self.checkpoints += 1
            except sqlite3.Error as exc:  # pragma: no cover - a disk failing under us
                self.error = exc
                return

    def close(self) -> None:
        """Stop the thread and close its connection (the writer's close, the last one,
        checkpoints what is left). Safe to call twice."""
        if self._stop:
            return
        self._stop = True
        self._wake.set()
        self._thread.join()
        self._conn.close()
        if self._shm is not None:
            os.close(self._shm)
            self._shm = None
