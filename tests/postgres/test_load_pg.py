"""Issue 19: four API processes on one PostgreSQL store, under the reliability suite's load.

- Two ``benchproof serve --workers 2`` servers (issue 27: each two HTTP workers and a writer
  process of its own: two writers on one store, taking turns on its advisory lock) over ONE
  data directory, initialised with
  ``init --store`` on a fresh PostgreSQL schema (the processes find the store there and share
  its key files), take the write mix of ``tests/reliability/test_load.py`` from clients that
  send their operations round-robin over both (``loadpg.SpreadTraffic``): every key
  registration is sent to another process than the one that issued its challenge, and claims
  of a request whose lease another rerunner holds are sent to another process than the
  holder's and must be refused. Afterwards, read from the PostgreSQL store: every acknowledged
  write is in the log exactly once, none refused is there, nothing else was appended, no answer
  was a 5xx, the latest checkpoint covers every entry, and ``benchproof verify`` and
  ``benchproof replay`` pass (they too read the store the data directory recorded).
- Rate limits live in the store: two processes count the same client address and the same
  signing key together.

FAST (``make test-postgres``): 8 clients for 4 s; FULL (``BENCHPROOF_RELIABILITY=full``): 32
clients for 60 s.
"""

from __future__ import annotations

import itertools
from pathlib import Path
from typing import Any

import httpx
import psycopg

from events.entries import INTOTO_PAYLOAD_TYPE
from keys import SigningKey, encode_envelope, sign_envelope
from service.commands.attest import statement
from tests.postgres.loadpg import SpreadTraffic, prepare_pg, serve_errors, serving, store_copy
from tests.reliability.report import record_note, record_server_errors, record_writes, scale
from tests.reliability.traffic import WRITE_KINDS, audit, checkpoint_covers, register_key
from tests.servers import run_cli

PROCESSES = 2  # servers, each of WORKERS HTTP processes and one writer
WORKERS = 2
CLIENTS = scale(8, 32)
SECONDS = scale(4.0, 60.0)
KEYS = scale(8, 64)


def test_four_processes_on_one_store_lose_nothing(tmp_path: Path, pg_url: str) -> None:
    data = tmp_path / "data"
    token = prepare_pg(data, pg_url)
    traffic = SpreadTraffic(token, seed=1901)
    with serving(data, PROCESSES, "--workers", WORKERS, logs=tmp_path) as servers:
        urls = [server.url for server in servers]
        since = traffic.setup_spread(urls, keys=KEYS, rerunners=2)
        setup_writes = len(traffic.writes)
        elapsed = traffic.run_spread(urls, clients=CLIENTS, seconds=SECONDS)
    found = audit(store_copy(pg_url, tmp_path / "audit.db"), traffic.writes, since)
    covered = checkpoint_covers(tmp_path / "audit.db")
    verify = run_cli("verify", "--data", data)
    replay = run_cli("replay", "--data", data)
    errors = serve_errors(tmp_path)

    under_load = traffic.acknowledged(setup_writes)
    record_writes(
        "postgres: four processes",
        attempted=found.attempted,
        acknowledged=found.acknowledged,
        found=found.found,
    )
    record_server_errors("postgres: four processes", traffic.server_errors())
    summary = (
        f"{PROCESSES} processes, {CLIENTS} clients for {elapsed:.1f} s: {traffic.figures()}; "
        f"audit: {found.attempted} attempted, {found.acknowledged} acknowledged, {found.found} "
        f"found once, {found.unknown} unknown ({found.unknown_landed} landed); the log grew "
        f"from {since} to {since + found.entries} entries"
    )
    record_note("postgres", summary)
    print(f"\nload on PostgreSQL: {summary}")

    assert traffic.server_errors() == 0, f"{traffic.latency_rows()}\n{errors}"
    assert not errors, errors
    assert not traffic.unexpected, traffic.unexpected[:10]
    assert traffic.client_failures() == 0, traffic.latency_rows()
    assert not found.problems, found.problems[:10]
    assert found.found == found.acknowledged > 0
    assert covered is None, covered
    assert verify.returncode == 0, verify.stdout[-2000:] + verify.stderr[-2000:]
    assert replay.returncode == 0, replay.stdout[-2000:] + replay.stderr[-2000:]
    missing = set(WRITE_KINDS) - set(under_load)
    assert not missing, f"no acknowledged {sorted(missing)} under load: {dict(under_load)}"
    # Every process took writes; every registration was acknowledged by another process than
    # the one that issued its challenge; every contested claim was refused for the lease.
    assert set(traffic.acked_per_server) == set(urls), traffic.acked_per_server
    assert traffic.crossed == traffic.acknowledged()["registration"] > 0
    assert traffic.contests and not traffic.contest_problems, traffic.contest_problems[:5]
    assert set(traffic.contests) == {409}, traffic.contests
    # Nothing of the log, the challenges or the limits went to a SQLite file in the data dir.
    assert not sorted(data.glob("*.db*")), sorted(data.glob("*.db*"))


