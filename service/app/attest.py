"""Attestations: post an attester's signed in-toto statement about a run, list them, show one
with its exact signed envelope.

A posted attestation is checked whole before it is appended: the envelope (strict, one
signature, ``application/vnd.in-toto+json``), the run ``ref`` names, the key (registered and
valid now, a role that may attest: ``events.authority``, never the index or log key), the
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
from typing import NamedTuple

import msgspec

from events.authority import refusal, writers
from events.entries import INTOTO_PAYLOAD_TYPE, Pending, payload_digest
from events.keyring import KeyView
from events.port import LogReader, Session
from events.stores import open_reader
from events.stores.sqlbase import SqlLog
from keys import VerifyingKey
from projections import queries
from projections.errors import UnknownRun
from service.app.cursors import one_page, position_after
from service.app.keys import Admit, check_signature, read_envelope
from service.app.log import Proof, latest_checkpoint
from service.app.statements import (
    KINDS,
    MAX_NOTE_BYTES,
    MAX_STATEMENT_BYTES,
    PREDICATE_SCHEMA,
    InvalidStatement,
    Kind,
    Predicate,
    UnsupportedPredicate,
    predicate_schema,
    read_statement,
    statement_of,
)
from service.core.logs import OpenedLog
from service.core.statechecks import StateCheck, check_of, state_check
from service.errors import NotFound, ServiceError

__all__ = [
    "ATTESTING_ROLES",
    "KINDS",
    "MAX_NOTE_BYTES",
    "MAX_STATEMENT_BYTES",
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

ATTESTING_ROLES = writers("attestation.posted.v1")  # events.authority


class UnknownAttester(ServiceError):
    """The signing key is not registered, or not valid now."""


class RoleMayNotAttest(ServiceError):
    """The signing key's role may not post attestations (the index and log keys)."""


class UnknownSubject(ServiceError):
    """The statement's subject digest names no run the log holds."""


class SubjectMismatch(ServiceError):
    """The statement is about another run than the one the URL names."""


class UnknownAttestation(NotFound):
    """No attestation (shown at that size) has this id."""


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


def _attester(keys: Mapping[str, KeyView], keyid: str, size: int) -> VerifyingKey:
    """The attester's key, if the authority lets it post the entry at ``size`` (the next)."""
    refused = refusal("attestation.posted.v1", keyid, keys, size)
    if refused is not None and refused.rule == "role":
        raise RoleMayNotAttest(f"a {refused.role} key may not post attestations", keyId=keyid)
    if refused is not None:
        raise UnknownAttester(
            "the signing key is not registered, or no longer valid: register it first",
            keyId=keyid,
        )
    return VerifyingKey.from_raw(base64.b64decode(keys[keyid].publicKey))


class _Checked(NamedTuple):
    """An attestation that passed every check made before the append: the entry to append
    (with the check to run again inside the append's transaction), or where the log holds it."""

    pending: Pending
    attester: str
    still_valid: StateCheck
    known: tuple[str, int] | None  # (entry id, position) when the log holds it already


def _check(ledger: OpenedLog, ref: str, body: bytes, reads: SqlLog) -> _Checked:
    signed = read_envelope(body, INTOTO_PAYLOAD_TYPE)
    if len(signed.payload) > MAX_STATEMENT_BYTES:
        raise InvalidStatement(f"the statement is over {MAX_STATEMENT_BYTES} bytes")
    conn = reads.session
    digest = queries.resolve_run(conn, ref)
    size = queries.current_size(conn)
    check_signature(signed, _attester(ledger.keyring(conn), signed.signature.keyid, size))
    subject, _ = read_statement(signed.payload)
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
    still_valid = check_of(attester_still_valid, keyid)
    return _Checked(pending, keyid, still_valid, next(iter(known.items())) if known else None)


@state_check
def attester_still_valid(ledger: OpenedLog, _session: Session, keyid: str) -> None:
    """Checked again in the append's transaction, at the entry's own position: the key may have
    been revoked since."""
    _attester(ledger.projections.keyring(), keyid, ledger.store.refresh())


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
