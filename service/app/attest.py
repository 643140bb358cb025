"""Attestations: post an attester's signed in-toto statement about a run, list them, show one
with its exact signed envelope.

A posted attestation is checked whole before it is appended: the envelope (strict, one
signature, ``application/vnd.in-toto+json``), the run ``ref`` names, the key (registered and
valid now, a role that may attest: community or rerunner, never the index or log key), the
signature over the PAE with that key, the statement (in-toto Statement v1, one subject: the
run's permalink and digest; the predicate type picks the entry type, and only
``ATTESTATION_PREDICATE`` is taken) and its predicate (``PREDICATE_SCHEMA``, served at
``GET /schemas/attestation/v1``); the key is checked again inside the append's transaction. The
log stores the envelope as posted, so anyone can check it with the attester's public key alone.
The same statement by the same key again is the entry the log already holds (nothing is
appended).
"""

from __future__ import annotations

import base64
import contextlib
from collections.abc import Awaitable, Callable, Mapping
from importlib import resources
from typing import Annotated, Any, Literal, NamedTuple, get_args
from urllib.parse import urlsplit

import msgspec
from msgspec import UNSET, Meta, UnsetType

from events.decoding import STATEMENT_TYPE
from events.entries import INTOTO_PAYLOAD_TYPE, Pending, payload_digest
from events.keyring import KeyView
from events.port import LogReader, Session
from events.stores import open_reader
from events.stores.sqlbase import SqlLog
from events.types.attestations import ATTESTATION_PREDICATE
from keys import VerifyingKey
from projections import queries
from projections.errors import UnknownRun
from service.app.cursors import one_page, position_after
from service.app.keys import Admit, SignedBody, check_signature, read_envelope, unique_members
from service.app.log import Proof, latest_checkpoint
from service.core.logs import OpenedLog
from service.errors import NotFound, ServiceError, UsageError

__all__ = [
    "ATTESTING_ROLES",
    "KINDS",
    "MAX_NOTE_BYTES",
    "PREDICATE_SCHEMA",
    "AttestationPage",
    "AttestationRecord",
    "InvalidStatement",
    "Kind",
    "Posted",
    "Posting",
    "Predicate",
    "RoleMayNotAttest",
    "SubjectMismatch",
    "UnknownAttestation",
    "UnknownAttester",
    "UnknownSubject",
    "UnsupportedPredicate",
    "attestation_page",
    "post_attestation",
    "post_attestation_async",
    "predicate_schema",
    "receipt",
    "show_attestation",
    "statement_of",
]

Kind = Literal["reproduced", "could-not-reproduce", "environment-note", "regression-observed"]
KINDS: tuple[str, ...] = get_args(Kind)
ATTESTING_ROLES = frozenset({"community", "rerunner"})
MAX_NOTE_BYTES = 4096
PREDICATE_SCHEMA = "attestation-v1.schema.json"


class UnknownAttester(ServiceError):
    """The signing key is not registered, or not valid now."""


class RoleMayNotAttest(ServiceError):
    """The signing key's role may not post attestations (the index and log keys)."""


class InvalidStatement(UsageError):
    """The payload is not an in-toto Statement v1 whose predicate matches the schema."""


class UnsupportedPredicate(UsageError):
    """The statement's predicate type is not one an attestation entry takes."""


class UnknownSubject(ServiceError):
    """The statement's subject digest names no run the log holds."""


class SubjectMismatch(ServiceError):
    """The statement is about another run than the one the URL names."""


class UnknownAttestation(NotFound):
    """No attestation (shown at that size) has this id."""


_Short = Annotated[str, Meta(min_length=1, max_length=64)]
_Url = Annotated[str, Meta(max_length=2048)]


