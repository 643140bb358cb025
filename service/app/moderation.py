"""Taking back and moderating what others said, without deleting anything: an attester
withdraws its own attestation (its DSSE envelope over the encoded ``attestation.withdrawn.v1``
event, signed by the key that posted it), an operator hides one (``attestation.hidden.v1``) or
resolves or dismisses a report (``report.resolved.v1``), both signed by the index.

The log keeps every attestation and report; the dossier marks withdrawn attestations, counts
hidden ones and is no longer under review once every report is resolved. Each write is checked
before the append and again inside the append's transaction (two requests may race); a refusal
appends nothing.
"""

from __future__ import annotations

import base64
from collections.abc import Mapping
from typing import Literal

import msgspec

from events.authority import attester_refusal, refusal
from events.entries import EVENT_PAYLOAD_TYPE, Pending
from events.keyring import KeyView
from events.port import Session
from events.strictjson import check_strict_json
from events.types import EVENT_DECODER, AttestationHidden, AttestationWithdrawn, ReportResolved
from keys import VerifyingKey
from projections import queries
from service.app.attest import RoleMayNotAttest, UnknownAttestation
from service.app.keyadmin import (
    MAX_REASON_BYTES,
    InvalidEvent,
    Recorded,
    UnknownSigner,
    bounded_text,
    reason_of,
    signed_event,
)
from service.app.keys import Admit, check_signature, read_envelope
from service.core.ledger import pending_of
from service.core.logs import OpenedLog
from service.core.statechecks import check_of, state_check
from service.errors import NotFound, ServiceError, UsageError

__all__ = [
    "AlreadyHidden",
    "AlreadyResolved",
    "AlreadyWithdrawn",
    "NotTheAttester",
    "UnknownReport",
    "hide_attestation",
    "resolve_report",
    "withdraw_attestation",
]


class NotTheAttester(ServiceError):
    """Only the key that posted an attestation withdraws it."""


class AlreadyWithdrawn(ServiceError):
    """The attestation was withdrawn already."""


class AlreadyHidden(ServiceError):
    """The attestation was hidden already."""


class UnknownReport(NotFound):
    """No report has this id."""


class AlreadyResolved(ServiceError):
    """The report was resolved or dismissed already."""


def _state(conn: Session, attestation_id: str) -> queries.AttestationState:
    state = queries.attestation_state(conn, attestation_id)
    if state is None:
        raise UnknownAttestation(f"no attestation {attestation_id}", id=attestation_id)
    return state


def _not_withdrawn(conn: Session, attestation_id: str) -> None:
    if _state(conn, attestation_id).withdrawn:
        raise AlreadyWithdrawn("the attestation was withdrawn already", id=attestation_id)


def withdraw_attestation(
    ledger: OpenedLog, attestation_id: str, body: bytes, *, admit: Admit
) -> Recorded:
    """Append the attester's withdrawal of ``attestation_id``: ``body`` is its DSSE envelope
    over the encoded ``attestation.withdrawn.v1`` event naming that attestation.

    Raises:
        BadEnvelope, UnsupportedPayloadType, InvalidEvent: malformed, or another attestation.
        UnknownAttestation: the log holds no such attestation.
        NotTheAttester, UnknownSigner, BadSignature: the signer.
        AlreadyWithdrawn: withdrawn already.
    """
    signed = read_envelope(body, EVENT_PAYLOAD_TYPE)
    event = signed_event(signed, AttestationWithdrawn)
    if event.attestationId != attestation_id:
        raise InvalidEvent("the event names another attestation than the URL")
    if len(event.reason.encode()) > MAX_REASON_BYTES:
        raise InvalidEvent(f"the reason is over {MAX_REASON_BYTES} bytes of UTF-8")
    keyid = signed.signature.keyid
    store = ledger.store
    with store.snapshot() as conn:
        state = _state(conn, attestation_id)
        if attester_refusal(keyid, state.attester) is not None:  # before the key's own checks
            raise _not_the_attester(state.attester)
        withdrawer = _withdrawer(
            queries.keyring(conn), event, keyid, state.attester, store.refresh()
        )
        check_signature(signed, withdrawer)
        _not_withdrawn(conn, attestation_id)
    admit(keyid)
    pending = Pending(
        type="attestation.withdrawn.v1",
        subject=attestation_id,
        payload=signed.payload,
        envelope=signed.raw,
    )
    check = check_of(still_withdrawable, signed.payload, keyid, state.attester)
    appended = ledger.writer().append_pending([pending], check=check)[0]
    return Recorded(appended.payloadDigest, appended.seq)


