"""For random trees, every inclusion and consistency proof we produce verifies with the
independent verifier in ``tests/independent.py``, written from RFC 6962 §2.1 (it rebuilds the
roots by following the PATH and SUBPROOF definitions; it shares no code with ``events.merkle``)."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from events.merkle import CompactRange, consistency_proof, inclusion_proof
from tests.independent import h as _h
from tests.independent import mth as _mth
from tests.independent import root_from_path as _root_from_path
from tests.independent import roots_from_subproof as _roots_from_subproof


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
