"""Issue 17, points 9–12, in headless Chromium: the dossier names better runs elsewhere, waits
on a manifest in one line, shows source figures in their published units and lists what the
evidence lacks; compare clips long titles and gives the difference and ratio; the group page
breaks its heading between words and shows sizes in binary units; the log page shows the
checkpoint that covers the size asked and pages through entries. Each test takes screenshots
(under ``tmp_path``) that were looked at when the test was written."""

from __future__ import annotations

import sqlite3
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.browser.conftest import DESKTOP, PHONE, Server, _bp, serving
from tests.corpora import corpus

pytestmark = [pytest.mark.corpus, pytest.mark.slow]

SEED = "5195388fd7c6"
FASTER = {"e7ea8d1e1932", "0a129576d642", "ef9044eafdf3"}  # the same workload, other protocol
SOL = "0152436a6b8a"  # a SOL-ExecBench run whose source publishes latency_ms = 0.044711


def _shots(browser: Any, url: str, path: Path, name: str) -> list[Path]:
    """Full-page screenshots of ``url`` at phone and desktop sizes, under ``path``."""
    out = []
    for label, size in (("phone", PHONE), ("desktop", DESKTOP)):
        context = browser.new_context(viewport=size)
        tab = context.new_page()
        assert tab.goto(url).status == 200
        # No page scrolls sideways, even on a phone.
        assert tab.evaluate("document.documentElement.scrollWidth") <= size["width"]
        shot = path / f"{name}-{label}.png"
        tab.screenshot(path=str(shot), full_page=True)
        context.close()
        out.append(shot)
    return out


def _row(page: Any, section: str, label: str) -> Any:
    return (
        page.locator(f"section#{section} dl.rows > div")
        .filter(has=page.locator("dt", has_text=label))
        .locator("dd")
        .first
    )


def test_dossier_names_faster_runs_in_other_groups(
    browser: Any, server: Server, page: Any, tmp_path: Path
) -> None:
    assert page.goto(f"{server.base}/runs/{SEED}").status == 200
    elsewhere = page.locator("#elsewhere")
    assert elsewhere.locator("p").first.inner_text() == (
        "3 faster runs of this workload on NVIDIA B200 are in other comparison groups"
        " (different protocol and environment):"
    )
    links = elsewhere.locator("li > a.mono")
    assert {links.nth(i).inner_text() for i in range(links.count())} == FASTER
    assert links.first.get_attribute("href") == "/runs/e7ea8d1e1932"  # the fastest first
    assert "#1 in its group, but not on its hardware" in page.locator("#primary").inner_text()
    # The JSON dossier carries the same runs.
    found = server.json(f"/v1/runs/{SEED}")["betterElsewhere"]
    assert {n["shortId"] for n in found} == FASTER
    assert all(n["differs"] == ["protocolKey", "environmentKey"] for n in found)
    # The leader of that other group has nothing faster elsewhere.
    assert page.goto(f"{server.base}/runs/e7ea8d1e1932").status == 200
    assert page.locator("#elsewhere").count() == 0
    _shots(browser, f"{server.base}/runs/{SEED}", tmp_path, "run-seed")


def test_dossier_waits_on_its_implementation_in_one_line(
    browser: Any, server: Server, page: Any
) -> None:
    assert page.goto(f"{server.base}/runs/{SEED}").status == 200
    assert page.locator("main .banner#unresolved").count() == 0  # no longer a banner on top
    line = page.locator("section#identity p#unresolved")
    text = line.inner_text()
    assert text.startswith("Waiting on the implementation manifest sha256:e299406d2b0b")
    assert "a later import of NVIDIA SOL-ExecBench" in text
    assert line.locator("code.digest").get_attribute("title") == (
        "sha256:e299406d2b0b9b3832a485f57466d6b6d126f093f48f6867f5b723e8985bb55c"
    )
    title = _row(page, "identity", "title").inner_text()
    assert title == (
        "AKO · 001_fused_vision_multihead_attention_with_norms_backward · B200 (as the run states)"
    )
    assert _row(page, "identity", "implementation").inner_text() == "unresolved"
    # A run with its implementation resolved shows no such line and no stated title.
    assert page.goto(f"{server.base}/runs/{SOL}").status == 200
    assert page.locator("#unresolved").count() == 0
    assert page.locator("section#identity dt", has_text="title").count() == 0