class Predicate(msgspec.Struct, frozen=True, forbid_unknown_fields=True, omit_defaults=True):
    """The attestation predicate (``PREDICATE_SCHEMA``); ``value`` without ``statistic`` means
    the run's primary statistic."""

    kind: Kind
    value: float | UnsetType = UNSET
    unit: _Short | UnsetType = UNSET
    statistic: _Short | UnsetType = UNSET
    environment: dict[str, Any] | UnsetType = UNSET
    evidenceUrls: Annotated[list[_Url], Meta(max_length=16)] | UnsetType = UNSET
    note: str | UnsetType = UNSET


class _Digest(msgspec.Struct, frozen=True, forbid_unknown_fields=True):
    sha256: Annotated[str, Meta(pattern=r"^[0-9a-f]{64}\Z")]


class _Subject(msgspec.Struct, frozen=True, forbid_unknown_fields=True):
    name: str
    digest: _Digest


class _Statement(
    msgspec.Struct, frozen=True, forbid_unknown_fields=True, rename={"type_": "_type"}
):
    type_: str
    subject: list[_Subject]
    predicateType: str
    predicate: msgspec.Raw


_STATEMENT = msgspec.json.Decoder(_Statement)
_PREDICATE = msgspec.json.Decoder(Predicate)


class Posted(msgspec.Struct, frozen=True):
    """Where an attestation landed, with a signed checkpoint and the inclusion proof of its leaf
    (``leafHash``, base64) in that checkpoint's tree; ``id`` is its payload digest."""

    index: int
    leafHash: str
    checkpoint: str
    inclusionProof: Proof
    id: str


class Posting(NamedTuple):
    """The answer to a post, and whether this post appended it (False: the log held it)."""

    posted: Posted
    new: bool


MAX_STATEMENT_BYTES = 47 * 1024
"""The largest statement an attestation may sign (its note is bounded apart, at 4 KiB): in
base64 in its envelope, it still fits a log entry (65,535 bytes, ``events.tiles.MAX_LEAF``)."""


def statement_of(run_digest: str, predicate: dict[str, Any]) -> dict[str, Any]:
    """The in-toto Statement v1 of an attestation about the run ``run_digest``
    (``sha256:<hex>``), whose one subject is the run by its digest, named by its permalink."""
    return {
        "_type": STATEMENT_TYPE,
        "subject": [{"name": f"/runs/{run_digest}", "digest": {"sha256": run_digest[7:]}}],
        "predicateType": ATTESTATION_PREDICATE,
        "predicate": predicate,
    }


def predicate_schema() -> bytes:
    """The JSON Schema of the attestation predicate, as served."""
    return resources.files("service.app").joinpath("schemas", PREDICATE_SCHEMA).read_bytes()


def _statement(payload: bytes) -> tuple[str, Predicate]:
    """The subject digest (``sha256:<hex>``) and the predicate of an attestation statement."""
    try:
        unique_members(payload)
        statement = _STATEMENT.decode(payload)
    except (ValueError, msgspec.DecodeError) as exc:
        raise InvalidStatement(f"not an in-toto Statement v1: {exc}") from None
    if statement.type_ != STATEMENT_TYPE:
        raise InvalidStatement(f"_type must be {STATEMENT_TYPE}")
    if statement.predicateType != ATTESTATION_PREDICATE:
        raise UnsupportedPredicate(
            f"predicateType must be {ATTESTATION_PREDICATE}",
            predicateType=statement.predicateType,
        )
    if len(statement.subject) != 1:
        raise InvalidStatement("the statement must have exactly one subject: the run")
    subject = statement.subject[0]
    digest = "sha256:" + subject.digest.sha256
    if subject.name != f"/runs/{digest}":
        raise InvalidStatement(f"the subject's name must be the run's permalink /runs/{digest}")
    try:
        predicate = _PREDICATE.decode(statement.predicate)
    except msgspec.DecodeError as exc:
        raise InvalidStatement(f"predicate: {exc}") from None
    if isinstance(predicate.note, str) and len(predicate.note.encode()) > MAX_NOTE_BYTES:
        raise InvalidStatement(f"predicate: `note` is over {MAX_NOTE_BYTES} bytes of UTF-8")
    for url in predicate.evidenceUrls or []:
        parts = urlsplit(url)
        if parts.scheme != "https" or not parts.hostname:
            raise InvalidStatement(f"predicate: evidence URL {url!r} is not an https URL")
    return digest, predicate


