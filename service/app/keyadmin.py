"""The life of a registered key after its registration: revoked by itself or by an operator,
granted the rerunner role by an operator (the listing is ``service.app.keylist``).

A key revokes itself with its own DSSE envelope over the encoded ``key.revoked.v1`` event (the
log keeps that envelope, so anyone can check it); an operator's revocation and every grant are
the index's own events. Only community and rerunner keys are revoked or granted here: the index
and log keys sign the log itself and change offline. Each write is checked whole before the
append and again inside the append's transaction (another request may have revoked the key
meanwhile); a refusal appends nothing.
"""

from __future__ import annotations

import base64
from collections.abc import Mapping
from typing import Literal, TypeVar

import msgspec

from events.authority import ONLINE_ROLES, grant_applies, own_key_event
from events.entries import EVENT_PAYLOAD_TYPE, Pending
from events.keyring import KeyView
from events.port import Session
from events.strictjson import check_strict_json
from events.types import EVENT_DECODER, EVENT_ENCODER, Event, KeyGranted, KeyRevoked
from keys import VerifyingKey
from projections import queries
from service.app.keys import Admit, KeyMismatch, SignedBody, check_signature, read_envelope
from service.core.ledger import pending_of
from service.core.logs import OpenedLog
from service.core.statechecks import check_of, state_check
from service.errors import NotFound, ServiceError, UsageError

__all__ = [
    "MANAGED_ROLES",
    "InvalidEvent",
    "KeyNotValid",
    "NotCommunity",
    "ProtectedKey",
    "Recorded",
    "UnknownKeyId",
    "UnknownSigner",
    "bounded_text",
    "grant_role",
    "reason_of",
    "revoke_by_operator",
    "revoke_itself",
    "signed_event",
]

MANAGED_ROLES = ONLINE_ROLES  # the keys revoked and granted here (events.authority)
MAX_REASON_BYTES = 4096

E = TypeVar("E", bound=Event)


class InvalidEvent(UsageError):
    """The payload is not exactly the encoding of the event this endpoint takes."""


class UnknownKeyId(NotFound):
    """The log registered no key with this id."""


class UnknownSigner(ServiceError):
    """The signing key is not registered, or no longer valid."""


class KeyNotValid(ServiceError):
    """The key was revoked or rotated away already."""


class ProtectedKey(ServiceError):
    """The index and log keys are not revoked or granted over the API."""


class NotCommunity(ServiceError):
    """Only a community key is granted the rerunner role."""


class Recorded(msgspec.Struct, frozen=True):
    """An entry a write appended (or found): its id (the payload digest) and position."""

    id: str
    index: int


def signed_event(signed: SignedBody, kind: type[E]) -> E:
    """The envelope's payload as the event ``kind``, exactly its encoding.

    Raises:
        InvalidEvent: another event, or bytes that are not its exact encoding.
    """
    try:
        check_strict_json(signed.payload)
        event = EVENT_DECODER.decode(signed.payload)
    except (ValueError, msgspec.DecodeError) as exc:
        raise InvalidEvent(f"the payload is not an event: {exc}") from None
    if not isinstance(event, kind):
        raise InvalidEvent(f"the payload must be a {kind.__struct_config__.tag} event")
    if EVENT_ENCODER.encode(event) != signed.payload:
        raise InvalidEvent(
            "the payload must be exactly the event's encoding (no unknown or repeated fields)"
        )
    return event


def _managed(keys: Mapping[str, KeyView], key_id: str, size: int) -> KeyView:
    """The key ``key_id``, valid and of a role the API manages."""
    key = keys.get(key_id)
    if key is None:
        raise UnknownKeyId(f"no key {key_id}", keyId=key_id)
    if not key.valid_at(size):
        raise KeyNotValid("the key was revoked or rotated away already", keyId=key_id)
    if key.role not in MANAGED_ROLES:
        raise ProtectedKey(f"the {key.role} key is not managed over the API", keyId=key_id)
    return key


