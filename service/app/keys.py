"""Community keys: issue a registration challenge, and register a key that signed one (proof of
possession: the ``key.registered.v1`` entry is the key's own DSSE envelope over an event that
names the challenge). Also the strict reading of a DSSE envelope an actor posts, which
attestations share.

A registration is checked whole before anything is written: the envelope (strict JSON, one
signature, canonical base64, the event payload type), the payload (exactly the encoding of a
``KeyRegistered`` event, role ``community``, a valid name), the key (key id = payload keyId =
SHA-256 of the public key, the signature over the PAE verifies with it), the challenge (issued
here for that key id, unexpired, unused), and the keyring (the key is new, its name unused by any
valid key, case-insensitively). The challenge is then used, and the entry appended, the keyring
checked again inside the append's transaction.
"""

from __future__ import annotations

import base64
import binascii
import re
from collections.abc import Callable, Mapping
from typing import NamedTuple

import msgspec

from events.authority import SELF_REGISTERING_ROLE
from events.entries import EVENT_PAYLOAD_TYPE, Pending
from events.keyring import KeyView
from events.port import Session
from events.strictjson import check_strict_json
from events.types import EVENT_DECODER, EVENT_ENCODER, KeyRegistered
from keys import KeyringError, Signature, VerificationError, VerifyingKey, pae
from keys.notekeys import valid_key_name
from projections.queries import keyring
from service.core.logs import OpenedLog
from service.core.statechecks import check_of, state_check
from service.errors import ServiceError, UsageError
from service.shared.challenges import Challenge, Challenges

__all__ = [
    "Admit",
    "BadEnvelope",
    "BadSignature",
    "ChallengeRequest",
    "InvalidRegistration",
    "KeyAlreadyRegistered",
    "KeyMismatch",
    "NameTaken",
    "Registered",
    "SignedBody",
    "UnsupportedPayloadType",
    "challenge_key",
    "check_signature",
    "issue_challenge",
    "read_envelope",
    "register_key",
    "unique_members",
]

_KEY_ID = re.compile(r"[0-9a-f]{64}\Z")

Admit = Callable[[str], None]
"""Called with the signing key's id once its signature verified, before anything is appended
or used up (the rate limiter's count for that key); raises to refuse."""


class BadEnvelope(UsageError):
    """The body is not a well-formed DSSE envelope with exactly one signature."""


class UnsupportedPayloadType(UsageError):
    """The envelope's payload type is not the one this endpoint takes."""


class BadSignature(ServiceError):
    """The envelope's signature does not verify with the key it names."""


class KeyMismatch(ServiceError):
    """The envelope's key id, the payload's key id and the public key do not agree."""


class InvalidRegistration(UsageError):
    """The payload is not a community key registration this server accepts."""


class KeyAlreadyRegistered(ServiceError):
    """The log already holds this key."""


MAX_KEY_NAME = 64
"""The longest name a community key registers itself with (in characters)."""


class NameTaken(ServiceError):
    """A valid key already has this name (compared case-insensitively)."""


class Registered(msgspec.Struct, frozen=True):
    """A key the log registered, and the position of its entry."""

    keyId: str
    name: str
    role: str
    index: int


class _Signature(msgspec.Struct, frozen=True, forbid_unknown_fields=True):
    keyid: str
    sig: str


class _Envelope(msgspec.Struct, frozen=True, forbid_unknown_fields=True):
    payloadType: str
    payload: str
    signatures: list[_Signature]


_ENVELOPE = msgspec.json.Decoder(_Envelope)


class SignedBody(NamedTuple):
    """A posted envelope, read strictly: its exact bytes, the payload, and its one signature."""

    raw: bytes
    payload: bytes
    signature: Signature
    payload_type: str


def unique_members(data: bytes) -> None:
    """Refuse JSON whose objects repeat a member name (parsers disagree on which one counts)
    or whose strings hold U+0000 (``events.strictjson``).

    Raises:
        ValueError: not JSON, nested too deeply to read, a repeated member name, or a NUL.
    """
    check_strict_json(data)


