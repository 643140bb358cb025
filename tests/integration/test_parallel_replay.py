"""The replay whose entries a reader process prepares (``projections.prepare``): the same
tables as the incremental projections, the same errors as the plain rebuild."""

from __future__ import annotations

import sqlite3
from pathlib import Path

import pytest

from events.errors import LogCorrupted, LogError
from events.types import ManifestRecorded, Origin, RunSuperseded
from keys import SigningKey
from projections import materialize
from projections.materialize import Materializer
from projections.queries import run_view
from service.ledger import Ledger
from service.replay import replay
from tests.builders import attestation, bundle, ingest_event, key_registration, rerun


def _mixed_log(ledger: Ledger) -> tuple[str, str]:
    """Runs of several groups, one waiting on a workload that a later run and a later
    manifest.recorded bring, a superseded run, a rerun and an attestation."""
    waiting = bundle(group=3, author=1, value=500)
    ledger.append([(ingest_event(waiting, drop=("workload",)), waiting["run"].digest)])
    runs = []
    for i in range(12):
        parts = bundle(group=i % 4, author=i % 3, value=1000 + 37 * i)
        runs.append(parts["run"].digest)
        ledger.append([(ingest_event(parts), parts["run"].digest)])  # group 3 carries the workload
    wl = bundle(group=5)["workload"]
    origin = Origin(source="synthetic", importer="tests", importerVersion="1")
    recorded = ManifestRecorded(digest=wl.digest, kind=wl.kind, manifest=wl.manifest, origin=origin)
    ledger.append([(recorded, wl.digest)])
    ledger.append(
        [(RunSuperseded(runDigest=runs[0], supersededBy=runs[4], reason="fixed"), runs[0])]
    )
    rerunner = SigningKey.from_seed(b"\x05" * 32)
    community = SigningKey.from_seed(b"\x06" * 32)
    ledger.append([(key_registration(rerunner, "rerunner"), rerunner.key_id)])
    ledger.append([(key_registration(community, "community"), community.key_id)])
    ledger.append_pending([rerun(runs[1], rerunner, passed=True)])
    ledger.append_pending([attestation(runs[2], community)])
    return waiting["run"].digest, runs[1]


def test_it_equals_the_incremental_projections_and_takes_both_paths(
    ledger: Ledger, monkeypatch: pytest.MonkeyPatch
) -> None:
    waiting, verified = _mixed_log(ledger)
    conn = ledger.store.connection
    waiting_before = run_view(conn, waiting)
    assert waiting_before is not None and not waiting_before.unresolved
    taken: list[bool] = []
    original = materialize._Batch.apply_prepared

    def spy(self: materialize._Batch, prepared: materialize.Prepared) -> bool:
        taken.append(original(self, prepared))
        return taken[-1]

    monkeypatch.setattr(materialize._Batch, "apply_prepared", spy)
    for batch in (1, 4, 4000):
        report = replay(ledger, parallel=True, batch_size=batch)
        assert report.ok, report.differences
        assert report.entries == ledger.store.size
    # Prepared views were taken, and the run that carried the awaited workload went the plain way.
    assert True in taken and False in taken
    assert run_view(conn, waiting) == waiting_before
    view = run_view(conn, verified)
    assert view is not None and view.evidenceLevel == "verified"


def _break_leaf(ledger: Ledger, seq: int) -> None:
    db = sqlite3.connect(ledger.data.db, isolation_level=None)
    for (name,) in db.execute("SELECT name FROM sqlite_master WHERE type = 'trigger'").fetchall():
        db.execute(f'DROP TRIGGER "{name}"')
    db.execute("UPDATE entries SET leaf = ? WHERE seq = ?", (b'{"seq":', seq))
    db.close()


def test_a_malformed_leaf_is_named_as_the_plain_rebuild_names_it(ledger: Ledger) -> None:
    _mixed_log(ledger)
    _break_leaf(ledger, 5)
    for parallel in (False, True):
        with pytest.raises(LogCorrupted, match=r"entry 5: malformed leaf"):
            replay(ledger, parallel=parallel)
    # Nothing of the failed rebuilds stayed: the projections are the incremental ones.
    assert Materializer(ledger.store.connection).position() == ledger.store.size


def test_a_reader_that_cannot_read_the_log_is_an_error(tmp_path: Path) -> None:
    conn = sqlite3.connect(":memory:", isolation_level=None)
    with pytest.raises(LogError, match="reader process"):
        Materializer(conn).rebuild_log(tmp_path / "absent.db", 3)


def test_a_reader_that_dies_is_an_error_with_its_last_words(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import sys

    from projections.prepare import prepared_batches

    # "sh -m projections.prepare …" fails at once and says why on stderr.
    monkeypatch.setattr(sys, "executable", "/bin/sh")
    with pytest.raises(LogError, match=r"reader process ended early: \S"):
        list(prepared_batches(tmp_path / "absent.db", 0, 3))
