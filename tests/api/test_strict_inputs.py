"""Issue 17, points 3 to 7: bad input is a 400 problem naming the parameter and what it takes
(one problem type for it), a malformed run reference is 400 while a well-formed one naming
nothing stays 404 (and says the asOf it was asked at), a page of log entries says when it stops
at the cap, answers that never change are cacheable for a year, and a YAML upload is read as
YAML without ``?filename=``."""

from __future__ import annotations

from typing import Any

import pytest
from litestar.testing import TestClient

from service.app import log
from service.app.ingest import upload_name
from tests.api.conftest import Data
from tests.corpora import corpus

SEED = "sha256:5195388fd7c6a80d3089edc96ddebce288cc1703b1bfb949d3c9ca2c2c6fd74b"
BAD_REQUEST = "https://benchproof.dev/problems/bad-request"
Client = TestClient  # type: ignore[type-arg]


def _problem(response: Any, status: int) -> dict[str, Any]:
    assert response.status_code == status, response.text
    assert response.headers["content-type"].startswith("application/problem+json")
    body: dict[str, Any] = response.json()
    assert body["status"] == status and body["title"]
    return body


def _bad_request(response: Any) -> dict[str, Any]:
    body = _problem(response, 400)
    assert body["type"] == BAD_REQUEST, body
    return body


def _size(client: Client) -> int:
    size: int = client.get("/healthz").json()["treeSize"]
    return size


# --- 3: strict parameters -------------------------------------------------------------------


def test_log_entries_start_after_end_is_400(client: Client) -> None:
    body = _bad_request(client.get("/v1/log/entries?start=5&end=2"))
    assert "start (5) must be at most end (2)" in body["detail"]
    assert body["parameter"] == "start"
    beyond = _bad_request(client.get(f"/v1/log/entries?start={_size(client) + 1}"))
    assert "beyond the tree" in beyond["detail"]
    # The edges stay answers: an empty range, and the end of the log.
    assert client.get("/v1/log/entries?start=2&end=2").json()["entries"] == []
    assert client.get(f"/v1/log/entries?start={_size(client)}").json()["entries"] == []


AS_OF_READS = [
    "/v1/runs",
    f"/v1/runs/{SEED}",
    f"/v1/runs/{SEED}/history",
    "/v1/log/checkpoint",
    "/v1/log/entries",
    "/v1/attestations",
]


@pytest.mark.parametrize(
    "text",
    ["2026-12-01", "2026-12-01T10:00Z", "2026-12-01T10:00:00", "yesterday", "-1", "²", "1e3"],
)
def test_as_of_is_a_tree_size_or_an_rfc3339_instant(client: Client, text: str) -> None:
    for path in AS_OF_READS:
        body = _bad_request(client.get(path, params={"asOf": text}))
        assert body["parameter"] == "asOf", path
        assert body["detail"].startswith("asOf must be a tree size"), body["detail"]
        assert "RFC 3339 instant" in body["detail"]
    if text == "2026-12-01":
        assert "is a date, not an instant" in body["detail"]


def test_rfc3339_instants_and_sizes_are_taken(client: Client) -> None:
    size = _size(client)
    for text in ("2999-01-01T00:00:00Z", "2999-01-01t00:00:00.5+02:00", str(size), f" {size} "):
        assert client.get(f"/v1/runs/{SEED}", params={"asOf": text}).status_code == 200, text
    body = _bad_request(client.get("/v1/runs", params={"asOf": "9" * 40}))
    assert "beyond the log" in body["detail"]


@pytest.mark.parametrize("path", ["/", "/log", f"/runs/{SEED}"])
def test_pages_refuse_a_bare_date_too(client: Client, path: str) -> None:
    r = client.get(path, params={"asOf": "2026-12-01"})
    assert r.status_code == 400 and r.headers["content-type"].startswith("text/html")
    assert "asOf must be a tree size" in r.text


