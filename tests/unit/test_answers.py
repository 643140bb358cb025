"""The signed-answer format (``verifier.answers``): the exact message the log key signs, the
header it travels in, what breaks a signature, the saved-answer file, the comparison that names
the first differing field, and the signer's cache."""

from __future__ import annotations

import base64
import hashlib

import msgspec
import pytest

from keys import NoteSigner, SigningKey
from service.app.answers import pinned_target
from verifier.answers import (
    ABSENT,
    AnswerInvalid,
    AnswerSigner,
    check_headers,
    check_saved,
    decode_saved,
    first_difference,
    normal_target,
    saved,
    sign_answer,
    signed_message,
    verify_answer,
)

ORIGIN = "benchproof.test/log"
BODY = b'{"runDigest":"sha256:ab","asOf":7,"evidenceLevel":"reported"}'
TARGET = "/v1/runs/abc?asOf=7"


@pytest.fixture(scope="module")
def signer() -> NoteSigner:
    return NoteSigner(ORIGIN, SigningKey.from_seed(bytes(range(32))))


def test_the_message_is_five_lines_under_its_own_context() -> None:
    digest = hashlib.sha256(BODY).hexdigest()
    assert signed_message(ORIGIN, 7, TARGET, digest) == (
        b"benchproof signed answer v1\nbenchproof.test/log\n7\n/v1/runs/abc?asOf=7\n"
        + digest.encode()
        + b"\n"
    )


def test_a_signature_verifies_and_names_the_key(signer: NoteSigner) -> None:
    header = sign_answer(signer, ORIGIN, 7, TARGET, BODY)
    name, _, encoded = header.partition(" ")
    assert name == ORIGIN
    raw = base64.b64decode(encoded)
    assert len(raw) == 68 and raw[:4] == signer.key_hash
    verify_answer(signer.verifier, 7, TARGET, BODY, header)  # no error


@pytest.mark.parametrize(
    ("size", "target", "body", "origin"),
    [
        (8, TARGET, BODY, ORIGIN),
        (7, "/v1/runs/abc?asOf=8", BODY, ORIGIN),
        (7, "/v1/runs/abd?asOf=7", BODY, ORIGIN),
        (7, TARGET, BODY.replace(b"reported", b"verified"), ORIGIN),
        (7, TARGET, BODY + b" ", ORIGIN),
        (7, TARGET, BODY, "another.test/log"),
    ],
    ids=["size", "query", "path", "body", "one-byte", "origin"],
)
def test_any_change_breaks_the_signature(
    signer: NoteSigner, size: int, target: str, body: bytes, origin: str
) -> None:
    header = sign_answer(signer, ORIGIN, 7, TARGET, BODY)
    with pytest.raises(AnswerInvalid, match="did not sign") as caught:
        verify_answer(signer.verifier, size, target, body, header, origin=origin)
    assert caught.value.check == "signature"


def test_another_key_is_named(signer: NoteSigner) -> None:
    header = sign_answer(signer, ORIGIN, 7, TARGET, BODY)
    other = NoteSigner(ORIGIN, SigningKey.from_seed(bytes(32)))
    with pytest.raises(AnswerInvalid, match="made by key"):
        verify_answer(other.verifier, 7, TARGET, BODY, header)
    renamed = NoteSigner("other.test/log", signer.key)
    with pytest.raises(AnswerInvalid, match=r"made by key 'benchproof\.test/log'"):
        verify_answer(renamed.verifier, 7, TARGET, BODY, header)


@pytest.mark.parametrize(
    "header",
    ["", ORIGIN, f"{ORIGIN} not-base64!", f"{ORIGIN} AAAA", f"{ORIGIN} " + "A" * 91 + "=="],
)
def test_a_malformed_header_is_refused(signer: NoteSigner, header: str) -> None:
    with pytest.raises(AnswerInvalid, match="signature"):
        verify_answer(signer.verifier, 7, TARGET, BODY, header)


def test_a_non_canonical_base64_is_refused(signer: NoteSigner) -> None:
    header = sign_answer(signer, ORIGIN, 7, TARGET, BODY)
    with pytest.raises(AnswerInvalid, match="signature"):
        verify_answer(signer.verifier, 7, TARGET, BODY, header + "=")


def test_fields_that_would_break_the_lines_are_refused() -> None:
    digest = hashlib.sha256(BODY).hexdigest()
    for origin, size, target, sha in [
        ("a\nb", 1, "/v1", digest),
        (ORIGIN, -1, "/v1", digest),
        (ORIGIN, 1, "/v1\n/x", digest),
        (ORIGIN, 1, "v1/runs", digest),
        (ORIGIN, 1, "/v1", digest.upper()),
    ]:
        with pytest.raises(AnswerInvalid, match="format"):
            signed_message(origin, size, target, sha)


def test_the_target_normal_form_escapes_only_what_is_outside_printable_ascii() -> None:
    assert normal_target(b"/v1/runs/kernelbot:submission%2F7?asOf=3") == (
        "/v1/runs/kernelbot:submission%2F7?asOf=3"
    )
    assert normal_target("/v1/runs/é x") == "/v1/runs/%C3%A9%20x"


