"""C2SP tlog-cosignature (cosignature/v1): witness keys and vkeys, cosigning a checkpoint, and
counting cosignatures, checked against the spec's bytes computed here with hashlib and
``cryptography`` directly (no code of ``keys``)."""

from __future__ import annotations

import base64
import hashlib

import pytest
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PublicKey

from keys import KeyringError, MalformedNote, SigningKey, VerificationError
from keys.cosignatures import (
    WitnessSigner,
    cosignatures,
    parse_witness_skey,
    parse_witness_vkey,
)
from keys.notekeys import NoteSigner

BODY = b"example.com/behind-the-sofa\n20852163\nCsUYapGGPo4dkMgIAUqom/Xajj7h2fB2MPA3j2jxq2I=\n"
SEED = bytes(range(32))


def _witness(name: str = "witness.example/w1", seed: bytes = SEED) -> WitnessSigner:
    return WitnessSigner(name, SigningKey.from_seed(seed))


def test_the_vkey_and_key_id_are_the_specs() -> None:
    w = _witness()
    name, key_id, key64 = w.vkey.split("+", 2)
    typed = base64.b64decode(key64)
    assert name == "witness.example/w1" and typed[0] == 0x04 and len(typed) == 33
    assert bytes.fromhex(key_id) == hashlib.sha256(name.encode() + b"\n" + typed).digest()[:4]
    assert parse_witness_vkey(w.vkey) == w.verifier
    assert parse_witness_skey(w.skey).vkey == w.vkey


def test_a_cosignature_line_is_key_id_timestamp_and_a_signature_of_the_v1_message() -> None:
    w = _witness()
    line = w.cosign(BODY, 1679315147)
    assert line.startswith("\u2014 witness.example/w1 ") and line.endswith("\n")
    raw = base64.b64decode(line.rstrip("\n").rsplit(" ", 1)[1])
    assert len(raw) == 76
    typed = base64.b64decode(w.vkey.split("+", 2)[2])
    assert raw[:4] == hashlib.sha256(b"witness.example/w1\n" + typed).digest()[:4]
    assert int.from_bytes(raw[4:12], "big") == 1679315147
    message = b"cosignature/v1\ntime 1679315147\n" + BODY
    Ed25519PublicKey.from_public_bytes(typed[1:]).verify(raw[12:], message)  # raises if not


def test_cosignatures_are_counted_by_witness_and_others_ignored() -> None:
    log = NoteSigner("example.com/behind-the-sofa", SigningKey.from_seed(b"\x01" * 32))
    w1, w2, stranger = _witness(), _witness("w2", b"\x02" * 32), _witness("w3", b"\x03" * 32)
    sig = base64.b64encode(log.key_hash + log.key.sign(BODY)).decode()
    note = (
        BODY
        + b"\n"
        + f"\u2014 {log.name} {sig}\n".encode()
        + w1.cosign(BODY, 10).encode()
        + w1.cosign(BODY, 20).encode()
        + stranger.cosign(BODY, 5).encode()
    )
    found = cosignatures(note, [w1.verifier, w2.verifier])
    assert {n: c.timestamp for n, c in found.items()} == {"witness.example/w1": 20}


def test_an_edited_checkpoint_or_a_forged_cosignature_is_refused() -> None:
    w = _witness()
    line = w.cosign(BODY, 10)
    edited = BODY.replace(b"20852163", b"20852164")
    with pytest.raises(VerificationError):
        cosignatures(edited + b"\n" + line.encode(), [w.verifier])
    impostor = WitnessSigner("witness.example/w1", SigningKey.from_seed(b"\x09" * 32))
    # Same name, another key: another key ID, so not this witness's line (not counted).
    assert cosignatures(BODY + b"\n" + impostor.cosign(BODY, 10).encode(), [w.verifier]) == {}
    short = line.rstrip("\n").rsplit(" ", 1)
    truncated = base64.b64encode(base64.b64decode(short[1])[:40]).decode()
    with pytest.raises(MalformedNote):
        cosignatures(BODY + b"\n" + f"{short[0]} {truncated}\n".encode(), [w.verifier])


@pytest.mark.parametrize(
    "vkey",
    [
        "w1+00000000+" + base64.b64encode(b"\x04" + b"\x00" * 32).decode(),  # wrong key ID
        "w1+abcd+AAAA",  # key ID not 8 hex digits
        "w1 x+00000000+AAAA",  # a space in the name
        "w1",
    ],
)
def test_malformed_witness_vkeys_are_refused(vkey: str) -> None:
    with pytest.raises(KeyringError):
        parse_witness_vkey(vkey)


def test_a_log_vkey_is_not_a_witness_vkey() -> None:
    log = NoteSigner("example.com/log", SigningKey.from_seed(SEED))
    with pytest.raises(KeyringError, match="0x01"):
        parse_witness_vkey(log.vkey)


def test_timestamps_out_of_range_are_refused() -> None:
    with pytest.raises(KeyringError):
        _witness().cosign(BODY, -1)
    with pytest.raises(KeyringError):
        _witness().cosign(BODY, 2**63)
