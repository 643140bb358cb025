"""Attest: a community key made with ``benchproof keygen`` registers itself with the served log
(challenge, proof of possession), attests a run, and withdraws it; the run's evidence level
does not move (attestations are shown and counted, never ranked: DESIGN §7)."""

from __future__ import annotations

from tests.corpora import shared_file
from tests.e2e import steps
from tests.e2e.deployment import Deployment


def test_register_attest_list_withdraw(deployment: Deployment) -> None:
    deployment.ok("ingest", "manifest", shared_file("seed-manifest.json"))
    with deployment.serve() as server:
        run = server.run(steps.SEED_ALIAS)["runDigest"]
        level = server.run(run)["evidenceLevel"]
        attestation = steps.attest_and_withdraw(deployment, server, run)
        dossier = server.run(run)
        assert dossier["evidenceLevel"] == level == "reported"
        history = server.get(f"/v1/runs/{run}/history")["entries"]
        kinds = [kind for entry in history for kind in entry["kinds"]]
        assert kinds.count("attestation") == 1 and kinds.count("withdrawal") == 1
        for entry in history:
            if {"attestation", "withdrawal"} & set(entry["kinds"]):
                assert "evidence" not in entry["kinds"], entry
        keys = {key["name"]: key for key in server.get("/v1/keys")["items"]}
        assert keys["e2e-attester"]["attestations"] == 1
        assert server.get(f"/v1/attestations/{attestation}")["attestation"]["runDigest"] == run
    deployment.state()  # verify and replay pass, the attester's signatures included
