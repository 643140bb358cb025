"""What the review of the attestation path found, each pinned: checks inside one group commit
see the requests before them, a replayed public envelope costs its key no quota, hostile JSON
is a 400 (never a 500), and a statement is bounded."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from typing import Any

import msgspec

from events.entries import INTOTO_PAYLOAD_TYPE
from events.types import KeyRevoked
from keys import SigningKey, encode_envelope, sign_envelope
from projections.queries import keyring
from service.app.attest import post_attestation
from service.app.keys import register_key
from service.shared.limits import Limits
from tests.api.test_attestations import path, signed, statement
from tests.api.test_keys import World, challenge, problem, register, registration, world
from tests.api.test_limits_api import app
from verifier.log import verify_log

__all__ = ["world"]  # the fixture, shared with test_keys


def _queued_behind_a_commit(world: World, calls: list[Callable[[], Any]]) -> list[Any]:
    """Run ``calls`` in threads, in order, while a first append holds the writer's turn: they
    land in one group commit, in that order."""
    gate = threading.Event()
    out: list[Any] = [None] * len(calls)

    def hold() -> None:
        world.ledger.append_pending([], check=lambda _s: gate.wait(5))

    def run(i: int) -> None:
        try:
            out[i] = calls[i]()
        except Exception as exc:  # noqa: BLE001 - the test looks at it
            out[i] = exc

    threads = [threading.Thread(target=hold)]
    threads += [threading.Thread(target=run, args=(i,)) for i in range(len(calls))]
    for t in threads:
        t.start()
        time.sleep(0.15)  # each is queued (its own checks done) before the next starts
    gate.set()
    for t in threads:
        t.join(10)
    return out


def test_a_revocation_earlier_in_the_group_refuses_the_attestation_after_it(
    world: World,
) -> None:
    key = SigningKey.generate()
    register(world, key, "soon-revoked")
    body = signed(statement(world.runs[0], {"kind": "reproduced"}), key)
    size = world.size()
    revoked, posted = _queued_behind_a_commit(
        world,
        [
            lambda: world.ledger.append(
                [(KeyRevoked(keyId=key.key_id, reason="lost"), key.key_id)]
            ),
            lambda: post_attestation(world.ledger, world.runs[0], body, admit=lambda _k: None),
        ],
    )
    assert not isinstance(revoked, Exception), revoked
    assert type(posted).__name__ == "UnknownAttester", posted
    assert world.size() == size + 1  # the revocation alone
    assert verify_log(world.ledger.data.db).ok


def test_two_registrations_of_one_name_in_one_group(world: World) -> None:
    alice, other = SigningKey.generate(), SigningKey.generate()
    first = registration(alice, "alice", challenge(world, alice))
    second = registration(other, "ALICE", challenge(world, other))
    results = _queued_behind_a_commit(
        world,
        [
            lambda: register_key(world.ledger, first, admit=lambda _k: None),
            lambda: register_key(world.ledger, second, admit=lambda _k: None),
        ],
    )
    # Whichever commits first keeps the name; the other is refused, nothing else appended.
    assert sorted(type(r).__name__ for r in results) == ["NameTaken", "Registered"], results
    names = [k.name.casefold() for k in keyring(world.ledger.store.session).values()]
    assert names.count("alice") == 1
    assert verify_log(world.ledger.data.db).ok


def test_replaying_a_public_envelope_costs_its_key_nothing(world: World) -> None:
    key = SigningKey.generate()
    register(world, key, "victim")
    # Its registration counted once already (the counts live in the data directory).
    limits = Limits(key_hour=3, key_day=0, address_hour=0, address_day=0)
    with app(world, limits) as client:
        first = signed(statement(world.runs[0], {"kind": "reproduced", "note": "one"}), key)
        assert client.post(path(world.runs[0]), content=first).status_code == 201
        for _ in range(5):  # anyone may replay it: the log holds it, nobody's quota is used
            assert client.post(path(world.runs[0]), content=first).status_code == 200
        second = signed(statement(world.runs[0], {"kind": "reproduced", "note": "two"}), key)
        assert client.post(path(world.runs[0]), content=second).status_code == 201
        third = signed(statement(world.runs[0], {"kind": "reproduced", "note": "three"}), key)
        problem(client.post(path(world.runs[0]), content=third), 429, "rate-limited")
        # A replayed registration is refused for its used challenge before it counts.
        replay = registration(key, "victim", "x" * 43)
        assert client.post("/v1/keys", content=replay).status_code in (400, 410)


def test_deeply_nested_json_is_a_400(world: World) -> None:
    deep = b'{"payloadType": ' + b"[" * 100_000 + b"]" * 100_000 + b"}"
    size = world.size()
    problem(world.client.post(path(world.runs[0]), content=deep), 400, "bad-envelope")
    problem(world.client.post("/v1/keys", content=deep), 400, "bad-envelope")
    key = SigningKey.generate()
    register(world, key, "nester")
    shallow = statement(world.runs[0], {"kind": "environment-note", "environment": {"x": "X"}})
    payload = msgspec.json.encode(shallow).replace(
        b'{"x":"X"}', b'{"a":' * 100_000 + b"{}" + b"}" * 100_000
    )
    body = encode_envelope(sign_envelope(INTOTO_PAYLOAD_TYPE, payload, key))
    problem(world.client.post(path(world.runs[0]), content=body), 400, "invalid-statement")
    assert world.size() == size + 1  # the registration alone


def test_a_statement_over_64_kib_is_refused(world: World) -> None:
    key = SigningKey.generate()
    register(world, key, "verbose")
    environment = {f"k{i}": "x" * 100 for i in range(700)}
    body = signed(
        statement(world.runs[0], {"kind": "environment-note", "environment": environment}), key
    )
    size = world.size()
    problem(world.client.post(path(world.runs[0]), content=body), 400, "invalid-statement")
    assert world.size() == size
