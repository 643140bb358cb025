"""The demo's CPU run: a NumPy row softmax (256 × 1024, float32) measured on the machine the demo
is set up on, by the shipped harness (``service.harness.cpu``), reported by the source
``benchproof-demo`` (registered with its own ``source.registered`` entry). Its environment
manifest names this machine's CPU, so a rerun worker here matches it and the whole loop
(request, claim, harness, verified) runs without a GPU.

The tolerance of its protocol's comparability family is set from what was measured: the harness runs
``ROUNDS`` times, and the margin is four times the spread of their medians, at least 25 %
(a busy 2-core machine moves a sub-millisecond kernel's median by several percent from one
run to the next). It is recorded as the index's ``policy.changed.v1`` (``tolerance-demo-1``).
"""

from __future__ import annotations

import hashlib
import statistics
import sys
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import numpy as np

from events import check_manifest
from events.documents import Checked
from events.entries import format_instant
from events.types import Origin, PolicyChanged, SourceRegistered
from projections.tolerance import DEFAULT_POLICY, POLICY_NAME, Tolerance, TolerancePolicy
from service.app.ingest import commit_plan
from service.core.ledger import Ledger
from service.harness import cpu
from service.harness.contract import CONTRACT
from service.harness.environment import detect
from service.harness.run import run_harness
from service.ingest.core import Plan, RunItem

__all__ = ["COLS", "ROWS", "SAMPLES", "SOURCE", "load_cpu_run", "referenced"]

SOURCE = "benchproof-demo"
ROUNDS = 3
SAMPLES = 30
ROWS, COLS = 256, 1024
FAMILY = "cpu_wall_clock"  # the demo protocol's comparability family: its own tolerance
_API = "kernelindex.dev/v1alpha1"
_REGISTRATION = SourceRegistered(
    source=SOURCE,
    name="Benchproof demo (measured on this machine)",
    url="https://benchproof.dev/demo",
    license="Apache-2.0",
    notice="Measured by the Benchproof demo on the machine that serves it; not a published result.",
)


def _m(kind: str, name: str, spec: dict[str, Any], title: str) -> dict[str, Any]:
    return {
        "apiVersion": _API,
        "kind": kind,
        "metadata": {"name": name, "title": title},
        "spec": spec,
    }


def _check(manifest: dict[str, Any]) -> Checked:
    return check_manifest(manifest, source=SOURCE)


def referenced(environment: dict[str, str]) -> dict[str, Checked]:
    """The operation, workload, protocol, environment and implementation of the demo run."""
    operation = _check(
        _m(
            "OperationSpec",
            "row-softmax",
            {
                "family": "softmax",
                "axes": {
                    "rows": {"role": "variable", "type": "integer"},
                    "cols": {"role": "variable", "type": "integer"},
                },
                "inputs": [{"name": "x", "tensor": {"shape": ["rows", "cols"], "dtype": "fp32"}}],
                "outputs": [{"name": "y", "tensor": {"shape": ["rows", "cols"], "dtype": "fp32"}}],
                "semantics": {"mutation": "none", "determinism": "deterministic"},
            },
            "Row softmax",
        )
    )
    workload = _check(
        _m(
            "WorkloadCase",
            f"row-softmax-{ROWS}x{COLS}-fp32",
            {
                "operationSpecDigest": operation.digest,
                "axes": {"rows": ROWS, "cols": COLS},
                "tensors": {
                    "x": {
                        "shape": [ROWS, COLS],
                        "dtype": "fp32",
                        "data": {"generator": "normal", "seed": 7},
                    }
                },
                "correctness": {"comparator": "max_abs_error", "maxAbsoluteError": 1e-6},
            },
            f"Row softmax, {ROWS} × {COLS}, fp32",
        )
    )
    protocol = _check(
        _m(
            "BenchmarkProtocol",
            "benchproof-cpu-wall-clock",
            {
                "harness": {"name": "benchproof-cpu-softmax", "version": "1"},
                "measurement": {
                    "timer": "perf_counter_ns",
                    "primaryStatistic": "median",
                    "warmupIterations": 5,
                    "samples": SAMPLES,
                },
                "correctness": {"reference": "float64 NumPy", "comparator": "max_abs_error"},
                "comparability": {"family": FAMILY},
            },
            "Wall clock on one CPU core (time.perf_counter_ns)",
        )
    )
    vendor = "".join(c for c in environment.get("vendor", "unknown").lower() if c.isalnum())
    machine = _check(
        _m(
            "ExecutionEnvironment",
            "demo-cpu",
            {
                "hardware": {
                    "vendor": vendor or "unknown",
                    "product": environment["model"],
                    "architecture": environment["architecture"],
                },
                "software": {"framework": {"name": "numpy", "version": np.__version__}},
            },
            f"This machine's CPU ({environment['model']})",
        )
    )
    code = Path(cpu.__file__).read_bytes()
    implementation = _check(
        _m(
            "ImplementationRevision",
            cpu.IMPLEMENTATION,
            {
                "projectRevision": {"repository": "https://benchproof.dev", "version": "1"},
                "operation": {"specDigest": operation.digest},
                "callable": {"language": "python", "path": "service/harness/cpu.py"},
                "support": {
                    "hardwareArchitectures": [environment["architecture"]],
                    "dtypes": ["fp32"],
                },
                "licensing": {"declared": "Apache-2.0"},
                "source": {
                    "contentDigest": "sha256:" + hashlib.sha256(code).hexdigest(),
                    "fileName": "cpu.py",
                },
            },
            "NumPy row softmax (CPU)",
        )
    )
    return {
        "operation": operation,
        "workload": workload,
        "protocol": protocol,
        "environment": machine,
        "implementation": implementation,
    }


