"""The shipped CPU harness, run as a real subprocess, and the contract it speaks."""

from __future__ import annotations

import copy
import json
import platform
import subprocess
import sys
import threading
from pathlib import Path
from typing import Any

import msgspec
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra.numpy import arrays
from jsonschema import Draft202012Validator

from service.harness import contract, run
from service.harness.cpu import reference, softmax
from service.harness.environment import detect, matches, normalise

ROOT = Path(__file__).resolve().parents[2]
SCHEMAS = ROOT / "service" / "harness" / "schemas"


def validator(name: str) -> Draft202012Validator:
    schema = json.loads((SCHEMAS / f"{name}-v1.schema.json").read_text(encoding="utf-8"))
    Draft202012Validator.check_schema(schema)
    return Draft202012Validator(schema)


INPUT, OUTPUT = validator("harness-input"), validator("harness-output")


def manifest(kind: str, name: str, spec: dict[str, Any]) -> dict[str, Any]:
    return {
        "apiVersion": "kernelindex.dev/v1alpha1",
        "kind": kind,
        "metadata": {"name": name},
        "spec": spec,
    }


def bundle(
    *, shape: list[int] | None = None, min_samples: int = 5, time_limit: float = 60
) -> dict[str, Any]:
    """A valid input: a 64x256 float32 softmax workload for numpy-row-softmax."""
    tensor = {
        "shape": shape or [64, 256],
        "dtype": "float32",
        "data": {"generator": "normal", "seed": 1234},
    }
    return {
        "contract": contract.CONTRACT,
        "runDigest": "sha256:" + "1" * 64,
        "requestId": "sha256:" + "2" * 64,
        "minSamples": min_samples,
        "timeLimitSeconds": time_limit,
        "manifests": {
            "run": manifest("BenchmarkRun", "demo-cpu-softmax", {"status": "passed"}),
            "protocol": manifest(
                "BenchmarkProtocol",
                "cpu-perf-counter-median",
                {
                    "harness": {"name": "benchproof-cpu-softmax", "version": "1"},
                    "measurement": {
                        "timer": "perf_counter_ns",
                        "primaryStatistic": "median",
                        "samples": 8,
                    },
                },
            ),
            "environment": manifest(
                "ExecutionEnvironment",
                "this-cpu",
                {"hardware": {"vendor": "intel", "product": "a CPU", "architecture": "x86_64"}},
            ),
            "workload": manifest(
                "WorkloadCase",
                "softmax-64x256",
                {
                    "operationSpecDigest": "sha256:" + "3" * 64,
                    "axes": {"rows": 64, "cols": 256},
                    "tensors": {"x": tensor},
                    "correctness": {"comparator": "elementwise_close", "maxAbsoluteError": 1e-6},
                },
            ),
            "implementation": manifest(
                "ImplementationRevision", "numpy-row-softmax", {"callable": {"language": "python"}}
            ),
        },
    }


def run_harness(stdin: bytes) -> subprocess.CompletedProcess[bytes]:
    return subprocess.run(
        [sys.executable, "-m", "service.harness.cpu"],
        input=stdin,
        capture_output=True,
        cwd=ROOT,
        timeout=120,
        check=False,
    )


def encode(value: dict[str, Any]) -> bytes:
    return json.dumps(value).encode()


def test_the_bundle_is_a_valid_input() -> None:
    sent = bundle()
    INPUT.validate(sent)
    assert msgspec.json.decode(encode(sent), type=contract.HarnessInput).minSamples == 5


def test_the_harness_measures_a_valid_bundle() -> None:
    done = run_harness(encode(bundle()))
    assert done.returncode == 0, done.stderr.decode()
    assert done.stdout.count(b"\n") == 1
    OUTPUT.validate(json.loads(done.stdout))
    output = contract.read_output(done.stdout)
    # max(minSamples 5, the protocol's 8 samples, the harness's own 20)
    assert len(output.samplesNs) == 20
    assert output.correctness.passed, output.correctness.detail
    assert "max absolute error" in output.correctness.detail
    assert output.harness == contract.HarnessInfo(name="benchproof-cpu-softmax", version="1")
    assert msgspec.to_builtins(output.environment) == detect()
    progress = done.stderr.decode()
    assert "warming up" in progress
    assert "sample 20/20" in progress


