"""For random append sequences on a real store, every inclusion and consistency proof verifies
with the independent verifier in ``tests/independent.py``."""

from __future__ import annotations

import tempfile
from pathlib import Path

from hypothesis import given, settings
from hypothesis import strategies as st

from events.types import ReportFiled
from service.core.init import init_data_dir
from tests.independent import h, mth, root_from_path, roots_from_subproof

RUN = "sha256:" + "12" * 32


@settings(max_examples=12, deadline=None)
@given(st.lists(st.integers(min_value=1, max_value=9), min_size=1, max_size=6), st.data())
def test_proofs_from_random_append_sequences(batches: list[int], data: st.DataObject) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        ledger, _ = init_data_dir(Path(tmp) / "d")
        try:
            n = 0
            sizes = [ledger.store.size]
            for count in batches:
                ledger.append(
                    [
                        (ReportFiled(runDigest=RUN, category="p", text=f"{n + i}"), RUN)
                        for i in range(count)
                    ]
                )
                n += count
                sizes.append(ledger.store.size)
            leaves = [leaf for _, leaf in ledger.store.leaves()]
            size = data.draw(st.sampled_from(sizes))
            root = mth(leaves[:size])
            assert ledger.store.root(size) == root
            for index in range(size):
                proof = ledger.store.inclusion_proof(index, size)
                assert root_from_path(index, size, h(b"\x00" + leaves[index]), proof) == root
            for old in sizes:
                if 0 < old <= size:
                    proof = ledger.store.consistency_proof(old, size)
                    old_root = mth(leaves[:old])
                    assert roots_from_subproof(old, size, True, proof, old_root) == (old_root, root)
        finally:
            ledger.close()
