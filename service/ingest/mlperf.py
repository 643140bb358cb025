"""``benchproof ingest mlperf-inference PATH...``: MLPerf Inference ``summary_results.json``.

Each result row (entry ID x benchmark model x scenario) becomes a ServingRun given with its
model, serving configuration (and stack) and serving workload. Mind the naming trap: the JSON's
``Category`` is MLPerf's *division* (closed/open) and ``Availability`` is MLPerf's *category*
(available/preview). The rules and their reasons are in ``service/ingest/README.md``.
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from events import InvalidManifest
from events.types import Origin, SourceRegistered
from service.ingest._build import Checker, RowError, ident, load_json, manifest, number, slug
from service.ingest.core import Plan, Rejected, RunItem
from service.ingest.files import SourceFile, walk

__all__ = ["IMPORTER", "VERSION", "plan"]

IMPORTER = "mlperf-inference"
VERSION = "1"
SOURCE = "mlperf-inference"
RULES = "https://github.com/mlcommons/inference_policies/blob/master/inference_rules.adoc"

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
# Scenario -> (identifier, load generation).
_SCENARIOS = {
    "Offline": ("offline", "offline"),
    "Server": ("server", "open_loop"),
    "Interactive": ("interactive", "open_loop"),
    "SingleStream": ("single_stream", "closed_loop"),
    "MultiStream": ("multi_stream", "closed_loop"),
}
# Base model -> (ModelRevision.spec.model, dataset, streaming in Server, server SLOs (ttft, tpot)).
_MODELS: dict[str, tuple[str, str, bool, tuple[int, int] | None]] = {
    "resnet": ("ResNet-50 v1.5 (MLPerf reference)", "ImageNet 2012 validation", False, None),
    "retinanet": ("RetinaNet (MLPerf reference)", "OpenImages (MLPerf subset)", False, None),
    "bert": ("BERT-Large (MLPerf reference)", "SQuAD v1.1", False, None),
    "gptj": ("GPT-J 6B (MLPerf reference)", "CNN DailyMail", False, None),
    "llama2-70b": (
        "Llama-2-70B (MLPerf reference)",
        "OpenOrca (max_seq_len=1024)",
        True,
        (2000, 200),
    ),
    "mixtral-8x7b": (
        "Mixtral-8x7B (MLPerf reference)",
        "OpenOrca + GSM8K + MBXP (5k each)",
        True,
        (2000, 200),
    ),
    "stable-diffusion-xl": (
        "Stable Diffusion XL (MLPerf reference)",
        "COCO 2014 captions",
        False,
        None,
    ),
    "dlrm-v2": ("DLRM v2 (MLPerf reference)", "Criteo 1TB Click Logs (multi-hot)", False, None),
    "3d-unet": ("3D U-Net (MLPerf reference)", "KiTS 2019", False, None),
}
_ALIASES = {"resnet50": "resnet"}
_ID_FIELDS = ("version", "ID", "Model", "Scenario")
_TARGET = re.compile(r"-(99(?:\.9)?)\Z")
_VENDORS = (
    ("nvidia", "nvidia"),
    ("tesla", "nvidia"),
    ("amd", "amd"),
    ("intel", "intel"),
    ("tpu", "google"),
    ("untether", "untether_ai"),
    ("qualcomm", "qualcomm"),
)


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


def _base(model: str) -> str:
    base = _TARGET.sub("", model)
    return _ALIASES.get(base, base)


def _text(row: dict[str, Any], key: str) -> str:
    value = row[key]
    if not isinstance(value, str):
        raise RowError(f"{key} is {value!r}, not text")
    return value.strip()


def _count(value: Any, what: str) -> int:
    result = number(value, what)
    if result != int(result) or result < 1:
        raise RowError(f"{what} is {value!r}, not a positive whole number")
    return int(result)


def _run(row: dict[str, Any], external: str, f: SourceFile, check: Checker, label: str) -> RunItem:
    missing = [k for k in REQUIRED if k not in row]
    if missing:
        raise RowError(f"missing {', '.join(missing)}")
    version, model, scenario = _text(row, "version"), _text(row, "Model"), _text(row, "Scenario")
    division = _text(row, "Category").lower()  # MLPerf's division, despite the field's name
    category = _text(row, "Availability").lower()  # MLPerf's category, despite the field's name
    if division not in ("closed", "open"):
        raise RowError(f"Category (the division) is {row['Category']!r}, not closed or open")
    if category not in ("available", "preview", "rdi"):
        raise RowError(f"Availability (the category) is {row['Availability']!r}")
    if scenario not in _SCENARIOS:
        raise RowError(f"unknown Scenario {scenario!r}")
    units = _text(row, "Performance_Units")
    if units not in _UNITS:
        raise RowError(f"unknown Performance_Units {units!r}")
    if (units == "Latency (ms)") != (scenario in _LATENCY_PERCENTILE):
        raise RowError(f"{scenario} does not report {units}")
    value = number(row["Performance_Result"], "Performance_Result")
    observed = PUBLISHED.get(version)
    if observed is None:
        raise RowError(f"unknown round {version!r} (known: {', '.join(PUBLISHED)})")
    base, used = _base(model), _text(row, "UsedModel") or model
    if base not in _MODELS:
        raise RowError(f"unknown benchmark model {model!r}")
    target = _TARGET.search(model)
    quality = f"mlperf_{division}_{target.group(1).replace('.', '_') if target else '99'}"

    given = {
        "model": check(_model(base, used), f"{label}.model"),
        "workload": check(_workload(base, scenario), f"{label}.workload"),
    }
    stack = check(_stack(row), f"{label}.stack")
    given["configuration"] = check(
        _configuration(row, stack.digest, category), f"{label}.configuration"
    )
    given["stack"] = stack

    metric, unit = _UNITS[units]
    statistic = _LATENCY_PERCENTILE.get(scenario, "reported")
    metrics: dict[str, Any] = {
        "performance_result": value,
        "performance_units": units,
        "suite": _text(row, "Suite")[:500],
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
    topology, cpu_only = _topology(row)
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
            "scenario": _SCENARIOS[scenario][0],
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
            title=f"{_text(row, 'Submitter')} · {model} · {scenario}"[:200],
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


def _model(base: str, used: str) -> dict[str, Any]:
    if _base(used) == base:
        name = _MODELS[base][0]
        return manifest(
            "ModelRevision",
            slug(f"mlperf-{base}"),
            {"model": name},
            title=name,
            sourceRefs=[{"url": RULES}],
        )
    # Open division: the result was produced with another model than the benchmark's reference.
    return manifest(
        "ModelRevision", slug(f"mlperf-open-{used}"), {"model": used[:200]}, title=used[:200]
    )


def _workload(base: str, scenario: str) -> dict[str, Any]:
    _, dataset, llm_streaming, slo = _MODELS[base]
    load = _SCENARIOS[scenario][1]
    spec: dict[str, Any] = {
        "dataset": {"name": dataset},
        "streaming": load == "open_loop" and llm_streaming,
        "loadGeneration": load,
    }
    if load == "open_loop":
        spec["arrival"] = "poisson"
        if slo is not None and scenario == "Server":
            ttft, tpot = slo
            spec["slo"] = [
                {
                    "metric": "ttft_ms",
                    "statistic": "p99",
                    "operator": "<=",
                    "value": ttft,
                    "unit": "ms",
                },
                {
                    "metric": "tpot_ms",
                    "statistic": "p99",
                    "operator": "<=",
                    "value": tpot,
                    "unit": "ms",
                },
            ]
    return manifest(
        "ServingWorkload",
        slug(f"mlperf-{base}-{scenario}"),
        spec,
        title=f"{base} · {scenario}",
        sourceRefs=[{"url": RULES}],
    )


def _stack(row: dict[str, Any]) -> dict[str, Any]:
    submitter, software = _text(row, "Submitter"), _text(row, "Software")
    revision = {"version": software[:120]} if software else {}
    return manifest(
        "ServingStackRevision",
        slug(f"mlperf-stack-{submitter}-{software}", limit=100),
        {
            "project": {"name": f"{submitter} (MLPerf submitter)"[:200]},
            "revision": revision,
            "apiProtocol": "loadgen_sut",
        },
    )


def _configuration(row: dict[str, Any], stack: str, category: str) -> dict[str, Any]:
    dtype = _text(row, "weight_data_types").lower().replace("float8", "fp8")
    options = {
        "system": _text(row, "System"),
        "software": _text(row, "Software"),
        "availability": category,
    }
    notes = row.get("Notes")
    if isinstance(notes, str) and notes.strip():
        options["notes"] = notes.strip()
    spec: dict[str, Any] = {
        "stackDigest": stack,
        "options": {k: v[:500] for k, v in options.items() if v},
    }
    if dtype:
        spec["dtype"] = ident(dtype)
    return manifest(
        "ServingConfiguration",
        slug(f"mlperf-{row['Submitter']}-{options['system']}"),
        spec,
    )


def _topology(row: dict[str, Any]) -> tuple[dict[str, Any], bool]:
    nodes = _count(row["Nodes"], "Nodes")
    accelerator = _text(row, "Accelerator")
    cpu_only = not accelerator and row["a#"] in ("", None, 0, 0.0)
    if cpu_only:
        model = _text(row, "Processor")
        if not model:
            raise RowError("neither Accelerator nor Processor is given")
        per_node = _count(row["host_processors_per_node"], "host_processors_per_node")
    else:
        if not accelerator:
            raise RowError(f"a# is {row['a#']!r} but Accelerator is empty")
        model, per_node = accelerator, _count(row["a#"], "a#")
    topology: dict[str, Any] = {
        "acceleratorModel": model[:200],
        "acceleratorsPerNode": per_node,
        "nodeCount": nodes,
    }
    low = model.lower()
    vendor = next((v for key, v in _VENDORS if key in low), None)
    if vendor is not None:
        topology["acceleratorVendor"] = vendor
    return topology, cpu_only
