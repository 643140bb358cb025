"""The JSON API through litestar's test client."""

from __future__ import annotations

import base64
import json
from typing import Any

from litestar.testing import TestClient

from tests.api.conftest import Data
from tests.corpora import shared_file
from tests.independent import h, mth, open_checkpoint, root_from_path, roots_from_subproof

SEED = "sha256:5195388fd7c6a80d3089edc96ddebce288cc1703b1bfb949d3c9ca2c2c6fd74b"
Client = TestClient  # type: ignore[type-arg]


def _problem(response: Any, status: int) -> dict[str, Any]:
    assert response.status_code == status, response.text
    assert response.headers["content-type"].startswith("application/problem+json")
    body: dict[str, Any] = response.json()
    assert body["status"] == status
    assert body["title"]
    return body


def test_healthz(client: Client) -> None:
    body = client.get("/healthz").json()
    assert body["status"] == "ok"
    assert body["treeSize"] > 2


def test_run_by_every_kind_of_reference(client: Client) -> None:
    for ref in (
        SEED,
        SEED.removeprefix("sha256:")[:12],
        "sol-execbench:165",
        "sol-execbench%3A165",
    ):
        r = client.get(f"/v1/runs/{ref}")
        assert r.status_code == 200, (ref, r.text)
        body = r.json()
        assert body["runDigest"] == SEED
        assert body["shortId"] == "5195388fd7c6"
        assert body["metricKey"] == "latency:mean:ns"
        assert body["primary"] == {
            "metric": "latency",
            "statistic": "mean",
            "unit": "ns",
            "value": 1093964.0,
        }
        assert "sol-execbench:165" in body["aliases"]
        assert body["unresolved"] == ["workload", "implementation", "operation"]
        assert body["evidenceLevel"] == "reported"


def test_aliases_holding_a_slash(client: Client, data: Data) -> None:
    for ref in ("synthetic:submission/777", "synthetic:submission%2F777"):
        body = client.get(f"/v1/runs/{ref}").json()
        assert body["runDigest"] == data.digests[0]
    assert (
        client.get("/v1/runs/synthetic:submission/777/manifest").json()["run"]["kind"]
        == "BenchmarkRun"
    )
    assert (
        client.get("/v1/runs/synthetic:submission/777/history").json()[0]["event"]
        == "run.ingested.v1"
    )


def test_unknown_and_malformed_references_are_404(client: Client) -> None:
    for ref in ("doesnotexist", "sha256:" + "0" * 64, "abc", "nope:nothing", "%20"):
        _problem(client.get(f"/v1/runs/{ref}"), 404)


def test_ambiguous_alias_is_300_with_candidates(client: Client, data: Data) -> None:
    body = _problem(client.get("/v1/runs/synthetic:shared-alias"), 300)
    assert sorted(body["candidates"]) == sorted([data.digests[1], data.digests[3]])


def test_etag_and_conditional_get(client: Client) -> None:
    first = client.get(f"/v1/runs/{SEED}")
    etag = first.headers["etag"]
    assert first.headers["cache-control"] == "no-cache"
    assert first.headers["content-type"] == "application/json"
    assert int(first.headers["content-length"]) == len(first.content)
    again = client.get(f"/v1/runs/{SEED}", headers={"If-None-Match": etag})
    assert again.status_code == 304
    assert again.content == b"" and again.headers["etag"] == etag
    assert "content-type" not in again.headers
    stale = client.get(f"/v1/runs/{SEED}", headers={"If-None-Match": '"not-it"'})
    assert stale.status_code == 200 and stale.content == first.content
    page = client.get(f"/runs/{SEED[7:19]}")
    assert page.headers["content-type"] == "text/html; charset=utf-8"
    assert int(page.headers["content-length"]) == len(page.content)
    pinned = client.get(f"/v1/runs/{SEED}?asOf={first.json()['asOf']}")
    assert "immutable" in pinned.headers["cache-control"]


def test_as_of_answers_the_past(client: Client, data: Data) -> None:
    seed = client.get(f"/v1/runs/{SEED}").json()
    position = seed["ingestPosition"]
    _problem(client.get(f"/v1/runs/{SEED}?asOf={position}"), 404)
    assert client.get(f"/v1/runs/{SEED}?asOf={position + 1}").status_code == 200
    _problem(client.get(f"/v1/runs/{SEED}?asOf=not-a-time"), 400)
    _problem(client.get(f"/v1/runs/{SEED}?asOf=99999999"), 400)
    assert client.get(f"/v1/runs/{SEED}?asOf=2000-01-01T00:00:00Z").status_code == 404
    assert client.get(f"/v1/runs/{SEED}?asOf=2999-01-01T00:00:00Z").status_code == 200


def test_group_ranks_and_history(client: Client, data: Data) -> None:
    run = client.get(f"/v1/runs/{data.digests[0]}").json()
    key = run["comparisonKey"]
    assert run["rank"]["rank"] == 3 and run["rank"]["of"] == 3 and run["rank"]["members"] == 4
    group = client.get(f"/v1/groups/{key}").json()
    assert [(r["rank"], r["run"]["primaryValue"]) for r in group["runs"]] == [
        (1, 100.0),
        (1, 100.0),
        (2, 200.0),
        (3, 300.0),
    ]
    history = client.get(f"/v1/groups/{key}/history").json()
    assert [c["runDigest"] for c in history] == [data.digests[0], data.digests[1]]
    assert history[1]["previousRunDigest"] == data.digests[0]
    _problem(client.get("/v1/groups/sha256:" + "1" * 64), 404)


