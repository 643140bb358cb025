"""Property tests: the fast canonical encoder equals RFC 8785's reference implementation, and
canonical bytes are stable under key order and re-encoding."""

from __future__ import annotations

import json
import random
from typing import Any

import pytest
import rfc8785
from hypothesis import given, settings
from hypothesis import strategies as st

from events.canonical import canonical_bytes, canonical_json
from events.errors import CanonicalizationError

_MAX = 2**53 - 1
scalars = (
    st.none()
    | st.booleans()
    | st.integers(min_value=-_MAX, max_value=_MAX)
    | st.floats(allow_nan=False, allow_infinity=False)
    | st.text()
)
json_values = st.recursive(
    scalars,
    lambda children: (
        st.lists(children, max_size=6) | st.dictionaries(st.text(), children, max_size=6)
    ),
    max_leaves=40,
)


@settings(max_examples=600)
@given(json_values)
def test_fast_path_equals_reference(value: Any) -> None:
    try:
        want = rfc8785.dumps(value)
    except rfc8785.CanonicalizationError:
        # The reference refuses lone surrogates; so must we.
        with pytest.raises(CanonicalizationError):
            canonical_bytes(value)
        return
    assert canonical_bytes(value) == want


@settings(max_examples=300)
@given(st.floats(allow_nan=False, allow_infinity=False))
def test_every_double_matches_reference(x: float) -> None:
    assert canonical_bytes(x) == rfc8785.dumps(x)


def _shuffled(value: Any, rng: random.Random) -> Any:
    if isinstance(value, dict):
        items = list(value.items())
        rng.shuffle(items)
        return {k: _shuffled(v, rng) for k, v in items}
    if isinstance(value, list):
        return [_shuffled(v, rng) for v in value]
    return value


@settings(max_examples=300)
@given(json_values, st.integers(0, 2**32))
def test_stable_under_key_order_and_reencoding(value: Any, seed: int) -> None:
    try:
        once = canonical_bytes(value)
    except CanonicalizationError:  # lone surrogates are refused, tested above
        return
    assert canonical_bytes(_shuffled(value, random.Random(seed))) == once
    assert canonical_bytes(json.loads(once)) == once


@settings(max_examples=300)
@given(json_values, st.sampled_from([None, 1, 2]))
def test_canonical_json_from_text_equals_reference(value: Any, indent: int | None) -> None:
    try:
        want = rfc8785.dumps(value)
    except rfc8785.CanonicalizationError:
        return
    text = json.dumps(value, indent=indent, ensure_ascii=bool(indent == 2)).encode()
    assert canonical_json(text) == want


@settings(max_examples=100)
@given(
    st.dictionaries(
        st.sampled_from(["apiVersion", "kind", "spec", "metadata", "x"]), json_values, max_size=5
    )
)
def test_canonical_json_of_members(value: dict[str, Any]) -> None:
    chosen = {k: v for k, v in value.items() if k in ("apiVersion", "kind", "spec")}
    try:
        want = rfc8785.dumps(chosen)
    except rfc8785.CanonicalizationError:
        return
    assert (
        canonical_json(json.dumps(value).encode(), members=("apiVersion", "kind", "spec")) == want
    )
