"""Citation receipts (format ``benchproof citation receipt v1``): one text file that lets anyone
check, offline and years later, that a cited run was in the log when it was cited.

A receipt is UTF-8 text, lines ending in ``\\n``, in this order and nothing else:

1. ``benchproof citation receipt v1``
2. ``record: <permalink>``, ``run: <digest>``, ``accessed: <instant>``, ``evidence: <level>``,
   ``log: <origin> at tree size <size>``: each regenerated from the statement below;
3. ``verify: benchproof verify-citation <file> --log-key <the log's vkey file>`` and one empty
   line (fixed text);
4. ``statement <base64>``: the statement, RFC 8785 JSON ``{"accessed", "entryIndex",
   "evidenceLevel", "origin", "permalink", "root" (base64), "runDigest", "treeSize"}``;
5. ``signature <base64>``: the log key's Ed25519 signature over ``SIGNING_CONTEXT`` followed by
   the statement's bytes (no checkpoint note body can start that way: a note's first line is
   the log's origin, which holds no space);
6. ``checkpoint <base64>``: the log's signed checkpoint note of ``treeSize`` entries: the log's
   signature line, then any cosignatures of witnesses (C2SP ``cosignature/v1``) the log held
   when the receipt was made;
7. ``entry <base64>``: the exact leaf bytes of the run's ``run.ingested`` entry;
8. ``proof <base64>``: each hash of the entry's RFC 9162 inclusion proof in that tree, in order
   (none for a tree of one entry).

Every base64 field is standard base64 with padding and must be canonical (re-encoding what it
decodes gives the same text). A verifier reads the file line by line, requires each base64 field canonical and
the header to be exactly what the statement gives, and checks the rest: every character is
signed, hashed or regenerated, so none can change unnoticed (the file is exactly ``render`` of
its parts), but for the cosignatures of witnesses the verifier is not given: they are counted as
seen, and a reader who trusts a witness names its key (``--witness-key``, ``--quorum``).
"""

from __future__ import annotations

import base64
import binascii
import re
from collections.abc import Sequence
from urllib.parse import urlsplit

import msgspec

from events.canonical import canonical_bytes, canonical_json, sha256_digest
from events.checkpoints import parse_checkpoint_body
from events.entries import INSTANT as _INSTANT
from events.errors import EventError, LogError, ProofError
from events.merkle import leaf_hash, verify_inclusion
from keys import KeyringError, SigningKey, VerificationError
from keys.cosignatures import WitnessVerifier
from keys.errors import MalformedNote
from keys.notekeys import NoteVerifier
from keys.notes import open_note
from verifier.errors import VerifierError
from verifier.witnessing import QuorumNotMet, Witnessed, count_witnesses

__all__ = [
    "HEADER",
    "SIGNING_CONTEXT",
    "Receipt",
    "ReceiptInvalid",
    "Statement",
    "Verified",
    "make_receipt",
    "render",
    "verify_receipt",
]

HEADER = "benchproof citation receipt v1"
_PERMALINK = re.compile(r"https?://[!-~]+\Z")  # printable ASCII, no space
SIGNING_CONTEXT = b"benchproof citation receipt v1\n"
_VERIFY = "verify: benchproof verify-citation <file> --log-key <the log's vkey file>"


class ReceiptInvalid(VerifierError):
    """The receipt does not check out: ``check`` names the first check that failed."""

    def __init__(self, check: str, detail: str) -> None:
        super().__init__(f"{check}: {detail}", check=check)
        self.check = check


class Statement(msgspec.Struct, frozen=True, forbid_unknown_fields=True):
    """What the log key signs about a citation."""

    accessed: str
    entryIndex: int
    evidenceLevel: str
    origin: str
    permalink: str
    root: str
    runDigest: str
    treeSize: int


class Receipt(msgspec.Struct, frozen=True):
    """The parts of a receipt, decoded."""

    statement: bytes
    signature: bytes
    checkpoint: bytes
    entry: bytes
    proof: tuple[bytes, ...]


