"""DSSE v1: the spec's PAE vector and envelope, and our Ed25519 sign/verify rules."""

from __future__ import annotations

import base64
import json
from typing import Any

import msgspec
import pytest

from keys import (
    Envelope,
    MalformedEnvelope,
    Signature,
    SigningKey,
    UnknownKey,
    VerificationError,
    VerifyingKey,
    decode_envelope,
    encode_envelope,
    pae,
    sign_envelope,
    verify_envelope,
)

PAYLOAD_TYPE = "application/vnd.benchproof.test+json"
ALICE = SigningKey.from_seed(b"a" * 32)
BOB = SigningKey.from_seed(b"b" * 32)


def resolver(*keys: SigningKey) -> Any:
    table = {key.key_id: key.public for key in keys}
    return table.get


def _replace(env: Envelope, **changes: Any) -> Envelope:
    return msgspec.structs.replace(env, **changes)


# The DSSE spec vector (protocol.md "Test Vectors").


@pytest.mark.corpus
def test_pae_matches_spec_vector(kats: dict[str, Any]) -> None:
    vector = kats["dsse_protocol_vector"]
    got = pae(vector["payloadType"], vector["payload_utf8"].encode())
    assert got == vector["pae_utf8"].encode()
    assert got == b"DSSEv1 29 http://example.com/HelloWorld 11 hello world"


@pytest.mark.corpus
def test_spec_envelope_decodes_and_roundtrips(kats: dict[str, Any]) -> None:
    vector = kats["dsse_protocol_vector"]
    env = decode_envelope(json.dumps(vector["envelope"]).encode())
    assert env.payloadType == vector["payloadType"]
    assert base64.b64decode(env.payload) == vector["payload_utf8"].encode()
    assert env.signatures == [
        Signature(keyid="66301bbf", sig=vector["envelope"]["signatures"][0]["sig"])
    ]
    encoded = encode_envelope(env)
    assert json.loads(encoded) == vector["envelope"]
    assert decode_envelope(encoded) == env


@pytest.mark.corpus
def test_spec_envelope_is_signed_by_a_key_we_do_not_know(kats: dict[str, Any]) -> None:
    # The spec vector is ECDSA-signed: to us its keyid is unknown, so the envelope is rejected.
    env = decode_envelope(json.dumps(kats["dsse_protocol_vector"]["envelope"]).encode())
    seen: list[str] = []

    def resolve(keyid: str) -> VerifyingKey | None:
        seen.append(keyid)
        return None

    with pytest.raises(UnknownKey):
        verify_envelope(env, resolve)
    assert seen == ["66301bbf"]


def test_pae_lengths_are_byte_lengths() -> None:
    assert pae("é", b"") == b"DSSEv1 2 \xc3\xa9 0 "
    assert pae("", b"\x00 \n") == b"DSSEv1 0  3 \x00 \n"


# Our sign/verify.


def test_sign_and_verify_roundtrip() -> None:
    env = sign_envelope(PAYLOAD_TYPE, b'{"a": 1}', ALICE)
    assert env.payloadType == PAYLOAD_TYPE
    assert [s.keyid for s in env.signatures] == [ALICE.key_id]
    assert base64.b64decode(env.signatures[0].sig, validate=True) == ALICE.sign(
        pae(PAYLOAD_TYPE, b'{"a": 1}')
    )
    assert verify_envelope(env, resolver(ALICE)) == b'{"a": 1}'
    assert verify_envelope(decode_envelope(encode_envelope(env)), resolver(ALICE)) == b'{"a": 1}'


def test_wire_field_names() -> None:
    env = sign_envelope(PAYLOAD_TYPE, b"", ALICE)
    assert set(json.loads(encode_envelope(env))) == {"payloadType", "payload", "signatures"}
    assert set(json.loads(encode_envelope(env))["signatures"][0]) == {"keyid", "sig"}


def test_tampered_payload_fails() -> None:
    env = sign_envelope(PAYLOAD_TYPE, b"payload", ALICE)
    tampered = _replace(env, payload=base64.b64encode(b"pay1oad").decode())
    with pytest.raises(VerificationError) as info:
        verify_envelope(tampered, resolver(ALICE))
    assert type(info.value) is VerificationError


def test_tampered_payload_type_fails() -> None:
    env = sign_envelope(PAYLOAD_TYPE, b"payload", ALICE)
    with pytest.raises(VerificationError) as info:
        verify_envelope(_replace(env, payloadType="application/json"), resolver(ALICE))
    assert type(info.value) is VerificationError


def test_unknown_keyid_is_unknown_key() -> None:
    env = sign_envelope(PAYLOAD_TYPE, b"payload", ALICE)
    with pytest.raises(UnknownKey):
        verify_envelope(env, resolver(BOB))


