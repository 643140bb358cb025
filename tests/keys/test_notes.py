"""C2SP signed notes: the spec example, the Go sumdb note KATs, and a real sum.golang.org
checkpoint with cosigner lines; plus the well-formedness rules."""

from __future__ import annotations

from typing import Any

import pytest

from keys import (
    KeyringError,
    MalformedNote,
    NoteVerifier,
    SigningKey,
    UnknownKey,
    VerificationError,
    VerifiedNote,
    note_key_hash,
    open_note,
    parse_skey,
    parse_vkey,
    sign_note,
    vkey,
)

pytestmark = pytest.mark.corpus


@pytest.fixture
def sumdb(kats: dict[str, Any]) -> dict[str, Any]:
    return kats["signed_note_golang_sumdb"]  # type: ignore[no-any-return]


@pytest.fixture
def checkpoint(kats: dict[str, Any]) -> dict[str, Any]:
    return kats["checkpoint_sumdb_real"]  # type: ignore[no-any-return]


def _note(text: str, *lines: str) -> bytes:
    return (text + "\n" + "".join(line + "\n" for line in lines)).encode()


def _strict(error: pytest.ExceptionInfo[BaseException], kind: type[BaseException]) -> None:
    assert type(error.value) is kind


# C2SP signed-note.md example.


def test_c2sp_example(kats: dict[str, Any]) -> None:
    example = kats["signed_note_c2sp_example"]
    assert example["expect"] == "valid"
    verifier = parse_vkey(example["vkey"])
    assert verifier.name == "example.com/foo"
    assert verifier.key_hash.hex() == "530d903a"
    assert verifier.vkey == example["vkey"]
    opened = open_note(example["note"].encode(), [verifier])
    assert opened == VerifiedNote(
        text="This is an example message.\n", verified_by=("example.com/foo",)
    )


# golang.org/x/mod sumdb/note KATs.


def test_sumdb_skey_and_vkey(sumdb: dict[str, Any]) -> None:
    peter = parse_skey(sumdb["peter_skey"])
    assert peter.name == "PeterNeumann"
    assert peter.key_hash.hex() == "c74f20a3"
    assert peter.vkey == sumdb["peter_vkey"]
    assert peter.verifier == parse_vkey(sumdb["peter_vkey"])
    assert note_key_hash("PeterNeumann", peter.key.public) == peter.key_hash
    assert vkey("PeterNeumann", peter.key.public) == sumdb["peter_vkey"]
    enoch = parse_vkey(sumdb["enoch_vkey"])
    assert (enoch.name, enoch.key_hash.hex(), enoch.vkey) == (
        "EnochRoot",
        "af0cfe78",
        sumdb["enoch_vkey"],
    )


def test_sumdb_sign_reproduces_the_go_note(sumdb: dict[str, Any]) -> None:
    signed = sign_note(sumdb["text"], [parse_skey(sumdb["peter_skey"])])
    assert signed == sumdb["expected_signed_note_by_peter"].encode()
    assert signed == _note(sumdb["text"], sumdb["peter_sig_line"])
    assert signed.decode().splitlines()[-1] == sumdb["peter_sig_line"]


def test_sumdb_open(sumdb: dict[str, Any]) -> None:
    peter, enoch = parse_vkey(sumdb["peter_vkey"]), parse_vkey(sumdb["enoch_vkey"])
    note = _note(sumdb["text"], sumdb["peter_sig_line"], sumdb["enoch_sig_line"])
    assert open_note(sumdb["expected_signed_note_by_peter"].encode(), [peter]).verified_by == (
        "PeterNeumann",
    )
    # One verified, one unknown signer (ignored).
    assert open_note(note, [peter]) == VerifiedNote(
        text=sumdb["text"], verified_by=("PeterNeumann",)
    )
    assert open_note(note, [enoch]).verified_by == ("EnochRoot",)
    assert open_note(note, [peter, enoch]).verified_by == ("PeterNeumann", "EnochRoot")
    assert open_note(note, [enoch, peter]).verified_by == ("PeterNeumann", "EnochRoot")
    with pytest.raises(UnknownKey):
        open_note(note, [])


def test_sumdb_negative_rules_are_all_covered(sumdb: dict[str, Any]) -> None:
    # Each rule below has a test in this module; fail if the corpus grows a new one.
    assert (
        sumdb["negative_rules_from_tests"]
        == [
            "note with 101 copies of a valid signature line -> reject (malformed note)",  # test_signature_limit
            "signature line whose key name contains space or '+' -> malformed",  # test_bad_key_names_in_lines
            "two verifiers with same name+hash -> ambiguous key error",  # test_ambiguous_verifiers
            "valid key name+hash but corrupted signature -> reject note",  # test_corrupted_known_signature
            "text not ending in newline -> malformed",  # test_sign_rejects_bad_text
        ]
    )


def test_signature_limit(sumdb: dict[str, Any]) -> None:
    peter = parse_vkey(sumdb["peter_vkey"])
    # Repeated signatures by one verifier count once.
    hundred = _note(sumdb["text"], *[sumdb["peter_sig_line"]] * 100)
    assert open_note(hundred, [peter]).verified_by == ("PeterNeumann",)
    with pytest.raises(MalformedNote) as info:
        open_note(_note(sumdb["text"], *[sumdb["peter_sig_line"]] * 101), [peter])
    _strict(info, MalformedNote)


@pytest.mark.parametrize("name", ["Peter Neumann", "Peter+Neumann", "Peter\u00a0Neumann"])
def test_bad_key_names_in_lines(sumdb: dict[str, Any], name: str) -> None:
    line = sumdb["peter_sig_line"].replace("PeterNeumann", name)
    with pytest.raises(MalformedNote):
        open_note(_note(sumdb["text"], line), [parse_vkey(sumdb["peter_vkey"])])


