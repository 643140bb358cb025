"""Which manifests a run references, and in which roles: one rule for the importers (which
resolve them before appending) and the projections (which fold them into the run's view).

A kernel run names its protocol, environment, workload and implementation in its spec; its
workload (or, lacking it, its implementation) reveals its operation. A serving run names its
model, configuration and workload; its configuration reveals its stack.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

__all__ = ["KERNEL_REFS", "SERVING_REFS", "referenced_manifests", "roles"]

KERNEL_REFS = {
    "protocol": "protocolDigest",
    "environment": "environmentDigest",
    "workload": "workloadDigest",
    "implementation": "implementationDigest",
}
"""Role -> the field of a kernel run's spec that names that manifest by digest."""
SERVING_REFS = {
    "model": "modelDigest",
    "configuration": "configurationDigest",
    "workload": "workloadDigest",
}
"""Role -> the field of a serving run's spec that names that manifest by digest."""

_KERNEL_ROLES = ("protocol", "environment", "workload", "implementation", "operation")
_SERVING_ROLES = ("model", "configuration", "workload", "stack")


def roles(kind: str) -> tuple[str, ...]:
    """Every role a run of ``kind`` references (declared or revealed), in resolution order."""
    return _KERNEL_ROLES if kind == "BenchmarkRun" else _SERVING_ROLES


def referenced_manifests(
    kind: str, run: Mapping[str, Any], carried: Mapping[str, Mapping[str, Any]]
) -> dict[str, str]:
    """Role -> digest of every manifest the run manifest ``run`` references: those its spec
    declares, and those that the manifests in ``carried`` (role -> manifest) reveal."""
    spec = run["spec"]
    if kind == "BenchmarkRun":
        out = {role: spec[field] for role, field in KERNEL_REFS.items()}
        workload, implementation = carried.get("workload"), carried.get("implementation")
        if workload is not None:
            out["operation"] = workload["spec"]["operationSpecDigest"]
        elif implementation is not None:
            out["operation"] = implementation["spec"]["operation"]["specDigest"]
        return out
    out = {role: spec[field] for role, field in SERVING_REFS.items()}
    configuration = carried.get("configuration")
    if configuration is not None:
        out["stack"] = configuration["spec"]["stackDigest"]
    return out
