"""Issue 16: ``benchproof audit`` of a 100k-entry log over loopback, against a real ``benchproof
serve`` on the same machine: fetch and verify (the checkpoint, every tile and entry bundle, the
tree, every signature) as a ratio to the raw one-core Ed25519 verify rate measured in the same
run, first with the server serving (and gzipping) each bundle for the first time, then again
with its tile cache warm; the replay (every projection rebuilt from the fetched leaves) and the comparison of views
reported apart, per second.

Target: fetch and verify >= 1.0 x raw one-core verify (the verification runs on every core and
overlaps the fetch)."""

from __future__ import annotations

import os
import tempfile
from pathlib import Path

from events.types import ReportFiled
from keys.notekeys import parse_vkey
from service.app.audit import audit
from service.app.ingest import ingest
from service.core.init import init_data_dir
from tests.bench.common import line
from tests.bench.log import raw_rates
from tests.corpora import CATALOG, corpus
from tests.servers import served

N = int(os.environ.get("BENCH_AUDIT_ENTRIES", "100000"))
SAMPLE = 2000
BATCH = 5000


def _build(data: Path) -> int:
    ledger, _ = init_data_dir(data)
    with ledger:
        ingest(ledger, "kernelindex-catalog", [corpus(*CATALOG)])
        runs = [r[0] for r in ledger.store.session.execute("SELECT run_digest FROM p_runs")]
        size = ledger.store.size
        i = 0
        while size < N:
            n = min(BATCH, N - size)
            events = [
                (
                    ReportFiled(
                        runDigest=runs[(i + k) % len(runs)], category="bench", text=f"{i + k}"
                    ),
                    runs[(i + k) % len(runs)],
                )
                for k in range(n)
            ]
            ledger.append(events)
            i += n
            size = ledger.store.size
        return size


def main() -> None:
    print(f"audit (issue 16): {N:,} entries over loopback, one server process on this machine")
    with tempfile.TemporaryDirectory() as tmp:
        data = Path(tmp) / "data"
        size = _build(data)
        with served(data) as url:
            import httpx

            key = parse_vkey(httpx.get(url + "/v1/log/key").text.strip())
            verify_rate = raw_rates(10000)[1]
            report = audit(url, key, sample=SAMPLE, seed=1)
            # Again, the server's tile cache warm (its bundles gzipped already), the fast path.
            warm = audit(url, key, replay=False)
    assert report.ok and warm.ok, (report.failures + warm.failures)[:3]
    phases = {p.name: p for p in report.phases}
    fetch = phases["fetch and verify"]
    line("log size", size, "entries")
    line(
        "fetch and verify (tiles, tree, every signature)",
        fetch.rate,
        "entries/s",
        f"{fetch.seconds:.1f} s",
    )
    line("raw Ed25519 verify, one core (1 KiB)", verify_rate, "verify/s")
    line("  ratio to raw verify (target >= 1.0)", fetch.rate / verify_rate, "x")
    again = warm.phases[0]
    line(
        "the same, the server's tile cache warm (--no-replay)",
        again.rate,
        "entries/s",
        f"{again.seconds:.1f} s",
    )
    line("  ratio to raw verify", again.rate / verify_rate, "x")
    replay = phases["replay"]
    line(
        "replay into a scratch store (every projection)",
        replay.rate,
        "entries/s",
        f"{replay.seconds:.1f} s",
    )
    views = phases["compare views"]
    line(
        f"compare views (a sample of {SAMPLE:,} runs)",
        views.rate,
        "runs/s",
        f"{views.seconds:.1f} s",
    )