def revoke_itself(ledger: OpenedLog, key_id: str, body: bytes, *, admit: Admit) -> Recorded:
    """Append the key's own revocation: ``body`` is its DSSE envelope over the encoded
    ``key.revoked.v1`` event naming itself.

    Raises:
        BadEnvelope, UnsupportedPayloadType, InvalidEvent: malformed.
        KeyMismatch: the event, the URL or the envelope name different keys.
        UnknownKeyId, KeyNotValid, ProtectedKey: the key.
        BadSignature: the signature does not verify with it.
    """
    signed = read_envelope(body, EVENT_PAYLOAD_TYPE)
    event = signed_event(signed, KeyRevoked)
    if key_id != event.keyId or not own_key_event(event, signed.signature.keyid):
        raise KeyMismatch(
            "a key revokes itself: the URL, the event's keyId and the envelope's keyid must agree",
            keyId=event.keyId,
            envelopeKeyId=signed.signature.keyid,
        )
    store = ledger.store
    with store.snapshot() as conn:
        key = _managed(queries.keyring(conn), key_id, store.refresh())
    check_signature(signed, VerifyingKey.from_raw(base64.b64decode(key.publicKey)))
    admit(key_id)
    pending = Pending(
        type="key.revoked.v1", subject=key_id, payload=signed.payload, envelope=signed.raw
    )
    return _append(ledger, pending, key_id)


def bounded_text(value: str, name: str) -> str:
    """``value`` if it is 1 to ``MAX_REASON_BYTES`` bytes of UTF-8, not only blanks.

    Raises:
        UsageError: it is not.
    """
    if not value.strip() or len(value.encode()) > MAX_REASON_BYTES:
        raise UsageError(f"{name} must be 1 to {MAX_REASON_BYTES} bytes of UTF-8")
    return value


class _Reason(msgspec.Struct, frozen=True, forbid_unknown_fields=True):
    reason: str


_REASON = msgspec.json.Decoder(_Reason)


def reason_of(body: bytes) -> str:
    """The reason of an operator's ``{"reason"}`` body.

    Raises:
        UsageError: another shape, or a reason ``bounded_text`` refuses.
    """
    try:
        check_strict_json(body)
        reason = _REASON.decode(body).reason
    except (ValueError, msgspec.DecodeError) as exc:
        raise UsageError(f'the body must be {{"reason": "..."}}: {exc}') from None
    return bounded_text(reason, "the reason")


def revoke_by_operator(ledger: OpenedLog, key_id: str, body: bytes) -> Recorded:
    """Append the index's revocation of ``key_id`` (``body``: ``{"reason"}``).

    Raises:
        UsageError: malformed body.
        UnknownKeyId, KeyNotValid, ProtectedKey: the key.
    """
    event = KeyRevoked(keyId=key_id, reason=reason_of(body))
    with ledger.store.snapshot() as conn:
        _managed(queries.keyring(conn), key_id, ledger.store.refresh())
    return _append(ledger, pending_of(event, key_id), key_id)


class _Grant(msgspec.Struct, frozen=True, forbid_unknown_fields=True):
    role: Literal["rerunner"]


_GRANT = msgspec.json.Decoder(_Grant)


def grant_role(ledger: OpenedLog, key_id: str, body: bytes) -> Recorded:
    """Append the index's grant of a role (``body``: ``{"role": "rerunner"}``) to the community
    key ``key_id``.

    Raises:
        UsageError: malformed body or another role.
        UnknownKeyId, KeyNotValid, ProtectedKey, NotCommunity: the key.
    """
    try:
        check_strict_json(body)
        role = _GRANT.decode(body).role
    except (ValueError, msgspec.DecodeError) as exc:
        raise UsageError(f'the body must be {{"role": "rerunner"}}: {exc}') from None
    event = KeyGranted(keyId=key_id, role=role)
    with ledger.store.snapshot() as conn:
        _community(queries.keyring(conn), key_id, ledger.store.refresh(), role)
    pending = pending_of(event, key_id)
    check = check_of(still_community, key_id, role)
    appended = ledger.writer().append_pending([pending], check=check)[0]
    return Recorded(appended.payloadDigest, appended.seq)


@state_check
def still_community(ledger: OpenedLog, _session: Session, key_id: str, role: str) -> None:
    """Again in the append's transaction: the key is still a community key, valid."""
    _community(ledger.projections.keyring(), key_id, ledger.store.refresh(), role)


def _community(keys: Mapping[str, KeyView], key_id: str, size: int, role: str) -> None:
    if not grant_applies(_managed(keys, key_id, size), role, size):
        raise NotCommunity("only a community key is granted a role", keyId=key_id)


def _append(ledger: OpenedLog, pending: Pending, key_id: str) -> Recorded:
    """Append a revocation of ``key_id`` if the key is still valid inside the transaction."""
    check = check_of(still_managed, key_id)
    appended = ledger.writer().append_pending([pending], check=check)[0]
    return Recorded(appended.payloadDigest, appended.seq)


@state_check
def still_managed(ledger: OpenedLog, _session: Session, key_id: str) -> None:
    """Again in the append's transaction: the key is still valid and not protected."""
    _managed(ledger.projections.keyring(), key_id, ledger.store.refresh())
