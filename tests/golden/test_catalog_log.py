"""The whole KernelIndex catalog through the log: every run's keys as exported, the leader
history equal to KernelIndex's ``record_events`` (2,948 of 2,948, none extra), ranks equal to
the dense ascending ranks of each comparison group, the seed run's group once it arrives, a
log that verifies, and a second import that appends nothing."""

from __future__ import annotations

import collections
import copy
import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import zstandard

from events.decoding import decode_event
from events.port import stored_entries
from events.types import RunIngested, SourceRegistered
from projections import queries
from service.app.ingest import ingest
from service.core.init import init_data_dir
from service.core.ledger import Ledger
from tests.corpora import CATALOG, corpus, shared_file
from verifier.log import verify_log

pytestmark = pytest.mark.corpus

SEED = "sha256:5195388fd7c6a80d3089edc96ddebce288cc1703b1bfb949d3c9ca2c2c6fd74b"
SEED_GROUP = "sha256:b5a07d877d4aa9400dad13a88f1b4654bb2e32f324516242ada766a54ca56e34"


@pytest.fixture(scope="module")
def ledger(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Ledger]:
    opened, _ = init_data_dir(tmp_path_factory.mktemp("catalog") / "data")
    result, rejected = ingest(opened, "kernelindex-catalog", [corpus(*CATALOG)])
    assert not rejected
    assert result.runs_appended == 7857 + 722
    yield opened
    opened.close()


def test_every_run_keeps_the_exported_keys(
    ledger: Ledger, catalog: dict[str, list[dict[str, Any]]]
) -> None:
    views = {v.runDigest: v for v in queries.list_runs(ledger.store.session)}
    kernel = catalog["benchmark_runs"]
    assert sum(views[r["runDigest"]].comparisonKey == r["comparisonKey"] for r in kernel) == 7857
    serving = catalog["serving_runs"]
    assert sum(views[r["runDigest"]].cohortKey == r["cohortKey"] for r in serving) == 722
    aliases = queries.all_aliases(ledger.store.session)
    assert all(f"kernelindex:{r['id']}" in aliases[r["runDigest"]] for r in kernel + serving)


def test_leader_history_equals_record_events(
    ledger: Ledger, catalog: dict[str, list[dict[str, Any]]]
) -> None:
    digest_of = {r["id"]: r["runDigest"] for r in catalog["benchmark_runs"]}
    want = {
        (
            e["comparisonKey"],
            digest_of[e["runId"]],
            digest_of.get(e["previousRunId"]),
            e["at"],
            e["cause"],
            e["policyVersion"],
        )
        for e in catalog["record_events"]
    }
    got = {
        (c.comparisonKey, c.runDigest, c.previousRunDigest, c.at, c.cause, c.policyVersion)
        for c in queries.leader_history(ledger.store.session)
    }
    assert len(want) == 2948
    assert (len(want & got), len(got - want)) == (2948, 0)


def test_ranks_are_dense_ascending_ranks_of_each_group(
    ledger: Ledger, catalog: dict[str, list[dict[str, Any]]]
) -> None:
    groups: dict[str, list[dict[str, Any]]] = collections.defaultdict(list)
    for r in catalog["benchmark_runs"]:
        if r["status"] == "passed" and r["primaryValue"] is not None:
            groups[r["comparisonKey"]].append(r)
    want = {}
    for members in groups.values():
        values = sorted({r["primaryValue"] for r in members})
        for r in members:
            want[r["runDigest"]] = (values.index(r["primaryValue"]) + 1, len(values))
    got = queries.all_ranks(ledger.store.session)
    assert len(want) == 7771
    assert {d: got.get(d) for d in want} == want
    # The dossier's rank (a binary search over cached standings) agrees with the scan.
    cache: queries.StandingsCache = {}
    for digest in list(want)[:300]:
        view = queries.run_view(ledger.store.session, digest)
        assert view is not None
        ranked = queries.rank_of(ledger.store.session, view, None, cache)
        assert ranked is not None
        assert (ranked.rank, ranked.of) == want[digest]