def test_a_saved_answer_round_trips_and_checks(signer: NoteSigner) -> None:
    header = sign_answer(signer, ORIGIN, 7, TARGET, BODY)
    kept = saved("http://h.example", ORIGIN, 7, TARGET, BODY, header)
    again = decode_saved(msgspec.json.encode(kept))
    assert again == kept and again.body.encode() == BODY
    check_saved(again, signer.verifier)
    forged = msgspec.structs.replace(again, body=again.body.replace("reported", "verified"))
    with pytest.raises(AnswerInvalid, match=r"^body"):
        check_saved(forged, signer.verifier)
    rehashed = msgspec.structs.replace(
        forged, bodySha256=hashlib.sha256(forged.body.encode()).hexdigest()
    )
    with pytest.raises(AnswerInvalid, match=r"^signature"):
        check_saved(rehashed, signer.verifier)


@pytest.mark.parametrize(
    "data",
    [b"[]", b'{"format": "benchproof signed answer v1"}', b"not json"],
    ids=["list", "missing-fields", "not-json"],
)
def test_a_file_that_is_no_saved_answer_is_a_format_error(data: bytes) -> None:
    with pytest.raises(AnswerInvalid, match=r"^format"):
        decode_saved(data)


@pytest.mark.parametrize(
    "change",
    [{"treeSize": -1}, {"target": "runs"}, {"target": "/v1/a b"}, {"bodySha256": "AB"}],
    ids=["negative-size", "relative-target", "raw-space", "digest"],
)
def test_fields_that_cannot_have_been_signed_are_format_errors(
    signer: NoteSigner, change: dict[str, object]
) -> None:
    kept = saved("http://h", ORIGIN, 7, TARGET, BODY, sign_answer(signer, ORIGIN, 7, TARGET, BODY))
    data = msgspec.json.encode({**msgspec.structs.asdict(kept), **change})
    with pytest.raises(AnswerInvalid, match=r"^format"):
        decode_saved(data)


def test_another_format_version_is_refused(signer: NoteSigner) -> None:
    kept = saved("http://h", ORIGIN, 7, TARGET, BODY, sign_answer(signer, ORIGIN, 7, TARGET, BODY))
    other = msgspec.structs.replace(kept, format="benchproof signed answer v2")
    with pytest.raises(AnswerInvalid, match="v2"):
        decode_saved(msgspec.json.encode(other))


def test_check_headers_reports_problems_as_text(signer: NoteSigner) -> None:
    header = sign_answer(signer, ORIGIN, 7, TARGET, BODY)
    good = {"Benchproof-Tree-Size": "7", "Benchproof-Signature": header}
    assert check_headers(signer.verifier, ORIGIN, TARGET, good, BODY) is None
    lower = {k.lower(): v for k, v in good.items()}
    assert check_headers(signer.verifier, ORIGIN, TARGET, lower, BODY) is None
    assert "no Benchproof-Signature" in str(
        check_headers(signer.verifier, ORIGIN, TARGET, {"Benchproof-Tree-Size": "7"}, BODY)
    )
    other = sign_answer(signer, ORIGIN, 6, "/v1/runs/abc?asOf=7", BODY)
    told = {"Benchproof-Tree-Size": "6", "Benchproof-Signature": other}
    assert "not the 7 asked for" in str(check_headers(signer.verifier, ORIGIN, TARGET, told, BODY))
    assert "did not sign" in str(check_headers(signer.verifier, ORIGIN, TARGET, good, BODY + b" "))


def test_first_difference_names_the_first_differing_field() -> None:
    a = {"runDigest": "x", "rank": {"rank": 1, "of": 3}, "items": [{"e": "reported"}]}
    assert first_difference(a, {"items": [{"e": "reported"}], "rank": {"of": 3, "rank": 1},
                                "runDigest": "x"}) is None  # fmt: skip
    b = {"runDigest": "x", "rank": {"rank": 2, "of": 3}, "items": [{"e": "verified"}]}
    assert first_difference(a, b) == ("rank.rank", 1, 2)
    assert first_difference(a["items"], b["items"]) == ("[0].e", "reported", "verified")
    assert first_difference({"a": 1}, {"a": 1, "odd key": 2}) == ('["odd key"]', ABSENT, 2)
    assert first_difference({"a": [1, 2]}, {"a": [1]}) == ("a[1]", 2, ABSENT)
    assert first_difference({"a": None}, {}) == ("a", None, ABSENT)
    assert first_difference(1, 2) == ("$", 1, 2)
    assert first_difference({"v": 1}, {"v": 1.0}) is None  # one JSON number
    assert first_difference({"v": True}, {"v": 1}) == ("v", True, 1)
    assert first_difference({"v": [1]}, {"v": {"0": 1}}) == ("v", [1], {"0": 1})
    assert first_difference({"v": 1}, {"v": 2}, "answer") == ("answer.v", 1, 2)


def test_the_signer_signs_each_answer_once(signer: NoteSigner) -> None:
    answers = AnswerSigner(signer, ORIGIN, cache_size=2)
    assert answers.cached(7, TARGET, '"e1"') is None
    made = answers.sign(7, TARGET, '"e1"', BODY)
    assert answers.cached(7, TARGET, '"e1"') == made and answers.signed == 1
    assert answers.cached(8, TARGET, '"e1"') is None  # another size is another statement
    answers.sign(8, TARGET, '"e1"', BODY)
    answers.sign(9, TARGET, '"e1"', BODY)
    assert answers.cached(7, TARGET, '"e1"') is None  # the oldest went
    assert answers.signed == 3
    verify_answer(signer.verifier, 7, TARGET, BODY, made)


def test_a_target_is_recomputed_as_of_the_saved_size() -> None:
    assert pinned_target("/v1/runs/abc", 5) == "/v1/runs/abc?asOf=5"
    assert pinned_target("/v1/runs?asOf=2026-01-01&limit=2", 5) == "/v1/runs?limit=2&asOf=5"
