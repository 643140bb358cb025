"""The API through a real ``benchproof serve`` process on loopback, with httpx."""

from __future__ import annotations

from collections.abc import Iterator

import httpx
import pytest

from tests.api.conftest import Data
from tests.independent import open_checkpoint
from tests.servers import served

SEED = "sha256:5195388fd7c6a80d3089edc96ddebce288cc1703b1bfb949d3c9ca2c2c6fd74b"


@pytest.fixture(scope="module")
def base(data: Data) -> Iterator[str]:
    with served(data.root) as url:
        yield url


def test_run_json_and_conditional_get(base: str) -> None:
    with httpx.Client(base_url=base) as client:
        r = client.get("/v1/runs/sol-execbench:165")
        assert r.status_code == 200
        assert r.json()["runDigest"] == SEED
        assert r.headers["x-request-id"]
        again = client.get(
            "/v1/runs/sol-execbench:165", headers={"If-None-Match": r.headers["etag"]}
        )
        assert again.status_code == 304


def test_problem_json_over_the_wire(base: str) -> None:
    r = httpx.get(f"{base}/v1/runs/nope:nothing")
    assert r.status_code == 404
    assert r.headers["content-type"].startswith("application/problem+json")
    assert r.json()["title"]
    r = httpx.post(f"{base}/v1/ingest/manifest", content=b"{}")
    assert r.status_code == 401
    assert r.headers["content-type"].startswith("application/problem+json")


def test_served_checkpoint_verifies_with_the_served_key(base: str) -> None:
    key = httpx.get(f"{base}/v1/log/key").text
    note = httpx.get(f"{base}/v1/log/checkpoint").content
    origin, size, _ = open_checkpoint(note, key)
    assert size == httpx.get(f"{base}/healthz").json()["treeSize"]
    assert origin == httpx.get(f"{base}/healthz").json()["origin"]


def test_ingest_with_a_token_over_the_wire(base: str, data: Data) -> None:
    from tests.corpora import shared_file

    r = httpx.post(
        f"{base}/v1/ingest/manifest",
        content=shared_file("seed-manifest.json").read_bytes(),
        headers={"authorization": f"Bearer {data.token}", "content-type": "application/json"},
    )
    assert r.status_code == 200, r.text
    assert r.json()["runsKnown"] == 1


def test_the_dossier_page(base: str) -> None:
    r = httpx.get(f"{base}/runs/5195388fd7c6")
    assert r.status_code == 200
    assert r.headers["content-type"].startswith("text/html")
    for section in ("Primary measurement", "Identity", "Canonical manifest", "Cite this record"):
        assert section in r.text
