"""Signed answers: the log key's word on what a JSON view said, at which tree size.

A server could tell an auditor the truth and everyone else a lie. So every JSON view answer
under ``/v1`` says the tree size it reflects and carries a detached signature by the log key, in
two response headers:

- ``Benchproof-Tree-Size: <N>``: the size of the log the answer reflects (the ``asOf`` it was
  asked for, else the size the server read when it answered);
- ``Benchproof-Signature: <key name> <base64(key hash || signature)>``: the log key's name (the
  log's origin), and its 4-byte C2SP note key hash followed by the 64-byte Ed25519 signature of
  the message below, base64 (standard, padded), as in a signed note's signature line.

The message signed is five lines, each ending in ``\\n`` (UTF-8):

1. ``benchproof signed answer v1`` (``CONTEXT``: a fixed text with spaces, so it cannot be a
   checkpoint note, whose first line is the origin, and unlike a citation receipt's context);
2. the log's origin;
3. the tree size, in decimal;
4. the request target as the server received it: the path, then ``?`` and the query if there is
   one, byte for byte, any byte outside ``!``…``~`` percent-encoded (``normal_target``);
5. the lowercase hex SHA-256 of the exact body bytes.

Whoever is shown a view keeps it as a ``SavedAnswer`` (one JSON object holding the exact body
text and the signature), which anyone can check with the log's vkey alone (``check_saved``),
and against a replay of the log (``benchproof verify-answer --data``), naming the first field
that differs (``first_difference``).
"""

from __future__ import annotations

import binascii
import hashlib
import math
import re
import threading
from collections.abc import Mapping
from typing import Any, Final

import msgspec

from keys import NoteSigner, NoteVerifier, VerificationError
from verifier.errors import VerifierError

__all__ = [
    "ABSENT",
    "CONTEXT",
    "FORMAT",
    "SIGNATURE_HEADER",
    "TREE_SIZE_HEADER",
    "AnswerInvalid",
    "AnswerSigner",
    "SavedAnswer",
    "check_headers",
    "check_saved",
    "decode_saved",
    "first_difference",
    "normal_target",
    "saved",
    "sign_answer",
    "signed_message",
    "verify_answer",
]

FORMAT: Final = "benchproof signed answer v1"
CONTEXT: Final = (FORMAT + "\n").encode()
TREE_SIZE_HEADER: Final = "Benchproof-Tree-Size"
SIGNATURE_HEADER: Final = "Benchproof-Signature"

_KEY_HASH = 4
_SIGNATURE = 64
_HEX64 = re.compile(r"[0-9a-f]{64}\Z")
_OUTSIDE = re.compile(rb"[^\x21-\x7e]")


class AnswerInvalid(VerifierError):
    """A signed answer does not check out: ``check`` names what failed (``format``, ``body``,
    ``signature``, or ``difference`` for an answer the replay does not give)."""

    def __init__(self, check: str, detail: str) -> None:
        super().__init__(f"{check}: {detail}", check=check)
        self.check = check


def normal_target(raw: bytes | str) -> str:
    """The request target in the form the signature covers: ``raw`` (the path, then ``?`` and
    the query when there is one, as sent) with every byte outside ``!``…``~`` (space, controls,
    non-ASCII) percent-encoded as ``%XX`` (upper-case hex); everything else, ``%`` included,
    stays as it is. Raises nothing."""
    data = raw.encode() if isinstance(raw, str) else raw
    if _OUTSIDE.search(data) is None:
        return data.decode("ascii")
    return _OUTSIDE.sub(lambda m: b"%%%02X" % m[0][0], data).decode("ascii")


