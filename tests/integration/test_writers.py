"""Several writers on one log: the writers' lock beside the database lets one append at a time
(across processes, and across handles of one process, which give up after the timeout instead
of waiting on each other for ever); ``benchproof serve --workers 2`` answers concurrent
attestations from two processes, each appended exactly once, and the log still verifies and
replays."""

from __future__ import annotations

import threading
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import httpx
import pytest

from events.entries import INTOTO_PAYLOAD_TYPE
from events.errors import LogError
from events.stores.sqlite import SqliteLog
from events.stores.sqlite_schema import WriterLock
from keys import SigningKey, encode_envelope, sign_envelope
from service.commands.attest import statement
from service.core.ledger import Ledger
from tests.builders import log_with_attesters
from tests.servers import run_cli, served


def test_a_second_writer_waits_for_the_first_and_gives_up_after_the_timeout(
    tmp_path: Path,
) -> None:
    db = tmp_path / "log.db"
    first, second = WriterLock(db), WriterLock(db, timeout=0.3)
    first.acquire()
    with pytest.raises(LogError, match="another writer"):
        second.acquire()
    released = threading.Timer(0.1, first.release)
    released.start()
    second.acquire()  # waits for the release, well within the timeout
    second.release()
    released.join()
    first.close()
    second.close()


def test_a_writers_lock_in_a_read_only_folder_is_a_log_error(tmp_path: Path) -> None:
    lock = WriterLock(tmp_path / "missing" / "log.db")
    with pytest.raises(LogError, match="cannot write the log"):
        lock.acquire()


def test_a_read_only_handle_never_writes(ledger: Ledger) -> None:
    reader = SqliteLog.open_readonly(ledger.data.db)
    try:
        with pytest.raises(LogError, match="read-only"), reader.transaction():
            pass
    finally:
        reader.close()


def test_two_server_processes_append_every_attestation_once(tmp_path: Path) -> None:
    data = tmp_path / "data"
    keys = [SigningKey.generate() for _ in range(4)]
    run = log_with_attesters(data, keys)
    log = SqliteLog.open_readonly(data / "benchproof.db")
    before = log.refresh()
    log.close()
    bodies = [
        encode_envelope(
            sign_envelope(
                INTOTO_PAYLOAD_TYPE,
                statement(run, {"kind": "environment-note", "note": f"note {i}"}),
                keys[i % len(keys)],
            )
        )
        for i in range(48)
    ]
    limits = ("--limit-key-hour", "0", "--limit-key-day", "0")
    limits += ("--limit-address-hour", "0", "--limit-address-day", "0")
    with served(data, "--workers", "2", *limits) as base, httpx.Client(timeout=30) as client:

        def post(body: bytes) -> httpx.Response:
            return client.post(f"{base}/v1/runs/{run}/attestations", content=body)

        with ThreadPoolExecutor(8) as pool:
            answers = list(pool.map(post, bodies + bodies))  # each twice, concurrently
    assert all(a.status_code in (200, 201) for a in answers), [a.text for a in answers]
    assert sum(a.status_code == 201 for a in answers) == len(bodies)
    by_body: dict[bytes, set[int]] = {}
    for body, answer in zip(bodies + bodies, answers, strict=True):
        by_body.setdefault(body, set()).add(answer.json()["index"])
    assert all(len(indexes) == 1 for indexes in by_body.values())  # the same entry both times
    log = SqliteLog.open_readonly(data / "benchproof.db")
    try:
        assert log.refresh() == before + len(bodies)
    finally:
        log.close()
    assert run_cli("verify", "--data", data).returncode == 0
    assert run_cli("replay", "--data", data).returncode == 0
