"""The RFC 6962 / RFC 9162 Merkle tree: hashing, incremental growth, proofs and their checks.

The tree over leaves ``D[0:n]`` is ``MTH`` of RFC 9162 §2.1.1: the hash of an empty tree is
``SHA-256()``, of one leaf ``SHA-256(0x00 || leaf)``, and of more ``SHA-256(0x01 || MTH(D[0:k]) ||
MTH(D[k:n]))`` with ``k`` the largest power of two below ``n``. Every left subtree in that
recursion is *perfect* (``2**level`` leaves starting at a multiple of ``2**level``), so a store
keeps exactly the perfect nodes, addressed ``(level, index)``, and any proof needs O(log n) of
them. ``CompactRange`` is the right edge of the tree (at most one perfect node per level): it
grows the tree leaf by leaf and tells the store which perfect nodes each leaf completes.
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable, Sequence

from events.errors import ProofError

__all__ = [
    "EMPTY_ROOT",
    "CompactRange",
    "NodeReader",
    "consistency_proof",
    "inclusion_proof",
    "leaf_hash",
    "node_hash",
    "root_from_leaf_hashes",
    "subtree_hash",
    "verify_consistency",
    "verify_inclusion",
]

_sha256 = hashlib.sha256
EMPTY_ROOT = _sha256(b"").digest()

NodeReader = Callable[[int, int], bytes]
"""``read(level, index)``: the hash of the perfect subtree of ``2**level`` leaves starting at
leaf ``index * 2**level`` (level 0 is the leaf hash itself)."""


def leaf_hash(leaf: bytes) -> bytes:
    """``SHA-256(0x00 || leaf)`` (RFC 9162 §2.1.1)."""
    return _sha256(b"\x00" + leaf).digest()


def node_hash(left: bytes, right: bytes) -> bytes:
    """``SHA-256(0x01 || left || right)`` (RFC 9162 §2.1.1)."""
    return _sha256(b"\x01" + left + right).digest()


def _split(n: int) -> int:
    """The largest power of two strictly below ``n`` (n >= 2)."""
    return 1 << ((n - 1).bit_length() - 1)


def subtree_hash(start: int, end: int, read: NodeReader) -> bytes:
    """``MTH(D[start:end])`` where ``start`` is a multiple of the largest power of two that fits
    (true of every subtree RFC 6962 proofs name), using perfect nodes from ``read``."""
    size = end - start
    if size <= 0:
        return EMPTY_ROOT
    if size & (size - 1) == 0 and start % size == 0:
        return read(size.bit_length() - 1, start // size)
    k = _split(size)
    return node_hash(subtree_hash(start, start + k, read), subtree_hash(start + k, end, read))


def root_from_leaf_hashes(hashes: Sequence[bytes]) -> bytes:
    """The root of a tree given all its leaf hashes (for verification; O(n) hashing)."""
    if not hashes:
        return EMPTY_ROOT
    level = list(hashes)
    # Pair left to right; an odd last node is carried up unchanged. For RFC 6962 trees this
    # gives MTH, because the carried node is always the rightmost, unbalanced subtree.
    while len(level) > 1:
        nxt = [node_hash(level[i], level[i + 1]) for i in range(0, len(level) - 1, 2)]
        if len(level) % 2:
            nxt.append(level[-1])
        level = nxt
    return level[0]


def inclusion_proof(index: int, size: int, read: NodeReader) -> list[bytes]:
    """``PATH(index, D[0:size])`` of RFC 6962 §2.1.1, leaf to root order.

    Raises:
        ProofError: ``index`` is not below ``size``.
    """
    if not 0 <= index < size:
        raise ProofError(f"leaf {index} is not in a tree of size {size}", index=index, size=size)
    proof: list[bytes] = []
    start, end = 0, size
    while end - start > 1:
        k = _split(end - start)
        if index < start + k:
            proof.append(subtree_hash(start + k, end, read))
            end = start + k
        else:
            proof.append(subtree_hash(start, start + k, read))
            start += k
    proof.reverse()
    return proof


def consistency_proof(old: int, new: int, read: NodeReader) -> list[bytes]:
    """``PROOF(old, D[0:new])`` of RFC 6962 §2.1.2.

    Raises:
        ProofError: unless ``0 < old <= new`` (a proof from the empty tree says nothing).
    """
    if not 0 < old <= new:
        raise ProofError(
            f"no consistency proof from size {old} to size {new}", old_size=old, new_size=new
        )
    # SUBPROOF(m, D[start:end], b), unrolled; the outer hash comes last, hence the reverse.
    proof: list[bytes] = []
    start, end, m, complete = 0, new, old, True
    while m != end - start:
        k = _split(end - start)
        if m <= k:
            proof.append(subtree_hash(start + k, end, read))
            end = start + k
        else:
            proof.append(subtree_hash(start, start + k, read))
            start, m, complete = start + k, m - k, False
    if not complete:
        proof.append(subtree_hash(start, end, read))
    proof.reverse()
    return proof


def verify_inclusion(
    index: int, size: int, leaf: bytes, proof: Sequence[bytes], root: bytes
) -> None:
    """Check an inclusion proof (RFC 9162 §2.1.3.2); ``leaf`` is the leaf *hash*.

    Raises:
        ProofError: the proof does not lead from the leaf to ``root``.
    """
    # (1) Sizes and hash lengths first: every hash is exactly 32 bytes.
    if not 0 <= index < size:
        raise ProofError(f"leaf {index} is not in a tree of size {size}")
    if len(leaf) != 32 or len(root) != 32 or any(len(p) != 32 for p in proof):
        raise ProofError("every hash must be 32 bytes")
    # (2) Walk from the leaf, as §2.1.3.2 steps 3-4 describe.
    fn, sn, r = index, size - 1, leaf
    for p in proof:
        if sn == 0:
            raise ProofError("the inclusion proof is longer than the tree is deep")
        if fn & 1 or fn == sn:
            r = node_hash(p, r)
            while not fn & 1 and fn != 0:
                fn >>= 1
                sn >>= 1
        else:
            r = node_hash(r, p)
        fn >>= 1
        sn >>= 1
    # (3) The walk must end at the root, having used the whole tree height.
    if sn != 0:
        raise ProofError("the inclusion proof is shorter than the tree is deep")
    if r != root:
        raise ProofError("the inclusion proof does not lead to the root")


def verify_consistency(
    old: int, new: int, old_root: bytes, new_root: bytes, proof: Sequence[bytes]
) -> None:
    """Check a consistency proof (RFC 9162 §2.1.4.2).

    A proof from size 0 is refused: it says nothing (callers treat the empty tree as trivially
    consistent before asking, as the C2SP witness protocol does).

    Raises:
        ProofError: the proof does not show that the old tree is a prefix of the new one.
    """
    # (1) The sizes the algorithm is defined for; the empty tree proves nothing.
    if old == 0 or old > new:
        raise ProofError(f"no consistency proof from size {old} to size {new}")
    # (2) Equal sizes: an empty proof and equal roots.
    if old == new:
        if proof:
            raise ProofError("a proof between equal sizes must be empty")
        if old_root != new_root:
            raise ProofError("equal sizes with different roots")
        return
    if len(old_root) != 32 or len(new_root) != 32 or any(len(p) != 32 for p in proof):
        raise ProofError("every hash must be 32 bytes")
    if not proof:
        raise ProofError("an empty consistency proof between different sizes")
    # (3) If old is a power of two, the old root is the first node of the path (step 1).
    path = list(proof)
    if old & (old - 1) == 0:
        path.insert(0, old_root)
    # (4) Steps 2-6: strip the common right-aligned part, then walk both roots up.
    fn, sn = old - 1, new - 1
    while fn & 1:
        fn >>= 1
        sn >>= 1
    fr = sr = path[0]
    for c in path[1:]:
        if sn == 0:
            raise ProofError("the consistency proof is too long")
        if fn & 1 or fn == sn:
            fr, sr = node_hash(c, fr), node_hash(c, sr)
            while not fn & 1 and fn != 0:
                fn >>= 1
                sn >>= 1
        else:
            sr = node_hash(sr, c)
        fn >>= 1
        sn >>= 1
    # (5) Both recomputed roots must match, with the whole height used.
    if sn != 0:
        raise ProofError("the consistency proof is too short")
    if fr != old_root:
        raise ProofError("the consistency proof does not lead to the old root")
    if sr != new_root:
        raise ProofError("the consistency proof does not lead to the new root")


class CompactRange:
    """The right edge of a growing tree: one perfect subtree root per set bit of ``size``.

    ``append`` returns the perfect nodes ``(level, index, hash)`` that the new leaf completes,
    level 0 (the leaf) first, for the store to keep.
    """

    __slots__ = ("_edge", "size")

    def __init__(self, size: int = 0, edge: Sequence[bytes] = ()) -> None:
        if len(edge) != size.bit_count():
            raise ProofError(f"a tree of size {size} has {size.bit_count()} edge nodes")
        self.size = size
        # Largest subtree first, as the set bits of size from high to low.
        self._edge = list(edge)

    @classmethod
    def load(cls, size: int, read: NodeReader) -> CompactRange:
        """Rebuild the edge of a stored tree of ``size`` leaves from its perfect nodes."""
        edge, start = [], 0
        for level in range(size.bit_length() - 1, -1, -1):
            if size >> level & 1:
                edge.append(read(level, start >> level))
                start += 1 << level
        return cls(size, edge)

    def copy(self) -> CompactRange:
        """An independent copy (appending to it leaves this one as it is)."""
        return CompactRange(self.size, self._edge)

    def append(self, leaf: bytes) -> list[tuple[int, int, bytes]]:
        """Add one leaf *hash*; return the perfect nodes it completes."""
        index = self.size
        created = [(0, index, leaf)]
        node, level = leaf, 0
        while index >> level & 1:
            node = node_hash(self._edge.pop(), node)
            level += 1
            created.append((level, index >> level, node))
        self._edge.append(node)
        self.size += 1
        return created

    def root(self) -> bytes:
        """MTH of the whole tree."""
        if not self._edge:
            return EMPTY_ROOT
        node = self._edge[-1]
        for left in reversed(self._edge[:-1]):
            node = node_hash(left, node)
        return node
