"""``sol-execbench``: problem definitions and workloads (the corpus), and fictional traces and
leaderboard records (``tests/fixtures/sol``)."""

from __future__ import annotations

import json
import re
import shutil
from collections import Counter
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from events import identify
from events.documents import KernelIdentity
from projections.queries import list_runs, rank_of, resolve_run, run_view
from service.app.ingest import ingest
from service.core.init import init_data_dir
from service.core.ledger import Ledger
from service.errors import InvalidInput, UsageError
from service.ingest import solexecbench
from tests.cli.conftest import Runner, bp  # noqa: F401
from tests.corpora import corpus
from verifier.log import verify_log

SOURCE = "sol-execbench"
FIXTURES = Path(__file__).resolve().parent.parent / "fixtures" / "sol"


@pytest.fixture
def ledger(tmp_path: Path) -> Iterator[Ledger]:
    ledger, _ = init_data_dir(tmp_path / "d")
    yield ledger
    ledger.close()


@pytest.fixture
def fixtures(tmp_path: Path) -> Path:
    """A private copy of the fixtures, to break or correct."""
    return Path(shutil.copytree(FIXTURES, tmp_path / "sol"))


@pytest.mark.corpus
def test_corpus_records_operations_and_workloads(ledger: Ledger) -> None:
    folder = corpus("sol-execbench-fixtures")
    plan = solexecbench.plan([folder])
    assert plan.runs == []
    kinds = Counter(c.kind for c, _ in plan.manifests)
    assert kinds == {"OperationSpec": 21, "WorkloadCase": 95}  # one per definition, per line
    result, rejected = ingest(ledger, SOURCE, [folder])
    assert rejected == []
    # identical copies (examples/ and tests/samples/ share problems) are recorded once
    assert (result.manifests_appended, result.runs_appended) == (12 + 44, 0)
    assert ledger.store.size == result.size
    assert verify_log(ledger.data.db).ok
    again, _ = ingest(ledger, SOURCE, [folder])
    assert again.entries == 0


@pytest.mark.corpus
def test_every_format_status_is_a_first_class_outcome() -> None:
    text = corpus("sol-execbench-fixtures", "FORMAT.md").read_text()
    listed = re.search(r"`status` in ([A-Z_,\s]+);", text)
    assert listed is not None
    statuses = {s.strip() for s in listed.group(1).split(",")}
    assert statuses == set(solexecbench.STATUSES)
    assert solexecbench.STATUSES["REWARD_HACK"] == "suspected_reward_hack"


def test_traces(ledger: Ledger) -> None:
    result, rejected = ingest(ledger, SOURCE, [FIXTURES])
    assert rejected == []
    assert result.runs_appended == 11 + 4
    conn = ledger.store.session
    views = {v.name: v for v in list_runs(conn, source=SOURCE)}
    traces = [v for v in views.values() if v.name.startswith("sol-trace-")]
    assert Counter(v.status for v in traces) == {
        "passed": 3,
        "incorrect_numerical": 1,
        "incorrect_shape": 1,
        "incorrect_dtype": 1,
        "compile_error": 1,
        "runtime_error": 1,
        "timeout": 1,
        "suspected_reward_hack": 1,
        "invalid_reference": 1,
    }
    hack = next(v for v in traces if v.status == "suspected_reward_hack")
    assert hack.sourceStatus == "REWARD_HACK"
    assert all((v.primaryValue is not None) == (v.status == "passed") for v in traces)
    assert all(v.unresolved == () for v in views.values())
    # two solutions timed on the first workload share a comparison group; the faster ranks first
    groups = Counter(v.comparisonKey for v in traces if v.status == "passed")
    assert sorted(groups.values()) == [1, 2]
    pair = sorted(
        (v for v in traces if groups[v.comparisonKey] == 2), key=lambda v: v.primaryValue or 0
    )
    assert [v.primaryValue for v in pair] == [3700, 4100]
    ranks = [rank_of(conn, v) for v in pair]
    assert [r.rank if r else None for r in ranks] == [1, 2]
    assert verify_log(ledger.data.db).ok


def test_trace_shapes() -> None:
    items = solexecbench.plan([FIXTURES]).runs
    by_status: dict[str, dict[str, Any]] = {}
    for item in items[:11]:
        by_status.setdefault(item.run.manifest["spec"]["status"], item.run.manifest["spec"])
    passed, numerical = by_status["passed"], by_status["incorrect_numerical"]
    assert passed["timing"] == {"primaryStatistic": "mean", "latencyNs": {"mean": 4100}}
    assert passed["correctness"]["comparator"] == "sol_execbench_eval"
    assert "timing" not in numerical
    assert numerical["correctness"]["maximumRelativeError"] == 0.41
    assert "correctness" not in by_status["timeout"]
    assert "timing" not in by_status["timeout"]
    # an offset timestamp is written in UTC
    assert items[2].run.manifest["spec"]["observedAt"] == "2026-05-01T08:10:00Z"
    # traces on one workload with two solutions compete; other workloads are other groups
    keys = [identify({"run": i.run, **i.given}, source="t") for i in items[:3]]
    assert all(isinstance(k, KernelIdentity) for k in keys)
    assert keys[0].comparisonKey == keys[1].comparisonKey != keys[2].comparisonKey  # type: ignore[union-attr]


