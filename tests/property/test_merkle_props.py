"""For random trees, every inclusion and consistency proof we produce verifies with an
independent verifier written here from RFC 6962 §2.1 (it rebuilds the roots by following the
PATH and SUBPROOF definitions; it shares no code with ``events.merkle``)."""

from __future__ import annotations

import hashlib

from hypothesis import given, settings
from hypothesis import strategies as st

from events.merkle import CompactRange, consistency_proof, inclusion_proof


def _h(data: bytes) -> bytes:
    return hashlib.sha256(data).digest()


def _mth(leaves: list[bytes]) -> bytes:
    if not leaves:
        return _h(b"")
    if len(leaves) == 1:
        return _h(b"\x00" + leaves[0])
    k = 1
    while k * 2 < len(leaves):
        k *= 2
    return _h(b"\x01" + _mth(leaves[:k]) + _mth(leaves[k:]))


def _split(n: int) -> int:
    k = 1
    while k * 2 < n:
        k *= 2
    return k


def _root_from_path(m: int, n: int, leaf: bytes, proof: list[bytes]) -> bytes:
    """Invert PATH(m, D[n]) (RFC 6962 §2.1.1): the last element is the outermost sibling."""
    if n == 1:
        assert not proof
        return leaf
    assert proof
    k, sibling = _split(n), proof[-1]
    if m < k:
        return _h(b"\x01" + _root_from_path(m, k, leaf, proof[:-1]) + sibling)
    return _h(b"\x01" + sibling + _root_from_path(m - k, n - k, leaf, proof[:-1]))


def _roots_from_subproof(
    m: int, n: int, b: bool, proof: list[bytes], old_root: bytes
) -> tuple[bytes, bytes]:
    """Invert SUBPROOF(m, D[n], b) (RFC 6962 §2.1.2) into (old subtree hash, new subtree hash)."""
    if m == n:
        if b:
            assert not proof
            return old_root, old_root
        assert len(proof) == 1
        return proof[0], proof[0]
    assert proof
    k, outer = _split(n), proof[-1]
    if m <= k:
        old, new = _roots_from_subproof(m, k, b, proof[:-1], old_root)
        return old, _h(b"\x01" + new + outer)
    old, new = _roots_from_subproof(m - k, n - k, False, proof[:-1], old_root)
    return _h(b"\x01" + outer + old), _h(b"\x01" + outer + new)


@settings(max_examples=60, deadline=None)
@given(st.lists(st.binary(max_size=8), min_size=1, max_size=80), st.data())
def test_random_trees_and_proofs(leaves: list[bytes], data: st.DataObject) -> None:
    growing, nodes = CompactRange(), {}
    for leaf in leaves:
        for level, index, h in growing.append(_h(b"\x00" + leaf)):
            nodes[level, index] = h

    def read(level: int, index: int) -> bytes:
        return nodes[level, index]

    n = len(leaves)
    assert growing.root() == _mth(leaves)
    size = data.draw(st.integers(1, n))
    root = _mth(leaves[:size])
    for index in range(size):
        proof = inclusion_proof(index, size, read)
        assert _root_from_path(index, size, _h(b"\x00" + leaves[index]), proof) == root
    for old in range(1, size + 1):
        old_root = _mth(leaves[:old])
        proof = consistency_proof(old, size, read)
        assert _roots_from_subproof(old, size, True, proof, old_root) == (old_root, root)
