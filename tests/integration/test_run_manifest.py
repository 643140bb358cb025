"""A run's own manifest is kept once, in its run.ingested entry: ``queries.run_manifest`` reads
it there, as of any tree size; the projections copy only the manifests runs reference."""

from __future__ import annotations

from projections import queries
from service.core.ledger import Ledger
from tests.builders import bundle, ingest_event


def test_a_run_manifest_is_read_from_its_entry_as_of_any_size(ledger: Ledger) -> None:
    conn = ledger.store.session
    before = ledger.store.size
    parts = bundle(group=2, author=1, value=1234)
    ledger.append([(ingest_event(parts), parts["run"].digest)])
    digest = parts["run"].digest
    assert queries.run_manifest(conn, ledger.store, digest) == parts["run"].manifest
    assert (
        queries.run_manifest(conn, ledger.store, digest, ledger.store.size) == parts["run"].manifest
    )
    # Not yet in the log then.
    assert queries.run_manifest(conn, ledger.store, digest, before) is None
    stored = conn.execute("SELECT count(*) FROM p_manifests WHERE digest = ?", (digest,))
    assert stored.fetchone()[0] == 0
    # The manifests it references are projected as before.
    workload = parts["workload"]
    assert queries.manifest(conn, workload.digest) == workload.manifest
    assert queries.manifest(conn, "sha256:" + "0" * 64) is None


def test_projections_of_another_format_are_rebuilt_when_the_ledger_opens(
    ledger: Ledger,
) -> None:
    """Projections written by an older version of the folds (here: format 1, which copied run
    manifests into p_manifests, and had no format row) are rebuilt from the log on open."""
    from projections.materialize import FORMAT
    from service.app.replay import replay

    parts = bundle(group=1, author=2, value=4321)
    ledger.append([(ingest_event(parts), parts["run"].digest)])
    conn = ledger.store.session
    assert not ledger.projections.stale()
    assert conn.execute("SELECT position FROM p_state WHERE projection = 'format'").fetchone() == (
        FORMAT,
    )

    def leave_old_projections() -> None:  # what the older folds left behind
        conn.execute("DELETE FROM p_state WHERE projection = 'format'")
        conn.execute(
            "INSERT OR IGNORE INTO p_manifests VALUES (?, 'BenchmarkRun', 'r', 1, '{}', NULL)",
            (parts["run"].digest,),
        )

    leave_old_projections()
    assert ledger.projections.stale()
    assert not replay(ledger).ok  # a replay names the difference (and keeps the rebuilt tables)
    leave_old_projections()
    data, clock = ledger.data.root, ledger.clock
    ledger.close()
    reopened = Ledger.open(data, clock=clock)  # opening the ledger rebuilds them
    try:
        conn = reopened.store.session
        assert not reopened.projections.stale()
        assert replay(reopened).ok
        rows = conn.execute(
            "SELECT count(*) FROM p_manifests WHERE digest = ?", (parts["run"].digest,)
        )
        assert rows.fetchone()[0] == 0
        assert (
            queries.run_manifest(conn, reopened.store, parts["run"].digest) == parts["run"].manifest
        )
    finally:
        reopened.close()
