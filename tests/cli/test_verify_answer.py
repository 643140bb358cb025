"""Signed answers as a user keeps and checks them: ``runs show`` and ``groups show`` against a
real ``benchproof serve`` print what they print from a data directory, and with ``--json`` the
server's signed answer, which ``benchproof verify-answer`` checks with the log's vkey (exit 0),
and against the log recomputed at the same size (``--data``). A body changed after the fact, a
lie the log key signed, another key and bad input are told apart (exit 1 naming the check and
the field, or 2)."""

from __future__ import annotations

import hashlib
import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from keys import NoteSigner, SigningKey, load_private_key
from service.app.ingest import ingest
from service.app.runs import show_run
from service.core.config import DataDir
from service.core.init import init_data_dir
from tests.builders import bundle, ingest_event
from tests.corpora import shared_file
from tests.servers import run_cli, served
from verifier.answers import sign_answer

SEED = "5195388fd7c6"


class Served:
    def __init__(self, root: Path, url: str, group: str, vkey: Path) -> None:
        self.root = root
        self.url = url
        self.group = group
        self.vkey = vkey


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Served]:
    base = tmp_path_factory.mktemp("answers")
    root = base / "data"
    ledger, _ = init_data_dir(root)
    with ledger:
        ingest(ledger, "manifest", [shared_file("seed-manifest.json")])
        for author, value in ((1, 300), (2, 100)):
            parts = bundle(group=2, author=author, value=value)
            ledger.append([(ingest_event(parts), parts["run"].digest)])
        store = ledger.store
        group = show_run(store.session, store, parts["run"].digest, None, size=store.size)
    assert group.comparisonKey is not None
    vkey = base / "log.vkey"
    vkey.write_text(run_cli("log", "key", "--data", root).stdout)
    with served(root) as url:
        yield Served(root, url, group.comparisonKey, vkey)


def _save(tmp_path: Path, *args: object) -> tuple[Path, dict[str, Any]]:
    done = run_cli(*args, "--json")
    assert done.returncode == 0, done.stderr
    path = tmp_path / "answer.json"
    path.write_text(done.stdout)
    return path, json.loads(done.stdout)


@pytest.fixture(scope="module")
def run_answer(server: Served) -> str:
    """``runs show SEED --server URL --json`` as printed."""
    done = run_cli("runs", "show", SEED, "--server", server.url, "--json")
    assert done.returncode == 0, done.stderr
    return done.stdout


@pytest.fixture
def saved_run(run_answer: str, tmp_path: Path) -> tuple[Path, dict[str, Any]]:
    path = tmp_path / "answer.json"
    path.write_text(run_answer)
    return path, json.loads(run_answer)


def _rewrite(path: Path, saved: dict[str, Any], body: dict[str, Any], signature: str) -> None:
    text = json.dumps(body, separators=(",", ":"))
    saved = {
        **saved,
        "body": text,
        "bodySha256": hashlib.sha256(text.encode()).hexdigest(),
        "signature": signature,
    }
    path.write_text(json.dumps(saved))


def test_runs_show_from_a_server_prints_what_the_data_directory_does(server: Served) -> None:
    remote = run_cli("runs", "show", SEED, "--server", server.url)
    local = run_cli("runs", "show", SEED, "--data", server.root)
    assert remote.returncode == 0, remote.stderr
    assert remote.stdout == local.stdout and f"Run {SEED}" in remote.stdout


def test_a_saved_run_verifies_offline_and_against_the_log(
    server: Served, saved_run: tuple[Path, dict[str, Any]]
) -> None:
    path, saved = saved_run
    assert saved["format"] == "benchproof signed answer v1"
    assert saved["target"] == f"/v1/runs/{SEED}" and saved["server"] == server.url
    assert json.loads(saved["body"])["asOf"] == saved["treeSize"]
    offline = run_cli("verify-answer", path, "--log-key", server.vkey)
    assert offline.returncode == 0, offline.stderr
    assert f"at tree size {saved['treeSize']}" in offline.stdout
    replayed = run_cli("verify-answer", path, "--log-key", server.vkey, "--data", server.root)
    assert replayed.returncode == 0, replayed.stderr
    assert "the local log gives the same answer" in replayed.stdout


