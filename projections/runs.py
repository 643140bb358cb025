"""The run fold: a run's dossier view from the events that concern it.

``fold_run(digest, view, event, ctx)`` is pure (no I/O, no clock) and exhaustive over the event
union; the materialiser routes to it every event that may concern the run.
"""

from __future__ import annotations

from typing import Any, assert_never

import msgspec

from events.identity import (
    cohort_key,
    comparison_key,
    correctness_key,
    model_tokenizer,
    primary_measurement,
    serving_metric_set_key,
    serving_protocol_prefix,
    serving_protocol_suffix,
    serving_topology_key,
)
from events.types import (
    AnyEvent,
    AttestationHidden,
    AttestationPosted,
    AttestationWithdrawn,
    CitationNotarized,
    KeyRegistered,
    KeyRevoked,
    KeyRotated,
    ManifestRecorded,
    PolicyChanged,
    ReportFiled,
    ReportResolved,
    RerunClaimed,
    RerunCompleted,
    RerunRequested,
    RunIngested,
    RunRetracted,
    RunSuperseded,
    SourceRegistered,
)
from projections.evidence import with_evidence
from projections.views import Direction, Rerun, RunView

__all__ = ["Context", "carried_manifests", "direction_of", "fold_run", "referenced"]

_replace = msgspec.structs.replace


class Context(msgspec.Struct, frozen=True):
    """Facts of the entry being folded that are not in the event itself."""

    seq: int
    recordedAt: str
    signerRole: str | None = None
    payloadDigest: str = ""


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


def direction_of(metric: str | None, unit: str | None) -> Direction:
    """Ranking direction from the metric: time-valued metrics rank lower-first, throughput-like
    ones higher-first (DESIGN.md §1)."""
    if unit in _HIGHER_IS_BETTER_UNITS:
        return "higher"
    name = (metric or "").lower()
    return "higher" if any(word in name for word in _HIGHER_IS_BETTER_WORDS) else "lower"


_KERNEL_REFS = {
    "protocol": "protocolDigest",
    "environment": "environmentDigest",
    "workload": "workloadDigest",
    "implementation": "implementationDigest",
}
_SERVING_REFS = {
    "model": "modelDigest",
    "configuration": "configurationDigest",
    "workload": "workloadDigest",
}


def referenced(event: RunIngested) -> dict[str, str]:
    """Role -> digest of every manifest the run references (declared or derived)."""
    spec = event.manifests["run"]["spec"]
    refs = _KERNEL_REFS if event.kind == "BenchmarkRun" else _SERVING_REFS
    out = {role: spec[field] for role, field in refs.items()}
    if event.kind == "BenchmarkRun":
        workload = event.manifests.get("workload")
        implementation = event.manifests.get("implementation")
        if workload is not None:
            out["operation"] = workload["spec"]["operationSpecDigest"]
        elif implementation is not None:
            out["operation"] = implementation["spec"]["operation"]["specDigest"]
    else:
        configuration = event.manifests.get("configuration")
        if configuration is not None:
            out["stack"] = configuration["spec"]["stackDigest"]
    return out


def carried_manifests(event: RunIngested) -> dict[str, dict[str, Any]]:
    """Digest -> manifest for every referenced manifest the event carries (not the run)."""
    refs = referenced(event)
    return {refs[role]: m for role, m in event.manifests.items() if role != "run" and role in refs}


def _hardware(environment: dict[str, Any]) -> dict[str, Any]:
    hw = environment["spec"]["hardware"]
    return {
        "hardware": hw.get("product"),
        "hardwareArchitecture": hw.get("architecture"),
        "hardwareVendor": hw.get("vendor"),
    }


def _source_available(implementation: dict[str, Any]) -> bool:
    spec = implementation["spec"]
    revision = spec.get("projectRevision", {})
    return "source" in spec or ("repository" in revision and "commit" in revision)


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
    missing = tuple(role for role in _roles(event.kind) if role not in event.manifests)
    waiting = tuple(refs[r] for r in missing if r in refs)
    view = RunView(**base, unresolved=missing, waitingOn=waiting)
    found = {refs[role]: m for role, m in event.manifests.items() if role in refs}
    project = event.manifests.get("project")
    if project is not None:
        view = _replace(view, project=project["spec"]["name"])
    return _resolve(view, found, all_roles=True)


def _roles(kind: str) -> tuple[str, ...]:
    if kind == "BenchmarkRun":
        return ("protocol", "environment", "workload", "implementation", "operation")
    return ("model", "configuration", "workload", "stack")


def _role_digest(view: RunView, role: str) -> str | None:
    return {
        "protocol": view.protocolKey if view.kind == "BenchmarkRun" else None,
        "environment": view.environmentKey,
        "workload": view.workloadDigest,
        "implementation": view.implementationDigest,
        "operation": view.operationDigest,
        "model": view.modelDigest,
        "configuration": view.configurationDigest,
        "stack": view.stackDigest,
    }.get(role)


