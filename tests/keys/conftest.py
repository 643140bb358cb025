"""Fixtures for the keys/ tests: the transparency-test-vectors KATs."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest


@pytest.fixture(scope="session")
def kats(vectors_dir: Path) -> dict[str, Any]:
    """``kats/extracted-kats.json``, decoded (skips, or fails in CI, when the corpora are absent)."""
    return json.loads((vectors_dir / "kats" / "extracted-kats.json").read_text())  # type: ignore[no-any-return]
