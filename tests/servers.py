"""The real ``benchproof`` console script in a child process, and a real ``benchproof serve``
for the tests that talk to one over loopback."""

from __future__ import annotations

import os
import re
import socket
import subprocess
import sys
import time
import urllib.request
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest

SCRIPT = Path(sys.executable).parent / "benchproof"


def run_cli(
    *args: object,
    input: str | None = None,
    timeout: float = 600,
    env: dict[str, str] | None = None,
    cwd: Path | None = None,
) -> subprocess.CompletedProcess[str]:
    """``benchproof ARGS…`` in a child process (``input`` on its stdin, ``env`` added to this
    process's environment, in the folder ``cwd``), output captured."""
    return subprocess.run(
        [str(SCRIPT), *map(str, args)],
        capture_output=True,
        text=True,
        input=input,
        timeout=timeout,
        check=False,
        env=None if env is None else {**os.environ, **env},
        cwd=cwd,
    )


# The line ``benchproof serve`` prints once its socket is bound: with ``--port 0`` it names the
# port the system picked (service/commands/serve.py).
SERVING = re.compile(
    r"^benchproof: serving .* on (http://\S+?)(?: with \d+ processes(?: and one writer)?)?$", re.M
)


@contextmanager
def closed_port() -> Iterator[int]:
    """A loopback port that refuses connections for as long as the block runs: bound by this
    process and never listened on, so no other test (or xdist worker) can take it meanwhile."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        yield int(s.getsockname()[1])


def serve_command(data: Path, *options: object) -> list[str]:
    """``benchproof serve --data data --host 127.0.0.1 --port 0`` and ``options``: the system
    picks the port and the server names it (``SERVING``, read by ``wait_served``). One process
    unless ``options`` ask for more (``--workers N``): the suite runs many servers at once, and
    the tests of the writer process ask for it."""
    command = [SCRIPT, "serve", "--data", data, "--host", "127.0.0.1", "--port", 0, *options]
    if "--workers" not in map(str, options):
        command += ["--workers", 1]
    return list(map(str, command))


def wait_served(
    proc: subprocess.Popen[bytes], log_path: Path, *, since: int = 0, timeout: float = 30.0
) -> str:
    """The base URL of the ``benchproof serve`` process ``proc`` (``serve_command``, its output
    in ``log_path`` from byte ``since`` on), once its serving line is there and ``/healthz``
    answers 200. Raises AssertionError with the log's tail when it exits or the time is up."""
    deadline = time.monotonic() + timeout
    base = ""
    while True:
        if not base:
            with log_path.open("rb") as log:
                log.seek(since)
                found = SERVING.search(log.read().decode(errors="replace"))
            base = found.group(1) if found else ""
        if base:
            try:
                with urllib.request.urlopen(base + "/healthz", timeout=2) as response:
                    if response.status == 200:
                        return base
            except OSError:
                pass
        if proc.poll() is not None or time.monotonic() > deadline:
            tail = log_path.read_text(errors="replace")[-2000:]
            raise AssertionError("benchproof serve did not come up: " + tail)
        time.sleep(0.05)


@contextmanager
def served(data: Path, *options: object) -> Iterator[str]:
    """``benchproof serve --data data`` (with ``options``) on a loopback port the system picks
    until the block ends; yields its base URL. Its output goes to ``serve.log`` beside
    ``data``, whose tail the failure names if it does not come up."""
    log_path = data.parent / "serve.log"
    log = log_path.open("w")
    proc = subprocess.Popen(serve_command(data, *options), stdout=log, stderr=subprocess.STDOUT)
    try:
        try:
            base = wait_served(proc, log_path)
        except AssertionError as failed:
            pytest.fail(str(failed))
        yield base
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
        log.close()
