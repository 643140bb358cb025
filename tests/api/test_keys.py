"""Community keys over HTTP: a challenge, then a registration signed by the key it registers.
Every refusal is its own problem type and appends nothing. The ``world`` fixture (a fresh data
directory with two runs, a clock the test moves, an app over it) serves the attestation and
report tests too."""

from __future__ import annotations

import base64
import threading
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import msgspec
import pytest
from litestar import Litestar
from litestar.testing import TestClient

from events.entries import EVENT_PAYLOAD_TYPE
from events.types import EVENT_ENCODER, KeyRegistered
from events.types.keys import Role
from keys import SigningKey, encode_envelope, sign_envelope
from projections.queries import keyring
from service.app.replay import replay
from service.core.config import Settings
from service.core.init import init_data_dir
from service.core.ledger import Ledger
from service.shared.challenges import Challenges, ChallengeUsed
from service.web.app import create_app
from service.web.problems import BASE
from tests.builders import bundle, ingest_event
from verifier.log import verify_log

Client = TestClient[Litestar]


class Clock:
    """A clock the test moves."""

    def __init__(self) -> None:
        self.now = datetime(2026, 3, 1, 12, 0, 0, tzinfo=UTC)

    def __call__(self) -> datetime:
        return self.now


class World:
    def __init__(self, client: Client, ledger: Ledger, clock: Clock, runs: list[str]) -> None:
        self.client = client
        self.ledger = ledger
        self.clock = clock
        self.runs = runs

    def size(self) -> int:
        return self.ledger.store.refresh()


@pytest.fixture
def world(tmp_path: Path) -> Iterator[World]:
    clock = Clock()
    root = tmp_path / "data"
    ledger, _ = init_data_dir(root, clock=clock)
    runs = []
    for value in (100, 200):
        parts = bundle(group=1, author=value, value=value, raw_evidence=True)
        ledger.append([(ingest_event(parts), parts["run"].digest)])
        runs.append(parts["run"].digest)
    try:
        with TestClient(app=create_app(Settings(data=root), ledger=ledger)) as client:
            yield World(client, ledger, clock, runs)
    finally:
        ledger.close()


def problem(response: Any, status: int, kind: str) -> dict[str, Any]:
    """The response is the problem ``kind`` (its type's last segment) with ``status``."""
    assert response.status_code == status, response.text
    assert response.headers["content-type"].startswith("application/problem+json")
    body: dict[str, Any] = response.json()
    assert body["type"] == f"{BASE}/{kind}", body
    assert body["status"] == status
    return body


def refused(world: World, path: str, content: bytes, status: int, kind: str) -> None:
    """Posting ``content`` to ``path`` is the problem ``kind`` and appends nothing."""
    before = world.size()
    problem(world.client.post(path, content=content), status, kind)
    assert world.size() == before


def challenge(world: World, key: SigningKey) -> str:
    r = world.client.post("/v1/keys/challenges", json={"keyId": key.key_id})
    assert r.status_code == 201, r.text
    value: str = r.json()["challenge"]
    return value


def registration(
    key: SigningKey,
    name: str,
    challenge: str | None,
    *,
    role: Role = "community",
    signer: SigningKey | None = None,
) -> bytes:
    """A registration envelope for ``key`` (signed by ``signer``, by default the key itself)."""
    event = KeyRegistered(
        keyId=key.key_id,
        publicKey=base64.b64encode(key.public.raw).decode(),
        role=role,
        name=name,
        challenge=challenge,
    )
    payload = EVENT_ENCODER.encode(event)
    return encode_envelope(sign_envelope(EVENT_PAYLOAD_TYPE, payload, signer or key))


def register(world: World, key: SigningKey, name: str) -> dict[str, Any]:
    """Register ``key`` as ``name`` through the API."""
    r = world.client.post("/v1/keys", content=registration(key, name, challenge(world, key)))
    assert r.status_code == 201, r.text
    body: dict[str, Any] = r.json()
    return body


def test_challenge_is_bound_single_use_and_expires_in_five_minutes(world: World) -> None:
    key = SigningKey.generate()
    r = world.client.post("/v1/keys/challenges", json={"keyId": key.key_id})
    assert r.status_code == 201, r.text
    body = r.json()
    assert body["keyId"] == key.key_id
    assert body["expiresAt"] == "2026-03-01T12:05:00Z"
    assert len(body["challenge"]) == 43
    assert len(base64.urlsafe_b64decode(body["challenge"] + "=")) == 32
    assert challenge(world, key) != body["challenge"]


@pytest.mark.parametrize("key_id", ["ABC", "A" * 64, "g" * 64, ""])
def test_challenge_for_a_malformed_key_id_is_refused(world: World, key_id: str) -> None:
    problem(world.client.post("/v1/keys/challenges", json={"keyId": key_id}), 400, "bad-request")


