"""A run's own manifest is kept once, in its run.ingested entry: ``queries.manifest`` reads it
there, as of any tree size; the projections copy only the manifests runs reference."""

from __future__ import annotations

from projections import queries
from service.ledger import Ledger
from tests.builders import bundle, ingest_event


def test_a_run_manifest_is_read_from_its_entry_as_of_any_size(ledger: Ledger) -> None:
    conn = ledger.store.connection
    before = ledger.store.size
    parts = bundle(group=2, author=1, value=1234)
    ledger.append([(ingest_event(parts), parts["run"].digest)])
    digest = parts["run"].digest
    assert queries.manifest(conn, digest) == parts["run"].manifest
    assert queries.manifest(conn, digest, ledger.store.size) == parts["run"].manifest
    assert queries.manifest(conn, digest, before) is None  # not yet in the log then
    stored = conn.execute("SELECT count(*) FROM p_manifests WHERE digest = ?", (digest,))
    assert stored.fetchone()[0] == 0
    # The manifests it references are projected as before.
    workload = parts["workload"]
    assert queries.manifest(conn, workload.digest) == workload.manifest
    assert queries.manifest(conn, "sha256:" + "0" * 64) is None
