"""The one authority (``events.authority``), end to end: whatever the application appends,
``verify`` accepts; whatever ``verify`` refuses, the application refuses.

Hypothesis draws a sequence of application operations (``service.app``, with real keys):
self-registrations, revocations by the key itself and by the operator, grants of the rerunner
role, attestations, withdrawals by the attester and by other keys, hidings, rerun requests, and
claims and results by rerunners and by other keys (some for another worker), any of them before
or after the key's revocation. Each operation the application accepts appends one entry and
each refusal appends nothing; then the whole log verifies (``verifier.log.verify_log``). Last
comes one forged request, built to break a rule (signed by a key of the wrong role, by a
revoked or unknown key, a withdrawal by a non-attester, a claim for another worker...): the
application refuses it, and appended directly to the store (the ledger,
bypassing the application's checks) it is the entry ``verify`` refuses, and the only one; and
the folds read every entry, the forged one too, the same way on replay.

``make test`` runs 10 sequences for each forgery (about 10 s on one core);
``BENCHPROOF_AUTHORITY_EXAMPLES=500`` runs that many for each.
"""

from __future__ import annotations

import base64
import contextlib
import os
import shutil
import tempfile
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from datetime import timedelta
from pathlib import Path
from typing import Any

import msgspec
import pytest
from hypothesis import HealthCheck, event, given, settings
from hypothesis import strategies as st

from events.entries import EVENT_PAYLOAD_TYPE, INTOTO_PAYLOAD_TYPE, Pending, format_instant
from events.stores import open_reader
from events.types import (
    EVENT_ENCODER,
    RERUN_PREDICATE_V2,
    AttestationHidden,
    AttestationWithdrawn,
    Event,
    KeyGranted,
    KeyRegistered,
    KeyRevoked,
    RerunClaimedV2,
)
from keys import SigningKey, encode_envelope, sign_envelope
from projections import queries
from projections.errors import ProjectionError
from service.app import attest, keyadmin, keys, moderation, reruns
from service.app.replay import replay
from service.core.ledger import Ledger, init_data_dir
from service.errors import ServiceError
from tests.builders import bundle, ingest_event
from verifier.log import verify_log

EXAMPLES = int(os.environ.get("BENCHPROOF_AUTHORITY_EXAMPLES", "10"))  # for each forgery
KEYS = [SigningKey.from_seed(bytes([i + 1]) * 32) for i in range(4)]  # the operations' keys
SPARE = [SigningKey.from_seed(bytes([0x80 + i]) * 32) for i in range(40)]  # what forgeries need
BY_ID = {key.key_id: key for key in (*KEYS, *SPARE)}
STRANGER = SigningKey.from_seed(b"\x66" * 32)  # never registered
RUNS = [bundle(group=1, author=v, value=v, raw_evidence=True) for v in (100, 200)]
GPU = {"kind": "gpu", "model": "NVIDIA B200", "architecture": "sm_100"}
SAMPLES = [100.0] * 10
OPERATOR = b'{"reason": "operator"}'


def _noop(_key_id: str) -> None:
    return None


