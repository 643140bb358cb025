"""``mlperf-inference``: MLPerf Inference v4.1 ``summary_results.json`` as serving runs."""

from __future__ import annotations

import json
import re
from collections import Counter, defaultdict
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from events import InvalidManifest
from projections.queries import list_runs, resolve_run, run_view
from projections.views import RunView
from service.app.ingest import ingest
from service.core.init import init_data_dir
from service.core.ledger import Ledger
from service.errors import InvalidInput
from service.ingest import mlperf
from service.ingest.core import IngestResult, RunItem
from tests.cli.conftest import Runner, bp  # noqa: F401
from tests.corpora import corpus
from verifier.log import verify_log

pytestmark = pytest.mark.corpus

SOURCE = "mlperf-inference"
# Digests of KernelIndex's own MLPerf manifests (catalog export 2026-08-16): the reference
# models and the scenarios that did not change between rounds come out identical.
KERNELINDEX = {
    "sha256:8005d6af1339caa02e60709ce2d7a6002ce9c51e436d21bb39dc5b8f93a24b0c": "llama2-70b model",
    "sha256:80245861fefd582d681d995dd4a278c0f97669415a5a9ee66bcab60e81a11738": "mixtral model",
    "sha256:65632b1fcd025d277521ab3869f904644b69e0e5322392b1d05ab8a0be7d84b9": "llama2 offline",
    "sha256:ee188c862b2e3bbbca29b194db4aa45d0f33b7da2bdc410aa953d53e6ad6a4ac": "llama2 server",
}


@pytest.fixture(scope="module")
def summary() -> Path:
    return corpus("mlperf-inference-v4.1-summary", "summary_results.json")


@pytest.fixture(scope="module")
def rows(summary: Path) -> list[dict[str, Any]]:
    return json.loads(summary.read_text())  # type: ignore[no-any-return]


@pytest.fixture(scope="module")
def items(summary: Path) -> list[RunItem]:
    return mlperf.plan([summary]).runs


