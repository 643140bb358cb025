"""Issue 19: the log on PostgreSQL beside SQLite, in the same run: the catalog ingest, durable
attestation posts over HTTP, the full verify and ``runs show`` lookups, each as a ratio of
PostgreSQL's rate to SQLite's.

PostgreSQL runs in a throwaway cluster on loopback (``tests.pgcluster.cluster``: ``fsync`` and
``synchronous_commit`` on, as in production), on the same machine as the bench and the servers.
Both stores get the same data. Each ingests the whole KernelIndex catalog (what the ``ingest``
section ingests) into a fresh log; the last SQLite log is then copied to PostgreSQL by
``benchproof migrate-store``, so that the full verify, the ``runs show`` lookups (the same 300
short ids) and the attestation posts (the same client keys, the same signed attestations) work
on the very same entries on both. Each measurement is taken in rounds that alternate which store goes first, so a drift of the
shared VM's speed falls on both; the medians of the rounds are reported.

The section is skipped, with a line saying why, when no cluster can be started; the
attestation posts are skipped when ``wrk`` is not installed. No target: the issue asks for
the figures."""

from __future__ import annotations

import contextlib
import os
import shutil
import statistics
import tempfile
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path

import httpx
import msgspec
import psycopg

from events.stores import open_reader
from keys import SigningKey
from service.app.ingest import commit_plan
from service.app.runs import show_run
from service.app.verify import verify
from service.core.config import DataDir
from service.core.init import init_data_dir
from service.core.ledger import Ledger
from service.ingest.api import plan_import
from service.readmodel.asof import resolve_as_of
from service.readmodel.dossier import short_id
from tests.bench.attest import CLIENTS, CORES, DURATION, _bodies, _post_all
from tests.bench.common import record
from tests.builders import key_registration, signed_event
from tests.corpora import CATALOG, corpus
from tests.pgcluster import ClusterError, cluster
from tests.servers import run_cli, served
from tests.stores import fresh_pg_url

ROUNDS = int(os.environ.get("BENCH_STORES_ROUNDS", "3"))
# Distinct attestations for each round (the same on both stores): more than a store accepts in
# the run's seconds, as each is posted once.
ATTEST_BODIES = int(os.environ.get("BENCH_STORES_ATTEST_BODIES", "12000"))
LOOKUPS = int(os.environ.get("BENCH_STORES_LOOKUPS", "300"))
WARM_POSTS = 4 * CLIENTS
STORES = ("sqlite", "postgresql")
NO_LIMITS = (
    *("--limit-key-hour", "0", "--limit-key-day", "0"),
    *("--limit-address-hour", "0", "--limit-address-day", "0"),
)


@dataclass
class Metric:
    """One row of the table: a rate per round on each store, and its unit."""

    name: str
    unit: str
    rounds: dict[str, list[float]] = field(default_factory=lambda: {s: [] for s in STORES})

    def median(self, store: str) -> float:
        return statistics.median(self.rounds[store])

    def ratios(self) -> list[float]:
        """PostgreSQL's rate over SQLite's, round by round."""
        return [
            pg / lite
            for lite, pg in zip(self.rounds["sqlite"], self.rounds["postgresql"], strict=True)
        ]


def _in_turn(round_: int) -> tuple[str, ...]:
    """The stores in the order of one round: SQLite first in even rounds, PostgreSQL in odd."""
    return STORES if round_ % 2 == 0 else STORES[::-1]


def _new_data_dir(folder: Path, store: str, base: str) -> Ledger:
    """A fresh data directory in ``folder`` whose log is kept on ``store`` (a new schema of
    the cluster ``base`` for PostgreSQL), open."""
    url = fresh_pg_url(base) if store == "postgresql" else None
    ledger, _ = init_data_dir(folder, store=url)
    return ledger


def _ingest(folder: Path, store: str, base: str) -> tuple[float, float, int]:
    """Ingest the whole catalog into a fresh data directory on ``store``, in process as
    ``benchproof ingest`` does it (``tests.bench.ingest``); end to end runs/s, sign + append +
    projections runs/s, and the runs appended."""
    catalog = corpus(*CATALOG)
    with _new_data_dir(folder, store, base) as ledger:
        t0 = time.perf_counter()
        plan = plan_import("kernelindex-catalog", [catalog])
        t1 = time.perf_counter()
        result = commit_plan(ledger, plan)
        t2 = time.perf_counter()
    runs = result.runs_appended
    return runs / (t2 - t0), runs / (t2 - t1), runs


