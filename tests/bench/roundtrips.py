"""Issue 27: what a write costs PostgreSQL in statements (``pg_stat_statements``) and in client
round trips (counted on the client: each statement sent alone is one, an ``executemany`` one,
BEGIN and COMMIT one each), in process on one store: the catalog ingest per 1,000 runs, and an
attestation post on the handler's path (a long-lived read handle for the checks and the
receipt, the group commit for the append), one at a time and 16 at a time.

No target: the issue asks for the figures, before and after (docs/benchmarks.md)."""

from __future__ import annotations

import asyncio
import contextlib
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import events.stores.pgsql as pgsql
import events.stores.postgres as pgstore
from events.stores import open_reader
from keys import SigningKey
from service.app.attest import post_attestation_async
from service.app.ingest import commit_plan
from service.core.init import init_data_dir
from service.ingest.api import plan_import
from tests.bench.attest import _bodies
from tests.bench.common import line, record
from tests.bench.stores import Statements
from tests.builders import key_registration, signed_event
from tests.corpora import CATALOG, corpus
from tests.pgcluster import ClusterError, cluster
from tests.stores import fresh_pg_url

POSTS = 200


class RoundTrips:
    """Counts the client's round trips to PostgreSQL while installed (``counting``)."""

    def __init__(self) -> None:
        self.count = 0

    @contextlib.contextmanager
    def counting(self) -> Iterator[None]:
        execute, executemany, run = (
            pgsql.PgSession.execute,
            pgsql.PgSession.executemany,
            pgstore.run,
        )

        def counted_execute(session: Any, *args: Any) -> Any:
            self.count += 1
            return execute(session, *args)

        def counted_executemany(session: Any, statement: Any, rows: Any, /) -> Any:
            batch = list(rows)
            self.count += 1 if batch else 0
            return executemany(session, statement, batch)

        def counted_run(*args: Any, **kwargs: Any) -> Any:
            self.count += 1
            return run(*args, **kwargs)

        pgsql.PgSession.execute = counted_execute  # type: ignore[method-assign]
        pgsql.PgSession.executemany = counted_executemany  # type: ignore[method-assign]
        pgstore.run = counted_run
        try:
            yield
        finally:
            pgsql.PgSession.execute = execute  # type: ignore[method-assign]
            pgsql.PgSession.executemany = executemany  # type: ignore[method-assign]
            pgstore.run = run


async def _admit(_keyid: str) -> None:
    """Rate limits are the HTTP layer's: none here."""


def main() -> None:
    with contextlib.ExitStack() as stack:
        try:
            base = stack.enter_context(cluster("shared_preload_libraries=pg_stat_statements"))
        except ClusterError as error:
            print(
                f"roundtrips (issue 27): skipped: no PostgreSQL cluster could be started: {error}"
            )
            return
        _bench(base, Path(stack.enter_context(tempfile.TemporaryDirectory())))


def _bench(base: str, tmp: Path) -> None:
    print("roundtrips (issue 27): PostgreSQL statements and client round trips, in process")
    statements, trips = Statements(base), RoundTrips()
    ledger, _ = init_data_dir(tmp / "d", store=fresh_pg_url(base))
    keys = [SigningKey.generate() for _ in range(8)]
    with ledger, trips.counting():
        plan = plan_import("kernelindex-catalog", [corpus(*CATALOG)])
        statements.reset()
        trips.count = 0
        runs = commit_plan(ledger, plan).runs_appended
        per_1000 = (statements.count() / runs * 1000, trips.count / runs * 1000)
        line("catalog ingest: statements per 1,000 runs", per_1000[0], "")
        line("  round trips per 1,000 runs", per_1000[1], "")
        record(
            "pg_roundtrips_per_1000_runs",
            per_1000[1],
            "round trips",
            "client round trips to PostgreSQL per 1,000 runs of the catalog ingest",
        )
        run = ledger.store.session.execute("SELECT run_digest FROM p_runs LIMIT 1").fetchone()[0]
        ledger.append_pending(
            [signed_event(key_registration(k, "community"), k.key_id, k) for k in keys]
        )
        bodies = _bodies(run, keys, 2 * POSTS + 1)
        reads = open_reader(ledger.data.store)

        async def posts(at_once: int, part: list[bytes]) -> None:
            gate = asyncio.Semaphore(at_once)

            async def one(body: bytes) -> None:
                async with gate:
                    await post_attestation_async(ledger, run, body, admit=_admit, reads=reads)

            await asyncio.gather(*(one(b) for b in part))

        try:
            asyncio.run(posts(1, bodies[:1]))  # warm
            for at_once, part in ((1, bodies[1 : POSTS + 1]), (16, bodies[POSTS + 1 :])):
                statements.reset()
                trips.count = 0
                asyncio.run(posts(at_once, part))
                per_post = (statements.count() / len(part), trips.count / len(part))
                line(f"attestation post, {at_once} at a time: statements", per_post[0], "")
                line("  round trips", per_post[1], "")
            record(
                "pg_roundtrips_per_attest",
                per_post[1],
                "round trips",
                "client round trips to PostgreSQL per attestation post, 16 at a time (checks,"
                " append, receipt)",
            )
        finally:
            reads.close()