@pytest.mark.parametrize(
    "path",
    [
        "/v1/attestations?subject=bogus",
        "/v1/attestations?subject=sha256:abc",
        "/v1/attestations?kind=bogus",
        "/v1/attestations?attester=nobody",
        "/v1/attestations?after=garbage",
        "/v1/keys?after=garbage",
        "/v1/reruns?state=bogus",
        "/v1/log/entries?start=x",
        "/v1/log/proof/inclusion?index=x",
    ],
)
def test_list_parameters_refuse_what_they_do_not_take(client: Client, path: str) -> None:
    body = _bad_request(client.get(path))
    name = path.split("?")[1].split("=")[0]
    # Named in the detail (ours), or in the errors (litestar's validation of the type).
    assert name in body["detail"] or [e["key"] for e in body["errors"]] == [name], body


def test_attestation_filters_of_the_right_shape_answer(client: Client) -> None:
    for query in ("kind=reproduced", f"subject={SEED}", "attester=" + "0" * 64):
        r = client.get(f"/v1/attestations?{query}")
        assert r.status_code == 200 and r.json()["items"] == [], query
    body = _bad_request(client.get("/v1/attestations?kind=bogus"))
    assert "reproduced" in body["detail"] and "could-not-reproduce" in body["detail"]


# --- 4: malformed references ----------------------------------------------------------------


@pytest.mark.parametrize(
    ("ref", "why"),
    [
        ("sha256:zz", "64 lowercase hex digits"),
        ("kernelindex:not-a-uuid", "is a UUID"),
        ("a/b", "12 or more lowercase hex digits"),
        ("abc123", "12 or more lowercase hex digits"),
        (":165", "<source>:<externalId>"),
    ],
)
def test_malformed_references_are_400(client: Client, ref: str, why: str) -> None:
    for path in (f"/v1/runs/{ref}", f"/v1/runs/{ref}/history", f"/v1/runs/{ref}/manifest"):
        body = _bad_request(client.get(path))
        assert why in body["detail"], body["detail"]
        for form in ("short id", "sha256:<64 hex digits>", "kernelindex:<uuid>", "<source>:"):
            assert form in body["detail"]
        assert body["reference"] == ref
    page = client.get(f"/runs/{ref}")
    assert page.status_code == 400 and page.headers["content-type"].startswith("text/html")
    assert "not a run reference" in page.text


def test_well_formed_references_naming_nothing_stay_404(client: Client) -> None:
    for ref in (
        "sha256:" + "0" * 64,
        "0" * 12,
        "kernelindex:00000000-0000-0000-0000-000000000000",
        "kernelbot:submission/7",  # an alias's external id may hold a slash
    ):
        body = _problem(client.get(f"/v1/runs/{ref}"), 404)
        assert body["type"].endswith("/unknown-run"), ref
    assert client.get("/v1/runs/synthetic:submission/777").status_code == 200


def test_one_problem_type_for_bad_input(client: Client) -> None:
    framework = _bad_request(client.get("/v1/runs?limit=0"))  # litestar's own validation
    ours = _bad_request(client.get("/v1/runs?asOf=nope"))
    malformed = _bad_request(client.get("/v1/runs/sha256:zz"))
    assert framework["title"] == ours["title"] == malformed["title"]
    assert framework["errors"][0]["key"] == "limit"
    schema = client.get("/schema/openapi.json").json()
    assert "malformed reference" in str(schema["paths"]["/v1/runs/{ref}"]["get"]["responses"])


# --- 5: the log's page cap ------------------------------------------------------------------


def test_a_capped_page_of_entries_links_to_the_rest(
    client: Client, monkeypatch: pytest.MonkeyPatch
) -> None:
    size = _size(client)
    whole = client.get(f"/v1/log/entries?end={size}").json()
    assert "next" not in whole and len(whole["entries"]) == size
    monkeypatch.setattr(log, "PAGE_LIMIT", 2)
    first = client.get("/v1/log/entries?start=1&end=6").json()
    assert [e["index"] for e in first["entries"]] == [1, 2]
    assert first["next"] == "/v1/log/entries?start=3&end=6"
    seen, url = [], f"/v1/log/entries?start=0&asOf={size - 1}"
    while url:
        page = client.get(url).json()
        seen += page["entries"]
        url = page.get("next")
    assert seen == whole["entries"][: size - 1]  # paged through the tree asked, no further


def test_the_cap_is_documented(client: Client) -> None:
    assert log.PAGE_LIMIT == 1000
    route = client.get("/schema/openapi.json").json()["paths"]["/v1/log/entries"]["get"]
    assert "1,000" in route["description"] and "1,000" in route["responses"]["200"]["description"]


