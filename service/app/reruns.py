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

import contextlib
from collections.abc import Mapping
from datetime import timedelta
from typing import Any, Literal

import msgspec

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
from projections import queries
from projections.tolerance import to_ns
from projections.views import RerunRequest, RunView, instant_of
from service.app.attest import Posting, receipt
from service.app.keyadmin import InvalidEvent, Recorded, bounded_text, signed_event, valid_signer
from service.app.keys import KeyMismatch, SignedBody, check_signature, read_envelope
from service.core.ledger import Ledger, pending_of
from service.errors import NotFound, ServiceError, UsageError
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

CPU_ARCHITECTURES = frozenset(
    {"x86_64", "amd64", "i686", "aarch64", "arm64", "riscv64", "ppc64le", "s390x"}
)

State = Literal["pending", "claimed", "completed"]


class UnknownRequest(NotFound):
    """No rerun request has this id."""


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


def needs(view: RunView) -> dict[str, str] | None:
    """The environment a rerun of the run needs: ``kind`` (``cpu`` when the architecture is a
    CPU's, else ``gpu``), ``model`` and ``architecture`` from its environment manifest (None:
    the run names no hardware)."""
    if view.hardware is None or view.hardwareArchitecture is None:
        return None
    cpu = view.hardwareArchitecture.strip().lower() in CPU_ARCHITECTURES
    out = {
        "kind": "cpu" if cpu else "gpu",
        "model": view.hardware,
        "architecture": view.hardwareArchitecture,
    }
    if view.hardwareVendor:
        out["vendor"] = view.hardwareVendor
    return out


class RerunItem(msgspec.Struct, frozen=True, omit_defaults=True):
    """A rerun request and its state now."""

    requestId: str
    runDigest: str
    reason: str
    requestedAt: int
    state: State
    needs: dict[str, str] | None = None
    minSamples: int | None = None  # what the tolerance policy in force asks of a result
    claimer: str | None = None
    leaseUntil: str | None = None
    completedAt: int | None = None


class RerunPage(msgspec.Struct, frozen=True):
    """The rerun requests in the state asked for, oldest first."""

    items: list[RerunItem]
    asOf: int


def _state(request: RerunRequest, now: str) -> State:
    if request.completedSeq is not None:
        return "completed"
    return "claimed" if request.leased_at(now) else "pending"


def _found(conn: Session, request_id: str) -> tuple[RunView, RerunRequest]:
    """The run a request is about (its view now) and the request as that view holds it.

    Raises:
        UnknownRequest: no request of the index has this id.
    """
    digest = queries.rerun_request_run(conn, request_id)
    view = queries.run_view(conn, digest) if digest is not None else None
    request = None
    if view is not None:
        request = next((r for r in view.rerunRequests if r.requestId == request_id), None)
    if view is None or request is None:
        raise UnknownRequest(f"no rerun request {request_id}", id=request_id)
    return view, request


def rerun_list(conn: Session, *, size: int, now: str, state: str | None) -> RerunPage:
    """The requests (in ``state``, if given) as they stand at the instant ``now``.

    Raises:
        UsageError: ``state`` is not pending, claimed or completed.
    """
    if state not in (None, "pending", "claimed", "completed"):
        raise UsageError("state must be pending, claimed or completed", state=state)
    items = []
    policy = queries.tolerance_policy(conn)
    for request_id in queries.rerun_request_ids(conn):
        with contextlib.suppress(UnknownRequest):  # a request the fold did not take
            view, request = _found(conn, request_id)
            now_state = _state(request, now)
            if state is None or now_state == state:
                items.append(
                    RerunItem(
                        requestId=request.requestId,
                        runDigest=view.runDigest,
                        reason=request.reason,
                        requestedAt=request.seq,
                        state=now_state,
                        needs=needs(view),
                        minSamples=policy.of(view.comparabilityFamily).minSamples,
                        claimer=request.claimer,
                        leaseUntil=request.leaseUntil,
                        completedAt=request.completedSeq,
                    )
                )
    return RerunPage(items, size)


def request_bundle(conn: Session, log: SqlLog, request_id: str) -> dict[str, Any]:
    """The harness's input material for a request: the run's digest and the manifests it was
    ingested with, by role.

    Raises:
        UnknownRequest: no request of the index has this id.
    """
    view, _ = _found(conn, request_id)
    bundle = dict(queries.run_bundle(conn, log, view.runDigest) or {})
    # Manifests the run waited on and that came later (manifest.recorded) complete it.
    spec = bundle.get("run", {}).get("spec", {})
    for role, field in _REFERENCES.items():
        digest = spec.get(field)
        if role not in bundle and isinstance(digest, str):
            found = queries.manifest(conn, digest)
            if found is not None:
                bundle[role] = found
    return {"runDigest": view.runDigest, "requestId": request_id, "manifests": bundle}