@state_check
def still_withdrawable(
    ledger: OpenedLog, session: Session, payload: bytes, keyid: str, attester: str
) -> None:
    """Again in the append's transaction: the attester's key may sign the withdrawal (``payload``:
    the event, checked to be exactly its encoding before), and it is not withdrawn yet."""
    event = EVENT_DECODER.decode(payload)
    assert isinstance(event, AttestationWithdrawn)  # noqa: S101 - checked before it was sent
    _withdrawer(ledger.projections.keyring(), event, keyid, attester, ledger.store.refresh())
    _not_withdrawn(session, event.attestationId)


def _withdrawer(
    keys: Mapping[str, KeyView],
    event: AttestationWithdrawn,
    keyid: str,
    attester: str,
    size: int,
) -> VerifyingKey:
    """The attester's key, if the authority lets it sign the withdrawal at ``size`` (the next
    entry): valid there, of a role that attests."""
    refused = refusal("attestation.withdrawn.v1", keyid, keys, size, event, attester=attester)
    if refused is not None and refused.rule == "attester":
        raise _not_the_attester(attester)
    if refused is not None and refused.rule == "role":
        raise RoleMayNotAttest(f"a {refused.role} key may not withdraw attestations", keyId=keyid)
    if refused is not None:
        raise UnknownSigner("the signing key is not registered, or no longer valid", keyId=keyid)
    return VerifyingKey.from_raw(base64.b64decode(keys[keyid].publicKey))


def _not_the_attester(attester: str) -> NotTheAttester:
    return NotTheAttester(
        "only the key that posted the attestation withdraws it", attester=attester
    )


@state_check
def still_not_hidden(_ledger: OpenedLog, session: Session, attestation_id: str) -> None:
    """Again in the append's transaction: nobody hid the attestation meanwhile."""
    _not_hidden(session, attestation_id)


def _not_hidden(conn: Session, attestation_id: str) -> None:
    if _state(conn, attestation_id).hidden:
        raise AlreadyHidden("the attestation was hidden already", id=attestation_id)


def hide_attestation(ledger: OpenedLog, attestation_id: str, body: bytes) -> Recorded:
    """Append the index's hiding of ``attestation_id`` (``body``: ``{"reason"}``): the log keeps
    it, lists leave it out, the dossier counts it.

    Raises:
        UsageError: malformed body.
        UnknownAttestation, AlreadyHidden: the attestation.
    """
    reason = reason_of(body)
    with ledger.store.snapshot() as conn:
        _not_hidden(conn, attestation_id)
    event = AttestationHidden(attestationId=attestation_id, reason=reason)
    appended = ledger.writer().append_pending(
        [pending_of(event, attestation_id)], check=check_of(still_not_hidden, attestation_id)
    )[0]
    return Recorded(appended.payloadDigest, appended.seq)


class _Resolve(msgspec.Struct, frozen=True, forbid_unknown_fields=True):
    resolution: Literal["resolved", "dismissed"]
    note: str


_RESOLVE = msgspec.json.Decoder(_Resolve)


@state_check
def still_open(_ledger: OpenedLog, session: Session, report_id: str) -> None:
    """Again in the append's transaction: nobody resolved the report meanwhile."""
    _open(session, report_id)


def _open(conn: Session, report_id: str) -> None:
    report = queries.find_report(conn, report_id)
    if report is None:
        raise UnknownReport(f"no report {report_id}", id=report_id)
    if report.resolution is not None:
        raise AlreadyResolved(
            f"the report was {report.resolution} already",
            id=report_id,
            resolution=report.resolution,
        )


def resolve_report(ledger: OpenedLog, report_id: str, body: bytes) -> Recorded:
    """Append the index's resolution of ``report_id`` (``body``: ``{"resolution": "resolved" |
    "dismissed", "note"}``); a run none of whose reports is open is no longer under review.

    Raises:
        UsageError: malformed body.
        UnknownReport, AlreadyResolved: the report.
    """
    try:
        check_strict_json(body)
        wanted = _RESOLVE.decode(body)
    except (ValueError, msgspec.DecodeError) as exc:
        shape = '{"resolution": "resolved" | "dismissed", "note": "..."}'
        raise UsageError(f"the body must be {shape}: {exc}") from None
    event = ReportResolved(
        reportId=report_id, resolution=wanted.resolution, note=bounded_text(wanted.note, "note")
    )
    with ledger.store.snapshot() as conn:
        _open(conn, report_id)
    appended = ledger.writer().append_pending(
        [pending_of(event, report_id)], check=check_of(still_open, report_id)
    )[0]
    return Recorded(appended.payloadDigest, appended.seq)
