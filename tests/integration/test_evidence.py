"""Evidence levels (docs/evidence.md): every transition, from events only; attestations and
reports never change the level."""

from __future__ import annotations

from typing import Any

import pytest

from events.entries import Pending
from events.types import (
    AttestationHidden,
    AttestationWithdrawn,
    KeyGranted,
    ManifestRecorded,
    Origin,
    ReportFiled,
    ReportResolved,
    RunRetracted,
    RunSuperseded,
)
from keys import SigningKey
from projections.queries import attestations, keyring, run_view
from service.app.replay import replay
from service.core.ledger import Ledger
from tests.builders import attestation, bundle, ingest_event, key_registration, rerun, signed_event
from verifier.log import verify_log


def _level(ledger: Ledger, digest: str) -> str:
    view = run_view(ledger.store.session, digest)
    assert view is not None
    return view.evidenceLevel


def _ingest(ledger: Ledger, **kw: object) -> str:
    parts = bundle(**kw)  # type: ignore[arg-type]
    ledger.append([(ingest_event(parts), parts["run"].digest)])
    return parts["run"].digest


def _rerun_of(ledger: Ledger, digest: str, key: SigningKey, **kw: Any) -> Pending:
    """A v1 rerun of ``digest`` by ``key``; it measured the run's own reported value unless
    ``value`` says otherwise (the index judges the value, never the ``within`` flag)."""
    view = run_view(ledger.store.session, digest)
    assert view is not None
    kw.setdefault("value", view.primaryValue)
    return rerun(digest, key, **kw)


def _rerunner(ledger: Ledger) -> SigningKey:
    key = SigningKey.generate()
    ledger.append([(key_registration(key, "rerunner"), key.key_id)])
    return key


def test_reported_when_not_reproducible(ledger: Ledger) -> None:
    digest = _ingest(ledger, raw_evidence=False)
    assert _level(ledger, digest) == "reported"
    view = run_view(ledger.store.session, digest)
    assert view is not None and "raw evidence" in view.evidenceReason


def test_reproducible_needs_source_identity_and_raw_evidence(ledger: Ledger) -> None:
    assert _level(ledger, _ingest(ledger, raw_evidence=True, value=1)) == "reproducible"
    assert (
        _level(ledger, _ingest(ledger, raw_evidence=True, source=False, value=2, author=9))
        == "reported"
    )
    parts = bundle(raw_evidence=True, value=3)
    ledger.append([(ingest_event(parts, drop=("workload",)), parts["run"].digest)])
    assert _level(ledger, parts["run"].digest) == "reported"


def test_verified_then_replicated_by_independent_rerunners(ledger: Ledger) -> None:
    digest = _ingest(ledger, raw_evidence=True)
    first, second = _rerunner(ledger), _rerunner(ledger)
    ledger.append_pending([_rerun_of(ledger, digest, first)])
    assert _level(ledger, digest) == "verified"
    ledger.append_pending([_rerun_of(ledger, digest, first, value=1001)])
    assert _level(ledger, digest) == "verified"  # the same rerunner twice is not a replication
    ledger.append_pending([_rerun_of(ledger, digest, second)])
    assert _level(ledger, digest) == "replicated"


def test_failed_correctness_or_tolerance_disputes(ledger: Ledger) -> None:
    a, b = _ingest(ledger, value=10), _ingest(ledger, value=20)
    key = _rerunner(ledger)
    ledger.append_pending([_rerun_of(ledger, a, key, passed=False)])
    ledger.append_pending([_rerun_of(ledger, b, key, within=False, value=35)])
    assert _level(ledger, a) == "disputed"
    assert _level(ledger, b) == "disputed"
    view = run_view(ledger.store.session, b)
    assert view is not None and "35" in view.evidenceReason
    ledger.append_pending([_rerun_of(ledger, a, _rerunner(ledger))])
    assert _level(ledger, a) == "disputed"


def test_reruns_by_non_rerunner_keys_do_not_count(ledger: Ledger) -> None:
    digest = _ingest(ledger)
    community = SigningKey.generate()
    ledger.append_pending(
        [signed_event(key_registration(community, "community"), community.key_id, community)]
    )
    ledger.append_pending([_rerun_of(ledger, digest, community)])
    assert _level(ledger, digest) == "reported"


def test_retracted_and_superseded_end_ranking_but_stay(ledger: Ledger) -> None:
    old, new, gone = (
        _ingest(ledger, value=5, author=1),
        _ingest(ledger, value=6, author=2),
        _ingest(ledger, value=7, author=3),
    )
    ledger.append([(RunSuperseded(runDigest=old, supersededBy=new, reason="corrected"), old)])
    ledger.append([(RunRetracted(runDigest=gone, reason="withdrawn by the source"), gone)])
    assert _level(ledger, old) == "superseded"
    assert _level(ledger, gone) == "retracted"
    conn = ledger.store.session
    views = {d: run_view(conn, d) for d in (old, new, gone)}
    assert [v.eligible for v in views.values() if v] == [False, True, False]


