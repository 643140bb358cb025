"""Which stores of the log the tests run on, and a fresh, private store URL for each test.

SQLite always; PostgreSQL too when ``BENCHPROOF_TEST_PG`` names a server (``make
test-postgres`` sets it, see ``tests/pgcluster.py``). On PostgreSQL each test gets a schema of
its own (``t_`` + random hex), named in the URL through libpq's ``options``
(``?options=-csearch_path%3Dt_…``), so tests never see each other's tables.

``BENCHPROOF_TEST_STORE=postgresql`` makes PostgreSQL the store the end-to-end scenarios run on
(``default_store_kind()``); it is an error to ask for it without a server, so that a missing
server never quietly turns into a run on SQLite.
"""

from __future__ import annotations

import os
import re
import secrets
from pathlib import Path
from urllib.parse import parse_qsl, quote, urlencode, urlsplit, urlunsplit

import psycopg
from psycopg import sql

ENV_URL = "BENCHPROOF_TEST_PG"
ENV_STORE = "BENCHPROOF_TEST_STORE"
KINDS = ("sqlite", "postgresql")
_SEARCH_PATH = re.compile(r"-csearch_path=(t_[0-9a-f]+)\b")

# Schemas made by fresh_pg_url and not dropped yet: their URL and the base URL they came from.
_created: dict[str, str] = {}


def pg_base() -> str | None:
    """The URL of the test server's database (``BENCHPROOF_TEST_PG``), or None without one."""
    return os.environ.get(ENV_URL) or None


def _with_options(url: str, option: str) -> str:
    """``url`` with ``option`` added to libpq's ``options``, keeping the rest of its query."""
    parts = urlsplit(url)
    query = parse_qsl(parts.query, keep_blank_values=True)
    others = [(key, value) for key, value in query if key != "options"]
    options = [value for key, value in query if key == "options"]
    query = [*others, ("options", " ".join([*options, option]))]
    # quote (not quote_plus): libpq decodes %20 in a URI, but not "+".
    return urlunsplit(parts._replace(query=urlencode(query, quote_via=quote)))


def fresh_pg_url(base: str) -> str:
    """Creates a new empty schema on the server of ``base`` and returns ``base`` with that
    schema as its search path. The schema is recorded for ``drop_pg_schema``.

    Raises:
        psycopg.OperationalError: the server does not answer.
    """
    schema = "t_" + secrets.token_hex(8)
    with psycopg.connect(base, autocommit=True) as conn:
        conn.execute(sql.SQL("CREATE SCHEMA {}").format(sql.Identifier(schema)))
    url = _with_options(base, f"-csearch_path={schema}")
    _created[url] = base
    return url


def pg_schema(url: str) -> str:
    """The schema a URL from ``fresh_pg_url`` names.

    Raises:
        ValueError: the URL names no ``t_…`` schema.
    """
    for key, value in parse_qsl(urlsplit(url).query):
        found = _SEARCH_PATH.search(value) if key == "options" else None
        if found:
            return found.group(1)
    raise ValueError(f"{url} names no test schema (options=-csearch_path=t_…)")


def drop_pg_schema(url: str) -> None:
    """Drops the schema of a URL from ``fresh_pg_url``, with everything in it, and the appender
    role ``init`` made for it (roles are the cluster's, not the schema's)."""
    from events.stores.pg_schema import appender_role

    schema = pg_schema(url)
    with psycopg.connect(_created.pop(url, url), autocommit=True) as conn:
        conn.execute(sql.SQL("DROP SCHEMA IF EXISTS {} CASCADE").format(sql.Identifier(schema)))
        database = conn.execute("SELECT current_database()").fetchone()
        assert database is not None
        role = appender_role(str(database[0]), schema)
        conn.execute(sql.SQL("DROP ROLE IF EXISTS {}").format(sql.Identifier(role)))


def drop_created_pg_schemas() -> None:
    """Drops every schema ``fresh_pg_url`` made in this process and that is still there."""
    for url in list(_created):
        drop_pg_schema(url)


def store_urls() -> list[str]:
    """The kinds of store to run the store tests on: ``sqlite``, and ``postgresql`` when
    there is a test server. A test turns a kind into a URL with ``make_store_url``."""
    return ["sqlite", "postgresql"] if pg_base() else ["sqlite"]


def make_store_url(kind: str, tmp_path: Path) -> str:
    """A store URL of ``kind`` for one test: for ``sqlite`` the empty string (the default
    store inside the test's data directory under ``tmp_path``), for ``postgresql`` a fresh
    schema on the test server.

    Raises:
        RuntimeError: ``postgresql`` without ``BENCHPROOF_TEST_PG``.
        ValueError: an unknown kind.
    """
    if kind == "sqlite":
        return ""
    if kind == "postgresql":
        base = pg_base()
        if base is None:
            raise RuntimeError(_NO_SERVER)
        return fresh_pg_url(base)
    raise ValueError(f"unknown store kind {kind!r}: expected one of {', '.join(KINDS)}")


_NO_SERVER = (
    f"{ENV_URL} is not set: the PostgreSQL tests need a server; run them with"
    " `make test-postgres` (or `python -m tests.pgcluster pytest …`)"
)


def default_store_kind() -> str:
    """The store the end-to-end scenarios run on: ``BENCHPROOF_TEST_STORE``, else ``sqlite``.

    Raises:
        RuntimeError: ``postgresql`` without ``BENCHPROOF_TEST_PG``, or an unknown kind.
    """
    kind = os.environ.get(ENV_STORE) or "sqlite"
    if kind not in KINDS:
        raise RuntimeError(f"{ENV_STORE}={kind!r}: expected one of {', '.join(KINDS)}")
    if kind == "postgresql" and pg_base() is None:
        raise RuntimeError(f"{ENV_STORE}=postgresql, but {_NO_SERVER}")
    return kind
