"""``benchproof cite``, ``check-citation`` and ``verify-citation`` as a user runs them: every
format from a data directory, the text by default, from the server ``$BENCHPROOF_SERVER`` names
unless ``--data`` is given, with the public URL ``$BENCHPROOF_PUBLIC_URL`` names, a missing data
directory refused without making one, a receipt downloaded under its run's and day's name, a plain citation checked (exit 0 when it holds, 1 when it does
not), a receipt verified offline (exit 1 naming the failed check when one byte changed) and a
key file that is not a vkey refused (exit 2)."""

from __future__ import annotations

import json
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import httpx
import pytest

from tests.corpora import shared_file
from tests.servers import run_cli, served


@pytest.fixture(scope="module")
def data(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, str]:
    root = tmp_path_factory.mktemp("cite") / "data"
    assert run_cli("init", "--data", root).returncode == 0
    assert (
        run_cli("ingest", "manifest", shared_file("seed-manifest.json"), "--data", root).returncode
        == 0
    )
    listed = run_cli("runs", "list", "--json", "--data", root).stdout.splitlines()
    return root, json.loads(listed[0])["runDigest"]


@pytest.mark.parametrize("fmt", ["text", "bibtex", "biblatex", "csl-json", "receipt"])
def test_cite_writes_each_format(data: tuple[Path, str], fmt: str) -> None:
    root, digest = data
    done = run_cli(
        "cite", digest[7:19], "--format", fmt, "--data", root, "--base", "https://b.example"
    )
    assert done.returncode == 0, done.stderr
    assert f"https://b.example/runs/{digest}" in done.stdout


def test_check_citation_exit_codes(data: tuple[Path, str]) -> None:
    root, digest = data
    today = datetime.now(UTC).date().isoformat()
    held = run_cli(
        "check-citation", digest, "--digest", digest, "--accessed", today, "--data", root
    )
    assert held.returncode == 0 and json.loads(held.stdout)["valid"] is True
    before = run_cli(
        "check-citation", digest, "--digest", digest, "--accessed", "2001-01-01", "--data", root
    )
    assert before.returncode == 1 and json.loads(before.stdout)["valid"] is False
    bad = run_cli("check-citation", digest, "--digest", "nope", "--accessed", today, "--data", root)
    assert bad.returncode == 2 and bad.stderr.count("\n") == 1


def test_verify_citation_names_what_failed(data: tuple[Path, str], tmp_path: Path) -> None:
    root, digest = data
    receipt = tmp_path / "receipt.txt"
    receipt.write_text(run_cli("cite", digest, "--format", "receipt", "--data", root).stdout)
    vkey = tmp_path / "log.vkey"
    vkey.write_text(run_cli("log", "key", "--data", root).stdout)
    assert run_cli("verify-citation", receipt, "--log-key", vkey).returncode == 0
    lines = receipt.read_text().split("\n")
    lines[4] = "evidence: verified"  # the header claims a level the statement does not
    receipt.write_text("\n".join(lines))
    done = run_cli("verify-citation", receipt, "--log-key", vkey)
    assert done.returncode == 1 and "bytes" in done.stderr
    vkey.write_text("not a key\n")
    refused = run_cli("verify-citation", receipt, "--log-key", vkey)
    assert refused.returncode == 2 and "vkey" in refused.stderr


def test_verify_citation_online_after_the_log_grew(data: tuple[Path, str], tmp_path: Path) -> None:
    """``--server``: the offline checks, then the log's current checkpoint (signed by the same
    key) and a consistency proof from the receipt's, checked by the CLI itself."""
    root, digest = data
    receipt = tmp_path / "receipt.txt"
    receipt.write_text(run_cli("cite", digest, "--format", "receipt", "--data", root).stdout)
    vkey = tmp_path / "log.vkey"
    vkey.write_text(run_cli("log", "key", "--data", root).stdout)
    examples = (
        Path(__file__).resolve().parents[2] / "service" / "demo" / "data" / "kernelindex-examples"
    )
    assert run_cli("ingest", "manifest", examples, "--data", root).returncode == 0  # it grows
    with served(root) as url:
        done = run_cli("verify-citation", receipt, "--log-key", vkey, "--server", url)
    assert done.returncode == 0, done.stderr
    assert (
        "Online (checked):" in done.stdout and "consistent with the cited checkpoint" in done.stdout
    )


def test_cite_gives_the_text_by_default(data: tuple[Path, str]) -> None:
    root, digest = data
    done = run_cli("cite", digest, "--data", root)
    assert done.returncode == 0, done.stderr
    assert done.stdout == run_cli("cite", digest, "--format", "text", "--data", root).stdout
    assert "-----BEGIN" not in done.stdout and "Benchproof citation receipt" not in done.stdout


def test_cite_asks_the_server_benchproof_server_names(data: tuple[Path, str]) -> None:
    root, digest = data
    with served(root, "--public-url", "https://index.example") as url:
        env = {"BENCHPROOF_SERVER": url}
        asked = run_cli("cite", digest[7:19], cwd=root.parent, env=env)
        assert asked.returncode == 0, asked.stderr
        # The served public URL, not the address the command reached it at.
        assert f"https://index.example/runs/{digest}" in asked.stdout
        # ``--data`` named: the data directory is read, whatever the variable says.
        local = run_cli(
            "cite", digest, "--data", root, env={**env, "BENCHPROOF_SERVER": "http://127.0.0.1:9"}
        )
        assert local.returncode == 0, local.stderr
        served_receipt = httpx.get(f"{url}/v1/runs/{digest}/citation", params={"format": "receipt"})
    day = datetime.now(UTC).date().isoformat()
    assert served_receipt.headers["content-disposition"] == (
        f'attachment; filename="benchproof-receipt-{digest[7:19]}-{day}.txt"'
    )


def test_cite_from_a_data_directory_names_the_public_url(data: tuple[Path, str]) -> None:
    root, digest = data
    env = {"BENCHPROOF_PUBLIC_URL": "https://public.example"}
    done = run_cli("cite", digest, "--data", root, env=env)
    assert done.returncode == 0, done.stderr
    assert f"https://public.example/runs/{digest}" in done.stdout


def test_cite_of_a_missing_directory_makes_nothing(tmp_path: Path) -> None:
    missing = tmp_path / "nowhere"
    done = run_cli("cite", "abcdef123456", "--data", missing)
    assert done.returncode == 3, done.stderr
    assert done.stderr.count("\n") == 1 and "init" not in done.stderr
    assert "--server" in done.stderr and not missing.exists()


@pytest.mark.parametrize(
    ("change", "said"),
    [
        (lambda t: t.replace("\n", "\r\n"), "CR LF"),
        (lambda t: t.rstrip("\n"), "does not end in a newline"),
        (lambda t: t + "\n", "more than one newline"),
        (lambda t: "\n".join(t.split("\n")[:9]) + "\n", "cut short"),
    ],
)
def test_a_receipt_whose_line_ends_changed_says_so(
    data: tuple[Path, str], tmp_path: Path, change: Any, said: str
) -> None:
    root, digest = data
    issued = run_cli("cite", digest, "--format", "receipt", "--data", root).stdout
    receipt, vkey = tmp_path / "receipt.txt", tmp_path / "log.vkey"
    receipt.write_bytes(change(issued).encode())
    vkey.write_text(run_cli("log", "key", "--data", root).stdout)
    done = run_cli("verify-citation", receipt, "--log-key", vkey)
    assert done.returncode == 1 and said in done.stderr, done.stderr
    assert "must start with" not in done.stderr
