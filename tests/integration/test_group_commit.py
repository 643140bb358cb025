"""Group commit on a real log: appends that arrive together are committed in one transaction
(one fsync), each caller gets its own answer, and one request's refusal or fault is never
another's."""

from __future__ import annotations

import asyncio
import threading
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import msgspec
import pytest

from events.errors import LogError
from events.stores.sqlite import SqliteLog
from events.stores.sqlite_schema import WriterBusy
from events.types import KeyRevoked, ReportFiled
from keys import SigningKey
from service.core.groupcommit import GroupCommit, Request
from service.core.ledger import Ledger, pending_of
from tests.builders import key_registration, signed_event
from verifier.log import verify_log

RUN = "sha256:" + "ab" * 32


def _report(i: int) -> Any:
    return pending_of(ReportFiled(runDigest=RUN, category="other", text=f"report {i}"), RUN)


def _in_threads(calls: list[Callable[[], Any]]) -> list[Any]:
    out: list[Any] = [None] * len(calls)

    def run(i: int) -> None:
        try:
            out[i] = calls[i]()
        except Exception as exc:  # noqa: BLE001 - the test looks at it
            out[i] = exc

    threads = [threading.Thread(target=run, args=(i,)) for i in range(len(calls))]
    for t in threads:
        t.start()
        time.sleep(0.01)  # they queue up behind the first, which holds the writer's turn
    for t in threads:
        t.join(10)
    return out


def _holding_the_turn(ledger: Ledger, gate: threading.Event) -> Callable[[], Any]:
    """A request whose check waits for ``gate``: it holds the writer's turn meanwhile."""
    return lambda: ledger.append_pending([_report(-1)], check=lambda _session: gate.wait(5))


def test_concurrent_appends_share_one_commit(ledger: Ledger) -> None:
    size, commits = ledger.store.size, ledger.group.commits
    gate = threading.Event()
    calls = [_holding_the_turn(ledger, gate)]
    calls += [(lambda i=i: ledger.append_pending([_report(i), _report(100 + i)])) for i in range(8)]
    threading.Timer(0.3, gate.set).start()
    results = _in_threads(calls)
    assert ledger.group.commits - commits == 2  # the first alone, then the eight together
    positions = sorted(a.seq for r in results for a in r)
    assert positions == list(range(size, size + 17))
    assert all(a.new for r in results for a in r)
    for i, r in enumerate(results[1:]):
        texts = [
            msgspec.json.decode(ledger.store.leaf(a.seq) or b"")["envelope"]["payload"] for a in r
        ]
        assert len(set(texts)) == 2, i
    assert verify_log(ledger.data.db).ok


def test_a_refused_or_failing_request_leaves_the_others_committed(ledger: Ledger) -> None:
    size = ledger.store.size
    gate = threading.Event()

    def refuse(_session: object) -> None:
        raise PermissionError("this key was revoked")

    unsigned = msgspec.structs.replace(
        _report(7), envelope=b'{"payloadType":"x","payload":"","signatures":[]}'
    )
    calls = [
        _holding_the_turn(ledger, gate),
        lambda: ledger.append_pending([_report(1)]),
        lambda: ledger.append_pending([_report(2)], check=refuse),
        lambda: ledger.append_pending([unsigned]),  # the shared append fails on it
        lambda: ledger.append_pending([_report(3)]),
    ]
    threading.Timer(0.3, gate.set).start()
    results = _in_threads(calls)
    assert isinstance(results[2], PermissionError)
    assert isinstance(results[3], LogError)
    assert [a.new for a in results[1]] == [True] and [a.new for a in results[4]] == [True]
    assert ledger.store.refresh() == size + 3  # the gate's report, 1 and 3
    assert verify_log(ledger.data.db).ok


def test_a_check_sees_the_transaction_it_runs_in(ledger: Ledger) -> None:
    seen: list[int] = []

    def look(session: Any) -> None:
        assert session.in_transaction
        seen.append(session.execute("SELECT count(*) FROM p_reports").fetchone()[0])

    ledger.append_pending([_report(1)])
    ledger.append_pending([_report(2)], check=look)
    assert seen == [1]
    with pytest.raises(ValueError, match="no"):
        ledger.append_pending(
            [_report(3)], check=lambda _s: (_ for _ in ()).throw(ValueError("no"))
        )