def _strict_b64(text: str, field: str) -> bytes:
    """Canonical padded standard base64, the only form ``benchproof verify`` reads."""
    try:
        data = binascii.a2b_base64(text, strict_mode=True)
    except ValueError:  # binascii.Error is one; a character outside ASCII raises the other
        data = None
    if data is None or base64.b64encode(data).decode() != text:
        raise BadEnvelope(f"{field} is not canonical standard base64", field=field)
    return data


def read_envelope(body: bytes, payload_type: str) -> SignedBody:
    """Read a posted DSSE envelope strictly: JSON with no unknown or repeated members, exactly
    one signature, canonical standard base64 payload and signature, payload type
    ``payload_type``. The signature is not checked here (the caller knows the key).

    Raises:
        BadEnvelope: any of that fails but the payload type.
        UnsupportedPayloadType: another payload type.
    """
    raw = body.strip()
    try:
        unique_members(raw)
        envelope = _ENVELOPE.decode(raw)
    except (ValueError, msgspec.DecodeError) as exc:
        raise BadEnvelope(f"not a DSSE envelope: {exc}") from None
    if len(envelope.signatures) != 1:
        raise BadEnvelope(
            f"the envelope must carry exactly one signature, not {len(envelope.signatures)}"
        )
    if envelope.payloadType != payload_type:
        raise UnsupportedPayloadType(
            f"payloadType must be {payload_type}, not {envelope.payloadType!r}",
            payloadType=envelope.payloadType,
        )
    payload = _strict_b64(envelope.payload, "payload")
    sig = envelope.signatures[0]
    _strict_b64(sig.sig, "signatures[0].sig")
    return SignedBody(raw, payload, Signature(sig.keyid, sig.sig), envelope.payloadType)


def check_signature(signed: SignedBody, key: VerifyingKey) -> None:
    """The envelope's signature over the PAE verifies with ``key``.

    Raises:
        BadSignature: it does not.
    """
    try:
        key.verify(base64.b64decode(signed.signature.sig), pae(signed.payload_type, signed.payload))
    except VerificationError:
        raise BadSignature(
            "the signature does not verify with the key it names", keyId=key.key_id
        ) from None


class ChallengeRequest(msgspec.Struct, frozen=True, forbid_unknown_fields=True):
    """The key a challenge is for: its id, hex SHA-256 of the raw Ed25519 public key."""

    keyId: str


_CHALLENGE_REQUEST = msgspec.json.Decoder(ChallengeRequest)


def challenge_key(body: bytes) -> str:
    """The key id a challenge request (``{"keyId"}``) asks for, read strictly.

    Raises:
        UsageError: the body is not that object (or repeats a member, holds a NUL, or nests
            too deeply to read).
    """
    try:
        check_strict_json(body)
        return _CHALLENGE_REQUEST.decode(body).keyId
    except (ValueError, msgspec.DecodeError) as exc:
        raise UsageError(f'the body must be {{"keyId": "<64 lowercase hex>"}}: {exc}') from None


def issue_challenge(ledger: OpenedLog, key_id: str) -> Challenge:
    """A single-use registration challenge for ``key_id``, valid five minutes.

    Raises:
        UsageError: ``key_id`` is not 64 lowercase hex digits.
    """
    if not _KEY_ID.match(key_id):
        raise UsageError("keyId must be 64 lowercase hex digits (SHA-256 of the public key)")
    return Challenges(ledger.data.store, ledger.data.db).issue(key_id, ledger.clock())


