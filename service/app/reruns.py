"""Index-controlled reruns (docs/evidence.md): an operator requests one, a rerunner's worker claims it
for a lease, runs the harness, and posts the measurement; the index judges it.

- ``request_rerun``: the index records ``rerun.requested.v1`` on the run.
- ``rerun_list``: the requests and their state now (pending, claimed while a lease runs,
  completed), each with the environment its run needs (``needs``).
- ``request_bundle``: the manifests the request's run was ingested with (the harness's input).
- ``claim_rerun``: the worker's own ``rerun.claimed.v2`` envelope; only a rerunner key, for an
  open request no other lease holds, from a worker whose declared environment is the run's.
- ``complete_rerun``: the worker's DSSE in-toto statement (predicate
  ``https://benchproof.dev/rerun/v2``: samples, correctness, environment, harness; no verdict).
  Only the key that claimed the request answers it, once, with at least the samples the
  tolerance policy asks for, measured in the run's environment.

Every check is made before anything is appended, and again inside the append's transaction.
"""

from __future__ import annotations

import base64
from collections.abc import Mapping
from datetime import timedelta

import msgspec

from events.authority import refusal, worker_refusal
from events.decoding import InvalidStatement as BadStatement
from events.decoding import statement_event
from events.entries import (
    EVENT_PAYLOAD_TYPE,
    INTOTO_PAYLOAD_TYPE,
    Pending,
    format_instant,
    payload_digest,
)
from events.keyring import KeyView
from events.port import Session
from events.stores.sqlbase import SqlLog
from events.strictjson import check_strict_json
from events.types import RERUN_PREDICATE_V2, RerunClaimedV2, RerunCompletedV2, RerunRequested
from keys import VerifyingKey
from projections import queries
from projections.tolerance import to_ns
from projections.views import RerunRequest, RunView, instant_of
from service.app.attest import Posting, receipt
from service.app.keyadmin import InvalidEvent, Recorded, UnknownSigner, bounded_text, signed_event
from service.app.keys import KeyMismatch, SignedBody, check_signature, read_envelope
from service.app.rerunlist import (
    RerunItem,
    RerunPage,
    UnknownRequest,
    found_request,
    needs,
    request_bundle,
    rerun_list,
)
from service.core.ledger import pending_of
from service.core.logs import OpenedLog
from service.core.statechecks import check_of, state_check
from service.errors import ServiceError, UsageError
from service.harness.environment import matches

__all__ = [
    "MAX_LEASE",
    "EnvironmentMismatch",
    "InvalidResult",
    "NotRerunnable",
    "NotRerunner",
    "NotTheClaimer",
    "RequestClosed",
    "RequestLeased",
    "RerunItem",
    "RerunPage",
    "UnknownRequest",
    "claim_rerun",
    "complete_rerun",
    "needs",
    "request_bundle",
    "request_rerun",
    "rerun_list",
]

MAX_LEASE = timedelta(hours=1)
"""The longest lease a claim may ask for."""

_CLAIM, _RESULT = "rerun.claimed.v2", "rerun.completed.v2"


class NotRerunner(ServiceError):
    """The signing key does not hold the rerunner role."""


class RequestClosed(ServiceError):
    """The request was answered already."""


class RequestLeased(ServiceError):
    """Another worker's lease holds the request."""


class NotTheClaimer(ServiceError):
    """A result from a key whose claim does not hold the request (never claimed, or by
    another worker)."""


class EnvironmentMismatch(ServiceError):
    """The environment a worker declares or measured on is not the one the run needs."""


class NotRerunnable(ServiceError):
    """The run cannot be rerun: it names no hardware to rerun on, or its reported primary value
    is not a time the tolerance policy can hold a measurement against."""


class InvalidResult(UsageError):
    """Not a rerun result statement the v2 predicate allows (a verdict of its own included)."""


class _Reason(msgspec.Struct, frozen=True, forbid_unknown_fields=True):
    reason: str


