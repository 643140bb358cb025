"""The tolerance policy, applied by the index (docs/evidence.md): a rerun's level comes from what it
measured and the policy in force at its position, never from a verdict of its own; a policy
change applies from its position on; a rerunner's identity is its registered name."""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from events.entries import Pending
from events.errors import EventError
from events.types import KeyRotated, PolicyChanged, RerunRequested
from keys import SigningKey
from projections.queries import run_view
from projections.tolerance import (
    DEFAULT_POLICY,
    POLICY_NAME,
    Tolerance,
    TolerancePolicy,
    judge,
    policy_from,
)
from projections.views import instant_of
from service.app.replay import replay
from service.core.ledger import Ledger
from tests.builders import (
    bundle,
    ingest_event,
    key_registration,
    rerun,
    rerun_claim,
    rerun_v2,
    signed_event,
)
from verifier.log import verify_log


def _run(ledger: Ledger, value: int, author: int = 1) -> str:
    parts = bundle(group=author, author=author, value=value, raw_evidence=True)
    ledger.append([(ingest_event(parts), parts["run"].digest)])
    return parts["run"].digest


def _rerunner(ledger: Ledger, key: SigningKey | None = None) -> SigningKey:
    key = key or SigningKey.generate()
    ledger.append([(key_registration(key, "rerunner"), key.key_id)])
    return key


def _rerun_v2(
    ledger: Ledger, digest: str, key: SigningKey, samples: list[float], **extra: Any
) -> Pending:
    """A v2 result of a fresh request of ``digest`` that ``key`` claimed (only the claimer's
    result counts)."""
    reason = f"test {len(samples)} at {ledger.store.refresh()}"  # each request its own entry
    request = ledger.append([(RerunRequested(runDigest=digest, reason=reason), digest)])[0]
    ledger.append_pending([rerun_claim(digest, request.payloadDigest, key)])
    return rerun_v2(digest, key, samples, request_id=request.payloadDigest, **extra)


def _level(ledger: Ledger, digest: str, as_of: int | None = None) -> str:
    view = run_view(ledger.store.session, digest, as_of)
    assert view is not None
    return view.evidenceLevel


def _policy(ledger: Ledger, policy: TolerancePolicy) -> None:
    event = PolicyChanged(
        policy=POLICY_NAME, version=policy.version, parameters=policy.parameters()
    )
    ledger.append([(event, POLICY_NAME)])


def test_init_records_the_default_policy(ledger: Ledger) -> None:
    rows = ledger.store.session.execute(
        "SELECT policy, valid_from, version FROM p_policies"
    ).fetchall()
    assert rows == [(POLICY_NAME, 3, DEFAULT_POLICY.version)]


def test_samples_are_judged_by_the_policy_in_force(ledger: Ledger) -> None:
    near, slow, fast = _run(ledger, 1000, 1), _run(ledger, 1000, 2), _run(ledger, 1000, 3)
    key = _rerunner(ledger)
    ledger.append_pending([_rerun_v2(ledger, near, key, [1040.0, 980.0, 1010.0, 1005.0, 995.0])])
    ledger.append_pending([_rerun_v2(ledger, slow, key, [1500.0] * 5)])
    ledger.append_pending(
        [_rerun_v2(ledger, fast, key, [500.0] * 5)]
    )  # faster misses too (symmetric)
    assert [_level(ledger, d) for d in (near, slow, fast)] == ["verified", "disputed", "disputed"]
    view = run_view(ledger.store.session, slow)
    assert view is not None
    (judged,) = view.reruns
    assert (judged.value, judged.reportedNs, judged.policyVersion) == (
        1500.0,
        1000.0,
        "tolerance-v1",
    )
    assert judged.why is not None and "+50.0%" in judged.why and "1500" in view.evidenceReason
    assert judged.samples == (1500.0,) * 5 and judged.harness == "test-harness 1"
    assert verify_log(ledger.data.db).ok and replay(ledger).ok


def test_too_few_samples_or_failed_correctness_dispute(ledger: Ledger) -> None:
    few, wrong = _run(ledger, 1000, 1), _run(ledger, 1000, 2)
    key = _rerunner(ledger)
    ledger.append_pending([_rerun_v2(ledger, few, key, [1000.0] * 4)])
    ledger.append_pending([_rerun_v2(ledger, wrong, key, [1000.0] * 5, passed=False)])
    assert [_level(ledger, d) for d in (few, wrong)] == ["disputed", "disputed"]
    view = run_view(ledger.store.session, few)
    assert view is not None and "4 samples" in (view.reruns[0].why or "")


def test_a_v1_flag_is_never_trusted(ledger: Ledger) -> None:
    digest = _run(ledger, 1000)
    key = _rerunner(ledger)
    ledger.append_pending([rerun(digest, key, within=True, value=2000)])
    assert _level(ledger, digest) == "disputed"  # says within; measured twice the value
    other = _run(ledger, 1000, 2)
    ledger.append_pending([rerun(other, key, within=False, value=1010)])
    assert _level(ledger, other) == "verified"  # says outside; measured within 1 %


def test_a_verdict_in_a_v2_statement_is_malformed(ledger: Ledger) -> None:
    digest = _run(ledger, 1000)
    key = _rerunner(ledger)
    verdict = _rerun_v2(ledger, digest, key, [1000.0] * 5, withinTolerance=True)
    negative = _rerun_v2(ledger, digest, key, [1000.0, -1.0, 1000.0, 1000.0, 1000.0])
    size = ledger.store.refresh()
    with pytest.raises(EventError, match="withinTolerance"):
        ledger.append_pending([verdict])
    with pytest.raises(EventError):
        ledger.append_pending([negative])
    assert ledger.store.refresh() == size


