"""Checking leaves that another log wrote, before a store takes them in (a mirror).

Store-independent: every adapter of the log port calls ``check_mirrored`` and writes only what
it returns, so all of them refuse the same things.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import NamedTuple

from events.entries import StoredEntry, decode_leaf, decode_payload, payload_digest
from events.errors import LogCorrupted, LogError
from events.merkle import CompactRange, leaf_hash

__all__ = ["MirrorRow", "check_mirrored"]


class MirrorRow(NamedTuple):
    """A leaf ready to store: its entry (payload decoded, digest computed), hash and bytes."""

    entry: StoredEntry
    leaf_hash: bytes
    leaf: bytes


def check_mirrored(
    edge: CompactRange,
    last_recorded: str,
    start: int,
    leaves: Sequence[bytes],
    stored: Sequence[bytes],
    root: bytes,
    size: int,
) -> tuple[list[MirrorRow], CompactRange, list[tuple[int, int, bytes]]]:
    """Check ``leaves`` (positions ``start`` on) against a store whose tree edge is ``edge``,
    whose last recording time is ``last_recorded`` and which holds ``stored``: its leaves from
    ``start`` up to its size. Returns the new rows, the grown edge (a copy) and the perfect
    subtrees of level 1 and up that they complete ``(level, index, hash)``.

    Raises:
        LogError: a gap, a fork (a held leaf differs), a root that is not ``root`` at ``size``.
        LogCorrupted: a leaf does not decode, names another position, or was recorded before the
            entry that precedes it.
    """
    if start > edge.size:
        raise LogError(f"the mirror holds {edge.size} entries: leaves from {start} leave a gap")
    overlap = min(len(leaves), edge.size - start)
    for i in range(overlap):
        if stored[i] != leaves[i]:
            raise LogError(
                f"entry {start + i} differs from the one this log holds: the logs have forked",
                position=start + i,
            )
    grown = edge.copy()
    rows: list[MirrorRow] = []
    nodes: list[tuple[int, int, bytes]] = []
    for leaf in leaves[overlap:]:
        seq = grown.size
        entry = decode_leaf(leaf, position=seq)
        if entry.seq != seq:
            raise LogCorrupted(f"entry {seq}: the leaf says it is entry {entry.seq}", position=seq)
        if entry.recordedAt < last_recorded:
            raise LogCorrupted(
                f"entry {seq}: recorded before the entry that precedes it", position=seq
            )
        last_recorded = entry.recordedAt
        envelope = entry.envelope
        payload = decode_payload(envelope, position=seq)
        signer = envelope.signatures[0].keyid if envelope.signatures else ""
        digest = payload_digest(payload, envelope.payloadType, signer)
        stored_entry = StoredEntry(
            seq,
            entry.recordedAt,
            entry.type,
            entry.subject,
            envelope.payloadType,
            payload,
            digest,
            signer,
        )
        lh = leaf_hash(leaf)
        nodes.extend((level, index, h) for level, index, h in grown.append(lh) if level)
        rows.append(MirrorRow(stored_entry, lh, leaf))
    if grown.size != size:
        raise LogError(f"the leaves reach size {grown.size}, but the checkpoint is of size {size}")
    if grown.root() != root:
        raise LogError(f"the leaves do not make the checkpoint's root at size {size}")
    return rows, grown, nodes
