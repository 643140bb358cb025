"""``benchproof serve --port 0`` binds a port the system picks and names it in its serving line,
so that servers started side by side (the tests, on every xdist worker) never race each other
for a port chosen in advance."""

from __future__ import annotations

import re
import subprocess
import urllib.request
from pathlib import Path

import pytest

from tests.cli.conftest import Runner
from tests.servers import SERVING, serve_command, wait_served


@pytest.mark.parametrize("workers", [1, 2])
def test_port_0_is_named_in_the_serving_line(bp: Runner, tmp_path: Path, workers: int) -> None:
    data = tmp_path / "data"
    assert bp("init", "--data", data).returncode == 0
    logs = [tmp_path / "one.log", tmp_path / "two.log"]
    procs = []
    try:
        for log in logs:
            with log.open("wb") as out:
                command = serve_command(data, "--workers", workers)
                procs.append(subprocess.Popen(command, stdout=out, stderr=subprocess.STDOUT))
        urls = [wait_served(proc, log) for proc, log in zip(procs, logs, strict=True)]
    finally:
        for proc in procs:
            proc.terminate()
            proc.wait(timeout=30)
    processes = f" with {workers} processes and one writer" if workers > 1 else ""
    for url, log in zip(urls, logs, strict=True):
        port = int(url.rsplit(":", 1)[1])
        assert port > 0
        line = f"benchproof: serving {data} on http://127.0.0.1:{port}{processes}\n"
        assert line in log.read_text()
        found = SERVING.search(log.read_text())
        assert found is not None and found.group(1) == url
    assert urls[0] != urls[1]  # two servers, two ports, no port chosen beforehand


def test_a_served_port_answers_healthz(bp: Runner, tmp_path: Path) -> None:
    data = tmp_path / "data"
    assert bp("init", "--data", data).returncode == 0
    log = tmp_path / "serve.log"
    with log.open("wb") as out:
        proc = subprocess.Popen(serve_command(data), stdout=out, stderr=subprocess.STDOUT)
    try:
        url = wait_served(proc, log)
        assert re.fullmatch(r"http://127\.0\.0\.1:\d+", url)
        with urllib.request.urlopen(url + "/healthz", timeout=10) as answer:
            assert answer.status == 200
    finally:
        proc.terminate()
        proc.wait(timeout=30)
    assert proc.returncode == -15  # uvicorn stops and re-raises SIGTERM, as on a fixed port