def test_the_log_verifies_and_a_second_import_appends_nothing(ledger: Ledger) -> None:
    size = ledger.store.size
    report = verify_log(ledger.data.db)
    assert report.ok, report.findings[:3]
    assert report.entries == size
    again, _ = ingest(ledger, "kernelindex-catalog", [corpus(*CATALOG)])
    assert (again.entries, again.runs_known) == (0, 7857 + 722)
    assert ledger.store.size == size


def test_the_seed_joins_its_group_once_it_arrives(ledger: Ledger) -> None:
    ingest(ledger, "manifest", [shared_file("seed-manifest.json")])
    view = queries.run_view(ledger.store.session, SEED)
    assert view is not None
    assert view.comparisonKey == SEED_GROUP
    assert view.unresolved == ("implementation",)  # AKO's submission is not in the export
    ranked = queries.rank_of(ledger.store.session, view)
    assert ranked is not None
    assert (ranked.rank, ranked.of) == (1, 1)
    assert queries.resolve_run(ledger.store.session, "sol-execbench:165") == SEED
    before = ledger.store.size - 1
    assert queries.run_view(ledger.store.session, SEED, before) is None
    assert verify_log(ledger.data.db).ok


def _mini_export(path: Path, lines: list[dict[str, Any]]) -> Path:
    raw = b"".join(json.dumps(line).encode() + b"\n" for line in lines)
    path.write_bytes(zstandard.ZstdCompressor().compress(raw))
    return path


def test_a_corrected_or_retracted_catalog_row_supersedes_or_retracts(tmp_path: Path) -> None:
    """A later export that changes a row's run supersedes the run it had; one that marks it
    retracted retracts it. Built from the real export's first kernel run and its sources."""
    with corpus(*CATALOG).open("rb") as fh:
        text = zstandard.ZstdDecompressor().stream_reader(fh).read()
    sources, run = [], None
    for line in text.splitlines():
        doc = json.loads(line)
        if doc["table"] == "sources":
            sources.append(doc)
        elif doc["table"] == "benchmark_runs" and run is None:
            run = doc
    assert run is not None
    first = _mini_export(tmp_path / "a.jsonl.zst", [*sources, run])
    fixed = copy.deepcopy(run)
    fixed["row"]["manifest"]["run"]["spec"]["measurements"][0]["value"] *= 2
    second = _mini_export(tmp_path / "b.jsonl.zst", [*sources, fixed])
    gone = copy.deepcopy(fixed)
    gone["row"]["retractedAt"] = "2026-09-01T00:00:00Z"
    gone["row"]["retractionReason"] = "wrong shapes"
    third = _mini_export(tmp_path / "c.jsonl.zst", [*sources, gone])

    opened, _ = init_data_dir(tmp_path / "d")
    with opened as ledger:
        conn = ledger.store.session
        ingest(ledger, "kernelindex-catalog", [first])
        old = queries.resolve_run(conn, f"kernelindex:{run['row']['id']}")
        result, _ = ingest(ledger, "kernelindex-catalog", [second])
        assert (result.runs_appended, result.superseded) == (1, 1)
        new = queries.run_view(conn, old)
        assert new is not None and new.supersededBy is not None
        assert new.evidenceLevel == "superseded"
        corrected = queries.run_view(conn, new.supersededBy)
        assert corrected is not None and corrected.evidenceLevel != "superseded"
        ingest(ledger, "kernelindex-catalog", [third])
        retracted = queries.run_view(conn, new.supersededBy)
        assert retracted is not None and retracted.evidenceLevel == "retracted"
        assert "wrong shapes" in (retracted.retractedReason or "")
        assert ingest(ledger, "kernelindex-catalog", [third])[0].entries == 0
        # The source registrations carry the snapshot and importer they came with.
        entries = list(stored_entries(ledger.store, 0, ledger.store.size))
        events = [(e.type, decode_event(e)) for e in entries]
        ingested = next(ev for t, ev in events if t == "run.ingested.v1")
        assert isinstance(ingested, RunIngested)
        registrations = [ev for t, ev in events if isinstance(ev, SourceRegistered)]
        assert registrations
        for event in registrations:
            assert event.origin is not None
            assert event.origin.snapshotDigest == ingested.origin.snapshotDigest
            assert event.origin.snapshotDigest is not None
            assert event.origin.importer == ingested.origin.importer
        assert verify_log(ledger.data.db).ok
