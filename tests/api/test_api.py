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
        client.get("/v1/runs/synthetic:submission/777/history").json()["entries"][0]["type"]
        == "run.ingested.v1"
    )


def test_unknown_references_are_404_and_malformed_ones_400(client: Client) -> None:
    unknown_uuid = "kernelindex:00000000-0000-0000-0000-000000000000"
    for ref in ("sha256:" + "0" * 64, "0" * 12, "nope:nothing", unknown_uuid):
        _problem(client.get(f"/v1/runs/{ref}"), 404)
    for ref in ("doesnotexist", "abc", "%20", "sha256:zz"):
        _problem(client.get(f"/v1/runs/{ref}"), 400)


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
    assert seen == [i["runDigest"] for i in client.get("/v1/runs?limit=1000").json()["items"]]
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
    assert history["entries"][0]["type"] == "run.ingested.v1"


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
    from service.core.config import Settings
    from service.core.ledger import Ledger
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
    run = schema["paths"]["/v1/runs/{ref}"]["get"]
    assert {"300", "404"} <= set(run["responses"])
    assert "application/problem+json" in run["responses"]["404"]["content"]
    assert "asOf" in {p["name"] for p in run["parameters"]}
    for path in ("/v1/log/checkpoint", "/v1/log/entries", "/v1/log/proof/inclusion"):
        assert "asOf" in {p["name"] for p in schema["paths"][path]["get"]["parameters"]}, path
    ingest = schema["paths"]["/v1/ingest/{source}"]["post"]
    assert {"401", "413", "422"} <= set(ingest["responses"])
    assert ingest["security"] == [{"operatorToken": []}]
    assert schema["components"]["securitySchemes"]["operatorToken"]["scheme"] == "bearer"


def test_request_id_is_echoed(client: Client) -> None:
    r = client.get("/healthz", headers={"X-Request-ID": "req-123"})
    assert r.headers["x-request-id"] == "req-123"
    assert len(client.get("/healthz").headers["x-request-id"]) == 32


def test_if_none_match_uses_weak_comparison_lists_and_star(client: Client) -> None:
    etag = client.get(f"/v1/runs/{SEED}").headers["etag"]
    for header in (etag, f"W/{etag}", f'"other", {etag}', "*"):
        r = client.get(f"/v1/runs/{SEED}", headers={"If-None-Match": header})
        assert r.status_code == 304, header
    assert client.get(f"/v1/runs/{SEED}", headers={"If-None-Match": '"a", "b"'}).status_code == 200


def test_only_settled_as_of_reads_are_cached_for_good(client: Client) -> None:
    size = client.get("/healthz").json()["treeSize"]
    by_size = client.get(f"/v1/runs/{SEED}?asOf={size}")
    assert "immutable" in by_size.headers["cache-control"]
    # An instant past the last entry names the current size, which grows: not settled.
    future = client.get(f"/v1/runs/{SEED}?asOf=2999-01-01T00:00:00Z")
    assert future.status_code == 200
    assert future.headers["cache-control"] == "no-cache"
    # Reached by a short id, a run's manifest may change meaning (the id gaining a second run).
    assert client.get(f"/v1/runs/{SEED[7:19]}/manifest").headers["cache-control"] == "no-cache"
    assert "immutable" in client.get(f"/v1/runs/{SEED}/manifest").headers["cache-control"]


def test_every_read_has_an_etag_and_answers_head(client: Client) -> None:
    size = client.get("/healthz").json()["treeSize"]
    key = client.get(f"/v1/runs/{SEED}").json()["comparisonKey"] or ""
    reads = [
        "/v1/log/checkpoint",
        "/v1/log/key",
        "/v1/log/entries?start=0&end=2",
        f"/v1/log/proof/inclusion?index=0&size={size}",
        f"/v1/log/proof/consistency?old=1&new={size}",
        "/",
        "/log",
        f"/compare?runs={SEED[7:19]},{SEED[7:19]}",
        f"/runs/{SEED[7:19]}",
    ]
    if key:
        reads.append(f"/groups/{key}")
    for path in reads:
        r = client.get(path)
        assert r.status_code == 200, (path, r.text)
        etag = r.headers["etag"]
        assert client.get(path, headers={"If-None-Match": etag}).status_code == 304, path
        head = client.head(path)
        assert head.status_code == 200, path
        assert head.content == b"" and head.headers["etag"] == etag, path
        assert int(head.headers["content-length"]) == len(r.content), path
    for path in ("/v1/log/checkpoint", "/v1/log/key"):
        assert client.get(path).headers["content-type"] == "text/plain; charset=utf-8"


def test_log_reads_take_as_of(client: Client) -> None:
    size = client.get("/healthz").json()["treeSize"]
    entries = client.get("/v1/log/entries?asOf=3").json()
    assert entries["treeSize"] == 3 and [e["index"] for e in entries["entries"]] == [0, 1, 2]
    proof = client.get("/v1/log/proof/inclusion?index=1&asOf=3").json()
    assert proof["treeSize"] == 3
    old = client.get(f"/v1/log/checkpoint?asOf={size}").text
    assert old == client.get("/v1/log/checkpoint").text
    early = client.get("/v1/log/checkpoint?asOf=3")  # the genesis batch: keys and the policy
    assert early.status_code == 200
    assert open_checkpoint(early.content, client.get("/v1/log/key").text)[1] <= 3
    _problem(client.get("/v1/log/checkpoint?asOf=2"), 404)
    assert client.get("/v1/log/proof/consistency?old=1&asOf=3").json()["newSize"] == 3
    page = client.get("/log?asOf=3")
    assert page.status_code == 200 and "immutable" in page.headers["cache-control"]


def test_framework_errors_are_our_problems(client: Client) -> None:
    missing = _problem(client.get("/v1/nothing-here"), 404)
    assert missing["type"].startswith("https://benchproof.dev/problems/")
    wrong = _problem(client.delete("/v1/runs"), 405)
    assert wrong["type"].startswith("https://benchproof.dev/problems/")
    unauthorized = client.post("/v1/ingest/manifest", content=b"{}")
    assert unauthorized.status_code == 401
    assert unauthorized.headers["www-authenticate"].startswith("Bearer")


def test_ingest_errors_name_the_upload_not_a_server_path(client: Client, data: Data) -> None:
    auth = {"authorization": f"Bearer {data.token}", "content-type": "application/json"}
    problem = _problem(client.post("/v1/ingest/manifest", content=b"{not json", headers=auth), 422)
    assert "/tmp" not in json.dumps(problem)
    assert "upload.json" in problem["detail"]
    body = shared_file("seed-manifest.json").read_bytes()
    result = client.post("/v1/ingest/manifest", content=body, headers=auth).json()
    assert {"entries", "runsKnown", "runsAppended"} <= set(result)


def test_an_upload_name_that_names_no_file_is_a_bad_request(client: Client, data: Data) -> None:
    auth = {"authorization": f"Bearer {data.token}", "content-type": "application/json"}
    size = client.get("/healthz").json()["treeSize"]
    for name in ("..", ".", "a/.."):
        r = client.post(f"/v1/ingest/manifest?filename={name}", content=b"{}", headers=auth)
        problem = _problem(r, 400)
        assert "file name" in problem["detail"]
    assert client.get("/healthz").json()["treeSize"] == size


def test_unknown_page_paths_answer_an_html_page(client: Client) -> None:
    r = client.get("/no/such/page")
    assert r.status_code == 404
    assert r.headers["content-type"].startswith("text/html")
    assert "Not found" in r.text
    _problem(client.get("/v1/no/such/thing"), 404)
