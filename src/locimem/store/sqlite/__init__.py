"""The embedded backend: one SQLite file in WAL mode (or ``":memory:"``), one writer at a time.

- ``store.py``: :class:`SQLiteStore`, the :class:`~locimem.store.base.Store` on SQLite;
- ``codec.py``: records and object states as rows, the column lists and statements;
- ``schema.py``: the versioned schema, its named migrations and :func:`store_version`;
- ``open_check.py``: the cheap check a file gets before it is read;
- ``files.py``: the writer and identity locks beside the file, directory fsync;
- ``backup.py``: consistent copies (``VACUUM INTO``; the pre-migration copy);
- ``bulk.py``: rows in, as stored (imports).
"""

from locimem.store.sqlite.files import identity_lock_dir, writer_lock_path
from locimem.store.sqlite.schema import SCHEMA_VERSION
from locimem.store.sqlite.store import MEMORY, SQLiteStore

__all__ = ["MEMORY", "SCHEMA_VERSION", "SQLiteStore", "identity_lock_dir", "writer_lock_path"]
