"""The home page's search in Chromium is the API's (issue 17, points 2 and 8): the same runs in
the same order, page after page, and a count that covers every run."""

from __future__ import annotations

import re
from itertools import pairwise
from pathlib import Path
from typing import Any
from urllib.parse import quote, urlencode

from tests.browser.conftest import Server


def _shown(page: Any) -> list[str]:
    ids: list[str] = page.locator(
        "table.results tbody tr td:first-child span.mono"
    ).all_inner_texts()
    return ids


def _api(server: Server, query: dict[str, str]) -> dict[str, Any]:
    found: dict[str, Any] = server.json("/v1/runs?" + urlencode({**query, "limit": "50"}))
    return found


def test_searching_on_the_page_finds_what_the_api_finds(
    server: Server, page: Any, tmp_path: Path
) -> None:
    assert page.goto(server.base + "/").status == 200
    page.fill("#q", "gemm")
    page.select_option("#hardware", "NVIDIA B200")
    page.click("form.search button")
    assert "q=gemm" in page.url
    page.screenshot(path=str(tmp_path / "home-search-gemm.png"), full_page=True)
    query = {"q": "gemm", "hardware": "NVIDIA B200"}
    first = _api(server, query)
    assert len(first["items"]) == 50 and first["next"]
    assert _shown(page) == [i["shortId"] for i in first["items"]]
    # Best-first within a workload: the listed values never get worse until the workload changes.
    items = first["items"]
    for a, b in pairwise(items):
        assert a["workload"] <= b["workload"]
        if a["workload"] == b["workload"] and a.get("primaryUnit") == b.get("primaryUnit") == "ns":
            assert a["primaryValue"] <= b["primaryValue"]
    # The page links the same search in the API.
    api_link = page.get_by_role("link", name="GET /v1/runs").get_attribute("href")
    assert api_link == "/v1/runs?q=gemm&hardware=" + quote("NVIDIA B200").replace("%20", "+")
    # The next page is the API's next page (the same opaque cursor).
    page.get_by_role("link", name="Next page →").click()
    assert "after=" + first["next"] in page.url
    second = _api(server, {**query, "after": first["next"]})
    assert _shown(page) == [i["shortId"] for i in second["items"]]
    assert not set(_shown(page)) & {i["shortId"] for i in first["items"]}
    page.screenshot(path=str(tmp_path / "home-search-gemm-page2.png"), full_page=True)


def test_the_home_count_covers_every_run_and_every_source(
    server: Server, page: Any, tmp_path: Path
) -> None:
    total, url = 0, "/v1/runs?limit=1000"
    by_source: dict[str, int] = {}
    while True:
        found = server.json(url)
        for item in found["items"]:
            by_source[item["source"]] = by_source.get(item["source"], 0) + 1
        total += len(found["items"])
        if found["next"] is None:
            break
        url = "/v1/runs?limit=1000&after=" + found["next"]
    assert page.goto(server.base + "/").status == 200
    page.screenshot(path=str(tmp_path / "home.png"), full_page=True)
    subtitle = page.locator("p.subtitle").inner_text()
    counted = re.search(r"([\d,]+) runs from (\d+) sources", subtitle)
    assert counted is not None, subtitle
    assert int(counted[1].replace(",", "")) == total
    assert int(counted[2]) == len(by_source)
    offered = page.locator("#source option").evaluate_all("os => os.map(o => o.value)")
    assert set(offered) == {"", *by_source}
    # The first page, unfiltered, is the API's first page too.
    assert _shown(page) == [i["shortId"] for i in _api(server, {})["items"]]
    for source, n in by_source.items():
        link = page.locator(f'table.sources a[href="/?source={source}"]')
        assert link.inner_text().replace(",", "") == str(n)