def _post(url: str, path: str, body: bytes, address: str) -> httpx.Response:
    headers = {"content-type": "application/json", "x-forwarded-for": address}
    return httpx.post(url + path, content=body, headers=headers, timeout=30)


def _stored_counts(url: str) -> dict[str, int]:
    with psycopg.connect(url) as conn:
        rows = conn.execute("SELECT scope, sum(count) FROM rate_limits GROUP BY scope").fetchall()
    return {str(scope): int(n) for scope, n in rows}


def test_rate_limits_hold_across_processes(tmp_path: Path, pg_url: str) -> None:
    """Two processes count together: per client address (named by ``X-Forwarded-For`` from a
    trusted proxy, so that each part of the test has addresses of its own) and per key."""
    data = tmp_path / "data"
    prepare_pg(data, pg_url)
    limits = ("--limit-address-hour", 4, "--limit-key-hour", 2, "--trusted-proxy", "127.0.0.1")
    statuses: dict[str, list[int]] = {}
    retry: list[str] = []
    with serving(data, 2, *limits, logs=tmp_path) as servers:
        a, b = (server.url for server in servers)
        run = httpx.get(f"{a}/v1/runs/sol-execbench:165", timeout=30).json()["runDigest"]
        before = int(httpx.get(f"{a}/healthz", timeout=30).json()["treeSize"])

        # One address, reports alternately on A and B: four are allowed in all, not per process.
        reports = []
        for n, url in zip(range(6), itertools.cycle((a, b)), strict=False):
            body = f'{{"reason": "other", "text": "shared limit {n}"}}'.encode()
            answer = _post(url, f"/v1/runs/{run}/reports", body, "203.0.113.7")
            reports.append(answer.status_code)
            if answer.status_code == 429:
                retry.append(answer.headers.get("retry-after", ""))
        statuses["reports (one address)"] = reports

        # One key (a fresh address for every request): its registration on A and B, then
        # attestations alternately on A and B; the key's two writes are spent across both.
        key = SigningKey.generate()
        register_key(a, key, "limited")  # from 127.0.0.1 itself: the proxy names no one
        attests = []
        for n, url in zip(range(4), itertools.cycle((b, a)), strict=False):
            predicate: dict[str, Any] = {"kind": "environment-note", "note": f"limit {n}"}
            envelope = sign_envelope(INTOTO_PAYLOAD_TYPE, statement(run, predicate), key)
            answer = _post(
                url, f"/v1/runs/{run}/attestations", encode_envelope(envelope), f"198.51.100.{n}"
            )
            attests.append(answer.status_code)
        statuses["attestations (one key)"] = attests
        after = int(httpx.get(f"{b}/healthz", timeout=30).json()["treeSize"])
    counts = _stored_counts(pg_url)
    print(f"\nrate limits across two processes: {statuses}; counts in the store: {counts}")

    assert statuses["reports (one address)"] == [201] * 4 + [429] * 2, statuses
    assert all(int(r) > 0 for r in retry), retry
    # The registration is the key's first write this hour; one attestation is left to it.
    assert statuses["attestations (one key)"] == [201, 429, 429, 429], statuses
    assert after == before + 4 + 1 + 1  # four reports, the registration, one attestation
    assert counts.get("key") == 2, counts
    assert not sorted(data.glob("*.db*")), sorted(data.glob("*.db*"))
    assert not serve_errors(tmp_path)
