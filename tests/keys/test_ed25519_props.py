"""Property tests: Ed25519 sign/verify round-trips, and any single-bit flip breaks verification."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from keys import SigningKey, VerificationError

seeds = st.binary(min_size=32, max_size=32)
messages = st.binary(max_size=512)


def _flip(data: bytes, bit: int) -> bytes:
    out = bytearray(data)
    out[bit // 8] ^= 1 << (bit % 8)
    return bytes(out)


@settings(max_examples=200)
@given(seed=seeds, message=messages)
def test_sign_verify_roundtrip(seed: bytes, message: bytes) -> None:
    key = SigningKey.from_seed(seed)
    sig = key.sign(message)
    assert len(sig) == 64
    key.public.verify(sig, message)


@settings(max_examples=200)
@given(seed=seeds, message=messages.filter(bool), data=st.data())
def test_message_bit_flip_fails(seed: bytes, message: bytes, data: st.DataObject) -> None:
    key = SigningKey.from_seed(seed)
    sig = key.sign(message)
    bit = data.draw(st.integers(0, len(message) * 8 - 1), label="bit")
    with pytest.raises(VerificationError):
        key.public.verify(sig, _flip(message, bit))


@settings(max_examples=200)
@given(seed=seeds, message=messages, bit=st.integers(0, 64 * 8 - 1))
def test_signature_bit_flip_fails(seed: bytes, message: bytes, bit: int) -> None:
    key = SigningKey.from_seed(seed)
    sig = key.sign(message)
    with pytest.raises(VerificationError):
        key.public.verify(_flip(sig, bit), message)
