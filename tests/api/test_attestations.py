"""Attestations over HTTP: a registered community key posts its signed in-toto statement about
a run; the receipt's inclusion proof verifies against its signed checkpoint; the stored envelope
verifies with the attester's public key alone; every refusal is its own problem type and
appends nothing; attestations never change the evidence level."""

from __future__ import annotations

import base64
import json
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import msgspec
import pytest

from events.entries import EVENT_PAYLOAD_TYPE, INTOTO_PAYLOAD_TYPE
from events.merkle import verify_inclusion
from events.types.attestations import ATTESTATION_PREDICATE
from keys import (
    SigningKey,
    decode_envelope,
    encode_envelope,
    open_note,
    sign_envelope,
    verify_envelope,
)
from service.app.attest import KINDS, Predicate, post_attestation
from service.app.replay import replay
from tests.api.test_keys import World, problem, refused, register, world
from verifier.log import verify_log

__all__ = ["world"]  # the fixture, shared with test_keys


def statement(digest: str, predicate: dict[str, Any], **changes: Any) -> dict[str, Any]:
    hex_digest = digest.removeprefix("sha256:")
    body = {
        "_type": "https://in-toto.io/Statement/v1",
        "subject": [{"name": f"/runs/sha256:{hex_digest}", "digest": {"sha256": hex_digest}}],
        "predicateType": ATTESTATION_PREDICATE,
        "predicate": predicate,
    }
    body.update(changes)
    return body


def signed(body: dict[str, Any], key: SigningKey, payload_type: str = INTOTO_PAYLOAD_TYPE) -> bytes:
    return encode_envelope(sign_envelope(payload_type, msgspec.json.encode(body), key))


def path(digest: str) -> str:
    return f"/v1/runs/{digest}/attestations"


@pytest.fixture
def attester(world: World) -> SigningKey:
    key = SigningKey.generate()
    register(world, key, "attester")
    return key


def test_attest_then_the_same_again(world: World, attester: SigningKey) -> None:
    run = world.runs[0]
    body = signed(statement(run, {"kind": "reproduced", "value": 101, "unit": "ns"}), attester)
    before = world.size()
    r = world.client.post(path(run[7:19]), content=body)  # by short id
    assert r.status_code == 201, r.text
    receipt = r.json()
    assert receipt["index"] == before and world.size() == before + 1
    again = world.client.post(path(run), content=body)
    assert again.status_code == 200, again.text
    assert again.json()["id"] == receipt["id"] and again.json()["index"] == receipt["index"]
    assert world.size() == before + 1

    # The inclusion proof leads from the leaf to the root the log key signed.
    note = open_note(receipt["checkpoint"].encode(), [world.ledger.signers.log_verifier])
    _origin, size, root = note.text.split("\n")[:3]
    proof = receipt["inclusionProof"]
    assert (proof["index"], proof["treeSize"]) == (receipt["index"], int(size))
    leaf = base64.b64decode(receipt["leafHash"])
    hashes = [base64.b64decode(h) for h in proof["hashes"]]
    verify_inclusion(receipt["index"], int(size), leaf, hashes, base64.b64decode(root))

    # The stored envelope verifies with the attester's public key and nothing else.
    shown = world.client.get(f"/v1/attestations/{receipt['id']}").json()
    envelope = decode_envelope(json.dumps(shown["envelope"]).encode())
    payload = verify_envelope(envelope, {attester.key_id: attester.public}.get)
    assert payload == base64.b64decode(msgspec.json.decode(body)["payload"])
    assert shown["attestation"]["attester"] == attester.key_id
    assert shown["attestation"]["predicate"] == {"kind": "reproduced", "value": 101, "unit": "ns"}

    assert verify_log(world.ledger.store).ok
    assert replay(world.ledger).ok


def test_attestations_never_change_the_evidence_level(world: World, attester: SigningKey) -> None:
    run = world.runs[0]
    level = world.client.get(f"/v1/runs/{run}").json()["evidenceLevel"]
    assert level == "reproducible"
    for kind in KINDS:
        body = signed(statement(run, {"kind": kind, "note": f"{kind} on a B200"}), attester)
        assert world.client.post(path(run), content=body).status_code == 201
        dossier = world.client.get(f"/v1/runs/{run}").json()
        assert dossier["evidenceLevel"] == level, kind
    assert [a["predicate"]["kind"] for a in dossier["attestations"]] == list(KINDS)
    assert verify_log(world.ledger.store).ok
    assert replay(world.ledger).ok


def test_list_by_subject_kind_and_attester_in_pages(world: World, attester: SigningKey) -> None:
    other = SigningKey.generate()
    register(world, other, "other")
    posts = [
        (world.runs[0], "reproduced", attester),
        (world.runs[1], "reproduced", attester),
        (world.runs[0], "environment-note", other),
    ]
    for run, kind, key in posts:
        r = world.client.post(path(run), content=signed(statement(run, {"kind": kind}), key))
        assert r.status_code == 201, r.text

    def listed(query: str) -> list[tuple[str, str, str]]:
        items = world.client.get(f"/v1/attestations?{query}").json()["items"]
        return [(a["runDigest"], a["predicate"]["kind"], a["attester"]) for a in items]

    every = [(run, kind, key.key_id) for run, kind, key in posts]
    assert listed("") == every
    assert listed(f"subject={world.runs[0]}") == [every[0], every[2]]
    assert listed("kind=reproduced") == every[:2]
    assert listed(f"attester={other.key_id}") == [every[2]]
    first = world.client.get("/v1/attestations?limit=2").json()
    assert len(first["items"]) == 2 and first["next"] is not None
    rest = world.client.get(f"/v1/attestations?limit=2&after={first['next']}").json()
    assert [a["id"] for a in first["items"] + rest["items"]] == [
        a["id"] for a in world.client.get("/v1/attestations").json()["items"]
    ]
    assert rest["next"] is None
    problem(world.client.get("/v1/attestations?after=abc"), 400, "bad-request")
    problem(world.client.get("/v1/attestations/sha256:" + "0" * 64), 404, "unknown-attestation")


