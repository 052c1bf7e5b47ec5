"""Consistent copies of a store file: for snapshots, for :meth:`SQLiteStore.backup`, and the
copy kept before a migration.

``VACUUM INTO`` runs in one read transaction, so under WAL it sees the store at one commit
boundary while a writer in another process keeps appending, and it writes only live pages
(what compaction deleted is not carried over). The pre-migration copy uses the backup API
(page for page: the file exactly as it was).
"""

from __future__ import annotations

import contextlib
import os
import sqlite3
from pathlib import Path

from locimem.errors import InvalidInput, NotAStore

__all__ = ["copy_before_migration", "vacuum_into", "vacuum_store_file"]

_DAMAGED_STORE = "`PRAGMA integrity_check` on it says where; restore an earlier snapshot"


def vacuum_into(conn: sqlite3.Connection, copy: str | os.PathLike[str]) -> None:
    """Write the database open on ``conn`` to ``copy`` (absent, or an empty file) with
    ``VACUUM INTO``: one committed state, live pages only. ``conn`` must not be inside a
    transaction."""
    if os.path.exists(copy) and os.path.getsize(copy) > 0:
        raise InvalidInput(f"{str(copy)!r} exists; a backup never overwrites a file")
    conn.execute("VACUUM INTO ?", (str(copy),))


def vacuum_store_file(source: str | os.PathLike[str], copy: str | os.PathLike[str]) -> None:
    """``VACUUM INTO`` ``copy`` (an empty file) from a read-only connection to the store file
    at ``source``, without opening it as a store (no lock, no check, any schema version): the
    copy is the store at one commit even while a writer appends. A damaged file raises
    :class:`NotAStore`; other SQLite errors (a full disk, an I/O error) pass as SQLite said."""
    source = Path(source)
    conn = sqlite3.connect(source.resolve().as_uri() + "?mode=ro", uri=True,
                           isolation_level=None)
    try:
        conn.execute("PRAGMA busy_timeout=5000")
        conn.execute("VACUUM INTO ?", (str(copy),))
    except sqlite3.DatabaseError as exc:
        # sqlite_errorname is Python 3.11's: on 3.10 no error is taken for damage
        if getattr(exc, "sqlite_errorname", None) not in ("SQLITE_CORRUPT", "SQLITE_NOTADB"):
            raise  # not the store's fault (a full disk, an I/O error): as SQLite said it
        raise NotAStore(f"{str(source)!r} is damaged ({exc}); {_DAMAGED_STORE}") from None
    finally:
        conn.close()


def copy_before_migration(conn: sqlite3.Connection, path: str, version: int) -> str:
    """Copy the store open on ``conn`` (at ``path``, schema ``version``) page for page to
    ``PATH.backup-v<version>`` — or ``-2``, ``-3``, … beside an earlier attempt's copy, which
    is never overwritten — and return where it went."""
    backup = f"{path}.backup-v{version}"
    n = 1
    while Path(backup).exists():
        n += 1
        backup = f"{path}.backup-v{version}-{n}"
    with contextlib.closing(sqlite3.connect(backup)) as target:
        conn.backup(target)
    return backup