def signed_message(origin: str, size: int, target: str, body_sha256: str) -> bytes:
    """The bytes the log key signs for an answer (the module's docstring has the format).

    Raises:
        AnswerInvalid: (``format``) a field that would not fit on its line: an origin or target
            holding a newline, a negative size, a digest that is not 64 lowercase hex.
    """
    if "\n" in origin or not origin:
        raise AnswerInvalid("format", "the origin must be one non-empty line")
    if size < 0:
        raise AnswerInvalid("format", f"tree size {size} is negative")
    if normal_target(target) != target or not target.startswith("/"):
        raise AnswerInvalid("format", f"target {target!r} is not a request target in normal form")
    if not _HEX64.match(body_sha256):
        raise AnswerInvalid("format", "the body digest must be 64 lowercase hex digits")
    return b"%b%b\n%d\n%b\n%b\n" % (
        CONTEXT,
        origin.encode(),
        size,
        target.encode("ascii"),
        body_sha256.encode("ascii"),
    )


def sign_answer(signer: NoteSigner, origin: str, size: int, target: str, body: bytes) -> str:
    """The ``Benchproof-Signature`` header value for ``body``, the answer to ``target`` at tree
    size ``size`` of the log ``origin``: ``<key name> <base64(key hash || signature)>``.

    Raises:
        AnswerInvalid: see ``signed_message``.
    """
    message = signed_message(origin, size, target, hashlib.sha256(body).hexdigest())
    raw = signer.key_hash + signer.key.sign(message)
    return f"{signer.name} {binascii.b2a_base64(raw, newline=False).decode('ascii')}"


def verify_answer(
    key: NoteVerifier,
    size: int,
    target: str,
    body: bytes,
    signature: str,
    *,
    origin: str | None = None,
) -> None:
    """Check ``signature`` (a ``Benchproof-Signature`` header value) over ``body``, the answer
    to ``target`` at ``size``, by the log key ``key`` (``origin``: the log's, default the key's
    name, which is the origin for a Benchproof log).

    Raises:
        AnswerInvalid: ``signature``: malformed, by another key (name or key hash), or not a
            valid signature of this message; ``format``: see ``signed_message``.
    """
    # (1) The header: "<name> <base64>", the base64 canonical and exactly hash + signature.
    name, _, encoded = signature.partition(" ")
    try:
        raw = binascii.a2b_base64(encoded, strict_mode=True)
    except (binascii.Error, ValueError):
        raw = b""
    if (
        not raw
        or binascii.b2a_base64(raw, newline=False).decode("ascii") != encoded
        or len(raw) != _KEY_HASH + _SIGNATURE
    ):
        raise AnswerInvalid(
            "signature", "not '<key name> <base64 of a 4-byte key hash and 64-byte signature>'"
        )
    # (2) The key: the name and the C2SP note key hash both name the vkey given.
    if name != key.name or raw[:_KEY_HASH] != key.key_hash:
        raise AnswerInvalid(
            "signature",
            f"made by key {name!r} ({raw[:_KEY_HASH].hex()}), not by {key.name} "
            f"({key.key_hash.hex()})",
        )
    # (3) The Ed25519 signature over the message rebuilt from what was shown.
    message = signed_message(
        key.name if origin is None else origin, size, target, hashlib.sha256(body).hexdigest()
    )
    try:
        key.public.verify(raw[_KEY_HASH:], message)
    except VerificationError:
        raise AnswerInvalid(
            "signature",
            "the log key did not sign this body as the answer to this target at this tree size",
        ) from None


class SavedAnswer(msgspec.Struct, frozen=True, forbid_unknown_fields=True):
    """A signed answer as kept by whoever was shown it (``benchproof runs show --server URL
    --json``): everything needed to check it offline with the log's vkey.

    ``body`` is the answer's exact text (the signature covers its bytes, so it is kept as a
    string, never re-encoded); ``bodySha256`` is the hex SHA-256 of its UTF-8 bytes; ``target``
    the request target in normal form; ``signature`` the ``Benchproof-Signature`` header as
    received; ``server`` the base URL it was asked at (not signed: where to ask again);
    ``checkpoint`` the server's signed checkpoint note read just after (of ``treeSize`` entries
    or more), with the cosignatures of witnesses it held, which ``verify-answer --witness-key``
    counts (absent in answers saved before witnesses)."""

    format: str
    server: str
    origin: str
    treeSize: int
    target: str
    bodySha256: str
    signature: str
    body: str
    checkpoint: str | None = None


