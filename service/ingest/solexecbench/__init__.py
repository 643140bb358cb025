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

from collections.abc import Iterable
from functools import partial
from pathlib import Path
from typing import Any

from events import read_documents
from service.errors import UsageError
from service.ingest._build import Checker
from service.ingest.core import Plan
from service.ingest.files import SourceFile, walk
from service.ingest.solexecbench.problems import read_definition, read_workloads
from service.ingest.solexecbench.runs import leaderboard, trace
from service.ingest.solexecbench.source import (
    IMPORTER,
    REGISTRATION,
    SOURCE,
    STATUSES,
    VERSION,
    Problem,
    guard,
)

__all__ = ["IMPORTER", "STATUSES", "VERSION", "plan"]

_IGNORED = ("config.json", "solution.json")
_KINDS = ("definition", "workloads", "traces", "leaderboard")


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
        problems[f.path.parent] = read_definition(f, docs[0], out, check)
    for f, docs in kinds["workloads"]:
        read_workloads(f, docs, problems, out, check)
    by_name: dict[str, list[Problem]] = {}
    for problem in problems.values():
        if problem is not None:
            by_name.setdefault(problem.name, []).append(problem)
    for f, docs in kinds["traces"]:
        for index, doc in enumerate(docs):
            guard(out, f, f"line {index + 1}", partial(trace, f, doc, by_name, check))
    for f, docs in kinds["leaderboard"]:
        leaderboard(f, docs[0], by_name, out, check)
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
