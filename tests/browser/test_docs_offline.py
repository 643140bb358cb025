"""The API docs at ``/schema`` render in Chromium with every request off this server blocked
(issue 17): the viewer's script and styles are the server's own. Screenshot:
tests/browser/screenshots/docs-offline-desktop.png."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

from tests.browser.conftest import DESKTOP, SCREENSHOTS, Server, _bp, serving
from tests.corpora import shared_file

pytestmark = [pytest.mark.corpus]


@pytest.fixture(scope="module")
def docs_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Server]:
    """A small server (the seed run only): the docs do not depend on the data."""
    data = tmp_path_factory.mktemp("docs") / "data"
    _bp("init", "--data", data)
    _bp("ingest", "manifest", shared_file("seed-manifest.json"), "--data", data)
    with serving(data) as served:
        yield served


@pytest.fixture
def offline_page(browser: Any, docs_server: Server) -> Iterator[tuple[Any, list[str]]]:
    """A tab whose requests to anywhere but the server are aborted (and recorded)."""
    context = browser.new_context(viewport=DESKTOP)
    tab = context.new_page()
    outside: list[str] = []

    def only_local(route: Any) -> None:
        url = route.request.url
        if url.startswith(docs_server.base + "/"):
            route.continue_()
        else:
            outside.append(url)
            route.abort()

    tab.route("**/*", only_local)
    yield tab, outside
    context.close()


def test_the_docs_render_without_the_internet(
    docs_server: Server, offline_page: tuple[Any, list[str]]
) -> None:
    tab, outside = offline_page
    errors: list[str] = []
    tab.on("pageerror", lambda exc: errors.append(str(exc)))
    response = tab.goto(f"{docs_server.base}/schema")
    assert response is not None and response.status == 200
    # Scalar draws the document: the run's sub-resources are operations of their own.
    manifest = tab.get_by_text("/v1/runs/{ref}/manifest", exact=True).first
    manifest.wait_for(timeout=20_000)
    assert tab.get_by_text("/v1/ingest/{source}", exact=True).count() >= 1
    manifest.click()
    tab.get_by_text("The run's manifest bundle").first.wait_for(timeout=10_000)
    tab.screenshot(path=str(SCREENSHOTS / "docs-offline-desktop.png"))
    assert outside == [], f"the docs page asked for outside resources: {outside}"
    assert errors == []


def test_an_unknown_docs_page_is_the_sites_404(
    docs_server: Server, offline_page: tuple[Any, list[str]]
) -> None:
    tab, outside = offline_page
    response = tab.goto(f"{docs_server.base}/schema/swagger")
    assert response is not None and response.status == 404
    assert tab.title() == "Not found · Benchproof"
    assert tab.locator("h1").first.inner_text()
    assert outside == []
