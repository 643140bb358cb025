"""The API docs at ``/schema`` work without internet (the viewer's script is served from
``/static/openapi``), other ``/schema/*`` paths are the site's 404, the OpenAPI document lists
every resource that is served, and a 405 names HEAD where GET is allowed (issue 17)."""

from __future__ import annotations

import hashlib
import re
import socket
from pathlib import Path
from typing import Any

import pytest
from litestar.testing import TestClient

from service.ingest.api import SOURCES
from service.web.openapi import SCALAR_JS, SCALAR_VERSION
from tests.api.conftest import Data

Client = TestClient[Any]

STATIC = Path(__file__).parents[2] / "service" / "web" / "static"
BROWSER = {"Accept": "text/html,application/xhtml+xml,application/xml;q=0.9,*/*;q=0.8"}


@pytest.fixture
def offline(monkeypatch: pytest.MonkeyPatch) -> None:
    """No connection leaves the process: any attempt fails the test."""

    def refuse(*args: object, **kwargs: object) -> None:
        raise AssertionError(f"a network connection was attempted: {args}")

    monkeypatch.setattr(socket.socket, "connect", refuse)
    monkeypatch.setattr(socket, "create_connection", refuse)


@pytest.fixture
def spec(client: Client) -> dict[str, Any]:
    answer: dict[str, Any] = client.get("/schema/openapi.json").json()
    return answer


def _assets(html: str) -> list[str]:
    return re.findall(r"""(?:src|href)\s*=\s*["']([^"']+)["']""", html)


@pytest.mark.usefixtures("offline")
def test_the_docs_page_loads_only_this_servers_assets(client: Client) -> None:
    page = client.get("/schema")
    assert page.status_code == 200
    assert page.headers["content-type"].startswith("text/html")
    assets = _assets(page.text)
    assert SCALAR_JS in assets
    for url in assets:
        assert url.startswith("/") and not url.startswith("//"), url
        answer = client.get(url)
        assert answer.status_code == 200, url
        kind = "javascript" if url.endswith(".js") else "css"
        assert kind in answer.headers["content-type"], url
    assert "cdn" not in page.text.lower()
    # The viewer is told to fetch no fonts and send no telemetry.
    assert '"withDefaultFonts":false' in page.text
    assert '"telemetry":false' in page.text
    assert client.get("/schema/openapi.json").status_code == 200


def test_the_viewer_is_kept_with_its_version_and_license() -> None:
    folder = STATIC / "openapi" / f"scalar-api-reference-{SCALAR_VERSION}"
    assert f"/static/openapi/{folder.name}/standalone.js" == SCALAR_JS
    assert "MIT License" in (folder / "LICENSE").read_text()
    readme = (folder / "README.md").read_text()
    source = f"api-reference-{SCALAR_VERSION}.tgz"
    assert SCALAR_VERSION in readme and source in readme
    digest = hashlib.sha256((folder / "standalone.js").read_bytes()).hexdigest()
    assert digest in readme, "standalone.js is not the file the README names"


@pytest.mark.parametrize("path", ["/schema/swagger", "/schema/redoc", "/schema/nothing/here"])
def test_unknown_docs_paths_are_the_sites_404(client: Client, path: str) -> None:
    page = client.get(path, headers=BROWSER)
    assert page.status_code == 404
    assert page.headers["content-type"].startswith("text/html")
    assert "Not found · Benchproof" in page.text  # the site's own error page
    assert 'href="/static/style.css"' in page.text
    api = client.get(path, headers={"Accept": "application/json"})
    assert api.status_code == 404
    assert api.headers["content-type"] == "application/problem+json"
    assert api.json()["status"] == 404


