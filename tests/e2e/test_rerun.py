"""Rerun: an operator asks for an index-controlled rerun of a run measured on this machine's
CPU; a rerunner's worker (``benchproof rerun-worker --once``, the shipped CPU harness) claims it
under a lease and posts the result; exactly one result lands."""

from __future__ import annotations

from tests.e2e import steps
from tests.e2e.deployment import Deployment


def test_request_claim_and_one_result(deployment: Deployment) -> None:
    token = deployment.token("e2e-operator")
    with deployment.serve() as server:
        run = steps.rerun(deployment, server, token)
        history = server.get(f"/v1/runs/{run}/history")["entries"]
        kinds = [kind for entry in history for kind in entry["kinds"]]
        assert [kinds.count(k) for k in ("rerun-request", "rerun-claim", "rerun-result")] == [
            1,
            1,
            1,
        ]
        size = server.size()
    assert deployment.state().size == size