def test_no_signatures_is_unknown_key() -> None:
    env = _replace(sign_envelope(PAYLOAD_TYPE, b"payload", ALICE), signatures=[])
    with pytest.raises(UnknownKey):
        verify_envelope(env, resolver(ALICE))


def _two_signatures(first: SigningKey, second: SigningKey) -> Envelope:
    env = sign_envelope(PAYLOAD_TYPE, b"payload", first)
    other = sign_envelope(PAYLOAD_TYPE, b"payload", second)
    return _replace(env, signatures=env.signatures + other.signatures)


def test_a_signature_by_an_unknown_key_is_ignored() -> None:
    env = _two_signatures(BOB, ALICE)
    assert verify_envelope(env, resolver(ALICE)) == b"payload"
    assert verify_envelope(env, resolver(BOB)) == b"payload"
    assert verify_envelope(env, resolver(ALICE, BOB)) == b"payload"


def test_one_failing_known_signature_rejects() -> None:
    good = sign_envelope(PAYLOAD_TYPE, b"payload", ALICE)
    forged = Signature(keyid=BOB.key_id, sig=base64.b64encode(BOB.sign(b"something else")).decode())
    env = _replace(good, signatures=[*good.signatures, forged])
    assert verify_envelope(env, resolver(ALICE)) == b"payload"  # Bob unknown: ignored
    with pytest.raises(VerificationError) as info:
        verify_envelope(env, resolver(ALICE, BOB))
    assert type(info.value) is VerificationError
    assert info.value.details["key_id"] == BOB.key_id


def test_a_signature_under_the_wrong_keyid_fails() -> None:
    # Bob's signature labelled with Alice's keyid: the keyid picks Alice's key, which rejects it.
    env = sign_envelope(PAYLOAD_TYPE, b"payload", BOB)
    relabelled = _replace(
        env, signatures=[Signature(keyid=ALICE.key_id, sig=env.signatures[0].sig)]
    )
    with pytest.raises(VerificationError):
        verify_envelope(relabelled, resolver(ALICE, BOB))


@pytest.mark.parametrize(
    "payload",
    ["not base64!", "cGF5bG9hZA", "cGF5bG9hZA==\n", "cGF5 bG9hZA==", "cGF5bG9hZA==cGF5", "é"],
)
def test_bad_payload_base64_is_malformed(payload: str) -> None:
    env = _replace(sign_envelope(PAYLOAD_TYPE, b"payload", ALICE), payload=payload)
    with pytest.raises(MalformedEnvelope):
        verify_envelope(env, resolver(ALICE))


def test_bad_signature_base64_is_malformed() -> None:
    env = sign_envelope(PAYLOAD_TYPE, b"payload", ALICE)
    bad = _replace(env, signatures=[Signature(keyid=ALICE.key_id, sig="%%%")])
    with pytest.raises(MalformedEnvelope):
        verify_envelope(bad, resolver(ALICE))


def test_url_safe_base64_is_accepted() -> None:
    # protocol.md: "Either standard or URL-safe base64 encodings are allowed ... verifiers MUST
    # accept either." These bytes encode with '+' and '/' in the standard alphabet.
    payload = b"\xfb\xff\xbf" * 4
    env = sign_envelope(PAYLOAD_TYPE, payload, ALICE)
    assert "+" in env.payload
    assert "/" in env.payload
    urlsafe = _replace(env, payload=base64.urlsafe_b64encode(payload).decode())
    assert verify_envelope(urlsafe, resolver(ALICE)) == payload
    mixed = _replace(env, payload=urlsafe.payload.replace("_", "/", 1))
    with pytest.raises(MalformedEnvelope):
        verify_envelope(mixed, resolver(ALICE))


@pytest.mark.parametrize(
    "data",
    [
        b"",
        b"not json",
        b"[]",
        b'{"payloadType": "t", "payload": ""}',
        b'{"payloadType": 1, "payload": "", "signatures": []}',
        b'{"payloadType": "t", "payload": "", "signatures": [{"keyid": "k"}]}',
        b'{"payloadType": "t", "payload": "", "signatures": {}}',
    ],
)
def test_decode_envelope_rejects_bad_shapes(data: bytes) -> None:
    with pytest.raises(MalformedEnvelope):
        decode_envelope(data)


def test_decode_envelope_ignores_unknown_fields() -> None:
    env = decode_envelope(
        b'{"payloadType": "t", "payload": "", "x": 1, "signatures": [{"keyid": "k", "sig": "", "y": 2}]}'
    )
    assert env == Envelope(payloadType="t", payload="", signatures=[Signature(keyid="k", sig="")])


def test_envelope_is_frozen() -> None:
    env = sign_envelope(PAYLOAD_TYPE, b"", ALICE)
    with pytest.raises(AttributeError):
        env.payload = ""  # type: ignore[misc]