def test_dossier_source_figures_in_their_published_units(
    browser: Any, server: Server, page: Any, tmp_path: Path
) -> None:
    assert page.goto(f"{server.base}/runs/{SOL}").status == 200
    assert page.locator("#primary h3").count() == 1  # one block
    native = page.locator("#native")
    assert native.locator("p.highlights").inner_text() == (
        "SOL 0.9768 · 54.30× reference · 38/38 cases faster"
    )
    assert _row(page, "primary", "latency_ms").inner_text() == "0.044711 ms"
    assert "µs" not in native.inner_text()
    assert page.locator("p.figure .value").inner_text() == "44.7 µs"  # ours, converted
    _shots(browser, f"{server.base}/runs/{SOL}", tmp_path, "run-sol")


def test_dossier_lists_what_the_evidence_lacks(browser: Any, server: Server, page: Any) -> None:
    assert page.goto(f"{server.base}/runs/{SEED}").status == 200
    items = page.locator("section#evidence ul#evidence-missing > li")
    assert [items.nth(i).inner_text() for i in range(items.count())] == [
        "source available",
        "identity complete (unresolved: implementation)",
        "raw evidence (samples or logs)",
    ]
    lead = page.locator("section#evidence p").first.inner_text()
    assert lead == "reported As published by the source; not yet reproducible. Still missing:"
    footer = page.locator("p.published").inner_text()
    assert "date not given" not in footer and not footer.startswith("Published")
    link = page.locator("p.published a", has_text="All results for")
    assert link.inner_text() == (
        "All results for 001_fused_vision_multihead_attention_with_norms_backward on NVIDIA B200 →"
    )


def test_compare_clips_long_titles_and_gives_difference_and_ratio(
    browser: Any, server: Server, page: Any, tmp_path: Path
) -> None:
    url = f"{server.base}/compare?runs={SEED},e7ea8d1e1932"
    assert page.goto(url).status == 200
    title = page.locator("tr#row-title td .clip").nth(1)
    full = "TH3CHARLie | TileGym · 001_fused_vision_multihead_attention_with_norms_backward · B200"
    assert title.get_attribute("title") == full
    box = title.bounding_box()
    assert box is not None and box["width"] <= 24 * 16 + 1  # held within its column
    # On a phone too: wrapped within its column, at most three lines (any rest clipped with an
    # ellipsis, the whole title on hover).
    phone = browser.new_context(viewport=PHONE)
    tab = phone.new_page()
    assert tab.goto(url).status == 200
    clipped = tab.locator("tr#row-title td .clip").nth(1)
    assert clipped.bounding_box()["width"] <= 24 * 16 + 1
    line = float(clipped.evaluate("e => parseFloat(getComputedStyle(e).lineHeight)"))
    assert clipped.bounding_box()["height"] <= 3 * line + 1
    phone.close()
    cells = page.locator("tr#row-difference td")
    assert [cells.nth(i).inner_text() for i in range(2)] == ["(baseline)", "−457 µs"]
    ratio = page.locator("tr#row-ratio td")
    assert ratio.nth(1).inner_text() == "0.582×"
    assert page.locator("tr#row-ratio th").inner_text() == f"ratio to {SEED}"
    # Runs of different metrics get no difference.
    other = server.json("/v1/runs?source=mlperf-inference&limit=1")["items"][0]["shortId"]
    assert page.goto(f"{server.base}/compare?runs={SEED},{other}").status == 200
    assert page.locator("tr#row-difference").count() == 0
    _shots(browser, url, tmp_path, "compare")


@pytest.fixture(scope="module")
def liger(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Server]:
    """A server over the Liger benchmark data (memory in "MB")."""
    data = tmp_path_factory.mktemp("liger") / "data"
    _bp("init", "--data", data)
    _bp("ingest", "liger", corpus("liger-kernel-bench", "all_benchmark_data.csv"), "--data", data)
    with serving(data) as served:
        yield served