def test_signer_refusals(world: World, attester: SigningKey) -> None:
    run = world.runs[0]
    body = statement(run, {"kind": "reproduced"})
    tampered = msgspec.json.decode(signed(body, attester))
    tampered["signatures"][0]["sig"] = base64.b64encode(attester.sign(b"other")).decode()
    other = SigningKey.generate()
    register(world, other, "other")
    claimed = msgspec.json.decode(signed(body, attester))
    claimed["signatures"][0]["keyid"] = other.key_id  # names another registered key
    enc = msgspec.json.encode
    refused(world, path(run), enc(tampered), 403, "bad-signature")
    refused(world, path(run), enc(claimed), 403, "bad-signature")
    refused(world, path(run), signed(body, SigningKey.generate()), 403, "unknown-attester")
    index_key = world.ledger.signers.index
    refused(world, path(run), signed(body, index_key), 403, "role-may-not-attest")


def test_subject_refusals(world: World, attester: SigningKey) -> None:
    run, other = world.runs
    nowhere = "sha256:" + "ab" * 32
    refused(
        world,
        path(run),
        signed(statement(nowhere, {"kind": "reproduced"}), attester),
        422,
        "unknown-subject",
    )
    refused(
        world,
        path(run),
        signed(statement(other, {"kind": "reproduced"}), attester),
        422,
        "subject-mismatch",
    )
    body = signed(statement(run, {"kind": "reproduced"}), attester)
    refused(world, path("sha256:" + "0" * 64), body, 404, "unknown-run")


def test_malformed_statements_are_400(world: World, attester: SigningKey) -> None:
    run = world.runs[0]
    ok = {"kind": "reproduced"}
    long_note = "é" * 2049  # 4098 bytes of UTF-8, 2049 characters
    cases = [
        (statement(run, ok, _type="https://in-toto.io/Statement/v0.1"), "invalid-statement"),
        (statement(run, ok, predicateType="https://example.com/other"), "unsupported-predicate"),
        (statement(run, {**ok, "score": 1}), "invalid-statement"),
        ({**statement(run, ok), "extra": 1}, "invalid-statement"),
        (statement(run, {"kind": "liked"}), "invalid-statement"),
        (statement(run, {**ok, "value": None}), "invalid-statement"),
        (statement(run, {**ok, "note": long_note}), "invalid-statement"),
        (statement(run, {**ok, "evidenceUrls": ["http://example.com/log"]}), "invalid-statement"),
        (statement(run, {**ok, "evidenceUrls": ["https:///nohost"]}), "invalid-statement"),
        (statement(run, ok, subject=[]), "invalid-statement"),
    ]
    renamed = statement(run, ok)
    renamed["subject"][0]["name"] = "run"
    cases.append((renamed, "invalid-statement"))
    for body, kind in cases:
        refused(world, path(run), signed(body, attester), 400, kind)
    event_type = signed(statement(run, ok), attester, EVENT_PAYLOAD_TYPE)
    refused(world, path(run), event_type, 400, "unsupported-payload-type")
    extra = {**msgspec.json.decode(signed(statement(run, ok), attester)), "extra": True}
    refused(world, path(run), msgspec.json.encode(extra), 400, "bad-envelope")
    # A note of exactly 4096 bytes is fine.
    fits = signed(statement(run, {**ok, "note": "é" * 2048}), attester)
    assert world.client.post(path(run), content=fits).status_code == 201


def test_predicate_schema_is_served_and_matches_the_server(world: World) -> None:
    r = world.client.get("/schemas/attestation/v1")
    assert r.status_code == 200
    assert r.headers["content-type"].startswith("application/schema+json")
    schema = r.json()
    assert schema["additionalProperties"] is False
    assert schema["required"] == ["kind"]
    assert schema["properties"]["kind"]["enum"] == list(KINDS)
    assert set(schema["properties"]) == set(Predicate.__struct_fields__)


def test_concurrent_posts_each_land_once(world: World, attester: SigningKey) -> None:
    """Posts from many threads at once (group commit) each append one entry; none blocks."""
    run = world.runs[0]
    bodies = [
        signed(statement(run, {"kind": "environment-note", "note": f"n{i}"}), attester)
        for i in range(12)
    ]
    before = world.size()
    with ThreadPoolExecutor(6) as pool:
        postings = list(
            pool.map(
                lambda b: post_attestation(world.ledger, run, b, admit=lambda _: None), bodies * 2
            )
        )
    assert world.size() == before + 12
    assert sum(p.new for p in postings) == 12
    assert len({p.posted.index for p in postings}) == 12
    assert verify_log(world.ledger.store).ok
