"""Index-controlled reruns over HTTP: an operator requests a rerun of a run, a rerunner's worker
lists the open requests with the environment each needs, reads the run's manifests, claims the
request for a lease and posts what it measured; the index judges the samples against the
tolerance policy and the run's evidence level follows (verified, disputed, replicated). Every
refusal is its own problem type and appends nothing; the log still verifies and replays."""

from __future__ import annotations

from datetime import timedelta
from typing import Any

import msgspec
import pytest

from events.entries import INTOTO_PAYLOAD_TYPE, format_instant
from events.types import RERUN_PREDICATE_V2, KeyRevoked, RerunClaimedV2
from keys import SigningKey, encode_envelope, sign_envelope
from service.app.replay import replay
from service.commands.keys import signed_event
from service.web.auth import TokenStore
from tests.api.test_keys import World, problem, refused, register, world
from tests.builders import bundle, ingest_event, key_registration
from verifier.log import verify_log

__all__ = ["world"]  # the fixture, shared with test_keys

# The environment the world's runs need (a B200), as a worker declares it and as ``needs`` lists
# it (with the vendor the run's environment manifest names).
GPU = {"kind": "gpu", "model": "NVIDIA B200", "architecture": "sm_100"}
NEEDS = {**GPU, "vendor": "nvidia"}
OTHER_GPU = {"kind": "gpu", "model": "NVIDIA H100", "architecture": "sm_100"}
# Samples of run 0 (reported: 100 ns): median 100, within 10 %.
GOOD = [98.0, 99.0, 100.0, 101.0, 102.0]
UNKNOWN_REQUEST = "sha256:" + "1" * 64


# --- Keys and tokens ---------------------------------------------------------------------------


@pytest.fixture
def token(world: World) -> str:
    return TokenStore(world.ledger.data.tokens).create("operator")


def bearer(token: str) -> dict[str, str]:
    return {"authorization": f"Bearer {token}"}


def rerunner(world: World) -> SigningKey:
    """A new key the index registers with the rerunner role (named ``rerunner-<8 hex>``)."""
    key = SigningKey.generate()
    world.ledger.append([(key_registration(key, "rerunner"), key.key_id)])
    return key


def community(world: World, name: str) -> SigningKey:
    """A new community key, registered through the API."""
    key = SigningKey.generate()
    register(world, key, name)
    return key


# --- Requests ----------------------------------------------------------------------------------


def request(world: World, token: str, run: str, reason: str = "spot check") -> str:
    """The operator asks for a rerun of ``run``: 201, one entry appended; its id."""
    before = world.size()
    r = world.client.post(f"/v1/runs/{run}/reruns", json={"reason": reason}, headers=bearer(token))
    assert r.status_code == 201, r.text
    body = r.json()
    assert set(body) == {"id", "index"} and body["index"] == before
    assert world.size() == before + 1
    request_id: str = body["id"]
    return request_id


def listed(world: World, state: str | None = None) -> list[dict[str, Any]]:
    """The rerun requests ``GET /v1/reruns`` lists (in ``state``, if given)."""
    url = "/v1/reruns" if state is None else f"/v1/reruns?state={state}"
    r = world.client.get(url)
    assert r.status_code == 200, r.text
    items: list[dict[str, Any]] = r.json()["items"]
    return items


def one(world: World, request_id: str, state: str) -> dict[str, Any]:
    """The request ``request_id`` as listed in ``state``."""
    found = [item for item in listed(world, state) if item["requestId"] == request_id]
    assert len(found) == 1, listed(world)
    return found[0]


# --- Claims ------------------------------------------------------------------------------------


def lease(world: World, minutes: float = 15) -> str:
    """An RFC 3339 instant ``minutes`` after the server's clock."""
    return format_instant(world.clock.now + timedelta(minutes=minutes))


