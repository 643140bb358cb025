"""Run the real ``benchproof`` console script in a child process."""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import pytest

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
