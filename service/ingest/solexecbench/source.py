"""The SOL-ExecBench source (its registration, the statuses of its traces) and what every run
it gives is built from: a problem (a definition with its workloads), a GPU, a protocol, an
implementation, the run item."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any, NamedTuple

from events import InvalidManifest
from events.documents import Checked
from events.types import Origin, SourceRegistered
from service.ingest._build import (
    Checker,
    RowError,
    gpu_hardware,
    ident,
    manifest,
    slug,
)
from service.ingest.core import Plan, Rejected, RunItem
from service.ingest.files import SourceFile
from service.ingest.solexecbench.format import sol_dtypes

__all__ = [
    "EVAL",
    "IMPORTER",
    "REGISTRATION",
    "REPOSITORY",
    "SOURCE",
    "STATUSES",
    "VERSION",
    "Problem",
    "find_problem",
    "gpu_of",
    "guard",
    "implementation_manifest",
    "origin",
    "protocol_manifest",
    "run_item",
]

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
REPOSITORY = "https://github.com/NVIDIA/SOL-ExecBench"
EVAL = "sol_execbench_eval"
_REFERENCED = ("implementation", "workload", "protocol", "environment")


class Problem(NamedTuple):
    """A definition read from a file: its operation and the workloads beside it, by uuid."""

    name: str
    definition: dict[str, Any]
    operation: Checked
    folder: Path
    workloads: dict[str, tuple[dict[str, Any], Checked]]


def origin(f: SourceFile, external: str | None) -> Origin:
    return Origin(
        source=SOURCE,
        importer=IMPORTER,
        importerVersion=VERSION,
        snapshotDigest=f.digest,
        externalId=external,
        path=f.path.name,
    )


def guard(out: Plan, f: SourceFile, row: str, build: Callable[[], RunItem]) -> None:
    try:
        out.runs.append(build())
    except (RowError, InvalidManifest) as exc:
        out.rejected.append(Rejected(str(f.path), row, str(exc)))


def find_problem(name: Any, by_name: dict[str, list[Problem]], near: Path) -> Problem:
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


def gpu_of(value: Any) -> dict[str, str]:
    if not isinstance(value, str) or not value.strip():
        raise RowError(f"hardware is {value!r}, not a GPU name")
    product = value.strip().replace("_", " ")  # traces say NVIDIA_B200
    known = product.upper().startswith(("NVIDIA", "AMD"))
    return gpu_hardware(product if known else f"NVIDIA {product}")


def protocol_manifest(
    harness: dict[str, Any], timer: str, kind: str, notes: str, name: str
) -> dict[str, Any]:
    spec = {
        "harness": harness,
        "correctness": {"reference": "definition reference implementation", "comparator": EVAL},
        "measurement": {"timer": timer, "primaryStatistic": "mean"},
        "comparability": {"notes": notes, "family": kind},
    }
    version = harness.get("version", "")
    return manifest("BenchmarkProtocol", name, spec, title=f"{harness['name']} {version}".strip())


def implementation_manifest(
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


def run_item(
    f: SourceFile, check: Checker, given: dict[str, Checked], spec: dict[str, Any], **meta: Any
) -> RunItem:
    """The run item of a trace or submission: ``spec`` gets the digests of ``given``."""
    refs = {f"{role}Digest": given[role].digest for role in _REFERENCED}
    word, external, row_key = meta.pop("word"), meta.pop("external"), meta.pop("row_key")
    run = check(manifest("BenchmarkRun", meta.pop("name"), {**spec, **refs}, **meta))
    return RunItem(
        run=run,
        given=given,
        origin=origin(f, external),
        aliases=(f"{SOURCE}:{external}",) if external else (),
        sourceStatus=word if word in _SAYS_MORE else None,
        rowKey=row_key,
    )