def test_attestations_and_reports_never_change_the_level(ledger: Ledger) -> None:
    community = SigningKey.generate()
    ledger.append_pending(
        [signed_event(key_registration(community, "community"), community.key_id, community)]
    )
    digests = [_ingest(ledger, value=v, raw_evidence=v % 2 == 0, author=v) for v in range(1, 5)]
    key = _rerunner(ledger)
    ledger.append_pending([_rerun_of(ledger, digests[2], key)])
    before = {d: _level(ledger, d) for d in digests}
    for d in digests:
        ledger.append_pending([attestation(d, community, f"note on {d}")])
        ledger.append(
            [(ReportFiled(runDigest=d, category="suspected_reward_hack", text="looks off"), d)]
        )
    assert {d: _level(ledger, d) for d in digests} == before
    assert set(before.values()) == {"reported", "reproducible", "verified"}


def test_a_failing_rerun_disputes_a_verified_or_replicated_run(ledger: Ledger) -> None:
    verified, replicated = _ingest(ledger, value=11, author=1), _ingest(ledger, value=12, author=2)
    first, second, third = _rerunner(ledger), _rerunner(ledger), _rerunner(ledger)
    ledger.append_pending([_rerun_of(ledger, verified, first)])
    ledger.append_pending(
        [_rerun_of(ledger, replicated, first), _rerun_of(ledger, replicated, second)]
    )
    assert (_level(ledger, verified), _level(ledger, replicated)) == ("verified", "replicated")
    ledger.append_pending([_rerun_of(ledger, verified, third, passed=False)])
    ledger.append_pending([_rerun_of(ledger, replicated, third, within=False, value=99)])
    assert (_level(ledger, verified), _level(ledger, replicated)) == ("disputed", "disputed")


@pytest.mark.parametrize(
    "start", ["reported", "reproducible", "verified", "replicated", "disputed"]
)
@pytest.mark.parametrize("end", ["retracted", "superseded"])
def test_every_level_ends_in_retracted_or_superseded(ledger: Ledger, start: str, end: str) -> None:
    digest = _ingest(ledger, raw_evidence=start != "reported", value=21, author=4)
    keys = [_rerunner(ledger), _rerunner(ledger)]
    if start in ("verified", "replicated"):
        ledger.append_pending([_rerun_of(ledger, digest, keys[0])])
    if start == "replicated":
        ledger.append_pending([_rerun_of(ledger, digest, keys[1])])
    if start == "disputed":
        ledger.append_pending([_rerun_of(ledger, digest, keys[0], passed=False)])
    assert _level(ledger, digest) == start
    if end == "retracted":
        ledger.append([(RunRetracted(runDigest=digest, reason="withdrawn"), digest)])
    else:
        successor = _ingest(ledger, value=22, author=5)
        ledger.append(
            [(RunSuperseded(runDigest=digest, supersededBy=successor, reason="fixed"), digest)]
        )
    assert _level(ledger, digest) == end
    # a rerun after the end does not bring the run back
    ledger.append_pending([_rerun_of(ledger, digest, _rerunner(ledger))])
    assert _level(ledger, digest) == end


def test_reported_becomes_reproducible_when_the_missing_manifest_arrives(ledger: Ledger) -> None:
    parts = bundle(raw_evidence=True, value=31, author=6)
    digest = parts["run"].digest
    ledger.append([(ingest_event(parts, drop=("workload",)), digest)])
    assert _level(ledger, digest) == "reported"
    workload = parts["workload"]
    recorded = ManifestRecorded(
        digest=workload.digest,
        kind=workload.kind,
        manifest=workload.manifest,
        origin=Origin(source="synthetic", importer="tests", importerVersion="1"),
    )
    ledger.append([(recorded, workload.digest)])
    assert _level(ledger, digest) == "reproducible"
    view = run_view(ledger.store.session, digest)
    assert view is not None and view.unresolved == () and view.comparisonKey is not None


