"""Issue 4: runs ingested per second for the whole KernelIndex catalog (parse + digests + sign +
append + projections), against the raw Ed25519 sign rate measured in the same run.

Target: >= 5,000 runs/s (the 7,857 kernel runs in about 1.6 s)."""

from __future__ import annotations

import tempfile
import time
from pathlib import Path

from service.app.ingest import commit_plan
from service.core.init import init_data_dir
from service.ingest.api import plan_import
from tests.bench.common import line, record
from tests.bench.log import raw_rates
from tests.corpora import CATALOG, corpus


def main() -> None:
    catalog = corpus(*CATALOG)
    print("ingest (issue 4): the whole KernelIndex catalog export, in-process")
    sign_rate, _ = raw_rates()
    with tempfile.TemporaryDirectory() as tmp:
        ledger, _ = init_data_dir(Path(tmp) / "d")
        with ledger:
            t0 = time.perf_counter()
            plan = plan_import("kernelindex-catalog", [catalog])
            t1 = time.perf_counter()
            result = commit_plan(ledger, plan)  # as service.app.ingest.ingest does
            t2 = time.perf_counter()
    runs = result.runs_appended
    kernel = sum(1 for r in plan.runs if r.run.kind == "BenchmarkRun")
    line("runs ingested (kernel + serving)", runs, "runs")
    line("  of which kernel runs", kernel, "runs")
    line("parse + validate + digests", runs / (t1 - t0), "runs/s")
    line("sign + append + projections", runs / (t2 - t1), "runs/s")
    line("end to end (target >= 5,000)", runs / (t2 - t0), "runs/s")
    line("  seconds for the whole catalog", t2 - t0, "s")
    line("raw Ed25519 sign, one core", sign_rate, "sign/s")
    line("  ratio end to end / raw sign", runs / (t2 - t0) / sign_rate, "x")
    about = "the whole KernelIndex catalog ingested in process, end to end"
    record(
        "ingest_runs_per_s",
        runs / (t2 - t0),
        "runs/s",
        about,
        parse_runs_per_s=round(runs / (t1 - t0), 1),
        commit_runs_per_s=round(runs / (t2 - t1), 1),
    )
    record("raw_sign_per_s", sign_rate, "sign/s", "raw Ed25519 sign, one core")
