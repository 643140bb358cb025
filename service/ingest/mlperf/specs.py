"""What an MLPerf Inference row references, as KernelIndex's serving manifests: the reference
model (or an open-division row's own), the workload of a scenario, the submitter's stack and
configuration, and the topology of the system that served (``service/ingest/README.md``)."""

from __future__ import annotations

import re
from typing import Any

from service.ingest._build import RowError, ident, manifest, number, slug

__all__ = [
    "MODELS",
    "RULES",
    "SCENARIOS",
    "TARGET",
    "base_model",
    "count",
    "reference_model",
    "serving_configuration",
    "serving_stack",
    "serving_workload",
    "system_topology",
    "text",
]

RULES = "https://github.com/mlcommons/inference_policies/blob/master/inference_rules.adoc"

# Scenario -> (identifier, load generation).
SCENARIOS = {
    "Offline": ("offline", "offline"),
    "Server": ("server", "open_loop"),
    "Interactive": ("interactive", "open_loop"),
    "SingleStream": ("single_stream", "closed_loop"),
    "MultiStream": ("multi_stream", "closed_loop"),
}
# Base model -> (ModelRevision.spec.model, dataset, streaming in Server, server SLOs (ttft, tpot)).
MODELS: dict[str, tuple[str, str, bool, tuple[int, int] | None]] = {
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
TARGET = re.compile(r"-(99(?:\.9)?)\Z")
_VENDORS = (
    ("nvidia", "nvidia"),
    ("tesla", "nvidia"),
    ("amd", "amd"),
    ("intel", "intel"),
    ("tpu", "google"),
    ("untether", "untether_ai"),
    ("qualcomm", "qualcomm"),
)


def base_model(model: str) -> str:
    base = TARGET.sub("", model)
    return _ALIASES.get(base, base)


def text(row: dict[str, Any], key: str) -> str:
    value = row[key]
    if not isinstance(value, str):
        raise RowError(f"{key} is {value!r}, not text")
    return value.strip()


def count(value: Any, what: str) -> int:
    result = number(value, what)
    if result != int(result) or result < 1:
        raise RowError(f"{what} is {value!r}, not a positive whole number")
    return int(result)


def reference_model(base: str, used: str) -> dict[str, Any]:
    if base_model(used) == base:
        name = MODELS[base][0]
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


def serving_workload(base: str, scenario: str) -> dict[str, Any]:
    _, dataset, llm_streaming, slo = MODELS[base]
    load = SCENARIOS[scenario][1]
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


def serving_stack(row: dict[str, Any]) -> dict[str, Any]:
    submitter, software = text(row, "Submitter"), text(row, "Software")
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


def serving_configuration(row: dict[str, Any], stack: str, category: str) -> dict[str, Any]:
    dtype = text(row, "weight_data_types").lower().replace("float8", "fp8")
    options = {
        "system": text(row, "System"),
        "software": text(row, "Software"),
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


def system_topology(row: dict[str, Any]) -> tuple[dict[str, Any], bool]:
    nodes = count(row["Nodes"], "Nodes")
    accelerator = text(row, "Accelerator")
    cpu_only = not accelerator and row["a#"] in ("", None, 0, 0.0)
    if cpu_only:
        model = text(row, "Processor")
        if not model:
            raise RowError("neither Accelerator nor Processor is given")
        per_node = count(row["host_processors_per_node"], "host_processors_per_node")
    else:
        if not accelerator:
            raise RowError(f"a# is {row['a#']!r} but Accelerator is empty")
        model, per_node = accelerator, count(row["a#"], "a#")
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