def claim_body(
    world: World,
    request_id: str,
    key: SigningKey,
    *,
    run: int | str = 0,
    worker: str | None = None,
    until: str | None = None,
    environment: dict[str, str] | None = None,
) -> bytes:
    """``key``'s DSSE envelope over a ``rerun.claimed.v2`` of ``request_id`` (by default: for
    run 0, the worker being ``key``, a 15-minute lease, the run's environment)."""
    event = RerunClaimedV2(
        runDigest=world.runs[run] if isinstance(run, int) else run,
        requestId=request_id,
        worker=worker or key.key_id,
        leaseUntil=until or lease(world),
        environment=environment or GPU,
    )
    return signed_event(event, key)


def claim(world: World, request_id: str, key: SigningKey, **kw: Any) -> dict[str, Any]:
    """``key`` claims ``request_id``: 201, one entry appended."""
    before = world.size()
    r = world.client.post(
        f"/v1/reruns/{request_id}/claim", content=claim_body(world, request_id, key, **kw)
    )
    assert r.status_code == 201, r.text
    body: dict[str, Any] = r.json()
    assert set(body) == {"id", "index"} and body["index"] == before
    assert world.size() == before + 1
    return body


# --- Results -----------------------------------------------------------------------------------


def result_body(
    world: World,
    request_id: str,
    key: SigningKey,
    samples: list[float],
    *,
    run: int | str = 0,
    passed: bool = True,
    environment: dict[str, str] | None = None,
    **extra: Any,
) -> bytes:
    """``key``'s DSSE envelope over an in-toto statement about ``run`` with the rerun v2
    predicate (``extra`` adds predicate fields)."""
    digest = world.runs[run] if isinstance(run, int) else run
    statement = {
        "_type": "https://in-toto.io/Statement/v1",
        "subject": [{"name": digest, "digest": {"sha256": digest.removeprefix("sha256:")}}],
        "predicateType": RERUN_PREDICATE_V2,
        "predicate": {
            "requestId": request_id,
            "samples": samples,
            "correctness": {"passed": passed, "detail": "max abs error 1e-7 against float64"},
            "environment": environment or GPU,
            "harness": {"name": "test-harness", "version": "1"},
            **extra,
        },
    }
    payload = msgspec.json.encode(statement)
    return encode_envelope(sign_envelope(INTOTO_PAYLOAD_TYPE, payload, key))


def answer(
    world: World, request_id: str, key: SigningKey, samples: list[float], **kw: Any
) -> dict[str, Any]:
    """``key`` posts its result for ``request_id``: 201, one entry appended."""
    before = world.size()
    r = world.client.post(
        f"/v1/reruns/{request_id}/result",
        content=result_body(world, request_id, key, samples, **kw),
    )
    assert r.status_code == 201, r.text
    body: dict[str, Any] = r.json()
    assert body["index"] == before and world.size() == before + 1
    return body


def rerun(world: World, token: str, samples: list[float], **kw: Any) -> str:
    """A new rerunner's whole round on run 0 (request, claim, result); the request's id. Each
    request gives its own reason: the same request at the same instant is the same entry."""
    key = rerunner(world)
    request_id = request(world, token, world.runs[0], reason=f"round {len(listed(world)) + 1}")
    claim(world, request_id, key)
    answer(world, request_id, key, samples, **kw)
    return request_id


# --- Reads -------------------------------------------------------------------------------------


def dossier(world: World, run: int = 0, as_of: int | None = None) -> dict[str, Any]:
    url = f"/v1/runs/{world.runs[run]}" + ("" if as_of is None else f"?asOf={as_of}")
    r = world.client.get(url)
    assert r.status_code == 200, r.text
    body: dict[str, Any] = r.json()
    return body


def level(world: World, run: int = 0, as_of: int | None = None) -> str:
    value: str = dossier(world, run, as_of)["evidenceLevel"]
    return value


def check_log(world: World) -> None:
    assert verify_log(world.ledger.data.db).ok
    assert replay(world.ledger).ok


# --- 1. The happy path -------------------------------------------------------------------------


