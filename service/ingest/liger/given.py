"""The manifests a Liger-Kernel row's run references: its extra config read into integer axes,
numeric scalars and settings, and the operation, workload, protocol, environment and
implementation built from them (all but the implementation shared by the providers that compete
on one row's kernel, mode, metric, x value, extra config and GPU)."""

from __future__ import annotations

import json
import re
from typing import Any

from events.documents import Checked
from service.ingest._build import (
    Checker,
    RowError,
    dtype_name,
    family,
    gpu_hardware,
    ident,
    manifest,
    short_hash,
    slug,
)

__all__ = [
    "METRICS",
    "REPOSITORY",
    "Parameters",
    "given_manifests",
    "read_config",
    "split_parameters",
]

REPOSITORY = "https://github.com/linkedin/Liger-Kernel"
# metric_name -> (unit the CSV must say, our metric, our unit, protocol timer)
METRICS = {
    "speed": ("ms", "latency", "ms", "triton_do_bench"),
    "memory": ("MB", "memory", "mb", "cuda_max_memory_allocated"),
}
_INTEGER = re.compile(r"^-?[0-9]+\Z")

Parameters = tuple[dict[str, int], dict[str, float], dict[str, str]]


def read_config(text: str) -> dict[str, Any]:
    """The row's extra_benchmark_config_str as a JSON object (empty when blank)."""
    if not text.strip():
        return {}
    try:
        value = json.loads(text)
    except json.JSONDecodeError:
        raise RowError(f"extra_benchmark_config_str is not JSON: {text!r}") from None
    if not isinstance(value, dict):
        raise RowError(f"extra_benchmark_config_str is not a JSON object: {text!r}")
    return value


def split_parameters(x_name: str, x_value: str, config: dict[str, Any]) -> Parameters:
    """Split the swept value and the extra config into integer axes, numeric scalars and the
    remaining settings (strings, booleans, null), which define the operation."""
    axes: dict[str, int] = {}
    scalars: dict[str, float] = {}
    settings: dict[str, str] = {}
    names: dict[str, str] = {}

    def claim(key: str) -> str:
        name = ident(key)
        if names.setdefault(name, key) != key:
            raise RowError(f"parameters {names[name]!r} and {key!r} share the identifier {name!r}")
        return name

    for key, value in config.items():
        if key == x_name:
            if value is None:
                continue  # the swept dimension's placeholder: the x value supplies it
            if str(value) != x_value:
                raise RowError(
                    f"extra config sets {key}={value!r} but the row sweeps {key}={x_value}"
                )
            continue
        if isinstance(value, bool) or value is None or isinstance(value, str | list | dict):
            settings[key] = value if isinstance(value, str) else json.dumps(value)
        elif isinstance(value, int):
            axes[claim(key)] = value
        elif isinstance(value, float):
            scalars[claim(key)] = value
    if _INTEGER.match(x_value):
        axes[claim(x_name)] = int(x_value)
    else:
        settings[x_name] = x_value
    return axes, scalars, settings


def given_manifests(
    row: dict[str, str],
    parameters: Parameters,
    config: dict[str, Any],
    config_text: str,
    check: Checker,
    line: str,
) -> dict[str, Checked]:
    """The manifests a row's run references: everything but the provider is shared by the
    providers that compete on that row's (kernel, mode, metric, x, config, GPU)."""
    kernel, provider, mode = (
        row["kernel_name"],
        row["kernel_provider"],
        row["kernel_operation_mode"],
    )
    metric_name, gpu, version = row["metric_name"], row["gpu_name"], row["liger_version"]
    x_name, x_value = row["x_name"], row["x_value"]
    axes, scalars, settings = parameters
    timer = METRICS[metric_name][3]
    described = ", ".join(f"{k}={v}" for k, v in sorted(settings.items()))
    operation = check(
        manifest(
            "OperationSpec",
            slug(
                f"liger-{kernel}-{mode}-{short_hash(described)}"
                if described
                else f"liger-{kernel}-{mode}"
            ),
            {
                "family": family(kernel),
                "axes": {a: {"role": "variable", "type": "integer"} for a in sorted(axes)},
                "inputs": [{"name": "inputs"}],
                "outputs": [{"name": "outputs"}],
                "semantics": {
                    "mutation": "none",
                    "determinism": "unspecified",
                    "expression": (
                        f"Liger-Kernel benchmark {kernel}, mode {mode}"
                        + (f"; {described}" if described else "")
                    )[:2000],
                },
            },
            title=f"{kernel} ({mode})"[:200],
        ),
        f"{line}.operation",
    )
    workload_spec: dict[str, Any] = {
        "operationSpecDigest": operation.digest,
        "axes": axes,
        "tensors": {},
        "correctness": {"comparator": "unchecked"},
    }
    if scalars:
        workload_spec["scalars"] = {k: {"dtype": "fp64", "value": v} for k, v in scalars.items()}
    workload = check(
        manifest(
            "WorkloadCase",
            slug(f"liger-{kernel}-{mode}-{x_name}-{x_value}-{short_hash(config_text + described)}"),
            workload_spec,
            title=f"{kernel} {mode} · {x_name}={x_value}"[:200],
        ),
        f"{line}.workload",
    )
    protocol = check(
        manifest(
            "BenchmarkProtocol",
            f"liger-kernel-benchmark-{metric_name}",
            {
                "harness": {"name": "Liger-Kernel benchmark scripts", "repository": REPOSITORY},
                "measurement": {"timer": timer, "primaryStatistic": "median"},
                "comparability": {
                    "family": f"liger_kernel_{metric_name}",
                    "notes": "Quantiles (p20, median, p80) as committed to benchmark/data; "
                    "comparable within one kernel, mode, x value, extra config and GPU.",
                },
            },
            title=f"Liger-Kernel benchmark scripts ({metric_name})",
        ),
        f"{line}.protocol",
    )
    environment = check(
        manifest(
            "ExecutionEnvironment",
            slug(f"liger-{gpu}"),
            {"hardware": gpu_hardware(gpu), "software": {}},
            title=f"{gpu} (Liger-Kernel benchmark machine; hardware only)"[:200],
        ),
        f"{line}.environment",
    )
    dtype = config.get("dtype")
    dtypes = [dtype_name(dtype.removeprefix("torch."))] if isinstance(dtype, str) else []
    implementation = check(
        manifest(
            "ImplementationRevision",
            slug(f"liger-{provider}-{version}-{kernel}-{mode}-{short_hash(operation.digest)}"),
            {
                "projectRevision": {"repository": REPOSITORY, "version": version},
                "operation": {"specDigest": operation.digest},
                "callable": {"language": _language(provider), "symbol": provider},
                "support": {"hardwareArchitectures": [], "dtypes": dtypes},
                "licensing": {},
            },
            title=f"{provider} · {kernel} {mode} (Liger-Kernel {version})"[:200],
        ),
        f"{line}.implementation",
    )
    return {
        "protocol": protocol,
        "environment": environment,
        "workload": workload,
        "operation": operation,
        "implementation": implementation,
    }


def _language(provider: str) -> str:
    low = provider.lower()
    for marker, language in (("cutedsl", "cute_dsl"), ("cutile", "cutile"), ("triton", "triton")):
        if marker in low:
            return language
    return "triton" if low.startswith("liger") else "pytorch"
