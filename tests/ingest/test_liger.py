"""``liger``: Liger-Kernel's benchmark CSVs, both revisions, into the signed log."""

from __future__ import annotations

import csv
import io
from collections import Counter
from collections.abc import Iterator
from pathlib import Path

import pytest

from events import InvalidManifest, identify
from events.documents import KernelIdentity
from projections.queries import list_runs, run_view
from service.app.ingest import ingest
from service.core.init import init_data_dir
from service.core.ledger import Ledger
from service.errors import InvalidInput
from service.ingest import liger
from service.ingest.core import IngestResult
from tests.cli.conftest import Runner, bp  # noqa: F401
from tests.corpora import corpus
from verifier.log import verify_log

pytestmark = pytest.mark.corpus

HISTORY = "history/all_benchmark_data.at-ee5aaf26.csv"


@pytest.fixture(scope="module")
def folder() -> Path:
    return corpus("liger-kernel-bench")


@pytest.fixture(scope="module")
def imported(
    folder: Path, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[tuple[Ledger, IngestResult]]:
    ledger, _ = init_data_dir(tmp_path_factory.mktemp("liger") / "d")
    result, rejected = ingest(ledger, "liger", [folder])
    assert rejected == []
    yield ledger, result
    ledger.close()


@pytest.fixture
def ledger(tmp_path: Path) -> Iterator[Ledger]:
    ledger, _ = init_data_dir(tmp_path / "d")
    yield ledger
    ledger.close()


def _edited(source: Path, target: Path, line: int, column: str, value: str) -> Path:
    """A copy of ``source`` at ``target`` with one cell of data line ``line`` (1-based) changed."""
    rows = list(csv.DictReader(io.StringIO(source.read_text())))
    rows[line - 1][column] = value
    out = io.StringIO()
    writer = csv.DictWriter(out, fieldnames=list(rows[0]), lineterminator="\n")
    writer.writeheader()
    writer.writerows(rows)
    target.parent.mkdir(parents=True, exist_ok=True)
    target.write_text(out.getvalue())
    return target


def test_whole_corpus_history_first(folder: Path, imported: tuple[Ledger, IngestResult]) -> None:
    ledger, result = imported
    # 806 + 2,448 + 165 + 1,284 rows; 656 rows of HEAD repeat the history revision unchanged.
    assert (result.runs_appended, result.runs_known) == (806 + 1792 + 165 + 1284, 656)
    assert result.superseded == 0
    assert result.unresolved == 0
    conn = ledger.store.session
    assert sum(1 for _ in list_runs(conn, source="liger")) == 4047
    assert verify_log(ledger.data.db).ok
    order = [item.origin.path for item in liger.plan([folder]).runs]
    assert order[:806] == ["all_benchmark_data.at-ee5aaf26.csv"] * 806
    assert order[806] == "all_benchmark_data.csv"


def test_reimport_appends_nothing(folder: Path, imported: tuple[Ledger, IngestResult]) -> None:
    ledger, _ = imported
    size = ledger.store.size
    result, _ = ingest(ledger, "liger", [folder])
    assert result.entries == 0
    assert result.runs_known == 4703
    assert ledger.store.size == size


def test_rows_removed_upstream_stay(folder: Path, imported: tuple[Ledger, IngestResult]) -> None:
    ledger, _ = imported
    old = liger.plan([folder / HISTORY]).runs
    head_keys = {item.rowKey for item in liger.plan([folder / "all_benchmark_data.csv"]).runs}
    removed = [item for item in old if item.rowKey not in head_keys]
    assert len(removed) == 150
    for item in removed:
        view = run_view(ledger.store.session, item.run.digest)
        assert view is not None
        assert view.supersededBy is None
        assert view.evidenceLevel == "reported"


def test_providers_compete_in_one_group(folder: Path) -> None:
    items = liger.plan([folder / "all_benchmark_data.csv"]).runs
    groups: dict[str | None, set[str]] = {}
    for item in items:
        ident = identify({"run": item.run, **item.given}, source="test")
        assert isinstance(ident, KernelIdentity)
        assert ident.comparisonKey is not None
        symbol = item.given["implementation"].manifest["spec"]["callable"]["symbol"]
        groups.setdefault(ident.comparisonKey, set()).add(symbol)
    first = items[0].given
    # cross_entropy, forward, speed, V=4096, {"B": 8, "T": 2048}, A100: liger vs huggingface.
    key = identify({"run": items[0].run, **first}, source="test").comparisonKey  # type: ignore[union-attr]
    assert groups[key] >= {"liger", "huggingface"}
    assert max(len(p) for p in groups.values()) >= 4
    # rows keyed (kernel, provider, mode, metric, x, config, gpu) are unique: one per provider
    assert sum(len(p) for p in groups.values()) == len(items)


def test_speed_is_timing_memory_is_measurement(folder: Path) -> None:
    items = liger.plan([folder / "all_benchmark_data_cutedsl.csv"]).runs
    kinds = Counter("timing" in i.run.manifest["spec"] for i in items)
    assert kinds == {True: 132, False: 33}
    speed = next(i.run.manifest["spec"] for i in items if "timing" in i.run.manifest["spec"])
    median = speed["measurements"][0]
    assert median["statistic"] == "median"
    assert median["unit"] == "ms"
    assert speed["timing"]["latencyNs"]["median"] == round(median["value"] * 1e6)
    memory = next(i.run.manifest["spec"] for i in items if "timing" not in i.run.manifest["spec"])
    assert [m["statistic"] for m in memory["measurements"]] == ["median", "p20", "p80"]
    assert {m["unit"] for m in memory["measurements"]} == {"mb"}
    env = items[0].given["environment"].manifest["spec"]
    assert env == {
        "hardware": {"vendor": "nvidia", "product": "NVIDIA B200", "architecture": "sm_100"},
        "software": {},
    }


def test_invalid_row_refuses_the_file(folder: Path, tmp_path: Path, ledger: Ledger) -> None:
    bad = _edited(
        folder / "all_benchmark_data_cutedsl.csv", tmp_path / "x.csv", 3, "y_value_50", "abc"
    )
    size = ledger.store.size
    with pytest.raises(InvalidInput) as caught:
        ingest(ledger, "liger", [bad])
    assert "line 4" in caught.value.details["report"][0]  # type: ignore[index]
    assert ledger.store.size == size
    result, rejected = ingest(ledger, "liger", [bad], skip_invalid=True)
    assert [(r.row, r.reason) for r in rejected] == [
        ("line 4", "y_value_50 is 'abc', not a number")
    ]
    assert result.runs_appended == 164


def test_not_a_liger_csv(tmp_path: Path) -> None:
    other = tmp_path / "other.csv"
    other.write_text("a,b\n1,2\n")
    with pytest.raises(InvalidManifest, match="missing columns"):
        liger.plan([other])


def test_corrected_row_supersedes(folder: Path, tmp_path: Path, ledger: Ledger) -> None:
    original = folder / "all_benchmark_data_cutedsl.csv"
    ingest(ledger, "liger", [original])
    fixed = _edited(original, tmp_path / "all_benchmark_data_cutedsl.csv", 1, "y_value_50", "0.25")
    result, _ = ingest(ledger, "liger", [fixed])
    assert (result.runs_appended, result.superseded, result.runs_known) == (1, 1, 164)
    old, new = liger.plan([original]).runs[0].run.digest, liger.plan([fixed]).runs[0].run.digest
    view = run_view(ledger.store.session, old)
    assert view is not None
    assert view.supersededBy == new
    assert verify_log(ledger.data.db).ok


def test_cli(bp: Runner, folder: Path, tmp_path: Path) -> None:  # noqa: F811
    data = tmp_path / "d"
    init_data_dir(data)[0].close()
    first = bp("ingest", "liger", folder, "--data", data)
    assert first.returncode == 0, first.stderr
    assert "4047 runs" in first.stdout
    again = bp("ingest", "liger", folder, "--data", data)
    assert again.returncode == 0, again.stderr
    assert again.stdout.startswith("nothing new")
