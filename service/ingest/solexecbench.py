"""``benchproof ingest sol-execbench PATH...``: SOL-ExecBench problems, traces and leaderboards.

Four kinds of file, told apart by shape (the file name only breaks ties):

- a definition (``definition.json``: an object with ``name``, ``axes``, ``inputs``,
  ``outputs``) becomes an OperationSpec, recorded as a manifest;
- workloads (``workload.jsonl``: lines with ``uuid``, ``axes``, ``inputs``) become one
  WorkloadCase per line, recorded as manifests; the definition beside the file gives the shapes;
- traces (JSON lines with ``definition``, ``solution``, ``workload``, ``evaluation``) become one
  BenchmarkRun per line, per workload;
- leaderboards (an object with ``evaluationStack``, ``hardware`` and ``kernels``, each with
  ``definition`` and ``submissions``) become one BenchmarkRun per submission over a
  WorkloadSuite of the definition's workloads, in the shape KernelIndex gives SOL runs.

``config.json`` and solution files are skipped (run settings and code, not results). The rules
and their reasons are in ``service/ingest/README.md``.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from functools import partial
from pathlib import Path
from typing import Any, NamedTuple

from events import InvalidManifest, read_documents
from events.documents import Checked
from events.types import Origin, SourceRegistered
from service.errors import UsageError
from service.ingest._build import (
    Checker,
    RowError,
    gpu_hardware,
    ident,
    instant,
    manifest,
    ms_to_ns,
    number,
    short_hash,
    slug,
    sol_dtypes,
    sol_operation,
    sol_suite,
    sol_workload_case,
)
from service.ingest.core import Plan, Rejected, RunItem
from service.ingest.files import SourceFile, walk

__all__ = ["IMPORTER", "STATUSES", "VERSION", "plan"]

IMPORTER = "sol-execbench"
VERSION = "1"
SOURCE = "sol-execbench"

REGISTRATION = SourceRegistered(
    source=SOURCE,
    name="NVIDIA SOL-ExecBench",
    url="https://github.com/NVIDIA/SOL-ExecBench",
    license="Apache-2.0",
    notice=(
        "Problem definitions and workloads from NVIDIA/SOL-ExecBench (examples/, "
        "tests/sol_execbench/samples/), Apache-2.0. Leaderboard results are facts from NVIDIA's "
        "public leaderboard, governed by NVIDIA's website terms (no data license): not for "
        "republication without review."
    ),
)

# Every status of FORMAT.md's Trace, mapped to a first-class outcome of the manifest.
STATUSES = {
    "PASSED": "passed",
    "INCORRECT_SHAPE": "incorrect_shape",
    "INCORRECT_NUMERICAL": "incorrect_numerical",
    "INCORRECT_DTYPE": "incorrect_dtype",
    "RUNTIME_ERROR": "runtime_error",
    "COMPILE_ERROR": "compile_error",
    "TIMEOUT": "timeout",
    "REWARD_HACK": "suspected_reward_hack",
    "INVALID_REFERENCE": "invalid_reference",
}
# Source words that say more than the manifest status (the source flagged, we only suspect).
_SAYS_MORE = frozenset({"REWARD_HACK"})
_LEADERBOARD_METRICS = ("sol_score", "latency_ms", "avg_speedup", "fast_1_count", "fast_1_total")
_IGNORED = ("config.json", "solution.json")
_REPOSITORY = "https://github.com/NVIDIA/SOL-ExecBench"
_EVAL = "sol_execbench_eval"
_FLAGS = ("has_nan", "has_inf")
_REFERENCED = ("implementation", "workload", "protocol", "environment")
# A solution's identity does not depend on where it ran (traces name no target hardware).
_ANY_HARDWARE: dict[str, Any] = {"hardwareArchitectures": []}
_KINDS = ("definition", "workloads", "traces", "leaderboard")


class Problem(NamedTuple):
    """A definition read from a file: its operation and the workloads beside it, by uuid."""

    name: str
    definition: dict[str, Any]
    operation: Checked
    folder: Path
    workloads: dict[str, tuple[dict[str, Any], Checked]]


def plan(paths: Iterable[Path]) -> Plan:
    """Read every SOL-ExecBench definition, workload, trace and leaderboard file under ``paths``.

    Returns the plan: operations and workloads as manifests, traces and leaderboard submissions
    as runs, the rejected rows with reasons, and the source.

    Raises:
        InvalidManifest: a file is not JSON / JSON lines.
        UsageError: a file has none of the four shapes, or a workload file has no definition
            beside it.
        NotFound: a path is missing.
    """
    out = Plan(sources=[REGISTRATION])
    check = Checker(SOURCE)
    files = {f.path: f for f in walk(paths, (".json", ".jsonl"))}
    for path in list(files):
        beside = path.parent / "definition.json"
        if path.name == "workload.jsonl" and beside not in files and beside.is_file():
            files[beside] = SourceFile(beside, beside.read_bytes())  # its shapes are needed
    kinds: dict[str, list[tuple[SourceFile, list[Any]]]] = {k: [] for k in _KINDS}
    for f in sorted(files.values(), key=lambda f: str(f.path)):
        docs = read_documents(f.data, source=str(f.path))
        kind = _kind(f, docs)
        if kind is not None:
            kinds[kind].append((f, docs))
    problems: dict[Path, Problem | None] = {}
    for f, docs in kinds["definition"]:
        problems[f.path.parent] = _definition(f, docs[0], out, check)
    for f, docs in kinds["workloads"]:
        _workloads(f, docs, problems, out, check)
    by_name: dict[str, list[Problem]] = {}
    for problem in problems.values():
        if problem is not None:
            by_name.setdefault(problem.name, []).append(problem)
    for f, docs in kinds["traces"]:
        for index, doc in enumerate(docs):
            _guard(out, f, f"line {index + 1}", partial(_trace, f, doc, by_name, check))
    for f, docs in kinds["leaderboard"]:
        _leaderboard(f, docs[0], by_name, out, check)
    return out


def _kind(f: SourceFile, docs: list[Any]) -> str | None:
    if not docs:
        return None  # an empty file holds nothing to record
    first, name = docs[0], f.path.name
    if f.path.suffix == ".jsonl" and isinstance(first, dict):
        if "evaluation" in first:
            return "traces"
        if name == "workload.jsonl" or {"uuid", "axes"} <= first.keys():
            return "workloads"
    elif len(docs) == 1 and isinstance(first, dict):
        if {"name", "axes", "inputs", "outputs"} <= first.keys():
            return "definition"
        if "kernels" in first and "evaluationStack" in first:
            return "leaderboard"
        if name in _IGNORED or {"spec", "sources"} <= first.keys():
            return None
    raise UsageError(
        f"{f.path}: not a SOL-ExecBench definition, workload, trace or leaderboard file "
        "(see service/ingest/README.md for the shapes)"
    )


def _origin(f: SourceFile, external: str | None) -> Origin:
    return Origin(
        source=SOURCE,
        importer=IMPORTER,
        importerVersion=VERSION,
        snapshotDigest=f.digest,
        externalId=external,
        path=f.path.name,
    )


def _guard(out: Plan, f: SourceFile, row: str, build: Callable[[], RunItem]) -> None:
    try:
        out.runs.append(build())
    except (RowError, InvalidManifest) as exc:
        out.rejected.append(Rejected(str(f.path), row, str(exc)))


def _definition(f: SourceFile, doc: dict[str, Any], out: Plan, check: Checker) -> Problem | None:
    name = doc.get("name")
    try:
        if not isinstance(name, str) or not name:
            raise RowError("a definition needs a name")
        operation = check(sol_operation(doc), "$")
    except (RowError, InvalidManifest) as exc:
        out.rejected.append(Rejected(str(f.path), f"definition {name!r}", str(exc)))
        return None
    out.manifests.append((operation, _origin(f, name)))
    return Problem(name, doc, operation, f.path.parent, {})


def _workloads(
    f: SourceFile, docs: list[Any], problems: dict[Path, Problem | None], out: Plan, check: Checker
) -> None:
    if f.path.parent not in problems:
        raise UsageError(f"{f.path}: workloads need the definition.json beside them")
    problem = problems[f.path.parent]
    for index, line in enumerate(docs):
        try:
            if problem is None:
                raise RowError("the definition.json beside it was rejected")
            raw, case = _case(problem, line, check)
        except (RowError, InvalidManifest) as exc:
            out.rejected.append(Rejected(str(f.path), f"line {index + 1}", str(exc)))
            continue
        problem.workloads.setdefault(raw["uuid"], (raw, case))
        out.manifests.append((case, _origin(f, raw["uuid"])))


def _case(problem: Problem, line: Any, check: Checker) -> tuple[dict[str, Any], Checked]:
    if not isinstance(line, dict) or not isinstance(line.get("uuid"), str):
        raise RowError("a workload needs a uuid")
    return line, check(sol_workload_case(problem.definition, problem.operation.digest, line), "$")


def _problem(name: Any, by_name: dict[str, list[Problem]], near: Path) -> Problem:
    found = by_name.get(name) if isinstance(name, str) else None
    if not found:
        raise RowError(
            f"definition {name!r} is not among the files given (pass its definition.json)"
        )
    distinct = {p.operation.digest: p for p in found}
    if len(distinct) == 1:
        return found[0]
    local = [p for p in found if p.folder == near]
    if len(local) == 1:
        return local[0]
    raise RowError(f"definition {name!r} is given {len(distinct)} times with different content")


def _hardware(value: Any) -> dict[str, str]:
    if not isinstance(value, str) or not value.strip():
        raise RowError(f"hardware is {value!r}, not a GPU name")
    product = value.strip().replace("_", " ")  # traces say NVIDIA_B200
    known = product.upper().startswith(("NVIDIA", "AMD"))
    return gpu_hardware(product if known else f"NVIDIA {product}")


def _protocol(
    harness: dict[str, Any], timer: str, kind: str, notes: str, name: str
) -> dict[str, Any]:
    spec = {
        "harness": harness,
        "correctness": {"reference": "definition reference implementation", "comparator": _EVAL},
        "measurement": {"timer": timer, "primaryStatistic": "mean"},
        "comparability": {"notes": notes, "family": kind},
    }
    version = harness.get("version", "")
    return manifest("BenchmarkProtocol", name, spec, title=f"{harness['name']} {version}".strip())


def _implementation(
    problem: Problem, version: str, language: str, support: dict[str, Any], title: str
) -> dict[str, Any]:
    spec = {
        "support": {"dtypes": sol_dtypes(problem.definition), **support},
        "callable": {"language": ident(language)},
        "licensing": {},
        "operation": {"specDigest": problem.operation.digest},
        "projectRevision": {"version": version[:100]},
    }
    return manifest("ImplementationRevision", slug(f"sol-{version}"), spec, title=title[:200])


def _item(
    f: SourceFile, check: Checker, given: dict[str, Checked], spec: dict[str, Any], **meta: Any
) -> RunItem:
    """The run item of a trace or submission: ``spec`` gets the digests of ``given``."""
    refs = {f"{role}Digest": given[role].digest for role in _REFERENCED}
    word, external, row_key = meta.pop("word"), meta.pop("external"), meta.pop("row_key")
    run = check(manifest("BenchmarkRun", meta.pop("name"), {**spec, **refs}, **meta))
    return RunItem(
        run=run,
        given=given,
        origin=_origin(f, external),
        aliases=(f"{SOURCE}:{external}",) if external else (),
        sourceStatus=word if word in _SAYS_MORE else None,
        rowKey=row_key,
    )


def _trace(f: SourceFile, doc: Any, by_name: dict[str, list[Problem]], check: Checker) -> RunItem:
    if not isinstance(doc, dict) or not isinstance(doc.get("evaluation"), dict):
        raise RowError("a trace needs an evaluation object")
    problem = _problem(doc.get("definition"), by_name, f.path.parent)
    solution, evaluation, raw = doc.get("solution"), doc["evaluation"], doc.get("workload")
    if not isinstance(solution, str) or not solution:
        raise RowError("a trace needs a solution name")
    uuid = raw.get("uuid") if isinstance(raw, dict) else raw
    if not isinstance(uuid, str):
        raise RowError("a trace needs a workload (its uuid, or the workload object)")
    if uuid in problem.workloads:
        workload = problem.workloads[uuid][1]
    elif isinstance(raw, dict):
        workload = _case(problem, raw, check)[1]
    else:
        raise RowError(f"workload {uuid} is not among the workloads of {problem.name}")
    word = evaluation.get("status")
    if not isinstance(word, str) or word not in STATUSES:  # a list or object is no status
        raise RowError(f"unknown status {word!r} (expected one of {', '.join(STATUSES)})")
    env = evaluation.get("environment")
    libs = (env.get("libs") or {}) if isinstance(env, dict) else None
    if not isinstance(env, dict) or not isinstance(libs, dict):
        raise RowError("evaluation.environment must be an object with hardware and libs")
    hardware = _hardware(env.get("hardware"))
    libraries = {ident(str(k)): str(v)[:100] for k, v in sorted(libs.items())}
    environment = manifest(
        "ExecutionEnvironment",
        slug(f"sol-execbench-{hardware['product']}-{short_hash(str(libraries))}"),
        {"hardware": hardware, "software": {"libraries": libraries}},
        title=f"{hardware['product']} (SOL-ExecBench trace environment)"[:200],
    )
    harness: dict[str, Any] = {"name": "SOL-ExecBench", "repository": _REPOSITORY}
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
            _protocol(harness, "harness_reported", "sol_execbench_trace", notes, name)
        ),
        "environment": check(environment),
        "workload": workload,
        "operation": problem.operation,
        "implementation": check(
            _implementation(
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
    return _item(
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
        spec["correctness"] = {"comparator": _EVAL}
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


def _leaderboard(
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
            problem = _problem(entry.get("definition"), by_name, f.path.parent)
            kernel = str(entry.get("kernel") or problem.name)
            ops = (problem.definition, problem.operation.digest, problem.workloads, kernel)
            suite = check(sol_suite(*ops))
        except (RowError, InvalidManifest) as exc:
            out.rejected.append(Rejected(str(f.path), where, str(exc)))
            continue
        for s, sub in enumerate(entry["submissions"]):
            build = partial(_submission, f, sub, (problem, kernel, suite, *stack), check)
            _guard(out, f, f"{where}.submissions[{s}]", build)


def _stack(doc: dict[str, Any], check: Checker) -> tuple[Checked, Checked, dict[str, str]]:
    """The protocol and environment of a leaderboard: exactly KernelIndex's for a label."""
    label = doc.get("evaluationStack")
    if not isinstance(label, str) or not label:
        raise RowError("evaluationStack (the label, e.g. v1.0) is missing")
    hardware = _hardware(doc.get("hardware"))
    harness: dict[str, Any] = {"name": "SOL-ExecBench evaluation stack", "version": label}
    if doc.get("evaluatorCommit") is not None:  # the evaluator revision, when it is known
        harness.update(repository=_REPOSITORY, commit=doc["evaluatorCommit"])
    notes = (
        "Suite-mean latency and SOL-Score as published by the SOL-ExecBench leaderboard. "
        "Comparable only within one definition, GPU type, and evaluation stack version."
    )
    short = slug(label).replace(".", "-")
    timer = doc.get("timer", "harness_reported")
    name = f"sol-execbench-leaderboard-{short}"
    protocol = check(_protocol(harness, timer, "sol_execbench_leaderboard", notes, name))
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
    implementation = _implementation(
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
    return _item(
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
