"""The runs API and the home page are one search (issue 17, points 2, 3 and 8): ``GET
/v1/runs?q=`` finds what the page shows, in one meaningful order (workload, then primary value
best-first, then digest) that opaque cursors page through; bad filters and cursors are 400
problems naming the parameter; the home page counts and filters every run, imported manifests'
included."""

from __future__ import annotations

import base64
import json
import re
import sqlite3
from typing import Any

import msgspec
import pytest
from litestar import Litestar
from litestar.testing import TestClient

from events.stores.sqlite_session import SqliteSession
from projections import schema
from projections.queries.search import search_runs
from projections.views import RunView
from service.app.cursors import run_cursor
from tests.api.conftest import Data

Client = TestClient[Litestar]

_SHORT_IDS = re.compile(r'<span class="mono muted">([0-9a-f]{12})</span>')


def _everything(client: Client, query: str = "") -> list[dict[str, Any]]:
    page = client.get(f"/v1/runs?limit=1000{query}")
    assert page.status_code == 200, page.text
    body = page.json()
    assert body["next"] is None
    items: list[dict[str, Any]] = body["items"]
    return items


def _page_ids(client: Client, url: str) -> list[str]:
    response = client.get(url)
    assert response.status_code == 200, response.text
    results = response.text.split('<section id="results"', 1)[1].split("</section>", 1)[0]
    return _SHORT_IDS.findall(results)


def _problem(response: Any, parameter: str) -> dict[str, Any]:
    assert response.status_code == 400, response.text
    assert response.headers["content-type"].startswith("application/problem+json")
    body: dict[str, Any] = response.json()
    assert body["parameter"] == parameter and parameter in body["detail"]
    return body


@pytest.mark.parametrize("q", ["attention", "ATTENTION", "run-3", "example", "100", "zzz-none"])
def test_q_finds_what_the_home_page_shows_in_the_same_order(client: Client, q: str) -> None:
    api = [i["shortId"] for i in _everything(client, f"&q={q}")]
    assert api == _page_ids(client, f"/?q={q}")
    if q != "zzz-none":
        assert api, f"{q!r} should match some runs of the fixture"
    every = [i["shortId"] for i in _everything(client)]
    assert api == [s for s in every if s in api]  # a search keeps the list's order


def test_q_matches_name_title_benchmark_and_operation(client: Client) -> None:
    every = _everything(client)
    seed = next(i for i in every if i["source"] == "sol-execbench")
    for q in ("sol-submission-165", "AKO ·", "fused_vision_multihead", "FUSED_VISION"):
        assert seed["shortId"] in [i["shortId"] for i in _everything(client, f"&q={q}")], q
    synthetic = _everything(client, "&q=run-3&source=synthetic")
    assert len(synthetic) == 4 and {i["source"] for i in synthetic} == {"synthetic"}


def test_the_default_order_is_by_workload_then_best_value_then_digest(
    client: Client, data: Data
) -> None:
    every = _everything(client)
    assert every == _everything(client)  # stable
    workloads = [i["workload"] for i in every]
    assert workloads == sorted(workloads)
    seed = next(i for i in every if i["source"] == "sol-execbench")
    assert seed["workload"] == "001_fused_vision_multihead_attention_with_norms_backward"
    assert len({i["workload"] for i in every if i["source"] == "synthetic"}) == 1
    # The four synthetic runs (one workload and group, lower is better): best first, ties by digest.
    group = [i for i in every if i["source"] == "synthetic"]
    assert [i["primaryValue"] for i in group] == [100.0, 100.0, 200.0, 300.0]
    assert group[0]["runDigest"] < group[1]["runDigest"]
    # Not digest order: the seed run (workload 001_…) comes first though its digest does not.
    assert every[0]["source"] == "sol-execbench"
    assert [i["runDigest"] for i in every] != sorted(i["runDigest"] for i in every)
    # The page shows the same order.
    assert _page_ids(client, "/") == [i["shortId"] for i in every]