def _copy_to_postgres(source: Path, folder: Path, base: str) -> Path:
    """A data directory ``folder`` whose log is a copy of the SQLite log of ``source`` in a
    new schema of the cluster ``base`` (``benchproof migrate-store``), with ``source``'s keys;
    its path. Prints what the copy took."""
    url = fresh_pg_url(base)
    t0 = time.perf_counter()
    done = run_cli("migrate-store", DataDir(source).store, url, "--json")
    seconds = time.perf_counter() - t0
    if done.returncode != 0:
        raise RuntimeError(f"migrate-store failed ({done.returncode}): {done.stderr[-2000:]}")
    size = msgspec.json.decode(done.stdout)["size"]
    print(
        f"  the same log on both: `benchproof migrate-store` copied {size:,} entries to"
        f" PostgreSQL in {seconds:.1f} s (verify, copy, rebuild the projections)",
        flush=True,
    )
    folder.mkdir(parents=True)
    shutil.copytree(DataDir(source).keys, DataDir(folder).keys)
    DataDir(folder).record_store(url)
    return folder


def _verify(folder: Path) -> tuple[float, int]:
    """``benchproof verify`` of the data directory ``folder`` in process (the function the
    command calls); entries/s and the entries verified."""
    t0 = time.perf_counter()
    report = verify(folder)
    seconds = time.perf_counter() - t0
    if not report.ok:
        raise RuntimeError(f"{folder}: verify failed: {report.findings[:3]}")
    return report.entries / seconds, report.entries


def _lookups(folder: Path, refs: list[str]) -> float:
    """``benchproof runs show REF --json`` for each of ``refs`` in process (the CLI's path:
    resolve the reference, build the dossier, encode it); lookups/s."""
    encoder = msgspec.json.Encoder()
    with Ledger.open(folder) as ledger:
        store = ledger.store
        at = resolve_as_of(store, None)
        t0 = time.perf_counter()
        for ref in refs:
            encoder.encode(show_run(store.session, store, ref, at, size=store.size))
        return len(refs) / (time.perf_counter() - t0)


def _counts(folder: Path) -> tuple[int, int]:
    """The size of the log of the data directory ``folder`` and how many checkpoints it holds
    (one a committed transaction)."""
    log = open_reader(DataDir(folder).store)
    try:
        return log.size, sum(1 for _ in log.checkpoints())
    finally:
        log.close()


def _post(
    url: str, folder: Path, run: str, bodies: list[bytes], scratch: Path
) -> tuple[float, float]:
    """Post ``bodies``, each once and in turn, to the server at ``url`` from ``CLIENTS``
    connections for ``DURATION`` seconds (``tests.bench.attest``); attestations accepted per
    second, each answered only once its entry was committed durably, and attestations per
    committed transaction."""
    size, checkpoints = _counts(folder)
    rps, _ = _post_all(url, f"/v1/runs/{run}/attestations", bodies, scratch)
    size_after, checkpoints_after = _counts(folder)
    appended = size_after - size
    if appended < rps * DURATION * 0.9 or appended >= len(bodies):
        raise RuntimeError(
            f"{folder}: {appended} entries appended for {rps:.0f} posts/s of {len(bodies)}"
            " bodies (raise BENCH_STORES_ATTEST_BODIES if they ran out)"
        )
    return appended / DURATION, appended / max(checkpoints_after - checkpoints, 1)


def _warm(url: str, run: str, bodies: list[bytes]) -> None:
    """A server's first posts, unmeasured: each must be accepted."""
    with httpx.Client(base_url=url, headers={"Content-Type": "application/json"}) as client:
        for body in bodies:
            client.post(f"/v1/runs/{run}/attestations", content=body).raise_for_status()


@contextlib.contextmanager
def _servers(folders: dict[str, Path]) -> Iterator[dict[str, str]]:
    """``benchproof serve`` as deployed (``--workers`` one a core, one writer process; rate
    limits off) on each store's data directory."""
    with contextlib.ExitStack() as stack:
        yield {
            store: stack.enter_context(served(f, "--workers", CORES, *NO_LIMITS))
            for store, f in folders.items()
        }