def test_runs_list_pages_with_keyset_cursors(client: Client, data: Data) -> None:
    seen: list[str] = []
    url = "/v1/runs?limit=2"
    while True:
        page = client.get(url).json()
        seen += [item["runDigest"] for item in page["items"]]
        if page["next"] is None:
            break
        url = f"/v1/runs?limit=2&after={page['next']}"
    assert seen == sorted(seen)
    assert len(seen) == len(set(seen)) == 7
    by_key = client.get(
        f"/v1/runs?comparisonKey={client.get(f'/v1/runs/{data.digests[0]}').json()['comparisonKey']}"
    ).json()
    assert len(by_key["items"]) == 4
    assert client.get("/v1/runs?source=sol-execbench").json()["items"][0]["runDigest"] == SEED
    assert client.get("/v1/runs?hardware=NVIDIA%20B200").json()["items"]
    _problem(client.get("/v1/runs?limit=0"), 400)


def test_compare_names_the_first_material_mismatch(client: Client, data: Data) -> None:
    same = client.get(f"/v1/compare?runs={data.digests[0]},{data.digests[1]}").json()
    assert same["comparable"] is True
    assert "firstMismatch" not in same
    different = client.get(f"/v1/compare?runs={data.digests[0]},sol-execbench:165").json()
    assert different["comparable"] is False
    assert different["firstMismatch"] == "operationDigest"
    _problem(client.get(f"/v1/compare?runs={data.digests[0]}"), 400)
    nine = ",".join([data.digests[0]] * 9)
    _problem(client.get(f"/v1/compare?runs={nine}"), 400)


def test_manifest_and_history(client: Client) -> None:
    manifest = client.get(f"/v1/runs/{SEED}/manifest").json()
    seed = json.loads(shared_file("seed-manifest.json").read_text())
    assert manifest["run"]["spec"] == seed["run"]["spec"]
    assert set(manifest) == {"run", "protocol", "environment"}
    history = client.get(f"/v1/runs/{SEED}/history").json()
    assert history[0]["event"] == "run.ingested.v1"


def test_log_endpoints_verify_independently(client: Client) -> None:
    key = client.get("/v1/log/key")
    assert key.headers["content-type"].startswith("text/plain")
    note = client.get("/v1/log/checkpoint")
    assert note.headers["content-type"].startswith("text/plain")
    _, size, root = open_checkpoint(note.content, key.text)
    entries = client.get(f"/v1/log/entries?start=0&end={size}").json()["entries"]
    leaves = [base64.b64decode(e["leaf"]) for e in entries]
    assert mth(leaves) == root
    proof = client.get(f"/v1/log/proof/inclusion?index=3&size={size}").json()
    assert (
        root_from_path(
            3, size, h(b"\x00" + leaves[3]), [base64.b64decode(x) for x in proof["hashes"]]
        )
        == root
    )
    con = client.get(f"/v1/log/proof/consistency?old=2&new={size}").json()
    old_root = mth(leaves[:2])
    assert roots_from_subproof(
        2, size, True, [base64.b64decode(x) for x in con["hashes"]], old_root
    ) == (old_root, root)
    _problem(client.get("/v1/log/proof/inclusion?index=99999&size=3"), 400)
    _problem(client.get("/v1/log/proof/consistency?old=0&new=3"), 400)


def test_ingest_requires_a_token_and_refuses_bad_input_whole(client: Client, data: Data) -> None:
    body = shared_file("seed-manifest.json").read_bytes()
    _problem(
        client.post(
            "/v1/ingest/manifest", content=body, headers={"content-type": "application/json"}
        ),
        401,
    )
    _problem(
        client.post(
            "/v1/ingest/manifest", content=body, headers={"authorization": "Bearer bp_wrong"}
        ),
        401,
    )
    auth = {"authorization": f"Bearer {data.token}", "content-type": "application/json"}
    again = client.post("/v1/ingest/manifest", content=body, headers=auth)
    assert again.status_code == 200, again.text
    assert again.json()["entries"] == 0
    size = client.get("/healthz").json()["treeSize"]
    bad = b'{"apiVersion":"kernelindex.dev/v1alpha1","kind":"BenchmarkRun","spec":{"status":42}}'
    problem = _problem(client.post("/v1/ingest/manifest", content=bad, headers=auth), 422)
    assert "$.spec.status" in problem["detail"]
    assert client.get("/healthz").json()["treeSize"] == size
    _problem(client.post("/v1/ingest/nosuchsource", content=body, headers=auth), 400)


def test_body_over_the_limit_is_413(client: Client, data: Data) -> None:
    from service.config import Settings
    from service.ledger import Ledger
    from service.web.app import create_app

    ledger = Ledger.open(data.root)
    try:
        small = create_app(Settings(data=data.root, max_body_bytes=1024), ledger=ledger)
        with TestClient(app=small) as tc:
            r = tc.post(
                "/v1/ingest/manifest",
                content=b"x" * 4096,
                headers={"authorization": f"Bearer {data.token}"},
            )
            _problem(r, 413)
    finally:
        ledger.close()


def test_openapi_schema(client: Client) -> None:
    schema = client.get("/schema/openapi.json").json()
    assert schema["openapi"].startswith("3.")
    assert "/v1/runs/{ref}" in schema["paths"]
    assert "/v1/log/checkpoint" in schema["paths"]


def test_request_id_is_echoed(client: Client) -> None:
    r = client.get("/healthz", headers={"X-Request-ID": "req-123"})
    assert r.headers["x-request-id"] == "req-123"
    assert len(client.get("/healthz").headers["x-request-id"]) == 32
