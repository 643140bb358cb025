"""Resolving a run's references: what the manifests it references give its view (hardware,
implementation, correctness, tokenizer...), and the keys computed from them (comparison key,
cohort key).

Pure, like the run fold that calls it (``projections.runs``); what a shared manifest gives, and
every key, is computed once and kept in bounded caches that never change a result.
"""

from __future__ import annotations

from typing import Any

import msgspec

from events.identity import (
    cohort_key,
    comparison_key,
    correctness_key,
    model_tokenizer,
    serving_protocol_suffix,
)
from projections.views import RunView

__all__ = ["resolve", "resolved_fields"]


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


_KERNEL_FIELDS = {
    "protocol": "protocolKey",
    "environment": "environmentKey",
    "workload": "workloadDigest",
    "implementation": "implementationDigest",
    "operation": "operationDigest",
}
_SERVING_FIELDS = {
    "model": "modelDigest",
    "configuration": "configurationDigest",
    "workload": "workloadDigest",
    "stack": "stackDigest",
}


def resolve(view: RunView, found: dict[str, dict[str, Any]]) -> RunView:
    """Apply every manifest in ``found`` (by digest) that the run waits on; recompute its keys."""
    fields = msgspec.structs.asdict(view)
    return RunView(**resolved_fields(fields, found, list(view.unresolved)))


def resolved_fields(
    fields: dict[str, Any],
    found: dict[str, dict[str, Any]],
    unresolved: list[str],
    *,
    all_roles: bool = False,
) -> dict[str, Any]:
    """Apply the manifests in ``found`` to a view's fields (in place), with its keys.

    Resolving a workload or configuration can reveal a further reference (operation, stack),
    so roles are visited in dependency order: what a role reveals is there for the next."""
    kind = fields["kind"]
    role_field = _KERNEL_FIELDS if kind == "BenchmarkRun" else _SERVING_FIELDS
    for role, field in role_field.items():
        digest = fields.get(field)
        if digest is None or digest not in found:
            continue
        if role in unresolved:
            unresolved.remove(role)
        elif not all_roles:
            continue
        if role in ("environment", "implementation"):
            # What these give depends on the manifest alone, which its digest names.
            update = _ROLE_CACHE.get((role, digest))
            if update is None:
                update = {}
                _apply_role(update, kind, role, found[digest])
                if len(_ROLE_CACHE) > 8192:
                    _ROLE_CACHE.clear()
                _ROLE_CACHE[(role, digest)] = update
            operation = update.get("operationDigest")
            fields.update((k, v) for k, v in update.items() if k != "operationDigest")
            if operation is not None and fields.get("operationDigest") is None:
                fields["operationDigest"] = operation
            continue
        _apply_role(fields, kind, role, found[digest])
    fields["unresolved"] = tuple(unresolved)
    fields["waitingOn"] = tuple(
        d for r in unresolved if (d := fields.get(role_field[r])) is not None
    )
    _keys(fields)
    return fields


def _apply_role(fields: dict[str, Any], kind: str, role: str, manifest: dict[str, Any]) -> None:
    spec = manifest["spec"]
    if role == "environment":
        fields.update(_hardware(manifest))
    elif role == "protocol" and kind == "BenchmarkRun":
        family = spec.get("comparability", {}).get("family")
        fields["comparabilityFamily"] = family if isinstance(family, str) else None
    elif role == "workload" and kind == "BenchmarkRun":
        fields["correctnessKey"] = _correctness(manifest)
        if fields.get("operationDigest") is None:
            fields["operationDigest"] = spec["operationSpecDigest"]
    elif role == "implementation":
        meta, revision = manifest["metadata"], spec["projectRevision"]
        fields["sourceAvailable"] = _source_available(manifest)
        fields["implementation"] = meta.get("title") or meta["name"]
        fields["revision"] = revision.get("version") or revision.get("commit")
        if fields.get("operationDigest") is None:
            fields["operationDigest"] = spec["operation"]["specDigest"]
    elif role == "workload":
        fields["servingProtocolSuffix"] = serving_protocol_suffix(manifest)
    elif role == "model":
        fields["tokenizer"] = model_tokenizer(manifest)
        fields["modelResolved"] = True
    elif role == "configuration":
        fields["stackDigest"] = spec["stackDigest"]


_ROLE_CACHE: dict[tuple[str, str], dict[str, Any]] = {}

# Keys are pure functions of their parts; shared parts (a workload serves many runs) are
# computed once. The caches are bounded and never change a result.
_CORRECTNESS: dict[bytes, str] = {}
_COMPARISON: dict[tuple[str, ...], str] = {}
_ENCODE = msgspec.json.Encoder()


def _correctness(workload: dict[str, Any]) -> str:
    key = _ENCODE.encode(workload["spec"]["correctness"])
    found = _CORRECTNESS.get(key)
    if found is None:
        if len(_CORRECTNESS) > 8192:
            _CORRECTNESS.clear()
        found = _CORRECTNESS[key] = correctness_key(workload)
    return found


def _keys(fields: dict[str, Any]) -> None:
    if fields["kind"] == "BenchmarkRun":
        correctness, operation = fields.get("correctnessKey"), fields.get("operationDigest")
        if fields.get("comparisonKey") is None and correctness is not None and operation:
            parts = (
                operation,
                fields.get("workloadDigest") or "",
                fields.get("protocolKey") or "",
                fields.get("environmentKey") or "",
                correctness,
                fields.get("metricKey", "none"),
            )
            key = _COMPARISON.get(parts)
            if key is None:
                if len(_COMPARISON) > 8192:
                    _COMPARISON.clear()
                key = _COMPARISON[parts] = comparison_key(
                    operation=parts[0],
                    workload=parts[1],
                    protocol=parts[2],
                    environment=parts[3],
                    correctness=parts[4],
                    metric=parts[5],
                )
            fields["comparisonKey"] = key
        return
    suffix = fields.get("servingProtocolSuffix")
    if fields.get("cohortKey") is None and suffix is not None and fields.get("modelResolved"):
        fields["cohortKey"] = cohort_key(
            model_digest=fields.get("modelDigest") or "",
            tokenizer=fields.get("tokenizer"),
            workload_digest=fields.get("workloadDigest") or "",
            protocol_key=(fields.get("protocolKey") or "") + suffix,
            topology_key=fields.get("topologyKey") or "",
            quality_policy=fields.get("qualityPolicy") or "",
            metric_set_key=fields.get("metricSetKey") or "",
        )