def test_only_the_attester_withdraws_and_only_the_index_hides_or_resolves(
    ledger: Ledger,
) -> None:
    community, other = SigningKey.generate(), SigningKey.generate()
    ledger.append_pending(
        [
            signed_event(key_registration(key, "community"), key.key_id, key)
            for key in (community, other)
        ]
    )
    digest = _ingest(ledger, value=40, raw_evidence=True, author=0)
    posted = ledger.append_pending([attestation(digest, community, "mine")])[0].payloadDigest
    report = ledger.append([(ReportFiled(runDigest=digest, category="other", text="hm"), digest)])
    rid = report[0].payloadDigest
    ledger.append_pending(
        [
            signed_event(
                AttestationWithdrawn(attestationId=posted, reason="not yours"), digest, other
            ),
            signed_event(
                AttestationHidden(attestationId=posted, reason="not an index"), digest, other
            ),
            signed_event(ReportResolved(reportId=rid, resolution="x", note="y"), digest, community),
        ]
    )
    conn = ledger.store.session

    def state() -> tuple[object, ...]:
        row = conn.execute("SELECT withdrawn_at, hidden_at FROM p_attestations").fetchone()
        (resolved,) = conn.execute("SELECT resolved_at FROM p_reports").fetchone()
        return (*row, resolved)

    assert state() == (None, None, None)
    ledger.append_pending(
        [signed_event(AttestationWithdrawn(attestationId=posted, reason="mine"), digest, community)]
    )
    assert state()[0] is not None
    assert verify_log(ledger.data.db).ok is False  # the other key's hide is not a role it holds
    assert replay(ledger).ok


def test_withdrawing_hiding_and_resolving_never_change_the_level(ledger: Ledger) -> None:
    community = SigningKey.generate()
    ledger.append_pending(
        [signed_event(key_registration(community, "community"), community.key_id, community)]
    )
    digests = [_ingest(ledger, value=40 + v, raw_evidence=v > 0, author=v) for v in range(3)]
    key = _rerunner(ledger)
    ledger.append_pending([_rerun_of(ledger, digests[2], key)])
    before = {d: _level(ledger, d) for d in digests}
    assert set(before.values()) == {"reported", "reproducible", "verified"}
    for d in digests:
        posted = ledger.append_pending(
            [attestation(d, community, "one"), attestation(d, community, "two")]
        )
        report = ledger.append([(ReportFiled(runDigest=d, category="other", text="hm"), d)])
        # The attester withdraws its own attestation; the index hides and resolves.
        withdrawal = AttestationWithdrawn(attestationId=posted[0].payloadDigest, reason="oops")
        ledger.append_pending([signed_event(withdrawal, d, community)])
        ledger.append(
            [
                (AttestationHidden(attestationId=posted[1].payloadDigest, reason="spam"), d),
                (
                    ReportResolved(
                        reportId=report[0].payloadDigest, resolution="rejected", note="fine"
                    ),
                    d,
                ),
            ]
        )
        assert _level(ledger, d) == before[d]
    conn = ledger.store.session
    withdrawn, hidden = conn.execute(
        "SELECT count(withdrawn_at), count(hidden_at) FROM p_attestations"
    ).fetchone()
    resolved = conn.execute("SELECT count(resolved_at) FROM p_reports").fetchone()[0]
    assert (withdrawn, hidden, resolved) == (3, 3, 3)


def test_a_granted_role_counts_from_its_position_on(ledger: Ledger) -> None:
    """``key.granted.v1``: the index makes a community key a rerunner. Its rerun before the
    grant is not an index-controlled rerun (verify names it; the level stays); after the grant
    its rerun verifies the run. A community key cannot grant itself."""
    key = SigningKey.generate()
    ledger.append_pending([signed_event(key_registration(key, "community"), key.key_id, key)])
    digest = _ingest(ledger, value=40, raw_evidence=True, author=0)
    ledger.append_pending(
        [signed_event(KeyGranted(keyId=key.key_id, role="rerunner"), key.key_id, key)]
    )
    ledger.append_pending([_rerun_of(ledger, digest, key)])
    assert _level(ledger, digest) == "reproducible"
    assert verify_log(ledger.data.db).findings[0].reason.endswith("may not write key.granted.v1")
    ledger.append([(KeyGranted(keyId=key.key_id, role="rerunner"), key.key_id)])
    keys = keyring(ledger.store.session)
    assert keys[key.key_id].role == "rerunner"
    ledger.append_pending([_rerun_of(ledger, digest, key, value=41)])
    assert _level(ledger, digest) == "verified"
    assert replay(ledger).ok


def test_a_hiding_keeps_the_withdrawal_reason(ledger: Ledger) -> None:
    community = SigningKey.generate()
    ledger.append_pending(
        [signed_event(key_registration(community, "community"), community.key_id, community)]
    )
    digest = _ingest(ledger, value=40, raw_evidence=True, author=0)
    posted = ledger.append_pending([attestation(digest, community, "mine")])[0].payloadDigest
    withdrawal = AttestationWithdrawn(attestationId=posted, reason="measured the wrong GPU")
    ledger.append_pending([signed_event(withdrawal, digest, community)])
    ledger.append([(AttestationHidden(attestationId=posted, reason="spam"), digest)])
    (shown,) = attestations(ledger.store.session, digest, include_hidden=True)
    assert (shown.withdrawn, shown.hidden) == (True, True)
    assert shown.withdrawalReason == "measured the wrong GPU"
    assert replay(ledger).ok
