"""Checking leaves that another log wrote, before a store takes them in (a mirror).

Store-independent: every adapter of the log port calls ``check_mirrored`` and writes only what
it returns, so all of them refuse the same things.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import NamedTuple

from events.checkpoints import parse_checkpoint_body
from events.entries import StoredEntry, decode_leaf, decode_payload, payload_digest
from events.errors import LogCorrupted, LogError
from events.merkle import CompactRange, leaf_hash
from events.port import SignedCheckpoint

__all__ = ["MirrorCheck", "MirrorRow", "check_mirrored", "check_note_names"]


class MirrorRow(NamedTuple):
    """A leaf ready to store: its entry (payload decoded, digest computed), hash and bytes."""

    entry: StoredEntry
    leaf_hash: bytes
    leaf: bytes


def check_note_names(checkpoint: SignedCheckpoint, origin: str) -> None:
    """The note's own body must name ``origin`` and the checkpoint's size and root: the fields
    travel beside the note, and a store keeps them as what the note signs. (The caller checks
    the note's signature with the log key; ``events`` holds no keys.)

    Raises:
        LogError: the note is not a checkpoint of this log, size and root.
    """
    text = checkpoint.note.split(b"\n\n", 1)[0] + b"\n"
    try:
        body = parse_checkpoint_body(text.decode())
    except (UnicodeDecodeError, LogError):
        raise LogError("the checkpoint note does not hold a checkpoint body") from None
    if (body.origin, body.size, body.root) != (origin, checkpoint.size, checkpoint.root):
        raise LogError(
            f"the checkpoint note signs {body.origin} size {body.size}, not {origin} size "
            f"{checkpoint.size} with the root given"
        )


def check_mirrored(
    edge: CompactRange,
    last_recorded: str,
    start: int,
    leaves: Sequence[bytes],
    stored: Sequence[bytes],
    checkpoint: SignedCheckpoint,
    known: Callable[[Sequence[str]], dict[str, int]],
) -> tuple[list[MirrorRow], CompactRange, list[tuple[int, int, bytes]]]:
    """Check ``leaves`` (positions ``start`` on) against a store whose tree edge is ``edge``,
    whose last recording time is ``last_recorded`` and which holds ``stored``: its leaves from
    ``start`` up to its size; ``known`` finds the payload digests it holds. Returns the new
    rows, the grown edge (a copy) and the perfect subtrees of level 1 and up that they complete
    ``(level, index, hash)``.

    Raises:
        LogError: a gap, a fork (a held leaf differs), a root that is not the checkpoint's at
            its size.
        LogCorrupted: a leaf does not decode, names another position, was recorded before the
            entry that precedes it, or repeats a statement the log holds (same payload digest).
    """
    if start < 0:
        raise LogError(f"leaves start at position {start}: positions are not negative")
    if start > edge.size:
        raise LogError(f"the mirror holds {edge.size} entries: leaves from {start} leave a gap")
    overlap = min(len(leaves), edge.size - start)
    for i in range(overlap):
        if stored[i] != leaves[i]:
            raise LogError(
                f"entry {start + i} differs from the one this log holds: the logs have forked",
                position=start + i,
            )
    check = MirrorCheck(edge, last_recorded, known)
    rows, nodes = check.take(leaves[overlap:])
    return rows, check.finish(checkpoint), nodes


class MirrorCheck:
    """``check_mirrored``'s checks of the new leaves, a piece at a time (a store taking in a
    whole log keeps one piece in memory, not the log): ``take`` each piece in order, after the
    store wrote the pieces before it (``known`` then finds their digests too), then ``finish``
    with the checkpoint the whole must make."""

    def __init__(
        self,
        edge: CompactRange,
        last_recorded: str,
        known: Callable[[Sequence[str]], dict[str, int]],
    ) -> None:
        self.grown = edge.copy()
        self.last_recorded = last_recorded
        self.known = known

    def take(self, leaves: Sequence[bytes]) -> tuple[list[MirrorRow], list[tuple[int, int, bytes]]]:
        """The rows of the next leaves and the tree nodes of level 1 and up they complete.

        Raises:
            LogCorrupted: as ``check_mirrored``.
        """
        grown = self.grown
        last_recorded = self.last_recorded
        rows: list[MirrorRow] = []
        digests: dict[str, int] = {}
        nodes: list[tuple[int, int, bytes]] = []
        for leaf in leaves:
            seq = grown.size
            entry = decode_leaf(leaf, position=seq)
            if entry.seq != seq:
                raise LogCorrupted(
                    f"entry {seq}: the leaf says it is entry {entry.seq}", position=seq
                )
            if entry.recordedAt < last_recorded:
                raise LogCorrupted(
                    f"entry {seq}: recorded before the entry that precedes it", position=seq
                )
            last_recorded = entry.recordedAt
            envelope = entry.envelope
            payload = decode_payload(envelope, position=seq)
            signer = envelope.signatures[0].keyid if envelope.signatures else ""
            digest = payload_digest(payload, envelope.payloadType, signer)
            if digest in digests:
                raise LogCorrupted(
                    f"entry {seq}: the same statement as entry {digests[digest]}", position=seq
                )
            digests[digest] = seq
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
        held = self.known(list(digests)) if digests else {}
        if held:
            digest, seq = min(held.items(), key=lambda item: digests[item[0]])
            raise LogCorrupted(
                f"entry {digests[digest]}: the same statement as entry {seq}",
                position=digests[digest],
            )
        self.last_recorded = last_recorded
        return rows, nodes

    def finish(self, checkpoint: SignedCheckpoint) -> CompactRange:
        """The grown edge, once it is the checkpoint's tree.

        Raises:
            LogError: the leaves taken do not reach the checkpoint's size, or do not make its
            root.
        """
        size = checkpoint.size
        grown = self.grown
        if grown.size != size:
            raise LogError(
                f"the leaves reach size {grown.size}, but the checkpoint is of size {size}"
            )
        if grown.root() != checkpoint.root:
            raise LogError(f"the leaves do not make the checkpoint's root at size {size}")
        return grown