@pytest.fixture(scope="module")
def template(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A data directory with two runs the rerun requests can name (a GPU each)."""
    root = tmp_path_factory.mktemp("authority") / "data"
    ledger, _ = init_data_dir(root)
    with ledger:
        ledger.append([(ingest_event(parts), parts["run"].digest) for parts in RUNS])
    return root


# In memory where the machine has it: every accepted request is a durable commit (an fsync).
SCRATCH = "/dev/shm" if os.path.isdir("/dev/shm") and os.access("/dev/shm", os.W_OK) else None


@contextlib.contextmanager
def fresh(template: Path) -> Iterator[Ledger]:
    """A ledger over a copy of ``template``, for one sequence."""
    with tempfile.TemporaryDirectory(dir=SCRATCH) as tmp:
        root = Path(tmp) / "data"
        shutil.copytree(template, root)
        ledger = Ledger.open(root)
        try:
            yield ledger
        finally:
            ledger.close()


# --- Requests, as a client builds them ----------------------------------------------------------


def signed_event(event: Event, key: SigningKey) -> bytes:
    return encode_envelope(sign_envelope(EVENT_PAYLOAD_TYPE, EVENT_ENCODER.encode(event), key))


def signed_statement(statement: dict[str, Any], key: SigningKey) -> bytes:
    payload = msgspec.json.encode(statement)
    return encode_envelope(sign_envelope(INTOTO_PAYLOAD_TYPE, payload, key))


def registration(
    key: SigningKey, challenge: str, *, role: str = "community", by: SigningKey | None = None
) -> bytes:
    event = KeyRegistered(
        keyId=key.key_id,
        publicKey=base64.b64encode(key.public.raw).decode(),
        role=role,  # type: ignore[arg-type]
        name=f"key-{key.key_id[:8]}",
        challenge=challenge,
    )
    return signed_event(event, by or key)


def result(run: str, request_id: str, key: SigningKey) -> bytes:
    statement = {
        "_type": "https://in-toto.io/Statement/v1",
        "subject": [{"name": run, "digest": {"sha256": run.removeprefix("sha256:")}}],
        "predicateType": RERUN_PREDICATE_V2,
        "predicate": {
            "requestId": request_id,
            "samples": SAMPLES,
            "correctness": {"passed": True, "detail": "exact"},
            "environment": GPU,
            "harness": {"name": "test-harness", "version": "1"},
        },
    }
    return signed_statement(statement, key)


def pending(entry_type: str, subject: str, body: bytes) -> Pending:
    """The entry the application would append for ``body``: the envelope as posted."""
    envelope = msgspec.json.decode(body)
    payload = base64.b64decode(envelope["payload"])
    return Pending(entry_type, subject, payload, envelope["payloadType"], body)


# --- The world: a ledger and what the operations made --------------------------------------------


@dataclass
class World:
    ledger: Ledger
    runs: list[str]
    attestations: list[tuple[str, str]] = field(default_factory=list)  # (id, attester key id)
    requests: list[tuple[str, str]] = field(default_factory=list)  # (request id, run)
    refusals: list[str] = field(default_factory=list)  # the errors of the refused requests
    accepted: list[str] = field(default_factory=list)  # the operations that appended

    def size(self) -> int:
        return self.ledger.store.refresh()

    def lease(self) -> str:
        return format_instant(self.ledger.clock() + timedelta(minutes=30))

    def call(self, write: Callable[[], bool], name: str = "") -> bool:
        """Send one request (``write`` says whether it appended its entry, or found it in the
        log already): True if it appended, False if it was refused (and appended nothing)."""
        before = self.size()
        try:
            new = write()
        except (ServiceError, ProjectionError) as exc:
            self.refusals.append(type(exc).__name__)
            new = False
        assert self.size() == before + new, self.refusals
        if new:
            self.accepted.append(name)
        return new

    def reads(self) -> Any:
        return contextlib.closing(open_reader(self.ledger.data.store))

    # The operations.
    def register(self, key: SigningKey) -> bool:
        def write() -> bool:
            challenge = keys.issue_challenge(self.ledger, key.key_id).challenge
            keys.register_key(self.ledger, registration(key, challenge), admit=_noop)
            return True

        return self.call(write, "register")

    def revoke_self(self, key: SigningKey) -> bool:
        body = signed_event(KeyRevoked(keyId=key.key_id, reason="lost"), key)
        return self.call(
            lambda: bool(keyadmin.revoke_itself(self.ledger, key.key_id, body, admit=_noop)),
            "revoke_self",
        )

    def revoke_by_operator(self, key: SigningKey) -> bool:
        return self.call(
            lambda: bool(keyadmin.revoke_by_operator(self.ledger, key.key_id, OPERATOR)),
            "revoke_by_operator",
        )

    def grant(self, key: SigningKey) -> bool:
        body = b'{"role": "rerunner"}'
        return self.call(lambda: bool(keyadmin.grant_role(self.ledger, key.key_id, body)), "grant")

    def attest(self, key: SigningKey, run: str) -> bool:
        body = signed_statement(attest.statement_of(run, {"kind": "reproduced"}), key)

        def write() -> bool:
            posting = attest.post_attestation(self.ledger, run, body, admit=_noop)
            if posting.new:
                self.attestations.append((posting.posted.id, key.key_id))
            return posting.new

        return self.call(write, "attest")

    def withdraw(self, key: SigningKey, attestation: str) -> bool:
        event = AttestationWithdrawn(attestationId=attestation, reason="mistaken")
        body = signed_event(event, key)
        return self.call(
            lambda: bool(
                moderation.withdraw_attestation(self.ledger, attestation, body, admit=_noop)
            ),
            "withdraw",
        )

    def hide(self, attestation: str) -> bool:
        return self.call(
            lambda: bool(moderation.hide_attestation(self.ledger, attestation, OPERATOR)), "hide"
        )

    def request(self, run: str) -> bool:
        def write() -> bool:
            reason = b'{"reason": "round %d"}' % len(self.requests)
            recorded, new = reruns.request_rerun(self.ledger, run, reason)
            if new:
                self.requests.append((recorded.id, run))
            return new

        return self.call(write, "request")

    def claim_body(self, key: SigningKey, request: tuple[str, str], worker: str) -> bytes:
        request_id, run = request
        event = RerunClaimedV2(
            runDigest=run,
            requestId=request_id,
            worker=worker,
            leaseUntil=self.lease(),
            environment=GPU,
        )
        return signed_event(event, key)

    def claim(self, key: SigningKey, request: tuple[str, str], worker: str) -> bool:
        body = self.claim_body(key, request, worker)

        def write() -> bool:
            with self.reads() as reads:
                return reruns.claim_rerun(self.ledger, request[0], body, reads)[1]

        return self.call(write, "claim")

    def complete(self, key: SigningKey, request: tuple[str, str]) -> bool:
        body = result(request[1], request[0], key)

        def write() -> bool:
            with self.reads() as reads:
                return reruns.complete_rerun(self.ledger, request[0], body, reads).new

        return self.call(write, "complete")

    # What the log holds now, and what a forgery needs made first (through the application).
    def role(self, key: SigningKey) -> str | None:
        """The role of ``key`` if the log holds it valid now."""
        with self.ledger.store.snapshot() as conn:
            view = queries.keyring(conn).get(key.key_id)
        return view.role if view is not None and view.until is None else None

    def known(self, key: SigningKey) -> bool:
        with self.ledger.store.snapshot() as conn:
            return key.key_id in queries.keyring(conn)

    def valid_key(self, role: str, avoid: str = "") -> SigningKey:
        """A key valid now with ``role`` (community or rerunner) other than ``avoid``: one of
        the operations' keys if one is, else a spare one registered (and granted) now."""
        for key in (*KEYS, *SPARE):
            if key.key_id != avoid and self.role(key) == role:
                return key
        key = next(k for k in SPARE if not self.known(k))
        assert self.register(key), self.refusals
        if role == "rerunner":
            assert self.grant(key), self.refusals
        return key

    def revoked(self, role: str) -> SigningKey:
        key = self.valid_key(role)
        assert self.revoke_by_operator(key), self.refusals
        return key

    def an_attestation(self, seed: int) -> tuple[str, str]:
        if not self.attestations:
            assert self.attest(self.valid_key("community"), self.runs[seed % 2]), self.refusals
        return self.attestations[seed % len(self.attestations)]

    def a_request(self, seed: int) -> tuple[str, str]:
        if not self.requests:
            assert self.request(self.runs[seed % 2]), self.refusals
        return self.requests[seed % len(self.requests)]


# --- The operations a sequence draws --------------------------------------------------------------

key_i = st.integers(0, len(KEYS) - 1)
pick = st.integers(0, 50)
operation = st.one_of(
    st.tuples(st.just("register"), key_i),
    st.tuples(st.just("revoke_self"), key_i),
    st.tuples(st.just("revoke_by_operator"), key_i),
    st.tuples(st.just("grant"), key_i),
    st.tuples(st.just("attest"), key_i, pick),
    st.tuples(st.just("withdraw"), key_i, pick),
    st.tuples(st.just("hide"), pick),
    st.tuples(st.just("request"), pick),
    st.tuples(st.just("claim"), key_i, pick, st.one_of(st.none(), key_i)),
    st.tuples(st.just("complete"), key_i, pick),
    # A request, a claim and a result, the last two by keys that may not be the same.
    st.tuples(st.just("round"), pick, key_i, st.one_of(st.none(), key_i)),
)


def run_operation(world: World, op: tuple[Any, ...]) -> None:
    """Send the request ``op`` names (an operation on an attestation or a request the world
    does not hold yet is skipped)."""
    attestations, requests = world.attestations, world.requests
    match op:
        case ("register", k):
            world.register(KEYS[k])
        case ("revoke_self", k):
            world.revoke_self(KEYS[k])
        case ("revoke_by_operator", k):
            world.revoke_by_operator(KEYS[k])
        case ("grant", k):
            world.grant(KEYS[k])
        case ("attest", k, i):
            world.attest(KEYS[k], world.runs[i % 2])
        case ("withdraw", k, i) if attestations:
            world.withdraw(KEYS[k], attestations[i % len(attestations)][0])
        case ("hide", i) if attestations:
            world.hide(attestations[i % len(attestations)][0])
        case ("request", i):
            world.request(world.runs[i % 2])
        case ("claim", k, i, other) if requests:
            worker = KEYS[k if other is None else other].key_id
            world.claim(KEYS[k], requests[i % len(requests)], worker)
        case ("complete", k, i) if requests:
            world.complete(KEYS[k], requests[i % len(requests)])
        case ("round", i, k, other):
            if world.request(world.runs[i % 2]):
                world.claim(KEYS[k], requests[-1], KEYS[k].key_id)
                world.complete(KEYS[k if other is None else other], requests[-1])


# --- Forged requests: each breaks one rule ---------------------------------------------------------

Forgery = tuple[Callable[[], object], Pending]
"""The request sent to the application, and the entry it would append."""


def _attestation_by(world: World, key: SigningKey, seed: int) -> Forgery:
    run = world.runs[seed % 2]
    body = signed_statement(attest.statement_of(run, {"kind": "environment-note"}), key)
    return (
        lambda: attest.post_attestation(world.ledger, run, body, admit=_noop),
        pending("attestation.posted.v1", run, body),
    )


def _withdrawal_by(world: World, key: SigningKey, attestation: str) -> Forgery:
    body = signed_event(AttestationWithdrawn(attestationId=attestation, reason="not mine"), key)
    return (
        lambda: moderation.withdraw_attestation(world.ledger, attestation, body, admit=_noop),
        pending("attestation.withdrawn.v1", attestation, body),
    )


def _claim_by(world: World, key: SigningKey, seed: int, worker: str | None = None) -> Forgery:
    request = world.a_request(seed)
    body = world.claim_body(key, request, worker or key.key_id)

    def write() -> None:
        with world.reads() as reads:
            reruns.claim_rerun(world.ledger, request[0], body, reads)

    return write, pending("rerun.claimed.v2", request[1], body)


def _result_by(world: World, key: SigningKey, seed: int) -> Forgery:
    request = world.a_request(seed)
    body = result(request[1], request[0], key)

    def write() -> None:
        with world.reads() as reads:
            reruns.complete_rerun(world.ledger, request[0], body, reads)

    return write, pending("rerun.completed.v2", request[1], body)


def forge(world: World, kind: str, seed: int) -> Forgery:
    """The forged request ``kind``, once what it needs is made through the application."""
    if kind == "attestation by the index key":
        return _attestation_by(world, world.ledger.signers.index, seed)
    if kind == "attestation by an unknown key":
        return _attestation_by(world, STRANGER, seed)
    if kind == "attestation by a revoked key":
        return _attestation_by(world, world.revoked("community"), seed)
    if kind == "withdrawal by another key":
        attestation, attester = world.an_attestation(seed)
        role = "community" if seed % 2 else "rerunner"
        return _withdrawal_by(world, world.valid_key(role, avoid=attester), attestation)
    if kind == "withdrawal by a revoked attester":
        attestation, attester = world.an_attestation(seed)
        key = BY_ID[attester]
        if world.role(key) is not None:
            assert world.revoke_by_operator(key), world.refusals
        return _withdrawal_by(world, key, attestation)
    if kind == "claim by a community key":
        return _claim_by(world, world.valid_key("community"), seed)
    if kind == "claim for another worker":
        return _claim_by(world, world.valid_key("rerunner"), seed, worker=STRANGER.key_id)
    if kind == "claim by a revoked rerunner":
        return _claim_by(world, world.revoked("rerunner"), seed)
    if kind == "result by a community key":
        return _result_by(world, world.valid_key("community"), seed)
    if kind == "revocation of another key":
        signer = world.valid_key("community")
        target = world.valid_key("rerunner" if seed % 2 else "community", avoid=signer.key_id)
        body = signed_event(KeyRevoked(keyId=target.key_id, reason="mine now"), signer)
        return (
            lambda: keyadmin.revoke_itself(world.ledger, target.key_id, body, admit=_noop),
            pending("key.revoked.v1", target.key_id, body),
        )
    if kind in ("registration signed by another key", "self-registration as a rerunner"):
        challenge = keys.issue_challenge(world.ledger, STRANGER.key_id).challenge
        if kind == "self-registration as a rerunner":
            body = registration(STRANGER, challenge, role="rerunner")
        else:
            body = registration(STRANGER, challenge, by=world.valid_key("community"))
        return (
            lambda: keys.register_key(world.ledger, body, admit=_noop),
            pending("key.registered.v1", STRANGER.key_id, body),
        )
    if kind == "grant by the key itself":
        key = world.valid_key("community")
        body = signed_event(KeyGranted(keyId=key.key_id, role="rerunner"), key)
        return (
            lambda: keyadmin.grant_role(world.ledger, key.key_id, body),
            pending("key.granted.v1", key.key_id, body),
        )
    if kind == "hiding by a community key":
        attestation, _ = world.an_attestation(seed)
        body = signed_event(
            AttestationHidden(attestationId=attestation, reason="spam"),
            world.valid_key("community"),
        )
        return (
            lambda: moderation.hide_attestation(world.ledger, attestation, body),
            pending("attestation.hidden.v1", attestation, body),
        )
    raise AssertionError(kind)


FORGERIES = [
    "attestation by the index key",
    "attestation by an unknown key",
    "attestation by a revoked key",
    "withdrawal by another key",
    "withdrawal by a revoked attester",
    "claim by a community key",
    "claim for another worker",
    "claim by a revoked rerunner",
    "result by a community key",
    "revocation of another key",
    "registration signed by another key",
    "self-registration as a rerunner",
    "grant by the key itself",
    "hiding by a community key",
]


@pytest.mark.parametrize("forged", FORGERIES)
@settings(
    max_examples=EXAMPLES,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
@given(
    community=st.sets(key_i),
    rerunners=st.sets(key_i),
    ops=st.lists(operation, max_size=14),
    seed=st.integers(0, 1000),
)
def test_what_the_application_appends_verifies_and_what_verify_refuses_it_refuses(
    template: Path,
    community: set[int],
    rerunners: set[int],
    ops: list[tuple[Any, ...]],
    forged: str,
    seed: int,
) -> None:
    with fresh(template) as ledger:
        world = World(ledger, [parts["run"].digest for parts in RUNS])
        for k in sorted(community | rerunners):  # the keys the operations start with
            world.register(KEYS[k])
        for k in sorted(rerunners):
            world.grant(KEYS[k])
        for op in ops:
            run_operation(world, op)
        write, entry = forge(world, forged, seed)
        for name in sorted(set(world.accepted)):
            event(f"accepted: {name}")
        for refusal in sorted(set(world.refusals)):
            event(f"refused: {refusal}")
        report = verify_log(ledger.store)
        assert report.ok, (report.findings, ops)
        assert report.entries == world.size()

        assert not world.call(lambda: bool(write())), f"the application took the {forged}"
        position = world.size()
        assert ledger.append_pending([entry])[0].seq == position
        findings = verify_log(ledger.store).findings
        assert findings, f"verify took the {forged}"
        assert {f.position for f in findings} == {position}, findings
        assert replay(ledger).ok  # the folds read every entry, the forged one too, alike
