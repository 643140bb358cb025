"""Who said it: Ed25519 keys and key ids, DSSE envelopes, C2SP signed notes, key files.

The only package that touches ``cryptography.hazmat``. Imports nothing else of ours."""

from keys.dsse import (
    Envelope,
    Signature,
    decode_envelope,
    encode_envelope,
    pae,
    sign_envelope,
    verify_envelope,
)
from keys.ed25519 import SigningKey, VerifyingKey, verify_raw
from keys.errors import (
    KeyFileError,
    KeyringError,
    MalformedEnvelope,
    MalformedNote,
    UnknownKey,
    VerificationError,
)
from keys.files import (
    generate_key_file,
    load_private_key,
    load_public_key,
    write_private_key,
    write_public_key,
)
from keys.notekeys import (
    NoteSigner,
    NoteVerifier,
    note_key_hash,
    parse_skey,
    parse_vkey,
    vkey,
)
from keys.notes import MAX_SIGNATURES, VerifiedNote, open_note, sign_note

__all__ = [
    "MAX_SIGNATURES",
    "Envelope",
    "KeyFileError",
    "KeyringError",
    "MalformedEnvelope",
    "MalformedNote",
    "NoteSigner",
    "NoteVerifier",
    "Signature",
    "SigningKey",
    "UnknownKey",
    "VerificationError",
    "VerifiedNote",
    "VerifyingKey",
    "decode_envelope",
    "encode_envelope",
    "generate_key_file",
    "load_private_key",
    "load_public_key",
    "note_key_hash",
    "open_note",
    "pae",
    "parse_skey",
    "parse_vkey",
    "sign_envelope",
    "sign_note",
    "verify_envelope",
    "verify_raw",
    "vkey",
    "write_private_key",
    "write_public_key",
]
