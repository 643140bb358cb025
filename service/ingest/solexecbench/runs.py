"""What SOL-ExecBench results become: a trace line, one BenchmarkRun of one workload; a
leaderboard submission, one BenchmarkRun over a WorkloadSuite of its definition's workloads,
in the shape KernelIndex gives SOL runs."""

from __future__ import annotations

from functools import partial
from typing import Any

from events import InvalidManifest
from events.documents import Checked
from service.ingest._build import (
    Checker,
    RowError,
    ident,
    instant,
    manifest,
    ms_to_ns,
    number,
    short_hash,
    slug,
)
from service.ingest.core import Plan, Rejected, RunItem
from service.ingest.files import SourceFile
from service.ingest.solexecbench.format import sol_suite
from service.ingest.solexecbench.problems import read_case
from service.ingest.solexecbench.source import (
    EVAL,
    REPOSITORY,
    SOURCE,
    STATUSES,
    Problem,
    find_problem,
    gpu_of,
    guard,
    implementation_manifest,
    protocol_manifest,
    run_item,
)

__all__ = ["leaderboard", "trace"]

_LEADERBOARD_METRICS = ("sol_score", "latency_ms", "avg_speedup", "fast_1_count", "fast_1_total")
_FLAGS = ("has_nan", "has_inf")
# A solution's identity does not depend on where it ran (traces name no target hardware).
_ANY_HARDWARE: dict[str, Any] = {"hardwareArchitectures": []}


def trace(f: SourceFile, doc: Any, by_name: dict[str, list[Problem]], check: Checker) -> RunItem:
    if not isinstance(doc, dict) or not isinstance(doc.get("evaluation"), dict):
        raise RowError("a trace needs an evaluation object")
    problem = find_problem(doc.get("definition"), by_name, f.path.parent)
    solution, evaluation, raw = doc.get("solution"), doc["evaluation"], doc.get("workload")
    if not isinstance(solution, str) or not solution:
        raise RowError("a trace needs a solution name")
    uuid = raw.get("uuid") if isinstance(raw, dict) else raw
    if not isinstance(uuid, str):
        raise RowError("a trace needs a workload (its uuid, or the workload object)")
    if uuid in problem.workloads:
        workload = problem.workloads[uuid][1]
    elif isinstance(raw, dict):
        workload = read_case(problem, raw, check)[1]
    else:
        raise RowError(f"workload {uuid} is not among the workloads of {problem.name}")
    word = evaluation.get("status")
    if not isinstance(word, str) or word not in STATUSES:  # a list or object is no status
        raise RowError(f"unknown status {word!r} (expected one of {', '.join(STATUSES)})")
    env = evaluation.get("environment")
    libs = (env.get("libs") or {}) if isinstance(env, dict) else None
    if not isinstance(env, dict) or not isinstance(libs, dict):
        raise RowError("evaluation.environment must be an object with hardware and libs")
    hardware = gpu_of(env.get("hardware"))
    libraries = {ident(str(k)): str(v)[:100] for k, v in sorted(libs.items())}
    environment = manifest(
        "ExecutionEnvironment",
        slug(f"sol-execbench-{hardware['product']}-{short_hash(str(libraries))}"),
        {"hardware": hardware, "software": {"libraries": libraries}},
        title=f"{hardware['product']} (SOL-ExecBench trace environment)"[:200],
    )
    harness: dict[str, Any] = {"name": "SOL-ExecBench", "repository": REPOSITORY}
    version = libs.get("sol_execbench") or libs.get("sol-execbench")
    if isinstance(version, str) and version:
        harness["version"] = version[:100]
    notes = (
        "Per-workload mean latency from SOL-ExecBench trace records; comparable within one "
        "definition, workload, GPU and evaluator version."
    )
    name = slug(f"sol-execbench-trace-{harness.get('version', 'unversioned')}")
    given = {
        "protocol": check(
            protocol_manifest(harness, "harness_reported", "sol_execbench_trace", notes, name)
        ),
        "environment": check(environment),
        "workload": workload,
        "operation": problem.operation,
        "implementation": check(
            implementation_manifest(
                problem, solution, "unknown", _ANY_HARDWARE, f"{solution} · {problem.name}"
            )
        ),
    }
    observed = instant(evaluation.get("timestamp"), "evaluation.timestamp")
    spec, metrics = _outcome(word, evaluation)
    native: dict[str, Any] = {"source": SOURCE, "benchmark": problem.name[:200]}
    if metrics:
        native["metrics"] = metrics
    spec.update(status=STATUSES[word], observedAt=observed, sourceNative=native)
    row_key = f"{SOURCE}:trace:{problem.name}/{solution}/{uuid}/{hardware['product']}/{observed}"
    return run_item(
        f,
        check,
        given,
        spec,
        name=slug(f"sol-trace-{problem.name}-{solution}", limit=185) + "-" + short_hash(row_key),
        title=f"{solution} · {problem.name} · {uuid} · {hardware['product']}"[:200],
        word=word,
        external=None,
        row_key=row_key,
    )