def _measure(metric: Metric, run: Callable[[str, int], float]) -> None:
    """Fill ``metric`` with ``ROUNDS`` rounds of ``run(store, round)``, alternating stores."""
    for r in range(ROUNDS):
        for store in _in_turn(r):
            metric.rounds[store].append(run(store, r))


def _server_version(base: str) -> str:
    with psycopg.connect(base) as conn:
        row = conn.execute("SHOW server_version").fetchone()
    return str(row[0]) if row else "?"


def _header() -> None:
    print(f"  {'metric':<60} {'unit':<10} {'SQLite':>10} {'PostgreSQL':>10} {'PG/SQLite':>9}")


def _row(m: Metric) -> None:
    """One row of the table: the medians of the rounds, their ratio and the rounds' ratios."""
    lite, pg = m.median("sqlite"), m.median("postgresql")
    rounds = ", ".join(f"{r:.2f}" for r in m.ratios())
    print(
        f"  {m.name:<60} {m.unit:<10} {lite:>10,.1f} {pg:>10,.1f} {pg / lite:>8.2f}x"
        f"  rounds: {rounds}",
        flush=True,
    )


class Statements:
    """The statements PostgreSQL ran for the ``benchproof`` database, from ``pg_stat_statements``
    (the cluster loads it): ``reset()`` before a measured step, ``count()`` after it. A statement
    sent alone is one round trip; an ``executemany`` counts one a row, but psycopg sends its rows
    in one pipeline (one round trip)."""

    def __init__(self, base: str) -> None:
        self.base = base
        with psycopg.connect(base, autocommit=True) as conn:
            conn.execute("CREATE EXTENSION IF NOT EXISTS pg_stat_statements")

    def reset(self) -> None:
        with psycopg.connect(self.base, autocommit=True) as conn:
            conn.execute("SELECT pg_stat_statements_reset()")

    def count(self) -> int:
        """Statements run since the last ``reset`` in the database, ours left out."""
        with psycopg.connect(self.base, autocommit=True) as conn:
            row = conn.execute(
                "SELECT coalesce(sum(calls), 0) FROM pg_stat_statements s"
                " JOIN pg_database d ON d.oid = s.dbid"
                " WHERE d.datname = current_database() AND s.query NOT LIKE '%pg_stat_statements%'"
            ).fetchone()
        return int(row[0]) if row else 0


def main() -> None:
    with contextlib.ExitStack() as stack:
        try:
            base = stack.enter_context(cluster("shared_preload_libraries=pg_stat_statements"))
        except ClusterError as error:
            print(f"stores (issue 19): skipped: no PostgreSQL cluster could be started: {error}")
            return
        _bench(base, Path(stack.enter_context(tempfile.TemporaryDirectory())))