def test_a_rerun_requested_claimed_and_answered_verifies_the_run(world: World, token: str) -> None:
    run = world.runs[0]
    shown = dossier(world)
    assert shown["primary"]["value"] == 100 and shown["primary"]["unit"] == "ns"
    assert shown["evidenceLevel"] == "reproducible"

    # The operator asks; the request is pending, with the environment the run needs.
    requested_at = world.size()
    request_id = request(world, token, run, reason="check the headline figure")
    pending = one(world, request_id, "pending")
    assert pending == {
        "requestId": request_id,
        "runDigest": run,
        "reason": "check the headline figure",
        "requestedAt": requested_at,
        "state": "pending",
        "needs": NEEDS,
        "minSamples": 5,
    }
    assert listed(world) == [pending]
    assert listed(world, "claimed") == [] and listed(world, "completed") == []

    # The harness's input: the manifests the run was ingested with.
    parts = bundle(group=1, author=100, value=100, raw_evidence=True)  # as the world ingested it
    assert parts["run"].digest == run
    r = world.client.get(f"/v1/reruns/{request_id}/bundle")
    assert r.status_code == 200, r.text
    material = r.json()
    assert material["runDigest"] == run and material["requestId"] == request_id
    assert material["manifests"] == {role: c.manifest for role, c in parts.items()}
    problem(world.client.get(f"/v1/reruns/{UNKNOWN_REQUEST}/bundle"), 404, "unknown-rerun-request")

    # A rerunner claims it: claimed, no longer pending.
    key = rerunner(world)
    until = lease(world, 15)
    claim(world, request_id, key, until=until)
    claimed = one(world, request_id, "claimed")
    assert claimed["state"] == "claimed" and claimed["needs"] == NEEDS
    assert claimed["claimer"] == key.key_id and claimed["leaseUntil"] == until
    assert "completedAt" not in claimed
    assert listed(world, "pending") == []

    # Its result, median within 10 % of the reported 100 ns: the run is verified.
    before = world.size()
    body = result_body(world, request_id, key, GOOD)
    r = world.client.post(f"/v1/reruns/{request_id}/result", content=body)
    assert r.status_code == 201, r.text
    posted = r.json()
    assert set(posted) == {"index", "leafHash", "checkpoint", "inclusionProof", "id"}
    assert posted["index"] == before and world.size() == before + 1
    assert level(world) == "verified"
    assert level(world, as_of=before) == "reproducible"  # the log before the result
    completed = one(world, request_id, "completed")
    assert completed["completedAt"] == before and completed["claimer"] == key.key_id
    assert listed(world, "claimed") == [] and listed(world, "pending") == []
    reruns = dossier(world)["reruns"]
    assert len(reruns) == 1

    # The same result again: the entry the log holds, nothing appended.
    again = world.client.post(f"/v1/reruns/{request_id}/result", content=body)
    assert again.status_code == 200, again.text
    assert again.json()["index"] == posted["index"] and again.json()["id"] == posted["id"]
    assert world.size() == before + 1
    check_log(world)


def test_an_unknown_state_is_400(world: World) -> None:
    problem(world.client.get("/v1/reruns?state=done"), 400, "bad-request")


# --- 2. Requests -------------------------------------------------------------------------------


def test_a_request_needs_an_operator_token_and_a_known_run(world: World, token: str) -> None:
    url = f"/v1/runs/{world.runs[0]}/reruns"
    for headers in ({}, bearer("not-a-token"), bearer(token + "x")):
        before = world.size()
        r = world.client.post(url, json={"reason": "spot check"}, headers=headers)
        problem(r, 401, "unauthorized")
        assert world.size() == before
    before = world.size()
    r = world.client.post(
        "/v1/runs/sha256:" + "2" * 64 + "/reruns", json={"reason": "x"}, headers=bearer(token)
    )
    problem(r, 404, "unknown-run")
    assert world.size() == before
    assert listed(world) == []


# --- 3. Claims refused -------------------------------------------------------------------------


def claim_url(request_id: str) -> str:
    return f"/v1/reruns/{request_id}/claim"


def test_a_community_key_may_not_claim(world: World, token: str) -> None:
    request_id = request(world, token, world.runs[0])
    key = community(world, "alice")
    refused(world, claim_url(request_id), claim_body(world, request_id, key), 403, "not-rerunner")


