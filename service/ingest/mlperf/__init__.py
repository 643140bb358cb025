"""``benchproof ingest mlperf-inference PATH...``: MLPerf Inference ``summary_results.json``.

Each result row (entry ID x benchmark model x scenario) becomes a ServingRun given with its
model, serving configuration (and stack) and serving workload. Mind the naming trap: the JSON's
``Category`` is MLPerf's *division* (closed/open) and ``Availability`` is MLPerf's *category*
(available/preview). The rules and their reasons are in ``service/ingest/README.md``.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from events import InvalidManifest
from events.types import Origin, SourceRegistered
from service.ingest._build import Checker, RowError, load_json, manifest, number, slug
from service.ingest.core import Plan, Rejected, RunItem
from service.ingest.files import SourceFile, walk
from service.ingest.mlperf.specs import (
    MODELS,
    SCENARIOS,
    TARGET,
    base_model,
    reference_model,
    serving_configuration,
    serving_stack,
    serving_workload,
    system_topology,
    text,
)

__all__ = ["IMPORTER", "VERSION", "plan"]

IMPORTER = "mlperf-inference"

VERSION = "1"

SOURCE = "mlperf-inference"

REGISTRATION = SourceRegistered(
    source=SOURCE,
    name="MLPerf Inference results (MLCommons)",
    url="https://github.com/mlcommons/inference_results_v4.1",
    license="Apache-2.0",
    notice=(
        "Results from mlcommons/inference_results_* summary_results.json, Apache-2.0. MLPerf is a "
        "trademark of MLCommons; results are shown as published and follow the MLPerf Results "
        "Messaging Guidelines (mlcommons/policies)."
    ),
)

# Rows carry no time: a round's runs are dated by the day MLCommons published the round.
PUBLISHED = {"v4.1": "2024-08-28T00:00:00Z"}

REQUIRED = (
    "ID",
    "Submitter",
    "Availability",
    "Category",
    "Suite",
    "System",
    "Model",
    "UsedModel",
    "Scenario",
    "Nodes",
    "Accelerator",
    "a#",
    "Processor",
    "host_processors_per_node",
    "Software",
    "weight_data_types",
    "version",
    "Performance_Result",
    "Performance_Units",
)

# Performance_Units -> (metric, unit); latency scenarios say which percentile they report.
_UNITS = {
    "Tokens/s": ("output_token_throughput_tps", "tokens_s"),
    "Samples/s": ("sample_throughput_sps", "samples_s"),
    "Queries/s": ("query_throughput_qps", "queries_s"),
    "Latency (ms)": ("query_latency_ms", "ms"),
}

_LATENCY_PERCENTILE = {"SingleStream": "p90", "MultiStream": "p99"}

_ID_FIELDS = ("version", "ID", "Model", "Scenario")


def plan(paths: Iterable[Path]) -> Plan:
    """Read every MLPerf ``summary_results.json`` under ``paths``.

    Returns the plan: one serving run per valid row, the rejected rows with reasons, the source.

    Raises:
        InvalidManifest: a file is not JSON, or not an array of result rows.
        NotFound / UsageError: a path is missing or a folder holds no JSON file.
    """
    out = Plan(sources=[REGISTRATION])
    check = Checker(SOURCE)
    for f in walk(paths, (".json",)):
        _read_file(f, out, check)
    return out


def _read_file(f: SourceFile, out: Plan, check: Checker) -> None:
    where = str(f.path)
    rows = load_json(f.data, where)
    if not isinstance(rows, list):
        raise InvalidManifest(
            f"{where}: not an MLPerf summary_results.json: expected a JSON array of result rows"
        )
    ids = _external_ids(rows)
    counts = Counter(i for i in ids if i is not None)
    for index, (row, external) in enumerate(zip(rows, ids, strict=True)):
        label = f"$[{index}]" + (f" ({external})" if external else "")
        try:
            if not isinstance(row, dict):
                raise RowError("a result row must be an object")
            if external is None:
                absent = [k for k in _ID_FIELDS if not isinstance(row.get(k), str) or not row[k]]
                raise RowError(f"missing {', '.join(absent)}")
            if counts[external] > 1:
                raise RowError(
                    f"{counts[external]} rows share the id {external}; nothing in them tells them apart"
                )
            out.runs.append(_run(row, external, f, check, label))
        except (RowError, InvalidManifest) as exc:
            out.rejected.append(Rejected(where, label, str(exc)))


def _external_ids(rows: list[Any]) -> list[str | None]:
    """``<version>/<ID>/<Model>/<Scenario>`` per row; rows that share it are told apart by
    ``/<UsedModel>``, then ``/<Platform>`` (rows still alike are rejected by the caller)."""
    ids: list[str | None] = []
    for row in rows:
        parts = [row.get(k) for k in _ID_FIELDS] if isinstance(row, dict) else [None]
        ok = all(isinstance(p, str) and p for p in parts)
        ids.append("/".join(parts) if ok else None)  # type: ignore[arg-type]
    for extra in ("UsedModel", "Platform"):
        counts = Counter(i for i in ids if i is not None)
        for index, row in enumerate(rows):
            current = ids[index]
            if current is not None and counts[current] > 1 and isinstance(row.get(extra), str):
                ids[index] = f"{current}/{row[extra]}"
    return ids


def _run(row: dict[str, Any], external: str, f: SourceFile, check: Checker, label: str) -> RunItem:
    missing = [k for k in REQUIRED if k not in row]
    if missing:
        raise RowError(f"missing {', '.join(missing)}")
    version, model, scenario = text(row, "version"), text(row, "Model"), text(row, "Scenario")
    division = text(row, "Category").lower()  # MLPerf's division, despite the field's name
    category = text(row, "Availability").lower()  # MLPerf's category, despite the field's name
    if division not in ("closed", "open"):
        raise RowError(f"Category (the division) is {row['Category']!r}, not closed or open")
    if category not in ("available", "preview", "rdi"):
        raise RowError(f"Availability (the category) is {row['Availability']!r}")
    if scenario not in SCENARIOS:
        raise RowError(f"unknown Scenario {scenario!r}")
    units = text(row, "Performance_Units")
    if units not in _UNITS:
        raise RowError(f"unknown Performance_Units {units!r}")
    if (units == "Latency (ms)") != (scenario in _LATENCY_PERCENTILE):
        raise RowError(f"{scenario} does not report {units}")
    value = number(row["Performance_Result"], "Performance_Result")
    observed = PUBLISHED.get(version)
    if observed is None:
        raise RowError(f"unknown round {version!r} (known: {', '.join(PUBLISHED)})")
    base, used = base_model(model), text(row, "UsedModel") or model
    if base not in MODELS:
        raise RowError(f"unknown benchmark model {model!r}")
    target = TARGET.search(model)
    quality = f"mlperf_{division}_{target.group(1).replace('.', '_') if target else '99'}"

    given = {
        "model": check(reference_model(base, used), f"{label}.model"),
        "workload": check(serving_workload(base, scenario), f"{label}.workload"),
    }
    stack = check(serving_stack(row), f"{label}.stack")
    given["configuration"] = check(
        serving_configuration(row, stack.digest, category), f"{label}.configuration"
    )
    given["stack"] = stack

    metric, unit = _UNITS[units]
    statistic = _LATENCY_PERCENTILE.get(scenario, "reported")
    metrics: dict[str, Any] = {
        "performance_result": value,
        "performance_units": units,
        "suite": text(row, "Suite")[:500],
    }
    if isinstance(row.get("Accuracy"), str) and row["Accuracy"].strip():
        metrics["accuracy"] = row["Accuracy"].strip()[:500]
    if "Power_Result" in row:
        metrics["power_result"] = number(row["Power_Result"], "Power_Result")
        metrics["power_units"] = str(row.get("Power_Units", ""))[:500]
    caveats = []
    if category == "preview":
        caveats.append(
            "Availability: preview (the system must become available, else the result is invalid)"
        )
    if division == "open":
        caveats.append("Division: open (the model or its processing may differ from the reference)")
    topology, cpu_only = system_topology(row)
    if cpu_only:
        caveats.append("No accelerator: the host processors are recorded as the accelerators")
    spec: dict[str, Any] = {
        "modelDigest": given["model"].digest,
        "configurationDigest": given["configuration"].digest,
        "workloadDigest": given["workload"].digest,
        "topology": topology,
        "harness": {"name": "mlperf_loadgen", "version": version},
        "qualityPolicy": quality,
        "status": "valid",
        "measurements": [{"metric": metric, "unit": unit, "statistic": statistic, "value": value}],
        "observedAt": observed,
        "sourceNative": {
            "source": SOURCE,
            "benchmark": model[:200],
            "scenario": SCENARIOS[scenario][0],
            "division": division,
            "category": category,
            "externalId": external[:500],
            "metrics": metrics,
        },
    }
    if caveats:
        spec["caveats"] = caveats
    details = row.get("Details")
    run = check(
        manifest(
            "ServingRun",
            slug(f"mlperf-{external}"),
            spec,
            title=f"{text(row, 'Submitter')} · {model} · {scenario}"[:200],
            sourceRefs=[{"url": details[:2000]}] if isinstance(details, str) and details else None,
        ),
        f"{label}.run",
    )
    origin = Origin(
        source=SOURCE,
        importer=IMPORTER,
        importerVersion=VERSION,
        snapshotDigest=f.digest,
        externalId=external,
        path=f.path.name,
    )
    return RunItem(
        run=run,
        given=given,
        origin=origin,
        aliases=(f"{SOURCE}:{external}",),
        publishedAt=observed,
        rowKey=f"{SOURCE}:{external}",
    )
