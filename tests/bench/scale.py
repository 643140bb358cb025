"""Issue 28: reads, replay, verify and memory as the index grows, on catalog-shaped logs of
10k, 100k and (``BENCH_SCALE_SIZES``) 1M runs built from ``tests.bench.corpus``.

One log grows through the sizes: the corpus is written once at the largest size in exports of
10,000 runs, by a process of its own, and ingested export after export as each is complete
(``benchproof ingest``, one process each, while the generator writes the next: the two share
the cores, so the ingest figures here are lower than the ingest section's); at each size the
log stops growing and is measured, the generator stopped (SIGSTOP) while it is:

- ``search_p99_ms_<size>``: the search, ``GET /v1/runs?q=TERM`` in the default order and the home
  page ``/?q=TERM``, one request at a time against ``serve --workers 1``, each term asked once
  (no answer cache helps): the p99 over both;
- ``lookup_p99_ms_<size>``: ``runs show`` of a catalog run (``service.app.runs.show_run``, as the
  CLI calls it, in process: what the command costs apart from starting Python);
- ``replay_entries_per_s_<size>``: ``benchproof replay`` (rebuild every projection and compare),
  whole, in its own process;
- ``verify_entries_per_s_<size>``: ``benchproof verify``; at the largest size also
  ``verify_ratio_to_verify``, over the raw one-core Ed25519 verify rate of this run;
- ``peak_rss_mb_<size>``: the largest peak RSS of the ingest (any export), verify, replay and
  ``benchproof audit`` (against the served log: fetch and verify everything, replay, compare a
  sample of 200 runs' views) processes up to that size, each named apart;
- ``db_bytes_per_run`` (and ``_<size>``): the SQLite file (with its WAL) over the runs.
"""

from __future__ import annotations

import contextlib
import json
import multiprocessing
import os
import signal
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path

import httpx

from tests.bench.common import line, percentiles, record
from tests.bench.corpus import SHARD_RUNS, Template, generate, shard_path, shards_of
from tests.bench.log import raw_rates
from tests.servers import served

SIZES = [int(s) for s in os.environ.get("BENCH_SCALE_SIZES", "10000,100000").split(",") if s]
SEARCHES = int(os.environ.get("BENCH_SCALE_SEARCHES", "60"))
LOOKUPS = 300
ROOT = Path(__file__).resolve().parents[2]


def suffix(size: int) -> str:
    """``_10k``, ``_100k``, ``_1m``: the size a figure was measured at, in its name."""
    if size >= 1_000_000 and size % 1_000_000 == 0:
        return f"_{size // 1_000_000}m"
    if size % 1000 == 0:
        return f"_{size // 1000}k"
    return f"_{size}"


_MEASURED = (
    "import resource, subprocess, sys, time\n"
    "t = time.perf_counter()\n"
    "done = subprocess.run(sys.argv[1:], stdout=subprocess.PIPE, stderr=subprocess.PIPE)\n"
    "took = time.perf_counter() - t\n"
    "rss = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss\n"
    "sys.stderr.write(done.stderr.decode(errors='replace')[-2000:])\n"
    "print(done.returncode, took, rss)\n"
    "sys.stdout.write(done.stdout.decode(errors='replace'))\n"
)


def measured(*command: object) -> tuple[float, float, str]:
    """Run ``benchproof COMMAND...`` in a process of its own; its seconds, its peak RSS (MB,
    that process alone) and its standard output.

    Raises:
        RuntimeError: the command failed.
    """
    argv = [str(Path(sys.executable).with_name("benchproof")), *map(str, command)]
    done = subprocess.run(
        [sys.executable, "-c", _MEASURED, *argv], capture_output=True, text=True, check=False
    )
    head, _, out = done.stdout.partition("\n")
    code, took, rss = head.split()
    if int(code) != 0:
        raise RuntimeError(f"benchproof {' '.join(map(str, command[:2]))} failed: {done.stderr}")
    return float(took), int(rss) / 1024, out


def _terms(template: Template) -> list[str]:
    """Search terms a user types: benchmark and operation names of the catalog, shortened."""
    names: set[str] = set()
    for row in template.tables["benchmark_runs"]:
        native = row["manifest"]["run"]["spec"].get("sourceNative") or {}
        if native.get("benchmark"):
            names.add(str(native["benchmark"]).split("_")[0][:12].lower())
    return sorted(n for n in names if len(n) >= 3)


