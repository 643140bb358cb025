"""A KernelIndex bundle of one run this machine can rerun: the shipped CPU harness's NumPy row
softmax, on a small float32 input, with an environment manifest naming this machine's CPU.

The reported median is what the shipped harness (``python -m service.harness.cpu``, the child
process the rerun worker also starts) measured a moment before, so a rerun here is likely to
land within the tolerance; the scenarios do not depend on it (a miss makes the run
``disputed``, which they accept when the dossier says why)."""

from __future__ import annotations

import json
import statistics
import subprocess
import sys
from datetime import UTC, datetime
from typing import Any

import numpy as np

from events import check_manifest
from service.harness.environment import detect

API = "kernelindex.dev/v1alpha1"
SOURCE = "e2e-cpu"
ROWS, COLS = 64, 512
SAMPLES = 20


def _m(kind: str, name: str, spec: dict[str, Any]) -> dict[str, Any]:
    return {"apiVersion": API, "kind": kind, "metadata": {"name": name}, "spec": spec}


def _referenced() -> dict[str, dict[str, Any]]:
    """The operation, workload, protocol, environment and implementation the run names."""
    here = detect()
    operation = _m(
        "OperationSpec",
        "e2e-row-softmax",
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
    )
    op_digest = check_manifest(operation, source=SOURCE).digest
    workload = _m(
        "WorkloadCase",
        f"e2e-row-softmax-{ROWS}x{COLS}",
        {
            "operationSpecDigest": op_digest,
            "axes": {"rows": ROWS, "cols": COLS},
            "tensors": {
                "x": {
                    "shape": [ROWS, COLS],
                    "dtype": "fp32",
                    "data": {"generator": "normal", "seed": 11},
                }
            },
            "correctness": {"comparator": "max_abs_error", "maxAbsoluteError": 1e-6},
        },
    )
    protocol = _m(
        "BenchmarkProtocol",
        "e2e-cpu-wall-clock",
        {
            "harness": {"name": "benchproof-cpu-softmax", "version": "1"},
            "measurement": {
                "timer": "perf_counter_ns",
                "primaryStatistic": "median",
                "samples": SAMPLES,
            },
            "correctness": {"reference": "float64 NumPy", "comparator": "max_abs_error"},
        },
    )
    vendor = "".join(c for c in here.get("vendor", "unknown").lower() if c.isalnum())
    environment = _m(
        "ExecutionEnvironment",
        "e2e-this-cpu",
        {
            "hardware": {
                "vendor": vendor or "unknown",
                "product": here["model"],
                "architecture": here["architecture"],
            },
            "software": {"framework": {"name": "numpy", "version": np.__version__}},
        },
    )
    implementation = _m(
        "ImplementationRevision",
        "numpy-row-softmax",  # the one implementation the shipped CPU harness runs
        {
            "projectRevision": {"repository": "https://benchproof.dev", "version": "1"},
            "operation": {"specDigest": op_digest},
            "callable": {"language": "python", "path": "service/harness/cpu.py"},
            "support": {"hardwareArchitectures": [here["architecture"]], "dtypes": ["fp32"]},
            "licensing": {"declared": "Apache-2.0"},
            "source": {"contentDigest": "sha256:" + "1" * 64, "fileName": "cpu.py"},
        },
    )
    return {
        "operation": operation,
        "workload": workload,
        "protocol": protocol,
        "environment": environment,
        "implementation": implementation,
    }


def _measured_median(manifests: dict[str, dict[str, Any]]) -> int:
    """The median of one run of the shipped harness on these manifests, in whole ns."""
    given = {
        "contract": "benchproof-harness/v1",
        "runDigest": "sha256:" + "0" * 64,
        "requestId": "sha256:" + "0" * 64,
        "minSamples": SAMPLES,
        "timeLimitSeconds": 120,
        "manifests": manifests,
    }
    done = subprocess.run(
        [sys.executable, "-m", "service.harness.cpu"],
        input=json.dumps(given),
        capture_output=True,
        text=True,
        timeout=180,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    output = json.loads(done.stdout)
    assert output["correctness"]["passed"], output["correctness"]
    samples: list[float] = output["samplesNs"]
    return round(statistics.median(samples))


def cpu_bundle() -> dict[str, Any]:
    """A bundle ``{run, protocol, environment, workload, implementation, operation}`` of one run
    of the row softmax on this machine's CPU, its median measured here just now."""
    given = _referenced()
    digests = {role: check_manifest(m, source=SOURCE).digest for role, m in given.items()}
    median = _measured_median(given)
    run = _m(
        "BenchmarkRun",
        f"e2e-row-softmax-{ROWS}x{COLS}-cpu",
        {
            "implementationDigest": digests["implementation"],
            "workloadDigest": digests["workload"],
            "protocolDigest": digests["protocol"],
            "environmentDigest": digests["environment"],
            "status": "passed",
            "timing": {
                "primaryStatistic": "median",
                "latencyNs": {"median": median},
                "samples": SAMPLES,
            },
            "observedAt": datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ"),
            "sourceNative": {"source": SOURCE, "externalId": f"row-softmax-{ROWS}x{COLS}"},
        },
    )
    return {"run": run, **given}