def _attester(keys: Mapping[str, KeyView], signed: SignedBody, size: int) -> VerifyingKey:
    keyid = signed.signature.keyid
    key = keys.get(keyid)
    if key is None or not key.valid_at(size):
        raise UnknownAttester(
            "the signing key is not registered, or no longer valid: register it first",
            keyId=keyid,
        )
    if key.role not in ATTESTING_ROLES:
        raise RoleMayNotAttest(f"a {key.role} key may not post attestations", keyId=keyid)
    return VerifyingKey.from_raw(base64.b64decode(key.publicKey))


class _Checked(NamedTuple):
    """An attestation that passed every check made before the append: the entry to append
    (with the check to run again inside the append's transaction), or where the log holds it."""

    pending: Pending
    attester: str
    still_valid: Callable[[Session], None]
    known: tuple[str, int] | None  # (entry id, position) when the log holds it already


def _check(ledger: OpenedLog, ref: str, body: bytes, reads: SqlLog) -> _Checked:
    signed = read_envelope(body, INTOTO_PAYLOAD_TYPE)
    if len(signed.payload) > MAX_STATEMENT_BYTES:
        raise InvalidStatement(f"the statement is over {MAX_STATEMENT_BYTES} bytes")
    conn, store = reads.session, ledger.store
    digest = queries.resolve_run(conn, ref)
    size = queries.current_size(conn)
    check_signature(signed, _attester(ledger.keyring(conn), signed, size))
    subject, _ = _statement(signed.payload)
    if subject != digest:
        try:
            queries.resolve_run(conn, subject)
        except UnknownRun:
            raise UnknownSubject(f"the log holds no run {subject}", subject=subject) from None
        raise SubjectMismatch(
            f"the statement is about {subject}, not {digest}", subject=subject, run=digest
        )
    keyid = signed.signature.keyid
    # The same statement again answers its entry, and counts against nobody's quota (anyone
    # may replay a public envelope).
    known = reads.find([payload_digest(signed.payload, INTOTO_PAYLOAD_TYPE, keyid)])
    pending = Pending(
        type="attestation.posted.v1",
        subject=digest,
        payload=signed.payload,
        payload_type=INTOTO_PAYLOAD_TYPE,
        envelope=signed.raw,
    )

    def still_valid(_session: Session) -> None:
        """Checked again in the append's transaction, at the entry's own position: the key may
        have been revoked since."""
        _attester(ledger.projections.keyring(), signed, store.refresh())

    return _Checked(pending, keyid, still_valid, next(iter(known.items())) if known else None)


def receipt(ledger: OpenedLog, reads: SqlLog, entry_id: str, seq: int, new: bool) -> Posting:
    """Where the entry landed, with a checkpoint that covers it and its inclusion proof."""
    # The commit wrote a checkpoint covering the entry; a later one covers it too.
    checkpoint = reads.latest_checkpoint()
    if checkpoint is None or checkpoint.size <= seq:
        checkpoint = latest_checkpoint(ledger)
    hashes = reads.inclusion_proof(seq, checkpoint.size)
    posted = Posted(
        index=seq,
        leafHash=base64.b64encode(reads.read_node(0, seq)).decode(),
        checkpoint=checkpoint.note.decode(),
        inclusionProof=Proof(seq, checkpoint.size, [base64.b64encode(h).decode() for h in hashes]),
        id=entry_id,
    )
    return Posting(posted, new)