_SAVED = msgspec.json.Decoder(SavedAnswer)


def saved(
    server: str, origin: str, size: int, target: str, body: bytes, signature: str
) -> SavedAnswer:
    """A ``SavedAnswer`` of what a server answered.

    Raises:
        AnswerInvalid: (``body``) the body is not UTF-8 text.
    """
    try:
        text = body.decode()
    except UnicodeDecodeError:
        raise AnswerInvalid("body", "the answer is not UTF-8 text") from None
    return SavedAnswer(
        format=FORMAT,
        server=server,
        origin=origin,
        treeSize=size,
        target=normal_target(target),
        bodySha256=hashlib.sha256(body).hexdigest(),
        signature=signature,
        body=text,
    )


def decode_saved(data: bytes) -> SavedAnswer:
    """The saved answer in ``data`` (its JSON).

    Raises:
        AnswerInvalid: (``format``) not a saved answer of this format, or one whose origin,
            tree size, target or body digest could not have been signed.
    """
    try:
        answer = _SAVED.decode(data)
    except msgspec.DecodeError as exc:
        raise AnswerInvalid("format", f"not a saved answer: {exc}") from None
    if answer.format != FORMAT:
        raise AnswerInvalid("format", f"format {answer.format!r} is not {FORMAT!r}")
    # Every signed field must fit its line of the message (raises ``format`` otherwise).
    signed_message(answer.origin, answer.treeSize, answer.target, answer.bodySha256)
    return answer


def check_saved(answer: SavedAnswer, key: NoteVerifier) -> None:
    """Check a saved answer offline: its body digest, and the log key's signature over it.

    Raises:
        AnswerInvalid: ``format``, ``body`` (the body is not the one ``bodySha256`` names) or
            ``signature`` (see ``verify_answer``).
    """
    body = answer.body.encode()
    if hashlib.sha256(body).hexdigest() != answer.bodySha256:
        raise AnswerInvalid("body", "the body's SHA-256 is not bodySha256")
    verify_answer(key, answer.treeSize, answer.target, body, answer.signature, origin=answer.origin)


def check_headers(
    key: NoteVerifier, origin: str, target: str, headers: Mapping[str, str], body: bytes
) -> str | None:
    """What is wrong with the signed answer ``body`` to ``target`` (path and query, as sent)
    given its response ``headers`` (names in any case), or None when the log key ``key``
    signed it as the log ``origin``. A target that asks ``asOf`` a tree size must be answered
    at that size. Raises nothing: for callers that collect problems (``benchproof audit``)."""
    size_text = _header(headers, TREE_SIZE_HEADER)
    signature = _header(headers, SIGNATURE_HEADER)
    if signature is None:
        return f"{target}: the answer carries no {SIGNATURE_HEADER} header"
    if size_text is None or not size_text.isdigit():
        return f"{target}: the answer carries no valid {TREE_SIZE_HEADER} header"
    size = int(size_text)
    asked = _asked_size(target)
    if asked is not None and asked != size:
        return f"{target}: the answer says tree size {size}, not the {asked} asked for"
    try:
        verify_answer(key, size, normal_target(target), body, signature, origin=origin)
    except AnswerInvalid as exc:
        return f"{target}: {exc.detail}"
    return None


def _header(headers: Mapping[str, str], name: str) -> str | None:
    value = headers.get(name)
    return value if value is not None else headers.get(name.lower())


def _asked_size(target: str) -> int | None:
    """The tree size ``target``'s ``asOf`` names, if it names one by number."""
    query = target.partition("?")[2]
    for pair in query.split("&"):
        name, _, value = pair.partition("=")
        if name == "asOf" and value.isdigit():
            return int(value)
    return None


