"""RFC 8785 (JCS) canonical JSON, fast.

``canonical_bytes`` returns exactly the bytes RFC 8785 prescribes for a JSON value (``dict``,
``list``/``tuple``, ``str``, ``int``, ``float``, ``bool``, ``None``). It is msgspec's sorted encoder
with the three places where msgspec and RFC 8785 disagree patched:

1. Numbers. RFC 8785 serialises every number as ECMAScript's ``Number.prototype.toString`` would.
   msgspec agrees on every non-integral double except those in [1e-6, 1e-5); integral doubles it
   writes as ``2.0`` or ``1e16``. Those floats are formatted here (``es6_number``) and spliced in as
   ``msgspec.Raw``. Integers beyond ±(2**53 - 1) are not I-JSON; they are treated as the double a
   JavaScript parser would read (KernelIndex canonicalises in JavaScript), never refused silently.
2. Key order. RFC 8785 sorts object keys by UTF-16 code units; msgspec by code points. They agree
   on ASCII keys. An object with a non-ASCII key is serialised here, keys ordered by UTF-16.
3. Strings. Both escape exactly ``"``, ``\\`` and the C0 controls with the same spellings; a string
   that is not valid Unicode (a lone surrogate) is refused, as RFC 8785 requires.

The fast path runs in C: encode plainly, then (when the bytes are ASCII, hold no ``null`` and no
integer long enough to leave the safe range) decode them again with a float hook that marks the
doubles msgspec would misspell, check that the round trip equals the input (which refuses bytes,
sets, non-string keys and NaN, all of which msgspec would otherwise quietly encode), and encode
sorted. Anything else takes the slow path, a Python walk over the value.

Equality with the reference implementation (PyPI ``rfc8785``) is proven by the JCS vectors, the
ES6 number vectors, property tests and the whole KernelIndex catalog (``tests/``).
"""

from __future__ import annotations

import hashlib
import math
import re
from decimal import Decimal
from typing import Any

import msgspec

from events.errors import CanonicalizationError

__all__ = ["canonical_bytes", "canonical_json", "digest", "es6_number", "sha256_digest"]

_MAX_SAFE = 2**53 - 1
_ENCODER = msgspec.json.Encoder(order="sorted")
_RAW = msgspec.Raw
# For the integer scan: digits become "0", the marks of a float (. e E) become ".", all else " ".
_DIGIT_MAP = bytes(0x30 if 0x30 <= b <= 0x39 else 0x2E if b in b".eE" else 0x20 for b in range(256))
_LONG_RUN = b" " + b"0" * 16


def _may_hold_unsafe_integer(plain: bytes) -> bool:
    """True when the JSON text may hold an integer of 16 or more digits (beyond 2**53 - 1 when
    it has 17). Runs of digits inside strings count too: a false alarm only means the slow path.
    bytes.translate and bytes.find are far faster than a regex scan."""
    mapped = b" " + plain.translate(_DIGIT_MAP)
    at = mapped.find(_LONG_RUN)
    while at >= 0:
        end = at + len(_LONG_RUN)
        while end < len(mapped) and mapped[end] == 0x30:
            end += 1
        if end == len(mapped) or mapped[end] != 0x2E:
            return True
        at = mapped.find(_LONG_RUN, end)
    return False


def es6_number(x: float) -> str:
    """Format a finite double as ECMAScript ``Number.prototype.toString`` does (RFC 8785 §3.2.2.3).

    Raises:
        CanonicalizationError: ``x`` is NaN or infinite (not representable in JSON).
    """
    if not math.isfinite(x):
        raise CanonicalizationError(f"{x!r} cannot be represented in JSON")
    if x == 0:
        return "0"  # -0 too
    if x < 0:
        return "-" + es6_number(-x)
    # repr() gives the shortest digit string that round-trips, as ECMAScript requires.
    _, digit_tuple, exponent = Decimal(repr(x)).as_tuple()
    digits = "".join(map(str, digit_tuple)).rstrip("0")
    exponent = int(exponent)  # finite, so never the 'n'/'N'/'F' of a special Decimal
    exponent += len(digit_tuple) - len(digits)
    k = len(digits)
    n = k + exponent  # the value is 0.<digits> x 10**n
    if k <= n <= 21:
        return digits + "0" * (n - k)
    if 0 < n <= 21:
        return digits[:n] + "." + digits[n:]
    if -6 < n <= 0:
        return "0." + "0" * (-n) + digits
    e = n - 1
    mantissa = digits[0] + ("." + digits[1:] if k > 1 else "")
    return f"{mantissa}e{'+' if e >= 0 else '-'}{abs(e)}"


class _Misspelt(float):
    """A double whose msgspec spelling differs from ECMAScript's (see ``_needs_es6``)."""


def _needs_es6(x: float) -> bool:
    return x.is_integer() or 1e-6 <= abs(x) < 1e-5


def _decode_float(text: str) -> float:
    x = float(text)
    return _Misspelt(x) if _needs_es6(x) else x


def _encode_misspelt(x: Any) -> Any:
    if type(x) is _Misspelt:
        return _RAW(es6_number(x).encode())
    raise CanonicalizationError(f"a value of type {type(x).__name__} is not JSON")