def _search(base: str, terms: list[str]) -> list[float]:
    samples: list[float] = []
    with httpx.Client(base_url=base, timeout=120) as client:
        client.get("/v1/runs", params={"q": "warm"}).raise_for_status()
        for i, term in enumerate(terms[:SEARCHES]):
            for path in ("/v1/runs", "/"):
                t0 = time.perf_counter()
                client.get(path, params={"q": term, "n": i}).raise_for_status()
                samples.append((time.perf_counter() - t0) * 1000)
    return samples


def _lookups(data: Path) -> list[float]:
    from events.stores.sqlite import SqliteLog
    from service.app.runs import show_run

    log = SqliteLog.open_readonly(data / "benchproof.db")
    try:
        conn = log.session
        digests = [
            r[0]
            for r in conn.execute(
                "SELECT run_digest FROM p_runs WHERE valid_to IS NULL ORDER BY run_digest LIMIT ?",
                (LOOKUPS,),
            )
        ]
        samples = []
        for digest in digests:
            t0 = time.perf_counter()
            show_run(conn, log, digest, None, size=log.size)
            samples.append((time.perf_counter() - t0) * 1000)
        return samples
    finally:
        log.close()


def _db_bytes(data: Path) -> int:
    return sum(p.stat().st_size for p in data.glob("benchproof.db*") if p.is_file())


def _write_corpus(out: Path, runs: int) -> None:
    generate(out, runs, shard_runs=SHARD_RUNS)


def _export(path: Path, writer: multiprocessing.process.BaseProcess) -> Path:
    """``path`` once the generator has written it whole (it renames a complete export there).

    Raises:
        RuntimeError: the generator ended without writing it.
    """
    while not path.exists():
        if not writer.is_alive() and not path.exists():
            raise RuntimeError(f"the corpus generator exited ({writer.exitcode}) before {path}")
        time.sleep(0.2)
    return path


@contextlib.contextmanager
def _paused(writer: multiprocessing.process.BaseProcess) -> Iterator[None]:
    """The corpus generator stopped for the block (a measurement has the cores to itself)."""
    running = writer.is_alive() and writer.pid is not None
    if running:
        os.kill(writer.pid, signal.SIGSTOP)  # type: ignore[arg-type]
    try:
        yield
    finally:
        if running:
            os.kill(writer.pid, signal.SIGCONT)  # type: ignore[arg-type]


