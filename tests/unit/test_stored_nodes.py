"""The verifier's packed copy of the stored tree nodes (``verifier.tree._StoredNodes``): it
answers what the dict of nodes it replaced answered, in 33 bytes a node."""

from __future__ import annotations

import hashlib

from hypothesis import given
from hypothesis import strategies as st

from verifier.tree import _StoredNodes


def _h(level: int, index: int) -> bytes:
    return hashlib.sha256(f"{level}/{index}".encode()).digest()


@given(
    st.lists(st.tuples(st.integers(0, 20), st.integers(0, 300)), max_size=200, unique=True),
    st.sampled_from([1, 8]),
)
def test_it_answers_as_the_dict_of_nodes_did(keys: list[tuple[int, int]], stride: int) -> None:
    nodes = [(level, index, _h(level, index)) for level, index in keys]
    nodes.append((3, 7, b"short"))  # a node of another length: never equal to a hash
    packed = _StoredNodes(nodes, stride - 1)
    stored = {(level, index): h for level, index, h in nodes if len(h) == 32}
    for level in range(22):
        if level & (stride - 1):
            continue  # a level the check never reads
        for index in range(310):
            assert packed.get(level, index) == stored.get((level, index))


def test_a_million_nodes_take_tens_of_megabytes_not_hundreds() -> None:
    h = bytes(32)
    packed = _StoredNodes(((1, i, h) for i in range(1_000_000)), 0)
    held = sum(len(b) for b in packed.hashes.values()) + sum(len(b) for b in packed.held.values())
    assert held <= 2 * 33 * 1_000_000
    assert packed.get(1, 999_999) == h and packed.get(1, 1_000_000) is None