def test_a_worker_claims_for_itself_only(world: World, token: str) -> None:
    request_id = request(world, token, world.runs[0])
    key, other = rerunner(world), rerunner(world)
    body = claim_body(world, request_id, key, worker=other.key_id)
    refused(world, claim_url(request_id), body, 403, "key-mismatch")


def test_a_claim_of_an_unknown_request_is_404(world: World, token: str) -> None:
    request(world, token, world.runs[0])
    key = rerunner(world)
    body = claim_body(world, UNKNOWN_REQUEST, key)
    refused(world, claim_url(UNKNOWN_REQUEST), body, 404, "unknown-rerun-request")


def test_a_claim_naming_another_run_is_400(world: World, token: str) -> None:
    request_id = request(world, token, world.runs[0])
    body = claim_body(world, request_id, rerunner(world), run=1)
    refused(world, claim_url(request_id), body, 400, "invalid-event-payload")


@pytest.mark.parametrize("minutes", [61, 24 * 60, 0, -1])
def test_a_lease_past_or_over_an_hour_away_is_400(world: World, token: str, minutes: int) -> None:
    request_id = request(world, token, world.runs[0])
    body = claim_body(world, request_id, rerunner(world), until=lease(world, minutes))
    refused(world, claim_url(request_id), body, 400, "invalid-event-payload")
    assert one(world, request_id, "pending")["requestId"] == request_id


def test_a_lease_of_exactly_an_hour_is_taken(world: World, token: str) -> None:
    request_id = request(world, token, world.runs[0])
    claim(world, request_id, rerunner(world), until=lease(world, 60))
    assert one(world, request_id, "claimed")["leaseUntil"] == lease(world, 60)


def test_a_claim_with_a_forged_signature_is_403(world: World, token: str) -> None:
    request_id = request(world, token, world.runs[0])
    key = rerunner(world)
    envelope = msgspec.json.decode(claim_body(world, request_id, key))
    other = claim_body(world, request_id, key, until=lease(world, 20))
    envelope["signatures"] = msgspec.json.decode(other)["signatures"]  # over another payload
    body = msgspec.json.encode(envelope)
    refused(world, claim_url(request_id), body, 403, "bad-signature")


def test_a_revoked_rerunner_may_not_claim(world: World, token: str) -> None:
    request_id = request(world, token, world.runs[0])
    key = rerunner(world)
    world.ledger.append([(KeyRevoked(keyId=key.key_id, reason="lost"), key.key_id)])
    refused(world, claim_url(request_id), claim_body(world, request_id, key), 403, "unknown-signer")


def test_an_answered_request_may_not_be_claimed(world: World, token: str) -> None:
    request_id = rerun(world, token, GOOD)
    body = claim_body(world, request_id, rerunner(world))
    refused(world, claim_url(request_id), body, 409, "rerun-answered")


def test_a_worker_on_another_environment_may_not_claim(world: World, token: str) -> None:
    request_id = request(world, token, world.runs[0])
    key = rerunner(world)
    for environment in (
        OTHER_GPU,
        {**GPU, "architecture": "sm_90"},
        {**GPU, "kind": "cpu"},
        {"kind": "gpu", "model": "NVIDIA B200"},  # no architecture: matches nothing
    ):
        body = claim_body(world, request_id, key, environment=environment)
        refused(world, claim_url(request_id), body, 422, "environment-mismatch")
    # Case and spacing are not a difference.
    claim(world, request_id, key, environment={**GPU, "model": "nvidia  b200"})


