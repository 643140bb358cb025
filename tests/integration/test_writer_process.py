"""The single writer of ``serve --workers N`` (``service.core.writer``): workers send verified
writes with their state checks; the writer commits them in order and answers each, a refusal as
the same error (and so the same problem answer) the worker would have raised in process; a
killed writer is started again and no acknowledged write is lost or doubled."""

from __future__ import annotations

import asyncio
import os
import signal
import threading
import time
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager
from pathlib import Path

import httpx
import msgspec
import pytest

from events.decoding import decoded_event, statement_event
from events.entries import INTOTO_PAYLOAD_TYPE, Pending, read_entry
from events.stores.sqlite import SqliteLog
from events.types import KeyRevoked
from keys import SigningKey, encode_envelope, sign_envelope
from service.app.attest import UnknownAttester, attester_still_valid, post_attestation
from service.app.verify import verify
from service.commands.attest import statement
from service.core.ledger import Ledger, pending_of
from service.core.signing import envelope_signer
from service.core.statechecks import StateCheck, bind, check_of
from service.core.writer import (
    WriterClient,
    WriterGone,
    WriterUnavailable,
    error_of,
    serve_writer,
    wire_error,
)
from service.web.problems import to_problem
from tests.builders import log_with_attesters
from tests.servers import run_cli, served


def _admit(_keyid: str) -> None:
    """Rate limits are the HTTP layer's: none here."""


def _size(data: Path) -> int:
    log = SqliteLog.open_readonly(data / "benchproof.db")
    try:
        return log.refresh()
    finally:
        log.close()


def _statement_body(run: str, key: SigningKey, note: str) -> bytes:
    payload = statement(run, {"kind": "environment-note", "note": note})
    return encode_envelope(sign_envelope(INTOTO_PAYLOAD_TYPE, payload, key))


@contextmanager
def writer_in_thread(data: Path) -> Iterator[Path]:
    """``serve_writer`` on the data directory's ledger, on a loop of its own thread; its socket."""
    path = data.parent / "w.sock"
    ready = threading.Event()
    box: dict[str, object] = {}

    def run() -> None:
        async def main() -> None:
            box["stop"], box["loop"] = asyncio.Event(), asyncio.get_running_loop()
            with Ledger.open(data) as ledger:
                task = asyncio.create_task(serve_writer(ledger, path, box["stop"]))  # type: ignore[arg-type]
                while not path.exists():
                    await asyncio.sleep(0.01)
                ready.set()
                await task

        asyncio.run(main())

    thread = threading.Thread(target=run)
    thread.start()
    assert ready.wait(30)
    try:
        yield path
    finally:
        loop: asyncio.AbstractEventLoop = box["loop"]  # type: ignore[assignment]
        loop.call_soon_threadsafe(box["stop"].set)  # type: ignore[attr-defined]
        thread.join(30)


def test_only_marked_functions_of_the_service_travel_as_checks() -> None:
    with pytest.raises(TypeError, match="not marked"):
        check_of(len)
    for name in ("os:system", "service.app.attest:receipt", "service.app.attest:nothing"):
        with pytest.raises(ValueError, match="not a state check"):
            bind(object(), StateCheck(name, ("x",)))
    check = check_of(attester_still_valid, "abc")
    assert check == StateCheck("service.app.attest:attester_still_valid", ("abc",))


def test_a_refusal_travels_as_the_same_error() -> None:
    refused = UnknownAttester("not registered", keyId="k1")
    again = error_of(wire_error(refused))
    assert type(again) is UnknownAttester
    assert (again.detail, again.details) == ("not registered", {"keyId": "k1"})
    foreign = error_of(wire_error(KeyError("x")))
    assert type(foreign) is RuntimeError and "KeyError" in str(foreign)


