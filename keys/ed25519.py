"""Ed25519 signing and verifying keys: the one module that touches ``cryptography.hazmat``.

Key ids are the lowercase hex SHA-256 of the raw 32-byte public key (DESIGN §4). Both key types
wrap one ``cryptography`` key object built once, so ``sign`` and ``verify`` are a single call into
``cryptography`` (which releases the GIL) and are safe to share between threads.
"""

from __future__ import annotations

import hashlib

import nacl.bindings
import nacl.signing
from cryptography.exceptions import UnsupportedAlgorithm
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey, Ed25519PublicKey
from nacl.exceptions import BadSignatureError

from keys.errors import KeyringError, VerificationError

__all__ = ["SigningKey", "VerifyingKey", "verify_raw"]

KEY_SIZE = 32
SIGNATURE_SIZE = 64


class VerifyingKey:
    """An Ed25519 public key. Immutable, hashable, compared by its raw 32 bytes."""

    __slots__ = ("_checker", "_key", "_key_id", "_raw")

    _key: Ed25519PublicKey
    _raw: bytes
    _key_id: str
    _checker: nacl.signing.VerifyKey

    def __init__(self) -> None:
        raise TypeError("use VerifyingKey.from_raw() or SigningKey.public")

    @classmethod
    def _wrap(cls, key: Ed25519PublicKey) -> VerifyingKey:
        self = object.__new__(cls)
        self._key = key
        self._raw = key.public_bytes_raw()
        if not nacl.bindings.crypto_core_ed25519_is_valid_point(self._raw):
            # A small-order or non-canonical point: libsodium verifies nothing against it (and
            # OpenSSL accepted forgeries for it), so it is no key.
            raise KeyringError(
                "not a valid Ed25519 public key (a small-order or non-canonical point)"
            )
        self._key_id = hashlib.sha256(self._raw).hexdigest()
        # Signatures are checked by libsodium (PyNaCl): 1.6 to 1.9 times the rate of OpenSSL's
        # Ed25519 here (docs/benchmarks.md, issue 28); keys are made and read by cryptography.
        self._checker = nacl.signing.VerifyKey(self._raw)
        return self

    @classmethod
    def from_raw(cls, raw: bytes) -> VerifyingKey:
        """Return the public key whose RFC 8032 encoding is ``raw``.

        Raises:
            KeyringError: ``raw`` is not exactly 32 bytes.
        """
        if len(raw) != KEY_SIZE:
            raise KeyringError(
                f"an Ed25519 public key is {KEY_SIZE} bytes, got {len(raw)}", size=len(raw)
            )
        try:
            key = Ed25519PublicKey.from_public_bytes(bytes(raw))
        except ValueError:
            raise KeyringError("not a valid Ed25519 public key") from None
        return cls._wrap(key)

    @classmethod
    def from_pem(cls, data: bytes) -> VerifyingKey:
        """Return the key in a PEM ``SubjectPublicKeyInfo`` document.

        Raises:
            KeyringError: ``data`` is not PEM, or holds a key that is not Ed25519.
        """
        try:
            key = serialization.load_pem_public_key(data)
        except (ValueError, TypeError, UnsupportedAlgorithm):
            raise KeyringError("not a PEM SubjectPublicKeyInfo public key") from None
        if not isinstance(key, Ed25519PublicKey):
            raise KeyringError(f"not an Ed25519 public key ({type(key).__name__})")
        return cls._wrap(key)

    def to_pem(self) -> bytes:
        """Return this key as a PEM ``SubjectPublicKeyInfo`` document."""
        return self._key.public_bytes(
            serialization.Encoding.PEM, serialization.PublicFormat.SubjectPublicKeyInfo
        )

    @property
    def raw(self) -> bytes:
        """The 32-byte RFC 8032 encoding of this key."""
        return self._raw

    @property
    def key_id(self) -> str:
        """Lowercase hex SHA-256 of :attr:`raw` (DESIGN §4)."""
        return self._key_id

    def verify(self, signature: bytes, message: bytes) -> None:
        """Return ``None`` when ``signature`` is this key's Ed25519 signature of ``message``.

        Raises:
            VerificationError: the signature does not verify (any length, any content).
        """
        try:
            self._checker.verify(bytes(message), bytes(signature))
        except (BadSignatureError, ValueError):
            # The library's reason adds nothing a caller can act on.
            raise VerificationError(
                "Ed25519 signature does not verify", key_id=self._key_id
            ) from None

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, VerifyingKey):
            return NotImplemented
        return self._raw == other._raw

    def __hash__(self) -> int:
        return hash(self._raw)

    def __repr__(self) -> str:
        return f"VerifyingKey(key_id={self._key_id!r})"