def _outcome(word: str, evaluation: dict[str, Any]) -> tuple[dict[str, Any], dict[str, float]]:
    """What a trace's status lets it carry (FORMAT.md): PASSED correctness and performance,
    INCORRECT_NUMERICAL correctness only, every other status neither."""
    spec: dict[str, Any] = {}
    metrics: dict[str, float] = {}
    correctness = evaluation.get("correctness")
    if isinstance(correctness, dict) and word in ("PASSED", "INCORRECT_NUMERICAL"):
        spec["correctness"] = {"comparator": EVAL}
        for key, field in (
            ("max_absolute_error", "maximumAbsoluteError"),
            ("max_relative_error", "maximumRelativeError"),
        ):
            if correctness.get(key) is not None:
                spec["correctness"][field] = number(correctness[key], f"correctness.{key}")
        metrics.update(
            {k: float(v) for k, v in correctness.items() if k in _FLAGS and type(v) is bool}
        )
    if word == "PASSED":
        performance = evaluation.get("performance")
        if not isinstance(performance, dict) or performance.get("latency_ms") is None:
            raise RowError("a PASSED trace must carry performance.latency_ms")
        for key in ("latency_ms", "reference_latency_ms", "speedup_factor"):
            if performance.get(key) is not None:
                metrics[key] = number(performance[key], f"performance.{key}")
        mean = ms_to_ns(metrics["latency_ms"])
        spec["timing"] = {"primaryStatistic": "mean", "latencyNs": {"mean": mean}}
    return spec, metrics


def leaderboard(
    f: SourceFile, doc: dict[str, Any], by_name: dict[str, list[Problem]], out: Plan, check: Checker
) -> None:
    try:
        stack = _stack(doc, check)
    except (RowError, InvalidManifest) as exc:
        out.rejected.append(Rejected(str(f.path), "$", str(exc)))
        return
    if not isinstance(doc["kernels"], list):
        out.rejected.append(Rejected(str(f.path), "$.kernels", "kernels must be a list"))
        return
    for k, entry in enumerate(doc["kernels"]):
        where = f"kernels[{k}]"
        try:
            if not isinstance(entry, dict) or not isinstance(entry.get("submissions"), list):
                raise RowError("a kernel needs a definition and a list of submissions")
            problem = find_problem(entry.get("definition"), by_name, f.path.parent)
            kernel = str(entry.get("kernel") or problem.name)
            ops = (problem.definition, problem.operation.digest, problem.workloads, kernel)
            suite = check(sol_suite(*ops))
        except (RowError, InvalidManifest) as exc:
            out.rejected.append(Rejected(str(f.path), where, str(exc)))
            continue
        for s, sub in enumerate(entry["submissions"]):
            build = partial(_submission, f, sub, (problem, kernel, suite, *stack), check)
            guard(out, f, f"{where}.submissions[{s}]", build)


