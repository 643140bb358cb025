"""The index's and the log's signing keys, as the store wants them: a batch signer for DSSE
envelopes (two threads: Ed25519 in ``cryptography`` releases the GIL) and a checkpoint note
signer."""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from concurrent.futures import ThreadPoolExecutor

import msgspec

from events.entries import Pending
from keys import (
    NoteSigner,
    NoteVerifier,
    SigningKey,
    encode_envelope,
    sign_envelope,
    sign_note,
)

__all__ = ["Signers", "envelope_signer"]

_PARALLEL_FROM = 64


class _KeyId(msgspec.Struct):
    keyid: str


class _Sigs(msgspec.Struct):
    signatures: list[_KeyId]


_SIGS = msgspec.json.Decoder(_Sigs)


def envelope_signer(envelope: bytes) -> str:
    """The key id of an envelope's first signature ("" when it has none)."""
    sigs = _SIGS.decode(envelope).signatures
    return sigs[0].keyid if sigs else ""


class Signers:
    """The index key (signs events) and the log key (signs checkpoints as ``origin``)."""

    def __init__(
        self, index: SigningKey, log: SigningKey, origin: str, *, threads: int = 2
    ) -> None:
        self.index = index
        self.log = log
        self.origin = origin
        self.note_signer = NoteSigner(origin, log)
        self._threads = threads
        self._pool = ThreadPoolExecutor(threads, thread_name_prefix="sign") if threads > 1 else None

    @property
    def log_verifier(self) -> NoteVerifier:
        return self.note_signer.verifier

    @property
    def vkey(self) -> str:
        """The log's verifier key, C2SP ``<origin>+<keyhash>+<base64>``."""
        return self.note_signer.vkey

    def sign_chunk(self, items: Sequence[Pending]) -> list[bytes]:
        """DSSE envelopes (JSON bytes) over each pending payload, signed by the index key."""
        key = self.index
        return [encode_envelope(sign_envelope(p.payload_type, p.payload, key)) for p in items]

    def sign_chunks(self, chunks: list[list[Pending]]) -> Iterator[list[bytes]]:
        """DSSE envelopes (JSON bytes) over each pending payload, signed by the index key, chunk
        by chunk in order. Large work is split across the pool's threads and runs ahead of the
        consumer (Ed25519 signing releases the GIL)."""
        if self._pool is None or sum(map(len, chunks)) < _PARALLEL_FROM:
            for chunk in chunks:
                yield self.sign_chunk(chunk)
            return
        halves = []
        for chunk in chunks:
            mid = (len(chunk) + 1) // 2
            halves.append(
                (
                    self._pool.submit(self.sign_chunk, chunk[:mid]),
                    self._pool.submit(self.sign_chunk, chunk[mid:]),
                )
            )
        try:
            for left, right in halves:
                yield left.result() + right.result()
        finally:
            for left, right in halves:
                left.cancel()
                right.cancel()

    def sign_checkpoint(self, body: str) -> bytes:
        """The checkpoint body as a C2SP signed note by the log key."""
        return sign_note(body, [self.note_signer])

    def close(self) -> None:
        if self._pool is not None:
            self._pool.shutdown(wait=False)
