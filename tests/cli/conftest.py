"""Run the real ``benchproof`` console script in a child process, and a real ``benchproof
serve`` over a seeded data directory."""

from __future__ import annotations

import contextlib
import subprocess
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from tests.corpora import shared_file
from tests.servers import SCRIPT, run_cli, served

Runner = Callable[..., subprocess.CompletedProcess[str]]


@pytest.fixture(scope="session")
def bp() -> Runner:
    assert SCRIPT.exists(), f"the console script is not installed at {SCRIPT}"
    return run_cli


@contextlib.contextmanager
def seeded_server(bp: Runner, data: Path, *options: object) -> Iterator[str]:
    """``benchproof serve`` (with ``options``) on a free loopback port, over ``data`` made by
    ``init`` and the seed manifest; yields its base URL and stops it after."""
    assert bp("init", "--data", data).returncode == 0
    seeded = bp("ingest", "manifest", shared_file("seed-manifest.json"), "--data", data)
    assert seeded.returncode == 0, seeded.stderr
    with served(data, *options) as url:
        yield url
