"""Ingest: real corpus data by the command line (the seed manifest, a slice of Liger-Kernel's
CSV) and by an operator over HTTP; the runs read back, the comparison groups rank them, an
``asOf`` read answers the older state, and importing again appends nothing."""

from __future__ import annotations

import json
from collections import defaultdict

from tests.e2e import steps
from tests.e2e.deployment import Deployment


def test_ingest_read_back_as_of_and_again(deployment: Deployment) -> None:
    cli_slice, http_slice = steps.ingest_by_cli(deployment)
    with deployment.serve() as server:
        done = steps.ingest(deployment, server, cli_slice, http_slice)
        before = done.size_before_http

        seed = server.run(steps.SEED_ALIAS)
        assert seed["aliases"] == [steps.SEED_ALIAS] and seed["source"] == "sol-execbench"
        assert server.run(seed["shortId"])["runDigest"] == done.seed
        for run in done.cli_runs[:3] + done.http_runs[:3]:
            dossier = server.run(run)
            assert (dossier["runDigest"], dossier["source"]) == (run, "liger")

        # Groups whose members came both ways: the leaderboard now, and as it stood before
        # the operator's ingest.
        members: dict[str, set[str]] = defaultdict(set)
        for run in done.cli_runs + done.http_runs:
            members[server.run(run)["identity"]["comparisonKey"]].add(run)
        mixed = [
            key
            for key, runs in sorted(members.items())
            if runs & set(done.cli_runs) and runs & set(done.http_runs)
        ]
        assert mixed, "no comparison group got members both ways"
        for key in mixed[:3]:
            now = server.get(f"/v1/groups/{key}")
            ranked = [entry["run"]["runDigest"] for entry in now["runs"]]
            assert sorted(ranked) == sorted(members[key])
            assert [entry["rank"] for entry in now["runs"]] == list(range(1, len(ranked) + 1))
            assert now["group"]["members"] == len(ranked) and now["group"]["leader"] == ranked[0]
            old = server.get(f"/v1/groups/{key}?asOf={before}")
            earlier = [entry["run"]["runDigest"] for entry in old["runs"]]
            assert sorted(earlier) == sorted(members[key] & set(done.cli_runs))
            assert old["group"]["members"] == len(earlier) < len(ranked)
            shown = json.loads(deployment.ok("groups", "show", key, "--json"))
            assert [entry["runDigest"] for entry in shown["runs"]] == ranked
            assert shown["leader"] == ranked[0]

        http_run, cli_run = done.http_runs[0], done.cli_runs[0]
        server.get(f"/v1/runs/{http_run}?asOf={before}", status=404)
        assert server.get(f"/v1/runs/{cli_run}?asOf={before}")["asOf"] == before
        page = server.get(f"/v1/runs?source=liger&limit=1000&asOf={before}")
        assert sorted(item["runDigest"] for item in page["items"]) == sorted(done.cli_runs)

        listed = deployment.ok("runs", "list", "--source", "liger", "--json").splitlines()
        assert sorted(json.loads(line)["runDigest"] for line in listed) == sorted(
            done.cli_runs + done.http_runs
        )
        size = server.size()
    assert deployment.size() == size
