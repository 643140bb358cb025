"""The transparency-dev Merkle vectors: 98 inclusion and 98 consistency probes, every one."""

from __future__ import annotations

import base64
import json
from pathlib import Path
from typing import Any

import pytest

from events.errors import ProofError
from events.merkle import (
    EMPTY_ROOT,
    CompactRange,
    consistency_proof,
    inclusion_proof,
    leaf_hash,
    node_hash,
    verify_consistency,
    verify_inclusion,
)
from tests.corpora import corpus


def _cases(kind: str) -> list[tuple[str, dict[str, Any]]]:
    root = corpus("transparency-test-vectors", "merkle", kind)
    return [
        (str(p.relative_to(root)), json.loads(p.read_text())) for p in sorted(root.rglob("*.json"))
    ]


def _b(text: str | None) -> bytes:
    return base64.b64decode(text or "")


def _proof(case: dict[str, Any]) -> list[bytes]:
    return [_b(h) for h in case["proof"] or []]


def test_vector_counts() -> None:
    assert len(_cases("inclusion")) == 98
    assert len(_cases("consistency")) == 98


@pytest.mark.parametrize("name", [n for n, _ in _cases("inclusion")])
def test_inclusion_vector(name: str) -> None:
    case = dict(_cases("inclusion"))[name]
    args = (case["leafIdx"], case["treeSize"], _b(case["leafHash"]), _proof(case), _b(case["root"]))
    if case["wantErr"]:
        with pytest.raises(ProofError):
            verify_inclusion(*args)
    else:
        verify_inclusion(*args)


@pytest.mark.parametrize("name", [n for n, _ in _cases("consistency")])
def test_consistency_vector(name: str) -> None:
    case = dict(_cases("consistency"))[name]
    args = (case["size1"], case["size2"], _b(case["root1"]), _b(case["root2"]), _proof(case))
    if case["wantErr"]:
        with pytest.raises(ProofError):
            verify_consistency(*args)
    else:
        verify_consistency(*args)


def _kats() -> dict[str, Any]:
    path = corpus("transparency-test-vectors", "kats", "extracted-kats.json")
    return json.loads(Path(path).read_text())  # type: ignore[no-any-return]


def test_hasher_known_answers() -> None:
    kats = _kats()["rfc6962_hasher"]
    assert EMPTY_ROOT.hex() == kats["empty_root_hex"]
    assert leaf_hash(b"").hex() == kats["leaf_hash_of_empty_hex"]
    assert leaf_hash(kats["leaf_hash"]["leaf_ascii"].encode()).hex() == kats["leaf_hash"]["hex"]
    node = kats["node_hash"]
    assert node_hash(node["left_ascii"].encode(), node["right_ascii"].encode()).hex() == node["hex"]


def test_reference_tree_roots_and_our_proofs() -> None:
    tree = _kats()["rfc6962_reference_tree"]
    leaves = [bytes.fromhex(h) for h in tree["leaf_inputs_hex"]]
    roots = [bytes.fromhex(h) for h in tree["root_by_size_hex"]]
    growing, nodes = CompactRange(), {}
    assert growing.root() == roots[0]
    for size, leaf in enumerate(leaves, start=1):
        for level, index, h in growing.append(leaf_hash(leaf)):
            nodes[level, index] = h
        assert growing.root() == roots[size]

    def read(level: int, index: int) -> bytes:
        return nodes[level, index]

    for size in range(1, len(leaves) + 1):
        for index in range(size):
            proof = inclusion_proof(index, size, read)
            verify_inclusion(index, size, leaf_hash(leaves[index]), proof, roots[size])
        for old in range(1, size + 1):
            verify_consistency(
                old, size, roots[old], roots[size], consistency_proof(old, size, read)
            )


def test_impossible_proofs_are_refused() -> None:
    with pytest.raises(ProofError):
        inclusion_proof(3, 3, lambda _l, _i: b"")
    with pytest.raises(ProofError):
        consistency_proof(0, 3, lambda _l, _i: b"")
    with pytest.raises(ProofError):
        consistency_proof(4, 3, lambda _l, _i: b"")
