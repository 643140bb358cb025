"""The end-to-end scenarios' deployment: a fresh data directory made by ``benchproof init`` on
the store the run is for (``tests.stores``: SQLite by default, PostgreSQL under
``BENCHPROOF_TEST_STORE=postgresql``), used only through the console script and HTTP.

``test_stores_agree.py`` copies one log from SQLite to PostgreSQL; it is collected only when a
PostgreSQL cluster is given (``BENCHPROOF_TEST_PG``), so the default run neither runs nor skips
it."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.e2e.deployment import Deployment
from tests.servers import SCRIPT
from tests.stores import default_store_kind, drop_pg_schema, make_store_url, pg_base

collect_ignore = [] if pg_base() else ["test_stores_agree.py"]


@pytest.fixture(autouse=True)
def _no_store_from_the_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    """The scenarios name their store by ``init --store`` alone: a ``$BENCHPROOF_STORE`` of the
    caller's would override the store each data directory recorded."""
    monkeypatch.delenv("BENCHPROOF_STORE", raising=False)


@pytest.fixture
def deployment(tmp_path: Path) -> Iterator[Deployment]:
    """A data directory initialised on a fresh store of the kind this run is for (its
    PostgreSQL schema, if any, dropped after the test)."""
    assert SCRIPT.exists(), f"the console script is not installed at {SCRIPT}"
    made = Deployment(tmp_path, make_store_url(default_store_kind(), tmp_path))
    made.init()
    yield made
    if made.store:
        drop_pg_schema(made.store)
