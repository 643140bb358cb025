"""Cite: ``benchproof cite --format receipt`` of a served run; the receipt verifies offline
(``benchproof verify-citation``, no server, no data directory) once the server is stopped, and a
tampered receipt is refused."""

from __future__ import annotations

from tests.corpora import shared_file
from tests.e2e import steps
from tests.e2e.deployment import Deployment


def test_receipt_verifies_offline_and_tampering_is_refused(deployment: Deployment) -> None:
    deployment.ok("ingest", "manifest", shared_file("seed-manifest.json"))
    with deployment.serve() as server:
        run = server.run(steps.SEED_ALIAS)["runDigest"]
        receipt, vkey = steps.cite(deployment, server, run)
    steps.check_receipt_offline(receipt, vkey, run)
