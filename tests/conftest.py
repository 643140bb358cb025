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


@pytest.fixture(scope="session")
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

# Fixtures built per test file (or per worker) that are cheap enough to build twice.
_CHEAP = {"catalog", "seed_manifest", "examples_dir", "vectors_dir", "browser", "bp", "kats"}


@pytest.hookimpl(tryfirst=True)
def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """Under ``--dist loadgroup`` (``make test``) the tests that share a costly fixture run on
    one xdist worker, so that fixture is built once, not once per worker: the users of a
    session fixture form one group (the fixture's), those of a module fixture their file's.
    (Runs before xdist's own hook, which reads the ``xdist_group`` marks.)"""
    for item in items:
        info = getattr(item, "_fixtureinfo", None)
        if info is None:
            continue
        group = ""
        for name in info.names_closure:
            if name in _CHEAP:
                continue
            for fixturedef in info.name2fixturedefs.get(name, ()):
                if not fixturedef.baseid:  # a plugin's (hypothesis, faker), not the suite's
                    continue
                if fixturedef.scope == "session":
                    # by the function: a file that imports another's fixture shares its group
                    group = f"{fixturedef.func.__module__}::{fixturedef.func.__qualname__}"
                    break
                if fixturedef.scope in ("module", "package") and not group:
                    group = item.nodeid.split("::")[0]
            if group and "::" in group:
                break
        if group:
            item.add_marker(pytest.mark.xdist_group(group))