def test_leaderboard_follows_the_seed(seed_manifest: dict[str, Any], ledger: Ledger) -> None:
    items = solexecbench.plan([FIXTURES]).runs
    board = items[11:]
    seed = seed_manifest["run"]["spec"]
    for item in board:
        spec = item.run.manifest["spec"]
        assert item.given["protocol"].digest == seed["protocolDigest"]
        assert item.given["environment"].digest == seed["environmentDigest"]
        assert set(spec["sourceNative"]["metrics"]) == set(seed["sourceNative"]["metrics"])
        assert set(spec) == set(seed)
        assert item.given["workload"].kind == "WorkloadSuite"
        assert item.run.name == f"sol-submission-{spec['sourceNative']['externalId']}"
    ingest(ledger, SOURCE, [FIXTURES])
    conn = ledger.store.session
    best = run_view(conn, resolve_run(conn, f"{SOURCE}:90003"))
    hack = run_view(conn, resolve_run(conn, f"{SOURCE}:90004"))
    assert best is not None
    assert hack is not None
    assert (hack.status, hack.sourceStatus, hack.eligible) == (
        "suspected_reward_hack",
        "REWARD_HACK",
        False,
    )
    ranked = rank_of(conn, best)
    assert ranked is not None
    assert ranked.rank == 1


def _rewrite(path: Path, edit: Any) -> None:
    if path.suffix == ".jsonl":
        lines = [json.loads(line) for line in path.read_text().splitlines()]
        edit(lines)
        path.write_text("".join(json.dumps(line) + "\n" for line in lines))
    else:
        doc = json.loads(path.read_text())
        edit(doc)
        path.write_text(json.dumps(doc))


def test_invalid_rows_refuse_the_import(fixtures: Path, ledger: Ledger) -> None:
    def break_traces(lines: list[dict[str, Any]]) -> None:
        lines[0]["evaluation"]["status"] = "MAYBE"
        lines[1]["definition"] = "no_such_problem"

    _rewrite(fixtures / "traces.jsonl", break_traces)
    with pytest.raises(InvalidInput) as caught:
        ingest(ledger, SOURCE, [fixtures])
    assert len(caught.value.details["report"]) == 2  # type: ignore[arg-type]
    result, rejected = ingest(ledger, SOURCE, [fixtures], skip_invalid=True)
    assert [r.row for r in rejected] == ["line 1", "line 2"]
    assert "unknown status 'MAYBE'" in rejected[0].reason
    assert "no_such_problem" in rejected[1].reason
    assert result.runs_appended == 9 + 4


def test_a_status_that_is_not_text_is_an_invalid_row(fixtures: Path, ledger: Ledger) -> None:
    """A list or object where a status goes is a refused row, like an unknown word (it was a
    TypeError: the status was looked up in a set; found by the reliability suite's fuzzing)."""

    def break_traces(lines: list[dict[str, Any]]) -> None:
        lines[0]["evaluation"]["status"] = ["PASSED"]
        lines[1]["evaluation"]["status"] = {"PASSED": True}

    _rewrite(fixtures / "traces.jsonl", break_traces)
    _, rejected = ingest(ledger, SOURCE, [fixtures], skip_invalid=True)
    assert [r.row for r in rejected] == ["line 1", "line 2"]
    assert all("unknown status" in r.reason for r in rejected)


def test_an_empty_file_appends_nothing(tmp_path: Path, ledger: Ledger) -> None:
    """An import that brings no run and no manifest registers no source either (found by the
    reliability suite's schemathesis run: an empty array appended a source registration)."""
    empty = tmp_path / "traces.json"
    empty.write_text("[]")
    before = ledger.store.size
    result, _ = ingest(ledger, SOURCE, [empty])
    assert (result.entries, ledger.store.refresh()) == (0, before)


def test_corrected_submission_supersedes(fixtures: Path, ledger: Ledger) -> None:
    ingest(ledger, SOURCE, [FIXTURES])
    old = resolve_run(ledger.store.session, f"{SOURCE}:90002")

    def correct(doc: dict[str, Any]) -> None:
        doc["kernels"][0]["submissions"][1]["latency_ms"] = 0.0047

    _rewrite(fixtures / "leaderboard.json", correct)
    result, _ = ingest(ledger, SOURCE, [fixtures])
    assert (result.runs_appended, result.superseded) == (1, 1)
    (new,) = [
        i.run.digest for i in solexecbench.plan([fixtures]).runs if i.origin.externalId == "90002"
    ]
    view = run_view(ledger.store.session, old)
    assert view is not None
    assert view.supersededBy == new != old
    assert verify_log(ledger.data.db).ok


def test_unknown_file_shape(tmp_path: Path) -> None:
    odd = tmp_path / "results.json"
    odd.write_text('{"hello": "world"}')
    with pytest.raises(UsageError, match="not a SOL-ExecBench"):
        solexecbench.plan([odd])


def test_fixtures_are_marked_fictional() -> None:
    assert "FICTIONAL" in (FIXTURES / "README.md").read_text()
    board = json.loads((FIXTURES / "leaderboard.json").read_text())
    for kernel in board["kernels"]:
        assert "fictional" in kernel["definition"]
        assert all(s["user"].startswith("Fictional") for s in kernel["submissions"])


def test_cli(bp: Runner, tmp_path: Path) -> None:  # noqa: F811
    data = tmp_path / "d"
    init_data_dir(data)[0].close()
    first = bp("ingest", SOURCE, FIXTURES, "--data", data)
    assert first.returncode == 0, first.stderr
    assert "15 runs" in first.stdout
    again = bp("ingest", SOURCE, FIXTURES, "--data", data)
    assert again.returncode == 0, again.stderr
    assert again.stdout.startswith("nothing new")