def main() -> None:
    largest = max(SIZES)
    print(f"scale (issue 28): catalog-shaped logs of {', '.join(f'{s:,}' for s in SIZES)} runs")
    terms = _terms(Template())
    verify_rate = raw_rates(10000)[1]
    with tempfile.TemporaryDirectory() as tmp:
        corpus_dir, data = Path(tmp) / "corpus", Path(tmp) / "data"
        t0 = time.perf_counter()
        writer = multiprocessing.get_context("spawn").Process(
            target=_write_corpus, args=(corpus_dir, largest), daemon=True
        )
        writer.start()
        try:
            measured("init", "--data", data)
            runs, ingest_seconds, ingest_rss = 0, 0.0, 0.0
            for size in SIZES:
                while runs < size:
                    export = _export(shard_path(corpus_dir, runs // SHARD_RUNS), writer)
                    took, rss, _ = measured("ingest", "kernelindex-catalog", export, "--data", data)
                    export.unlink()  # ingested: the disk holds the log, not the corpus too
                    ingest_seconds += took
                    ingest_rss = max(ingest_rss, rss)
                    runs += SHARD_RUNS
                if runs // SHARD_RUNS == shards_of(largest):
                    writer.join()
                    line(
                        f"corpus of {largest:,} runs written and ingested",
                        time.perf_counter() - t0,
                        "s",
                        "measurements at smaller sizes included",
                    )
                with _paused(writer):
                    _measure(
                        size, data, terms, ingest_seconds, ingest_rss, verify_rate, size == largest
                    )
        finally:
            if writer.is_alive():
                writer.terminate()
            writer.join()


def _measure(
    size: int,
    data: Path,
    terms: list[str],
    ingest_seconds: float,
    ingest_rss: float,
    verify_rate: float,
    largest: bool,
) -> None:
    tag = suffix(size)
    print(f"  -- {size:,} runs")
    line(
        "  ingest, export after export",
        size / ingest_seconds,
        "runs/s",
        f"peak RSS {ingest_rss:.0f} MB",
    )
    record(
        f"ingest_runs_per_s{tag}",
        size / ingest_seconds,
        "runs/s",
        f"catalog-shaped exports of 10,000 runs ingested one after another up to {size:,} runs (benchproof ingest, a process each)",
    )
    took, verify_rss, out = measured("verify", "--data", data, "--json")
    entries = json.loads(out)["entries"]
    line("  verify", entries / took, "entries/s", f"{took:.1f} s, peak RSS {verify_rss:.0f} MB")
    record(
        f"verify_entries_per_s{tag}",
        entries / took,
        "entries/s",
        f"benchproof verify of the {size:,}-run log, whole, in its own process",
    )
    if largest:
        record(
            "verify_ratio_to_verify",
            entries / took / verify_rate,
            "x",
            f"benchproof verify of the {size:,}-run log over raw one-core Ed25519 verify",
            raw_verify_per_s=round(verify_rate, 1),
            size=size,
        )
    took, replay_rss, out = measured("replay", "--data", data, "--json")
    assert json.loads(out)["ok"], out[:500]
    line(
        "  replay (rebuild and compare)",
        entries / took,
        "entries/s",
        f"{took:.1f} s, peak RSS {replay_rss:.0f} MB",
    )
    record(
        f"replay_entries_per_s{tag}",
        entries / took,
        "entries/s",
        f"benchproof replay (every projection rebuilt, then compared) of the {size:,}-run log, whole, in its own process",
    )
    lookups = _lookups(data)
    (p50, p99) = percentiles(lookups, 50, 99)
    line("  runs show of a catalog run", p99, "ms p99", f"p50 {p50:.2f} ms")
    record(
        f"lookup_p99_ms{tag}",
        p99,
        "ms",
        f"runs show of {len(lookups)} runs (show_run in process), p99, at {size:,} runs",
        p50_ms=round(p50, 3),
    )
    with served(data, "--workers", 1) as base:
        searches = _search(base, terms)
        key = httpx.get(base + "/v1/log/key").text.strip()
        key_file = data.parent / "log.vkey"
        key_file.write_text(key + "\n")
        took, audit_rss, _ = measured(
            "audit",
            "--server",
            base,
            "--log-key",
            key_file,
            "--sample",
            200,
            "--seed",
            1,
            "--json",
        )
    (s50, s99) = percentiles(searches, 50, 99)
    line(
        "  search: GET /v1/runs?q= and /?q=",
        s99,
        "ms p99",
        f"p50 {s50:.1f} ms, {len(searches)} requests",
    )
    record(
        f"search_p99_ms{tag}",
        s99,
        "ms",
        f"GET /v1/runs?q=TERM (default order) and /?q=TERM, one request at a time, each term once, p99, at {size:,} runs",
        p50_ms=round(s50, 2),
    )
    line(
        "  audit (fetch, verify, replay, compare)",
        entries / took,
        "entries/s",
        f"{took:.1f} s, peak RSS {audit_rss:.0f} MB",
    )
    peak = max(ingest_rss, verify_rss, replay_rss, audit_rss)
    record(
        f"peak_rss_mb{tag}",
        peak,
        "MB",
        f"the largest peak RSS of ingest, verify, replay and audit at {size:,} runs",
        ingest_mb=round(ingest_rss),
        verify_mb=round(verify_rss),
        replay_mb=round(replay_rss),
        audit_mb=round(audit_rss),
    )
    per_run = _db_bytes(data) / size
    line("  database bytes per run", per_run, "B")
    record(
        f"db_bytes_per_run{tag}",
        per_run,
        "B",
        f"the SQLite database (with its WAL) over the runs, at {size:,} runs",
    )
    record(
        "db_bytes_per_run",
        per_run,
        "B",
        f"the SQLite database (with its WAL) over the runs, at {size:,} runs (the largest size of this run)",
    )


if __name__ == "__main__":
    main()
