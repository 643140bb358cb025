"""The real ``benchproof`` console script in a child process, and a real ``benchproof serve``
for the tests that talk to one over loopback."""

from __future__ import annotations

import os
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
) -> subprocess.CompletedProcess[str]:
    """``benchproof ARGS…`` in a child process (``input`` on its stdin, ``env`` added to this
    process's environment), output captured."""
    return subprocess.run(
        [str(SCRIPT), *map(str, args)],
        capture_output=True,
        text=True,
        input=input,
        timeout=timeout,
        check=False,
        env=None if env is None else {**os.environ, **env},
    )


def free_port() -> int:
    """A TCP port nothing listens on now, on 127.0.0.1."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@contextmanager
def served(data: Path, *options: object) -> Iterator[str]:
    """``benchproof serve --data data`` (with ``options``) on a free loopback port until the
    block ends; yields its base URL. Its output goes to ``serve.log`` beside ``data``, whose
    tail the failure names if it does not come up."""
    port = free_port()
    log_path = data.parent / "serve.log"
    log = log_path.open("w")
    command = [SCRIPT, "serve", "--data", data, "--host", "127.0.0.1", "--port", port, *options]
    proc = subprocess.Popen(list(map(str, command)), stdout=log, stderr=subprocess.STDOUT)
    base = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + 30
        while True:
            try:
                with urllib.request.urlopen(base + "/healthz", timeout=2) as response:
                    if response.status == 200:
                        break
            except OSError:
                pass
            if proc.poll() is not None or time.monotonic() > deadline:
                pytest.fail("benchproof serve did not come up: " + log_path.read_text()[-2000:])
            time.sleep(0.1)
        yield base
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
        log.close()
