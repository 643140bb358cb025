"""Issue 5: replay (rebuild all projections, no signature checks) entries/s at 100k entries,
and ``runs show`` latency p50/p99 in-process at 100k and 1M runs (flat with size).

Targets: replay >= 30,000 entries/s; lookup p99 <= 1 ms at 1M runs."""

from __future__ import annotations

import os
import random
import shutil
import sqlite3
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path

from events.entries import StoredEntry
from events.stores.sqlite import SqliteLog
from events.types import RunIngested
from projections import queries
from projections.materialize import Materializer
from service.readmodel.dossier import build_dossier
from tests.bench.common import line, percentiles
from tests.builders import bundle, ingest_event

REPLAY_N = int(os.environ.get("BENCH_REPLAY_ENTRIES", "100000"))
LOOKUP_SIZES = [int(x) for x in os.environ.get("BENCH_LOOKUP_SIZES", "100000,1000000").split(",")]


def _events(n: int, seed: int = 5, start: int = 0) -> list[StoredEntry]:
    """``n`` synthetic run.ingested entries over ~n/50 comparison groups, as a log holds them."""
    rng = random.Random(seed)
    templates = [bundle(group=g, author=0, value=1000) for g in range(64)]
    out = []
    for seq in range(start, start + n):
        parts = templates[rng.randrange(len(templates))]
        run = parts["run"].manifest
        spec = dict(run["spec"])
        value = rng.randrange(1, 1_000_000)
        spec["timing"] = {"primaryStatistic": "median", "latencyNs": {"median": value}}
        spec["observedAt"] = f"2026-{1 + seq % 12:02d}-{1 + seq % 28:02d}T00:00:{seq % 60:02d}Z"
        spec["sourceNative"] = {"source": "synthetic", "externalId": f"run-{seq}"}
        digest = f"sha256:{seq:064x}"
        manifests = {role: c.manifest for role, c in parts.items()}
        manifests["run"] = {**run, "spec": spec}
        base = ingest_event(parts)
        event = RunIngested(
            runDigest=digest,
            kind="BenchmarkRun",
            manifests=manifests,
            origin=base.origin,
            aliases=[f"synthetic:run-{seq}"],
        )
        out.append(
            StoredEntry(
                seq,
                "2026-11-30T00:00:00.000Z",
                "run.ingested.v1",
                digest,
                "application/vnd.benchproof.event+json",
                b"",
                f"sha256:{seq:064x}",
                "k",
                event,
            )
        )
    return out


def _db(path: Path) -> sqlite3.Connection:
    SqliteLog.open(path, origin="bench/log", create=True).close()  # the log's tables (empty)
    from events.stores.sqlite_schema import connect

    return connect(path)


def replay_bench() -> None:
    """A real log of REPLAY_N signed run.ingested entries, rebuilt as ``benchproof replay``
    rebuilds it: from the leaf bytes (decode leaf, payload and event), every projection folded
    into fresh scratch databases, on every core (``projections.shards``). Side by side: the
    same rebuild in one process, and the whole ``replay`` (rebuild, then compare every table
    with the live one)."""
    from service.app.replay import replay
    from service.core.init import init_data_dir
    from service.core.ledger import pending_of

    with tempfile.TemporaryDirectory() as tmp:
        ledger, _ = init_data_dir(Path(tmp) / "d")
        with ledger:
            for start in range(0, REPLAY_N, 10_000):
                chunk = _events(min(10_000, REPLAY_N - start), seed=start, start=start)
                ledger.append_pending([pending_of(e.decoded, e.subject) for e in chunk])  # type: ignore[arg-type]
            size = ledger.store.size
            rates: dict[str, list[float]] = {"parallel": [], "serial": []}
            for i in range(2):
                for mode, samples in rates.items():
                    scratch = Path(tmp) / f"{mode}-{i}"
                    scratch.mkdir()
                    t0 = time.perf_counter()
                    rebuilt, _ = ledger.rebuild_scratch(size, scratch, parallel=mode == "parallel")
                    samples.append(size / (time.perf_counter() - t0))
                    rebuilt.close()
                    shutil.rmtree(scratch)
            t0 = time.perf_counter()
            report = replay(ledger)
            whole = time.perf_counter() - t0
            assert report.ok, report.differences
    best = {mode: max(samples) for mode, samples in rates.items()}
    line(
        f"replay of {size:,} entries: rebuild on every core, best of 2 (target >= 30,000)",
        best["parallel"],
        "entries/s",
    )
    line("  the same rebuild in one process", best["serial"], "entries/s")
    line("  ratio every core / one process", best["parallel"] / best["serial"], "x")
    line("  whole replay (rebuild + compare every table)", size / whole, "entries/s")


def lookup_bench(n: int) -> tuple[float, float]:
    with tempfile.TemporaryDirectory() as tmp:
        conn = _db(Path(tmp) / "l.db")
        m = Materializer(conn)
        step = 20_000

        def stream() -> Iterator[StoredEntry]:
            for start in range(0, n, step):
                yield from _events(min(step, n - start), seed=start, start=start)

        conn.execute("BEGIN")
        m.rebuild(stream())
        conn.execute("COMMIT")
        # As a served database is: the log store's checkpointer thread copies the WAL into the
        # database file as it grows. Reads through a WAL of a whole 1M-run build (several GB)
        # are what this would otherwise measure.
        conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
        log = SqliteLog.open_readonly(Path(tmp) / "l.db")  # the dossier reads the log too
        rng = random.Random(1)
        refs = [f"synthetic:run-{rng.randrange(n)}" for _ in range(3000)]
        samples = []
        standings: queries.StandingsCache = {}
        for ref in refs:
            t0 = time.perf_counter()
            digest = queries.resolve_run(conn, ref)
            build_dossier(conn, log, digest, None, size=n, standings=standings)
            samples.append(time.perf_counter() - t0)
        p50, p99 = percentiles(samples[200:], 50, 99)
        log.close()
        conn.close()
    return p50 * 1000, p99 * 1000


def main() -> None:
    print("projections (issue 5)")
    replay_bench()
    results = {}
    for n in LOOKUP_SIZES:
        p50, p99 = lookup_bench(n)
        results[n] = p99
        line(f"runs show (resolve + dossier) at {n:,} runs: p50", p50, "ms")
        line(f"runs show (resolve + dossier) at {n:,} runs: p99 (target <= 1 ms)", p99, "ms")
    if len(results) > 1:
        small, big = min(results), max(results)
        line(
            f"  p99 ratio {big:,} / {small:,} runs (flat = 1.0)", results[big] / results[small], "x"
        )