def _bench(base: str, tmp: Path) -> None:
    print(
        f"stores (issue 19): SQLite beside PostgreSQL {_server_version(base)} (a throwaway cluster"
        f" on loopback, fsync on); {ROUNDS} rounds alternating the stores, medians"
    )
    _header()
    folders: dict[str, Path] = {}
    ingest = Metric("ingest of the whole catalog, end to end", "runs/s")
    commits = Metric("  of which sign + append + projections", "runs/s")
    runs_ingested = 0

    statements = Statements(base)
    per_1000: list[float] = []

    def ingest_round(store: str, r: int) -> float:
        nonlocal runs_ingested
        # A folder each: ``served`` writes its log beside the data directory.
        folders[store] = tmp / f"{store}-{r}" / "data"
        statements.reset()
        end_to_end, commit, runs_ingested = _ingest(folders[store], store, base)
        if store == "postgresql":
            per_1000.append(statements.count() / runs_ingested * 1000)
        commits.rounds[store].append(commit)
        return end_to_end

    _measure(ingest, ingest_round)
    ingest.name = f"ingest of the whole catalog ({runs_ingested:,} runs), end to end"
    _row(ingest)
    _row(commits)
    print(
        f"  PostgreSQL statements per 1,000 runs ingested (an executemany: one a row): {statistics.median(per_1000):,.0f}"
    )
    record(
        "pg_ingest_ratio_to_sqlite",
        statistics.median(ingest.ratios()),
        "x",
        "catalog ingest end to end, PostgreSQL over SQLite, median of rounds",
        sqlite_runs_per_s=round(ingest.median("sqlite"), 1),
        postgresql_runs_per_s=round(ingest.median("postgresql"), 1),
    )
    record(
        "pg_statements_per_1000_runs",
        statistics.median(per_1000),
        "statements",
        "statements PostgreSQL ran per 1,000 runs ingested (pg_stat_statements; an executemany counts one a row)",
    )
    # The rest reads one log, the same bytes on both stores: the last SQLite log, and its copy.
    folders["postgresql"] = _copy_to_postgres(folders["sqlite"], tmp / "copy" / "data", base)
    entries = 0

    def verify_round(store: str, _r: int) -> float:
        nonlocal entries
        rate, entries = _verify(folders[store])
        return rate

    full_verify = Metric("full verify (signatures, tree, checkpoints)", "entries/s")
    _measure(full_verify, verify_round)
    full_verify.name = f"full verify of {entries:,} entries (signatures, tree, checkpoints)"
    _row(full_verify)

    with Ledger.open(folders["sqlite"]) as ledger:
        digests = [
            row[0]
            for row in ledger.store.session.execute(
                "SELECT run_digest FROM p_runs WHERE valid_to IS NULL ORDER BY run_digest LIMIT ?",
                (LOOKUPS,),
            )
        ]
    refs = [short_id(d) for d in digests]
    lookups = Metric(f"runs show REF --json, {len(refs):,} short ids in turn", "lookups/s")
    _measure(lookups, lambda store, _r: _lookups(folders[store], refs))
    _row(lookups)
    if shutil.which("wrk") is None:
        print("  attestation posts skipped: wrk is not installed (apt-get install wrk)")
    else:
        metrics, per_post = _attestations(folders, digests[0], tmp, statements)
        for metric in metrics:
            _row(metric)
        print(f"  PostgreSQL statements per attestation post: {per_post:.1f}")
        record(
            "pg_attest_ratio_to_sqlite",
            statistics.median(metrics[0].ratios()),
            "x",
            "durable attestation posts over HTTP, PostgreSQL over SQLite, median of rounds",
            sqlite_per_s=round(metrics[0].median("sqlite"), 1),
            postgresql_per_s=round(metrics[0].median("postgresql"), 1),
        )
        record(
            "pg_statements_per_attest",
            per_post,
            "statements",
            "statements PostgreSQL ran per attestation post under load (pg_stat_statements)",
        )


def _attestations(
    folders: dict[str, Path], run: str, tmp: Path, statements: Statements
) -> tuple[list[Metric], float]:
    """Durable attestation posts over HTTP on each store: the same client keys registered in
    both logs, the same signed attestations posted to each, by ``CLIENTS`` connections; the
    metrics, and the median of PostgreSQL's statements per post in the rounds."""
    keys = [SigningKey.generate() for _ in range(CLIENTS)]
    for folder in folders.values():
        with Ledger.open(folder) as ledger:
            ledger.append_pending(
                [signed_event(key_registration(k, "community"), k.key_id, k) for k in keys]
            )
    bodies = _bodies(run, keys, WARM_POSTS + ROUNDS * ATTEST_BODIES)
    warm, rest = bodies[:WARM_POSTS], bodies[WARM_POSTS:]
    metric = Metric(f"attestations posted over HTTP, {CLIENTS} clients, {DURATION} s", "/s")
    batches = Metric("  attestations per commit", "")
    with _servers(folders) as urls:
        for url in urls.values():
            _warm(url, run, warm)

        per_post: list[float] = []

        def post_round(store: str, r: int) -> float:
            part = rest[r * ATTEST_BODIES : (r + 1) * ATTEST_BODIES]
            statements.reset()
            rate, per_commit = _post(urls[store], folders[store], run, part, tmp)
            if store == "postgresql":
                per_post.append(statements.count() / (rate * DURATION))
            batches.rounds[store].append(per_commit)
            return rate

        _measure(metric, post_round)
    return [metric, batches], statistics.median(per_post)
