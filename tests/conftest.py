"""Shared fixtures."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import msgspec
import pytest

from tests.corpora import catalog_tables, corpus, shared_file


@pytest.fixture(scope="session")
def catalog() -> dict[str, list[dict[str, Any]]]:
    return catalog_tables()


@pytest.fixture(scope="session")
def seed_manifest() -> dict[str, Any]:
    return msgspec.json.decode(shared_file("seed-manifest.json").read_bytes())  # type: ignore[no-any-return]


@pytest.fixture(scope="session")
def examples_dir() -> Path:
    return corpus("kernelindex-manifests", "examples")


@pytest.fixture(scope="session")
def vectors_dir() -> Path:
    return corpus("transparency-test-vectors")