def request_rerun(ledger: OpenedLog, ref: str, body: bytes) -> tuple[Recorded, bool]:
    """Record the index's request to rerun the run ``ref`` names (``body``: ``{"reason"}``);
    return it and whether this call appended it (the same request in the same millisecond is
    the entry already held).

    Raises:
        UsageError: malformed body.
        UnknownRun, AmbiguousRun: ``ref``.
    """
    try:
        check_strict_json(body)
        reason = bounded_text(msgspec.json.decode(body, type=_Reason).reason, "reason")
    except (ValueError, msgspec.DecodeError) as exc:
        raise UsageError(f'the body must be {{"reason": "…"}}: {exc}') from None
    with ledger.store.snapshot() as conn:
        digest = queries.resolve_run(conn, ref)
        view = queries.run_view(conn, digest)
    if view is None or needs(view) is None:
        raise NotRerunnable("the run names no hardware a rerun could run on", run=digest)
    if to_ns(view.primaryValue, view.primaryUnit) is None:
        raise NotRerunnable(
            "the run's reported primary value is not a time a rerun can be held against",
            run=digest,
            unit=view.primaryUnit,
        )
    event = RerunRequested(
        runDigest=digest, reason=reason, requestedAt=format_instant(ledger.clock())
    )
    appended = ledger.writer().append_pending([pending_of(event, digest)])[0]
    return Recorded(appended.payloadDigest, appended.seq), appended.new


def _rerunner(keys: Mapping[str, KeyView], entry_type: str, key_id: str, size: int) -> VerifyingKey:
    """The worker's key, if the authority lets it sign the ``entry_type`` entry at ``size``
    (the next)."""
    refused = refusal(entry_type, key_id, keys, size)
    if refused is not None and refused.rule == "role":
        raise NotRerunner(f"a {refused.role} key may not run reruns", keyId=key_id)
    if refused is not None:
        raise UnknownSigner("the signing key is not registered, or no longer valid", keyId=key_id)
    return VerifyingKey.from_raw(base64.b64decode(keys[key_id].publicKey))


def _instant(ledger: OpenedLog) -> str:
    return format_instant(ledger.clock())


def claim_rerun(
    ledger: OpenedLog, request_id: str, body: bytes, reads: SqlLog
) -> tuple[Recorded, bool]:
    """Append the worker's claim (``body``: its DSSE envelope over ``rerun.claimed.v2``); return
    it and whether this call appended it (the same claim again is the entry already held).

    Raises:
        BadEnvelope, UnsupportedPayloadType, InvalidEvent: malformed, or another request.
        UnknownSigner, NotRerunner, KeyMismatch, BadSignature: the signer.
        UnknownRequest, RequestClosed, RequestLeased: the request.
        EnvironmentMismatch: the worker's environment is not the run's.
    """
    signed = read_envelope(body, EVENT_PAYLOAD_TYPE)
    event = signed_event(signed, RerunClaimedV2)
    keyid = signed.signature.keyid
    if event.requestId != request_id:
        raise InvalidEvent("the claim names another request than the URL")
    if worker_refusal(event, keyid) is not None:
        raise KeyMismatch("a worker claims for itself: worker and envelope keyid must agree")
    conn = reads.session
    keys = ledger.keyring(conn)
    check_signature(signed, _rerunner(keys, _CLAIM, keyid, queries.current_size(conn)))
    view, request = found_request(conn, request_id)
    if event.runDigest != view.runDigest:
        raise InvalidEvent("the claim names another run than the request's")
    _claimable(request, keyid, _instant(ledger))
    now = ledger.clock()
    until = instant_of(event.leaseUntil)
    if until is None or not now < until <= now + MAX_LEASE:
        raise InvalidEvent(
            f"leaseUntil must be an RFC 3339 instant after now and at most {MAX_LEASE} away"
        )
    _same_environment(view, event.environment)
    pending = Pending(
        type=_CLAIM, subject=view.runDigest, payload=signed.payload, envelope=signed.raw
    )
    check = check_of(still_claimable, keyid, request_id)
    appended = ledger.writer().append_pending([pending], check=check)[0]
    return Recorded(appended.payloadDigest, appended.seq), appended.new


@state_check
def still_claimable(ledger: OpenedLog, session: Session, keyid: str, request_id: str) -> None:
    """Again in the append's transaction: the key, and that the request is open and unleased."""
    _rerunner(ledger.projections.keyring(), _CLAIM, keyid, ledger.store.refresh())
    _claimable(found_request(session, request_id)[1], keyid, _instant(ledger))


def _claimable(request: RerunRequest, keyid: str, now: str) -> None:
    if request.completedSeq is not None:
        raise RequestClosed("the request was answered already", id=request.requestId)
    if request.claimer not in (None, keyid) and request.leased_at(now):
        raise RequestLeased(
            "another worker's lease holds the request",
            id=request.requestId,
            leaseUntil=request.leaseUntil,
        )


