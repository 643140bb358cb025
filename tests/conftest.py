"""Shared fixtures."""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import msgspec
import pytest
from hypothesis import settings

from tests.chromium import CHROMIUM, FLAGS
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


# Module, not session: Playwright's sync API keeps an event loop running on the main thread while
# it is open, and a later test of the same worker that calls asyncio.run() would fail.
@pytest.fixture(scope="module")
def browser() -> Iterator[Any]:
    if not CHROMIUM.exists():
        message = f"{CHROMIUM} is missing: the tests that show pages need Debian's chromium"
        if os.environ.get("BENCHPROOF_REQUIRE_BROWSER") == "1":
            pytest.fail(message)
        pytest.skip(message)
    from playwright.sync_api import sync_playwright

    with sync_playwright() as pw:
        chromium = pw.chromium.launch(executable_path=str(CHROMIUM), args=FLAGS)
        yield chromium
        chromium.close()


# Hypothesis's deadline is a per-example timer, not what a property asserts: with two xdist
# workers on a machine that other work shares, an example's first run can pass 200 ms. Tests
# that name their own settings keep them.
settings.register_profile("benchproof", deadline=None)
settings.load_profile("benchproof")


# Every SQL statement runs on each store (tests/statements.py: make test and make test-postgres).
from tests.statements import (  # noqa: E402
    pytest_configure,
    pytest_sessionfinish,
    pytest_terminal_summary,
)

__all__ = ["pytest_configure", "pytest_sessionfinish", "pytest_terminal_summary"]