# --- 6: caching forever, and asOf=0 ---------------------------------------------------------


def test_pinned_answers_are_cacheable_for_a_year(client: Client) -> None:
    size = _size(client)
    for path in (f"/v1/runs/{SEED}?asOf={size}", "/v1/log/entries?asOf=3", "/log?asOf=3"):
        r = client.get(path)
        assert r.headers["cache-control"] == "public, max-age=31536000, immutable", path
    assert client.get(f"/v1/runs/{SEED}").headers["cache-control"] == "no-cache"


def test_a_run_not_there_as_of_a_size_says_the_as_of(client: Client) -> None:
    empty = _problem(client.get(f"/v1/runs/{SEED}?asOf=0"), 404)
    assert "as of tree size 0 (asOf 0): the log held no entries then" in empty["detail"]
    assert empty["asOf"] == 0
    position = client.get(f"/v1/runs/{SEED}").json()["ingestPosition"]
    before = _problem(client.get(f"/v1/runs/{SEED}/history?asOf={position}"), 404)
    assert f"as of tree size {position}" in before["detail"]
    assert "the run was not in the log yet" in before["detail"]
    page = client.get(f"/runs/{SEED}?asOf=0")
    assert page.status_code == 404 and "tree size 0" in page.text
    never = _problem(client.get("/v1/runs/nope:nothing?asOf=3"), 404)
    assert "as of tree size 3" in never["detail"]
    assert "asOf" not in _problem(client.get("/v1/runs/nope:nothing"), 404)


# --- 7: a YAML upload -----------------------------------------------------------------------


def _yaml_example() -> bytes:
    return sorted(corpus("kernelindex-manifests", "examples").glob("*.yaml"))[0].read_bytes()


@pytest.mark.parametrize(
    "content_type",
    [None, "application/x-www-form-urlencoded", "application/octet-stream", "application/yaml"],
)
def test_a_yaml_upload_is_read_as_yaml(
    client: Client, data: Data, content_type: str | None
) -> None:
    headers = {"authorization": f"Bearer {data.token}"}
    if content_type is not None:
        headers["content-type"] = content_type
    size = _size(client)
    r = client.post("/v1/ingest/manifest", content=_yaml_example(), headers=headers)
    assert r.status_code == 200, r.text
    result = r.json()
    # The fixture imported the examples already: read as YAML, the upload is known, not new.
    assert result["entries"] == 0 and result["runsKnown"] + result["manifestsKnown"] >= 1
    assert _size(client) == size


def test_a_yaml_upload_declared_json_says_what_decides_the_format(
    client: Client, data: Data
) -> None:
    headers = {"authorization": f"Bearer {data.token}", "content-type": "application/json"}
    size = _size(client)
    body = _problem(
        client.post("/v1/ingest/manifest", content=_yaml_example(), headers=headers), 422
    )
    assert "read as upload.json (from the Content-Type application/json)" in body["detail"]
    assert "?filename=" in body["detail"] and "application/yaml" in body["detail"]
    named = client.post(
        "/v1/ingest/manifest?filename=run.yaml", content=_yaml_example(), headers=headers
    )
    assert named.status_code == 200, named.text
    assert _size(client) == size


@pytest.mark.parametrize(
    ("filename", "content_type", "body", "name"),
    [
        ("runs.yml", "application/json", b"{}", "runs.yml"),  # the file name decides first
        (None, "text/yaml; charset=utf-8", b"{}", "upload.yaml"),
        (None, "application/x-ndjson", b"{}", "upload.jsonl"),
        (None, None, b'{"a": 1}', "upload.json"),
        (None, None, b'{"a": 1}\n{"b": 2}\n', "upload.jsonl"),
        (None, None, b"# a manifest\n\napiVersion: x\nkind: y\n", "upload.yaml"),
        (None, "text/plain", b"---\na: 1\n---\nb: 2\n", "upload.yaml"),
        (None, None, b"a,b\n1,2\n", "upload.json"),  # not YAML mappings: left to JSON
        (None, None, b"\x28\xb5\x2f\xfd....", "upload.jsonl.zst"),
    ],
)
def test_how_an_upload_format_is_decided(
    filename: str | None, content_type: str | None, body: bytes, name: str
) -> None:
    assert upload_name(filename, content_type, body)[0] == name