def test_the_document_lists_each_run_resource(spec: dict[str, Any]) -> None:
    paths = spec["paths"]
    components = spec["components"]["schemas"]
    for suffix in ("manifest", "history", "citation"):
        get = paths[f"/v1/runs/{{ref}}/{suffix}"]["get"]
        names = {p["name"] for p in get["parameters"]}
        # A citation names the instant it was asked for: it takes a format, and no asOf.
        assert names == ({"ref", "format"} if suffix == "citation" else {"ref", "asOf"}), suffix
        assert {"200", "404"} <= set(get["responses"]), suffix
    history = paths["/v1/runs/{ref}/history"]["get"]["responses"]["200"]
    ref = history["content"]["application/json"]["schema"]["$ref"]
    assert ref.rsplit("/", 1)[1] in components
    citation = paths["/v1/runs/{ref}/citation"]["get"]["responses"]["200"]["content"]
    assert {"text/plain", "application/x-bibtex"} <= set(citation)
    for suffix in ("attestations", "reports", "reruns"):
        post = paths[f"/v1/runs/{{ref}}/{suffix}"]["post"]
        assert post["requestBody"]["required"] is True
        assert "application/json" in post["requestBody"]["content"], suffix
    assert paths["/v1/runs/{ref}/reruns"]["post"]["security"] == [{"operatorToken": []}]
    report = paths["/v1/runs/{ref}/reports"]["post"]["requestBody"]["content"]
    assert report["application/json"]["schema"]["required"] == ["reason", "text"]
    # The bare reference is the dossier: no POST, and no citation format.
    assert "post" not in paths["/v1/runs/{ref}"]
    assert "format" not in {p["name"] for p in paths["/v1/runs/{ref}"]["get"]["parameters"]}
    operation_ids = [op["operationId"] for item in paths.values() for op in item.values()]
    assert len(operation_ids) == len(set(operation_ids))


def test_the_documented_run_resources_are_served(client: Client, data: Data) -> None:
    digest = data.digests[0]
    assert client.get(f"/v1/runs/{digest}").status_code == 200
    manifest = client.get(f"/v1/runs/{digest}/manifest")
    assert manifest.status_code == 200
    assert {"run", "protocol", "environment"} <= set(manifest.json())
    assert client.get(f"/v1/runs/{digest}/history").json()["runDigest"] == digest
    citation = client.get(f"/v1/runs/{digest}/citation", params={"format": "bibtex"})
    assert citation.status_code == 200
    assert citation.headers["content-type"].startswith("application/x-bibtex")


def test_the_document_describes_the_ingest_body(spec: dict[str, Any]) -> None:
    ingest = spec["paths"]["/v1/ingest/{source}"]["post"]
    body = ingest["requestBody"]
    assert body["required"] is True
    assert {
        "application/json",
        "application/yaml",
        "application/x-ndjson",
        "text/csv",
        "application/zstd",
    } <= set(body["content"])
    assert "filename" in body["description"]
    source = next(p for p in ingest["parameters"] if p["name"] == "source")
    assert source["schema"]["enum"] == list(SOURCES)


def test_a_405_names_head_where_get_is_allowed(client: Client) -> None:
    refused = client.post("/v1/runs")
    assert refused.status_code == 405
    allowed = [m.strip() for m in refused.headers["allow"].split(",")]
    assert allowed[:2] == ["GET", "HEAD"] and "OPTIONS" in allowed
    assert refused.headers["content-type"] == "application/problem+json"
    assert client.head("/v1/runs").status_code == 200  # what it names is served
    # A route without GET gains no HEAD (a HEAD there is answered as the GET: 405).
    post_only = client.get("/v1/ingest/manifest")
    assert post_only.status_code == 405
    assert "HEAD" not in post_only.headers["allow"]
    assert "POST" in post_only.headers["allow"]
    assert client.head("/v1/ingest/manifest").status_code == 405
    # A page answers an HTML 405 with the same header.
    page = client.post("/log")
    assert page.status_code == 405
    assert page.headers["content-type"].startswith("text/html")
    assert {"GET", "HEAD"} <= {m.strip() for m in page.headers["allow"].split(",")}
