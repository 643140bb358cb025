"""``kernelbench-timings``: KernelBench's baseline timing JSONs, both snapshots, into the log."""

from __future__ import annotations

import json
import shutil
from collections import Counter
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
from service.errors import InvalidInput, UsageError
from service.ingest import kernelbench
from service.ingest.core import IngestResult
from tests.cli.conftest import Runner, bp  # noqa: F401
from tests.corpora import corpus
from verifier.log import verify_log

pytestmark = pytest.mark.corpus

SOURCE = "kernelbench-timings"


@pytest.fixture(scope="module")
def folder() -> Path:
    return corpus("kernelbench-baseline-timings")


@pytest.fixture(scope="module")
def imported(
    folder: Path, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[tuple[Ledger, IngestResult, list[RunView]]]:
    ledger, _ = init_data_dir(tmp_path_factory.mktemp("kernelbench") / "d")
    result, rejected = ingest(ledger, SOURCE, [folder])
    assert rejected == []
    yield ledger, result, list(list_runs(ledger.store.session, source=SOURCE))
    ledger.close()


@pytest.fixture
def ledger(tmp_path: Path) -> Iterator[Ledger]:
    ledger, _ = init_data_dir(tmp_path / "d")
    yield ledger
    ledger.close()


def _copy(source: Path, target: Path, edit: Any = None) -> Path:
    doc = json.loads(source.read_text())
    if edit is not None:
        edit(doc)
    target.parent.mkdir(parents=True, exist_ok=True)
    target.write_text(json.dumps(doc))
    return target


def test_every_entry_is_a_run(imported: tuple[Ledger, IngestResult, list[RunView]]) -> None:
    ledger, result, views = imported
    assert result.runs_appended == 8500
    assert (result.superseded, result.unresolved) == (0, 0)
    assert len(views) == 8500
    assert verify_log(ledger.data.db).ok


def test_null_entries_are_failed_runs_without_a_value(
    imported: tuple[Ledger, IngestResult, list[RunView]],
) -> None:
    _, _, views = imported
    failed = [v for v in views if v.status != "passed"]
    assert len(failed) == 14
    for view in failed:
        assert (view.status, view.sourceStatus) == ("runtime_error", "null")
        assert view.primaryValue is None
        assert view.metricKey == "none"
        assert view.hardware is not None  # the GPU its file's other entries agree on
    assert all(v.primaryValue for v in views if v.status == "passed")  # never a zero latency


def test_hardware_comes_from_the_row(imported: tuple[Ledger, IngestResult, list[RunView]]) -> None:
    _, _, views = imported
    by_folder = Counter(
        (v.externalId.split("/")[0], v.hardware) for v in views if v.externalId is not None
    )
    assert by_folder[("A10G_modal", "NVIDIA A10")] == 275
    assert by_folder[("A10G_modal", "NVIDIA A10G")] == 225
    assert by_folder[("A100_modal", "NVIDIA A100-SXM4-40GB")] == 495
    assert by_folder[("A100_modal", "NVIDIA A100-SXM4-80GB")] == 5


def test_timing_host_is_part_of_the_environment(
    imported: tuple[Ledger, IngestResult, list[RunView]],
) -> None:
    _, _, views = imported
    by_id = {v.externalId: v for v in views}
    problem = "torch/level1/1_Square_matrix_multiplication_.py"
    together, modal = by_id[f"H100_together/{problem}"], by_id[f"H100_Modal/{problem}"]
    assert together.hardware == modal.hardware == "NVIDIA H100 80GB HBM3"
    assert together.operationDigest == modal.operationDigest
    assert together.environmentKey != modal.environmentKey
    assert together.comparisonKey != modal.comparisonKey
    # configs of one problem on one host compete in one group
    compiled = by_id[
        f"H100_together/torch_compile_inductor_default/level1/{problem.split('/')[-1]}"
    ]
    assert compiled.comparisonKey == together.comparisonKey
    assert compiled.implementationDigest != together.implementationDigest


def test_older_snapshot_first_and_reimport(
    folder: Path, imported: tuple[Ledger, IngestResult, list[RunView]]
) -> None:
    ledger, _, _ = imported
    items = kernelbench.plan([folder]).runs
    assert items[0].run.manifest["spec"]["observedAt"] == "2025-03-16T00:00:00Z"
    assert items[-1].run.manifest["spec"]["observedAt"] == "2026-03-05T00:00:00Z"
    size = ledger.store.size
    result, _ = ingest(ledger, SOURCE, [folder / "at-423217d"])
    assert (result.entries, result.runs_known) == (0, 1000)
    assert ledger.store.size == size
    ref = f"{SOURCE}:H100_Modal/torch/level1/1_Square_matrix_multiplication_.py"
    assert resolve_run(ledger.store.session, ref).startswith("sha256:")


def test_invalid_entries_refuse_the_file(folder: Path, tmp_path: Path, ledger: Ledger) -> None:
    def edit(doc: dict[str, Any]) -> None:
        first, second = list(doc["level1"])[:2]
        del doc["level1"][first]["mean"]
        doc["level1"][second]["max"] = "slow"

    original = folder / "at-423217d" / "H100_Modal" / "baseline_time_torch.json"
    bad = _copy(original, tmp_path / "H100_Modal" / "baseline_time_torch.json", edit)
    with pytest.raises(InvalidInput) as caught:
        ingest(ledger, SOURCE, [bad])
    assert len(caught.value.details["report"]) == 2  # type: ignore[arg-type]
    result, rejected = ingest(ledger, SOURCE, [bad], skip_invalid=True)
    assert [r.reason for r in rejected] == ["missing mean", "max is 'slow', not a number"]
    assert result.runs_appended == 248


def test_corrected_entry_supersedes_and_unchanged_snapshot_adds_nothing(
    folder: Path, tmp_path: Path, ledger: Ledger
) -> None:
    original = folder / "at-423217d" / "H100_Modal" / "baseline_time_torch.json"
    ingest(ledger, SOURCE, [original])
    same = _copy(original, tmp_path / "at-9999999" / "H100_Modal" / "baseline_time_torch.json")
    assert ingest(ledger, SOURCE, [same])[0].entries == 0

    def edit(doc: dict[str, Any]) -> None:
        doc["level1"]["1_Square_matrix_multiplication_.py"]["mean"] = 9.99

    fixed = _copy(original, tmp_path / "H100_Modal" / "baseline_time_torch.json", edit)
    result, _ = ingest(ledger, SOURCE, [fixed])
    assert (result.runs_appended, result.superseded) == (1, 1)
    old = kernelbench.plan([original]).runs[0].run.digest
    new = kernelbench.plan([fixed]).runs[0].run.digest
    view = run_view(ledger.store.session, old)
    assert view is not None
    assert view.supersededBy == new
    # The row's alias names both runs; it resolves to the current one (the correction), and
    # as of before the correction to the old one.
    conn = ledger.store.session
    alias = f"{SOURCE}:H100_Modal/torch/level1/1_Square_matrix_multiplication_.py"
    assert resolve_run(conn, alias) == new
    assert resolve_run(conn, alias, result.size - 2) == old
    assert verify_log(ledger.data.db).ok


def test_unreadable_files(folder: Path, tmp_path: Path) -> None:
    stray = _copy(
        folder / "at-7dd9cfa" / "L4_modal" / "baseline_time_torch.json", tmp_path / "x" / "t.json"
    )
    with pytest.raises(UsageError, match="cannot date"):
        kernelbench.plan([stray])
    listed = tmp_path / "L4_modal" / "baseline_time_torch.json"
    listed.parent.mkdir()
    listed.write_text("[1, 2]")
    with pytest.raises(InvalidManifest, match="not a KernelBench timing file"):
        kernelbench.plan([listed])


def test_cli(bp: Runner, folder: Path, tmp_path: Path) -> None:  # noqa: F811
    data = tmp_path / "d"
    init_data_dir(data)[0].close()
    shutil.copytree(folder / "at-423217d", tmp_path / "at-423217d")
    first = bp("ingest", SOURCE, tmp_path / "at-423217d", "--data", data)
    assert first.returncode == 0, first.stderr
    assert "1000 runs" in first.stdout
    again = bp("ingest", SOURCE, tmp_path / "at-423217d", "--data", data)
    assert again.returncode == 0, again.stderr
    assert again.stdout.startswith("nothing new")


def test_cli_skip_invalid_writes_rejects_with_the_import_or_not_at_all(
    bp: Runner,  # noqa: F811
    folder: Path,
    tmp_path: Path,
) -> None:
    data = tmp_path / "d"
    init_data_dir(data)[0].close()

    def edit(doc: dict[str, Any]) -> None:
        del doc["level1"][next(iter(doc["level1"]))]["mean"]

    original = folder / "at-423217d" / "H100_Modal" / "baseline_time_torch.json"
    bad = _copy(original, tmp_path / "in" / "H100_Modal" / "baseline_time_torch.json", edit)
    size = Ledger.open(data)
    before = size.store.size
    size.close()
    # The rejects file cannot be written: refused before anything is appended.
    nowhere = tmp_path / "no-such-dir" / "rejected.jsonl"
    refused = bp("ingest", SOURCE, bad, "--skip-invalid", "--rejected", nowhere, "--data", data)
    assert refused.returncode == 2, refused.stderr
    assert "cannot write the rejected rows" in refused.stderr
    assert "Traceback" not in refused.stderr
    with Ledger.open(data) as ledger:
        assert ledger.store.size == before
    target = tmp_path / "rejected.jsonl"
    done = bp("ingest", SOURCE, bad, "--skip-invalid", "--rejected", target, "--data", data)
    assert done.returncode == 0, done.stderr
    lines = target.read_text().splitlines()
    assert len(lines) == 1 and "missing mean" in lines[0]
    assert not (tmp_path / "rejected.jsonl.partial").exists()
