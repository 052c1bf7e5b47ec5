"""PostgreSQL for the tests: the server named by ``LOCIMEM_TEST_POSTGRES`` (``.ci/run`` sets
it), one fresh schema per store a test makes, all dropped when the session ends — so runs
(and tests) never see each other's data. Without the variable, PostgreSQL tests skip."""

from __future__ import annotations

import itertools
import os
import secrets

import pytest

ENV = "LOCIMEM_TEST_POSTGRES"
URL = os.environ.get(ENV)
SKIP_REASON = f"{ENV} is not set (a postgresql:// URL of a server the tests may write to)"
RUN = f"t{os.getpid()}_{secrets.token_hex(3)}"  # this test run's schema prefix
_n = itertools.count(1)
_made: list[str] = []

needs_postgres = pytest.mark.skipif(URL is None, reason=SKIP_REASON)


def new_url(name: str = "s") -> str:
    """A store URL naming a schema no one has used (created when a writer opens it)."""
    if URL is None:
        pytest.skip(SKIP_REASON)
    schema = f"{RUN}_{name}_{next(_n)}".lower()
    _made.append(schema)
    sep = "&" if "?" in URL else "?"
    return f"{URL}{sep}schema={schema}"


def drop_all() -> None:
    """Drop every schema this run made (at the end of the session)."""
    if URL is None or not _made:
        return
    import psycopg

    with psycopg.connect(URL, autocommit=True) as conn:
        for schema in conn.execute(
                "SELECT schema_name FROM information_schema.schemata WHERE schema_name LIKE %s",
                (f"{RUN}%",)).fetchall():
            conn.execute(f'DROP SCHEMA IF EXISTS "{schema[0]}" CASCADE')
    _made.clear()
