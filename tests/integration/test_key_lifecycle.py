"""Key lifecycle in the log: each signature is checked against the key as it stood at the
entry's position (registered before it, not revoked or rotated away)."""

from __future__ import annotations

import base64

import msgspec

from events.entries import INTOTO_PAYLOAD_TYPE, Pending
from events.types import EVENT_ENCODER, Event, KeyRegistered, KeyRevoked, KeyRotated, event_tag
from keys import SigningKey, encode_envelope, sign_envelope
from service.core.ledger import Ledger
from verifier.log import verify_log

RUN = "sha256:" + "ef" * 32


def _signed(event: Event, subject: str, key: SigningKey) -> Pending:
    payload = EVENT_ENCODER.encode(event)
    envelope = encode_envelope(sign_envelope("application/vnd.benchproof.event+json", payload, key))
    return Pending(type=event_tag(event), subject=subject, payload=payload, envelope=envelope)


def _register(key: SigningKey, role: str) -> KeyRegistered:
    public = base64.b64encode(key.public.raw).decode()
    return KeyRegistered(keyId=key.key_id, publicKey=public, role=role, name=f"{role}-key")  # type: ignore[arg-type]


def _attestation(key: SigningKey, note: str) -> Pending:
    statement = {
        "_type": "https://in-toto.io/Statement/v1",
        "subject": [{"name": "run", "digest": {"sha256": RUN.removeprefix("sha256:")}}],
        "predicateType": "https://benchproof.dev/attestation/v1",
        "predicate": {"kind": "note", "text": note},
    }
    payload = msgspec.json.encode(statement)
    envelope = encode_envelope(sign_envelope(INTOTO_PAYLOAD_TYPE, payload, key))
    return Pending(
        type="attestation.posted.v1",
        subject=RUN,
        payload=payload,
        payload_type=INTOTO_PAYLOAD_TYPE,
        envelope=envelope,
    )


def _first_problem(ledger: Ledger) -> tuple[int, str] | None:
    report = verify_log(ledger.data.db)
    return None if report.ok else (report.findings[0].position, report.findings[0].reason)


def test_self_registered_community_key_may_attest(ledger: Ledger) -> None:
    community = SigningKey.generate()
    ledger.append_pending([_signed(_register(community, "community"), community.key_id, community)])
    ledger.append_pending([_attestation(community, "reproduced on my B200")])
    assert _first_problem(ledger) is None
    (count,) = ledger.store.session.execute("SELECT count(*) FROM p_attestations").fetchone()
    assert count == 1


def test_a_key_cannot_sign_before_it_is_registered(ledger: Ledger) -> None:
    community = SigningKey.generate()
    ledger.append_pending([_attestation(community, "too early")])
    problem = _first_problem(ledger)
    assert problem is not None
    assert problem[0] == 3  # after the genesis batch: two keys and the tolerance policy
    assert "not valid" in problem[1]


def test_a_revoked_key_is_refused_from_its_revocation_on(ledger: Ledger) -> None:
    community = SigningKey.generate()
    ledger.append_pending([_signed(_register(community, "community"), community.key_id, community)])
    ledger.append_pending([_attestation(community, "before")])
    ledger.append([(KeyRevoked(keyId=community.key_id, reason="lost laptop"), community.key_id)])
    assert _first_problem(ledger) is None
    ledger.append_pending([_attestation(community, "after")])
    problem = _first_problem(ledger)
    assert problem == (
        ledger.store.size - 1,
        f"entry {ledger.store.size - 1}: signed by key {community.key_id[:16]}…, which is not valid at this position",
    )


def test_rotation_hands_over_to_the_new_key(ledger: Ledger) -> None:
    old, new = SigningKey.generate(), SigningKey.generate()
    ledger.append([(_register(old, "rerunner"), old.key_id)])
    rotate = KeyRotated(
        keyId=old.key_id,
        newKeyId=new.key_id,
        newPublicKey=base64.b64encode(new.public.raw).decode(),
    )
    ledger.append_pending([_signed(rotate, old.key_id, old)])
    ledger.append_pending([_attestation(new, "signed by the successor")])
    assert _first_problem(ledger) is None
    ledger.append_pending([_attestation(old, "signed by the retired key")])
    problem = _first_problem(ledger)
    assert problem is not None
    assert problem[0] == ledger.store.size - 1
    (role,) = ledger.store.session.execute(
        "SELECT role FROM p_keys WHERE key_id = ?", (new.key_id,)
    ).fetchone()
    assert role == "rerunner"


def test_a_community_key_may_not_register_an_index_key(ledger: Ledger) -> None:
    community, impostor = SigningKey.generate(), SigningKey.generate()
    ledger.append_pending([_signed(_register(community, "community"), community.key_id, community)])
    ledger.append_pending([_signed(_register(impostor, "index"), impostor.key_id, community)])
    problem = _first_problem(ledger)
    assert problem is not None
    assert "may not write key.registered.v1" in problem[1]
