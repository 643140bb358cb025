"""``benchproof ingest kernelbench-timings PATH...``: KernelBench's reference baseline timings.

Reads ``results/timing/<folder>/baseline_time_<config>.json`` files (a PATH may be a folder,
such as the corpus folder holding ``at-7dd9cfa/`` and ``at-423217d/``; older snapshots are read
first). Each (level, problem) entry becomes a BenchmarkRun of the PyTorch reference built as
``<config>`` (eager, or a torch.compile mode), on the GPU the entry names, in an environment that
also names the folder (the timing host). A ``null`` entry is a failed baseline: a run with status
``runtime_error`` and no measurement. The rules and their reasons are in
``service/ingest/README.md``.
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from events import InvalidManifest
from events.documents import Checked
from events.types import Origin, SourceRegistered
from service.errors import UsageError
from service.ingest._build import (
    Checker,
    RowError,
    family,
    gpu_hardware,
    load_json,
    manifest,
    ms_to_ns,
    number,
    short_hash,
    slug,
)
from service.ingest.core import Plan, Rejected, RunItem
from service.ingest.files import SourceFile, walk

__all__ = ["IMPORTER", "SNAPSHOTS", "VERSION", "plan"]

IMPORTER = "kernelbench-timings"
VERSION = "1"
SOURCE = "kernelbench-timings"
REPOSITORY = "https://github.com/ScalingIntelligence/KernelBench"

REGISTRATION = SourceRegistered(
    source=SOURCE,
    name="KernelBench reference baseline timings",
    url=REPOSITORY,
    license="MIT",
    notice=(
        "Copyright (c) 2023 Anne Ouyang, Simon Guo, Azalia Mirhoseini, Scaling Intelligence Lab, "
        "Stanford University. Timing data from ScalingIntelligence/KernelBench results/timing, "
        "redistributed under the MIT License."
    ),
)

# Snapshot folders (``at-<short commit>``): full commit and commit date, oldest first.
SNAPSHOTS: dict[str, tuple[str, str]] = {
    "7dd9cfa": ("7dd9cfa0c02e8340c9bc9a919d3f19777a8f2eb2", "2025-03-16"),
    "423217d": ("423217d9fda91e0c2d67e4a43bf62f96f6d104f1", "2026-03-05"),
}
# The snapshot that first holds each timing folder. Rows carry no time, so a run is dated by
# the first snapshot holding its folder: a row repeated unchanged by a later snapshot then keeps
# its digest (and appends nothing), while a changed row supersedes it.
FIRST_SEEN: dict[str, str] = {
    **dict.fromkeys(
        (
            "A100-80GB_modal",
            "A100_modal",
            "A10G_modal",
            "B200_together",
            "H100_together",
            "L40S_matx3",
            "L40S_modal",
            "L4_modal",
            "T4_modal",
        ),
        "7dd9cfa",
    ),
    "H100_Modal": "423217d",
    "H100_PCIe_LambdaLabs": "423217d",
}
_SNAPSHOT_DIR = re.compile(r"^at-([0-9a-f]{7,40})\Z")
_FIELDS = ("mean", "std", "min", "max")


def _snapshot(path: Path) -> str | None:
    for part in reversed(path.parts[:-1]):
        match = _SNAPSHOT_DIR.match(part)
        if match:
            return next((k for k in SNAPSHOTS if match.group(1).startswith(k)), match.group(1))
    return None


def _order(f: SourceFile) -> tuple[int, str, str]:
    snap = _snapshot(f.path)
    if snap in SNAPSHOTS:
        return (0, SNAPSHOTS[snap][1], str(f.path))
    return (1, "", str(f.path))


def _observed(f: SourceFile) -> str:
    snap = FIRST_SEEN.get(f.path.parent.name) or _snapshot(f.path)
    if snap not in SNAPSHOTS:
        known = ", ".join(f"at-{k}" for k in SNAPSHOTS)
        raise UsageError(
            f"{f.path}: cannot date these timings (rows carry no time): the folder "
            f"{f.path.parent.name!r} is not a known timing folder and the file is not under a "
            f"known snapshot folder ({known})"
        )
    return SNAPSHOTS[snap][1] + "T00:00:00Z"


def plan(paths: Iterable[Path]) -> Plan:
    """Read every KernelBench timing JSON under ``paths`` (older snapshots first).

    Returns the plan: one run per entry (null entries included, as failed baselines), the
    rejected entries with reasons, and the source.

    Raises:
        InvalidManifest: a file is not JSON, or not an object of levels.
        UsageError: a file cannot be dated (see ``FIRST_SEEN``), or a folder holds no JSON.
        NotFound: a path is missing.
    """
    out = Plan(sources=[REGISTRATION])
    check = Checker(SOURCE)
    for f in sorted(walk(paths, (".json",)), key=_order):
        _read_file(f, out, check)
    return out


def _read_file(f: SourceFile, out: Plan, check: Checker) -> None:
    where = str(f.path)
    doc = load_json(f.data, where)
    if not isinstance(doc, dict) or not all(isinstance(k, str) for k in doc):
        raise InvalidManifest(
            f"{where}: not a KernelBench timing file: expected an object of levels "
            '({"level1": {"<problem>.py": {...}}})'
        )
    observed = _observed(f)
    folder = f.path.parent.name
    config = f.path.stem.removeprefix("baseline_time_")
    entries: list[tuple[str, str, Any]] = []
    for level, problems in doc.items():
        if not isinstance(problems, dict):
            out.rejected.append(Rejected(where, level, "a level must be an object of problems"))
            continue
        entries.extend((level, problem, entry) for problem, entry in problems.items())
    # A null entry names no GPU and no trial count: it takes those its file's other entries
    # agree on (none when they disagree), so it lands in the same protocol and environment.
    defaults = (_consensus(entries, "hardware", str), _consensus(entries, "num_trials", int))
    for level, problem, entry in entries:
        row = f"{level}/{problem}"
        try:
            out.runs.append(
                _run(f, check, (folder, config, observed), level, problem, entry, defaults)
            )
        except (RowError, InvalidManifest) as exc:
            out.rejected.append(Rejected(where, row, str(exc)))


def _consensus(entries: list[tuple[str, str, Any]], field: str, kind: type) -> Any:
    values = Counter(
        e[field] for _, _, e in entries if isinstance(e, dict) and type(e.get(field)) is kind
    )
    return next(iter(values)) if len(values) == 1 else None


def _timings(entry: Any) -> tuple[str, dict[str, float], int]:
    if not isinstance(entry, dict):
        raise RowError(f"an entry must be an object or null, not {type(entry).__name__}")
    missing = [k for k in (*_FIELDS, "num_trials", "hardware") if k not in entry]
    if missing:
        raise RowError(f"missing {', '.join(missing)}")
    hardware = entry["hardware"]
    if not isinstance(hardware, str) or not hardware.strip():
        raise RowError(f"hardware is {hardware!r}, not a GPU name")
    trials = entry["num_trials"]
    if not isinstance(trials, int) or isinstance(trials, bool) or trials <= 0:
        raise RowError(f"num_trials is {trials!r}, not a positive integer")
    return hardware, {k: number(entry[k], k) for k in _FIELDS}, trials


def _run(
    f: SourceFile,
    check: Checker,
    where: tuple[str, str, str],
    level: str,
    problem: str,
    entry: Any,
    defaults: tuple[str | None, int | None],
) -> RunItem:
    folder, config, observed = where
    row = f"{level}/{problem}"
    failed = entry is None
    hardware: str | None
    trials: int | None
    times: dict[str, float] = {}
    if failed:
        hardware, trials = defaults
    else:
        hardware, times, trials = _timings(entry)
    name = problem.removesuffix(".py")
    operation = check(
        manifest(
            "OperationSpec",
            slug(f"kernelbench-{level}-{name}"),
            {
                "family": family(f"kernelbench-{level}"),
                "axes": {},
                "inputs": [{"name": "inputs"}],
                "outputs": [{"name": "output"}],
                "semantics": {
                    "mutation": "none",
                    "determinism": "unspecified",
                    "expression": f"KernelBench {level} problem {problem}: Model.forward on the "
                    "inputs of its get_inputs()"[:2000],
                },
                "reference": {"language": "pytorch"},
            },
            title=f"KernelBench {level} · {name}"[:200],
        ),
        f"{row}.operation",
    )
    workload = check(
        manifest(
            "WorkloadCase",
            slug(f"kernelbench-{level}-{name}-inputs"),
            {
                "operationSpecDigest": operation.digest,
                "axes": {},
                "tensors": {},
                "correctness": {"comparator": "unchecked"},
            },
            title=f"KernelBench {level} · {name} (the problem's fixed inputs)"[:200],
        ),
        f"{row}.workload",
    )
    implementation = check(
        manifest(
            "ImplementationRevision",
            slug(f"kernelbench-{level}-{name}-{config}"),
            {
                "projectRevision": {"repository": REPOSITORY},
                "operation": {"specDigest": operation.digest},
                "callable": {
                    "language": "pytorch",
                    "path": f"KernelBench/{level}/{problem}"[:500],
                    "symbol": "Model",
                },
                "support": {"hardwareArchitectures": [], "dtypes": []},
                "licensing": {"declared": "MIT"},
                "buildVariants": [
                    {"name": slug(config), "install": {"kind": "pip", "package": "torch"}}
                ],
            },
            title=f"PyTorch reference · {name} · {config}"[:200],
        ),
        f"{row}.implementation",
    )
    measurement: dict[str, Any] = {
        "timer": "cuda_events",
        "primaryStatistic": "mean",
        "warmupIterations": 3,
    }
    if trials is not None:
        measurement["samples"] = trials
    protocol = check(
        manifest(
            "BenchmarkProtocol",
            slug(f"kernelbench-baseline-timing-{trials or 'unknown'}"),
            {
                "harness": {"name": "KernelBench baseline timing", "repository": REPOSITORY},
                "measurement": measurement,
                "comparability": {
                    "family": "kernelbench_baseline",
                    "notes": "Reference (PyTorch) timings in ms over the trials after warm-up, "
                    "as committed to results/timing; comparable within one problem, GPU and "
                    "timing host.",
                },
            },
            title="KernelBench baseline timing",
        ),
        f"{row}.protocol",
    )
    environment = check(_environment(hardware, folder), f"{row}.environment")
    spec: dict[str, Any] = {
        "implementationDigest": implementation.digest,
        "workloadDigest": workload.digest,
        "protocolDigest": protocol.digest,
        "environmentDigest": environment.digest,
        "status": "runtime_error" if failed else "passed",
        "observedAt": observed,
    }
    if not failed:
        spec["timing"] = {
            "primaryStatistic": "mean",
            "samples": trials,
            "latencyNs": {
                "mean": ms_to_ns(times["mean"]),
                "minimum": ms_to_ns(times["min"]),
                "maximum": ms_to_ns(times["max"]),
            },
        }
        spec["measurements"] = [
            {
                "metric": "latency",
                "statistic": stat,
                "unit": "ms",
                "value": times[key],
                "sampleCount": trials,
            }
            for key, stat in (
                ("mean", "mean"),
                ("std", "std"),
                ("min", "minimum"),
                ("max", "maximum"),
            )
        ]
    external = f"{folder}/{config}/{level}/{problem}"
    spec["sourceNative"] = {"source": SOURCE, "benchmark": row[:200], "externalId": external[:500]}
    run = check(
        manifest(
            "BenchmarkRun",
            slug(f"kernelbench-{folder}-{config}-{level}-{name}", limit=185)
            + "-"
            + short_hash(external),
            spec,
            title=f"{name} · {config} · {hardware or 'GPU unknown'} ({folder})"[:200],
        ),
        f"{row}.run",
    )
    origin = Origin(
        source=SOURCE,
        importer=IMPORTER,
        importerVersion=VERSION,
        snapshotDigest=f.digest,
        externalId=external,
        path=f.path.name,
    )
    given: dict[str, Checked] = {
        "protocol": protocol,
        "environment": environment,
        "workload": workload,
        "operation": operation,
        "implementation": implementation,
    }
    return RunItem(
        run=run,
        given=given,
        origin=origin,
        aliases=(f"{SOURCE}:{external}",),
        sourceStatus="null" if failed else None,
        rowKey=f"{SOURCE}:{external}",
    )


def _environment(hardware: str | None, folder: str) -> dict[str, Any]:
    if hardware is None:
        block = {"vendor": "unknown", "product": "unknown", "architecture": "unknown"}
    else:
        block = gpu_hardware(hardware)
    return manifest(
        "ExecutionEnvironment",
        slug(f"kernelbench-{folder}-{hardware or 'unknown'}"),
        {"hardware": block, "software": {"libraries": {"kernelbench_timing_folder": folder[:100]}}},
        title=f"{hardware or 'unknown GPU'} on timing host {folder}"[:200],
    )