def post_attestation(
    ledger: OpenedLog, ref: str, body: bytes, *, admit: Admit, reads: SqlLog | None = None
) -> Posting:
    """Append the attestation ``body`` (a DSSE envelope) on the run ``ref`` names, or find the
    entry that holds it already; ``admit`` hears of the attester once its signature verified.
    The checks read through ``reads``, a read-only handle on the log (the HTTP layer passes its
    own; by default one is opened for the call), outside the writer's lock, so that concurrent
    posts are checked while the writer commits others; the key is checked again inside the
    append's transaction (the group commit's ``check``).

    Raises:
        BadEnvelope, UnsupportedPayloadType, InvalidStatement, UnsupportedPredicate: malformed.
        UnknownRun, AmbiguousRun: ``ref``.
        UnknownAttester, RoleMayNotAttest, BadSignature: the signer.
        UnknownSubject, SubjectMismatch: the statement is about no run, or another one.
    """
    if reads is None:
        with contextlib.closing(open_reader(ledger.data.store)) as opened:
            return post_attestation(ledger, ref, body, admit=admit, reads=opened)
    checked = _check(ledger, ref, body, reads)
    if checked.known is not None:
        return receipt(ledger, reads, *checked.known, new=False)
    admit(checked.attester)
    appended = ledger.writer().append_pending([checked.pending], check=checked.still_valid)[0]
    return receipt(ledger, reads, appended.payloadDigest, appended.seq, appended.new)


async def post_attestation_async(
    ledger: OpenedLog,
    ref: str,
    body: bytes,
    *,
    admit: Callable[[str], Awaitable[None]],
    reads: SqlLog,
) -> Posting:
    """``post_attestation`` for an event loop: the checks and the receipt run on the loop's
    thread, and the loop serves other requests while the writer commits (the ledger's
    ``append_pending_async``)."""
    checked = _check(ledger, ref, body, reads)
    if checked.known is not None:
        return receipt(ledger, reads, *checked.known, new=False)
    await admit(checked.attester)
    appended = (
        await ledger.writer().append_pending_async([checked.pending], check=checked.still_valid)
    )[0]
    return receipt(ledger, reads, appended.payloadDigest, appended.seq, appended.new)


class AttestationPage(msgspec.Struct, frozen=True):
    """A page of attestations by position; ``next`` is the cursor for ``after``, if any."""

    items: list[queries.Attestation]
    asOf: int
    next: str | None = None


def attestation_page(
    conn: Session,
    as_of: int | None,
    *,
    size: int,
    subject: str | None = None,
    kind: str | None = None,
    attester: str | None = None,
    after: str | None = None,
    limit: int = 100,
) -> AttestationPage:
    """At most ``limit`` attestations (on run ``subject``, of ``kind``, by key ``attester``)
    after the cursor ``after`` (the last position seen), oldest first.

    Raises:
        UsageError: ``after`` is not a position.
    """
    found = queries.find_attestations(
        conn,
        as_of,
        subject=subject,
        kind=kind,
        attester=attester,
        after=position_after(after),
        limit=limit + 1,
    )
    items, after_last = one_page(found, limit, lambda a: str(a.position))
    return AttestationPage(items, size if as_of is None else as_of, after_last)


class AttestationRecord(msgspec.Struct, frozen=True):
    """An attestation and the attester's DSSE envelope exactly as the log stores it."""

    attestation: queries.Attestation
    envelope: msgspec.Raw


class _LeafEnvelope(msgspec.Struct, frozen=True):
    envelope: msgspec.Raw


_LEAF = msgspec.json.Decoder(_LeafEnvelope)


def show_attestation(
    conn: Session, log: LogReader, attestation_id: str, as_of: int | None
) -> AttestationRecord:
    """The attestation ``attestation_id`` (its payload digest) with its signed envelope.

    Raises:
        UnknownAttestation: none has that id at ``as_of`` (or it is hidden).
    """
    found = queries.find_attestations(conn, as_of, attestation_id=attestation_id, limit=1)
    leaf = log.leaf(found[0].position) if found else None
    if leaf is None:
        raise UnknownAttestation(f"no attestation {attestation_id}", id=attestation_id)
    return AttestationRecord(found[0], _LEAF.decode(leaf).envelope)
