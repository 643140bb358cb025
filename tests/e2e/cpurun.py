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

from events import check_manifest
from service.demo.cpu import COLS, ROWS, SAMPLES, referenced
from service.harness.environment import detect

API = "kernelindex.dev/v1alpha1"
SOURCE = "e2e-cpu"


def _m(kind: str, name: str, spec: dict[str, Any]) -> dict[str, Any]:
    return {"apiVersion": API, "kind": kind, "metadata": {"name": name}, "spec": spec}


def _referenced() -> dict[str, dict[str, Any]]:
    """The operation, workload, protocol, environment and implementation the run names: the
    demo's CPU run's (``service.demo.cpu``), on this machine's CPU."""
    return {role: checked.manifest for role, checked in referenced(detect()).items()}


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
