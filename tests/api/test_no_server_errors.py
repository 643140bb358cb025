"""Issue 30, points 1 and 2: no run page fails, and a failure nobody foresaw is an error page and
a logged error.

- The KernelIndex example run publishes a ``confidence95`` interval (a pair of durations): its
  page, ``runs show`` and the JSON show it by its two ends (the page answered 500 before).
- Every run page and history page of the KernelIndex examples answers without a 5xx; in the
  slow suite, every one of the demo ``make serve`` loads (its Liger-Kernel runs and the whole
  catalog too).
- A bug on a page answers the site's HTML error page, on ``/v1`` a problem+json, and is logged
  at error level with its traceback, the access line at error level too."""

from __future__ import annotations

import io
import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from litestar.testing import TestClient

from service.app.ingest import ingest
from service.core.config import Settings
from service.core.init import init_data_dir
from service.web.app import create_app
from service.web.logs import flush_logs
from service.web.present import measured
from tests.corpora import CATALOG, corpus
from tests.servers import run_cli

DEMO = Path(__file__).resolve().parents[2] / "service" / "demo" / "data"
EXAMPLE = "86d80418deb0"  # the KernelIndex example run: latency with a confidence95 interval


def _served(data: Path) -> Iterator[TestClient[Any]]:
    with TestClient(app=create_app(Settings(data=data))) as client:
        yield client


@pytest.fixture(scope="module")
def demo(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The demo's KernelIndex examples."""
    data = tmp_path_factory.mktemp("demo") / "data"
    ledger, _ = init_data_dir(data)
    with ledger:
        ingest(ledger, "manifest", [DEMO / "kernelindex-examples"])
    return data


@pytest.fixture(scope="module")
def client(demo: Path) -> Iterator[TestClient[Any]]:
    yield from _served(demo)


def test_an_interval_is_shown_by_its_two_ends(demo: Path, client: TestClient[Any]) -> None:
    page = client.get(f"/runs/{EXAMPLE}")
    assert page.status_code == 200, page.text[:300]
    assert "8.10 µs to 8.15 µs" in page.text
    answer = client.get(f"/v1/runs/{EXAMPLE}").json()
    interval = [m for m in answer["measurements"] if m["statistic"] == "confidence95"]
    assert interval == [
        {"metric": "latency", "statistic": "confidence95", "unit": "ns", "value": [8095, 8151]}
    ]
    shown = run_cli("runs", "show", EXAMPLE, "--data", demo)
    assert shown.returncode == 0, shown.stderr
    assert "latency confidence95: 8.10 µs to 8.15 µs" in shown.stdout
    assert "latency median: 8.12 µs" in shown.stdout


def test_a_measurement_of_any_shape_is_text() -> None:
    assert measured(8120, "ns") == "8.12 µs"
    assert measured([8095, 8151], "ns") == "8.10 µs to 8.15 µs"
    assert measured((1, 2, 3), "ns") == "1.00 ns, 2.00 ns, 3.00 ns"
    assert measured([], "ns") == "—"
    assert measured(None, "ns") == "—"
    assert measured("fast", "ns") == "fast"
    assert measured(True, "ns") == "True"


def _crawl(client: TestClient[Any], *, source: str | None = None) -> int:
    """Every run's page, history page and their JSON twins (of ``source``, None: every run);
    the 5xx answers, named."""
    digests, after = [], None
    while True:
        params = {"limit": "500", **({"after": after} if after else {})}
        page = client.get("/v1/runs", params={**params, **({"source": source} if source else {})})
        assert page.status_code == 200, page.text
        digests += [r["runDigest"] for r in page.json()["items"]]
        after = page.json().get("next")
        if not after:
            break
    failed = []
    for digest in digests:
        for path in (
            f"/runs/{digest}",
            f"/runs/{digest}/history",
            f"/v1/runs/{digest}",
            f"/v1/runs/{digest}/history",
        ):
            status = client.get(path).status_code
            if status >= 500:
                failed.append(f"{path}: {status}")
    assert not failed, failed
    return len(digests)


def test_no_page_of_the_kernelindex_examples_fails(client: TestClient[Any]) -> None:
    assert _crawl(client, source="manifest") >= 2


@pytest.mark.slow
@pytest.mark.corpus
def test_no_run_page_of_the_demo_and_the_catalog_fails(tmp_path: Path) -> None:
    """What ``make serve`` loads: the examples, Liger-Kernel's runs and the whole catalog."""
    from service.demo import prepare_demo

    corpus(*CATALOG)  # skipped (or failed in CI) without the corpora
    prepare_demo(tmp_path / "data")
    for client in _served(tmp_path / "data"):
        assert _crawl(client) > 8000


class Lines(io.BytesIO):
    def read_lines(self) -> list[dict[str, Any]]:
        flush_logs()
        lines = [json.loads(line) for line in self.getvalue().splitlines() if line]
        self.seek(0)
        self.truncate()
        return lines


SECRET = "bp_" + "s3cret" * 5  # shaped like an operator token


def test_a_bug_is_an_error_page_a_problem_and_a_logged_error(
    demo: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    for client in _served(demo):  # a server of its own: nothing cached yet
        _bug(client, monkeypatch)


def _bug(client: TestClient[Any], monkeypatch: pytest.MonkeyPatch) -> None:
    import service.web.sections as sections
    from service.web import logs

    assert logs._sink is not None  # the app configured its logs
    out = Lines()
    flush_logs()
    monkeypatch.setattr(logs._sink, "_file", out)

    def broken(*_args: object) -> list[Any]:
        raise RuntimeError(f"a bug that no handler foresaw, holding {SECRET}")

    monkeypatch.setattr(sections, "measurement_rows", broken)
    page = client.get(f"/runs/{EXAMPLE}", headers={"accept": "text/html"})
    assert page.status_code == 500
    assert page.headers["content-type"].startswith("text/html")
    assert "<html" in page.text.lower() and SECRET not in page.text
    lines = out.read_lines()
    assert SECRET not in json.dumps(lines) and "[redacted]" in json.dumps(lines)
    failure = [line for line in lines if line["event"] == "request.failed"]
    assert failure and failure[0]["level"] == "error", lines
    assert "RuntimeError" in json.dumps(failure[0]["exception"])
    access = [line for line in lines if line["event"] == "http.request"]
    assert access and access[0]["level"] == "error" and access[0]["status"] == 500

    import service.app.runs as runs

    def broken_show(*_args: object, **_kwargs: object) -> None:
        raise RuntimeError("another bug")

    monkeypatch.setattr(runs, "show_run", broken_show)
    answer = client.get(f"/v1/runs/{EXAMPLE}/manifest")  # read anew on every request
    assert answer.status_code == 500, answer.text
    assert answer.headers["content-type"].startswith("application/problem+json")
    assert answer.json()["status"] == 500
    lines = out.read_lines()
    assert any(line["event"] == "request.failed" and line["level"] == "error" for line in lines)