def test_ambiguous_verifiers(sumdb: dict[str, Any]) -> None:
    peter, enoch = parse_vkey(sumdb["peter_vkey"]), parse_vkey(sumdb["enoch_vkey"])
    with pytest.raises(KeyringError, match="ambiguous key EnochRoot\\+af0cfe78") as info:
        open_note(_note(sumdb["text"], sumdb["enoch_sig_line"]), [peter, enoch, enoch])
    assert not isinstance(info.value, VerificationError)
    # An unused duplicate is harmless (sumdb/note: "Check unused duplicated verifier").
    note = _note(sumdb["text"], sumdb["peter_sig_line"])
    assert open_note(note, [peter, enoch, enoch]).verified_by == ("PeterNeumann",)


def _corrupt(line: str) -> str:
    return line[:60] + "ABCD" + line[60:]


def test_corrupted_known_signature(sumdb: dict[str, Any]) -> None:
    peter = parse_vkey(sumdb["peter_vkey"])
    with pytest.raises(VerificationError) as info:
        open_note(_note(sumdb["text"], _corrupt(sumdb["peter_sig_line"])), [peter])
    _strict(info, VerificationError)
    # Alongside a good signature by another known key it still rejects the whole note.
    both = _note(sumdb["text"], sumdb["enoch_sig_line"], _corrupt(sumdb["peter_sig_line"]))
    with pytest.raises(VerificationError):
        open_note(both, [peter, parse_vkey(sumdb["enoch_vkey"])])


def test_duplicated_verified_and_unverified_signatures(sumdb: dict[str, Any]) -> None:
    peter_line, enoch_line = sumdb["peter_sig_line"], sumdb["enoch_sig_line"]
    note = _note(
        sumdb["text"], peter_line, peter_line, enoch_line, enoch_line, _corrupt(enoch_line)
    )
    assert open_note(note, [parse_vkey(sumdb["peter_vkey"])]).verified_by == ("PeterNeumann",)


def test_go_malformed_messages(sumdb: dict[str, Any]) -> None:
    text, sig = sumdb["text"], sumdb["peter_sig_line"] + "\n"
    bad = [
        text.encode(),
        (text + "\n").encode(),
        (text + "\n" + sig[:-1]).encode(),
        ("\x01" + text + "\n" + sig).encode(),
        b"\xff" + (text + "\n" + sig).encode(),
        (text + "\n" + "\u2014 Bad Name " + sig.split(" ", 2)[2]).encode(),
        (text + "\n" + sig + "Unsigned line.\n").encode(),
    ]
    for message in bad:
        with pytest.raises(MalformedNote):
            open_note(message, [parse_vkey(sumdb["peter_vkey"])])


@pytest.mark.parametrize(
    "text", ["", "no final newline", "tab\there\n", "carriage\r\n", "nul\x00\n", "\ud800\n"]
)
def test_sign_rejects_bad_text(sumdb: dict[str, Any], text: str) -> None:
    with pytest.raises(KeyringError):
        sign_note(text, [parse_skey(sumdb["peter_skey"])])


def test_sign_needs_a_signer(sumdb: dict[str, Any]) -> None:
    with pytest.raises(KeyringError):
        sign_note(sumdb["text"], [])


# transparency-dev/formats: a real sum.golang.org checkpoint with cosigner lines.


def _checkpoint_note(checkpoint: dict[str, Any]) -> bytes:
    return _note(checkpoint["note_text"], *[s["line"] for s in checkpoint["signatures"]])


def test_checkpoint_verifies_with_the_log_key_alone(checkpoint: dict[str, Any]) -> None:
    log = parse_vkey(checkpoint["signatures"][0]["vkey"])
    assert log.name == "sum.golang.org"
    opened = open_note(_checkpoint_note(checkpoint), [log])
    assert opened.verified_by == ("sum.golang.org",)  # cosigners unknown: ignored
    assert opened.text == checkpoint["note_text"]
    assert opened.text.split("\n")[0] == checkpoint["origin"]


def test_checkpoint_every_vkey_parses_and_verifies(checkpoint: dict[str, Any]) -> None:
    verifiers = [parse_vkey(s["vkey"]) for s in checkpoint["signatures"]]
    # Two of these vkeys hold '+' inside their base64: only the first two '+' separate fields.
    assert sum("+" in s["vkey"].split("+", 2)[2] for s in checkpoint["signatures"]) == 2
    for signature, verifier in zip(checkpoint["signatures"], verifiers, strict=True):
        assert verifier.vkey == signature["vkey"]
        assert open_note(_checkpoint_note(checkpoint), [verifier]).verified_by == (verifier.name,)
    names = tuple(v.name for v in verifiers)
    assert names == ("sum.golang.org", "monkeys", "bananas", "witness")
    assert open_note(_checkpoint_note(checkpoint), verifiers).verified_by == names


def test_checkpoint_with_a_different_key_under_the_same_name_fails(
    checkpoint: dict[str, Any],
) -> None:
    impostor = NoteVerifier.for_key("sum.golang.org", SigningKey.generate().public)
    with pytest.raises(UnknownKey):
        open_note(_checkpoint_note(checkpoint), [impostor])


def test_checkpoint_tampered_text_fails(checkpoint: dict[str, Any]) -> None:
    log = parse_vkey(checkpoint["signatures"][0]["vkey"])
    tampered = _checkpoint_note(checkpoint).replace(b"6476701", b"6476702")
    with pytest.raises(VerificationError) as info:
        open_note(tampered, [log])
    _strict(info, VerificationError)
