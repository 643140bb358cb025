"""Fixtures for tests on a real data directory (SQLite file, real keys)."""

from __future__ import annotations

from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from service.core.init import init_data_dir
from service.core.ledger import Ledger


class FakeClock:
    """A clock that ticks one second per call, from a fixed instant."""

    def __init__(self) -> None:
        self.now = datetime(2026, 11, 30, 12, 0, tzinfo=UTC)

    def __call__(self) -> datetime:
        self.now += timedelta(seconds=1)
        return self.now


@pytest.fixture
def ledger(tmp_path: Path) -> Iterator[Ledger]:
    opened, _ = init_data_dir(tmp_path / "data", clock=FakeClock())
    try:
        yield opened
    finally:
        opened.close()
