"""A server that drops the service's connections (a restart, a fail-over, an administrator's
``pg_terminate_backend``) costs no request: reads run again on a new connection, a writer
begins its next transaction on one, and nothing is lost or written twice."""

from __future__ import annotations

import os
from pathlib import Path

import psycopg
from litestar.testing import TestClient

from events.types import ReportFiled
from service.core.config import Settings
from service.core.init import init_data_dir
from service.core.ledger import pending_of
from service.web.app import create_app
from tests.stores import pg_base

RUN = "sha256:" + "ab" * 32


def _drop_every_other_connection() -> int:
    """Terminate every connection this process's stores hold (they name the process in their
    ``application_name``): what a restart does to them."""
    base = pg_base()
    assert base is not None
    with psycopg.connect(base, autocommit=True) as admin:
        rows = admin.execute(
            "SELECT pg_terminate_backend(pid) FROM pg_stat_activity"
            " WHERE datname = current_database() AND pid <> pg_backend_pid()"
            " AND application_name = %s",
            (f"benchproof {os.getpid()}",),
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
            # A snapshot (what key registrations and reports read in first): on a new one.
            with ledger.store.snapshot() as session:
                assert session.execute("SELECT max(seq) FROM entries").fetchone()[0] == before - 1
            _drop_every_other_connection()
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


def test_a_connection_dropped_inside_a_batch_loses_the_batch_whole(pg_url: str) -> None:
    """The server drops the writer's connection in the middle of a batch (after some chunks
    were written, while the projections read): the append fails, none of the batch is in the
    log, no checkpoint covers it, and the next append lands on a new connection."""
    from datetime import UTC, datetime

    import msgspec
    import pytest

    from events.stores.postgres import PgLog
    from keys import SigningKey
    from service.core.signing import Signers

    signers = Signers(SigningKey.generate(), SigningKey.generate(), "reconnect.example/log")
    store = PgLog.open(pg_url, origin="reconnect.example/log", create=True)

    def pending(n: int, start: int) -> list[object]:
        return [
            msgspec.structs.replace(
                pending_of(ReportFiled(runDigest=RUN, category="note", text=f"r{i}"), RUN),
                signer=signers.index.key_id,
            )
            for i in range(start, start + n)
        ]

    def append(items: list[object], project: object = None) -> object:
        return store.append(
            items,  # type: ignore[arg-type]
            sign=signers.sign_chunks,
            sign_checkpoint=signers.sign_checkpoint,
            now=datetime.now(UTC),
            project=project,  # type: ignore[arg-type]
        )

    chunks = []

    def drop_on_the_second_chunk(session: object, entries: object) -> None:
        chunks.append(entries)
        if len(chunks) == 2:  # the first chunk's rows are written, in the transaction
            base = pg_base()
            assert base is not None
            with psycopg.connect(base, autocommit=True) as admin:
                admin.execute(
                    "SELECT pg_terminate_backend(%s)", (store.session.raw.info.backend_pid,)
                )
            store.session.execute("SELECT max(seq) FROM entries").fetchone()  # a read: not retried

    try:
        append(pending(3, 0))
        before, checkpoint = store.refresh(), store.latest_checkpoint()
        with pytest.raises(Exception):  # noqa: B017 - whatever the lost connection says
            append(pending(2500, 100), drop_on_the_second_chunk)
        assert len(chunks) == 2
        assert store.refresh() == before
        assert store.latest_checkpoint() == checkpoint
        appended = append(pending(5, 5000))
        assert store.refresh() == before + 5 and all(a.new for a in appended)  # type: ignore[attr-defined]
        assert [seq for seq, _ in store.leaves()] == list(range(before + 5))
    finally:
        store.close()
        signers.close()