_REFERENCES = {
    "protocol": "protocolDigest",
    "environment": "environmentDigest",
    "workload": "workloadDigest",
    "implementation": "implementationDigest",
}


class _Reason(msgspec.Struct, frozen=True, forbid_unknown_fields=True):
    reason: str


def request_rerun(ledger: Ledger, ref: str, body: bytes) -> tuple[Recorded, bool]:
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
    appended = ledger.append_pending([pending_of(event, digest)])[0]
    return Recorded(appended.payloadDigest, appended.seq), appended.new


def _rerunner(keys: Mapping[str, KeyView], key_id: str, size: int) -> None:
    valid_signer(keys, key_id, size)
    if keys[key_id].role != "rerunner":
        raise NotRerunner(f"a {keys[key_id].role} key may not run reruns", keyId=key_id)


def _instant(ledger: Ledger) -> str:
    return format_instant(ledger.clock())


def claim_rerun(
    ledger: Ledger, request_id: str, body: bytes, reads: SqlLog
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
    if event.worker != keyid:
        raise KeyMismatch("a worker claims for itself: worker and envelope keyid must agree")
    conn = reads.session
    keys = ledger.keyring(conn)
    _rerunner(keys, keyid, queries.current_size(conn))
    check_signature(signed, valid_signer(keys, keyid, queries.current_size(conn)))
    view, request = _found(conn, request_id)
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

    def still_claimable(session: Session) -> None:
        _rerunner(ledger.projections.keyring(), keyid, ledger.store.refresh())
        _claimable(_found(session, request_id)[1], keyid, _instant(ledger))

    pending = Pending(
        type="rerun.claimed.v2", subject=view.runDigest, payload=signed.payload, envelope=signed.raw
    )
    appended = ledger.append_pending([pending], check=still_claimable)[0]
    return Recorded(appended.payloadDigest, appended.seq), appended.new


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
        event = statement_event("rerun.completed.v2", signed.payload, signed.signature.keyid)
    except (BadStatement, ValueError, msgspec.DecodeError, AttributeError) as exc:
        raise InvalidResult(f"not a rerun result statement: {exc}") from None
    assert isinstance(event, RerunCompletedV2)  # noqa: S101 - the v2 entry type decodes to it
    return event


def complete_rerun(ledger: Ledger, request_id: str, body: bytes, reads: SqlLog) -> Posting:
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
    _rerunner(keys, keyid, queries.current_size(conn))
    check_signature(signed, valid_signer(keys, keyid, queries.current_size(conn)))
    if event.requestId != request_id:
        raise InvalidResult("the result answers another request than the URL")
    view, request = _found(conn, request_id)
    if event.runDigest != view.runDigest:
        raise InvalidResult(
            f"the statement is about {event.runDigest}, not the requested run {view.runDigest}"
        )
    _answerable(request, keyid)
    _enough(conn, view, event)
    _same_environment(view, event.environment)

    def still_answerable(session: Session) -> None:
        """Again in the append's transaction: the key, the claim, and the policy in force
        (another batch of the same commit may have changed it)."""
        _rerunner(ledger.projections.keyring(), keyid, ledger.store.refresh())
        _answerable(_found(session, request_id)[1], keyid)
        _enough(session, view, event)

    pending = Pending(
        type="rerun.completed.v2",
        subject=view.runDigest,
        payload=signed.payload,
        payload_type=INTOTO_PAYLOAD_TYPE,
        envelope=signed.raw,
    )
    appended = ledger.append_pending([pending], check=still_answerable)[0]
    return receipt(ledger, reads, appended.payloadDigest, appended.seq, appended.new)


def _enough(conn: Session, view: RunView, event: RerunCompletedV2) -> None:
    needed = queries.tolerance_policy(conn).of(view.comparabilityFamily).minSamples
    if len(event.samples) < needed:
        raise InvalidResult(
            f"{len(event.samples)} samples: the tolerance policy asks for at least {needed}"
        )


def _answerable(request: RerunRequest, keyid: str) -> None:
    if request.completedSeq is not None:
        raise RequestClosed("the request was answered already", id=request.requestId)
    if request.claimer != keyid:
        raise NotTheClaimer(
            "only the worker whose claim holds the request answers it",
            id=request.requestId,
            claimer=request.claimer,
        )
