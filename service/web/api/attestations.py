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
from litestar.openapi.datastructures import ResponseSpec
from litestar.params import FromPath, QueryParameter, RawBody

from events.entries import INTOTO_PAYLOAD_TYPE
from service.app import attest, moderation
from service.app.keyadmin import Recorded
from service.web.caching import Read, etag_of
from service.web.deps import LedgerDep, ReaderDep, ServicesDep
from service.web.docs import documented, envelope, event, json_body
from service.web.guards import operator_post
from service.web.limiting import GateDep
from service.web.params import (
    BAD_REQUEST,
    RUN_ERRORS,
    After,
    AsOf,
    Limit,
    RunRef,
    answer,
    asked,
    checked,
    document,
    one_of,
    problem,
)
from service.web.refs import ref_of

__all__ = ["HANDLERS", "post_on_run"]

_ENC = msgspec.json.Encoder()
_DIGEST = re.compile(r"sha256:[0-9a-f]{64}")
_KEY_ID = re.compile(r"[0-9a-f]{64}")
SCHEMA_MEDIA = "application/schema+json"


_STATEMENT = envelope(
    INTOTO_PAYLOAD_TYPE,
    "base64 of an in-toto Statement v1 about the run (predicate"
    " `https://benchproof.dev/attestation/v1`, schema at `GET /schemas/attestation/v1`)",
    "A DSSE envelope signed by the attester's registered key",
)


@post(
    "/v1/runs/{ref:str}/attestations",
    tags=["runs"],
    summary="Attest to the run",
    description="Append the attester's signed statement about the run; the answer carries the"
    " entry, its checkpoint and inclusion proof (200: the log held it already).",
    operation_id="V1RunsRefAttestations",
    responses={
        201: ResponseSpec(
            attest.Posted,
            description="Appended: the entry, its checkpoint and inclusion proof; 200 when the"
            " log held the same statement already",
            generate_examples=False,
        ),
        **RUN_ERRORS,
        403: problem("Unknown or unfit key, or a signature that does not verify"),
        422: problem("The statement is about no run, or another run"),
        429: problem("Over a rate limit (Retry-After says when to try again)"),
    },
    operation_class=documented(body=json_body(_STATEMENT)),
)
async def post_on_run(
    request: Request[Any, Any, Any], services: ServicesDep, ref: RunRef, body: RawBody
) -> Response[bytes]:
    """Append the attester's signed statement about the run: the body is its DSSE envelope over
    an in-toto Statement v1 about the run (predicate: ``GET /schemas/attestation/v1``). 201 with
    where the attestation landed, its signed checkpoint and inclusion proof; 200 with the same
    when the log held it already. Counted against the attester's key and the client address once
    the signature verified."""
    # Checked on the event loop's thread (no thread per request: a post is mostly one signature
    # check and a few index lookups), committed by the group commit's writer thread meanwhile.
    ledger, reader, gate = services.ledger, services.reader, services.gate
    posting = await attest.post_attestation_async(
        ledger, ref_of(ref), body, admit=gate.quota(request).admit_async, reads=reader.log
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
) -> Read:
    """Attestations (hidden ones left out), oldest first, a page at a time. A filter that is
    not of its parameter's shape (or kind not one of the kinds) is 400."""
    checked("subject", subject, _DIGEST, "a run digest, sha256:<64 lowercase hex digits>")
    one_of("kind", kind, attest.KINDS)
    checked("attester", attester, _KEY_ID, "a key id, 64 lowercase hex digits")
    asked_for = asked(reader, as_of_text)
    page = attest.attestation_page(
        reader.conn,
        asked_for.at,
        size=asked_for.size,
        subject=subject,
        kind=kind,
        attester=attester,
        after=after,
        limit=limit,
    )
    return asked_for.read(_ENC.encode(page))


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
) -> Read:
    """One attestation by id (its entry's payload digest), with the attester's DSSE envelope as
    the log stores it."""
    asked_for = asked(reader, as_of_text)
    record = attest.show_attestation(reader.conn, reader.log, attestation_id, asked_for.at)
    return asked_for.read(_ENC.encode(record))


@get(
    "/schemas/attestation/v1",
    tags=["attestations"],
    media_type=SCHEMA_MEDIA,
    responses={200: document(SCHEMA_MEDIA, "The predicate's JSON Schema")},
)
async def predicate_schema() -> Read:
    """The JSON Schema (2020-12) of the attestation predicate
    (``https://benchproof.dev/attestation/v1``)."""
    body = attest.predicate_schema()
    return Read(body, etag_of(body), media_type=SCHEMA_MEDIA)


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
    operation_class=documented(
        body=json_body(event("attestation.withdrawn.v1", "the key that signed the attestation"))
    ),
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


HANDLERS = [post_on_run, attestation_list, attestation_show, predicate_schema, withdrawal, hide]
