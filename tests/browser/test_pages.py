"""Home, leaderboard, compare and log pages in headless Chromium; no-JavaScript reading; phone
layout; screenshots at phone and desktop sizes (tests/browser/screenshots/)."""

from __future__ import annotations

from typing import Any

import pytest

from tests.browser.conftest import PHONE, Server

pytestmark = [pytest.mark.corpus, pytest.mark.slow]

SEED = "5195388fd7c6"


@pytest.fixture(scope="module")
def kernelbot(server: Server) -> dict[str, Any]:
    """A KernelBot run ranked below the leader of a group of several runs."""
    for item in server.json("/v1/runs?source=gpumode-kernelbot&limit=50")["items"]:
        run = server.json("/v1/runs/" + item["runDigest"])
        if run.get("rank") and run["rank"]["of"] > 2 and run["rank"]["rank"] > 1:
            return dict(run)
    pytest.fail("no KernelBot run below the lead in the first 50")


def test_group_page_chart_has_one_bar_per_ranked_run(
    browser: Any, server: Server, page: Any, kernelbot: dict[str, Any]
) -> None:
    key = kernelbot["comparisonKey"]
    group = server.json("/v1/groups/" + key)
    assert page.goto(f"{server.base}/groups/{key}").status == 200
    rows = page.locator("table.ranked tbody tr")
    assert rows.count() == len(group["runs"])
    bars = page.locator("section#leaderboard svg rect.bar")
    assert bars.count() == len(group["runs"])
    assert page.locator("section#leaderboard svg rect.bar.lead").count() >= 1
    first = rows.first.locator("td")
    assert first.nth(0).inner_text() == "1"
    ranks = [int(t) for t in rows.locator("td:first-child").all_inner_texts()]
    assert ranks == sorted(ranks)
    history = server.json(f"/v1/groups/{key}/history")
    assert page.locator("section#leader-history li").count() == len(history)


def test_compare_names_the_first_mismatch(
    browser: Any, server: Server, page: Any, kernelbot: dict[str, Any]
) -> None:
    leader = kernelbot["rank"]["leader"][7:19]
    assert page.goto(f"{server.base}/compare?runs={kernelbot['shortId']},{leader}").status == 200
    assert "Comparable." in page.locator("section#verdict").inner_text()
    assert page.locator("tr.mismatch").count() == 0

    assert page.goto(f"{server.base}/compare?runs={kernelbot['shortId']},{SEED}").status == 200
    api = server.json(f"/v1/compare?runs={kernelbot['shortId']},{SEED}")
    verdict = page.locator("section#verdict").inner_text()
    assert "Not comparable." in verdict
    assert f"({api['firstMismatch']})" in verdict
    assert page.locator("tr.mismatch").count() == 1
    differing = page.locator("table.compare tr.differs th").all_inner_texts()
    assert any(t.startswith("hardware") for t in differing)
    assert not any(t.startswith("kind") for t in differing)


def test_home_search_and_keyset_pages(browser: Any, server: Server, page: Any) -> None:
    assert page.goto(server.base + "/").status == 200
    page.fill("#q", "attention")
    page.select_option("#hardware", "NVIDIA B200")
    page.click("form.search button")
    assert "q=attention" in page.url
    rows = page.locator("table.results tbody tr")
    assert rows.count() == 50
    hardware = rows.locator("td:nth-child(3)").all_inner_texts()
    assert set(hardware) == {"NVIDIA B200"}
    first = rows.first.locator("td").first.inner_text()
    page.get_by_role("link", name="Next page →").click()
    assert "after=" in page.url and "q=attention" in page.url
    assert page.locator("table.results tbody tr").first.locator("td").first.inner_text() != first
    listed = page.locator("table.sources").inner_text()
    for name in (
        "NVIDIA SOL-ExecBench",
        "GPU MODE KernelBot",
        "FlashInfer-Bench",
        "MLPerf Inference",
    ):
        assert name in listed


def test_log_page(browser: Any, server: Server, page: Any) -> None:
    assert page.goto(server.base + "/log").status == 200
    health = server.json("/healthz")
    text = page.locator("section#state").inner_text()
    assert health["origin"] in text
    assert f"{health['treeSize']:,} entries" in text
    import urllib.request

    with urllib.request.urlopen(server.base + "/v1/log/checkpoint") as response:
        note = response.read().decode()
    assert page.locator("pre.note-text").inner_text().strip() == note.strip()
    with urllib.request.urlopen(server.base + "/v1/log/key") as response:
        assert (
            page.locator("section#state code.full").inner_text() == response.read().decode().strip()
        )
    assert page.locator("section#entries tbody tr").count() == 20
    assert "benchproof verify" in page.locator("section#verify").inner_text()


def test_pages_read_without_javascript(browser: Any, server: Server) -> None:
    context = browser.new_context(java_script_enabled=False)
    page = context.new_page()
    try:
        page.goto(server.base + "/?q=fused_vision")
        page.locator("table.results a").first.click()
        assert page.locator("section#primary h2").inner_text() == "Primary measurement"
        page.locator("section#manifest summary").click()  # <details> opens natively
        assert page.locator("section#manifest pre").is_visible()
        page.locator("a", has_text="All results for").click()
        assert page.locator("section#leaderboard svg rect.bar").count() >= 1
        page.goto(server.base + "/compare")
        page.fill("#runs", f"{SEED},{SEED}")
        page.click("form.stack button")
        assert "Comparable." in page.locator("section#verdict").inner_text()
    finally:
        context.close()


def test_phone_layout_does_not_scroll_sideways(
    browser: Any, server: Server, kernelbot: dict[str, Any]
) -> None:
    context = browser.new_context(viewport=PHONE)
    page = context.new_page()
    try:
        for path in (
            f"/runs/{SEED}",
            f"/runs/{kernelbot['shortId']}",
            f"/groups/{kernelbot['comparisonKey']}",
            "/",
            "/log",
            f"/compare?runs={SEED},{kernelbot['shortId']}",
        ):
            page.goto(server.base + path)
            width = page.evaluate("document.documentElement.scrollWidth")
            assert width <= PHONE["width"], f"{path} is {width}px wide on a phone"
    finally:
        context.close()


def test_screenshots(browser: Any, server: Server, shoot: Any, kernelbot: dict[str, Any]) -> None:
    shoot(f"{server.base}/runs/{SEED}", "run-seed")
    shoot(f"{server.base}/runs/{kernelbot['shortId']}", "run-kernelbot")
    shoot(f"{server.base}/groups/{kernelbot['comparisonKey']}", "group")
    shoot(f"{server.base}/", "home")
    shoot(f"{server.base}/compare?runs={kernelbot['shortId']},{SEED}", "compare")
    shoot(f"{server.base}/log", "log")