def _resolve(
    view: RunView, found: dict[str, dict[str, Any]], *, all_roles: bool = False
) -> RunView:
    """Apply every manifest in ``found`` that the run references; recompute its keys."""
    changes: dict[str, Any] = {}
    unresolved = list(view.unresolved)
    # Resolving a workload or configuration can reveal a further reference (operation, stack),
    # so loop until nothing more resolves.
    progress = True
    current = view
    while progress:
        progress = False
        for role in _roles(current.kind):
            digest = _role_digest(current, role)
            if digest is None or digest not in found:
                continue
            if role in unresolved:
                unresolved.remove(role)
            elif not all_roles:
                continue
            manifest = found[digest]
            update = _apply_role(current, role, manifest)
            if update:
                changes.update(update)
                current = _replace(current, **update)
                progress = progress or any(k in update for k in ("operationDigest", "stackDigest"))
        all_roles = False
    waiting = tuple(d for r in unresolved if (d := _role_digest(current, r)) is not None)
    current = _replace(current, unresolved=tuple(unresolved), waitingOn=waiting)
    return _keys(current)


def _apply_role(view: RunView, role: str, manifest: dict[str, Any]) -> dict[str, Any]:
    spec = manifest["spec"]
    if role == "environment":
        return _hardware(manifest)
    if role == "workload" and view.kind == "BenchmarkRun":
        return {
            "correctnessKey": correctness_key(manifest),
            "operationDigest": view.operationDigest or spec["operationSpecDigest"],
        }
    if role == "implementation":
        meta = manifest["metadata"]
        update: dict[str, Any] = {
            "sourceAvailable": _source_available(manifest),
            "implementation": meta.get("title") or meta["name"],
            "revision": spec["projectRevision"].get("version")
            or spec["projectRevision"].get("commit"),
        }
        if view.operationDigest is None:
            update["operationDigest"] = spec["operation"]["specDigest"]
        return update
    if role == "workload":
        return {"servingProtocolSuffix": serving_protocol_suffix(manifest)}
    if role == "model":
        return {"tokenizer": model_tokenizer(manifest), "modelResolved": True}
    if role == "configuration":
        return {"stackDigest": spec["stackDigest"]}
    return {}


def _keys(view: RunView) -> RunView:
    if view.kind == "BenchmarkRun":
        if view.comparisonKey is None and view.correctnessKey is not None and view.operationDigest:
            key = comparison_key(
                operation=view.operationDigest,
                workload=view.workloadDigest or "",
                protocol=view.protocolKey or "",
                environment=view.environmentKey or "",
                correctness=view.correctnessKey,
                metric=view.metricKey,
            )
            return _replace(view, comparisonKey=key)
        return view
    if view.cohortKey is None and view.servingProtocolSuffix is not None and view.modelResolved:
        key = cohort_key(
            model_digest=view.modelDigest or "",
            tokenizer=view.tokenizer,
            workload_digest=view.workloadDigest or "",
            protocol_key=(view.protocolKey or "") + view.servingProtocolSuffix,
            topology_key=view.topologyKey or "",
            quality_policy=view.qualityPolicy or "",
            metric_set_key=view.metricSetKey or "",
        )
        return _replace(view, cohortKey=key)
    return view


def fold_run(digest: str, view: RunView | None, event: AnyEvent, ctx: Context) -> RunView | None:
    """The run ``digest`` after ``event`` (None while the run is not in the log)."""
    match event:
        case RunIngested():
            if event.runDigest == digest:
                return view if view is not None else with_evidence(_ingest(event, ctx))
            if view is None or not view.waitingOn:
                return view
            found = {d: m for d, m in carried_manifests(event).items() if d in view.waitingOn}
            return with_evidence(_resolve(view, found)) if found else view
        case ManifestRecorded():
            if view is None or event.digest not in view.waitingOn:
                return view
            return with_evidence(_resolve(view, {event.digest: event.manifest}))
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
        case RerunCompleted():
            if view is None or event.runDigest != digest or ctx.signerRole != "rerunner":
                return view
            measured = event.measured
            rerun = Rerun(
                seq=ctx.seq,
                rerunner=event.rerunner,
                correctnessPassed=event.correctnessPassed,
                withinTolerance=event.withinTolerance,
                metric=measured.metric if measured else None,
                statistic=measured.statistic if measured else None,
                unit=measured.unit if measured else None,
                value=measured.value if measured else None,
            )
            return with_evidence(_replace(view, reruns=(*view.reruns, rerun)))
        case (
            AttestationPosted()
            | ReportFiled()
            | AttestationWithdrawn()
            | AttestationHidden()
            | ReportResolved()
            | RerunRequested()
            | RerunClaimed()
            | KeyRegistered()
            | KeyRevoked()
            | KeyRotated()
            | SourceRegistered()
            | PolicyChanged()
            | CitationNotarized()
        ):
            # Attestations and reports are shown and counted from their own projections and
            # never change the evidence level; none of these touches the dossier's fields.
            return view
        case _:
            assert_never(event)
