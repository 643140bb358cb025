"""A server that drops the service's connections (a restart, a fail-over, an administrator's
``pg_terminate_backend``) costs no request: reads run again on a new connection, a writer
begins its next transaction on one, and nothing is lost or written twice."""

from __future__ import annotations

from pathlib import Path

import psycopg
from litestar.testing import TestClient

from events.types import ReportFiled
from service.config import Settings
from service.ledger import init_data_dir, pending_of
from service.web.app import create_app
from tests.stores import pg_base

RUN = "sha256:" + "ab" * 32


def _drop_every_other_connection() -> int:
    """Terminate every backend of the test database but this one: what a restart does."""
    base = pg_base()
    assert base is not None
    with psycopg.connect(base, autocommit=True) as admin:
        rows = admin.execute(
            "SELECT pg_terminate_backend(pid) FROM pg_stat_activity"
            " WHERE datname = current_database() AND pid <> pg_backend_pid()"
            " AND backend_type = 'client backend'"
        ).fetchall()
    return len(rows)


def test_reads_and_writes_go_on_after_the_server_drops_every_connection(
    tmp_path: Path, pg_url: str
) -> None:
    ledger, _ = init_data_dir(tmp_path / "data", store=pg_url)
    try:
        app = create_app(Settings(data=tmp_path / "data"), ledger=ledger)
        with TestClient(app=app) as client:
            assert client.get("/v1/log/checkpoint").status_code == 200
            before = ledger.store.refresh()
            assert _drop_every_other_connection() >= 2  # the writer's and a reader's at least
            # Reads: run again on a new connection, never a 503.
            answer = client.get("/v1/log/checkpoint")
            assert answer.status_code == 200, answer.text
            assert int(answer.text.splitlines()[1]) == before
            # A write: begun on a new connection, appended once.
            appended = ledger.append_pending(
                [pending_of(ReportFiled(runDigest=RUN, category="note", text="after"), RUN)]
            )
            assert [a.new for a in appended] == [True]
            assert ledger.store.refresh() == before + 1
            _drop_every_other_connection()
            again = ledger.append_pending(
                [pending_of(ReportFiled(runDigest=RUN, category="note", text="after"), RUN)]
            )
            assert [a.new for a in again] == [False]  # the same statement: not twice
            assert int(client.get("/v1/log/checkpoint").text.splitlines()[1]) == before + 1
    finally:
        ledger.close()