_PLAIN = msgspec.json.Encoder()
_MARKING = msgspec.json.Decoder(float_hook=_decode_float)
_FAST = msgspec.json.Encoder(order="sorted", enc_hook=_encode_misspelt)


def _float(x: float) -> Any:
    if x != x or x in (math.inf, -math.inf):
        raise CanonicalizationError(f"{x!r} cannot be represented in JSON")
    return _RAW(es6_number(x).encode()) if _needs_es6(x) else x


def _utf16_key(key: str) -> bytes:
    return key.encode("utf-16-be", "surrogatepass")


def _check_str(s: str) -> str:
    if not s.isascii():
        try:
            s.encode("utf-8")
        except UnicodeEncodeError:
            raise CanonicalizationError("a string is not valid Unicode (lone surrogate)") from None
    return s


def _prepare(value: Any) -> Any:
    t = type(value)
    if t is str:
        return _check_str(value)
    if t is dict:
        ascii_keys = True
        out = {}
        for key, item in value.items():
            if type(key) is not str:
                raise CanonicalizationError(f"object key {key!r} is not a string")
            if not key.isascii():
                ascii_keys = False
                _check_str(key)
            out[key] = _prepare(item)
        if ascii_keys:
            return out
        # msgspec would sort these keys by code point; RFC 8785 wants UTF-16 code units.
        parts = [
            _ENCODER.encode(key) + b":" + _ENCODER.encode(out[key])
            for key in sorted(out, key=_utf16_key)
        ]
        return _RAW(b"{" + b",".join(parts) + b"}")
    if t is list or t is tuple:
        return [_prepare(item) for item in value]
    if t is int:
        if -_MAX_SAFE <= value <= _MAX_SAFE:
            return value
        return _RAW(es6_number(float(value)).encode())
    if t is float:
        return _float(value)
    if value is None or t is bool:
        return value
    raise CanonicalizationError(f"a value of type {t.__name__} is not JSON")


def canonical_bytes(value: Any) -> bytes:
    """Return the RFC 8785 canonical JSON bytes of a JSON value.

    Raises:
        CanonicalizationError: the value holds NaN, an infinity, a non-string key, a lone
            surrogate, or a non-JSON type.
    """
    try:
        plain = _PLAIN.encode(value)
    except (TypeError, UnicodeEncodeError, OverflowError):
        plain = b"\xff"  # not JSON, or not Unicode: the slow path names the problem
    if plain.isascii() and b"null" not in plain and not _may_hold_unsafe_integer(plain):
        marked = _MARKING.decode(plain)
        if marked == value:
            return _FAST.encode(marked)
    return _ENCODER.encode(_prepare(value))


# A character beyond the BMP, written as 4-byte UTF-8 or as an escaped surrogate (\uD83D...):
# where code-point order and UTF-16 order part.
_BELOW_4_BYTE_LEAD = bytes(range(0xF0))  # bytes that cannot start a 4-byte UTF-8 sequence
_SURROGATE_ESCAPE = re.compile(rb"\\u[dD][89abAB]")


def _may_hold_supplementary(text: bytes) -> bool:
    """True if ``text`` may hold a character beyond the BMP: a byte of 0xF0 or more (a 4-byte
    UTF-8 lead, or not UTF-8 at all) or an escaped surrogate. Deleting the lower bytes is a
    C loop over the bytes; the escape is looked for only when ``\\u`` occurs."""
    if text.translate(None, _BELOW_4_BYTE_LEAD):
        return True
    return b"\\u" in text and _SURROGATE_ESCAPE.search(text) is not None


_JSON = msgspec.json.Decoder()


def canonical_json(text: bytes, *, members: tuple[str, ...] | None = None) -> bytes:
    """RFC 8785 bytes of the JSON value in ``text`` (of only its top-level ``members`` when
    given). Straight from the JSON text: a decoded value holds only JSON types, so the fast path
    needs no round-trip check; key order needs care only when a key may hold a character beyond
    the BMP (4-byte UTF-8), where code-point and UTF-16 order part.

    Raises:
        CanonicalizationError: the text is not JSON, or holds a lone surrogate escape.
    """
    if not _may_hold_supplementary(text) and not _may_hold_unsafe_integer(text):
        try:
            value = _MARKING.decode(text)
            if members is not None:
                value = {k: value[k] for k in members if k in value}
            return _FAST.encode(value)
        except (msgspec.DecodeError, UnicodeEncodeError):
            pass  # the slow path names the problem
    try:
        value = _JSON.decode(text)
    except msgspec.DecodeError as exc:
        raise CanonicalizationError(f"not JSON: {exc}") from None
    if members is not None:
        value = {k: value[k] for k in members if k in value}
    return canonical_bytes(value)


def sha256_digest(data: bytes) -> str:
    """Return ``"sha256:" + hex(sha256(data))``."""
    return "sha256:" + hashlib.sha256(data).hexdigest()


def digest(value: Any) -> str:
    """Return ``H(v) = "sha256:" + hex(sha256(canonical_bytes(v)))`` (docs/formats/digests.md).

    Raises:
        CanonicalizationError: as ``canonical_bytes``.
    """
    return sha256_digest(canonical_bytes(value))
