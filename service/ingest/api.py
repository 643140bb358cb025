"""The importers of every source behind one API: read and check (``plan_import``), giving a
``Plan``; ``service.ingest.resolve`` resolves a plan against what the log holds. The ingest use
case that the CLI, the HTTP API and Python callers use (``service.app.ingest``) is built on
them, and appends what they resolve: importers never touch the ledger."""

from __future__ import annotations

import importlib
from collections.abc import Sequence
from pathlib import Path
from types import ModuleType

from events.bulk import paused_gc
from service.errors import InvalidInput, UsageError
from service.ingest.core import Plan

__all__ = ["SOURCES", "importer", "plan_import"]

SOURCES: dict[str, str] = {
    "manifest": "service.ingest.manifests",
    "kernelindex-catalog": "service.ingest.kernelindex",
    "sol-execbench": "service.ingest.solexecbench",
    "liger": "service.ingest.liger",
    "mlperf-inference": "service.ingest.mlperf",
    "kernelbench-timings": "service.ingest.kernelbench",
}


def importer(source: str) -> ModuleType:
    """The importer module of ``source``.

    Raises:
        UsageError: no importer has that name.
    """
    if source not in SOURCES:
        raise UsageError(f"unknown source {source!r}; choose one of {', '.join(SOURCES)}")
    return importlib.import_module(SOURCES[source])


def plan_import(source: str, paths: Sequence[Path], *, skip_invalid: bool = False) -> Plan:
    """Read and check what ``paths`` hold, for ``source``.

    Raises:
        InvalidInput: rows were invalid and ``skip_invalid`` is false; the report names each.
        InvalidManifest / NotFound / UsageError: as the importer raises them.
    """
    with paused_gc():
        plan: Plan = importer(source).plan(list(paths))
    if plan.rejected and not skip_invalid:
        report = [f"{r.file}: {r.row}: {r.reason}" for r in plan.rejected]
        raise InvalidInput(
            f"{len(report)} invalid rows (the first: {report[0]}): the import is refused whole "
            "and nothing was appended (--skip-invalid imports the valid rows and writes the "
            "rejected ones to a file)",
            report=report,
        )
    return plan
