"""Digests ignore metadata and key order; they change with the spec."""

from __future__ import annotations

import copy
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from events import check_manifest

_labels = st.dictionaries(
    st.from_regex(r"[a-z][a-z0-9_]{0,8}", fullmatch=True), st.text(max_size=20), max_size=4
)
_names = st.from_regex(r"[a-z0-9][a-z0-9._-]{0,30}", fullmatch=True)


@settings(max_examples=150)
@given(_names, st.text(max_size=50), _labels)
def test_metadata_never_enters_the_digest(
    seed_manifest: dict[str, Any], name: str, title: str, labels: dict[str, str]
) -> None:
    run = seed_manifest["run"]
    base = check_manifest(run, source="seed").digest
    changed = {**run, "metadata": {"name": name, "title": title, "labels": labels}}
    assert check_manifest(changed, source="seed").digest == base


@settings(max_examples=100)
@given(st.permutations(["kind", "spec", "metadata", "apiVersion"]))
def test_key_order_does_not_matter(seed_manifest: dict[str, Any], order: list[str]) -> None:
    run = seed_manifest["run"]
    reordered = {k: copy.deepcopy(run[k]) for k in order}
    reordered["spec"] = dict(reversed(list(reordered["spec"].items())))
    assert check_manifest(reordered, source="s").digest == check_manifest(run, source="s").digest


@settings(max_examples=100)
@given(st.integers(min_value=0, max_value=2**53 - 1))
def test_the_spec_changes_the_digest(seed_manifest: dict[str, Any], mean: int) -> None:
    run = seed_manifest["run"]
    timing = run["spec"]["timing"]
    changed = {**run, "spec": {**run["spec"], "timing": {**timing, "latencyNs": {"mean": mean}}}}
    same = mean == timing["latencyNs"]["mean"]
    assert (
        check_manifest(changed, source="s").digest == check_manifest(run, source="s").digest
    ) == same
