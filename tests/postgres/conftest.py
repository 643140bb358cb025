"""Every test in this folder needs the server ``BENCHPROOF_TEST_PG`` names, and fails (never
skips) without one: a PostgreSQL run that quietly tested nothing would look like a pass."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from tests.stores import ENV_URL, drop_pg_schema, fresh_pg_url, pg_base


@pytest.fixture(autouse=True)
def pg_base_url() -> str:
    """The URL of the test server's ``benchproof`` database."""
    base = pg_base()
    if base is None:
        pytest.fail(
            f"{ENV_URL} is not set: tests/postgres needs a PostgreSQL server; run it with"
            " `make test-postgres` (or `python -m tests.pgcluster pytest tests/postgres`)",
            pytrace=False,
        )
    return base


@pytest.fixture
def pg_url(pg_base_url: str) -> Iterator[str]:
    """A store URL on a fresh, empty schema of its own, dropped after the test."""
    url = fresh_pg_url(pg_base_url)
    yield url
    drop_pg_schema(url)
