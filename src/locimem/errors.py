"""One exception family for everything locimem raises on purpose.

Catch :class:`LocimemError` to handle them all; the subclasses say what went wrong.
Every error raised at a public boundary is raised *before* anything is written.
"""

from __future__ import annotations

__all__ = [
    "ConnectionLost",
    "CorruptStore",
    "IntegrityError",
    "InvalidInput",
    "LocimemError",
    "NotAStore",
    "NotFound",
    "ReadOnly",
    "SchemaVersionError",
    "ScopeError",
    "StoreClosed",
    "StoreLocked",
    "ToolError",
    "WriteConflict",
    "damaged_store",
]


class LocimemError(Exception):
    """Base of every error locimem raises on purpose."""


class InvalidInput(LocimemError, ValueError):
    """An argument or a detection failed validation; nothing was written.

    ``setting``: the configuration setting the error is about, when it is about one (a value
    out of range, or the first of two settings a rule joins); None otherwise."""

    def __init__(self, message: str, *, setting: str | None = None) -> None:
        super().__init__(message)
        self.setting = setting


class NotFound(LocimemError, LookupError):
    """An object id (or other key) is not known in this store and scope."""

    def __str__(self) -> str:  # LookupError would repr() the message; keep it plain
        return str(self.args[0]) if self.args else ""


class NotAStore(LocimemError):
    """The file exists but is not a locimem store."""


class SchemaVersionError(LocimemError):
    """The store was written by a newer (or unknown) schema version."""


class StoreLocked(LocimemError):
    """Another process holds the single-writer lock on this store."""


class StoreClosed(LocimemError):
    """The memory was closed; open it again to keep using it."""


class ReadOnly(LocimemError):
    """A mutator was called on a memory opened with ``read_only=True``."""


class ScopeError(LocimemError):
    """A scope name is invalid, or a request crosses scopes."""


class ToolError(LocimemError):
    """An agent tool call failed; the message is safe to show a language model."""


class IntegrityError(LocimemError):
    """A file failed its own checks (a snapshot archive that is truncated, altered or
    damaged); nothing was written."""


class CorruptStore(LocimemError):
    """The store file is damaged (truncated, a page overwritten, a record that cannot be
    read); nothing was written. ``locimem validate STORE`` lists every problem."""


class ConnectionLost(LocimemError):
    """The connection to a database server (a PostgreSQL store) dropped during the call: the
    call's transaction was rolled back by the server, so nothing of it was written (if the
    drop came after the server committed, the commit is whole). The next call reconnects, and
    a writing memory catches up on the store before it decides anything again."""


class WriteConflict(LocimemError):
    """Another writer committed to the scope while this change was being decided, so it was
    decided from an out-of-date state; nothing was written. The memory has caught up: call
    again. (Scans and corrections never conflict: they are decided under the scope's write
    lock.)"""


def damaged_store(path: str, what: str) -> CorruptStore:
    """The error for a damaged store: what is wrong, and where to look next."""
    return CorruptStore(f"{path!r} is damaged: {what}; run `locimem validate {path}` to see "
                        "every problem, and restore a snapshot or an export if it fails")
