"""Ed25519 keys: the Wycheproof suite (all 151 cases), RFC 8032 TEST 1, key ids, equality, repr."""

from __future__ import annotations

import hashlib
import json
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import pytest

from keys import KeyringError, SigningKey, VerificationError, VerifyingKey, verify_raw
from tests.corpora import corpus, shared_dir

WYCHEPROOF = ("transparency-test-vectors", "wycheproof", "ed25519_test.json")


def _wycheproof_cases() -> list[dict[str, Any]]:
    # Collection must not skip the whole module when the corpora are absent: with no cases the
    # parametrized test is skipped, and test_wycheproof_count skips (or fails in CI) loudly.
    path = shared_dir().joinpath("corpora", *WYCHEPROOF)
    if not path.exists():
        return []
    doc = json.loads(path.read_text())
    return [
        {**case, "pk": group["publicKey"]["pk"]}
        for group in doc["testGroups"]
        for case in group["tests"]
    ]


CASES = _wycheproof_cases()


@pytest.mark.corpus
def test_wycheproof_count() -> None:
    doc = json.loads(corpus(*WYCHEPROOF).read_text())
    cases = _wycheproof_cases()
    assert doc["numberOfTests"] == len(cases) == 151
    assert sum(c["result"] == "valid" for c in cases) == 88
    assert sum(c["result"] == "invalid" for c in cases) == 63


@pytest.mark.corpus
@pytest.mark.parametrize("case", CASES, ids=[f"tc{c['tcId']}" for c in CASES])
def test_wycheproof(case: dict[str, Any]) -> None:
    pk, sig, msg = (bytes.fromhex(case[k]) for k in ("pk", "sig", "msg"))
    if case["result"] == "valid":
        verify_raw(pk, sig, msg)
        VerifyingKey.from_raw(pk).verify(sig, msg)
    else:
        assert case["result"] == "invalid"  # the file has no "acceptable" cases
        with pytest.raises(KeyringError):
            verify_raw(pk, sig, msg)
        with pytest.raises(VerificationError):
            VerifyingKey.from_raw(pk).verify(sig, msg)


# RFC 8032 section 7.1, TEST 1 (empty message).
RFC8032_SEED = bytes.fromhex("9d61b19deffd5a60ba844af492ec2cc44449c5697b326919703bac031cae7f60")
RFC8032_PUBLIC = bytes.fromhex("d75a980182b10ab7d54bfed3c964073a0ee172f3daa62325af021a68f707511a")
RFC8032_SIG = bytes.fromhex(
    "e5564300c360ac729086e2cc806e828a84877f1eb8e5d974d873e065224901555fb8821590a33bacc61e39701cf9b46bd25bf5f0595bbe24655141438e7a100b"
)


def test_rfc8032_test1() -> None:
    key = SigningKey.from_seed(RFC8032_SEED)
    assert key.seed == RFC8032_SEED
    assert key.public.raw == RFC8032_PUBLIC
    assert key.sign(b"") == RFC8032_SIG
    key.public.verify(RFC8032_SIG, b"")


def test_key_id_is_hex_sha256_of_raw_public_key() -> None:
    key = SigningKey.from_seed(RFC8032_SEED)
    expected = hashlib.sha256(RFC8032_PUBLIC).hexdigest()
    assert key.key_id == key.public.key_id == expected
    assert expected == expected.lower()
    assert len(expected) == 64


@pytest.mark.parametrize("size", [0, 31, 33, 64])
def test_from_raw_rejects_wrong_sizes(size: int) -> None:
    with pytest.raises(KeyringError, match="32 bytes"):
        VerifyingKey.from_raw(b"\x01" * size)
    with pytest.raises(KeyringError):
        verify_raw(b"\x01" * size, RFC8032_SIG, b"")


@pytest.mark.parametrize("size", [0, 31, 33, 64])
def test_from_seed_rejects_wrong_sizes(size: int) -> None:
    with pytest.raises(KeyringError, match="32 bytes"):
        SigningKey.from_seed(b"\x01" * size)


@pytest.mark.parametrize("sig", [b"", RFC8032_SIG[:63], RFC8032_SIG + b"\x00", bytes(64)])
def test_bad_signatures_raise_verification_error(sig: bytes) -> None:
    public = VerifyingKey.from_raw(RFC8032_PUBLIC)
    with pytest.raises(VerificationError) as info:
        public.verify(sig, b"")
    assert info.value.details["key_id"] == public.key_id
    assert info.value.__cause__ is None
    assert info.value.__suppress_context__


def test_wrong_message_or_key_fails() -> None:
    key = SigningKey.generate()
    sig = key.sign(b"message")
    key.public.verify(sig, b"message")
    with pytest.raises(VerificationError):
        key.public.verify(sig, b"messagf")
    with pytest.raises(VerificationError):
        SigningKey.generate().public.verify(sig, b"message")


def test_equality_and_hash_by_raw_bytes() -> None:
    a = VerifyingKey.from_raw(RFC8032_PUBLIC)
    b = SigningKey.from_seed(RFC8032_SEED).public
    other = SigningKey.generate().public
    assert a == b
    assert hash(a) == hash(b)
    assert a != other
    assert a != RFC8032_PUBLIC
    assert len({a, b, other}) == 2


def test_repr_never_shows_the_seed() -> None:
    key = SigningKey.from_seed(RFC8032_SEED)
    for text in (repr(key), str(key), repr([key])):
        assert RFC8032_SEED.hex() not in text
        assert key.key_id in text
    assert repr(key.public) == f"VerifyingKey(key_id={key.key_id!r})"


def test_generated_keys_differ_and_roundtrip_through_seed() -> None:
    a, b = SigningKey.generate(), SigningKey.generate()
    assert a.seed != b.seed
    again = SigningKey.from_seed(a.seed)
    assert again.public == a.public
    assert again.sign(b"x") == a.sign(b"x")  # Ed25519 is deterministic


def test_no_direct_construction() -> None:
    with pytest.raises(TypeError):
        VerifyingKey()
    with pytest.raises(TypeError):
        SigningKey()


def test_shared_keys_sign_and_verify_from_threads() -> None:
    key = SigningKey.generate()
    public = key.public
    messages = [i.to_bytes(4, "big") * 8 for i in range(400)]

    def work(message: bytes) -> bytes:
        sig = key.sign(message)
        public.verify(sig, message)
        return sig

    with ThreadPoolExecutor(max_workers=8) as pool:
        sigs = list(pool.map(work, messages))
    assert sigs == [key.sign(m) for m in messages]


def test_a_small_order_point_is_no_key() -> None:
    """libsodium (which checks the signatures) verifies nothing against a small-order point,
    and OpenSSL accepted a forgery for one (R = identity, S = 0): such bytes are refused as a
    key, whichever way they arrive."""
    identity = bytes([1]) + bytes(31)
    with pytest.raises(KeyringError, match="small-order"):
        VerifyingKey.from_raw(identity)


def test_a_signature_as_any_bytes_like_object_verifies() -> None:
    key = SigningKey.generate()
    signature = key.sign(b"message")
    key.public.verify(bytearray(signature), memoryview(b"message"))
    with pytest.raises(VerificationError):
        key.public.verify(bytearray(signature), b"another message")