_STATEMENT = msgspec.json.Decoder(Statement)


def _b64(data: bytes) -> str:
    return base64.b64encode(data).decode()


def render(receipt: Receipt, statement: Statement | None = None) -> bytes:
    """The receipt's file: its header regenerated from the statement (``statement``: the one
    its bytes decode to, when the caller decoded it already), then its parts.

    Raises:
        ReceiptInvalid: the statement does not decode (``statement``).
    """
    s = statement if statement is not None else _decode_statement(receipt.statement)
    lines = [
        *_header(s),
        f"statement {_b64(receipt.statement)}",
        f"signature {_b64(receipt.signature)}",
        f"checkpoint {_b64(receipt.checkpoint)}",
        f"entry {_b64(receipt.entry)}",
        *(f"proof {_b64(h)}" for h in receipt.proof),
    ]
    return ("\n".join(lines) + "\n").encode()


def _header(s: Statement) -> list[str]:
    """The receipt's first eight lines, as its statement gives them."""
    return [
        HEADER,
        f"record: {s.permalink}",
        f"run: {s.runDigest}",
        f"accessed: {s.accessed}",
        f"evidence: {s.evidenceLevel}",
        f"log: {s.origin} at tree size {s.treeSize}",
        _VERIFY,
        "",
    ]


def make_receipt(
    key: SigningKey,
    *,
    origin: str,
    permalink: str,
    run_digest: str,
    accessed: str,
    evidence_level: str,
    checkpoint: bytes,
    tree_size: int,
    root: bytes,
    entry_index: int,
    entry: bytes,
    proof: list[bytes],
) -> bytes:
    """A receipt signed by the log's key ``key``.

    Raises:
        ValueError: ``permalink`` is not an http(s) URL of printable ASCII ending in
            ``/runs/<run_digest>``.
    """
    if not _permalink_of(permalink, run_digest):
        raise ValueError(f"not a permalink of {run_digest}: {permalink!r}")
    statement = Statement(
        accessed=accessed,
        entryIndex=entry_index,
        evidenceLevel=evidence_level,
        origin=origin,
        permalink=permalink,
        root=_b64(root),
        runDigest=run_digest,
        treeSize=tree_size,
    )
    body = canonical_bytes(msgspec.to_builtins(statement))
    signature = key.sign(SIGNING_CONTEXT + body)
    return render(Receipt(body, signature, checkpoint, entry, tuple(proof)))


def _permalink_of(permalink: str, run_digest: str) -> bool:
    """Whether ``permalink`` is an http(s) URL of printable ASCII, with a host, no query or
    fragment, ending in ``/runs/<run_digest>``."""
    if not _PERMALINK.match(permalink) or not permalink.endswith(f"/runs/{run_digest}"):
        return False
    try:
        parts = urlsplit(permalink)
        return bool(parts.hostname) and not parts.query and not parts.fragment
    except ValueError:  # a malformed host ("[::1")
        return False


def _decode_statement(body: bytes) -> Statement:
    try:
        statement = _STATEMENT.decode(body)
    except msgspec.DecodeError as exc:
        raise ReceiptInvalid("statement", f"not a citation statement: {exc}") from None
    return statement


def _field(line: str, name: str) -> bytes:
    prefix = name + " "
    if not line.startswith(prefix):
        raise ReceiptInvalid("format", f"expected a {name!r} line, found {line[:40]!r}")
    text = line[len(prefix) :]
    try:
        if not text.isascii():
            raise ValueError("not ASCII")
        data = binascii.a2b_base64(text, strict_mode=True)
    except ValueError:  # binascii.Error is one
        raise ReceiptInvalid("format", f"the {name} is not base64") from None
    if not _canonical(text):
        raise ReceiptInvalid("format", f"the {name}'s base64 is not canonical")
    return data


_ALPHABET = {
    c: i for i, c in enumerate("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/")
}