@pytest.mark.parametrize("limit", [1, 2, 3])
@pytest.mark.parametrize("query", ["", "&q=run-3", "&source=synthetic"])
def test_cursors_page_over_the_new_order_returning_each_run_once(
    client: Client, limit: int, query: str
) -> None:
    whole = [i["runDigest"] for i in _everything(client, query)]
    seen: list[str] = []
    url = f"/v1/runs?limit={limit}{query}"
    while True:
        page = client.get(url).json()
        assert len(page["items"]) <= limit
        seen += [i["runDigest"] for i in page["items"]]
        if page["next"] is None:
            break
        assert re.fullmatch(r"[A-Za-z0-9_-]+", page["next"])  # opaque, URL-safe
        url = f"/v1/runs?limit={limit}{query}&after={page['next']}"
    assert seen == whole and len(seen) == len(set(seen))


def test_the_home_page_pages_with_the_same_cursors(client: Client) -> None:
    first = client.get("/v1/runs?limit=2").json()
    rest = [i["shortId"] for i in _everything(client, f"&after={first['next']}")]
    assert _page_ids(client, f"/?after={first['next']}") == rest


def _tampered(cursor: str) -> list[str]:
    raw = json.loads(base64.urlsafe_b64decode(cursor + "=" * (-len(cursor) % 4)))

    def enc(value: object) -> str:
        return base64.urlsafe_b64encode(json.dumps(value).encode()).rstrip(b"=").decode()

    return [
        enc(["r0", *raw[1:]]),  # another order's cursor
        enc([raw[0], raw[1], 2, raw[3], raw[4]]),  # not a flag
        enc([*raw[:4], "sha256:zz"]),  # not a digest
        enc(raw[:4]),  # too short
        enc({"after": raw[4]}),  # not the shape
        cursor + "=",  # padded: another spelling
        cursor + "A",  # one character more
        cursor.replace("-", "+").replace("_", "/"),  # not URL-safe (where it differs)
    ]


@pytest.mark.parametrize(
    ("query", "parameter", "allowed"),
    [
        ("evidenceLevel=bogus", "evidenceLevel", "reported"),
        ("evidenceLevel=REPORTED", "evidenceLevel", "verified"),
        ("source=bogus", "source", "manifest"),
        ("source=bogus&q=run", "source", "sol-execbench"),
        ("after=garbage!", "after", None),
        ("after=garbage", "after", None),
        ("after=", "after", None),
        ("after=sha256:" + "0" * 64, "after", None),  # a cursor of the old digest order
    ],
)
def test_bad_filters_and_cursors_are_400_naming_the_parameter(
    client: Client, query: str, parameter: str, allowed: str | None
) -> None:
    body = _problem(client.get(f"/v1/runs?{query}"), parameter)
    if allowed is not None:
        assert allowed in body["allowed"] and allowed in body["detail"]
    else:
        assert "next" in body["detail"]


def test_tampered_cursors_are_400(client: Client) -> None:
    cursor = client.get("/v1/runs?limit=1").json()["next"]
    for bad in _tampered(cursor):
        if bad == cursor:
            continue
        _problem(client.get("/v1/runs", params={"after": bad}), "after")
    page = client.get("/", params={"after": "garbage"})
    assert page.status_code == 400 and "after" in page.text


def test_good_filters_still_narrow(client: Client) -> None:
    reported = _everything(client, "&evidenceLevel=reported")
    assert reported and {i["evidenceLevel"] for i in reported} == {"reported"}
    assert _everything(client, "&evidenceLevel=verified") == []  # a level no run has yet
    assert _everything(client, "&source=") == _everything(client)  # blank: any


def test_the_home_page_counts_and_offers_every_source(client: Client) -> None:
    every = _everything(client)
    by_source: dict[str, int] = {}
    for item in every:
        by_source[item["source"]] = by_source.get(item["source"], 0) + 1
    # The fixture imports manifests (source "manifest") and the seed run, whose source no
    # registration describes: they count and filter like any other.
    assert {"manifest", "sol-execbench"} <= set(by_source)
    home = client.get("/").text
    subtitle = re.search(r"([\d,]+) runs from (\d+) sources", home)
    assert subtitle is not None
    assert int(subtitle[1].replace(",", "")) == len(every)
    assert int(subtitle[2]) == len(by_source)
    table = home.split('<table class="sources">', 1)[1].split("</table>", 1)[0]
    for source, n in by_source.items():
        assert f'<option value="{source}"' in home
        assert f'<code class="muted">{source}</code>' in table
        assert f'href="/?source={source}">{n:,}</a>' in table
        shown = _page_ids(client, f"/?source={source}")
        assert shown == [i["shortId"] for i in every if i["source"] == source]
    assert "not registered" in table


