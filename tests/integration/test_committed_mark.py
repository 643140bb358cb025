"""The ``-committed`` mark beside the database: a log that lost committed entries is refused,
while a live log that grows during ``benchproof verify`` is not mistaken for one."""

from __future__ import annotations

from pathlib import Path

import pytest

from events.stores.faults import StorageDamaged
from events.stores.sqlite import committed_path, read_committed
from service import cli
from service.app import verify as verify_app
from service.commands import logcmds
from service.core.init import init_data_dir
from service.core.ledger import Ledger
from tests.builders import bundle, ingest_event
from verifier.log import VerifyReport


def _grow(data: Path, n: int) -> None:
    with Ledger.open(data) as ledger:
        parts = bundle(group=9, author=n, value=100 + n)
        ledger.append([(ingest_event(parts), parts["run"].digest)])


def test_each_commit_moves_the_mark(tmp_path: Path) -> None:
    data = tmp_path / "data"
    ledger, _ = init_data_dir(data)
    ledger.close()
    _grow(data, 1)
    with Ledger.open(data) as ledger:
        assert read_committed(ledger.store.path) == ledger.store.size


def test_a_commit_during_verify_is_no_lost_entry(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """A server commits while ``verify`` reads its snapshot: the mark then passes the verified
    size, and must not be read as a truncated log."""
    data = tmp_path / "data"
    ledger, _ = init_data_dir(data)
    ledger.close()
    real = verify_app.verify

    def verify_then_commit(root: Path) -> VerifyReport:
        report = real(root)
        _grow(data, 2)  # lands after the snapshot, before the mark is compared
        return report

    monkeypatch.setattr(logcmds, "verify", verify_then_commit)
    assert cli.main(["verify", "--data", str(data)]) == 0, capsys.readouterr().err


def test_a_log_shorter_than_its_mark_fails_verify_and_refuses_writers(tmp_path: Path) -> None:
    data = tmp_path / "data"
    ledger, _ = init_data_dir(data)
    db = ledger.store.path
    ledger.close()
    committed = read_committed(db)
    assert committed is not None
    committed_path(db).write_text(f"{committed + 5}\n")
    assert cli.main(["verify", "--data", str(data)]) == 1
    with pytest.raises(StorageDamaged, match=r"commits reached"):
        Ledger.open(data)
