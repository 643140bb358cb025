"""Steps (5) and (6) of ``benchproof verify``: the tree recomputed from the leaves against every
stored tree node and checkpoint, and every checkpoint note against the log key."""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping

from events.checkpoints import parse_checkpoint_body
from events.errors import EventError
from events.keyring import KeyView
from events.merkle import CompactRange, node_hash
from events.port import LogReader, SignedCheckpoint
from keys import KeyringError, NoteVerifier, VerifyingKey, open_note
from verifier.findings import NO_POSITION, VerifyReport

__all__ = ["TreeCheck"]


class _StoredNodes:
    """The stored tree nodes a check reads (those of the levels it checks), packed: each
    level's hashes side by side in one ``bytearray``, by index, and a byte per index saying
    whether the log stores that node. 33 bytes a node, where a dict of tuples to ``bytes`` took
    about 250 (a million-entry log's nodes were 250 MB)."""

    def __init__(self, nodes: Iterable[tuple[int, int, bytes]], stride_mask: int) -> None:
        self.hashes: dict[int, bytearray] = {}
        self.held: dict[int, bytearray] = {}
        for level, index, h in nodes:
            if level & stride_mask or len(h) != 32 or index < 0:
                continue  # never read (a node of another length never matches: missing)
            hashes = self.hashes.setdefault(level, bytearray())
            held = self.held.setdefault(level, bytearray())
            if index >= len(held):
                grow = max(index + 1, 2 * len(held)) - len(held)
                held.extend(bytes(grow))
                hashes.extend(bytes(32 * grow))
            hashes[32 * index : 32 * index + 32] = h
            held[index] = 1

    def get(self, level: int, index: int) -> bytes | None:
        held = self.held.get(level)
        if held is None or index >= len(held) or not held[index]:
            return None
        return bytes(self.hashes[level][32 * index : 32 * index + 32])


class TreeCheck:
    """The log's tree, grown leaf by leaf, checked against what ``log`` stores; ``bad`` hears
    of each thing wrong (position, reason)."""

    def __init__(self, log: LogReader, bad: Callable[[int, str], None], node_stride: int) -> None:
        self.bad = bad
        self.stride_mask = node_stride - 1
        self.size = 0
        self.edge: list[bytes] = []  # the compact range's nodes, largest subtree first
        self.nodes = _StoredNodes(log.nodes(), self.stride_mask)
        self.stored_checkpoints: list[SignedCheckpoint] = list(log.checkpoints())
        self.checkpoint_roots = {c.size: c.root for c in self.stored_checkpoints}
        self.roots: dict[int, bytes] = {}

    def grow(self, lh: bytes) -> None:
        """Append one leaf hash to the compact range (RFC 9162 §2.1.1), checking each perfect
        node it completes against the stored one. Written out here rather than through
        ``CompactRange.append``: this runs once per entry on the thread that holds the GIL."""
        seq = index = self.size
        edge, nodes = self.edge, self.nodes
        node, level = lh, 0
        while index >> level & 1:
            node = node_hash(edge.pop(), node)
            level += 1
            if level & self.stride_mask == 0 and nodes.get(level, index >> level) != node:
                self.bad(
                    seq,
                    f"entry {seq}: stored tree node ({level}, {index >> level}) is wrong or missing",
                )
        edge.append(node)
        self.size = size = index + 1
        if size in self.checkpoint_roots:
            self.roots[size] = self.root()

    def root(self) -> bytes:
        return CompactRange(self.size, self.edge).root()

    def checkpoints(
        self,
        report: VerifyReport,
        origin: str,
        keys: Mapping[str, KeyView],
        publics: Mapping[str, VerifyingKey],
    ) -> None:
        """(6) Every stored checkpoint, against the log's log keys (``keys``, with their public
        keys in ``publics``) named ``origin`` and the roots the tree had at its sizes."""
        report.root = self.root().hex()
        log_keys = [k for k in keys.values() if k.role == "log" and k.name == origin]
        verifiers = [
            NoteVerifier.for_key(origin, publics[k.keyId]) for k in log_keys if k.keyId in publics
        ]
        rows = self.stored_checkpoints
        report.checkpoints = len(rows)
        if not rows:
            self.bad(NO_POSITION, "the log has no checkpoint")
            return
        if not verifiers:
            self.bad(NO_POSITION, f"the log registers no log key named {origin!r}")
            return
        for size, note, stored_root, _ in rows:
            where = min(size, max(report.entries - 1, 0))
            try:
                text = open_note(note, verifiers).text
                body = parse_checkpoint_body(text)
            except (KeyringError, EventError) as exc:
                self.bad(where, f"checkpoint at size {size}: {exc}")
                continue
            if body.origin != origin or body.size != size:
                self.bad(
                    where,
                    f"checkpoint at size {size}: its body names {body.origin} size {body.size}",
                )
            elif size > report.entries:
                self.bad(
                    report.entries,
                    f"entry {report.entries} is missing: the checkpoint at size {size} covers it",
                )
            elif body.root != self.roots.get(size, self.root() if size == report.entries else b""):
                self.bad(
                    where,
                    f"checkpoint at size {size}: its root is not the root of the log's first {size} entries",
                )
            elif stored_root != body.root:
                self.bad(where, f"checkpoint at size {size}: the stored root is not the signed one")
        latest = rows[-1].size
        report.checkpoint_size = latest
        if latest < report.entries:
            self.bad(latest, f"entries from {latest} on are not covered by any checkpoint")