def _medians(given: dict[str, Checked]) -> list[float]:
    """The median sample (ns) of each of ``ROUNDS`` runs of the shipped harness."""
    manifests = {role: c.manifest for role, c in given.items()}
    medians = []
    for _ in range(ROUNDS):
        output = run_harness(
            [sys.executable, "-m", "service.harness.cpu"],
            {
                "contract": CONTRACT,
                "runDigest": "sha256:" + "0" * 64,
                "requestId": "sha256:" + "0" * 64,
                "minSamples": SAMPLES,
                "timeLimitSeconds": 120,
                "manifests": manifests,
            },
            120,
        )
        medians.append(statistics.median(output.samplesNs))
    return medians


def load_cpu_run(ledger: Ledger) -> str:
    """Measure the demo run here, ingest it (with its source's registration) and record the
    tolerance its group gets; return a line saying what was done."""
    environment = detect()
    given = referenced(environment)
    medians = _medians(given)
    reported = medians[0]
    spread = max(medians) / min(medians) - 1
    external_id = f"row-softmax-{ROWS}x{COLS}-cpu"
    spec: dict[str, Any] = {
        "implementationDigest": given["implementation"].digest,
        "workloadDigest": given["workload"].digest,
        "protocolDigest": given["protocol"].digest,
        "environmentDigest": given["environment"].digest,
        "status": "passed",
        "timing": {
            "primaryStatistic": "median",
            "latencyNs": {"median": round(reported)},  # whole nanoseconds, as the format takes
            "samples": SAMPLES,
        },
        "observedAt": format_instant(datetime.now(UTC)),
        "sourceNative": {"source": SOURCE, "externalId": external_id},
    }
    run = _check(_m("BenchmarkRun", f"demo-row-softmax-{ROWS}x{COLS}-cpu", spec, "Demo CPU run"))
    origin = Origin(
        source=SOURCE,
        importer="benchproof-demo",
        importerVersion="1",
        externalId=external_id,
    )
    commit_plan(
        ledger, Plan(runs=[RunItem(run=run, given=given, origin=origin)], sources=[_REGISTRATION])
    )
    margin = max(0.25, round(4 * spread, 2))
    policy = TolerancePolicy(
        version="tolerance-demo-1",
        default=DEFAULT_POLICY.default,
        families={FAMILY: Tolerance(relativeMargin=margin)},
    )
    event = PolicyChanged(
        policy=POLICY_NAME, version=policy.version, parameters=policy.parameters()
    )
    ledger.append([(event, POLICY_NAME)])
    return (
        f"CPU run {run.digest[:19]}… median {reported / 1000:.1f} µs on {environment['model']}; "
        f"spread of {ROUNDS} runs {spread:.1%}, tolerance ±{margin:.0%}"
    )