def _canonical(text: str) -> bool:
    """Whether standard base64 that decoded strictly is the one encoding of its bytes: whole
    quads, and the bits padding leaves unused all zero (what re-encoding would write)."""
    if len(text) % 4:
        return False
    pad = len(text) - len(text.rstrip("="))
    if pad == 0:
        return True
    unused = 0x0F if pad == 2 else 0x03
    return pad <= 2 and not _ALPHABET.get(text[-pad - 1], 0xFF) & unused


def parse(data: bytes) -> tuple[list[str], Receipt]:
    """The header lines and the parts of a receipt file, each part's base64 canonical (their
    other checks are ``verify_receipt``'s).

    Raises:
        ReceiptInvalid: not a receipt of this format (``format``).
    """
    try:
        text = data.decode()
    except UnicodeDecodeError:
        raise ReceiptInvalid("format", "the file is not UTF-8") from None
    lines = text.split("\n")
    if lines[0].rstrip("\r") != HEADER:
        raise ReceiptInvalid("format", f"not a receipt: it must start with {HEADER!r}")
    if "\r" in text:
        raise ReceiptInvalid(
            "format",
            "its lines end in CR LF (an editor or a transfer converted them): a receipt's lines"
            " end in LF alone, as it was issued; convert them back (dos2unix) and check again",
        )
    if lines[-1] != "":
        raise ReceiptInvalid(
            "format", "it does not end in a newline: its last line was cut or changed"
        )
    if len(lines) >= 2 and lines[-2] == "":
        raise ReceiptInvalid(
            "format", "it ends in more than one newline: something was added after its last line"
        )
    if len(lines) < 13:
        raise ReceiptInvalid(
            "format", f"it has {len(lines) - 1} lines, fewer than any receipt: it was cut short"
        )
    parts = lines[8:-1]
    return lines[:8], Receipt(
        statement=_field(parts[0], "statement"),
        signature=_field(parts[1], "signature"),
        checkpoint=_field(parts[2], "checkpoint"),
        entry=_field(parts[3], "entry"),
        proof=tuple(_field(line, "proof") for line in parts[4:]),
    )


class Verified(msgspec.Struct, frozen=True, omit_defaults=True):
    """What a receipt proves."""

    statement: Statement
    recordedAt: str
    witnessed: Witnessed | None = None

    def summary(self) -> str:
        """One paragraph for a person."""
        s = self.statement
        witnesses = "" if self.witnessed is None else " " + self.witnessed.summary()
        return (
            f"The run {s.runDigest} ({s.permalink}) was entry {s.entryIndex} of the log "
            f"{s.origin}, recorded {self.recordedAt}, included in its signed checkpoint of "
            f"{s.treeSize} entries; the log's key certified that on {s.accessed} the record "
            f"was cited at evidence level {s.evidenceLevel}. The run's manifest hashes to the "
            "cited digest. Checked offline, with the log's public key only." + witnesses
        )


class _Wire(msgspec.Struct):
    runDigest: str
    manifests: dict[str, msgspec.Raw]


_RUN_INGESTED = msgspec.json.Decoder(_Wire)
_IDENTITY = ("apiVersion", "kind", "spec")