def test_a_lease_holds_the_request_until_it_ends(world: World, token: str) -> None:
    request_id = request(world, token, world.runs[0])
    first, second = rerunner(world), rerunner(world)
    claim(world, request_id, first, until=lease(world, 15))
    body = claim_body(world, request_id, second, until=lease(world, 15))
    refused(world, claim_url(request_id), body, 409, "rerun-leased")
    assert one(world, request_id, "claimed")["claimer"] == first.key_id

    # The first lease runs out: the request is pending again, and the second worker takes it.
    world.clock.now += timedelta(minutes=16)
    assert one(world, request_id, "pending")["claimer"] == first.key_id  # whose lease lapsed
    claim(world, request_id, second, until=lease(world, 15))
    shown = one(world, request_id, "claimed")
    assert shown["claimer"] == second.key_id and shown["leaseUntil"] == lease(world, 15)
    # The first worker's claim no longer holds it.
    body = result_body(world, request_id, first, GOOD)
    refused(world, f"/v1/reruns/{request_id}/result", body, 403, "not-the-claimer")
    check_log(world)


# --- 4. Results refused ------------------------------------------------------------------------


def result_url(request_id: str) -> str:
    return f"/v1/reruns/{request_id}/result"


@pytest.fixture
def claimed(world: World, token: str) -> tuple[str, SigningKey]:
    """A request of run 0 and the rerunner whose claim holds it."""
    request_id = request(world, token, world.runs[0])
    key = rerunner(world)
    claim(world, request_id, key)
    return request_id, key


def test_a_community_key_may_not_answer(world: World, claimed: tuple[str, SigningKey]) -> None:
    request_id, _ = claimed
    body = result_body(world, request_id, community(world, "alice"), GOOD)
    refused(world, result_url(request_id), body, 403, "not-rerunner")


def test_a_request_never_claimed_has_no_answer(world: World, token: str) -> None:
    request_id = request(world, token, world.runs[0])
    body = result_body(world, request_id, rerunner(world), GOOD)
    refused(world, result_url(request_id), body, 403, "not-the-claimer")
    assert level(world) == "reproducible"


def test_only_the_claimer_answers(world: World, claimed: tuple[str, SigningKey]) -> None:
    request_id, key = claimed
    body = result_body(world, request_id, rerunner(world), GOOD)
    refused(world, result_url(request_id), body, 403, "not-the-claimer")
    answer(world, request_id, key, GOOD)


def test_a_result_for_an_unknown_request_is_404(
    world: World, claimed: tuple[str, SigningKey]
) -> None:
    _, key = claimed
    body = result_body(world, UNKNOWN_REQUEST, key, GOOD)
    refused(world, result_url(UNKNOWN_REQUEST), body, 404, "unknown-rerun-request")


def test_a_result_answering_another_request_than_the_url_is_400(
    world: World, token: str, claimed: tuple[str, SigningKey]
) -> None:
    request_id, key = claimed
    other = request(world, token, world.runs[1])
    body = result_body(world, other, key, GOOD)
    refused(world, result_url(request_id), body, 400, "invalid-rerun-result")


def test_a_result_with_a_forged_signature_is_403(
    world: World, claimed: tuple[str, SigningKey]
) -> None:
    request_id, key = claimed
    envelope = msgspec.json.decode(result_body(world, request_id, key, GOOD))
    other = result_body(world, request_id, key, [100.0] * 5)
    envelope["signatures"] = msgspec.json.decode(other)["signatures"]  # over another payload
    refused(world, result_url(request_id), msgspec.json.encode(envelope), 403, "bad-signature")


def test_a_result_about_another_run_is_400(world: World, claimed: tuple[str, SigningKey]) -> None:
    request_id, key = claimed
    body = result_body(world, request_id, key, GOOD, run=1)
    refused(world, result_url(request_id), body, 400, "invalid-rerun-result")


def test_a_verdict_of_the_workers_own_is_400(world: World, claimed: tuple[str, SigningKey]) -> None:
    request_id, key = claimed
    body = result_body(world, request_id, key, GOOD, withinTolerance=True)
    refused(world, result_url(request_id), body, 400, "invalid-rerun-result")


def test_fewer_samples_than_the_policy_asks_is_400(
    world: World, claimed: tuple[str, SigningKey]
) -> None:
    request_id, key = claimed
    body = result_body(world, request_id, key, GOOD[:4])
    refused(world, result_url(request_id), body, 400, "invalid-rerun-result")
    answer(world, request_id, key, GOOD)  # five are enough


