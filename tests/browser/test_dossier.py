"""The run dossier page in headless Chromium: every section of the reference page
(../shared/seed-run.md), with the values our data gives."""

from __future__ import annotations

import sqlite3
from typing import Any
from urllib.parse import quote

import pytest

from service.web.sections import source_id
from tests.browser.conftest import Server

pytestmark = [pytest.mark.corpus, pytest.mark.slow]

SEED = "5195388fd7c6"
SECTIONS = {
    "primary": "Primary measurement",
    "identity": "Identity",
    "correctness": "Correctness",
    "workload": "Workload",
    "measurements": "Measurements",
    "protocol": "Protocol",
    "environment": "Environment",
    "artifacts": "Artifacts",
    "evidence": "Evidence level",
    "replications": "Replications and notes",
    "add-note": "Add a reproduction or note",
    "manifest": "Canonical manifest",
    "cite": "Cite this record",
    "report": "Report an issue with this run",
    "history": "History",
}


def _text(page: Any, section: str) -> str:
    return str(page.locator(f"section#{section}").inner_text())


def _row(page: Any, section: str, label: str) -> Any:
    """The <dd> of the row labelled ``label`` in ``section``."""
    return (
        page.locator(f"section#{section} dl.rows > div")
        .filter(has=page.locator("dt", has_text=label))
        .locator("dd")
        .first
    )


def _assert_sections(page: Any) -> None:
    for section_id, title in SECTIONS.items():
        heading = page.locator(f"section#{section_id} > h2")
        assert heading.count() == 1, f"section #{section_id} is missing"
        assert heading.inner_text() == title


def _kernelbot_run(server: Server) -> dict[str, Any]:
    """A ranked KernelBot run, as the JSON API shows it."""
    items = server.json("/v1/runs?source=gpumode-kernelbot&limit=50")["items"]
    for item in items:
        dossier = server.json("/v1/runs/" + item["runDigest"])
        if dossier.get("rank") and dossier["rank"]["of"] > 1:
            return dict(dossier)
    pytest.fail("no ranked KernelBot run in the first 50")


def test_seed_run_dossier(browser: Any, server: Server, page: Any) -> None:
    response = page.goto(f"{server.base}/runs/{SEED}")
    assert response.status == 200
    _assert_sections(page)
    assert page.locator("h1").inner_text() == f"Run {SEED}"

    primary = _text(page, "primary")
    assert "1.09 ms" in primary and "mean" in primary
    assert "Rank 1 of 1" in primary
    assert "observed 2026-04-14" in primary
    assert "SOL 0.8380 · 5.06× reference · 16/16 cases faster" in primary

    key = _row(page, "identity", "comparison key")
    assert key.inner_text().startswith("sha256:b5a07d877d4aa940")
    assert key.locator("[title]").first.get_attribute("title") == (
        "sha256:b5a07d877d4aa9400dad13a88f1b4654bb2e32f324516242ada766a54ca56e34"
    )
    digest = _row(page, "identity", "run digest").locator("code")
    assert digest.inner_text().startswith("sha256:5195388fd7c6a80d3089edc")
    assert digest.get_attribute("title").startswith("sha256:5195388fd7c6a80d3089edc96ddebce2")
    # Shown shortened (clipped with an ellipsis), while the whole digest stays selectable.
    clipped = digest.evaluate("e => e.scrollWidth > e.clientWidth")
    assert clipped
    assert _row(page, "identity", "source").inner_text() == "NVIDIA SOL-ExecBench"
    # As the source writes it (the manifest keeps the number): the reference page's id.
    assert _row(page, "identity", "external id").inner_text() == "submission/165"
    assert "suite of 16 cases" in _row(page, "identity", "workload").inner_text()

    assert "Marked passed by the source; the correctness policy was not published." in _text(
        page, "correctness"
    )
    assert _row(page, "workload", "definition comparator").inner_text() == "sol_execbench_eval"
    assert (
        "Correctness must pass on every case" in _row(page, "workload", "description").inner_text()
    )
    assert "001_fused_vision_multihead_attention_with_norms_backward" in _text(page, "workload")
    assert _row(page, "measurements", "latency · mean").inner_text() == "1.09 ms"
    assert _row(page, "protocol", "harness").inner_text() == "SOL-ExecBench evaluation stack v1.0"
    assert _row(page, "protocol", "timer").inner_text() == "harness_reported"
    assert _row(page, "protocol", "primaryStatistic").inner_text() == "mean"
    assert (
        _row(page, "protocol", "correctnessReference").inner_text()
        == "definition reference implementation"
    )
    assert _row(page, "protocol", "comparabilityFamily").inner_text() == "sol_execbench_leaderboard"
    assert _row(page, "environment", "gpu").inner_text() == "NVIDIA B200 (sm_100)"
    assert "No artifacts published with this run." in _text(page, "artifacts")
    assert "reported" in _text(page, "evidence")
    replications = _text(page, "replications")
    assert "No attestations yet." in replications
    assert "never change the evidence level" in replications
    add_note = _text(page, "add-note")
    assert "in-toto Statement v1" in add_note and f'"sha256": "{SEED}' in add_note
    assert "attestation.posted" in add_note

    manifest = page.locator("section#manifest details")
    assert manifest.get_attribute("open") is None
    page.locator("section#manifest summary").click()
    assert '"sol_score": 0.838001' in manifest.locator("pre").inner_text()

    cite = _text(page, "cite")
    assert f"{server.base}/runs/sha256:{SEED}a80d3089edc" in cite
    assert "accessed" in cite and "Download a citation receipt" in cite
    page.locator("section#cite summary", has_text="BibTeX").click()
    assert "@misc{benchproof-" + SEED in _text(page, "cite")
    receipt = page.locator("section#cite a[download]").get_attribute("href")
    assert (
        receipt
        == f"/v1/runs/sha256:{SEED}a80d3089edc96ddebce288cc1703b1bfb949d3c9ca2c2c6fd74b/citation?format=receipt"
    )
    assert "run.ingested.v1" in _text(page, "history")
    # Our seed run names an implementation the log does not hold: shown, not hidden.
    assert "implementation" in page.locator("#unresolved").inner_text()

    group = page.get_by_role(
        "link",
        name="All results for 001_fused_vision_multihead_attention_with_norms_backward on NVIDIA B200 →",
    )
    assert (
        group.get_attribute("href")
        == "/groups/sha256:b5a07d877d4aa9400dad13a88f1b4654bb2e32f324516242ada766a54ca56e34"
    )
    assert "Facts from the source's public pages" in page.locator("footer").inner_text()


