"""The run dossier (docs/runs.md): everything the reference page shows, as one msgspec value.

The HTML page, ``GET /v1/runs/{ref}`` and ``benchproof runs show --json`` all render this.
"""

from __future__ import annotations

from typing import Any

import msgspec

from events.port import LogReader, Session
from projections import queries
from projections.views import RunView

__all__ = ["Dossier", "Neighbour", "build_dossier", "short_id"]


def short_id(digest: str) -> str:
    """The first 12 hex digits of a digest: the run's short id."""
    return digest.removeprefix("sha256:")[:12]


class Primary(msgspec.Struct, frozen=True):
    metric: str
    statistic: str
    unit: str
    value: float | None


class Rank(msgspec.Struct, frozen=True):
    rank: int
    of: int
    members: int
    leader: str | None
    policyVersion: str = "ranking-v1"


class HistoryItem(msgspec.Struct, frozen=True, omit_defaults=True):
    position: int
    recordedAt: str
    event: str
    evidenceLevel: str
    note: str | None = None


class Links(msgspec.Struct, frozen=True, omit_defaults=True):
    self: str
    page: str
    permalink: str
    manifest: str
    history: str
    group: str | None = None
    compareWithLeader: str | None = None


class Neighbour(msgspec.Struct, frozen=True):
    """A run of the same workload on the same hardware, with the same metric, whose primary
    value beats this run's from another comparison group; ``differs`` names the parts of the
    comparison key that keep the two apart (``protocolKey``, ``environmentKey``, …)."""

    runDigest: str
    shortId: str
    groupKey: str
    value: float | None
    unit: str | None
    differs: list[str]


_KEY_PARTS = ("operationDigest", "protocolKey", "environmentKey", "correctnessKey")


def _neighbour(view: RunView, other: RunView) -> Neighbour:
    differs = [f for f in _KEY_PARTS if getattr(view, f) != getattr(other, f)]
    return Neighbour(
        runDigest=other.runDigest,
        shortId=short_id(other.runDigest),
        groupKey=other.group_key or "",
        value=other.primaryValue,
        unit=other.primaryUnit,
        differs=differs,
    )


class Dossier(msgspec.Struct, frozen=True):
    """One run as the log stood at ``asOf`` (a tree size)."""

    runDigest: str
    shortId: str
    kind: str
    name: str
    asOf: int
    status: str
    observedAt: str
    recordedAt: str
    ingestPosition: int
    source: str
    evidenceLevel: str
    evidenceReason: str
    metricKey: str
    direction: str
    aliases: list[str]
    unresolved: list[str]
    identity: dict[str, Any]
    protocol: dict[str, Any] | None
    environment: dict[str, Any] | None
    workload: dict[str, Any] | None
    measurements: list[dict[str, Any]]
    artifacts: list[dict[str, Any]]
    attestations: list[queries.Attestation]
    reports: list[queries.Report]
    underReview: bool  # a report is open (unresolved): shown, never a change of evidence level
    hiddenByModeration: int  # attestations the index hid: kept in the log, left out of the list
    reruns: list[dict[str, Any]]
    history: list[HistoryItem]
    manifest: dict[str, Any]
    links: Links
    title: str | None = None
    comparisonKey: str | None = None
    cohortKey: str | None = None
    primary: Primary | None = None
    rank: Rank | None = None
    sourceStatus: str | None = None
    publishedAt: str | None = None
    externalId: str | None = None
    sourceNative: dict[str, Any] | None = None
    correctness: dict[str, Any] | None = None
    supersededBy: str | None = None
    retractedReason: str | None = None
    hardware: str | None = None
    # Faster (or better) runs of the same workload on the same hardware in other groups.
    betterElsewhere: list[Neighbour] = []


def _measurements(run: dict[str, Any]) -> list[dict[str, Any]]:
    spec = run["spec"]
    out: list[dict[str, Any]] = []
    timing = spec.get("timing")
    if timing is not None:
        for statistic, value in timing["latencyNs"].items():
            out.append({"metric": "latency", "statistic": statistic, "unit": "ns", "value": value})
    out.extend(spec.get("measurements", []))
    return out


def _artifacts(run: dict[str, Any], implementation: dict[str, Any] | None) -> list[dict[str, Any]]:
    spec = run["spec"]
    out = []
    raw = spec.get("timing", {}).get("rawSamples")
    if raw:
        out.append({"kind": "raw samples", **raw})
    for name, item in spec.get("evidence", {}).items():
        out.append({"kind": name, **item})
    if implementation is not None and "source" in implementation["spec"]:
        src = implementation["spec"]["source"]
        out.append(
            {
                "kind": "source",
                "digest": src["contentDigest"],
                "fileName": src.get("fileName"),
                "sizeBytes": src.get("sizeBytes"),
            }
        )
    return out


def _workload(manifest: dict[str, Any] | None, digest: str | None) -> dict[str, Any] | None:
    if manifest is None:
        return {"digest": digest, "resolved": False} if digest else None
    spec = manifest["spec"]
    out: dict[str, Any] = {
        "digest": digest,
        "kind": manifest["kind"],
        "name": manifest["metadata"]["name"],
        "title": manifest["metadata"].get("title"),
        "correctness": spec.get("correctness"),
        "resolved": True,
    }
    if manifest["kind"] == "WorkloadSuite":
        out["cases"] = len(spec["cases"])
        out["aggregation"] = spec["aggregation"]
    elif manifest["kind"] == "WorkloadCase":
        out["axes"] = spec["axes"]
    return out