def test_a_result_measured_elsewhere_is_422(world: World, claimed: tuple[str, SigningKey]) -> None:
    request_id, key = claimed
    body = result_body(world, request_id, key, GOOD, environment=OTHER_GPU)
    refused(world, result_url(request_id), body, 422, "environment-mismatch")


def test_a_revoked_rerunner_may_not_answer(world: World, claimed: tuple[str, SigningKey]) -> None:
    request_id, key = claimed
    world.ledger.append([(KeyRevoked(keyId=key.key_id, reason="lost"), key.key_id)])
    body = result_body(world, request_id, key, GOOD)
    refused(world, result_url(request_id), body, 403, "unknown-signer")
    assert level(world) == "reproducible"


def test_a_request_is_answered_once(world: World, claimed: tuple[str, SigningKey]) -> None:
    request_id, key = claimed
    answer(world, request_id, key, GOOD)
    body = result_body(world, request_id, key, [150.0] * 5)
    refused(world, result_url(request_id), body, 409, "rerun-answered")
    assert level(world) == "verified"
    check_log(world)


# --- 5. Evidence levels ------------------------------------------------------------------------


def test_a_result_far_off_the_reported_value_disputes_the_run(world: World, token: str) -> None:
    rerun(world, token, [148.0, 149.0, 150.0, 151.0, 152.0])  # median 50 % over 100 ns
    assert level(world) == "disputed"
    assert level(world, run=1) == "reproducible"
    check_log(world)


def test_a_result_that_failed_correctness_disputes_the_run(world: World, token: str) -> None:
    rerun(world, token, GOOD, passed=False)
    assert level(world) == "disputed"
    assert "failed correctness" in dossier(world)["evidenceReason"]
    check_log(world)


def test_two_rerunner_identities_replicate_the_run(world: World, token: str) -> None:
    rerun(world, token, GOOD)
    assert level(world) == "verified"
    rerun(world, token, [95.0, 97.0, 100.0, 103.0, 105.0])
    assert level(world) == "replicated"
    assert len(dossier(world)["reruns"]) == 2
    assert len(listed(world, "completed")) == 2
    check_log(world)


def test_the_same_request_or_claim_again_is_200_and_appends_nothing(
    world: World, token: str
) -> None:
    """Posting a request or a claim twice (a retry) answers the entry the log holds."""
    first = world.client.post(
        f"/v1/runs/{world.runs[0]}/reruns", json={"reason": "retry"}, headers=bearer(token)
    )
    assert first.status_code == 201, first.text
    again = world.client.post(
        f"/v1/runs/{world.runs[0]}/reruns", json={"reason": "retry"}, headers=bearer(token)
    )
    assert (again.status_code, again.json()) == (200, first.json())
    key = rerunner(world)
    body = claim_body(world, first.json()["id"], key)
    made = world.client.post(f"/v1/reruns/{first.json()['id']}/claim", content=body)
    assert made.status_code == 201, made.text
    size = world.size()
    retried = world.client.post(f"/v1/reruns/{first.json()['id']}/claim", content=body)
    assert (retried.status_code, retried.json()) == (200, made.json())
    assert world.size() == size


def test_a_run_with_nothing_to_rerun_on_is_422(world: World, token: str) -> None:
    """A run whose environment manifest is missing names no hardware: a request for it could
    never be claimed, so it is refused and nothing is appended."""
    parts = bundle(group=3, author=3, value=300)
    world.ledger.append([(ingest_event(parts, drop=("environment",)), parts["run"].digest)])
    before = world.size()
    r = world.client.post(
        f"/v1/runs/{parts['run'].digest}/reruns", json={"reason": "none"}, headers=bearer(token)
    )
    problem(r, 422, "not-rerunnable")
    assert world.size() == before


def test_each_request_says_how_many_samples_the_policy_asks(world: World, token: str) -> None:
    request(world, token, world.runs[0])
    (item,) = listed(world, "pending")
    assert item["minSamples"] == 5  # tolerance-v1's
