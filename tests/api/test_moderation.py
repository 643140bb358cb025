"""Key management and moderation over HTTP: keys listed with what the log knows of them, revoked
by themselves or an operator, granted the rerunner role; attestations withdrawn by their
attester or hidden by an operator; reports resolved or dismissed. Nothing is deleted; every
refusal is its own problem type and appends nothing; the log still verifies and replays."""

from __future__ import annotations

from typing import Any

import pytest

from events.types import AttestationWithdrawn, KeyRevoked
from keys import SigningKey
from service.app.attest import UnknownAttester, post_attestation
from service.app.keyadmin import revoke_by_operator
from service.app.replay import replay
from service.commands.keys import signed_event
from service.web.auth import TokenStore
from tests.api.test_attestations import path, signed, statement
from tests.api.test_keys import World, problem, register, world
from verifier.log import verify_log

__all__ = ["world"]  # the fixture, shared with test_keys


@pytest.fixture
def token(world: World) -> str:
    return TokenStore(world.ledger.data.tokens).create("moderator")


@pytest.fixture
def attester(world: World) -> SigningKey:
    key = SigningKey.generate()
    register(world, key, "attester")
    return key


def bearer(token: str) -> dict[str, str]:
    return {"authorization": f"Bearer {token}"}


def attest(world: World, key: SigningKey, run: str, kind: str = "reproduced") -> str:
    r = world.client.post(path(run), content=signed(statement(run, {"kind": kind}), key))
    assert r.status_code == 201, r.text
    attestation_id: str = r.json()["id"]
    return attestation_id


def post(world: World, url: str, status: int, kind: str | None = None, **kw: Any) -> Any:
    """POST ``url``: ``status`` and, for a refusal, the problem ``kind`` with the log unchanged;
    a 201 appends exactly one entry."""
    before = world.size()
    r = world.client.post(url, **kw)
    if kind is not None:
        problem(r, status, kind)
        assert world.size() == before
        return r.json()
    assert r.status_code == status, r.text
    assert world.size() == before + 1 and r.json()["index"] == before
    return r.json()


def check_log(world: World) -> None:
    assert verify_log(world.ledger.store).ok
    assert replay(world.ledger).ok


def test_keys_are_listed_with_what_they_did(world: World, attester: SigningKey) -> None:
    attest(world, attester, world.runs[0])
    attest(world, attester, world.runs[1])
    shown = world.client.get(f"/v1/keys/{attester.key_id}").json()
    assert shown["role"] == "community" and shown["name"] == "attester"
    assert shown["nameSelfChosen"] is True and shown["attestations"] == 2
    assert shown["entries"] == 3  # its registration and two attestations
    assert shown["links"] == {
        "entries": f"/v1/keys/{attester.key_id}/entries",
        "attestations": f"/v1/attestations?attester={attester.key_id}",
    }
    assert shown["registered"]["recordedAt"].startswith("2026-03-01T12:00:00")
    assert "revoked" not in shown and "rotated" not in shown
    listed = world.client.get(world.client.get(shown["links"]["attestations"]).url).json()
    assert len(listed["items"]) == 2

    keys = world.client.get("/v1/keys").json()["items"]
    assert [k["role"] for k in keys] == ["index", "log", "community"]
    assert keys[0]["nameSelfChosen"] is False and keys[0]["registered"]["index"] == 0
    assert keys[2] == shown
    page = world.client.get("/v1/keys?limit=1").json()
    assert len(page["items"]) == 1 and page["next"] == "0"
    rest = world.client.get(f"/v1/keys?after={page['next']}").json()
    assert [k["role"] for k in rest["items"]] == ["log", "community"] and rest["next"] is None
    problem(world.client.get("/v1/keys/" + "0" * 64), 404, "unknown-key-id")
    problem(world.client.get("/v1/keys?after=x"), 400, "bad-request")


