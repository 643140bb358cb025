"""The end-to-end scenarios' deployment: a fresh data directory made by ``benchproof init`` on
the store the run is for (``tests.stores``: SQLite by default, PostgreSQL under
``BENCHPROOF_TEST_STORE=postgresql``), used only through the console script and HTTP.

``test_stores_agree.py`` copies one log from SQLite to PostgreSQL; it is collected only when a
PostgreSQL cluster is given (``BENCHPROOF_TEST_PG``), so the default run neither runs nor skips
it."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from tests.e2e.deployment import Deployment
from tests.servers import SCRIPT

try:
    from tests.stores import default_store_kind, make_store_url
except ImportError:  # the helper is being written: until then, the data directory's SQLite

    def default_store_kind() -> str:
        """The store kind the scenarios run on (stand-in: always SQLite)."""
        return "sqlite"

    def make_store_url(kind: str, tmp_path: Path) -> str:
        """The ``--store`` URL of a fresh store of ``kind`` ("" for the default SQLite file)."""
        assert kind == "sqlite", f"no PostgreSQL helper yet (tests/stores.py) for {kind}"
        return ""


collect_ignore = [] if os.environ.get("BENCHPROOF_TEST_PG") else ["test_stores_agree.py"]


@pytest.fixture
def deployment(tmp_path: Path) -> Deployment:
    """A data directory initialised on a fresh store of the kind this run is for."""
    assert SCRIPT.exists(), f"the console script is not installed at {SCRIPT}"
    made = Deployment(tmp_path, make_store_url(default_store_kind(), tmp_path))
    made.init()
    return made