def test_a_failed_correctness_check_is_still_a_result() -> None:
    sent = bundle()
    sent["manifests"]["workload"]["spec"]["correctness"]["maxAbsoluteError"] = 0
    done = run_harness(encode(sent))
    assert done.returncode == 0, done.stderr.decode()
    output = contract.read_output(done.stdout)
    assert not output.correctness.passed
    assert "exceeds the bound 0" in output.correctness.detail
    assert len(output.samplesNs) >= 5


def test_sampling_stops_near_half_the_time_limit() -> None:
    sent = bundle(shape=[512, 1024], min_samples=3, time_limit=1.0)
    sent["manifests"]["protocol"]["spec"]["measurement"]["samples"] = 1_000_000
    done = run_harness(encode(sent))
    assert done.returncode == 0, done.stderr.decode()
    output = contract.read_output(done.stdout)
    assert 3 <= len(output.samplesNs) < 1_000_000
    assert "the time limit is near" in done.stderr.decode()


def _other_implementation() -> bytes:
    sent = bundle()
    sent["manifests"]["implementation"]["metadata"]["name"] = "triton-row-softmax"
    return encode(sent)


@pytest.mark.parametrize(
    ("stdin", "reason"),
    [
        pytest.param(_other_implementation(), "not this harness's kernel", id="other-kernel"),
        pytest.param(encode(bundle(shape=[4, 64, 256])), "must be 2-D", id="3-d-tensor"),
        pytest.param(b'{"contract": "benchproof-harness/v1", ', "malformed input", id="bad-json"),
    ],
)
def test_the_harness_refuses_what_it_cannot_run(stdin: bytes, reason: str) -> None:
    done = run_harness(stdin)
    assert done.returncode == 2
    assert done.stdout == b""
    lines = done.stderr.decode().splitlines()
    assert len(lines) == 1
    assert reason in lines[0]


@settings(deadline=None, max_examples=60)
@given(
    arrays(
        np.float32,
        st.tuples(st.integers(1, 8), st.integers(1, 64)),
        elements=st.floats(-1e4, 1e4, width=32),
    )
)
def test_softmax_matches_the_float64_reference(x: np.ndarray[Any, np.dtype[np.float32]]) -> None:
    result = softmax(x)
    assert result.dtype == np.float32
    assert float(np.max(np.abs(result - reference(x)))) <= 1e-6
    np.testing.assert_allclose(result.sum(axis=1, dtype=np.float64), 1.0, atol=1e-5)


def output() -> dict[str, Any]:
    return {
        "contract": contract.CONTRACT,
        "samplesNs": [1200.0, 1150, 1180.5],
        "correctness": {"passed": True, "detail": "max absolute error 1e-9"},
        "environment": {"kind": "cpu", "model": "Some CPU", "architecture": "x86_64"},
        "harness": {"name": "some-harness", "version": "2"},
    }


def changed(**fields: Any) -> bytes:
    value = copy.deepcopy(output())
    for key, new in fields.items():
        if new is None:
            del value[key]
        else:
            value[key] = new
    return encode(value)


def test_read_output_reads_one_object() -> None:
    OUTPUT.validate(output())
    read = contract.read_output(encode(output()) + b"\n")
    assert read.samplesNs == (1200.0, 1150.0, 1180.5)
    assert read.environment.model == "Some CPU"


@pytest.mark.parametrize(
    ("stdout", "reason"),
    [
        pytest.param(b"", "printed nothing", id="nothing"),
        pytest.param(
            encode(output()) + b"\n" + encode(output()), "trailing characters", id="two-objects"
        ),
        pytest.param(b"progress\n" + encode(output()), "malformed", id="text-before"),
        pytest.param(changed(correctness=None), "missing required field", id="missing-field"),
        pytest.param(changed(verdict="fast"), "unknown field `verdict`", id="extra-field"),
        pytest.param(changed(samplesNs=[]), "length >= 1", id="no-samples"),
        pytest.param(changed(samplesNs=[1000, 0]), "> 0.0", id="zero-sample"),
        pytest.param(changed(samplesNs=[-3.5]), "> 0.0", id="negative-sample"),
        pytest.param(
            encode(output()).replace(b"1200.0", b"1e999"), "out of range", id="infinite-sample"
        ),
        pytest.param(changed(contract="benchproof-harness/v2"), "$.contract", id="wrong-contract"),
    ],
)
def test_read_output_refuses(stdout: bytes, reason: str) -> None:
    with pytest.raises(contract.HarnessOutputError) as refused:
        contract.read_output(stdout)
    assert reason in str(refused.value)