def test_group_page_sizes_in_binary_units(
    browser: Any, liger: Server, page: Any, tmp_path: Path
) -> None:
    with sqlite3.connect(liger.data / "benchproof.db") as conn:
        key, value = conn.execute(
            "SELECT group_key, primary_value FROM p_runs WHERE valid_to IS NULL AND eligible = 1"
            " AND json_extract(view, '$.primaryUnit') = 'mb' AND primary_value > 1024"
            " ORDER BY primary_value LIMIT 1"
        ).fetchone()
    assert page.goto(f"{liger.base}/groups/{key}").status == 200
    values = page.locator("table.ranked td.num:nth-child(2)")
    texts = [values.nth(i).inner_text() for i in range(values.count())]
    assert texts and all(t.endswith((" KiB", " MiB", " GiB")) for t in texts)
    assert f"{value / 1024:.2f} GiB" in texts or f"{value / 1024:.1f} GiB" in texts
    assert " mb" not in page.locator("main").inner_text()
    _shots(browser, f"{liger.base}/groups/{key}", tmp_path, "group-liger")


def test_group_heading_breaks_between_words(browser: Any, server: Server, tmp_path: Path) -> None:
    key = server.json(f"/v1/runs/{SEED}")["comparisonKey"]
    context = browser.new_context(viewport=PHONE)
    tab = context.new_page()
    assert tab.goto(f"{server.base}/groups/{key}").status == 200
    h1 = tab.locator("h1")
    assert h1.locator("wbr").count() >= 7  # after each "_" of the operation's name
    # Each line of the wrapped heading ends at a word boundary ("_", "/" or a space).
    lines = h1.evaluate(
        """e => {
          const r = document.createRange(); const t = e.textContent; const out = [];
          let top = null, start = 0; const nodes = [];
          const walk = document.createTreeWalker(e, NodeFilter.SHOW_TEXT);
          while (walk.nextNode()) nodes.push(walk.currentNode);
          let line = '';
          for (const n of nodes) for (let i = 0; i < n.length; i++) {
            r.setStart(n, i); r.setEnd(n, i + 1);
            const y = r.getBoundingClientRect().top;
            if (top !== null && y > top + 2) { out.push(line); line = ''; }
            top = y; line += n.data[i];
          }
          out.push(line); return out;
        }"""
    )
    assert len(lines) > 1
    for line in lines[:-1]:
        assert line.endswith(("_", "/", " ")), lines
    tab.screenshot(path=str(tmp_path / "group-phone.png"), full_page=True)
    context.close()


def test_log_page_covers_the_asked_size_and_pages(
    browser: Any, server: Server, page: Any, tmp_path: Path
) -> None:
    assert page.goto(f"{server.base}/log?asOf=100").status == 200
    state = page.locator("section#state")
    assert "100 entries" in state.locator("dl").inner_text()
    note = page.locator("pre#checkpoint").inner_text().splitlines()
    signed = int(note[1])
    assert signed >= 100  # covers the asked size, not the one signed at 3 entries
    covering = page.locator("#covering").inner_text()
    assert f"first one signed after it, at {signed:,} entries" in covering
    assert "The newest checkpoint at or below it, at 3 entries" in covering
    assert f"old=100&new={signed}" in page.locator("#covering a").get_attribute("href")
    assert page.locator("#entries-range").inner_text() == "Entries 80 to 99 of 100, newest first."
    with page.expect_navigation():
        page.get_by_role("link", name="Older ›").click()
    assert page.url.endswith("/log?asOf=100&before=80")
    first = page.locator("section#entries tbody tr td.num").first.inner_text()
    assert first == "79"
    assert page.locator("#entries-range").inner_text() == "Entries 60 to 79 of 100, newest first."
    page.get_by_role("link", name="Oldest »").click()
    assert page.locator("section#entries tbody tr").count() == 20
    assert page.locator("section#entries tbody tr td.num").last.inner_text() == "0"
    assert page.get_by_role("link", name="Older ›").count() == 0
    page.get_by_role("link", name="‹ Newer").click()
    assert page.locator("#entries-range").inner_text() == "Entries 20 to 39 of 100, newest first."
    # A bad position is a 400 naming the parameter.
    response = page.goto(f"{server.base}/log?before=0")
    assert response.status == 400 and "before" in page.content()
    _shots(browser, f"{server.base}/log?asOf=100&before=60", tmp_path, "log")
