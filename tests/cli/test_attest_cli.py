"""``benchproof keygen``, ``keys register``, ``attest`` and ``report``: the real console script
against a real ``benchproof serve`` process on loopback, over a data directory made by ``init``
and the seed manifest."""

from __future__ import annotations

import json
import socket
import subprocess
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from keys import load_private_key, parse_vkey
from tests.cli.conftest import Runner, seeded_server

SEED = "sha256:5195388fd7c6a80d3089edc96ddebce288cc1703b1bfb949d3c9ca2c2c6fd74b"
SEED_ALIAS = "sol-execbench:165"


class Server:
    def __init__(self, url: str, data: Path) -> None:
        self.url = url
        self.data = data

    def size(self) -> int:
        size: int = httpx.get(f"{self.url}/healthz", timeout=10).json()["treeSize"]
        return size

    def run(self, ref: str) -> dict[str, object]:
        r = httpx.get(f"{self.url}/v1/runs/{ref}", timeout=10)
        assert r.status_code == 200, r.text
        run: dict[str, object] = r.json()
        return run


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory, bp: Runner) -> Iterator[Server]:
    data = tmp_path_factory.mktemp("attestcli") / "data"
    with seeded_server(bp, data) as url:
        yield Server(url, data)


def _keygen(bp: Runner, path: Path, name: str) -> str:
    out = bp("keygen", path, "--name", name)
    assert out.returncode == 0, out.stderr
    return out.stdout.splitlines()[0]


def _register(bp: Runner, server: Server, key: Path, name: str) -> str:
    key_id = _keygen(bp, key, name)
    out = bp("keys", "register", "--key", key, "--name", name, "--server", server.url)
    assert out.returncode == 0, out.stderr
    answer = json.loads(out.stdout)
    assert answer["keyId"] == key_id
    assert (answer["name"], answer["role"]) == (name, "community")
    return key_id


def _one_line_error(out: subprocess.CompletedProcess[str], code: int = 2) -> str:
    assert out.returncode == code, (out.stdout, out.stderr)
    assert out.stdout == ""
    assert out.stderr.startswith("benchproof: error: ")
    assert out.stderr.count("\n") == 1
    return out.stderr


def test_keygen_writes_a_private_key_and_prints_its_id_then_its_vkey(
    bp: Runner, tmp_path: Path
) -> None:
    path = tmp_path / "me.key"
    out = bp("keygen", path, "--name", "alice")
    assert out.returncode == 0, out.stderr
    assert path.stat().st_mode & 0o777 == 0o600
    key = load_private_key(path)
    key_id, vkey = out.stdout.splitlines()
    assert key_id == key.key_id
    verifier = parse_vkey(vkey)
    assert (verifier.name, verifier.public) == ("alice", key.public)
    default = bp("keygen", tmp_path / "other.key")
    assert default.returncode == 0, default.stderr
    assert parse_vkey(default.stdout.splitlines()[1]).name == "key"


def test_keygen_never_overwrites_a_file(bp: Runner, tmp_path: Path) -> None:
    path = tmp_path / "me.key"
    path.write_text("precious")
    assert "already exists" in _one_line_error(bp("keygen", path))
    assert path.read_text() == "precious"


def test_keygen_refuses_a_bad_name_before_writing_a_key(bp: Runner, tmp_path: Path) -> None:
    assert "invalid key name" in _one_line_error(bp("keygen", tmp_path / "k", "--name", "a b"))
    assert not (tmp_path / "k").exists()


def test_a_key_file_others_may_read_is_refused(bp: Runner, server: Server, tmp_path: Path) -> None:
    key = tmp_path / "open.key"
    _keygen(bp, key, "open")
    key.chmod(0o644)
    before = server.size()
    register = bp("keys", "register", "--key", key, "--name", "open", "--server", server.url)
    assert "readable by group/others" in _one_line_error(register)
    attest = bp("attest", SEED_ALIAS, "--kind", "reproduced", "--key", key, "--server", server.url)
    assert "readable by group/others" in _one_line_error(attest)
    assert server.size() == before