def test_every_entry_a_key_signed_is_counted_and_listed(
    world: World, attester: SigningKey, token: str
) -> None:
    first = attest(world, attester, world.runs[0])
    attest(world, attester, world.runs[1], kind="environment-note")
    withdrawal = signed_event(AttestationWithdrawn(attestationId=first, reason="wrong"), attester)
    post(world, f"/v1/attestations/{first}/withdrawal", 201, content=withdrawal)
    post(
        world,
        f"/v1/attestations/{first}/hidden",
        201,
        json={"reason": "spam"},
        headers=bearer(token),
    )
    listed = world.client.get(f"/v1/keys/{attester.key_id}/entries").json()
    assert listed["keyId"] == attester.key_id and listed["next"] is None
    assert [e["type"] for e in listed["items"]] == [
        "key.registered.v1",
        "attestation.posted.v1",
        "attestation.posted.v1",
        "attestation.withdrawn.v1",
    ]
    assert [e["subject"] for e in listed["items"][1:3]] == world.runs
    assert world.client.get(f"/v1/keys/{attester.key_id}").json()["entries"] == 4
    # The hiding is the index's: every other entry of the log is the index key's or the
    # attester's.
    keys = {k["role"]: k for k in world.client.get("/v1/keys").json()["items"]}
    assert keys["index"]["entries"] + keys["community"]["entries"] == world.size()
    assert keys["log"]["entries"] == 0  # the log key signs checkpoints, never an entry
    page = world.client.get(f"/v1/keys/{attester.key_id}/entries?limit=3").json()
    assert len(page["items"]) == 3 and page["next"] == str(page["items"][-1]["index"])
    rest = world.client.get(f"/v1/keys/{attester.key_id}/entries?after={page['next']}").json()
    assert [e["type"] for e in rest["items"]] == ["attestation.withdrawn.v1"]
    problem(world.client.get("/v1/keys/" + "0" * 64 + "/entries"), 404, "unknown-key-id")
    for after in ("x", "9" * 30, "²"):  # not a position, too large, not ASCII digits
        url = f"/v1/keys/{attester.key_id}/entries?after={after}"
        problem(world.client.get(url), 400, "bad-request")
    check_log(world)


def test_a_key_revokes_itself_and_then_cannot_attest(world: World, attester: SigningKey) -> None:
    url = f"/v1/keys/{attester.key_id}/revocation"
    other = SigningKey.generate()
    register(world, other, "other")
    event = KeyRevoked(keyId=attester.key_id, reason="lost the laptop")
    post(world, url, 403, "key-mismatch", content=signed_event(event, other))
    forged = signed_event(event, attester).replace(b'"sig":"', b'"sig":"AAAA', 1)
    post(world, url, 403, "bad-signature", content=forged)
    post(
        world,
        url,
        403,
        "key-mismatch",
        content=signed_event(event, attester).replace(
            attester.key_id.encode(), other.key_id.encode()
        ),
    )
    post(
        world,
        f"/v1/keys/{other.key_id}/revocation",
        403,
        "key-mismatch",
        content=signed_event(event, attester),
    )
    recorded = post(world, url, 201, content=signed_event(event, attester))
    shown = world.client.get(f"/v1/keys/{attester.key_id}").json()
    assert shown["revoked"]["index"] == recorded["index"]
    assert shown["revoked"]["reason"] == "lost the laptop"
    post(world, url, 409, "key-not-valid", content=signed_event(event, attester))
    run = world.runs[0]
    body = signed(statement(run, {"kind": "reproduced"}), attester)
    post(world, path(run), 403, "unknown-attester", content=body)
    check_log(world)


def test_an_operator_revokes_a_key(world: World, attester: SigningKey, token: str) -> None:
    url = f"/v1/keys/{attester.key_id}/revocation"
    post(world, url, 401, "unauthorized", json={"reason": "spam"}, headers=bearer("bp_nope"))
    post(world, url, 400, "bad-envelope", json={"reason": "spam"})  # no token: its own envelope
    post(world, url, 400, "bad-request", json={"why": "spam"}, headers=bearer(token))
    index_key = world.ledger.signers.index.key_id
    post(
        world,
        f"/v1/keys/{index_key}/revocation",
        403,
        "protected-key",
        json={"reason": "x"},
        headers=bearer(token),
    )
    post(
        world,
        "/v1/keys/" + "1" * 64 + "/revocation",
        404,
        "unknown-key-id",
        json={"reason": "x"},
        headers=bearer(token),
    )
    post(world, url, 201, json={"reason": "spam"}, headers=bearer(token))
    assert world.client.get(f"/v1/keys/{attester.key_id}").json()["revoked"]["reason"] == "spam"
    check_log(world)


def test_a_revoked_key_is_refused_at_the_position_the_entry_takes(
    world: World, attester: SigningKey
) -> None:
    """The key is valid when the attestation is checked, revoked before it is appended: the
    check inside the append's transaction refuses it."""
    run = world.runs[0]
    body = signed(statement(run, {"kind": "reproduced"}), attester)
    before = world.size()

    def revoke_meanwhile(_: str) -> None:
        revoke_by_operator(world.ledger, attester.key_id, b'{"reason": "compromised"}')

    with pytest.raises(UnknownAttester):
        post_attestation(world.ledger, run, body, admit=revoke_meanwhile)
    assert world.size() == before + 1  # the revocation only
    check_log(world)