def test_read_output_refuses_what_the_schema_refuses() -> None:
    for stdout in (changed(samplesNs=[]), changed(verdict="fast"), changed(contract="v2")):
        assert not OUTPUT.is_valid(json.loads(stdout))


def test_an_output_cannot_hold_an_infinite_sample() -> None:
    with pytest.raises(ValueError, match="finite"):
        contract.HarnessOutput(
            contract=contract.CONTRACT,
            samplesNs=(float("inf"),),
            correctness=contract.Correctness(passed=True, detail=""),
            environment=contract.Environment(kind="cpu", model="m", architecture="x86_64"),
            harness=contract.HarnessInfo(name="h", version="1"),
        )


def test_detect_describes_this_cpu() -> None:
    found = detect()
    assert found["kind"] == "cpu"
    assert found["model"]
    assert found["architecture"] == platform.machine()


CPU = {"kind": "cpu", "model": "Intel(R) Xeon(R) Gold 6338 CPU @ 2.00GHz", "architecture": "x86_64"}


def test_a_cpu_worker_never_matches_a_gpu_run() -> None:
    gpu = {"kind": "gpu", "model": "NVIDIA H100 80GB HBM3", "architecture": "sm_90"}
    assert not matches(gpu, CPU)
    assert not matches({**CPU, "kind": "gpu"}, CPU)


def test_another_cpu_model_of_the_same_architecture_does_not_match() -> None:
    assert not matches(CPU, {**CPU, "model": "AMD EPYC 7763 64-Core Processor"})


def test_the_same_model_matches_whatever_its_whitespace_and_case() -> None:
    offered = {
        "kind": "CPU",
        "model": "  intel(r)  xeon(r) GOLD 6338 cpu\t@ 2.00ghz ",
        "architecture": "X86_64",
        "vendor": "GenuineIntel",
    }
    assert normalise(offered) == normalise(CPU)
    assert matches(CPU, offered)


def test_an_environment_missing_a_field_matches_nothing() -> None:
    partial = {"kind": "cpu", "architecture": "x86_64"}
    assert not matches(partial, partial)


def test_the_display_suffix_does_not_stop_a_match() -> None:
    """``detect`` names a CPU "… (CPU)" when its name does not say so; a run's manifest that
    names the plain model still matches."""
    run = {"kind": "cpu", "model": "AMD EPYC 7B13 64-Core Processor", "architecture": "x86_64"}
    worker = {**run, "model": "AMD EPYC 7B13 64-Core Processor (CPU)"}
    assert matches(run, worker) and matches(worker, run)


def test_a_hung_harness_and_what_it_left_behind_are_killed(tmp_path: Path) -> None:
    """Past its time limit the harness's process group is killed, and a descendant that left
    the group holding its pipes open cannot keep the worker waiting."""
    script = tmp_path / "hang.py"
    script.write_text(
        "import subprocess, sys, time\n"
        "subprocess.Popen([sys.executable, '-c', 'import time; time.sleep(60)'],"
        " start_new_session=True)\n"
        "time.sleep(60)\n",
        encoding="utf-8",
    )
    outcome: list[BaseException] = []

    def call() -> None:
        try:
            run.run_harness([sys.executable, str(script)], {"contract": contract.CONTRACT}, 1)
        except run.HarnessFailed as exc:
            outcome.append(exc)

    worker = threading.Thread(target=call)
    worker.start()
    worker.join(30)
    assert not worker.is_alive(), "the worker still waits on the harness's pipes"
    assert outcome and "time limit" in str(outcome[0])


def test_the_cuda_harness_refuses_where_it_cannot_run() -> None:
    """The PyTorch/CUDA harness speaks the same contract. Here (no PyTorch, no GPU) it can
    only refuse, with exit 2 and a one-line reason; it refuses another kernel and malformed
    input the same way. Its measuring path has not run on a GPU."""
    cuda = bundle()
    cuda["manifests"]["implementation"]["metadata"]["name"] = "torch-row-softmax"
    for stdin, reason in (
        (encode(cuda), "PyTorch is not installed"),
        (encode(bundle()), "not this harness's kernel"),
        (b"{", "malformed input"),
    ):
        done = subprocess.run(
            [sys.executable, "-m", "service.harness.cuda"],
            input=stdin,
            capture_output=True,
            cwd=ROOT,
            timeout=120,
            check=False,
        )
        assert done.returncode == 2 and done.stdout == b""
        assert reason in done.stderr.decode(), done.stderr