def test_posts_from_an_event_loop_share_the_writers_commit(ledger: Ledger) -> None:
    """``append_pending_async``: the loop queues while the writer thread commits; what was
    queued meanwhile is committed together, each request gets its own answer, and a refused
    check fails only its own request."""
    size = ledger.store.size
    gate = threading.Event()

    def refuse(_session: object) -> None:
        raise PermissionError("refused")

    async def main() -> list[Any]:
        holder = asyncio.get_running_loop().run_in_executor(None, _holding_the_turn(ledger, gate))
        await asyncio.sleep(0.1)  # the holder has the writer's turn
        commits = ledger.group.commits
        first = asyncio.ensure_future(ledger.append_pending_async([_report(0)]))
        await asyncio.sleep(0.05)  # the loop's writer thread now waits for the turn
        rest = [
            asyncio.ensure_future(
                ledger.append_pending_async([_report(i)], check=refuse if i == 3 else None)
            )
            for i in range(1, 6)
        ]
        gate.set()
        await holder
        results = await asyncio.gather(first, *rest, return_exceptions=True)
        assert ledger.group.commits - commits == 3  # the holder; the first; the five together
        return results

    with ThreadPoolExecutor(1) as own_loop:  # a loop of its own, whatever the suite runs
        results = own_loop.submit(asyncio.run, main()).result()
    assert isinstance(results[3], PermissionError)
    positions = [r[0].seq for i, r in enumerate(results) if i != 3]
    assert positions == list(range(size + 1, size + 6))  # after the holder's, in queue order
    assert verify_log(ledger.data.db).ok


def test_a_check_sees_what_the_requests_before_it_in_the_group_changed(ledger: Ledger) -> None:
    """Attestations and reports are appended together, but never past a request that changes
    what checks read: a revocation queued before an attestation refuses it, one queued after
    lets it in first."""
    key = SigningKey.generate()
    ledger.append_pending([signed_event(key_registration(key, "community"), key.key_id, key)])

    def key_valid(_session: object) -> None:
        view = ledger.projections.keyring()[key.key_id]
        if not view.valid_at(ledger.store.refresh()):
            raise PermissionError("revoked")

    revoke = pending_of(KeyRevoked(keyId=key.key_id, reason="lost"), key.key_id)
    gate = threading.Event()
    calls = [
        _holding_the_turn(ledger, gate),
        lambda: ledger.append_pending([_report(1)], check=key_valid),  # before: appended
        lambda: ledger.append_pending([revoke]),
        lambda: ledger.append_pending([_report(2)], check=key_valid),  # after: refused
    ]
    threading.Timer(0.3, gate.set).start()
    results = _in_threads(calls)
    assert isinstance(results[3], PermissionError)
    assert results[1][0].seq < results[2][0].seq
    assert verify_log(ledger.data.db).ok


def test_a_busy_writer_fails_the_group_once_not_each_request_again() -> None:
    """Another writer held the log for the whole timeout: nothing was written, so the group's
    requests all hear it at once instead of each waiting out the timeout again alone."""
    calls: list[int] = []

    def commit(batch: list[Request[int, object, int]]) -> None:
        calls.append(len(batch))
        raise WriterBusy("another writer has held the log for 60 s")

    group: GroupCommit[int, object, int] = GroupCommit(commit, whole=(WriterBusy,))
    batch = [Request([i], None) for i in range(3)]
    group._run(batch)
    assert calls == [3]
    assert all(isinstance(r.error, WriterBusy) and r.done for r in batch)


def test_the_keyring_cache_follows_a_rebuild(ledger: Ledger) -> None:
    """Readers cache the keyring until a key entry moves it or the projections are rebuilt
    (a replay's repair): a repaired keyring is seen at once, by readers and by the writer."""
    reader = SqliteLog.open_readonly(ledger.data.db)
    try:
        index = ledger.signers.index.key_id
        with ledger.store.transaction() as session:  # a damaged projection
            session.execute("UPDATE p_keys SET revoked_at = 3 WHERE key_id = ?", (index,))
        ledger.projections.forget()
        assert ledger.keyring(reader.session)[index].until == 3
        assert ledger.projections.keyring()[index].until == 3
        with ledger.store.transaction():
            ledger.rebuild_projections()  # the repair: same last key entry, new tables
        assert ledger.keyring(reader.session)[index].until is None
        assert ledger.projections.keyring()[index].until is None
    finally:
        reader.close()
