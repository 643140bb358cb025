"""The run fold: a run's dossier view from the events that concern it.

``fold_run(digest, view, event, ctx)`` is pure (no I/O, no clock) and exhaustive over the event
union; the materialiser routes to it every event that may concern the run.
"""

from __future__ import annotations

import functools
from typing import Any, assert_never

import msgspec

from events.authority import by_role
from events.identity import (
    primary_measurement,
    serving_metric_set_key,
    serving_protocol_prefix,
    serving_topology_key,
)
from events.references import referenced_manifests, roles
from events.types import (
    AnyEvent,
    AttestationHidden,
    AttestationPosted,
    AttestationWithdrawn,
    CitationNotarized,
    KeyGranted,
    KeyRegistered,
    KeyRevoked,
    KeyRotated,
    ManifestRecorded,
    PolicyChanged,
    ReportFiled,
    ReportResolved,
    RerunClaimed,
    RerunClaimedV2,
    RerunCompleted,
    RerunCompletedV2,
    RerunRequested,
    RunIngested,
    RunRetracted,
    RunSuperseded,
    SourceRegistered,
    event_tag,
)
from projections.evidence import evidence_of, with_evidence
from projections.resolve import resolve, resolved_fields
from projections.tolerance import DEFAULT_POLICY, TolerancePolicy, judge, to_ns
from projections.views import (
    Direction,
    EvidenceLevel,
    Rerun,
    RerunRequest,
    RunView,
    instant_of,
)

__all__ = ["Context", "carried_manifests", "direction_of", "fold_run", "referenced"]

_replace = msgspec.structs.replace


class Context(msgspec.Struct, frozen=True):
    """Facts of the entry being folded that are not in the event itself."""

    seq: int
    recordedAt: str
    signerRole: str | None = None
    payloadDigest: str = ""
    signer: str = ""  # the key id that signed the entry
    signerName: str = ""  # its registered name: the identity of a rerunner
    tolerance: TolerancePolicy = DEFAULT_POLICY  # the tolerance policy in force at the entry

    def permits(self, event: AnyEvent) -> bool:
        """May the entry's signer (of ``signerRole`` at its position) write ``event``
        (``events.authority``)? An entry it may not write changes no view."""
        return by_role(event_tag(event), self.signerRole, self.signer, event) is None


_HIGHER_IS_BETTER_UNITS = frozenset(
    {
        "tokens_s",
        "tokens_per_second",
        "samples_s",
        "queries_s",
        "tflops",
        "gflops",
        "gbps",
        "x",
        "ratio",
    }
)
_HIGHER_IS_BETTER_WORDS = (
    "throughput",
    "tps",
    "tflops",
    "speedup",
    "bandwidth",
    "sol_score",
    "qps",
)


@functools.lru_cache(maxsize=4096)
def direction_of(metric: str | None, unit: str | None) -> Direction:
    """Ranking direction from the metric: time-valued metrics rank lower-first, throughput-like
    ones higher-first (docs/formats/digests.md)."""
    if unit in _HIGHER_IS_BETTER_UNITS:
        return "higher"
    name = (metric or "").lower()
    return "higher" if any(word in name for word in _HIGHER_IS_BETTER_WORDS) else "lower"


def referenced(event: RunIngested) -> dict[str, str]:
    """Role -> digest of every manifest the run references (declared or derived)."""
    return referenced_manifests(event.kind, event.manifests["run"], event.manifests)


def carried_manifests(event: RunIngested) -> dict[str, dict[str, Any]]:
    """Digest -> manifest for every referenced manifest the event carries (not the run)."""
    refs = referenced(event)
    return {refs[role]: m for role, m in event.manifests.items() if role != "run" and role in refs}


def _raw_evidence(run: dict[str, Any]) -> bool:
    spec = run["spec"]
    evidence = spec.get("evidence", {})
    return "rawSamples" in spec.get("timing", {}) or "rawSamples" in evidence or "logs" in evidence