def test_a_write_refused_by_the_writers_state_check_gets_todays_problem(tmp_path: Path) -> None:
    keys = [SigningKey.generate()]
    data = tmp_path / "data"
    run = log_with_attesters(data, keys)
    body = _statement_body(run, keys[0], "revoked meanwhile")
    # Today's answer: the check refuses in process, at the entry's position.
    with Ledger.open(data) as local:
        local.append([(KeyRevoked(keyId=keys[0].key_id, reason="lost"), keys[0].key_id)])
        with pytest.raises(UnknownAttester) as in_process:
            local.append_pending([], check=check_of(attester_still_valid, keys[0].key_id))
    with writer_in_thread(data) as path, Ledger.open(data) as worker:
        worker.remote = WriterClient(path)
        with pytest.raises(UnknownAttester) as remote:
            worker.append_pending([], check=check_of(attester_still_valid, keys[0].key_id))
        with pytest.raises(UnknownAttester) as remote_async:
            asyncio.run(
                worker.append_pending_async(
                    [], check=check_of(attester_still_valid, keys[0].key_id)
                )
            )
        with pytest.raises(TypeError, match="StateCheck"):
            worker.append_pending([], check=lambda _session: None)
        # And the whole post: refused before the writer (the worker reads the revocation).
        with pytest.raises(UnknownAttester):
            post_attestation(worker, run, body, admit=_admit)
    answers = [to_problem(e.value) for e in (in_process, remote, remote_async)]
    assert len({(a.status_code, a.type_, a.detail, str(a.extra)) for a in answers}) == 1
    assert answers[0].extra == {"keyId": keys[0].key_id}


def test_writes_through_the_writer_land_once_in_order(tmp_path: Path) -> None:
    keys = [SigningKey.generate() for _ in range(4)]
    data = tmp_path / "data"
    run = log_with_attesters(data, keys)
    bodies = [_statement_body(run, keys[i % 4], f"note {i}") for i in range(40)]
    with writer_in_thread(data) as path, Ledger.open(data) as worker:
        worker.remote = WriterClient(path)
        with ThreadPoolExecutor(8) as pool:
            posted = list(
                pool.map(lambda b: post_attestation(worker, run, b, admit=_admit), bodies)
            )
        again = post_attestation(worker, run, bodies[0], admit=_admit)
    assert sum(p.new for p in posted) == len(bodies) and not again.new
    assert again.posted.index == posted[0].posted.index
    assert len({p.posted.index for p in posted}) == len(bodies)
    assert run_cli("verify", "--data", data).returncode == 0


def test_no_writer_is_a_busy_store_and_nothing_is_written(tmp_path: Path) -> None:
    data = tmp_path / "data"
    log_with_attesters(data, [])
    with Ledger.open(data) as worker:
        size = worker.store.size
        worker.remote = WriterClient(tmp_path / "nobody.sock")
        with pytest.raises(WriterUnavailable):
            worker.append([(KeyRevoked(keyId="x" * 64, reason="r"), "x")])
        with pytest.raises(WriterUnavailable):
            asyncio.run(worker.append_pending_async([]))
        assert to_problem(WriterUnavailable("gone")).status_code == 503
        assert worker.store.refresh() == size


def test_serve_workers_survive_a_killed_writer(tmp_path: Path) -> None:
    keys = [SigningKey.generate() for _ in range(4)]
    data = tmp_path / "data"
    run = log_with_attesters(data, keys)
    before = _size(data)
    bodies = [_statement_body(run, keys[i % 4], f"note {i}") for i in range(60)]
    limits = ("--limit-key-hour", "0", "--limit-key-day", "0")
    limits += ("--limit-address-hour", "0", "--limit-address-day", "0")
    acknowledged: dict[bytes, int] = {}
    with served(data, "--workers", "2", *limits) as base, httpx.Client(timeout=60) as client:

        def post(body: bytes) -> None:
            for _ in range(200):  # 503 while the writer restarts: safe to try again
                answer = client.post(f"{base}/v1/runs/{run}/attestations", content=body)
                if answer.status_code in (200, 201):
                    acknowledged[body] = answer.json()["index"]
                    return
                assert answer.status_code == 503, answer.text
                assert answer.headers["Retry-After"] == "1"
                time.sleep(0.05)
            raise AssertionError("never acknowledged")

        with ThreadPoolExecutor(8) as pool:
            writer = _writer_of(data)
            futures = [pool.submit(post, b) for b in bodies]
            while len(acknowledged) < 10:  # killed with posts under way
                time.sleep(0.005)
            os.kill(writer, signal.SIGKILL)
            for f in futures:
                f.result()
        assert _writer_of(data) != writer  # started again
    assert len(acknowledged) == len(bodies)
    assert len(set(acknowledged.values())) == len(bodies)
    assert _size(data) == before + len(bodies)  # each once: none lost, none doubled
    assert run_cli("verify", "--data", data).returncode == 0
    assert run_cli("replay", "--data", data).returncode == 0


