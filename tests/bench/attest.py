"""Issue 13: signed attestations accepted over HTTP per second, each verified (envelope, key,
role, signature, schema, subject) and durably appended, with 16 concurrent clients (``wrk`` on
loopback, rate limits off; one server process, then one a core: ``serve --workers N``), against the raw one-core Ed25519 verify rate
measured in the same run; and the fsyncs per second it took (one per committed transaction:
the group commit shares one among the posts that arrive together).

Target: >= 0.3 x raw one-core verify."""

from __future__ import annotations

import json
import os
import shutil
import tempfile
from pathlib import Path

from events.entries import INTOTO_PAYLOAD_TYPE
from events.stores.sqlite import SqliteLog
from keys import SigningKey, encode_envelope, sign_envelope
from service.app.ingest import ingest
from service.commands.attest import statement
from service.core.init import init_data_dir
from tests.bench.common import line, record
from tests.bench.http import run_wrk
from tests.bench.log import raw_rates
from tests.builders import key_registration, signed_event
from tests.corpora import shared_file
from tests.servers import served

ROOT = Path(__file__).resolve().parents[2]
DURATION = int(os.environ.get("BENCH_HTTP_SECONDS", "5"))
CLIENTS = 16
BODIES = int(os.environ.get("BENCH_ATTEST_BODIES", "12000"))
# The server processes of the second configuration: the machine's cores (serve's default).
CORES = max(2, len(os.sched_getaffinity(0)))


def _bodies(run_digest: str, keys: list[SigningKey], n: int) -> list[bytes]:
    """``n`` distinct signed attestations about one run, from the keys in turn."""
    out = []
    for i in range(n):
        payload = statement(run_digest, {"kind": "environment-note", "note": f"bench note {i}"})
        key = keys[i % len(keys)]
        out.append(encode_envelope(sign_envelope(INTOTO_PAYLOAD_TYPE, payload, key)))
    return out


def _post_all(url: str, path: str, bodies: list[bytes], folder: Path) -> tuple[float, float]:
    """Post each body once, in turn, for the run's seconds; requests/s and p99 (ms)."""
    listing = folder / "bodies.lua"
    listing.write_text(
        "return {" + ",".join(json.dumps(b.decode()) for b in bodies) + "}\n", encoding="utf-8"
    )
    script = folder / "post.lua"
    script.write_text(
        f"local bodies = dofile({json.dumps(str(listing))})\nlocal i = 0\n"
        "wrk.method = 'POST'\nwrk.headers['Content-Type'] = 'application/json'\n"
        "request = function()\n  i = i + 1\n"
        f"  return wrk.format(nil, {json.dumps(path)}, nil, bodies[((i - 1) % #bodies) + 1])\nend\n"
    )
    return run_wrk(url, script, str(CLIENTS))


def _serve_and_post(
    data: Path, run_digest: str, bodies: list[bytes], folder: Path, workers: int
) -> tuple[int, int, float]:
    """Entries appended, checkpoints committed, and p99 (ms) while ``wrk`` posts ``bodies`` to
    ``benchproof serve --workers N`` for the run's seconds."""
    limits: tuple[str, ...] = ("--limit-key-hour", "0", "--limit-key-day", "0")
    limits += ("--limit-address-hour", "0", "--limit-address-day", "0")
    with served(data, "--workers", workers, *limits) as base:
        log = SqliteLog.open_readonly(data / "benchproof.db")
        before = log.refresh()
        checkpoints = len(list(log.checkpoints()))
        rps, p99 = _post_all(base, f"/v1/runs/{run_digest}/attestations", bodies, folder)
        appended = log.refresh() - before
        commits = len(list(log.checkpoints())) - checkpoints
        log.close()
    if appended < rps * DURATION * 0.9 or appended > len(bodies):
        raise RuntimeError(f"{appended} entries appended for {rps:.0f} posts/s")
    return appended, commits, p99


def main() -> None:
    if shutil.which("wrk") is None:
        print("attest (issue 13): skipped: wrk is not installed (apt-get install wrk)")
        return
    print(f"attest (issue 13): POST attestations, wrk -t1 -c{CLIENTS} -d{DURATION}s")
    keys = [SigningKey.generate() for _ in range(CLIENTS)]
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        data = Path(tmp) / "data"
        ledger, _ = init_data_dir(data)
        with ledger:
            ingest(ledger, "manifest", [shared_file("seed-manifest.json")])
            run_digest = ledger.store.session.execute(
                "SELECT run_digest FROM p_runs LIMIT 1"
            ).fetchone()[0]
            ledger.append_pending(
                [signed_event(key_registration(k, "community"), k.key_id, k) for k in keys]
            )
        bodies = _bodies(run_digest, keys, BODIES * 2)
        for workers, part in ((1, bodies[:BODIES]), (CORES, bodies[BODIES:])):
            rows.append((workers, *_serve_and_post(data, run_digest, part, Path(tmp), workers)))
    verify_rate = raw_rates(10000)[1]
    line("raw Ed25519 verify, one core (1 KiB)", verify_rate, "verify/s")
    record("raw_verify_per_s", verify_rate, "verify/s", "raw Ed25519 verify of 1 KiB, one core")
    for workers, appended, commits, p99 in rows:
        rate = appended / DURATION
        line(
            f"attestations accepted, {workers} server process{'es' if workers > 1 else ''}",
            rate,
            "/s",
            f"p99 {p99:.1f} ms",
        )
        line("  ratio to raw verify (target >= 0.3)", rate / verify_rate, "x")
        line("  fsyncs (committed transactions) per second", commits / DURATION, "/s")
        line("  attestations per commit", appended / max(commits, 1), "")
        if workers == CORES:
            about = (
                f"durable attestation posts over HTTP, {CLIENTS} clients, serve --workers {workers}"
            )
            record("attest_posts_per_s", rate, "/s", about)
            record(
                "attest_ratio_to_verify",
                rate / verify_rate,
                "x",
                about + ", over raw verify",
                raw_verify_per_s=round(verify_rate, 1),
            )
            record("attest_p99_ms", p99, "ms", about + ", p99 latency")
            record(
                "attest_per_commit", appended / max(commits, 1), "", about + ", posts per commit"
            )
