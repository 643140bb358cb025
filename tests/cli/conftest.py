"""Run the real ``benchproof`` console script in a child process, and a real ``benchproof
serve`` over a seeded data directory."""

from __future__ import annotations

import contextlib
import socket
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import httpx
import pytest

from tests.corpora import shared_file

Runner = Callable[..., subprocess.CompletedProcess[str]]

SCRIPT = Path(sys.executable).parent / "benchproof"


@pytest.fixture(scope="session")
def bp() -> Runner:
    assert SCRIPT.exists(), f"the console script is not installed at {SCRIPT}"

    def run(
        *args: object, input: str | None = None, timeout: float = 600
    ) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [str(SCRIPT), *map(str, args)],
            capture_output=True,
            text=True,
            input=input,
            timeout=timeout,
            check=False,
        )

    return run


@contextlib.contextmanager
def seeded_server(bp: Runner, data: Path, *options: object) -> Iterator[str]:
    """``benchproof serve`` (with ``options``) on a free loopback port, over ``data`` made by
    ``init`` and the seed manifest; yields its base URL and stops it after."""
    assert bp("init", "--data", data).returncode == 0
    seeded = bp("ingest", "manifest", shared_file("seed-manifest.json"), "--data", data)
    assert seeded.returncode == 0, seeded.stderr
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    command = [SCRIPT, "serve", "--data", data, "--host", "127.0.0.1", "--port", port, *options]
    proc = subprocess.Popen(
        list(map(str, command)), stdout=subprocess.DEVNULL, stderr=subprocess.PIPE
    )
    url = f"http://127.0.0.1:{port}"
    try:
        for _ in range(300):
            try:
                if httpx.get(f"{url}/healthz", timeout=1).status_code == 200:
                    break
            except httpx.TransportError:
                assert proc.poll() is None, proc.stderr.read() if proc.stderr else ""
                time.sleep(0.1)
        yield url
    finally:
        proc.terminate()
        proc.wait(10)
        if proc.stderr is not None:
            proc.stderr.close()