def _writer_of(data: Path) -> int:
    """The live writer process of the server on ``data`` (found by its command line)."""
    for _ in range(200):
        for proc in Path("/proc").iterdir():
            try:
                args = (proc / "cmdline").read_bytes().split(b"\0")
                state = (proc / "stat").read_text().rsplit(")", 1)[1].split()[0]
            except (OSError, IndexError):
                continue
            if args[2:4] == [b"service.commands.writer", str(data).encode()] and state != "Z":
                return int(proc.name)
        time.sleep(0.05)
    raise AssertionError("no writer process")


def test_a_writer_that_goes_silent_after_the_request_says_it_may_be_recorded(
    tmp_path: Path,
) -> None:
    """A writer that took the frame and closed without answering: the worker cannot know
    whether it committed, and says so (not "nothing was recorded")."""
    import socket

    path = tmp_path / "silent.sock"
    server = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    server.bind(str(path))
    server.listen()

    def take_and_close() -> None:
        for _ in range(2):
            conn, _ = server.accept()
            conn.recv(1 << 16)
            conn.close()

    taker = threading.Thread(target=take_and_close)
    taker.start()
    client = WriterClient(path)
    try:
        with pytest.raises(WriterGone) as sync_gone:
            client.submit([], None)
        with pytest.raises(WriterGone):
            asyncio.run(client.submit_async([], None))
    finally:
        client.close()
        taker.join(10)
        server.close()
    problem = to_problem(sync_gone.value)
    assert problem.status_code == 503 and "may have been recorded" in str(problem.detail)


def test_a_request_prepared_before_its_turn_records_what_the_store_would(tmp_path: Path) -> None:
    """The group commit's callers prepare their pendings before they wait (the event decoded,
    a small batch's index envelopes signed): the entries are those the store would have made,
    and the log verifies."""
    keys = [SigningKey.generate()]
    data = tmp_path / "data"
    run = log_with_attesters(data, keys)
    payload = statement(run, {"kind": "environment-note", "note": "prepared"})
    envelope = encode_envelope(sign_envelope(INTOTO_PAYLOAD_TYPE, payload, keys[0]))
    with Ledger.open(data) as ledger:
        posted = Pending(
            type="attestation.posted.v1",
            subject=run,
            payload=payload,
            payload_type=INTOTO_PAYLOAD_TYPE,
            envelope=envelope,
        )
        revoked = pending_of(KeyRevoked(keyId=keys[0].key_id, reason="lost"), keys[0].key_id)
        prepared = ledger._prepared([posted, revoked])
        # The attester's envelope is kept; the index signs the event it appends itself.
        assert prepared[0].envelope == envelope
        assert prepared[1].envelope is not None
        assert envelope_signer(prepared[1].envelope) == ledger.signers.index.key_id
        assert prepared[0].decoded == statement_event(
            "attestation.posted.v1", payload, keys[0].key_id
        )
        # A payload that does not decode is left for the store to refuse, as it does today.
        garbage = msgspec.structs.replace(posted, payload=b"{", envelope=None)
        assert decoded_event(msgspec.structs.replace(garbage, signer="k")) is None
        answers = ledger.append_pending([posted, revoked])
        assert [a.new for a in answers] == [True, True]
        stored = {
            e.seq: e
            for e in (read_entry(leaf, position=seq) for seq, leaf in ledger.store.leaves())
        }
    assert stored[answers[0].seq].payload == payload
    assert stored[answers[1].seq].type == "key.revoked.v1"
    report = verify(data)
    assert report.ok, report.findings