@pytest.fixture(scope="module")
def imported(
    summary: Path, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[tuple[Ledger, IngestResult, list[RunView]]]:
    ledger, _ = init_data_dir(tmp_path_factory.mktemp("mlperf") / "d")
    result, rejected = ingest(ledger, SOURCE, [summary.parent])
    assert rejected == []
    yield ledger, result, list(list_runs(ledger.store.session, source=SOURCE))
    ledger.close()


@pytest.fixture
def ledger(tmp_path: Path) -> Iterator[Ledger]:
    ledger, _ = init_data_dir(tmp_path / "d")
    yield ledger
    ledger.close()


def _native(item: RunItem) -> dict[str, Any]:
    return item.run.manifest["spec"]["sourceNative"]  # type: ignore[no-any-return]


def test_every_row_is_a_serving_run(
    imported: tuple[Ledger, IngestResult, list[RunView]],
) -> None:
    ledger, result, views = imported
    assert (result.runs_appended, result.unresolved) == (937, 0)
    assert len(views) == 937
    assert {v.kind for v in views} == {"ServingRun"}
    assert all(v.cohortKey is not None and v.status == "valid" for v in views)
    assert verify_log(ledger.data.db).ok


def test_reimport_appends_nothing(
    summary: Path, imported: tuple[Ledger, IngestResult, list[RunView]]
) -> None:
    ledger, _, _ = imported
    size = ledger.store.size
    result, _ = ingest(ledger, SOURCE, [summary])
    assert (result.entries, result.runs_known) == (0, 937)
    assert ledger.store.size == size


def test_category_is_the_division_and_availability_the_category(
    rows: list[dict[str, Any]], items: list[RunItem]
) -> None:
    assert len(items) == len(rows) == 937
    for row, item in zip(rows, items, strict=True):
        native = _native(item)
        assert native["division"] == row["Category"]
        assert native["category"] == row["Availability"]
        assert item.run.manifest["spec"]["qualityPolicy"].startswith(f"mlperf_{row['Category']}_")
    assert Counter(_native(i)["division"] for i in items) == {"closed": 873, "open": 64}
    assert Counter(_native(i)["category"] for i in items) == {"available": 887, "preview": 50}
    previews = [i for i in items if _native(i)["category"] == "preview"]
    assert all("Availability: preview" in i.run.manifest["spec"]["caveats"][0] for i in previews)


def test_units_and_direction(imported: tuple[Ledger, IngestResult, list[RunView]]) -> None:
    _, _, views = imported
    seen = Counter((v.primaryMetric, v.primaryStatistic, v.primaryUnit, v.direction) for v in views)
    assert seen == {
        ("sample_throughput_sps", "reported", "samples_s", "higher"): 347,
        ("output_token_throughput_tps", "reported", "tokens_s", "higher"): 329,
        ("query_throughput_qps", "reported", "queries_s", "higher"): 227,
        ("query_latency_ms", "p90", "ms", "lower"): 22,
        ("query_latency_ms", "p99", "ms", "lower"): 12,
    }


def test_one_entry_fans_out_to_unique_ids(
    items: list[RunItem], imported: tuple[Ledger, IngestResult, list[RunView]]
) -> None:
    ids = [_native(i)["externalId"] for i in items]
    assert len(set(ids)) == 937
    first = [i for i in ids if i.startswith("v4.1/v4.1-0001/")]
    assert len(first) > 1
    ledger, _, _ = imported
    digest = resolve_run(ledger.store.session, f"{SOURCE}:v4.1/v4.1-0001/llama2-70b-99/Offline")
    view = run_view(ledger.store.session, digest)
    assert view is not None
    assert view.benchmark == "llama2-70b-99"


def test_accuracy_variants_are_distinct_runs_in_distinct_cohorts(
    items: list[RunItem], imported: tuple[Ledger, IngestResult, list[RunView]]
) -> None:
    _, _, views = imported
    cohort = {v.runDigest: v.cohortKey for v in views}
    pairs: dict[tuple[str, str, str], list[RunItem]] = defaultdict(list)
    for item in items:
        native = _native(item)
        base = re.sub(r"-99(\.9)?$", "", native["benchmark"])
        pairs[(item.origin.externalId.split("/")[1], base, native["scenario"])].append(item)  # type: ignore[union-attr]
    same = [p for p in pairs.values() if len(p) == 2 and len({_value(i) for i in p}) == 1]
    assert len(same) == 151
    for low, high in same:
        assert low.run.digest != high.run.digest
        assert cohort[low.run.digest] != cohort[high.run.digest]
        assert low.given["model"].digest == high.given["model"].digest


def _value(item: RunItem) -> float:
    return item.run.manifest["spec"]["measurements"][0]["value"]  # type: ignore[no-any-return]


def test_kernelindex_parity(items: list[RunItem]) -> None:
    given = {c.digest for i in items for c in i.given.values()}
    assert set(KERNELINDEX) <= given


def test_invalid_rows_refuse_the_file(
    rows: list[dict[str, Any]], tmp_path: Path, ledger: Ledger
) -> None:
    broken = [dict(r) for r in rows]
    del broken[3]["Performance_Result"]
    broken[5]["Performance_Units"] = "Furlongs/s"
    broken.append(dict(rows[7]))  # a duplicated row: its id is no longer unique
    path = tmp_path / "summary_results.json"
    path.write_text(json.dumps(broken))
    with pytest.raises(InvalidInput) as caught:
        ingest(ledger, SOURCE, [path])
    assert len(caught.value.details["report"]) == 4  # type: ignore[arg-type]
    result, rejected = ingest(ledger, SOURCE, [path], skip_invalid=True)
    assert result.runs_appended == 934
    reasons = [r.reason for r in rejected]
    assert reasons[0] == "missing Performance_Result"
    assert reasons[1] == "unknown Performance_Units 'Furlongs/s'"
    assert "share the id" in reasons[2]


def test_colliding_rows_are_told_apart(rows: list[dict[str, Any]], tmp_path: Path) -> None:
    twin = {**rows[0], "UsedModel": "llama2-70b-99-other", "Performance_Result": 1.0}
    path = tmp_path / "summary_results.json"
    path.write_text(json.dumps([rows[0], twin]))
    plan = mlperf.plan([path])
    assert plan.rejected == []
    assert [_native(i)["externalId"] for i in plan.runs] == [
        "v4.1/v4.1-0001/llama2-70b-99/Offline/llama2-70b-99",
        "v4.1/v4.1-0001/llama2-70b-99/Offline/llama2-70b-99-other",
    ]


def test_corrected_row_supersedes(
    rows: list[dict[str, Any]], summary: Path, tmp_path: Path, ledger: Ledger
) -> None:
    ingest(ledger, SOURCE, [summary])
    fixed = [dict(r) for r in rows]
    fixed[0]["Performance_Result"] = 3100.5
    path = tmp_path / "summary_results.json"
    path.write_text(json.dumps(fixed))
    result, _ = ingest(ledger, SOURCE, [path])
    assert (result.runs_appended, result.superseded, result.runs_known) == (1, 1, 936)
    old, new = mlperf.plan([summary]).runs[0], mlperf.plan([path]).runs[0]
    view = run_view(ledger.store.session, old.run.digest)
    assert view is not None
    assert view.supersededBy == new.run.digest


def test_not_a_summary(tmp_path: Path) -> None:
    path = tmp_path / "summary_results.json"
    path.write_text('{"ID": "v4.1-0001"}')
    with pytest.raises(InvalidManifest, match="expected a JSON array"):
        mlperf.plan([path])


def test_cli(bp: Runner, summary: Path, tmp_path: Path) -> None:  # noqa: F811
    data = tmp_path / "d"
    init_data_dir(data)[0].close()
    first = bp("ingest", SOURCE, summary.parent, "--data", data)
    assert first.returncode == 0, first.stderr
    assert "937 runs" in first.stdout
    again = bp("ingest", SOURCE, summary.parent, "--data", data)
    assert again.returncode == 0, again.stderr
    assert again.stdout.startswith("nothing new")
