"""A log read through its C2SP tiles, as ``benchproof audit`` hands it to ``benchproof verify``'s
own checks (``verifier.log.verify_log``): a ``LogReader`` that answers what the verifier
reads, and nothing else."""

from __future__ import annotations

from collections.abc import Iterator, Sequence

from events.errors import LogError
from events.merkle import CompactRange
from events.port import EntryHeader, EntryRow, SignedCheckpoint
from verifier.tiles import LeafStream

__all__ = ["FetchedLog"]


class FetchedLog:
    """A ``LogReader`` over a log read through its tiles, for ``verify_log``: rows stream from the
    entry bundles (each leaf's stored hash is its level-0 tile's hash; no columns stand beside
    the leaf), the tree nodes are those of the hash tiles of level 1 and up (tree levels 8,
    16, …), and the checkpoints are the one fetched and the one remembered.
    ``watched``: the root of the first ``watch`` entries, from the served level-0 hashes (the
    verifier checks them against the leaves)."""

    def __init__(
        self,
        origin: str,
        stream: LeafStream,
        upper: dict[tuple[int, int], bytes],
        checkpoints: Sequence[SignedCheckpoint],
        watch: int | None = None,
    ) -> None:
        self._origin = origin
        self._stream = stream
        self._upper = upper
        self._checkpoints = sorted(checkpoints, key=lambda c: c.size)
        self._watch = watch
        self.watched: bytes | None = None

    @property
    def origin(self) -> str:
        return self._origin

    @property
    def size(self) -> int:
        return self._stream.size

    def refresh(self) -> int:
        return self._stream.size

    def rows(self, start: int = 0, end: int | None = None) -> Iterator[EntryRow]:
        watch = self._watch
        edge = CompactRange() if watch is not None else None
        for bundle in self._stream:
            position = bundle.start
            for leaf, served in zip(bundle.leaves, bundle.hashes, strict=True):
                if edge is not None and watch is not None and position < watch:
                    edge.append(served)
                    if edge.size == watch:
                        self.watched = edge.root()
                yield EntryRow(position, "", "", "", "", served, leaf)
                position += 1

    def nodes(self) -> Iterator[tuple[int, int, bytes]]:
        for (level, index), h in self._upper.items():
            yield level, index, h

    def checkpoints(self) -> Iterator[SignedCheckpoint]:
        return iter(self._checkpoints)

    def latest_checkpoint(self) -> SignedCheckpoint | None:
        return self._checkpoints[-1] if self._checkpoints else None

    # What the verifier does not read: a fetched log answers only the above.
    def _absent(self, what: str) -> LogError:
        return LogError(f"a log read through its tiles does not answer {what}")

    def leaves(self, start: int = 0, end: int | None = None) -> Iterator[tuple[int, bytes]]:
        raise self._absent("leaves")

    def leaf(self, seq: int) -> bytes | None:
        raise self._absent("single leaves")

    def headers(self, start: int = 0, end: int | None = None) -> Iterator[EntryHeader]:
        raise self._absent("headers")

    def headers_at(self, positions: Sequence[int]) -> dict[int, EntryHeader]:
        raise self._absent("headers")

    def read_node(self, level: int, index: int) -> bytes:
        raise self._absent("tree nodes")

    def node_range(self, level: int, start: int, end: int) -> list[bytes]:
        raise self._absent("tree nodes")

    def root(self, size: int | None = None) -> bytes:
        raise self._absent("roots")

    def inclusion_proof(self, index: int, size: int) -> list[bytes]:
        raise self._absent("proofs")

    def consistency_proof(self, old: int, new: int) -> list[bytes]:
        raise self._absent("proofs")

    def checkpoint(self, size: int) -> SignedCheckpoint | None:
        return next((c for c in self._checkpoints if c.size == size), None)

    def checkpoint_at_or_below(self, size: int) -> SignedCheckpoint | None:
        below = [c for c in self._checkpoints if c.size <= size]
        return below[-1] if below else None

    def checkpoint_at_instant(self, instant: str) -> SignedCheckpoint | None:
        raise self._absent("checkpoints by instant")

    def size_at_instant(self, instant: str) -> int:
        raise self._absent("sizes by instant")

    def find(self, digests: Sequence[str]) -> dict[str, int]:
        raise self._absent("payload digests")

    def close(self) -> None:
        pass