def test_register_attest_twice_and_report(bp: Runner, server: Server, tmp_path: Path) -> None:
    key = tmp_path / "me.key"
    before = server.size()
    key_id = _register(bp, server, key, "alice-repro")
    assert server.size() == before + 1

    run = server.run(SEED_ALIAS)
    primary = run["primary"]
    assert isinstance(primary, dict)
    attest = (
        "attest",
        SEED_ALIAS,
        "--kind",
        "reproduced",
        "--value",
        "812",
        "--unit",
        "ns",
        "--evidence-url",
        "https://example.org/log.txt",
        "--note",
        "H100, same container",
        "--key",
        key,
        "--server",
        server.url,
    )
    first = bp(*attest)
    assert first.returncode == 0, first.stderr
    posted = json.loads(first.stdout)
    assert posted["index"] == before + 1
    assert posted["inclusionProof"]["index"] == posted["index"]
    assert "appended" in first.stderr
    shown = server.run(SEED)["attestations"]
    assert isinstance(shown, list)
    [attestation] = shown
    assert attestation["id"] == posted["id"]
    assert attestation["attester"] == key_id
    assert attestation["predicate"] == {
        "kind": "reproduced",
        "value": 812,
        "unit": "ns",
        "statistic": primary["statistic"],  # --value without --statistic: the run's primary one
        "evidenceUrls": ["https://example.org/log.txt"],
        "note": "H100, same container",
    }

    size = server.size()
    again = bp(*attest)
    assert again.returncode == 0, again.stderr
    assert json.loads(again.stdout)["id"] == posted["id"]
    assert "already holds" in again.stderr
    assert server.size() == size

    assert server.run(SEED)["underReview"] is False
    report = bp(
        "report",
        "5195388fd7c6",
        "--reason",
        "incorrect-result",
        "--text",
        "the median is the mean",
        "--server",
        server.url,
    )
    assert report.returncode == 0, report.stderr
    assert json.loads(report.stdout)["index"] == size
    assert server.run(SEED)["underReview"] is True
    # The run's lists, from the server and from the data directory alike (issue 30).
    url = ("--server", server.url)
    listed = bp("runs", "attestations", SEED_ALIAS, *url)
    assert listed.returncode == 0, listed.stderr
    assert posted["id"][:19] in listed.stdout and "reproduced 812 ns" in listed.stdout
    assert listed.stdout == bp("runs", "attestations", SEED_ALIAS, "--data", server.data).stdout
    as_json = json.loads(bp("runs", "attestations", SEED, "--json", *url).stdout)
    assert [a["id"] for a in as_json] == [posted["id"]]
    reports = bp("runs", "reports", SEED[7:19], *url)
    assert "incorrect-result" in reports.stdout and "[open]" in reports.stdout
    assert "the median is the mean" in reports.stdout
    reruns = bp("runs", "reruns", SEED, *url)
    assert reruns.returncode == 0 and reruns.stdout.splitlines()[0].endswith(": 0")
    earlier = bp("runs", "attestations", SEED, "--as-of", str(before), *url)
    assert earlier.stdout.splitlines()[0].endswith(": 0"), earlier.stdout
    history = bp("runs", "history", SEED, *url)
    assert history.returncode == 0 and history.stdout.startswith("History of run 5195388fd7c6")
    assert history.stdout == bp("runs", "history", SEED, "--data", server.data).stdout
    # Every signature in the log, the attester's own included, verifies.
    assert bp("verify", "--data", server.data).returncode == 0


def test_refusals_are_one_line(bp: Runner, server: Server, tmp_path: Path) -> None:
    key = tmp_path / "me.key"
    _register(bp, server, key, "bob-refused")
    before = server.size()
    plain_http = bp(
        "attest",
        SEED_ALIAS,
        "--kind",
        "reproduced",
        "--evidence-url",
        "http://example.org/log.txt",
        "--key",
        key,
        "--server",
        server.url,
    )
    assert "HTTP 4" in _one_line_error(plain_http)
    again = bp("keys", "register", "--key", key, "--name", "bob-refused", "--server", server.url)
    assert "(HTTP 409)" in _one_line_error(again)
    unknown = bp(
        "report", "nope:nothing", "--reason", "other", "--text", "?", "--server", server.url
    )
    assert "(HTTP 404)" in _one_line_error(unknown, code=3)
    assert server.size() == before


def test_an_unreachable_server_is_one_line(bp: Runner, tmp_path: Path) -> None:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]  # closed again: nothing listens there
    out = bp(
        "report",
        SEED_ALIAS,
        "--reason",
        "other",
        "--text",
        "?",
        "--server",
        f"http://127.0.0.1:{port}",
    )
    assert "cannot reach" in _one_line_error(out)
    bad = bp("report", SEED_ALIAS, "--reason", "other", "--text", "?", "--server", "localhost:8000")
    assert "not an http(s) URL" in _one_line_error(bad)
