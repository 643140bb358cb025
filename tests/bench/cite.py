"""Issue 15: offline verifications of citation receipts per second on one core (parse, both
signatures, the inclusion proof, the run digest recomputed from the entry's manifest, the bytes
regenerated), against the raw one-core Ed25519 verify rate measured in the same run. A receipt
needs at least two verifies (the statement and the checkpoint note), so 0.5 x is the ceiling.
The issue names no target; the figure is reported against that ceiling."""

from __future__ import annotations

import tempfile
import time
from pathlib import Path

from keys.notekeys import parse_vkey
from service.app.cite import citation_receipt
from service.app.ingest import ingest
from service.core.init import init_data_dir
from tests.bench.common import line
from tests.bench.log import raw_rates
from tests.corpora import shared_file
from verifier.receipts import verify_receipt

ROUNDS = 2000


def main() -> None:
    print("cite (issue 15): offline receipt verification, one core")
    with tempfile.TemporaryDirectory() as tmp:
        ledger, _ = init_data_dir(Path(tmp) / "data")
        with ledger:
            ingest(ledger, "manifest", [shared_file("seed-manifest.json")])
            digest = ledger.store.session.execute("SELECT run_digest FROM p_runs").fetchone()[0]
            store = ledger.store
            receipt = citation_receipt(ledger, store.session, store, digest, base="https://b.x")
            key = parse_vkey(ledger.signers.vkey)
    verify_receipt(receipt, key)
    t0 = time.perf_counter()
    for _ in range(ROUNDS):
        verify_receipt(receipt, key)
    rate = ROUNDS / (time.perf_counter() - t0)
    verify_rate = raw_rates(10000)[1]
    line("receipt verifications (offline, one core)", rate, "/s", f"{len(receipt):,} bytes each")
    line("raw Ed25519 verify, one core (1 KiB)", verify_rate, "verify/s")
    line("  ratio to raw verify (ceiling 0.5)", rate / verify_rate, "x")
