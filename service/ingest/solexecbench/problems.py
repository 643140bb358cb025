"""SOL-ExecBench definitions and workloads (FORMAT.md), read into manifests: a definition
becomes an OperationSpec, each workload line a WorkloadCase of the definition beside it."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from events import InvalidManifest
from events.documents import Checked
from service.errors import UsageError
from service.ingest._build import (
    Checker,
    RowError,
)
from service.ingest.core import Plan, Rejected
from service.ingest.files import SourceFile
from service.ingest.solexecbench.format import sol_operation, sol_workload_case
from service.ingest.solexecbench.source import Problem, origin

__all__ = ["read_case", "read_definition", "read_workloads"]


def read_definition(
    f: SourceFile, doc: dict[str, Any], out: Plan, check: Checker
) -> Problem | None:
    name = doc.get("name")
    try:
        if not isinstance(name, str) or not name:
            raise RowError("a definition needs a name")
        operation = check(sol_operation(doc), "$")
    except (RowError, InvalidManifest) as exc:
        out.rejected.append(Rejected(str(f.path), f"definition {name!r}", str(exc)))
        return None
    out.manifests.append((operation, origin(f, name)))
    return Problem(name, doc, operation, f.path.parent, {})


def read_workloads(
    f: SourceFile, docs: list[Any], problems: dict[Path, Problem | None], out: Plan, check: Checker
) -> None:
    if f.path.parent not in problems:
        raise UsageError(f"{f.path}: workloads need the definition.json beside them")
    problem = problems[f.path.parent]
    for index, line in enumerate(docs):
        try:
            if problem is None:
                raise RowError("the definition.json beside it was rejected")
            raw, case = read_case(problem, line, check)
        except (RowError, InvalidManifest) as exc:
            out.rejected.append(Rejected(str(f.path), f"line {index + 1}", str(exc)))
            continue
        problem.workloads.setdefault(raw["uuid"], (raw, case))
        out.manifests.append((case, origin(f, raw["uuid"])))


def read_case(problem: Problem, line: Any, check: Checker) -> tuple[dict[str, Any], Checked]:
    if not isinstance(line, dict) or not isinstance(line.get("uuid"), str):
        raise RowError("a workload needs a uuid")
    return line, check(sol_workload_case(problem.definition, problem.operation.digest, line), "$")
