"""The server backend: one schema of a PostgreSQL database (the ``postgres`` extra: psycopg 3),
many writers, one write lock per scope.

- ``store.py``: :class:`PostgresStore`, the :class:`~locimem.store.base.Store` on PostgreSQL;
- ``url.py``: store URLs (``postgresql://USER@HOST:PORT/DB?schema=NAME``);
- ``rows.py``: a commit's rows written, stored rows decoded;
- ``schema.py``: the versioned schema and its named migrations;
- ``codec.py``: rows between PostgreSQL and the interchange encoding (SQLite's rows).

Importing this package imports psycopg; :mod:`locimem.store` and the memory import it only
when a ``postgresql://`` URL is opened.
"""

from locimem.store.postgres.store import (
    DEFAULT_SCHEMA,
    PostgresStore,
    is_postgres_url,
    parse_url,
    with_schema,
)

__all__ = ["DEFAULT_SCHEMA", "PostgresStore", "is_postgres_url", "parse_url", "with_schema"]
