"""RFC 8785 canonical JSON: the standard vectors, the ES6 number vectors, and the fast path's
equality with the reference implementation (PyPI ``rfc8785``)."""

from __future__ import annotations

import hashlib
import json
import math
import struct
from pathlib import Path
from typing import Any

import pytest
import rfc8785

from events.canonical import canonical_bytes, digest, es6_number
from events.errors import CanonicalizationError


def _jcs_cases(vectors: Path) -> list[str]:
    return sorted(p.stem for p in (vectors / "jcs" / "input").glob("*.json"))


def test_rfc8785_vectors(vectors_dir: Path) -> None:
    names = _jcs_cases(vectors_dir)
    assert names == ["arrays", "french", "structures", "unicode", "values", "weird"]
    for name in names:
        value = json.loads((vectors_dir / "jcs" / "input" / f"{name}.json").read_bytes())
        want = (vectors_dir / "jcs" / "output" / f"{name}.json").read_bytes()
        hexed = (vectors_dir / "jcs" / "outhex" / f"{name}.txt").read_text().split()
        assert canonical_bytes(value) == want, name
        assert bytes(int(h, 16) for h in hexed) == want, name


def _es6_lines(kats: dict[str, Any], count: int) -> bytes:
    """The cyberphone numgen stream, generated as the corpus README describes."""
    out = []

    def emit(u: int) -> None:
        x = struct.unpack("<d", struct.pack("<Q", u))[0]
        out.append(f"{u:x},{canonical_bytes(x).decode()}\n")

    for h in kats["static_u64_hex"]:
        emit(int(h, 16))
    base = int(kats["serial_base_hex"], 16)
    for i in range(kats["serial_count"]):
        emit(base + i)
    block = bytes(32)
    while len(out) < count:
        block = hashlib.sha256(block).digest()
        for j in range(4):
            u = int.from_bytes(block[8 * j : 8 * j + 8], "little")
            x = struct.unpack("<d", struct.pack("<Q", u))[0]
            if x == 0 or not math.isfinite(x):
                continue
            emit(u)
    return "".join(out[:count]).encode()


@pytest.mark.parametrize("count", ["1000", "10000", "100000"])
def test_es6_number_vectors(vectors_dir: Path, count: str) -> None:
    kats = json.loads((vectors_dir / "kats" / "extracted-kats.json").read_text())["jcs_es6_numbers"]
    want_hex, want_len = kats["sha256_of_first_n_lines"][count]
    data = _es6_lines(kats, int(count))
    assert len(data) == want_len
    assert hashlib.sha256(data).hexdigest() == want_hex


@pytest.mark.parametrize(
    ("value", "text"),
    [
        (0.0, "0"),
        (-0.0, "0"),
        (1.0, "1"),
        (1e-6, "0.000001"),
        (3.5e-6, "0.0000035"),
        (1e-7, "1e-7"),
        (1e16, "10000000000000000"),
        (1e21, "1e+21"),
        (12345678901234567890.0, "12345678901234567000"),
        (0.1, "0.1"),
        (-1.5e300, "-1.5e+300"),
        (5e-324, "5e-324"),
    ],
)
def test_es6_number_spellings(value: float, text: str) -> None:
    assert es6_number(value) == text
    assert canonical_bytes(value) == text.encode()


def test_unsafe_integers_read_as_javascript_doubles() -> None:
    # KernelIndex canonicalises in JavaScript, where 2**53 + 1 is read as 2**53.
    assert canonical_bytes(2**53 + 1) == b"9007199254740992"
    assert canonical_bytes(2**53 - 1) == b"9007199254740991"
    assert canonical_bytes(-(10**22)) == b"-1e+22"


@pytest.mark.parametrize(
    "value",
    [
        [1234567890123456789, 1.5],
        {"a": -9007199254740993},
        [1.2345678901234567e-5, 12345678901234567],
        [1234567890123456.5, 123456789012345678],
        "x 12345678901234567890",
    ],
)
def test_long_integers_beside_long_floats(value: object) -> None:
    def as_javascript_reads_it(v: object) -> object:
        if isinstance(v, int) and abs(v) > 2**53 - 1:
            return float(v)
        if isinstance(v, list):
            return [as_javascript_reads_it(x) for x in v]
        if isinstance(v, dict):
            return {k: as_javascript_reads_it(x) for k, x in v.items()}
        return v

    assert canonical_bytes(value) == rfc8785.dumps(as_javascript_reads_it(value))


def test_non_ascii_keys_sort_by_utf16_units() -> None:
    # U+E000 sorts after U+1F600 (surrogates D83D...) in UTF-16, before it by code point.
    value = {"\ue000": 1, "\U0001f600": 2, "a": 3}
    assert canonical_bytes(value) == rfc8785.dumps(value)
    assert canonical_bytes(value).decode().index("\U0001f600") < canonical_bytes(
        value
    ).decode().index("\ue000")


@pytest.mark.parametrize(
    "bad",
    [math.nan, math.inf, -math.inf, {"a": math.nan}, "\ud800", {"\udc00": 1}, {1: 2}, b"x", {1.5}],
)
def test_refuses_what_json_cannot_hold(bad: Any) -> None:
    with pytest.raises(CanonicalizationError):
        canonical_bytes(bad)


def test_digest_is_sha256_of_canonical_bytes() -> None:
    value = {"b": [1, 2.5, "x"], "a": None}
    assert digest(value) == "sha256:" + hashlib.sha256(b'{"a":null,"b":[1,2.5,"x"]}').hexdigest()


def test_escaped_supplementary_keys_sort_by_utf16_units() -> None:
    # Found by hypothesis: U+10000 written as the escape pair \ud800\udc00 must still sort after
    # U+E000, as UTF-16 units order them.
    from events.canonical import canonical_json

    text = b'{"apiVersion": {"\\ue000": null, "\\ud800\\udc00": null}}'
    value = json.loads(text)
    assert canonical_json(text) == rfc8785.dumps(value)
    assert canonical_json(text, members=("apiVersion",)) == rfc8785.dumps(value)


@pytest.mark.parametrize(
    ("text", "beyond_bmp"),
    [
        ("😀".encode(), True),
        (b'"\\ud83d\\ude00"', True),
        (b'"\\uDBFF\\uDFFF"', True),
        (b'"\\u00e9 \\u20ac"', False),
        ("é€ and CJK 漢字".encode(), False),
        (b"\xff", True),  # not UTF-8: the slow path names it
        (b'{"a": 1}', False),
    ],
)
def test_the_fast_path_guard_finds_every_character_beyond_the_bmp(
    text: bytes, beyond_bmp: bool
) -> None:
    from events.canonical import _may_hold_supplementary

    assert _may_hold_supplementary(text) is beyond_bmp