def _ingest(event: RunIngested, ctx: Context) -> RunView:
    run = event.manifests["run"]
    spec, meta = run["spec"], run["metadata"]
    native = spec.get("sourceNative", {})
    primary = primary_measurement(run)
    base: dict[str, Any] = {
        "runDigest": event.runDigest,
        "kind": event.kind,
        "name": meta["name"],
        "title": meta.get("title"),
        "source": event.origin.source,
        "externalId": event.origin.externalId or native.get("externalId"),
        "benchmark": native.get("benchmark"),
        "aliases": tuple(event.aliases),
        "status": spec["status"],
        "sourceStatus": event.sourceStatus,
        "observedAt": spec["observedAt"],
        "publishedAt": event.publishedAt,
        "recordedAt": ctx.recordedAt,
        "ingestSeq": ctx.seq,
        "rawEvidence": _raw_evidence(run),
    }
    if primary is not None:
        base.update(
            primaryMetric=primary.metric,
            primaryStatistic=primary.statistic,
            primaryUnit=primary.unit,
            # Stored as a double whatever the manifest wrote (an int 100 and a float 100.0 must
            # give the same view bytes, before and after a round trip through the database).
            primaryValue=None if primary.value is None else float(primary.value),
            metricKey=primary.key,
            direction=direction_of(primary.metric, primary.unit),
        )
    refs = referenced(event)
    if event.kind == "BenchmarkRun":
        base.update(
            protocolKey=refs["protocol"],
            environmentKey=refs["environment"],
            workloadDigest=refs["workload"],
            implementationDigest=refs["implementation"],
            operationDigest=refs.get("operation"),
        )
    else:
        topology = spec["topology"]
        base.update(
            modelDigest=refs["model"],
            configurationDigest=refs["configuration"],
            workloadDigest=refs["workload"],
            topologyKey=serving_topology_key(run),
            metricSetKey=serving_metric_set_key(run),
            protocolKey=serving_protocol_prefix(run),
            qualityPolicy=spec["qualityPolicy"],
            hardware=topology["acceleratorModel"],
            hardwareVendor=topology.get("acceleratorVendor"),
        )
    project = event.manifests.get("project")
    if project is not None:
        base["project"] = project["spec"]["name"]
    shared = None
    if event.kind == "BenchmarkRun":
        # What resolving adds to a kernel run (hardware, correctness and comparison keys,
        # implementation, what it waits on) depends only on the manifests it references (named
        # by their digests), which of them it carries, and its metric: computed once per
        # combination. (A serving run's cohort key also takes fields of the run itself.)
        shared = (tuple(refs.items()), tuple(event.manifests), base.get("metricKey", "none"))
        extra = _KERNEL_SHARED.get(shared)
        if extra is not None:
            base.update(extra)
            return _fresh(base)
    missing = [role for role in roles(event.kind) if role not in event.manifests]
    found = {refs[role]: m for role, m in event.manifests.items() if role in refs}
    before = dict(base)
    fields = resolved_fields(base, found, missing, all_roles=True)
    if shared is not None:
        if len(_KERNEL_SHARED) > 8192:
            _KERNEL_SHARED.clear()
        _KERNEL_SHARED[shared] = {
            k: v for k, v in fields.items() if k not in before or before[k] != v
        }
    return _fresh(fields)


_KERNEL_SHARED: dict[tuple[Any, ...], dict[str, Any]] = {}
_FRESH_EVIDENCE: dict[tuple[Any, ...], tuple[EvidenceLevel, str]] = {}


def _fresh(fields: dict[str, Any]) -> RunView:
    """The view of a run just ingested, with its evidence level. Before any rerun, retraction
    or supersession, the level depends only on three of its fields: computed once for each."""
    key = (
        fields.get("sourceAvailable", False),
        fields.get("unresolved", ()),
        fields.get("rawEvidence", False),
    )
    level = _FRESH_EVIDENCE.get(key)
    if level is None:
        level = _FRESH_EVIDENCE[key] = evidence_of(RunView(**fields))
    fields["evidenceLevel"], fields["evidenceReason"] = level
    return RunView(**fields)


def _rerun(view: RunView, event: RerunCompleted | RerunCompletedV2, ctx: Context) -> Rerun:
    """A completed rerun as the index judges it: its samples (v2) or its one measured value
    (v1, whose own ``withinTolerance`` is not trusted) against the run's reported primary value,
    by the tolerance policy in force at its position."""
    reported = to_ns(view.primaryValue, view.primaryUnit)
    family = view.comparabilityFamily
    if isinstance(event, RerunCompletedV2):
        judged = judge(event.samples, reported, ctx.tolerance, family)
        return Rerun(
            seq=ctx.seq,
            rerunner=event.rerunner,
            correctnessPassed=event.correctness.passed,
            withinTolerance=judged.within,
            metric=view.primaryMetric,
            statistic=judged.statistic,
            unit="ns",
            value=judged.measuredNs,
            identity=ctx.signerName or None,
            policyVersion=judged.policyVersion,
            reportedNs=reported,
            why=judged.why or None,
            samples=event.samples,
            correctnessDetail=event.correctness.detail or None,
            requestId=event.requestId,
            harness=f"{event.harness.name} {event.harness.version}",
            environment=event.environment,
        )
    measured = event.measured
    value = to_ns(measured.value, measured.unit) if measured is not None else None
    # One measured value stands for the statistic the policy names: it is held against the
    # margin as it is (a v1 rerun carries no samples to count).
    samples = () if value is None else (value,)
    judged = judge(samples, reported, ctx.tolerance, family, at_least=1)
    return Rerun(
        seq=ctx.seq,
        rerunner=event.rerunner,
        correctnessPassed=event.correctnessPassed,
        withinTolerance=judged.within,
        metric=measured.metric if measured else None,
        statistic=measured.statistic if measured else None,
        unit=measured.unit if measured else None,
        value=measured.value if measured else None,
        identity=ctx.signerName or None,
        policyVersion=judged.policyVersion,
        reportedNs=reported,
        why=(judged.why or None) if value is not None else "no measured time",
        requestId=event.requestId,
    )


