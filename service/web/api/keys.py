"""``/v1/keys``: community keys register themselves. ``POST /v1/keys/challenges`` issues a
single-use challenge for a key id; ``POST /v1/keys`` takes the key's own DSSE envelope over a
``key.registered.v1`` event naming it (proof of possession). ``GET /v1/keys`` and
``/v1/keys/{id}`` show what the log knows of each key, ``/v1/keys/{id}/entries`` the entries it
signed; ``POST /v1/keys/{id}/revocation`` revokes
a key (its own envelope, or an operator's token), ``POST /v1/keys/{id}/grants`` gives a community
key the rerunner role (operators only). The public writes count against the rate limits."""

from __future__ import annotations

from typing import Any

import msgspec
from litestar import Request, get, post
from litestar.openapi.spec import OpenAPIType, Schema
from litestar.params import FromPath, RawBody

from service.app import keyadmin, keylist, keys
from service.shared.challenges import Challenge
from service.web.auth import TokenStore
from service.web.caching import Read, etag_of
from service.web.deps import LedgerDep, ReaderDep
from service.web.docs import TEXT, documented, event, json_body
from service.web.guards import bearer_token, operator_post
from service.web.limiting import GateDep
from service.web.params import BAD_REQUEST, OPERATOR_TOKEN, After, Limit, answer, problem
from service.web.problems import Unauthorized

__all__ = ["HANDLERS"]

_ENC = msgspec.json.Encoder()
_CHALLENGE = Schema(
    type=OpenAPIType.OBJECT,
    required=["keyId"],
    properties={"keyId": TEXT},
    description="The key id (`ed25519:` and the SHA-256 of its public key) to register",
)
_REVOCATION = Schema(
    one_of=[
        event("key.revoked.v1", "the key it revokes"),
        Schema(
            type=OpenAPIType.OBJECT,
            properties={"reason": TEXT},
            description="An operator's revocation (with a bearer token)",
        ),
    ]
)
_LIMITED = {429: problem("Over a rate limit (Retry-After says when to try again)")}


@post(
    "/v1/keys/challenges",
    tags=["keys"],
    sync_to_thread=True,
    status_code=201,
    responses={400: problem("Malformed request (keyId must be 64 lowercase hex)"), **_LIMITED},
    operation_class=documented(body=json_body(_CHALLENGE)),
)
def challenge(
    request: Request[Any, Any, Any],
    ledger: LedgerDep,
    gate: GateDep,
    body: RawBody,
) -> Challenge:
    """A registration challenge bound to ``keyId`` (the body: ``{"keyId"}``): sign it into the
    registration within five minutes; it can be used once."""
    gate.quota(request).anonymous()
    return keys.issue_challenge(ledger, keys.challenge_key(body))


@post(
    "/v1/keys",
    tags=["keys"],
    sync_to_thread=True,
    status_code=201,
    summary="Register a community key",
    description="The body is a DSSE envelope over the `key.registered.v1` event {keyId,"
    " publicKey, role: community, name, challenge}, signed by the key it registers. The name:"
    " 1 to 64 characters of UTF-8, no spaces and no `+`, unused by any valid key"
    " (case-insensitively); a longer one is a 400 naming the field `name`.",
    operation_id="V1KeysRegister",
    responses={
        400: problem("Malformed envelope or registration, or a challenge not issued for this key"),
        403: problem("The signature does not verify, or the key ids disagree"),
        409: problem("The key is registered already, or a valid key has this name"),
        410: problem("The challenge was used already, or expired"),
        **_LIMITED,
    },
    operation_class=documented(
        body=json_body(event("key.registered.v1", "the key it registers, naming its challenge"))
    ),
)
def register(
    request: Request[Any, Any, Any],
    ledger: LedgerDep,
    reader: ReaderDep,
    gate: GateDep,
    body: RawBody,
) -> keys.Registered:
    """Register a community key: the body is a DSSE envelope (payloadType
    ``application/vnd.benchproof.event+json``) over the encoded ``key.registered.v1`` event
    {keyId, publicKey, role: community, name, challenge}, signed by that key. The name: 1 to 64
    characters of UTF-8, no spaces and no ``+``, unused by any valid key (case-insensitively)."""
    registered = keys.register_key(ledger, body, admit=gate.quota(request).admit)
    reader.invalidate()
    return registered


