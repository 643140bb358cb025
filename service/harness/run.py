"""Running a harness under the contract ``benchproof-harness/v1``: its input on stdin, one
result on stdout, killed past its time limit (the rerun worker, and the demo's own measurement).
"""

from __future__ import annotations

import contextlib
import json
import os
import signal
import subprocess
from typing import Any

from service.errors import ServiceError
from service.harness.contract import HarnessOutput, HarnessOutputError, read_output

__all__ = ["HarnessFailed", "run_harness"]


class HarnessFailed(ServiceError):
    """The harness crashed, ran past its time limit, could not run the bundle, or printed
    something other than one result."""


def _end(proc: subprocess.Popen[bytes]) -> None:
    """Kill the harness's process group and reap it; a descendant that left the group and
    holds the pipes open cannot keep the worker waiting."""
    with contextlib.suppress(ProcessLookupError):
        os.killpg(proc.pid, signal.SIGKILL)
    for pipe in (proc.stdin, proc.stdout, proc.stderr):
        if pipe is not None:
            pipe.close()
    proc.wait()


def run_harness(command: list[str], harness_input: dict[str, Any], limit: float) -> HarnessOutput:
    """Run the harness ``command`` on ``harness_input`` within ``limit`` seconds.

    Raises:
        HarnessFailed: it could not be started, ran past the limit (its process group is
            killed), exited other than 0, or printed something other than one result.
    """
    try:
        proc = subprocess.Popen(  # noqa: S603 - the operator's own harness command
            command,
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            start_new_session=True,  # its own process group: a kill takes its children too
        )
    except OSError as exc:
        raise HarnessFailed(f"the harness {command[0]!r} cannot be started: {exc}") from None
    try:
        out, err = proc.communicate(json.dumps(harness_input).encode(), timeout=limit)
    except subprocess.TimeoutExpired:
        raise HarnessFailed(f"the harness ran past its time limit of {limit:g} s") from None
    finally:  # whatever happened, nothing it started outlives it
        _end(proc)
    last = err.decode(errors="replace").strip().splitlines()[-1:] or [""]
    if proc.returncode == 2:
        raise HarnessFailed(f"the harness cannot run this bundle: {last[0]}")
    if proc.returncode != 0:
        raise HarnessFailed(f"the harness crashed (exit {proc.returncode}): {last[0]}")
    try:
        return read_output(out)
    except HarnessOutputError as exc:
        raise HarnessFailed(f"the harness printed no valid result: {exc}") from None
