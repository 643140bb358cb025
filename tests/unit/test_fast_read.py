"""The replay's fast reading path gives exactly what the plain decoders give: leaves decoded in
one pass, and run.ingested payloads whose shared manifests are decoded once."""

from __future__ import annotations

import base64

import msgspec
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from events.decoding import decode_event
from events.entries import (
    DIGEST_NAMED,
    EVENT_PAYLOAD_TYPE,
    StoredEntry,
    decode_leaf,
    decode_payload,
    encode_leaf,
    payload_digest,
    read_entry,
)
from events.errors import EventError, LogCorrupted
from events.types import EVENT_DECODER, EVENT_ENCODER, RunIngested
from events.types.runs import RunIngestedWire
from tests.builders import bundle, ingest_event


def _entry(payload: bytes, type_: str = "run.ingested.v1") -> StoredEntry:
    return StoredEntry(7, "2026-11-30T00:00:00Z", type_, "s", EVENT_PAYLOAD_TYPE, payload, "", "k")


def _envelope(payload: bytes, ptype: str = EVENT_PAYLOAD_TYPE) -> bytes:
    body = {
        "payloadType": ptype,
        "payload": base64.b64encode(payload).decode(),
        "signatures": [{"keyid": "ab" * 32, "sig": "c2ln"}],
    }
    return msgspec.json.encode(body)


def test_the_wire_struct_has_the_fields_of_the_event() -> None:
    wire = {f.name: f for f in msgspec.structs.fields(RunIngestedWire)}
    event = {f.name: f for f in msgspec.structs.fields(RunIngested)}
    assert list(wire) == list(event)
    for name, field in event.items():
        assert wire[name].required == field.required, name
        if name != "manifests":
            assert wire[name].type == field.type, name
    assert RunIngestedWire.__struct_config__.tag == RunIngested.__struct_config__.tag


@settings(max_examples=40, deadline=None)
@given(
    group=st.integers(0, 20),
    author=st.integers(0, 5),
    value=st.integers(1, 10**9),
    drop=st.sets(st.sampled_from(["workload", "implementation", "operation"])),
)
def test_a_run_ingested_decodes_as_the_full_decoder_does(
    group: int, author: int, value: int, drop: set[str]
) -> None:
    event = ingest_event(bundle(group=group, author=author, value=value), drop=tuple(drop))
    payload = EVENT_ENCODER.encode(event)
    for _ in range(2):  # the second read takes the shared manifests from the cache
        fast = decode_event(_entry(payload))
        assert fast == EVENT_DECODER.decode(payload) == event
        assert EVENT_ENCODER.encode(fast) == payload


def test_a_bad_run_payload_is_named_as_the_full_decoder_names_it() -> None:
    event = ingest_event(bundle())
    payload = EVENT_ENCODER.encode(event)
    with pytest.raises(EventError, match="missing required field `reason`"):
        decode_event(_entry(payload.replace(b"run.ingested.v1", b"run.retracted.v1")))
    retracted = b'{"type":"run.retracted.v1","runDigest":"sha256:' + b"1" * 64 + b'","reason":"r"}'
    with pytest.raises(EventError, match=r"the entry says run\.ingested\.v1 but the payload is"):
        decode_event(_entry(retracted))
    with pytest.raises(EventError, match="payload is not an event"):
        decode_event(_entry(payload.replace(event.runDigest.encode(), b"sha256:XYZ")))
    with pytest.raises(EventError, match="payload is not an event"):
        decode_event(_entry(payload.replace(b'"manifests":{"run":{', b'"manifests":{"run":[{')))


def test_read_entry_equals_the_two_step_reading() -> None:
    payload = EVENT_ENCODER.encode(ingest_event(bundle()))
    envelope = _envelope(payload)
    leaf = encode_leaf(3, "2026-11-30T00:00:00Z", "run.ingested.v1", "sha256:" + "1" * 64, envelope)
    entry = read_entry(leaf, position=3)
    plain = decode_leaf(leaf, position=3)
    assert entry.payload == decode_payload(plain.envelope, position=3) == payload
    assert (entry.seq, entry.recordedAt, entry.type, entry.subject) == (
        3,
        plain.recordedAt,
        plain.type,
        plain.subject,
    )
    assert entry.signer == "ab" * 32
    assert entry.payload_digest == ""  # a run.ingested row is not named by its digest


def test_read_entry_gives_the_payload_digest_to_the_types_named_by_it() -> None:
    payload = b'{"type":"report.filed.v1"}'
    assert "report.filed.v1" in DIGEST_NAMED
    leaf = encode_leaf(0, "2026-11-30T00:00:00Z", "report.filed.v1", "s", _envelope(payload))
    entry = read_entry(leaf, position=0)
    assert entry.payload_digest == payload_digest(payload, EVENT_PAYLOAD_TYPE, "ab" * 32)


@pytest.mark.parametrize(
    ("leaf", "message"),
    [
        (b'{"seq":0,"recordedAt":"x"}', "malformed leaf"),
        (b"not json", "malformed leaf"),
        (
            encode_leaf(
                0,
                "t",
                "run.ingested.v1",
                "s",
                b'{"payloadType":"p","payload":"cGF5bG9hZA","signatures":[]}',
            ),
            "payload is not base64",
        ),
        (
            encode_leaf(
                0,
                "t",
                "run.ingested.v1",
                "s",
                b'{"payloadType":"p","payload":"cGF5 bG9hZA==","signatures":[]}',
            ),
            "payload is not base64",
        ),
    ],
)
def test_read_entry_names_the_fault(leaf: bytes, message: str) -> None:
    with pytest.raises(LogCorrupted, match=message) as info:
        read_entry(leaf, position=9)
    assert info.value.details["position"] == 9
    assert "entry 9" in str(info.value)


@settings(max_examples=40, deadline=None)
@given(
    group=st.integers(0, 9),
    author=st.integers(0, 3),
    values=st.lists(st.integers(1, 10**9), min_size=2, max_size=4),
    drop=st.sets(st.sampled_from(["workload", "implementation", "operation", "environment"])),
    raw=st.booleans(),
)
def test_a_kernel_run_folds_the_same_with_its_shared_parts_cached(
    group: int, author: int, values: list[int], drop: set[str], raw: bool
) -> None:
    """The ingest fold computes what a kernel run's shared manifests give once per combination
    (``runs._KERNEL_SHARED``, ``runs._FRESH_EVIDENCE``): a cached answer equals a cold one."""
    from projections import runs

    ctx = runs.Context(4, "2026-11-30T00:00:00Z")
    for value in values:
        event = ingest_event(
            bundle(group=group, author=author, value=value, raw_evidence=raw), drop=tuple(drop)
        )
        warm = runs.fold_run(event.runDigest, None, event, ctx)
        runs._KERNEL_SHARED.clear()
        runs._FRESH_EVIDENCE.clear()
        cold = runs.fold_run(event.runDigest, None, event, ctx)
        assert warm == cold
        assert cold is not None and cold.primaryValue == float(value)
        assert set(cold.unresolved) >= drop
