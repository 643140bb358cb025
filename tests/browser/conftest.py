"""A real ``benchproof serve`` over the catalog and the seed run, and headless Chromium.

The data directory is built once per session with the console script (init, the KernelIndex
catalog, the seed manifest). Chromium is Debian's (``/usr/bin/chromium``), driven by Playwright
with the flags a closed network needs (``BENCHPROOF_CHROMIUM`` names another binary). Without
it the tests are skipped, unless ``BENCHPROOF_REQUIRE_BROWSER=1`` (then they fail).
"""

from __future__ import annotations

import json
import urllib.error
import urllib.request
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest

from tests.corpora import corpus, shared_file
from tests.servers import run_cli, served

SCREENSHOTS = Path(__file__).parent / "screenshots"
PHONE = {"width": 390, "height": 844}
DESKTOP = {"width": 1280, "height": 900}


def _bp(*args: object) -> None:
    done = run_cli(*args, timeout=300)
    assert done.returncode == 0, f"benchproof {args[0]} failed: {done.stderr[-2000:]}"


class Server:
    """The served app: its base URL and a JSON getter for the API."""

    def __init__(self, base: str, data: Path) -> None:
        self.base = base
        self.data = data

    def json(self, path: str) -> Any:
        """GET ``path`` and decode the JSON body (an HTTP error status raises)."""
        with urllib.request.urlopen(self.base + path, timeout=10) as response:
            return json.load(response)

    def status(self, path: str) -> int:
        """The HTTP status of GET ``path``."""
        try:
            with urllib.request.urlopen(self.base + path, timeout=10) as response:
                return int(response.status)
        except urllib.error.HTTPError as exc:
            return exc.code


@contextmanager
def serving(data: Path) -> Iterator[Server]:
    """``benchproof serve`` over ``data`` on a free loopback port, until the block ends."""
    with served(data) as base:
        yield Server(base, data)


@pytest.fixture(scope="session")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Server]:
    catalog = corpus("kernelindex-catalog-2026-08-16")
    seed = shared_file("seed-manifest.json")
    data = tmp_path_factory.mktemp("browser") / "data"
    _bp("init", "--data", data)
    _bp("ingest", "kernelindex-catalog", catalog, "--data", data)
    _bp("ingest", "manifest", seed, "--data", data)
    with serving(data) as served:
        yield served


@pytest.fixture
def page(browser: Any) -> Iterator[Any]:
    context = browser.new_context(viewport=DESKTOP)
    tab = context.new_page()
    yield tab
    context.close()


@pytest.fixture(scope="module")
def shoot(browser: Any) -> Any:
    """``shoot(url, name)``: full-page screenshots at phone and desktop sizes."""
    SCREENSHOTS.mkdir(exist_ok=True)

    def take(url: str, name: str) -> None:
        for label, size in (("phone", PHONE), ("desktop", DESKTOP)):
            context = browser.new_context(viewport=size, java_script_enabled=False)
            tab = context.new_page()
            response = tab.goto(url)
            assert response is not None and response.status == 200, url
            tab.screenshot(path=str(SCREENSHOTS / f"{name}-{label}.png"), full_page=True)
            context.close()

    return take