def test_register_with_a_valid_challenge(world: World) -> None:
    key = SigningKey.generate()
    before = world.size()
    body = registration(key, "alice", challenge(world, key))
    r = world.client.post("/v1/keys", content=body)
    assert r.status_code == 201, r.text
    assert r.json() == {"keyId": key.key_id, "name": "alice", "role": "community", "index": before}
    assert world.size() == before + 1
    view = keyring(world.ledger.store.session)[key.key_id]
    assert (view.role, view.name, view.since) == ("community", "alice", before + 1)
    assert body in (world.ledger.store.leaf(before) or b"")  # the key's own envelope, as posted
    assert verify_log(world.ledger.store).ok
    assert replay(world.ledger).ok


def test_bad_signature_is_403(world: World) -> None:
    key = SigningKey.generate()
    envelope = msgspec.json.decode(registration(key, "alice", challenge(world, key)))
    other = SigningKey.generate().sign(b"something else")
    envelope["signatures"][0]["sig"] = base64.b64encode(other).decode()
    refused(world, "/v1/keys", msgspec.json.encode(envelope), 403, "bad-signature")


def test_envelope_key_id_of_another_key_is_403(world: World) -> None:
    key, other = SigningKey.generate(), SigningKey.generate()
    body = registration(key, "alice", challenge(world, key), signer=other)
    refused(world, "/v1/keys", body, 403, "key-mismatch")


def test_replayed_challenge_is_410(world: World) -> None:
    key = SigningKey.generate()
    body = registration(key, "alice", challenge(world, key))
    assert world.client.post("/v1/keys", content=body).status_code == 201
    refused(world, "/v1/keys", body, 410, "challenge-used")


def test_expired_challenge_is_410(world: World) -> None:
    key = SigningKey.generate()
    body = registration(key, "alice", challenge(world, key))
    world.clock.now += timedelta(minutes=5)
    refused(world, "/v1/keys", body, 410, "challenge-expired")


def test_challenge_of_another_key_is_refused(world: World) -> None:
    key, other = SigningKey.generate(), SigningKey.generate()
    refused(
        world,
        "/v1/keys",
        registration(key, "alice", challenge(world, other)),
        400,
        "challenge-foreign",
    )


def test_challenge_never_issued_is_refused(world: World) -> None:
    key = SigningKey.generate()
    refused(world, "/v1/keys", registration(key, "alice", "A" * 43), 400, "challenge-unknown")


def test_name_taken_case_insensitively_is_409_and_leaves_the_challenge(world: World) -> None:
    register(world, SigningKey.generate(), "Alice")
    key = SigningKey.generate()
    issued = challenge(world, key)
    refused(world, "/v1/keys", registration(key, "aLICE", issued), 409, "name-taken")
    r = world.client.post("/v1/keys", content=registration(key, "bob", issued))
    assert r.status_code == 201, r.text


def test_key_registered_already_is_409(world: World) -> None:
    key = SigningKey.generate()
    register(world, key, "alice")
    refused(
        world, "/v1/keys", registration(key, "alice2", challenge(world, key)), 409, "key-registered"
    )


def test_index_and_log_key_names_are_taken(world: World) -> None:
    key = SigningKey.generate()
    refused(world, "/v1/keys", registration(key, "INDEX", challenge(world, key)), 409, "name-taken")


def test_malformed_registrations_are_400(world: World) -> None:
    key = SigningKey.generate()
    issued = challenge(world, key)
    good = msgspec.json.decode(registration(key, "alice", issued))
    enc = msgspec.json.encode
    two = {**good, "signatures": good["signatures"] * 2}
    extra = {**good, "extra": 1}
    not_base64 = {**good, "payload": good["payload"] + "\n"}
    other_type = encode_envelope(
        sign_envelope("application/vnd.in-toto+json", base64.b64decode(good["payload"]), key)
    )
    payload = base64.b64decode(good["payload"])
    padded = encode_envelope(sign_envelope(EVENT_PAYLOAD_TYPE, payload[:-1] + b', "x": 1}', key))
    for body, kind in (
        (b"not json", "bad-envelope"),
        (enc(two), "bad-envelope"),
        (enc(extra), "bad-envelope"),
        (
            b'{"payloadType": "a", "payloadType": "b", "payload": "", "signatures": []}',
            "bad-envelope",
        ),
        (enc({**good, "signatures": []}), "bad-envelope"),
        (enc(not_base64), "bad-envelope"),
        (other_type, "unsupported-payload-type"),
        (registration(key, "alice", issued, role="index"), "invalid-registration"),
        (registration(key, "al ice", issued), "invalid-registration"),
        (registration(key, "alice", None), "invalid-registration"),
        (padded, "invalid-registration"),
    ):
        refused(world, "/v1/keys", body, 400, kind)
    # Nothing of it used the challenge.
    assert (
        world.client.post("/v1/keys", content=registration(key, "alice", issued)).status_code == 201
    )


def test_challenges_are_shared_through_the_database_and_used_once(world: World) -> None:
    key = SigningKey.generate()
    issued = challenge(world, key)
    db = world.ledger.data.db
    now = world.clock.now
    results: list[str] = []

    def use() -> None:
        try:
            # Another handle, as another process.
            Challenges(world.ledger.data.store, db).use(issued, key.key_id, now)
            results.append("used")
        except ChallengeUsed:
            results.append("refused")

    threads = [threading.Thread(target=use) for _ in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert sorted(results) == ["refused", "refused", "refused", "used"]