def test_a_policy_change_applies_from_its_position_and_never_rewrites(ledger: Ledger) -> None:
    earlier, later = _run(ledger, 1000, 1), _run(ledger, 1000, 2)
    key = _rerunner(ledger)
    ledger.append_pending([_rerun_v2(ledger, earlier, key, [1080.0] * 5)])  # 8 %: within 10 %
    before_change = ledger.store.refresh()
    strict = TolerancePolicy(version="tolerance-strict", default=Tolerance(relativeMargin=0.05))
    _policy(ledger, strict)
    ledger.append_pending([_rerun_v2(ledger, later, key, [1080.0] * 5)])  # 8 %: outside 5 %
    assert _level(ledger, earlier) == "verified"  # judged under the policy of its position
    assert _level(ledger, later) == "disputed"
    view = run_view(ledger.store.session, later)
    assert view is not None and view.reruns[0].policyVersion == "tolerance-strict"
    assert _level(ledger, later, before_change) == "reproducible"  # asOf before its rerun
    lenient = TolerancePolicy(
        version="faster-passes", default=Tolerance(relativeMargin=0.05, symmetric=False)
    )
    _policy(ledger, lenient)
    faster = _run(ledger, 1000, 3)
    ledger.append_pending([_rerun_v2(ledger, faster, key, [700.0] * 5)])
    assert _level(ledger, faster) == "verified"
    assert replay(ledger).ok


def test_a_policy_that_is_not_one_or_not_from_the_index_is_void(ledger: Ledger) -> None:
    ledger.append([(PolicyChanged(policy=POLICY_NAME, version="bad", parameters={"x": 1}), "t")])
    community = SigningKey.generate()
    ledger.append_pending(
        [signed_event(key_registration(community, "community"), community.key_id, community)]
    )
    loose = TolerancePolicy(version="loose", default=Tolerance(relativeMargin=5.0))
    event = PolicyChanged(policy=POLICY_NAME, version="loose", parameters=loose.parameters())
    ledger.append_pending([signed_event(event, POLICY_NAME, community)])
    digest = _run(ledger, 1000)
    ledger.append_pending([_rerun_v2(ledger, digest, _rerunner(ledger), [3000.0] * 5)])
    view = run_view(ledger.store.session, digest)
    assert view is not None and view.reruns[0].policyVersion == DEFAULT_POLICY.version
    assert view.evidenceLevel == "disputed"


def test_a_rotated_rerunner_is_one_identity(ledger: Ledger) -> None:
    digest = _run(ledger, 1000)
    old, new = SigningKey.generate(), SigningKey.generate()
    _rerunner(ledger, old)
    ledger.append_pending([_rerun_v2(ledger, digest, old, [1000.0] * 5)])
    rotation = KeyRotated(
        keyId=old.key_id, newKeyId=new.key_id, newPublicKey=key_registration(new, "x").publicKey
    )
    ledger.append_pending([signed_event(rotation, old.key_id, old)])
    ledger.append_pending([_rerun_v2(ledger, digest, new, [1000.0] * 5)])
    assert _level(ledger, digest) == "verified"  # the same name: not a replication
    ledger.append_pending([_rerun_v2(ledger, digest, _rerunner(ledger), [1000.0] * 5)])
    assert _level(ledger, digest) == "replicated"
    assert replay(ledger).ok


@given(
    st.lists(st.floats(1, 1e9), min_size=5, max_size=40),
    st.floats(1, 1e9),
    st.floats(0, 2),
    st.booleans(),
)
def test_judge_is_the_documented_comparison(
    samples: list[float], reported: float, margin: float, symmetric: bool
) -> None:
    policy = TolerancePolicy(
        version="p", default=Tolerance(relativeMargin=margin, symmetric=symmetric)
    )
    judged = judge(tuple(samples), reported, policy, None)
    ordered = sorted(samples)
    middle = len(ordered) // 2
    median = ordered[middle] if len(ordered) % 2 else (ordered[middle - 1] + ordered[middle]) / 2
    change = (median - reported) / reported
    assert judged.measuredNs == pytest.approx(median)
    expected = abs(change) <= margin if symmetric else change <= margin
    if abs(abs(change) - margin) > 1e-9:  # not on the edge, where rounding decides
        assert judged.within == expected


def test_policy_parameters_round_trip_and_bad_ones_are_refused() -> None:
    assert policy_from(DEFAULT_POLICY.version, DEFAULT_POLICY.parameters()) == DEFAULT_POLICY
    assert policy_from("v", {"default": {"relativeMargin": -1}}) is None
    assert policy_from("v", {"default": {"relativeMargin": 0.1, "minSamples": 0}}) is None
    assert policy_from("v", {"default": {"relativeMargin": 0.1, "verdict": True}}) is None


def test_instants_are_the_logs_own_shape_only() -> None:
    """A lease is decided by one exact instant shape, the log's own, so any verifier decides
    as replay does; other ISO 8601 spellings are not instants here."""
    assert instant_of("2026-01-01T00:00:00.000Z") is not None
    for other in (
        "2026-01-01T00:00:00Z",
        "20260101T000000Z",
        "2026-01-01 00:00:00.000Z",
        "2026-W01-1T00:00:00.000Z",
        "2026-01-01T00:00:00.000+00:00",
    ):
        assert instant_of(other) is None, other


def test_a_result_of_more_than_ten_thousand_samples_is_malformed(ledger: Ledger) -> None:
    digest = _run(ledger, 1000)
    too_many = _rerun_v2(ledger, digest, _rerunner(ledger), [1000.0] * 10_001)
    with pytest.raises(EventError):
        ledger.append_pending([too_many])
