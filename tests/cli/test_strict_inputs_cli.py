"""Issue 17 on the command line: a malformed run reference or ``--as-of`` is one line on
stderr and exit 2; a well-formed reference that names nothing is exit 3, and says the tree size
it was asked at."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from tests.cli.conftest import Runner
from tests.corpora import shared_file

SEED = "sha256:5195388fd7c6a80d3089edc96ddebce288cc1703b1bfb949d3c9ca2c2c6fd74b"


@pytest.fixture(scope="module")
def data(bp: Runner, tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("strict") / "data"
    assert bp("init", "--data", root).returncode == 0
    seeded = bp("ingest", "manifest", shared_file("seed-manifest.json"), "--data", root)
    assert seeded.returncode == 0, seeded.stderr
    return root


def _one_line(out: subprocess.CompletedProcess[str], code: int) -> str:
    assert out.returncode == code, out.stderr
    assert out.stderr.count("\n") == 1 and out.stdout == "", out.stderr
    return out.stderr


@pytest.mark.parametrize("ref", ["a/b", "sha256:zz", "kernelindex:not-a-uuid", "abc"])
@pytest.mark.parametrize("command", ["show", "history"])
def test_a_malformed_reference_exits_2(bp: Runner, data: Path, ref: str, command: str) -> None:
    line = _one_line(bp("runs", command, ref, "--data", data), 2)
    assert "not a run reference" in line
    assert "short id" in line and "sha256:<64 hex digits>" in line and "kernelindex:<uuid>" in line


@pytest.mark.parametrize("ref", ["sha256:" + "0" * 64, "0" * 12, "nope:submission/1"])
def test_a_reference_naming_nothing_exits_3(bp: Runner, data: Path, ref: str) -> None:
    assert "no run matches" in _one_line(bp("runs", "show", ref, "--data", data), 3)


@pytest.mark.parametrize("text", ["2026-12-01", "2026-12-01T10:00Z", "yesterday", "99999"])
def test_a_malformed_as_of_exits_2(bp: Runner, data: Path, text: str) -> None:
    line = _one_line(bp("runs", "show", SEED, "--as-of", text, "--data", data), 2)
    assert "--as-of must be a tree size" in line and "RFC 3339 instant" in line


def test_as_of_zero_says_the_log_held_nothing(bp: Runner, data: Path) -> None:
    line = _one_line(bp("runs", "show", SEED, "--as-of", "0", "--data", data), 3)
    assert "as of tree size 0" in line and "held no entries" in line
    taken = bp("runs", "show", SEED, "--as-of", "2999-01-01T00:00:00Z", "--data", data)
    assert taken.returncode == 0, taken.stderr