def _registration(signed: SignedBody) -> tuple[KeyRegistered, str]:
    """The payload as a community key registration, and the challenge it names."""
    try:
        check_strict_json(signed.payload)
        event = EVENT_DECODER.decode(signed.payload)
    except (ValueError, msgspec.DecodeError) as exc:
        raise InvalidRegistration(f"the payload is not an event: {exc}") from None
    if not isinstance(event, KeyRegistered):
        raise InvalidRegistration("the payload must be a key.registered.v1 event")
    if EVENT_ENCODER.encode(event) != signed.payload:
        raise InvalidRegistration(
            "the payload must be exactly the event's encoding (no unknown or repeated fields)"
        )
    if event.role != SELF_REGISTERING_ROLE:
        raise InvalidRegistration(
            f"a key registers itself as {SELF_REGISTERING_ROLE}, not {event.role}"
        )
    if not valid_key_name(event.name):
        raise InvalidRegistration(
            f"invalid key name {event.name!r}: non-empty UTF-8 with no spaces and no '+'",
            field="name",
        )
    if len(event.name) > MAX_KEY_NAME:
        raise InvalidRegistration(
            f"the key name is {len(event.name)} characters long: at most {MAX_KEY_NAME}",
            field="name",
        )
    if event.challenge is None:
        raise InvalidRegistration("the registration must name the challenge it answers")
    return event, event.challenge


def _public_key(event: KeyRegistered, keyid: str) -> VerifyingKey:
    """The registered public key, if the key ids agree with it."""
    try:
        key = VerifyingKey.from_raw(base64.b64decode(event.publicKey, validate=True))
    except (binascii.Error, KeyringError):
        raise InvalidRegistration("publicKey must be base64 of a raw 32-byte Ed25519 key") from None
    if not keyid == event.keyId == key.key_id:
        raise KeyMismatch(
            "the envelope's key id, the payload's keyId and SHA-256 of publicKey must be equal",
            envelopeKeyId=keyid,
            keyId=event.keyId,
            publicKeyId=key.key_id,
        )
    return key


def _check_new(keys: Mapping[str, KeyView], key_id: str, name: str, size: int) -> None:
    if key_id in keys:
        raise KeyAlreadyRegistered("the log already holds this key", keyId=key_id)
    folded = name.casefold()
    for key in keys.values():
        if key.valid_at(size) and key.name.casefold() == folded:
            raise NameTaken(f"a valid key is already named {key.name!r}", name=name)


@state_check
def still_new(ledger: OpenedLog, _session: Session, key_id: str, name: str) -> None:
    """Checked again in the append's transaction: another may have taken the name."""
    _check_new(ledger.projections.keyring(), key_id, name, ledger.store.refresh())


def register_key(ledger: OpenedLog, body: bytes, *, admit: Admit) -> Registered:
    """Register the community key that signed ``body`` (a DSSE envelope over a
    ``key.registered.v1`` event naming a challenge issued for it); ``admit`` hears of the key
    once its signature verified.

    Raises:
        BadEnvelope, UnsupportedPayloadType, InvalidRegistration: malformed.
        KeyMismatch, BadSignature: not signed by the key it registers.
        ChallengeUnknown, ChallengeForeign, ChallengeUsed, ChallengeExpired: the challenge.
        KeyAlreadyRegistered, NameTaken: the keyring.
    """
    signed = read_envelope(body, EVENT_PAYLOAD_TYPE)
    event, challenge = _registration(signed)
    check_signature(signed, _public_key(event, signed.signature.keyid))
    challenges = Challenges(ledger.data.store, ledger.data.db)
    # A replayed registration (its challenge used) is refused before it counts against the key.
    challenges.check(challenge, event.keyId, ledger.clock())
    admit(event.keyId)
    store = ledger.store
    with store.snapshot() as conn:
        _check_new(keyring(conn), event.keyId, event.name, store.refresh())
    # Used before the append: a used challenge is never used again, even if the append fails.
    challenges.use(challenge, event.keyId, ledger.clock())
    pending = Pending(
        type="key.registered.v1",
        subject=event.keyId,
        payload=signed.payload,
        envelope=signed.raw,
    )
    check = check_of(still_new, event.keyId, event.name)
    appended = ledger.writer().append_pending([pending], check=check)[0]
    return Registered(event.keyId, event.name, event.role, appended.seq)