def _request(view: RunView, request_id: str) -> RerunRequest | None:
    return next((r for r in view.rerunRequests if r.requestId == request_id), None)


def _with_request(view: RunView, changed: RerunRequest) -> tuple[RerunRequest, ...]:
    return tuple(changed if r.requestId == changed.requestId else r for r in view.rerunRequests)


def _claimed(view: RunView, event: RerunClaimedV2, ctx: Context) -> RerunRequest | None:
    """The request after this claim, or None if the claim does not count: a claim its signer
    may make (``Context.permits``: a rerunner key claiming for itself) of an open request that
    no other worker's lease holds at the claim's recording time (the lease's own end decides, so
    replay decides the same)."""
    request = _request(view, event.requestId)
    if (
        request is None
        or request.completedSeq is not None
        or not ctx.permits(event)
        or not _after(event.leaseUntil, ctx.recordedAt)
        or (request.claimer not in (None, event.worker) and request.leased_at(ctx.recordedAt))
    ):
        return None
    return msgspec.structs.replace(
        request, claimer=event.worker, leaseUntil=event.leaseUntil, claimedSeq=ctx.seq
    )


def _after(later: str, earlier: str) -> bool:
    a, b = instant_of(later), instant_of(earlier)
    return a is not None and b is not None and a > b


def _answered(view: RunView, event: RerunCompletedV2, ctx: Context) -> RerunRequest | None:
    """The request a v2 result answers, marked completed; None if the result does not count:
    only the key whose claim holds the request answers it, once."""
    request = _request(view, event.requestId)
    if request is None or request.completedSeq is not None or request.claimer != ctx.signer:
        return None
    return msgspec.structs.replace(request, completedSeq=ctx.seq)


def fold_run(digest: str, view: RunView | None, event: AnyEvent, ctx: Context) -> RunView | None:
    """The run ``digest`` after ``event`` (None while the run is not in the log)."""
    match event:
        case RunIngested():
            if event.runDigest == digest:
                return view if view is not None else _ingest(event, ctx)
            if view is None or not view.waitingOn:
                return view
            found = {d: m for d, m in carried_manifests(event).items() if d in view.waitingOn}
            return with_evidence(resolve(view, found)) if found else view
        case ManifestRecorded():
            if view is None or event.digest not in view.waitingOn:
                return view
            return with_evidence(resolve(view, {event.digest: event.manifest}))
        case RunSuperseded():
            if view is None or event.runDigest != digest or view.supersededBy is not None:
                return view
            return with_evidence(
                _replace(view, supersededBy=event.supersededBy, supersededReason=event.reason)
            )
        case RunRetracted():
            if view is None or event.runDigest != digest or view.retractedReason is not None:
                return view
            return with_evidence(_replace(view, retractedReason=event.reason))
        case RerunRequested():
            if view is None or event.runDigest != digest or not ctx.permits(event):
                return view
            request = RerunRequest(ctx.payloadDigest, ctx.seq, event.reason)
            return _replace(view, rerunRequests=(*view.rerunRequests, request))
        case RerunClaimedV2():
            claimed = _claimed(view, event, ctx) if view is not None else None
            if view is None or event.runDigest != digest or claimed is None:
                return view
            return _replace(view, rerunRequests=_with_request(view, claimed))
        case RerunCompletedV2():
            if view is None or event.runDigest != digest or not ctx.permits(event):
                return view
            answered = _answered(view, event, ctx)
            if answered is None:
                return view
            rerun = _rerun(view, event, ctx)
            return with_evidence(
                _replace(
                    view,
                    reruns=(*view.reruns, rerun),
                    rerunRequests=_with_request(view, answered),
                )
            )
        case RerunCompleted():
            if view is None or event.runDigest != digest or not ctx.permits(event):
                return view
            rerun = _rerun(view, event, ctx)
            return with_evidence(_replace(view, reruns=(*view.reruns, rerun)))
        case (
            AttestationPosted()
            | ReportFiled()
            | AttestationWithdrawn()
            | AttestationHidden()
            | ReportResolved()
            | RerunClaimed()
            | KeyRegistered()
            | KeyRevoked()
            | KeyRotated()
            | KeyGranted()
            | SourceRegistered()
            | PolicyChanged()
            | CitationNotarized()
        ):
            # Attestations and reports are shown and counted from their own projections and
            # never change the evidence level; none of these touches the dossier's fields.
            return view
        case _:
            assert_never(event)