def _history(conn: Session, log: LogReader, view: RunView, as_of: int | None) -> list[HistoryItem]:
    versions = queries.run_versions(conn, view.runDigest, as_of)
    headers = log.headers_at([p for p, _ in versions])
    out = []
    for position, v in versions:
        header = headers.get(position)
        type_, at = (header.type, header.recorded_at) if header else ("", "")
        note = None
        if type_.startswith("manifest.") or (
            type_ == "run.ingested.v1" and position != view.ingestSeq
        ):
            note = "a referenced manifest arrived"
        out.append(HistoryItem(position, at, type_, v.evidenceLevel, note))
    return out


def build_dossier(
    conn: Session,
    log: LogReader,
    digest: str,
    as_of: int | None,
    *,
    size: int,
    base: str = "",
    standings: queries.StandingsCache | None = None,
) -> Dossier | None:
    """The dossier of run ``digest`` as of tree size ``as_of`` (None: now, which is ``size``),
    from the projections (``conn``) and the log (``log``: the run's own manifest stays in its
    ``run.ingested`` entry; its history names the entries that changed it)."""
    view = queries.run_view(conn, digest, as_of)
    if view is None:
        return None
    at = size if as_of is None else as_of
    run = queries.run_manifest(conn, log, digest, as_of) or {}
    protocol = (
        queries.manifest(conn, view.protocolKey, as_of)
        if view.kind == "BenchmarkRun" and view.protocolKey
        else None
    )
    environment = (
        queries.manifest(conn, view.environmentKey, as_of) if view.environmentKey else None
    )
    workload = queries.manifest(conn, view.workloadDigest, as_of) if view.workloadDigest else None
    implementation = (
        queries.manifest(conn, view.implementationDigest, as_of)
        if view.implementationDigest
        else None
    )
    ranked = queries.rank_of(conn, view, as_of, standings)
    reports = queries.reports(conn, digest, as_of)
    attested = queries.attestations(conn, digest, as_of, include_hidden=True)
    group = view.group_key
    short = short_id(digest)
    manifest: dict[str, Any] = {"run": run}
    if protocol is not None:
        manifest["protocol"] = protocol
    if environment is not None:
        manifest["environment"] = environment
    links = Links(
        self=f"{base}/v1/runs/{digest}",
        page=f"{base}/runs/{short}",
        permalink=f"{base}/runs/{digest}",
        manifest=f"{base}/v1/runs/{digest}/manifest",
        history=f"{base}/v1/runs/{digest}/history",
        group=f"{base}/groups/{group}" if group else None,
        compareWithLeader=(
            f"{base}/compare?runs={short},{short_id(ranked.leader)}"
            if ranked is not None and ranked.leader and ranked.leader != digest
            else None
        ),
    )
    spec = run.get("spec", {})
    native = spec.get("sourceNative")
    # Every rerun as the index judged it, with when the log recorded it.
    recorded = log.headers_at([r.seq for r in view.reruns]) if view.reruns else {}
    reruns = []
    for r in view.reruns:
        fields = msgspec.structs.asdict(r)
        fields["position"] = fields.pop("seq")
        header = recorded.get(r.seq)
        fields["recordedAt"] = header.recorded_at if header is not None else None
        reruns.append(fields)
    identity = {
        "runDigest": digest,
        "implementation": view.implementation,
        "project": view.project,
        "revision": view.revision,
        "workload": (workload or {}).get("metadata", {}).get("title") if workload else None,
        "comparisonKey": view.comparisonKey,
        "cohortKey": view.cohortKey,
        "source": view.source,
        "externalId": view.externalId,
        "protocolKey": view.protocolKey,
        "environmentKey": view.environmentKey,
        "workloadDigest": view.workloadDigest,
        "implementationDigest": view.implementationDigest,
        "operationDigest": view.operationDigest,
        "correctnessKey": view.correctnessKey,
        "metricKey": view.metricKey,
        "benchmark": view.benchmark,
    }
    return Dossier(
        runDigest=digest,
        shortId=short,
        kind=view.kind,
        name=view.name,
        title=view.title,
        asOf=at,
        status=view.status,
        observedAt=view.observedAt,
        recordedAt=view.recordedAt,
        ingestPosition=view.ingestSeq,
        source=view.source,
        evidenceLevel=view.evidenceLevel,
        evidenceReason=view.evidenceReason,
        metricKey=view.metricKey,
        direction=view.direction,
        aliases=queries.aliases_of(conn, digest, as_of),
        unresolved=list(view.unresolved),
        identity=identity,
        protocol=protocol,
        environment=environment,
        workload=_workload(workload, view.workloadDigest),
        measurements=_measurements(run) if run else [],
        artifacts=_artifacts(run, implementation) if run else [],
        attestations=[a for a in attested if not a.hidden],
        reports=reports,
        underReview=any(r.resolution is None for r in reports),
        hiddenByModeration=sum(a.hidden for a in attested),
        reruns=reruns,
        history=_history(conn, log, view, as_of),
        manifest=manifest,
        links=links,
        comparisonKey=view.comparisonKey,
        cohortKey=view.cohortKey,
        primary=(
            Primary(
                view.primaryMetric,
                view.primaryStatistic or "",
                view.primaryUnit or "",
                view.primaryValue,
            )
            if view.primaryMetric
            else None
        ),
        rank=Rank(ranked.rank, ranked.of, ranked.members, ranked.leader) if ranked else None,
        sourceStatus=view.sourceStatus,
        publishedAt=view.publishedAt,
        externalId=view.externalId,
        sourceNative=native,
        correctness=spec.get("correctness"),
        supersededBy=view.supersededBy,
        retractedReason=view.retractedReason,
        hardware=view.hardware,
        betterElsewhere=[_neighbour(view, o) for o in queries.better_elsewhere(conn, view, as_of)],
    )
