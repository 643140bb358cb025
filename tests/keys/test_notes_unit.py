"""Signed notes without the corpora: round trips, name rules, vkey and skey parsing errors."""

from __future__ import annotations

import base64
import hashlib

import pytest

from keys import (
    KeyringError,
    MalformedNote,
    NoteSigner,
    NoteVerifier,
    SigningKey,
    UnknownKey,
    note_key_hash,
    open_note,
    parse_skey,
    parse_vkey,
    sign_note,
    vkey,
)

LOG = NoteSigner("log.example/one", SigningKey.from_seed(b"L" * 32))
WITNESS = NoteSigner("witness.example", SigningKey.from_seed(b"W" * 32))


def test_roundtrip_with_blank_lines_and_fake_signature_lines_in_the_text() -> None:
    text = "origin\n\n\u2014 fake.example AAAAAAAAAAA=\n\nlast line é\n"
    signed = sign_note(text, [LOG, WITNESS])
    opened = open_note(signed, [LOG.verifier, WITNESS.verifier])
    assert opened.text == text
    assert opened.verified_by == ("log.example/one", "witness.example")
    assert open_note(signed, [WITNESS.verifier]).verified_by == ("witness.example",)


def test_minimal_text_is_a_single_newline() -> None:
    assert open_note(sign_note("\n", [LOG]), [LOG.verifier]).text == "\n"


def test_note_key_hash_definition() -> None:
    public = LOG.key.public
    expected = hashlib.sha256(b"log.example/one\n\x01" + public.raw).digest()[:4]
    assert note_key_hash("log.example/one", public) == expected == LOG.key_hash
    typed = base64.b64encode(b"\x01" + public.raw).decode()
    assert vkey(LOG.name, public) == f"log.example/one+{expected.hex()}+{typed}"
    assert parse_vkey(LOG.vkey) == LOG.verifier


@pytest.mark.parametrize("name", ["", "a b", "a+b", "a\tb", "a\u2003b", "\ud800"])
def test_invalid_names(name: str) -> None:
    with pytest.raises(KeyringError):
        NoteSigner(name, SigningKey.generate())
    with pytest.raises(KeyringError):
        note_key_hash(name, LOG.key.public)


def test_verifier_rejects_a_mismatched_hash() -> None:
    with pytest.raises(KeyringError):
        NoteVerifier("log.example/one", b"\x00\x00\x00\x00", LOG.key.public)


def _vkey_with(name: str, hash16: str, typed: bytes) -> str:
    return f"{name}+{hash16}+{base64.b64encode(typed).decode()}"


@pytest.mark.parametrize(
    "text",
    [
        "",
        "log.example",
        "log.example+abcd1234",
        LOG.vkey.replace(LOG.key_hash.hex(), "00000000"),  # hash does not match
        LOG.vkey.replace(LOG.key_hash.hex(), LOG.key_hash.hex()[:7]),
        LOG.vkey.replace(LOG.key_hash.hex(), "zzzzzzzz"),
        LOG.vkey + "=",  # bad base64
        LOG.vkey.replace("log.example/one", "log.example/two", 1),
        _vkey_with("n", "00000000", b"\x02" + bytes(32)),  # not Ed25519
        _vkey_with("n", "00000000", b"\x01" + bytes(31)),
        _vkey_with("n", "00000000", b""),
    ],
)
def test_parse_vkey_errors(text: str) -> None:
    with pytest.raises(KeyringError):
        parse_vkey(text)


def _skey(name: str, key_hash: bytes, typed: bytes) -> str:
    return f"PRIVATE+KEY+{name}+{key_hash.hex()}+{base64.b64encode(typed).decode()}"


def test_parse_skey_roundtrip_and_errors() -> None:
    seed = LOG.key.seed
    good = _skey(LOG.name, LOG.key_hash, b"\x01" + seed)
    assert parse_skey(good).vkey == LOG.vkey
    bad = [
        good.replace("PRIVATE+KEY+", "PUBLIC+KEY+"),
        good.replace(LOG.key_hash.hex(), "00000000"),
        _skey(LOG.name, LOG.key_hash, b"\x02" + seed),
        _skey(LOG.name, LOG.key_hash, b"\x01" + seed[:31]),
        good + "%",
    ]
    secret = base64.b64encode(b"\x01" + seed).decode()
    for text in bad:
        with pytest.raises(KeyringError) as info:
            parse_skey(text)
        assert secret not in str(info.value)
        assert secret not in repr(info.value.details)


def test_signer_repr_hides_the_seed() -> None:
    assert LOG.key.seed.hex() not in repr(LOG)
    assert repr(LOG) == f"NoteSigner(name='log.example/one', key_hash='{LOG.key_hash.hex()}')"


def _line(signer: NoteSigner, payload: bytes) -> str:
    return f"\u2014 {signer.name} {base64.b64encode(payload).decode()}"


@pytest.mark.parametrize(
    "note",
    [
        b"",
        b"\n\n",
        b"text\n\n",
        b"text\n\n\n",
        ("text\n\n" + _line(LOG, LOG.key_hash) + "\n").encode(),  # 4 bytes: no room for a sig
        ("text\n\n" + _line(LOG, b"abcdefgh").replace(" ", "  ", 2) + "\n").encode(),
        ("text\n\n\u2014 " + LOG.name + " not*base64\n").encode(),
        ("text\n\n\u2014 " + LOG.name + "\n").encode(),
        ("text\n\n-- " + LOG.name + " AAAAAAAA\n").encode(),
        ("text\r\n\n" + _line(LOG, b"abcdefgh") + "\n").encode(),
    ],
)
def test_malformed_notes(note: bytes) -> None:
    with pytest.raises(MalformedNote):
        open_note(note, [LOG.verifier])


def test_unknown_signers_only_is_unknown_key() -> None:
    with pytest.raises(UnknownKey):
        open_note(sign_note("text\n", [WITNESS]), [LOG.verifier])
    # Same name, different key: the key ID differs, so the signature is ignored.
    impostor = NoteSigner(LOG.name, SigningKey.generate())
    with pytest.raises(UnknownKey):
        open_note(sign_note("text\n", [impostor]), [LOG.verifier])


def test_non_canonical_base64_in_a_signature_line_is_malformed() -> None:
    signed = sign_note("text\n", [LOG])
    assert open_note(signed + "\u2014 other QUJDQUJD\n".encode(), [LOG.verifier]).verified_by
    # "QUJDQUJD=" has surplus padding; binascii's strict mode would accept it.
    with pytest.raises(MalformedNote):
        open_note(signed + "\u2014 other QUJDQUJD=\n".encode(), [LOG.verifier])
