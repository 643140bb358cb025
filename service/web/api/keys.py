"""``/v1/keys``: community keys register themselves. ``POST /v1/keys/challenges`` issues a
single-use challenge for a key id; ``POST /v1/keys`` takes the key's own DSSE envelope over a
``key.registered.v1`` event naming it (proof of possession)."""

from __future__ import annotations

import msgspec
from litestar import post
from litestar.params import JSONBody, RawBody

from service.app import keys
from service.state import Challenge
from service.web.deps import LedgerDep, ReaderDep
from service.web.params import problem

__all__ = ["HANDLERS"]


class ChallengeRequest(msgspec.Struct, frozen=True, forbid_unknown_fields=True):
    """The key a challenge is for: its id, hex SHA-256 of the raw Ed25519 public key."""

    keyId: str


@post(
    "/v1/keys/challenges",
    tags=["keys"],
    sync_to_thread=True,
    status_code=201,
    responses={400: problem("Malformed request (keyId must be 64 lowercase hex)")},
)
def challenge(ledger: LedgerDep, data: JSONBody[ChallengeRequest]) -> Challenge:
    """A registration challenge bound to ``keyId``: sign it into the registration within five
    minutes; it can be used once."""
    return keys.issue_challenge(ledger, data.keyId)


@post(
    "/v1/keys",
    tags=["keys"],
    sync_to_thread=True,
    status_code=201,
    responses={
        400: problem("Malformed envelope or registration, or a challenge not issued for this key"),
        403: problem("The signature does not verify, or the key ids disagree"),
        409: problem("The key is registered already, or a valid key has this name"),
        410: problem("The challenge was used already, or expired"),
    },
)
def register(ledger: LedgerDep, reader: ReaderDep, body: RawBody) -> keys.Registered:
    """Register a community key: the body is a DSSE envelope (payloadType
    ``application/vnd.benchproof.event+json``) over the encoded ``key.registered.v1`` event
    {keyId, publicKey, role: community, name, challenge}, signed by that key."""
    registered = keys.register_key(ledger, body)
    reader.invalidate()
    return registered


HANDLERS = [challenge, register]
