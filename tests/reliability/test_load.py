"""Issue 18, Deliver 1 (load): concurrent clients against a real ``benchproof serve`` on
loopback mix reads (dossiers, pages, log entries, proofs, the checkpoint, tiles) with every
write path (key registrations, attestations from many keys, withdrawals, hides, reports and
their resolutions, operator ingests, rerun requests, rerunner grants, claims and results, key
revocations by the key and by the operator: ``traffic.WRITE_KINDS``, each acknowledged at
least once while the clients run); afterwards every acknowledged write is in the log exactly
once, none is duplicated, nothing else was appended, no answer was a 5xx, and ``benchproof
verify`` and ``benchproof replay`` pass. Latency percentiles per route and throughput are
recorded.

FULL (``make reliability``): 32 clients for 60 s; FAST (``make test``): 6 clients for 3 s; both
against ``serve --workers 2``, the default here (one HTTP worker a core, one writer process)."""

from __future__ import annotations

import asyncio
import json
import sqlite3
from pathlib import Path

import httpx

from events.documents import Checked
from tests import builders
from tests.reliability.conftest import open_site
from tests.reliability.report import (
    record_note,
    record_server_errors,
    record_table,
    record_writes,
    scale,
)
from tests.reliability.traffic import WRITE_KINDS, Traffic, audit, checkpoint_covers, run_loop
from tests.servers import run_cli

CLIENTS = scale(6, 32)
SECONDS = scale(3.0, 60.0)
KEYS = scale(8, 64)
WORKERS = 2  # the default on this 2-core machine: the writes go through the writer process


def test_mixed_load_loses_nothing(tmp_path: Path) -> None:
    data = tmp_path / "data"
    with open_site(data, "--workers", WORKERS) as site:
        traffic = Traffic(site.token, seed=1801)
        since = traffic.setup(site.url, keys=KEYS)
        setup_writes = len(traffic.writes)
        elapsed = traffic.run(site.url, clients=CLIENTS, seconds=SECONDS)
    found = audit(data / "benchproof.db", traffic.writes, since)
    covered = checkpoint_covers(data / "benchproof.db")
    verify = run_cli("verify", "--data", data)
    replay = run_cli("replay", "--data", data)

    requests = traffic.requests()
    by_kind = traffic.acknowledged()
    under_load = traffic.acknowledged(setup_writes)
    record_writes(
        "load", attempted=found.attempted, acknowledged=found.acknowledged, found=found.found
    )
    record_server_errors("load", traffic.server_errors())
    record_table(
        f"Load: {CLIENTS} clients for {SECONDS:g} s, serve --workers {WORKERS}: latency (ms)",
        ["route", "requests", "p50", "p99", "p99.9", "max", "statuses"],
        traffic.latency_rows(),
    )
    record_note(
        "load",
        f"{requests} requests in {elapsed:.1f} s ({requests / elapsed:.0f}/s), "
        f"{found.acknowledged} acknowledged writes ({found.acknowledged / elapsed:.0f}/s: "
        + ", ".join(f"{n} {k}" for k, n in sorted(by_kind.items()))
        + f"), {traffic.client_failures()} without an answer; the log grew from {since} to "
        f"{since + found.entries} entries",
    )

    assert traffic.server_errors() == 0, traffic.latency_rows()
    assert not traffic.unexpected, traffic.unexpected[:10]
    # A request without an answer (timeout, reset) is no acknowledgement: its write is unknown,
    # and the audit holds it to "at most once". None may happen on loopback: a server that
    # stalls (as it did while an ingest read the writer's connection outside its transaction)
    # fails here.
    assert traffic.client_failures() == 0, traffic.latency_rows()
    assert not found.problems, found.problems[:10]
    assert found.found == found.acknowledged > 0
    assert covered is None, covered
    assert verify.returncode == 0, verify.stdout + verify.stderr
    assert replay.returncode == 0, replay.stdout + replay.stderr
    # Every write path was taken, and acknowledged, while the clients ran (not only in setup).
    missing = set(WRITE_KINDS) - set(under_load)
    assert not missing, f"no acknowledged {sorted(missing)} under load: {dict(under_load)}"


def test_concurrent_ingests_of_one_run_append_it_once(tmp_path: Path) -> None:
    """Operators importing overlapping files at the same moment: each of ``CLIENTS`` batches
    holds the same new run and one of its own; every run must be in the log exactly once (the
    log already holding a run means it is not ingested again), and every batch answered 200."""
    rounds = scale(2, 10)
    data = tmp_path / "data"
    acknowledged: set[str] = set()
    sent: set[str] = set()
    statuses: list[int] = []
    with open_site(data) as site:
        headers = {"authorization": f"Bearer {site.token}"}

        async def post(http: httpx.AsyncClient, batch: list[dict[str, Checked]]) -> None:
            body = json.dumps([{r: c.manifest for r, c in b.items()} for b in batch]).encode()
            digests = {b["run"].digest for b in batch}
            sent.update(digests)
            answer = await http.post(
                "/v1/ingest/manifest?filename=batch.json", content=body, headers=headers
            )
            statuses.append(answer.status_code)
            if answer.status_code == 200:
                acknowledged.update(digests)

        async def one_round(n: int) -> None:
            shared = builders.bundle(group=3, author=n, value=7000 + n, external=f"shared-{n}")
            async with httpx.AsyncClient(base_url=site.url, timeout=60) as http:
                await asyncio.gather(
                    *(
                        post(http, [shared, builders.bundle(group=4, author=i, value=9000 + n)])
                        for i in range(CLIENTS)
                    )
                )

        for n in range(rounds):
            run_loop(one_round(n))
    conn = sqlite3.connect(f"file:{data / 'benchproof.db'}?mode=ro", uri=True)
    try:
        counts = dict(
            conn.execute(
                "SELECT subject, count(*) FROM entries WHERE type LIKE 'run.ingested%'"
                " GROUP BY subject"
            ).fetchall()
        )
    finally:
        conn.close()
    once = {digest for digest in acknowledged if counts.get(digest) == 1}
    record_writes(
        "load: overlapping ingests at once (runs)",
        attempted=len(sent),
        acknowledged=len(acknowledged),
        found=len(once),
    )
    twice = {digest: n for digest, n in counts.items() if n > 1}
    assert statuses == [200] * (rounds * CLIENTS), statuses
    assert not twice, f"{len(twice)} runs were ingested more than once: {twice}"
    assert once == acknowledged == sent
