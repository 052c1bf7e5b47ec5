"""Store URLs of the server backend: ``postgresql://USER@HOST:PORT/DB`` with an optional
``?schema=NAME`` and ``?late_s=SECONDS`` beside libpq's own parameters."""

from __future__ import annotations

import re
from urllib.parse import parse_qsl, urlencode, urlsplit, urlunsplit

from locimem.errors import InvalidInput
from locimem.store.base import LATE_S_KEY

__all__ = ["DEFAULT_SCHEMA", "parse_url", "url_late_s", "with_schema"]

DEFAULT_SCHEMA = "locimem"
_SCHEMA_NAME = re.compile(r"^[a-z_][a-z0-9_]{0,62}$")


def parse_url(url: str) -> tuple[str, str]:
    """(libpq connection string, schema) of a store URL: ``postgresql://USER@HOST:PORT/DB``
    with an optional ``?schema=NAME`` (default ``locimem``; lower-case letters, digits and
    ``_``, not starting with ``pg_``: PostgreSQL keeps those for its own schemas, such as
    ``pg_catalog``, ``pg_toast`` and ``pg_temp``) beside libpq's own parameters."""
    parts = urlsplit(url)
    query = parse_qsl(parts.query, keep_blank_values=True)
    schemas = [v for k, v in query if k == "schema"]
    schema = schemas[-1] if schemas else DEFAULT_SCHEMA
    if not _SCHEMA_NAME.match(schema):
        raise InvalidInput(f"schema must be lower-case letters, digits and '_' (at most 63), "
                           f"starting with a letter or '_'; got {schema!r}")
    if schema.startswith("pg_"):
        raise InvalidInput(f"schema {schema!r} starts with 'pg_', which PostgreSQL reserves "
                           "for its own schemas (pg_catalog, pg_toast, pg_temp); name another")
    rest = urlencode([(k, v) for k, v in query if k not in ("schema", LATE_S_KEY)])
    return urlunsplit(parts._replace(query=rest)), schema


def url_late_s(url: str) -> float | None:
    """The late-scan tolerance a store URL asks for (``?late_s=SECONDS``), or None.

    >>> url_late_s("postgresql://db/fleet?schema=home&late_s=5"), url_late_s("postgresql://db")
    (5.0, None)
    """
    values = [v for k, v in parse_qsl(urlsplit(url).query, keep_blank_values=True)
              if k == LATE_S_KEY]
    if not values:
        return None
    try:
        return float(values[-1])
    except ValueError:
        raise InvalidInput(f"late_s in the URL must be a number of seconds, got "
                           f"{values[-1]!r}") from None


def with_schema(url: str, schema: str) -> str:
    """``url`` naming ``schema`` instead of its own."""
    parts = urlsplit(url)
    query = [(k, v) for k, v in parse_qsl(parts.query, keep_blank_values=True) if k != "schema"]
    return urlunsplit(parts._replace(query=urlencode([*query, ("schema", schema)])))