def test_an_operator_grants_the_rerunner_role(
    world: World, attester: SigningKey, token: str
) -> None:
    url = f"/v1/keys/{attester.key_id}/grants"
    post(world, url, 401, "unauthorized", json={"role": "rerunner"})
    post(world, url, 400, "bad-request", json={"role": "index"}, headers=bearer(token))
    post(
        world,
        "/v1/keys/" + "2" * 64 + "/grants",
        404,
        "unknown-key-id",
        json={"role": "rerunner"},
        headers=bearer(token),
    )
    post(world, url, 201, json={"role": "rerunner"}, headers=bearer(token))
    shown = world.client.get(f"/v1/keys/{attester.key_id}").json()
    assert shown["role"] == "rerunner" and shown["nameSelfChosen"] is True
    post(world, url, 409, "not-community", json={"role": "rerunner"}, headers=bearer(token))
    other = SigningKey.generate()
    register(world, other, "other")
    revoke = f"/v1/keys/{other.key_id}/revocation"
    post(world, revoke, 201, json={"reason": "gone"}, headers=bearer(token))
    post(
        world,
        f"/v1/keys/{other.key_id}/grants",
        409,
        "key-not-valid",
        json={"role": "rerunner"},
        headers=bearer(token),
    )
    check_log(world)


def test_the_attester_withdraws_its_attestation(world: World, attester: SigningKey) -> None:
    run = world.runs[0]
    attestation_id = attest(world, attester, run)
    url = f"/v1/attestations/{attestation_id}/withdrawal"
    event = AttestationWithdrawn(attestationId=attestation_id, reason="wrong GPU clocks")
    other = SigningKey.generate()
    register(world, other, "other")
    post(world, url, 403, "not-the-attester", content=signed_event(event, other))
    elsewhere = AttestationWithdrawn(attestationId="sha256:" + "0" * 64, reason="x")
    post(world, url, 400, "invalid-event-payload", content=signed_event(elsewhere, attester))
    post(
        world,
        "/v1/attestations/sha256:" + "0" * 64 + "/withdrawal",
        404,
        "unknown-attestation",
        content=signed_event(elsewhere, attester),
    )
    post(world, url, 201, content=signed_event(event, attester))
    post(world, url, 409, "already-withdrawn", content=signed_event(event, attester))
    [shown] = world.client.get(f"/v1/runs/{run}").json()["attestations"]
    assert shown["id"] == attestation_id and shown["withdrawn"] is True
    assert shown["withdrawalReason"] == "wrong GPU clocks"
    assert world.client.get(f"/v1/attestations/{attestation_id}").status_code == 200
    check_log(world)


def test_an_operator_hides_an_attestation(world: World, attester: SigningKey, token: str) -> None:
    run = world.runs[0]
    hidden_id = attest(world, attester, run)
    kept_id = attest(world, attester, run, "environment-note")
    url = f"/v1/attestations/{hidden_id}/hidden"
    post(world, url, 401, "unauthorized", json={"reason": "spam"})
    post(world, url, 400, "bad-request", json={"reason": " "}, headers=bearer(token))
    post(
        world,
        "/v1/attestations/sha256:" + "3" * 64 + "/hidden",
        404,
        "unknown-attestation",
        json={"reason": "spam"},
        headers=bearer(token),
    )
    post(world, url, 201, json={"reason": "spam"}, headers=bearer(token))
    post(world, url, 409, "already-hidden", json={"reason": "spam"}, headers=bearer(token))
    dossier = world.client.get(f"/v1/runs/{run}").json()
    assert [a["id"] for a in dossier["attestations"]] == [kept_id]
    assert dossier["hiddenByModeration"] == 1
    assert world.client.get(f"/v1/runs/{world.runs[1]}").json()["hiddenByModeration"] == 0
    problem(world.client.get(f"/v1/attestations/{hidden_id}"), 404, "unknown-attestation")
    assert world.ledger.store.leaf(world.size() - 2) is not None  # nothing is deleted
    check_log(world)


def test_an_operator_resolves_reports(world: World, token: str) -> None:
    run = world.runs[0]
    ids = []
    for text in ("off by 10x", "same hardware twice"):
        r = world.client.post(f"/v1/runs/{run}/reports", json={"reason": "other", "text": text})
        ids.append(r.json()["id"])
    assert world.client.get(f"/v1/runs/{run}").json()["underReview"] is True
    url = f"/v1/reports/{ids[0]}/resolution"
    body = {"resolution": "resolved", "note": "the source fixed its data"}
    post(world, url, 401, "unauthorized", json=body)
    post(
        world,
        url,
        400,
        "bad-request",
        json={"resolution": "ignored", "note": "x"},
        headers=bearer(token),
    )
    post(
        world,
        "/v1/reports/sha256:" + "4" * 64 + "/resolution",
        404,
        "unknown-report",
        json=body,
        headers=bearer(token),
    )
    post(world, url, 201, json=body, headers=bearer(token))
    post(world, url, 409, "already-resolved", json=body, headers=bearer(token))
    assert world.client.get(f"/v1/runs/{run}").json()["underReview"] is True  # one still open
    dismiss = {"resolution": "dismissed", "note": "not a problem"}
    post(world, f"/v1/reports/{ids[1]}/resolution", 201, json=dismiss, headers=bearer(token))
    dossier = world.client.get(f"/v1/runs/{run}").json()
    assert dossier["underReview"] is False
    assert [r["resolution"] for r in dossier["reports"]] == ["resolved", "dismissed"]
    check_log(world)