class SigningKey:
    """An Ed25519 private key. Its ``repr`` shows the key id, never the seed."""

    __slots__ = ("_key", "_public")

    _key: Ed25519PrivateKey
    _public: VerifyingKey

    def __init__(self) -> None:
        raise TypeError(
            "use SigningKey.generate(), SigningKey.from_seed() or keys.load_private_key()"
        )

    @classmethod
    def _wrap(cls, key: Ed25519PrivateKey) -> SigningKey:
        self = object.__new__(cls)
        self._key = key
        self._public = VerifyingKey._wrap(key.public_key())
        return self

    @classmethod
    def generate(cls) -> SigningKey:
        """Return a fresh key from the operating system's CSPRNG."""
        return cls._wrap(Ed25519PrivateKey.generate())

    @classmethod
    def from_seed(cls, seed: bytes) -> SigningKey:
        """Return the key whose RFC 8032 32-byte private seed is ``seed``.

        Raises:
            KeyringError: ``seed`` is not exactly 32 bytes.
        """
        if len(seed) != KEY_SIZE:
            raise KeyringError(
                f"an Ed25519 seed is {KEY_SIZE} bytes, got {len(seed)}", size=len(seed)
            )
        return cls._wrap(Ed25519PrivateKey.from_private_bytes(bytes(seed)))

    @classmethod
    def from_pem(cls, data: bytes) -> SigningKey:
        """Return the key in an unencrypted PEM PKCS#8 document.

        Raises:
            KeyringError: ``data`` is not an unencrypted PEM PKCS#8 Ed25519 private key.
        """
        try:
            key = serialization.load_pem_private_key(data, password=None)
        except (ValueError, TypeError, UnsupportedAlgorithm):
            # ``from None``: the parser's message could quote the file's contents.
            raise KeyringError("not an unencrypted PEM PKCS#8 private key") from None
        if not isinstance(key, Ed25519PrivateKey):
            raise KeyringError(f"not an Ed25519 private key ({type(key).__name__})")
        return cls._wrap(key)

    def to_pem(self) -> bytes:
        """Return this key as an unencrypted PEM PKCS#8 document (secret: store it 0600)."""
        return self._key.private_bytes(
            serialization.Encoding.PEM,
            serialization.PrivateFormat.PKCS8,
            serialization.NoEncryption(),
        )

    @property
    def seed(self) -> bytes:
        """The 32-byte private seed (secret)."""
        return self._key.private_bytes_raw()

    @property
    def public(self) -> VerifyingKey:
        """The matching public key."""
        return self._public

    @property
    def key_id(self) -> str:
        """The key id of :attr:`public` (DESIGN §4)."""
        return self._public.key_id

    def sign(self, message: bytes) -> bytes:
        """Return the 64-byte Ed25519 signature of ``message`` (RFC 8032, deterministic)."""
        return self._key.sign(message)

    def __repr__(self) -> str:
        return f"SigningKey(key_id={self._public.key_id!r})"


def verify_raw(public_raw: bytes, signature: bytes, message: bytes) -> None:
    """Return ``None`` when ``signature`` by the raw public key ``public_raw`` signs ``message``.

    Raises:
        KeyringError: ``public_raw`` is not a 32-byte public key.
        VerificationError: the signature does not verify.
    """
    VerifyingKey.from_raw(public_raw).verify(signature, message)