def _same_environment(view: RunView, environment: Mapping[str, object]) -> None:
    needed = needs(view)
    if needed is None or not matches(needed, environment):
        raise EnvironmentMismatch(
            "the environment is not the one the run needs", needs=needed, offered=environment
        )


def _result(signed: SignedBody) -> RerunCompletedV2:
    """The v2 result a statement states.

    Raises:
        InvalidResult: not an in-toto Statement v1 with the rerun v2 predicate, exactly.
    """
    try:
        check_strict_json(signed.payload)
        predicate_type = msgspec.json.decode(signed.payload).get("predicateType")
        if predicate_type != RERUN_PREDICATE_V2:
            raise InvalidResult(f"predicateType must be {RERUN_PREDICATE_V2}")
        event = statement_event(_RESULT, signed.payload, signed.signature.keyid)
    except (BadStatement, ValueError, msgspec.DecodeError, AttributeError) as exc:
        raise InvalidResult(f"not a rerun result statement: {exc}") from None
    assert isinstance(event, RerunCompletedV2)  # noqa: S101 - the v2 entry type decodes to it
    return event


def complete_rerun(ledger: OpenedLog, request_id: str, body: bytes, reads: SqlLog) -> Posting:
    """Append the worker's result (``body``: its DSSE envelope over the in-toto statement) and
    answer where it landed, with a checkpoint and the inclusion proof.

    Raises:
        BadEnvelope, UnsupportedPayloadType, InvalidResult: malformed (a verdict included).
        UnknownSigner, NotRerunner, BadSignature: the signer.
        UnknownRequest, RequestClosed, NotTheClaimer: the request.
        EnvironmentMismatch: the result was measured elsewhere than the run's environment.
        InvalidResult: also about another run, or fewer samples than the policy asks for.
    """
    signed = read_envelope(body, INTOTO_PAYLOAD_TYPE)
    event = _result(signed)
    keyid = signed.signature.keyid
    known = reads.find([payload_digest(signed.payload, INTOTO_PAYLOAD_TYPE, keyid)])
    if known:  # the same result again: its entry
        (entry_id, seq) = next(iter(known.items()))
        return receipt(ledger, reads, entry_id, seq, False)
    conn = reads.session
    keys = ledger.keyring(conn)
    check_signature(signed, _rerunner(keys, _RESULT, keyid, queries.current_size(conn)))
    if event.requestId != request_id:
        raise InvalidResult("the result answers another request than the URL")
    view, request = found_request(conn, request_id)
    if event.runDigest != view.runDigest:
        raise InvalidResult(
            f"the statement is about {event.runDigest}, not the requested run {view.runDigest}"
        )
    _answerable(request, keyid)
    _enough(conn, view.comparabilityFamily, len(event.samples))
    _same_environment(view, event.environment)
    check = check_of(
        still_answerable, keyid, request_id, view.comparabilityFamily, len(event.samples)
    )

    pending = Pending(
        type=_RESULT,
        subject=view.runDigest,
        payload=signed.payload,
        payload_type=INTOTO_PAYLOAD_TYPE,
        envelope=signed.raw,
    )
    appended = ledger.writer().append_pending([pending], check=check)[0]
    return receipt(ledger, reads, appended.payloadDigest, appended.seq, appended.new)


@state_check
def still_answerable(
    ledger: OpenedLog,
    session: Session,
    keyid: str,
    request_id: str,
    family: str | None,
    samples: int,
) -> None:
    """Again in the append's transaction: the key, the claim, and the policy in force (another
    batch of the same commit may have changed it)."""
    _rerunner(ledger.projections.keyring(), _RESULT, keyid, ledger.store.refresh())
    _answerable(found_request(session, request_id)[1], keyid)
    _enough(session, family, samples)


def _enough(conn: Session, family: str | None, samples: int) -> None:
    needed = queries.tolerance_policy(conn).of(family).minSamples
    if samples < needed:
        raise InvalidResult(f"{samples} samples: the tolerance policy asks for at least {needed}")


def _answerable(request: RerunRequest, keyid: str) -> None:
    if request.completedSeq is not None:
        raise RequestClosed("the request was answered already", id=request.requestId)
    if request.claimer != keyid:
        raise NotTheClaimer(
            "only the worker whose claim holds the request answers it",
            id=request.requestId,
            claimer=request.claimer,
        )