def test_kernelbot_dossier(browser: Any, server: Server, page: Any) -> None:
    run = _kernelbot_run(server)
    with sqlite3.connect(server.data / "benchproof.db") as conn:
        name, notice = conn.execute(
            "SELECT name, notice FROM p_sources WHERE source = 'gpumode-kernelbot'"
        ).fetchone()
    assert page.goto(f"{server.base}/runs/{run['shortId']}").status == 200
    _assert_sections(page)
    assert name == "GPU MODE KernelBot"
    assert _row(page, "identity", "source").inner_text() == name
    assert notice in page.locator("footer").inner_text()
    rank = run["rank"]
    assert f"Rank {rank['rank']} of {rank['of']}" in _text(page, "primary")
    group = page.locator("a", has_text="All results for")
    assert group.get_attribute("href") == "/groups/" + run["comparisonKey"]
    compare = page.get_by_role("link", name="Compare with #1 →")
    if rank["leader"] != run["runDigest"]:
        assert (
            compare.get_attribute("href")
            == f"/compare?runs={run['shortId']},{run['rank']['leader'][7:19]}"
        )
    shown = source_id(run["source"], run["externalId"])
    assert _row(page, "identity", "external id").inner_text() == shown
    assert (
        _row(page, "identity", "implementation").inner_text() == run["identity"]["implementation"]
    )


def test_unknown_run_is_an_html_404(browser: Any, server: Server, page: Any) -> None:
    response = page.goto(f"{server.base}/runs/0000deadbeef")
    assert response.status == 404
    assert "text/html" in response.headers["content-type"]
    assert page.locator("h1").inner_text() == "No run matches this reference"


def test_ambiguous_alias_is_an_html_300(browser: Any, server: Server, page: Any) -> None:
    with sqlite3.connect(server.data / "benchproof.db") as conn:
        alias, count = conn.execute(
            "SELECT alias, count(*) FROM p_aliases WHERE alias LIKE 'gpumode-kernelbot:%'"
            " GROUP BY alias HAVING count(*) > 1 ORDER BY alias LIMIT 1"
        ).fetchone()
    response = page.goto(f"{server.base}/runs/{quote(alias, safe='')}")
    assert response.status == 300
    assert "names several runs" in page.locator("h1").inner_text()
    links = page.locator("main table a")
    assert links.count() == count
    with page.expect_navigation():
        links.first.click()
    assert page.locator("section#identity").count() == 1


def test_as_of_before_the_seed_run(browser: Any, server: Server, page: Any) -> None:
    size = server.json("/healthz")["treeSize"]
    assert page.goto(f"{server.base}/runs/{SEED}?asOf={size - 1}").status == 404
    assert page.goto(f"{server.base}/runs/{SEED}?asOf={size}").status == 200
    assert f"tree size {size}" in page.locator(".banner.asof").inner_text()
