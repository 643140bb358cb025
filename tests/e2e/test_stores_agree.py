"""One log, two stores: built on SQLite through every scenario's steps, copied to PostgreSQL
leaf for leaf (``benchproof migrate-store``), then ``verify --json`` and ``replay --json`` on
each give the same size, the same root and the same projection digests.

Collected only when a PostgreSQL cluster is given (``BENCHPROOF_TEST_PG``; see conftest.py)."""

from __future__ import annotations

from pathlib import Path

from tests.e2e import steps
from tests.e2e.deployment import Deployment
from tests.servers import run_cli
from tests.stores import drop_pg_schema, make_store_url


def test_sqlite_and_postgresql_agree_on_one_log(tmp_path: Path) -> None:
    sqlite = Deployment(tmp_path / "sqlite", "")
    sqlite.init()
    cli_slice, http_slice = steps.ingest_by_cli(sqlite)
    with sqlite.serve() as server:
        done = steps.ingest(sqlite, server, cli_slice, http_slice)
        steps.attest_and_withdraw(sqlite, server, done.seed)
        rerun = steps.rerun(sqlite, server, done.token)
        receipt, vkey = steps.cite(sqlite, server, rerun)
        steps.audit(sqlite, server)
    steps.check_receipt_offline(receipt, vkey, rerun)

    url = make_store_url("postgresql", tmp_path)
    assert url.startswith("postgresql://")
    try:
        _compare(sqlite, url, rerun, receipt, vkey)
    finally:
        drop_pg_schema(url)


def _compare(sqlite: Deployment, url: str, rerun: str, receipt: Path, vkey: Path) -> None:
    """Copy ``sqlite``'s log into the store ``url``; both give the same verify and replay."""
    on_sqlite = sqlite.state()
    source = f"sqlite:///{sqlite.data / 'benchproof.db'}"
    migrated = run_cli("migrate-store", source, url, timeout=600)
    assert migrated.returncode == 0, (migrated.stdout, migrated.stderr)
    # The same keys and data directory, the log read from PostgreSQL.
    postgresql = Deployment(sqlite.root, url, pinned=True)
    on_postgresql = postgresql.state()

    assert on_postgresql.size == on_sqlite.size > 0
    assert on_postgresql.root == on_sqlite.root
    assert on_postgresql.digests == on_sqlite.digests
    assert postgresql.ok("log", "checkpoint") == sqlite.ok("log", "checkpoint")
    # Served from PostgreSQL, the copy passes the remote audit, and the log that issued the
    # receipt on SQLite answers for it (same key, a consistent checkpoint).
    with postgresql.serve() as server:
        assert server.run(rerun)["runDigest"] == rerun
        assert server.size() == on_sqlite.size
        steps.audit(postgresql, server)
        online = run_cli("verify-citation", receipt, "--log-key", vkey, "--server", server.url)
        assert online.returncode == 0, online.stderr