def _stack(doc: dict[str, Any], check: Checker) -> tuple[Checked, Checked, dict[str, str]]:
    """The protocol and environment of a leaderboard: exactly KernelIndex's for a label."""
    label = doc.get("evaluationStack")
    if not isinstance(label, str) or not label:
        raise RowError("evaluationStack (the label, e.g. v1.0) is missing")
    hardware = gpu_of(doc.get("hardware"))
    harness: dict[str, Any] = {"name": "SOL-ExecBench evaluation stack", "version": label}
    if doc.get("evaluatorCommit") is not None:  # the evaluator revision, when it is known
        harness.update(repository=REPOSITORY, commit=doc["evaluatorCommit"])
    notes = (
        "Suite-mean latency and SOL-Score as published by the SOL-ExecBench leaderboard. "
        "Comparable only within one definition, GPU type, and evaluation stack version."
    )
    short = slug(label).replace(".", "-")
    timer = doc.get("timer", "harness_reported")
    name = f"sol-execbench-leaderboard-{short}"
    protocol = check(protocol_manifest(harness, timer, "sol_execbench_leaderboard", notes, name))
    gpu = hardware["product"].removeprefix("NVIDIA ")
    environment = manifest(
        "ExecutionEnvironment",
        slug(f"sol-execbench-{gpu}-{short}"),
        {"hardware": hardware, "software": {"libraries": {"evaluation_stack": label[:100]}}},
        title=f"SOL-ExecBench {hardware['product']}, stack {label}"[:200],
    )
    return protocol, check(environment), hardware


def _submission(f: SourceFile, sub: Any, context: tuple[Any, ...], check: Checker) -> RunItem:
    problem, kernel, suite, protocol, environment, hardware = context
    if not isinstance(sub, dict) or not isinstance(sub.get("id"), int | str) or sub["id"] == "":
        raise RowError("a submission needs an id")
    external, word = str(sub["id"]), sub.get("status", "PASSED")
    if not isinstance(word, str) or word not in STATUSES:  # a list or object is no status
        raise RowError(f"unknown status {word!r}")
    user, gpu = str(sub.get("user") or "unknown"), hardware["product"].removeprefix("NVIDIA ")
    support = {
        "productsTested": [hardware["product"]],
        "hardwareArchitectures": [hardware["architecture"]],
    }
    language = str(sub.get("language") or "unknown")
    implementation = implementation_manifest(
        problem, f"submission-{external}", language, support, f"{user} · {kernel}"
    )
    implementation["metadata"]["authors"] = [{"name": user[:200]}]
    metrics = {k: number(sub[k], k) for k in _LEADERBOARD_METRICS if sub.get(k) is not None}
    spec: dict[str, Any] = {
        "status": STATUSES[word],
        "observedAt": instant(sub.get("submitted_at"), "submitted_at"),
        "sourceNative": {
            "source": SOURCE,
            "metrics": metrics,
            "benchmark": kernel[:200],
            "externalId": external,
        },
    }
    if "latency_ms" in metrics:
        spec["timing"] = {
            "latencyNs": {"mean": ms_to_ns(metrics["latency_ms"])},
            "primaryStatistic": "mean",
        }
    elif word == "PASSED":
        raise RowError("a passing submission must carry latency_ms")
    given = {
        "protocol": protocol,
        "environment": environment,
        "workload": suite,
        "operation": problem.operation,
        "implementation": check(implementation),
    }
    worker = sub.get("worker")
    return run_item(
        f,
        check,
        given,
        spec,
        name=f"sol-submission-{slug(external)}",
        title=f"{user} · {kernel} · {gpu}"[:200],
        labels={"worker": str(worker)[:200]} if worker else None,
        word=word,
        external=external,
        row_key=f"{SOURCE}:submission:{external}",
    )
