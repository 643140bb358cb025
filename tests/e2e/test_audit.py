"""Audit: on a log that went through ingest and attestation, ``benchproof verify`` and
``benchproof replay`` pass on the data directory, and ``benchproof audit --server URL`` passes
against the served log; they agree on its size and root."""

from __future__ import annotations

from tests.e2e import steps
from tests.e2e.deployment import Deployment, root_hex


def test_verify_replay_and_remote_audit_agree(deployment: Deployment) -> None:
    cli_slice, http_slice = steps.ingest_by_cli(deployment)
    with deployment.serve() as server:
        done = steps.ingest(deployment, server, cli_slice, http_slice)
        steps.attest_and_withdraw(deployment, server, done.seed)
        report = steps.audit(deployment, server)
        checkpoint = server.http.get("/v1/log/checkpoint").text.splitlines()
    state = deployment.state()
    assert state.size == report["treeSize"] == int(checkpoint[1])
    assert root_hex(str(report["root"])) == state.root == root_hex(checkpoint[2])
    assert {"p_runs", "p_groups", "p_attestations"} <= set(state.digests)
    assert deployment.state() == state  # a second replay rebuilds the same tables