@get(
    "/v1/keys",
    tags=["keys"],
    responses={**answer(keylist.KeyPage, "A page of keys"), **BAD_REQUEST},
)
async def key_list(reader: ReaderDep, after: After = None, limit: Limit = 100) -> Read:
    """The keys the log registered, by registration position, a page at a time."""
    size = reader.size()
    body = _ENC.encode(keylist.key_page(reader.conn, reader.log, after=after, limit=limit))
    return Read(body, etag_of(body), size=size)


@get(
    "/v1/keys/{key_id:str}",
    tags=["keys"],
    responses={**answer(keylist.KeyRecord, "The key"), 404: problem("No key has this id")},
)
async def key_show(reader: ReaderDep, key_id: FromPath[str]) -> Read:
    """One key: role, name (``nameSelfChosen`` when it registered itself), registered at,
    revoked or rotated at, how many entries it signed and attestations it posted, and where
    to list each."""
    size = reader.size()
    key_id = keylist.resolve_key(reader.conn, key_id)
    body = _ENC.encode(keylist.show_key(reader.conn, reader.log, key_id))
    return Read(body, etag_of(body), size=size)


@get(
    "/v1/keys/{key_id:str}/entries",
    tags=["keys"],
    responses={
        **answer(keylist.SignedPage, "A page of the entries the key signed"),
        **BAD_REQUEST,
        404: problem("No key has this id"),
    },
)
async def key_entries(
    reader: ReaderDep, key_id: FromPath[str], after: After = None, limit: Limit = 100
) -> Read:
    """The entries the key signed (every kind: registrations, attestations, withdrawals,
    reruns; for the index key, the index's own events), oldest first, a page at a time."""
    size = reader.size()
    key_id = keylist.resolve_key(reader.conn, key_id)
    page = keylist.signed_page(reader.conn, reader.log, key_id, after=after, limit=limit)
    body = _ENC.encode(page)
    return Read(body, etag_of(body), size=size)


@post(
    "/v1/keys/{key_id:str}/revocation",
    tags=["keys"],
    sync_to_thread=True,
    status_code=201,
    security=[{"operatorToken": []}, {}],
    responses={
        400: problem("Malformed envelope, event or body"),
        403: problem("Not signed by the key it revokes, or an index or log key"),
        404: problem("No key has this id"),
        409: problem("The key was revoked or rotated away already"),
        **OPERATOR_TOKEN,
        **_LIMITED,
    },
    operation_class=documented(body=json_body(_REVOCATION)),
)
def revocation(
    request: Request[Any, Any, Any],
    ledger: LedgerDep,
    reader: ReaderDep,
    gate: GateDep,
    key_id: FromPath[str],
    body: RawBody,
) -> keyadmin.Recorded:
    """Revoke a community or rerunner key from the next entry on. Either the key itself: the
    body is its DSSE envelope over the encoded ``key.revoked.v1`` event {keyId, reason}; or an
    operator (``Authorization: Bearer <token>``): the body is ``{"reason"}`` and the index
    signs."""
    authorization = request.headers.get("authorization")
    if authorization is None:
        recorded = keyadmin.revoke_itself(ledger, key_id, body, admit=gate.quota(request).admit)
    else:
        tokens: TokenStore = request.app.state.tokens
        if tokens.check(bearer_token(authorization)) is None:
            raise Unauthorized("a valid operator token is required (Authorization: Bearer <token>)")
        recorded = keyadmin.revoke_by_operator(ledger, key_id, body)
    reader.invalidate()
    return recorded


@operator_post(
    "/v1/keys/{key_id:str}/grants",
    {
        400: problem('The body is not {"role": "rerunner"}'),
        403: problem("An index or log key"),
        404: problem("No key has this id"),
        409: problem("The key was revoked, or is not a community key"),
    },
)
def grant(
    ledger: LedgerDep, reader: ReaderDep, key_id: FromPath[str], body: RawBody
) -> keyadmin.Recorded:
    """Give the community key the rerunner role from the next entry on (operators only; the
    index signs ``key.granted.v1``)."""
    recorded = keyadmin.grant_role(ledger, key_id, body)
    reader.invalidate()
    return recorded


HANDLERS = [challenge, register, key_list, key_show, key_entries, revocation, grant]