class _Absent:
    """A member one side of a comparison does not have."""

    __slots__ = ()

    def __repr__(self) -> str:
        return "absent"


ABSENT: Final = _Absent()
"""What ``first_difference`` gives for a member (or list item) that one side lacks."""

_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*\Z")


def _member(path: str, name: str) -> str:
    if not _NAME.match(name):
        return f"{path}[{msgspec.json.encode(name).decode()}]"
    return f"{path}.{name}" if path else name


def _same_scalar(a: Any, b: Any) -> bool:
    # JSON has one number type (1 and 1.0 are the same number), but true is not 1.
    if isinstance(a, bool) or isinstance(b, bool):
        return type(a) is type(b) and a == b
    if isinstance(a, int | float) and isinstance(b, int | float):
        if isinstance(a, float) and isinstance(b, float) and math.isnan(a) and math.isnan(b):
            return True
        return a == b
    return type(a) is type(b) and bool(a == b)


def first_difference(a: Any, b: Any, path: str = "") -> tuple[str, Any, Any] | None:
    """The first place two decoded JSON values differ: its path (``rank.of``,
    ``items[3].evidenceLevel``, ``identity["odd key"]``; ``$`` for the values themselves) and
    the value on each side (``ABSENT`` for a member or item one side lacks); None when they are
    the same JSON value (object members in any order; numbers compared as numbers, but ``true``
    is not ``1``). Objects are walked in ``a``'s member order, then ``b``'s extra members; lists
    item by item. ``path`` prefixes every path returned. Raises nothing."""
    if isinstance(a, dict) and isinstance(b, dict):
        for name, value in a.items():
            where = _member(path, str(name))
            if name not in b:
                return where, value, ABSENT
            found = first_difference(value, b[name], where)
            if found is not None:
                return found
        for name, value in b.items():
            if name not in a:
                return _member(path, str(name)), ABSENT, value
        return None
    if isinstance(a, list) and isinstance(b, list):
        for i, (x, y) in enumerate(zip(a, b, strict=False)):
            found = first_difference(x, y, f"{path}[{i}]")
            if found is not None:
                return found
        if len(a) != len(b):
            i = min(len(a), len(b))
            return f"{path}[{i}]", a[i] if i < len(a) else ABSENT, b[i] if i < len(b) else ABSENT
        return None
    if isinstance(a, dict | list) or isinstance(b, dict | list) or not _same_scalar(a, b):
        return path or "$", a, b
    return None


class AnswerSigner:
    """The log key signing answers, each (tree size, target, body) once: a bounded cache of the
    header values made (the oldest goes first), keyed by the size, the target and the body's
    ETag (its SHA-256's first 128 bits, which the read path has computed already), so that a
    repeated read costs a dictionary lookup, not a signature. Thread-safe."""

    def __init__(self, signer: NoteSigner, origin: str, *, cache_size: int = 8192) -> None:
        self.signer = signer
        self.origin = origin
        self.signed = 0  # how many signatures this signer made (the cache's misses)
        self._cache: dict[tuple[int, str, str], str] = {}
        self._cache_size = cache_size
        self._lock = threading.Lock()

    def cached(self, size: int, target: str, etag: str) -> str | None:
        """The header value made for this answer already, if the cache still holds it."""
        # A lookup needs no lock (one dictionary read is atomic), and keeps no recency: the
        # rare answer signed again after its eviction costs less than ordering every hit.
        return self._cache.get((size, target, etag))

    def sign(self, size: int, target: str, etag: str, body: bytes) -> str:
        """Sign the answer ``body`` (whose ETag is ``etag``) and keep the header value.

        Raises:
            AnswerInvalid: see ``signed_message``.
        """
        value = sign_answer(self.signer, self.origin, size, target, body)
        with self._lock:
            self.signed += 1
            self._cache[(size, target, etag)] = value
            while len(self._cache) > self._cache_size:
                del self._cache[next(iter(self._cache))]
        return value
