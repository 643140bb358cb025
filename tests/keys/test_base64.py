"""The strict base64 every keys/ format uses: exactly one accepted encoding per byte string."""

from __future__ import annotations

import base64

import pytest
from hypothesis import given
from hypothesis import strategies as st

from keys._base64 import b64decode, b64encode


@given(st.binary(max_size=100))
def test_roundtrip_matches_the_standard_library(data: bytes) -> None:
    assert b64encode(data) == base64.b64encode(data).decode()
    assert b64decode(b64encode(data)) == data


@pytest.mark.parametrize(
    "text",
    [
        "QUJD=",  # surplus padding after a full quantum (binascii strict_mode accepts it)
        "QUJD==",
        "QR==",  # non-zero pad bits
        "QUJ=",
        "QQ",  # missing padding
        "QQ===",
        "Q Q==",
        "QQ==\n",
        "QUJ-",  # URL-safe alphabet
        "é",
    ],
)
def test_rejects_non_canonical_text(text: str) -> None:
    with pytest.raises(ValueError):
        b64decode(text)
