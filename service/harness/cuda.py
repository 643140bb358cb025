"""A PyTorch/CUDA harness under the contract ``benchproof-harness/v1``: the row softmax of the
shipped CPU harness's workloads (one 2-D float32 tensor ``x`` of seeded normal data), written
as ``torch.softmax`` on a CUDA device (implementation ``torch-row-softmax``), checked against
the same float64 NumPy reference, and timed with CUDA events around each call.

    python -m service.harness.cuda   # input on stdin, one result on stdout

It declares ``{"kind": "gpu", "model": torch.cuda.get_device_name(), "architecture":
"sm_<major><minor>", "vendor": "nvidia"}``. Without PyTorch or without a CUDA device it exits 2
(this harness cannot run the bundle here). It has NOT been run on a GPU: the machine it was
written on has none, so only its refusals are tested; treat its first GPU run as its test.
"""

from __future__ import annotations

import sys
import time
from typing import Any

import msgspec
import numpy as np

from service.harness.contract import (
    CONTRACT,
    Correctness,
    Environment,
    HarnessInfo,
    HarnessInput,
    HarnessOutput,
)
from service.harness.cpu import WARMUPS, Unsupported, read_case, reference

__all__ = ["IMPLEMENTATION", "main"]

NAME, VERSION = "benchproof-cuda-softmax", "1"
IMPLEMENTATION = "torch-row-softmax"


def _log(text: str) -> None:
    print(f"{NAME}: {text}", file=sys.stderr, flush=True)


def _torch() -> Any:
    """PyTorch with a CUDA device.

    Raises:
        Unsupported: PyTorch is not installed, or it sees no CUDA device.
    """
    try:
        import torch  # type: ignore[import-not-found]  # only on a GPU machine
    except ImportError:
        raise Unsupported(
            "PyTorch is not installed: this harness needs it and a CUDA GPU"
        ) from None
    if not torch.cuda.is_available():
        raise Unsupported("no CUDA device is available")
    return torch


def main() -> int:
    """Run the harness on stdin's bundle: 0 with the output on stdout, 2 when it cannot."""
    started = time.perf_counter()
    try:
        bundle = msgspec.json.decode(sys.stdin.buffer.read(), type=HarnessInput)
        case = read_case(bundle, IMPLEMENTATION)
        torch = _torch()
    except msgspec.DecodeError as error:
        _log(f"malformed input: {error}")
        return 2
    except Unsupported as reason:
        _log(str(reason))
        return 2
    x = np.random.default_rng(case.seed).standard_normal((case.rows, case.cols), dtype=np.float32)
    device = torch.from_numpy(x).cuda()
    y = torch.softmax(device, dim=1).cpu().numpy()
    worst = float(np.max(np.abs(y.astype(np.float64) - reference(x))))
    correctness = Correctness(
        passed=worst <= case.tolerance,
        detail=f"max absolute error {worst:.3g} against a float64 reference "
        f"{'<=' if worst <= case.tolerance else '>'} the bound {case.tolerance:g}",
    )
    for _ in range(WARMUPS):
        torch.softmax(device, dim=1)
    torch.cuda.synchronize()
    begin, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    samples: list[float] = []
    budget = bundle.timeLimitSeconds * 0.5
    while len(samples) < case.samples:
        if len(samples) >= bundle.minSamples and time.perf_counter() - started > budget:
            break
        begin.record()
        torch.softmax(device, dim=1)
        end.record()
        end.synchronize()
        samples.append(begin.elapsed_time(end) * 1e6)  # ms -> ns
    major, minor = torch.cuda.get_device_capability()
    output = HarnessOutput(
        contract=CONTRACT,
        samplesNs=tuple(samples),
        correctness=correctness,
        environment=Environment(
            kind="gpu",
            model=torch.cuda.get_device_name(),
            architecture=f"sm_{major}{minor}",
            vendor="nvidia",
        ),
        harness=HarnessInfo(name=NAME, version=VERSION),
    )
    sys.stdout.buffer.write(msgspec.json.encode(output) + b"\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
