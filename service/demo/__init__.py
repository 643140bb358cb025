"""Demo data for ``make serve``: license-clean sources only, notices kept (see data/README.md)."""

from __future__ import annotations

import os
import sys
from pathlib import Path

from projections.queries import has_runs
from service.app.ingest import commit_plan
from service.core.init import init_data_dir
from service.demo.cpu import SOURCE, load_cpu_run
from service.ingest.api import plan_import
from service.ingest.core import Plan

__all__ = ["prepare_demo"]

DATA = Path(__file__).parent / "data"
EXCLUDED_SOURCES = frozenset({"sol-execbench"})  # NVIDIA's terms forbid republishing


def _shared() -> Path | None:
    root = Path(os.environ.get("BENCHPROOF_SHARED", Path(__file__).resolve().parents[3] / "shared"))
    catalog = root / "corpora" / "kernelindex-catalog-2026-08-16"
    return catalog if catalog.is_dir() else None


def _without_excluded(plan: Plan) -> Plan:
    return Plan(
        runs=[r for r in plan.runs if r.origin.source not in EXCLUDED_SOURCES],
        manifests=plan.manifests,
        sources=[s for s in plan.sources if s.source not in EXCLUDED_SOURCES],
        rejected=plan.rejected,
    )


def prepare_demo(root: Path) -> None:
    """Initialise ``root`` (keys, log) if needed and, if it holds no run yet, load the demo."""
    ledger, _ = init_data_dir(root)
    with ledger:
        if has_runs(ledger.store.session):
            return
        sys.stderr.write("benchproof: loading demo data (first start)…\n")
        steps: list[tuple[str, list[Path]]] = [
            ("manifest", [DATA / "kernelindex-examples"]),
            ("liger", [DATA / "liger" / "all_benchmark_data.csv"]),
        ]
        catalog = _shared()
        if catalog is not None:
            steps.append(("kernelindex-catalog", [catalog]))
        for source, paths in steps:
            plan = _without_excluded(plan_import(source, paths, skip_invalid=True))
            result = commit_plan(ledger, plan)
            sys.stderr.write(f"benchproof: demo {source}: {result.summary()}\n")
        sys.stderr.write(f"benchproof: demo {SOURCE}: {load_cpu_run(ledger)}\n")
