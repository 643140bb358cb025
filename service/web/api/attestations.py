"""``/v1/attestations`` and the attestation predicate's JSON Schema: signed statements about
runs, posted by registered community or rerunner keys (``POST /v1/runs/{ref}/attestations``,
``post``), listed by run, kind and attester, and shown one by one with the attester's exact DSSE
envelope, so anyone can check it with the attester's public key alone. The attester withdraws
one (``…/withdrawal``, its own envelope), an operator hides one (``…/hidden``); neither
deletes it."""

from __future__ import annotations

import re
from typing import Annotated, Any

import msgspec
from litestar import Request, Response, get, post
from litestar.params import FromPath, QueryParameter, RawBody

from service.app import attest, moderation
from service.app.keyadmin import Recorded
from service.web.caching import etag_of, respond, settled
from service.web.deps import LedgerDep, ReaderDep, Services
from service.web.guards import operator_post
from service.web.limiting import GateDep
from service.web.params import (
    BAD_REQUEST,
    After,
    AsOf,
    Limit,
    answer,
    as_of,
    checked,
    one_of,
    problem,
)

__all__ = ["HANDLERS", "post_on_run"]

_ENC = msgspec.json.Encoder()
_DIGEST = re.compile(r"sha256:[0-9a-f]{64}")
_KEY_ID = re.compile(r"[0-9a-f]{64}")
SCHEMA_MEDIA = "application/schema+json"


async def post_on_run(
    request: Request[Any, Any, Any], services: Services, ref: str, body: bytes
) -> Response[bytes]:
    """``POST /v1/runs/{ref}/attestations``: 201 with where the attestation landed, its signed
    checkpoint and inclusion proof; 200 with the same when the log held it already. Counted
    against the attester's key and the client address once the signature verified. Checked on
    the event loop's thread (no thread per request: a post is mostly one signature check and a
    few index lookups), committed by the group commit's writer thread meanwhile."""
    ledger, reader, gate = services.ledger, services.reader, services.gate
    posting = await attest.post_attestation_async(
        ledger, ref, body, admit=gate.quota(request).admit_async, reads=reader.log
    )
    reader.invalidate()
    return Response(
        _ENC.encode(posting.posted),
        status_code=201 if posting.new else 200,
        media_type="application/json",
    )


@get(
    "/v1/attestations",
    tags=["attestations"],
    responses={**answer(attest.AttestationPage, "A page of attestations"), **BAD_REQUEST},
)
async def attestation_list(
    request: Request[Any, Any, Any],
    reader: ReaderDep,
    as_of_text: AsOf = None,
    subject: Annotated[
        str | None, QueryParameter(description="the run's digest, sha256:<64 hex digits>")
    ] = None,
    kind: Annotated[
        str | None,
        QueryParameter(description="the predicate's kind: " + ", ".join(attest.KINDS)),
    ] = None,
    attester: Annotated[
        str | None, QueryParameter(description="the attester's key id (64 hex digits)")
    ] = None,
    after: After = None,
    limit: Limit = 100,
) -> Response[bytes]:
    """Attestations (hidden ones left out), oldest first, a page at a time. A filter that is
    not of its parameter's shape (or kind not one of the kinds) is 400."""
    checked("subject", subject, _DIGEST, "a run digest, sha256:<64 lowercase hex digits>")
    one_of("kind", kind, attest.KINDS)
    checked("attester", attester, _KEY_ID, "a key id, 64 lowercase hex digits")
    at = as_of(reader, as_of_text)
    page = attest.attestation_page(
        reader.conn,
        at,
        size=reader.size(),
        subject=subject,
        kind=kind,
        attester=attester,
        after=after,
        limit=limit,
    )
    body = _ENC.encode(page)
    return respond(request, body, etag_of(body), pinned=settled(reader, as_of_text, at))


@get(
    "/v1/attestations/{attestation_id:str}",
    tags=["attestations"],
    responses={
        **answer(attest.AttestationRecord, "The attestation and its signed envelope"),
        **BAD_REQUEST,
        404: problem("No attestation has this id"),
    },
)
async def attestation_show(
    request: Request[Any, Any, Any],
    reader: ReaderDep,
    attestation_id: FromPath[str],
    as_of_text: AsOf = None,
) -> Response[bytes]:
    """One attestation by id (its entry's payload digest), with the attester's DSSE envelope as
    the log stores it."""
    at = as_of(reader, as_of_text)
    record = attest.show_attestation(reader.conn, reader.log, attestation_id, at)
    body = _ENC.encode(record)
    return respond(request, body, etag_of(body), pinned=settled(reader, as_of_text, at))


@get("/schemas/attestation/v1", tags=["attestations"], media_type=SCHEMA_MEDIA)
async def predicate_schema(request: Request[Any, Any, Any]) -> Response[bytes]:
    """The JSON Schema (2020-12) of the attestation predicate
    (``https://benchproof.dev/attestation/v1``)."""
    body = attest.predicate_schema()
    return respond(request, body, etag_of(body), pinned=False, media_type=SCHEMA_MEDIA)


@post(
    "/v1/attestations/{attestation_id:str}/withdrawal",
    tags=["attestations"],
    sync_to_thread=True,
    status_code=201,
    responses={
        400: problem("Malformed envelope or event, or an event about another attestation"),
        403: problem("Not signed by the attester, or by a key no longer valid"),
        404: problem("No attestation has this id"),
        409: problem("Withdrawn already"),
        429: problem("Over a rate limit (Retry-After says when to try again)"),
    },
)
def withdrawal(
    request: Request[Any, Any, Any],
    ledger: LedgerDep,
    reader: ReaderDep,
    gate: GateDep,
    attestation_id: FromPath[str],
    body: RawBody,
) -> Recorded:
    """The attester takes its attestation back: the body is its DSSE envelope over the encoded
    ``attestation.withdrawn.v1`` event {attestationId, reason}, signed by the key that posted
    it. The log keeps the attestation; the dossier marks it withdrawn."""
    quota = gate.quota(request)
    recorded = moderation.withdraw_attestation(ledger, attestation_id, body, admit=quota.admit)
    reader.invalidate()
    return recorded


@operator_post(
    "/v1/attestations/{attestation_id:str}/hidden",
    {
        400: problem('The body is not {"reason"}'),
        404: problem("No attestation has this id"),
        409: problem("Hidden already"),
    },
)
def hide(
    ledger: LedgerDep, reader: ReaderDep, attestation_id: FromPath[str], body: RawBody
) -> Recorded:
    """Hide an attestation (operators only; the index signs ``attestation.hidden.v1``): the log
    keeps it, lists leave it out, the dossier counts it in ``hiddenByModeration``."""
    recorded = moderation.hide_attestation(ledger, attestation_id, body)
    reader.invalidate()
    return recorded


HANDLERS = [attestation_list, attestation_show, predicate_schema, withdrawal, hide]
