"""DSSE v1 envelopes: sign and verify ``PAE(payloadType, payload)`` with Ed25519 keys.

Spec: secure-systems-lab/dsse ``protocol.md`` (signature definition, protocol, multi-signature
verification) and ``envelope.md`` (the JSON shape). Key ids are ours (DESIGN §4).
"""

from __future__ import annotations

from collections.abc import Callable

import msgspec

from keys._base64 import b64decode, b64encode
from keys.ed25519 import SigningKey, VerifyingKey
from keys.errors import MalformedEnvelope, UnknownKey, VerificationError

__all__ = [
    "Envelope",
    "Signature",
    "decode_envelope",
    "encode_envelope",
    "pae",
    "sign_envelope",
    "verify_envelope",
]


class Signature(msgspec.Struct, frozen=True):
    """One DSSE signature: our key id and the standard-base64 Ed25519 signature over the PAE."""

    keyid: str
    sig: str


class Envelope(msgspec.Struct, frozen=True):
    """A DSSE envelope (``envelope.md``). ``payload`` is standard base64 of the payload bytes."""

    payloadType: str
    payload: str
    signatures: list[Signature]


_decoder = msgspec.json.Decoder(Envelope)
_encoder = msgspec.json.Encoder()
_URLSAFE_TO_STANDARD = str.maketrans("-_", "+/")


def pae(payload_type: str, payload: bytes) -> bytes:
    """Return the DSSE v1 Pre-Authentication Encoding of ``payload_type`` and ``payload``.

    ``b"DSSEv1 " + LEN(type) + b" " + type + b" " + LEN(payload) + b" " + payload``, with the
    lengths in ASCII decimal of the byte lengths (``protocol.md``, "Signature Definition").
    Raises nothing.
    """
    type_bytes = payload_type.encode()
    return b"DSSEv1 %d %b %d %b" % (len(type_bytes), type_bytes, len(payload), payload)


def _b64decode(text: str) -> bytes:
    """Strictly decode canonical standard base64, or URL-safe base64 (``protocol.md``: verifiers
    MUST accept either); padding is required and the two alphabets may not be mixed.

    Raises ``ValueError`` (the caller names the field).
    """
    try:
        return b64decode(text)
    except ValueError:
        if ("-" in text or "_" in text) and not ("+" in text or "/" in text):
            return b64decode(text.translate(_URLSAFE_TO_STANDARD))
        raise


def sign_envelope(payload_type: str, payload: bytes, key: SigningKey) -> Envelope:
    """Return an envelope holding ``payload`` with one signature by ``key`` over the PAE.

    The signature's ``keyid`` is ``key.key_id``. Raises nothing.
    """
    return Envelope(
        payloadType=payload_type,
        payload=b64encode(payload),
        signatures=[
            Signature(keyid=key.key_id, sig=b64encode(key.sign(pae(payload_type, payload))))
        ],
    )


def verify_envelope(envelope: Envelope, resolve: Callable[[str], VerifyingKey | None]) -> bytes:
    """Verify ``envelope`` and return its payload bytes.

    ``resolve`` maps a keyid to the trusted key, or ``None`` when the keyid is unknown. Signatures
    by unknown keys are ignored; every signature by a known key must verify, and at least one
    must. The caller **must** still check that ``envelope.payloadType`` is one it expects before
    parsing the payload (``protocol.md``, "Protocol": "Reject if PAYLOAD_TYPE is not a supported
    type").

    Raises:
        MalformedEnvelope: the payload or a signature is not valid base64.
        UnknownKey: no signature is by a known key (including an empty signature list).
        VerificationError: a signature by a known key does not verify.
    """
    # (1) Decode the payload ("Protocol", to verify: "Reject if decoding fails").
    try:
        payload = _b64decode(envelope.payload)
    except ValueError:
        raise MalformedEnvelope("DSSE: payload is not valid base64", field="payload") from None
    # (2) An unsigned envelope proves nothing.
    signatures = envelope.signatures
    if not signatures:
        raise UnknownKey("DSSE: the envelope has no signatures")
    # (3) Check each signature against PAE(UTF8(PAYLOAD_TYPE), SERIALIZED_BODY) ("Signature
    # Definition"). The keyid only selects the key ("KEYID ... MUST NOT be used for security
    # decisions"); the key itself comes from the caller's trusted ``resolve``.
    # Deliberately stricter than "Multi-signature Verification", which skips a failing
    # signature: a known key's signature that fails means tampering or a bug, so we reject.
    message = pae(envelope.payloadType, payload)
    verified = 0
    for index, signature in enumerate(signatures):
        try:
            raw_sig = _b64decode(signature.sig)
        except ValueError:
            raise MalformedEnvelope(
                f"DSSE: signatures[{index}].sig is not valid base64", index=index
            ) from None
        key = resolve(signature.keyid)
        if key is None:
            continue
        try:
            key.verify(raw_sig, message)
        except VerificationError:
            raise VerificationError(
                "DSSE: invalid signature", key_id=signature.keyid, index=index
            ) from None
        verified += 1
    # (4) At least one known key must have signed.
    if not verified:
        raise UnknownKey(
            "DSSE: no signature is by a known key",
            keyids=[signature.keyid for signature in signatures],
        )
    return payload


def decode_envelope(data: bytes) -> Envelope:
    """Return the envelope encoded as JSON in ``data`` (``envelope.md``).

    Unknown fields are ignored. Base64 fields are checked by :func:`verify_envelope`, not here.

    Raises:
        MalformedEnvelope: ``data`` is not JSON of the envelope's shape.
    """
    try:
        return _decoder.decode(data)
    except msgspec.DecodeError as exc:
        raise MalformedEnvelope(f"DSSE: malformed envelope: {exc}") from exc


def encode_envelope(envelope: Envelope) -> bytes:
    """Return ``envelope`` as compact JSON bytes with the DSSE wire field names. Raises nothing."""
    return _encoder.encode(envelope)