def test_an_as_of_answer_is_checked_at_that_size(server: Served, tmp_path: Path) -> None:
    path, saved = _save(tmp_path, "runs", "show", SEED, "--as-of", "4", "--server", server.url)
    assert saved["treeSize"] == 4 and saved["target"] == f"/v1/runs/{SEED}?asOf=4"
    done = run_cli("verify-answer", path, "--log-key", server.vkey, "--data", server.root)
    assert done.returncode == 0, done.stderr


def test_groups_show_from_a_server(server: Served, tmp_path: Path) -> None:
    remote = run_cli("groups", "show", server.group, "--server", server.url)
    local = run_cli("groups", "show", server.group, "--data", server.root)
    assert remote.returncode == 0, remote.stderr
    assert remote.stdout == local.stdout and "#1" in remote.stdout
    path, _ = _save(tmp_path, "groups", "show", server.group, "--server", server.url)
    done = run_cli("verify-answer", path, "--log-key", server.vkey, "--data", server.root)
    assert done.returncode == 0, done.stderr


def test_a_body_changed_after_the_fact_fails_naming_the_field(
    server: Served, saved_run: tuple[Path, dict[str, Any]]
) -> None:
    path, saved = saved_run
    body = json.loads(saved["body"])
    body["evidenceLevel"] = "verified"
    _rewrite(path, saved, body, saved["signature"])
    offline = run_cli("verify-answer", path, "--log-key", server.vkey)
    assert offline.returncode == 1
    assert "signature" in offline.stderr and offline.stderr.count("\n") == 1
    replayed = run_cli("verify-answer", path, "--log-key", server.vkey, "--data", server.root)
    assert replayed.returncode == 1
    assert "evidenceLevel" in replayed.stderr and '"reported"' in replayed.stderr


def test_a_lie_the_log_key_signed_is_caught_by_the_replay(
    server: Served, saved_run: tuple[Path, dict[str, Any]]
) -> None:
    path, saved = saved_run
    body = json.loads(saved["body"])
    body["status"] = "retracted"
    text = json.dumps(body, separators=(",", ":")).encode()
    signer = NoteSigner(saved["origin"], load_private_key(DataDir(server.root).log_key))
    lie = sign_answer(signer, saved["origin"], saved["treeSize"], saved["target"], text)
    _rewrite(path, saved, body, lie)
    assert run_cli("verify-answer", path, "--log-key", server.vkey).returncode == 0
    replayed = run_cli("verify-answer", path, "--log-key", server.vkey, "--data", server.root)
    assert replayed.returncode == 1
    assert "difference" in replayed.stderr and "status" in replayed.stderr


def test_another_key_fails(
    server: Served, saved_run: tuple[Path, dict[str, Any]], tmp_path: Path
) -> None:
    path, saved = saved_run
    other = tmp_path / "other.vkey"
    other.write_text(NoteSigner(saved["origin"], SigningKey.generate()).vkey + "\n")
    done = run_cli("verify-answer", path, "--log-key", other)
    assert done.returncode == 1 and "made by key" in done.stderr


def test_bad_input_exits_2(
    server: Served, saved_run: tuple[Path, dict[str, Any]], tmp_path: Path
) -> None:
    path, _ = saved_run
    junk = tmp_path / "junk.json"
    junk.write_text('{"format": "something else"}')
    not_a_key = tmp_path / "bad.vkey"
    not_a_key.write_text("not a vkey\n")
    small = tmp_path / "empty"
    init_data_dir(small)[0].close()
    for args in (
        (junk, "--log-key", server.vkey),
        (path, "--log-key", not_a_key),
        (tmp_path / "missing.json", "--log-key", server.vkey),
        (path, "--log-key", server.vkey, "--data", small),  # a log smaller than the answer's
        (path, "--log-key", server.vkey, "--data", tmp_path / "nowhere"),
    ):
        done = run_cli("verify-answer", *args)
        assert done.returncode == 2, (args, done.stderr)
        assert done.stderr.count("\n") == 1, done.stderr
    unknown = run_cli("runs", "show", "sha256:" + "0" * 64, "--server", server.url, "--json")
    assert unknown.returncode == 3 and unknown.stdout == ""