def test_the_openapi_document_describes_the_search(client: Client) -> None:
    spec = client.get("/schema/openapi.json").json()
    listed = spec["paths"]["/v1/runs"]["get"]
    params = {p["name"]: p for p in listed["parameters"]}
    assert "home page" in params["q"]["description"]
    assert "reported" in params["evidenceLevel"]["description"]
    assert "next" in params["after"]["description"]
    assert "workload" in listed["description"] and "best-first" in listed["description"]


_ENC = msgspec.json.Encoder()


def _row(conn: SqliteSession, name: str, value: float | None, direction: str) -> str:
    digest = "sha256:" + format(abs(hash((name, value, direction))), "x").rjust(64, "0")[:64]
    view = RunView(
        runDigest=digest,
        kind="BenchmarkRun",
        name=name,
        benchmark="wl",
        source="s",
        status="passed",
        observedAt="2026-01-01T00:00:00Z",
        recordedAt="2026-01-01T00:00:00Z",
        ingestSeq=0,
        primaryValue=value,
        direction=direction,  # type: ignore[arg-type]
    )
    # The search key as the fold keeps it for a current run (projections.rows): valueless runs
    # last, higher-is-better negated.
    unvalued = 1 if value is None else 0
    key = 0.0 if value is None else -value if direction == "higher" else value
    conn.execute(
        "INSERT INTO p_runs (run_digest, valid_from, kind, eligible, primary_value, direction,"
        " observed_at, source, evidence_level, status, view, name, benchmark, k_workload,"
        " k_unvalued, k_value) VALUES (?, 1, 'BenchmarkRun', 1, ?, ?, '2026-01-01', 's',"
        " 'reported', 'passed', ?, ?, 'wl', 'wl', ?, ?)",
        (digest, value, direction, _ENC.encode(view), name, unvalued, key),
    )
    return name


def test_higher_is_better_sorts_highest_first_and_valueless_runs_last() -> None:
    conn = SqliteSession(sqlite3.connect(":memory:"))
    schema.create(conn)
    for name, value in (("a", 5.0), ("b", None), ("c", 9.0), ("d", 7.0), ("e", 9.0)):
        _row(conn, name, value, "higher")
    order = [f.view.name for f in search_runs(conn, limit=None)]
    assert order[:2] in (["c", "e"], ["e", "c"]) and order[2:] == ["d", "a", "b"]
    # As of a size, the key is computed from the row: the same order.
    assert [f.view.name for f in search_runs(conn, 5, limit=None)] == order
    paged, after = [], None
    while True:
        found = search_runs(conn, after=after, limit=2)
        paged += [f.view.name for f in found]
        if len(found) < 2:
            break
        after = found[-1].key
        assert run_cursor(after)  # every key makes a cursor
    assert paged == order


def test_the_home_page_takes_the_api_s_evidence_and_group_filters(client: Client) -> None:
    """Issue 30, point 5: ``evidenceLevel`` and ``comparisonKey`` narrow the page as they narrow
    ``GET /v1/runs`` (the page ignored them: 50 runs where the API listed 1), and the form offers
    every evidence level, keeping the one chosen."""
    every = _everything(client)
    group = next(i["comparisonKey"] for i in every if i.get("comparisonKey"))
    for query in (
        "&evidenceLevel=reported",
        "&evidenceLevel=verified",
        f"&comparisonKey={group}",
        f"&q=attention&comparisonKey={group}&evidenceLevel=reported",
    ):
        api = [i["shortId"] for i in _everything(client, query)][:50]
        assert _page_ids(client, "/?" + query[1:]) == api, query
    grouped = _everything(client, f"&comparisonKey={group}")
    assert 0 < len(grouped) < len(every) and {i["comparisonKey"] for i in grouped} == {group}
    page = client.get("/?evidenceLevel=reported").text
    form = page.split('<form method="get" action="/"', 1)[1].split("</form>", 1)[0]
    levels = re.findall(
        r"<option(?: selected)?>([a-z-]+)</option>", form.split('id="evidenceLevel"')[1]
    )
    from service.app.runs import EVIDENCE_LEVELS

    assert levels == list(EVIDENCE_LEVELS)
    assert "<option selected>reported</option>" in form
    in_group = client.get(f"/?comparisonKey={group}").text
    assert f'name="comparisonKey" value="{group}"' in in_group and 'id="in-group"' in in_group
    assert client.get("/?evidenceLevel=nonsense").status_code == 400
