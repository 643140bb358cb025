"""Digests and comparison keys, exactly as KernelIndex computes them (docs/formats/digests.md).

- ``H(v) = "sha256:" + hex(sha256(RFC 8785 bytes of v))`` (``events.canonical.digest``).
- ``spec_digest(m) = H({"apiVersion", "kind", "spec"})`` of the normalised manifest; metadata
  never enters a digest. Run, protocol (= protocolKey), environment (= environmentKey),
  workload, implementation and operation digests are all spec digests.
- ``correctness_key(workload) = H({"correctness": workload.spec.correctness})``.
- The primary measurement: with ``spec.timing``, ``latency``/``primaryStatistic``/``ns`` valued
  ``latencyNs[primaryStatistic]`` (falling back to the other of mean/median); else the first of
  ``spec.measurements``; else none. ``metric_key = "metric:statistic:unit"`` or ``"none"``.
- ``comparison_key = H({"v": 1, "operation", "workload", "protocol", "environment",
  "correctness", "metric"})``.
- Serving runs: ``protocolKey``, ``topologyKey``, ``metricSetKey`` (strings) and ``cohortKey``.
"""

from __future__ import annotations

from typing import Any

import msgspec

from events.canonical import digest

__all__ = [
    "PrimaryMeasurement",
    "cohort_key",
    "comparison_key",
    "correctness_key",
    "metric_key",
    "model_tokenizer",
    "primary_measurement",
    "serving_cohort_key",
    "serving_metric_set_key",
    "serving_protocol_key",
    "serving_protocol_prefix",
    "serving_protocol_suffix",
    "serving_topology_key",
    "spec_digest",
]


class PrimaryMeasurement(msgspec.Struct, frozen=True):
    """The value a run is ranked by."""

    metric: str
    statistic: str
    unit: str
    value: float | int | None

    @property
    def key(self) -> str:
        return f"{self.metric}:{self.statistic}:{self.unit}"


def spec_digest(manifest: dict[str, Any]) -> str:
    """Return the spec digest of a normalised manifest (metadata excluded).

    Raises:
        CanonicalizationError: the spec holds a value JSON cannot represent.
    """
    return digest(
        {"apiVersion": manifest["apiVersion"], "kind": manifest["kind"], "spec": manifest["spec"]}
    )


def correctness_key(workload: dict[str, Any]) -> str:
    """Return ``H({"correctness": workload.spec.correctness})`` of a WorkloadCase or Suite."""
    return digest({"correctness": workload["spec"]["correctness"]})


_FALLBACK = {"mean": "median", "median": "mean"}


def primary_measurement(run: dict[str, Any]) -> PrimaryMeasurement | None:
    """Return the primary measurement of a normalised BenchmarkRun (or ServingRun), or None."""
    spec = run["spec"]
    timing = spec.get("timing")
    if timing is not None:
        statistic = timing["primaryStatistic"]
        latency = timing["latencyNs"]
        value = latency.get(statistic)
        if value is None and statistic in _FALLBACK:
            value = latency.get(_FALLBACK[statistic])
        return PrimaryMeasurement("latency", statistic, "ns", value)
    measurements = spec.get("measurements")
    if measurements:
        first = measurements[0]
        return PrimaryMeasurement(
            first["metric"], first["statistic"], first["unit"], first["value"]
        )
    return None


def metric_key(run: dict[str, Any]) -> str:
    """Return ``"metric:statistic:unit"`` of the run's primary measurement, or ``"none"``."""
    primary = primary_measurement(run)
    return primary.key if primary is not None else "none"


def comparison_key(
    *,
    operation: str,
    workload: str,
    protocol: str,
    environment: str,
    correctness: str,
    metric: str,
) -> str:
    """Return the comparison key of a run from its resolved parts (docs/formats/digests.md)."""
    return digest(
        {
            "v": 1,
            "operation": operation,
            "workload": workload,
            "protocol": protocol,
            "environment": environment,
            "correctness": correctness,
            "metric": metric,
        }
    )


def serving_protocol_key(run: dict[str, Any], workload: dict[str, Any]) -> str:
    """``harness.name/harness.version/placement|unspecified/streaming|non_streaming/loadGeneration``."""
    return serving_protocol_prefix(run) + serving_protocol_suffix(workload)


def serving_protocol_prefix(run: dict[str, Any]) -> str:
    """The run's part of the serving protocol key: ``name/version/placement/``."""
    spec = run["spec"]
    harness = spec["harness"]
    return f"{harness['name']}/{harness['version']}/{spec.get('placement', 'unspecified')}/"


def serving_protocol_suffix(workload: dict[str, Any]) -> str:
    """The workload's part of the serving protocol key: ``streaming/loadGeneration``."""
    wspec = workload["spec"]
    streaming = "streaming" if wspec["streaming"] else "non_streaming"
    return f"{streaming}/{wspec['loadGeneration']}"


def serving_topology_key(run: dict[str, Any]) -> str:
    """``vendor|unknown/acceleratorModel/<perNode>x<nodes>/interconnect|unspecified``."""
    t = run["spec"]["topology"]
    vendor = t.get("acceleratorVendor", "unknown")
    interconnect = t.get("interconnect", "unspecified")
    return f"{vendor}/{t['acceleratorModel']}/{t['acceleratorsPerNode']}x{t['nodeCount']}/{interconnect}"


def serving_metric_set_key(run: dict[str, Any]) -> str:
    """The sorted unique ``metric·statistic`` pairs of the run, joined with ``,``."""
    pairs = {f"{m['metric']}\u00b7{m['statistic']}" for m in run["spec"]["measurements"]}
    return ",".join(sorted(pairs, key=lambda s: s.encode("utf-16-be", "surrogatepass")))


def model_tokenizer(model: dict[str, Any]) -> str | None:
    """``model.spec.tokenizer.name`` or None."""
    name = model["spec"].get("tokenizer", {}).get("name")
    return name if isinstance(name, str) else None


def cohort_key(
    *,
    model_digest: str,
    tokenizer: str | None,
    workload_digest: str,
    protocol_key: str,
    topology_key: str,
    quality_policy: str,
    metric_set_key: str,
) -> str:
    """``H({modelDigest, tokenizer, workloadDigest, protocolKey, topologyKey, qualityPolicy,
    metricSetKey})`` (docs/formats/digests.md)."""
    return digest(
        {
            "modelDigest": model_digest,
            "tokenizer": tokenizer,
            "workloadDigest": workload_digest,
            "protocolKey": protocol_key,
            "topologyKey": topology_key,
            "qualityPolicy": quality_policy,
            "metricSetKey": metric_set_key,
        }
    )


def serving_cohort_key(run: dict[str, Any], model: dict[str, Any], workload: dict[str, Any]) -> str:
    """The cohort key of a serving run from its model and workload manifests."""
    spec = run["spec"]
    return cohort_key(
        model_digest=spec["modelDigest"],
        tokenizer=model_tokenizer(model),
        workload_digest=spec["workloadDigest"],
        protocol_key=serving_protocol_key(run, workload),
        topology_key=serving_topology_key(run),
        quality_policy=spec["qualityPolicy"],
        metric_set_key=serving_metric_set_key(run),
    )