def verify_receipt(
    data: bytes,
    log_key: NoteVerifier,
    witnesses: Sequence[WitnessVerifier] = (),
    quorum: int | None = None,
) -> Verified:
    """Check a receipt against the log's verifier key, offline; with ``witnesses``, also that at
    least ``quorum`` of them (default: all) cosigned its checkpoint.

    Raises:
        ReceiptInvalid: ``check`` names the first check that failed: format, statement,
            signature, checkpoint, witnesses, origin, inclusion, entry, digest, accessed,
            permalink or bytes (the file is not exactly what its parts render).
    """
    header, receipt = parse(data)
    statement = _decode_statement(receipt.statement)
    try:
        log_key.public.verify(receipt.signature, SIGNING_CONTEXT + receipt.statement)
    except VerificationError:
        raise ReceiptInvalid("signature", "the statement is not signed by this log's key") from None
    try:
        note = open_note(receipt.checkpoint, [log_key])
        checkpoint = parse_checkpoint_body(note.text)
    except (KeyringError, VerificationError, LogError) as exc:
        raise ReceiptInvalid("checkpoint", f"the checkpoint does not verify: {exc}") from None
    # The log's signature line, exactly once, and any witnesses' cosignatures (each line well
    # formed; those of the witnesses given must verify, and count).
    try:
        witnessed = count_witnesses(receipt.checkpoint, log_key, witnesses, quorum)
    except MalformedNote as exc:
        raise ReceiptInvalid("checkpoint", f"the checkpoint's signatures: {exc}") from None
    except QuorumNotMet as exc:
        raise ReceiptInvalid("witnesses", exc.detail) from None
    if (checkpoint.origin, statement.origin) != (log_key.name, log_key.name):
        raise ReceiptInvalid("origin", "the statement, checkpoint and key name other logs")
    if (checkpoint.size, _b64(checkpoint.root)) != (statement.treeSize, statement.root):
        raise ReceiptInvalid("checkpoint", "the statement names another checkpoint")
    try:
        verify_inclusion(
            statement.entryIndex,
            checkpoint.size,
            leaf_hash(receipt.entry),
            receipt.proof,
            checkpoint.root,
        )
    except ProofError as exc:
        raise ReceiptInvalid("inclusion", str(exc)) from None
    entry = _entry(receipt.entry, statement)
    if not statement.permalink.endswith(f"/runs/{statement.runDigest}"):
        raise ReceiptInvalid("permalink", "the permalink is not the run's digest form")
    # Both in the log's one fixed-width shape: as strings, their order is their time order.
    if not (_INSTANT.match(statement.accessed) and _INSTANT.match(entry.recordedAt)) or (
        statement.accessed < entry.recordedAt
    ):
        raise ReceiptInvalid("accessed", "the access instant is before the entry was recorded")
    # The parts were read line by line, each canonical: the file is exactly what they render
    # once its header is the one the statement gives.
    if header != _header(statement):
        raise ReceiptInvalid("bytes", "the header is not the one the signed statement gives")
    # Said only where there is something to say: no witness asked and no cosignature seen
    # leaves the answer as it was before witnesses.
    said = witnessed if (witnesses or witnessed.seen) else None
    return Verified(statement, entry.recordedAt, said)


class _Entry(msgspec.Struct):
    recordedAt: str


class _Payload(msgspec.Struct):
    payload: str


class _Leaf(msgspec.Struct):
    """What the verifier reads of a leaf (``events.entries.Entry``'s members it needs)."""

    seq: int
    recordedAt: str
    type: str
    subject: str
    envelope: _Payload


_LEAF = msgspec.json.Decoder(_Leaf)


def _entry(leaf: bytes, statement: Statement) -> _Entry:
    """The entry's recording time, once it is shown to be the run's ingest with a manifest that
    hashes to the cited digest."""
    try:
        entry = _LEAF.decode(leaf)
    except msgspec.DecodeError as exc:
        raise ReceiptInvalid("entry", f"not an entry's leaf: {exc}") from None
    if entry.seq != statement.entryIndex or entry.type != "run.ingested.v1":
        raise ReceiptInvalid("entry", "the entry is not the run's run.ingested at that index")
    try:
        wire = _RUN_INGESTED.decode(base64.b64decode(entry.envelope.payload))
        # The spec digest (as KernelIndex computes it) straight from the manifest's JSON text:
        # RFC 8785 of its apiVersion, kind and spec.
        computed = sha256_digest(canonical_json(bytes(wire.manifests["run"]), members=_IDENTITY))
    except (msgspec.DecodeError, KeyError, binascii.Error, LogError, EventError) as exc:
        raise ReceiptInvalid("digest", f"the entry holds no run manifest: {exc}") from None
    if not (wire.runDigest == computed == statement.runDigest == entry.subject):
        raise ReceiptInvalid(
            "digest", f"the run's manifest hashes to {computed}, not {statement.runDigest}"
        )
    return _Entry(entry.recordedAt)
