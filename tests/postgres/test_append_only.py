"""On PostgreSQL the log is append-only in the database itself: the sessions act as their log's
appender role, which may read and insert into the log tables and nothing more; triggers refuse
UPDATE, DELETE and TRUNCATE to anyone, the tables' owner included; and one deployment's role
gives nothing on another's log."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

import msgspec
import psycopg
import pytest
from psycopg import errors as pgerrors

from events.stores.postgres import PgLog
from events.types import ReportFiled
from keys import SigningKey
from service.core.ledger import pending_of
from service.core.signing import Signers
from tests.stores import fresh_pg_url

RUN = "sha256:" + "ef" * 32
ORIGIN = "append-only.example/log"

CHANGES = [
    "UPDATE entries SET subject = 'x' WHERE seq = 0",
    "DELETE FROM entries WHERE seq = 1",
    "UPDATE tree_nodes SET hash = '\\x00'::bytea",
    "DELETE FROM checkpoints",
    "TRUNCATE entries",
    "TRUNCATE checkpoints",
]


@pytest.fixture
def store(pg_url: str) -> Any:
    signers = Signers(SigningKey.generate(), SigningKey.generate(), ORIGIN)
    opened = PgLog.open(pg_url, origin=ORIGIN, create=True)
    items = [
        msgspec.structs.replace(
            pending_of(ReportFiled(runDigest=RUN, category="note", text=f"r{i}"), RUN),
            signer=signers.index.key_id,
        )
        for i in range(4)
    ]
    opened.append(
        items,
        sign=signers.sign_chunks,
        sign_checkpoint=signers.sign_checkpoint,
        now=datetime.now(UTC),
    )
    yield opened
    opened.close()
    signers.close()


@pytest.mark.parametrize("change", CHANGES)
def test_the_service_role_may_not_change_the_log(store: PgLog, change: str) -> None:
    assert store.role is not None and store.role.startswith("benchproof_")
    with pytest.raises(pgerrors.InsufficientPrivilege):
        store.session.raw.execute(change)
    assert store.refresh() == 4 and len(list(store.leaves())) == 4


@pytest.mark.parametrize("change", CHANGES)
def test_the_owner_is_refused_by_the_triggers(store: PgLog, pg_url: str, change: str) -> None:
    with psycopg.connect(pg_url, autocommit=True) as owner:
        assert owner.execute("SELECT current_user = session_user").fetchone() == (True,)
        with pytest.raises(pgerrors.RestrictViolation, match="append-only"):
            owner.execute(change)
    assert store.refresh() == 4 and len(list(store.leaves())) == 4


def test_another_deployments_role_gives_nothing_here(store: PgLog, pg_base_url: str) -> None:
    other = PgLog.open(fresh_pg_url(pg_base_url), origin="other.example/log", create=True)
    try:
        assert other.role is not None and other.role != store.role
        schema = store.schema
        with pytest.raises(pgerrors.InsufficientPrivilege):
            other.session.raw.execute(f'SELECT count(*) FROM "{schema}".entries')
    finally:
        other.close()
