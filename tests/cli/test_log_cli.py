"""The public output formats of ``benchproof log`` and ``init``/``verify``, checked with the
independent verifier (tests/independent.py)."""

from __future__ import annotations

import base64
import json
from pathlib import Path

import pytest

from tests.cli.conftest import Runner
from tests.corpora import corpus, shared_file
from tests.independent import h, mth, open_checkpoint, root_from_path, roots_from_subproof


@pytest.fixture(scope="module")
def data(tmp_path_factory: pytest.TempPathFactory, bp: Runner) -> Path:
    d = tmp_path_factory.mktemp("logcli") / "data"
    assert bp("init", "--data", d, "--origin", "benchproof.test/log").returncode == 0
    return d


def test_init_is_idempotent_and_keys_are_private(bp: Runner, data: Path) -> None:
    again = bp("--data", data, "init")
    assert again.returncode == 0
    assert "already initialised" in again.stdout
    for name in ("index.key", "log.key"):
        assert (data / "keys" / name).stat().st_mode & 0o777 == 0o600


def test_world_readable_private_key_is_refused(bp: Runner, tmp_path: Path) -> None:
    d = tmp_path / "d"
    assert bp("init", "--data", d).returncode == 0
    (d / "keys" / "index.key").chmod(0o644)
    out = bp("log", "key", "--data", d)
    assert out.returncode == 2
    assert "readable" in out.stderr
    assert out.stderr.count("\n") == 1


def test_full_round_of_public_formats(bp: Runner, data: Path) -> None:
    vkey = bp("log", "key", "--data", data).stdout.strip()
    name, keyhash, _ = vkey.split("+", 2)
    assert name == "benchproof.test/log"
    assert len(keyhash) == 8
    first = bp("log", "checkpoint", "--data", data)
    origin, n1, r1 = open_checkpoint(first.stdout.encode(), vkey)
    assert origin == "benchproof.test/log"
    assert (
        bp("ingest", "manifest", shared_file("seed-manifest.json"), "--data", data).returncode == 0
    )
    examples = sorted(corpus("kernelindex-manifests", "examples").glob("*.yaml"))
    assert bp("--data", data, "ingest", "manifest", *examples).returncode == 0
    _, n2, r2 = open_checkpoint(bp("log", "checkpoint", "--data", data).stdout.encode(), vkey)
    assert n2 > n1
    lines = [json.loads(x) for x in bp("log", "entries", "--data", data).stdout.splitlines()]
    assert [x["index"] for x in lines] == list(range(n2))
    leaves = [base64.b64decode(x["leaf"]) for x in lines]
    assert mth(leaves) == r2
    assert mth(leaves[:n1]) == r1
    partial = bp("log", "entries", "--start", "2", "--end", "4", "--data", data).stdout.splitlines()
    assert [json.loads(x)["index"] for x in partial] == [2, 3]
    for index in range(n2):
        proof = json.loads(bp("log", "proof", "inclusion", index, n2, "--data", data).stdout)
        assert (proof["index"], proof["treeSize"]) == (index, n2)
        hashes = [base64.b64decode(x) for x in proof["hashes"]]
        assert root_from_path(index, n2, h(b"\x00" + leaves[index]), hashes) == r2
    default = json.loads(bp("log", "proof", "inclusion", 0, "--data", data).stdout)
    assert default["treeSize"] == n2
    con = json.loads(bp("log", "proof", "consistency", n1, n2, "--data", data).stdout)
    assert (con["oldSize"], con["newSize"]) == (n1, n2)
    hashes = [base64.b64decode(x) for x in con["hashes"]]
    assert roots_from_subproof(n1, n2, True, hashes, r1) == (r1, r2)
    assert bp("verify", "--data", data).returncode == 0


@pytest.mark.parametrize(
    "args",
    [
        ("log", "proof", "inclusion", "99", "2"),
        ("log", "proof", "consistency", "0", "2"),
        ("log", "proof", "consistency", "3", "2"),
    ],
)
def test_impossible_proofs_exit_2(bp: Runner, data: Path, args: tuple[str, ...]) -> None:
    out = bp(*args, "--data", data)
    assert out.returncode == 2, out.stderr
    assert out.stderr.count("\n") == 1


def test_missing_data_dir_exits_3(bp: Runner, tmp_path: Path) -> None:
    for args in (("verify",), ("log", "key"), ("runs", "list")):
        out = bp(*args, "--data", tmp_path / "nowhere")
        assert out.returncode == 3, args
        assert "benchproof init" in out.stderr


def test_seed_ingests_with_workload_and_implementation_unresolved(
    bp: Runner, tmp_path: Path
) -> None:
    d = tmp_path / "d"
    bp("init", "--data", d)
    out = bp("ingest", "manifest", shared_file("seed-manifest.json"), "--data", d)
    assert out.returncode == 0
    assert "1 runs with unresolved references" in out.stdout
    show = json.loads(bp("runs", "show", "sol-execbench:165", "--json", "--data", d).stdout)
    assert show["unresolved"] == ["workload", "implementation", "operation"]
    # The keys are there while they have no value (null), never left out.
    assert show["comparisonKey"] is None
    assert show["rank"] is None
    assert {"runDigest", "evidenceLevel", "aliases"} <= set(show)
    again = bp("ingest", "manifest", shared_file("seed-manifest.json"), "--data", d)
    assert "nothing new" in again.stdout


def test_invalid_examples_are_refused_whole(bp: Runner, tmp_path: Path) -> None:
    d = tmp_path / "d"
    bp("init", "--data", d)
    examples = corpus("kernelindex-manifests", "examples")
    before = bp("log", "checkpoint", "--data", d).stdout
    for bad in sorted((examples / "invalid").glob("*.yaml")):
        out = bp("ingest", "manifest", examples / "benchmark-protocol.yaml", bad, "--data", d)
        assert out.returncode == 2, bad.name
        assert bad.name in out.stderr
    assert bp("log", "checkpoint", "--data", d).stdout == before


def test_groups_history_lines_carry_every_field(bp: Runner, tmp_path: Path) -> None:
    from service.core.init import init_data_dir
    from tests.builders import bundle, ingest_event

    d = tmp_path / "d"
    ledger, _ = init_data_dir(d)
    with ledger:
        for n, value in enumerate((300, 100)):
            parts = bundle(group=1, author=n, value=value, observed=f"2026-01-0{n + 1}T00:00:00Z")
            ledger.append([(ingest_event(parts), parts["run"].digest)])
    out = bp("groups", "history", "--json", "--data", d)
    assert out.returncode == 0, out.stderr
    lines = [json.loads(line) for line in out.stdout.splitlines()]
    assert len(lines) == 2
    fields = {"comparisonKey", "runDigest", "previousRunDigest", "at", "cause", "policyVersion"}
    assert all(fields <= set(line) for line in lines)
    assert lines[0]["previousRunDigest"] is None
    assert lines[1]["previousRunDigest"] == lines[0]["runDigest"]


def test_manifest_import_reports_every_invalid_document_and_can_skip_them(
    bp: Runner, tmp_path: Path
) -> None:
    d = tmp_path / "d"
    bp("init", "--data", d)
    examples = corpus("kernelindex-manifests", "examples")
    invalid = sorted((examples / "invalid").glob("*.yaml"))[:2]
    good = examples / "benchmark-protocol.yaml"
    before = bp("log", "checkpoint", "--data", d).stdout
    refused = bp("ingest", "manifest", good, *invalid, "--data", d)
    assert refused.returncode == 2
    assert all(bad.name in refused.stderr for bad in invalid)
    assert bp("log", "checkpoint", "--data", d).stdout == before
    rejects = tmp_path / "rejects.jsonl"
    args = ("--skip-invalid", "--rejected", rejects, "--data", d)
    skipped = bp("ingest", "manifest", good, *invalid, *args)
    assert skipped.returncode == 0, skipped.stderr
    assert "1 manifests" in skipped.stdout
    assert [json.loads(line)["file"] for line in rejects.read_text().splitlines()] == [
        bad.name for bad in invalid
    ]


def test_a_bundle_bringing_what_a_held_run_lacks_records_it(bp: Runner, tmp_path: Path) -> None:
    from tests.builders import bundle

    parts = bundle(group=2, author=1, value=500)
    whole = {role: c.manifest for role, c in parts.items()}
    partial = {role: m for role, m in whole.items() if role != "workload"}
    (tmp_path / "partial.json").write_text(json.dumps(partial))
    (tmp_path / "whole.json").write_text(json.dumps(whole))
    d = tmp_path / "d"
    bp("init", "--data", d)
    first = bp("ingest", "manifest", tmp_path / "partial.json", "--data", d)
    assert "1 runs with unresolved references" in first.stdout
    ref = parts["run"].digest
    assert (
        json.loads(bp("runs", "show", ref, "--json", "--data", d).stdout)["comparisonKey"] is None
    )
    # The run is held; the workload that comes with it this time is not: it is recorded.
    second = bp("ingest", "manifest", tmp_path / "whole.json", "--data", d)
    assert second.returncode == 0, second.stderr
    assert "1 manifests" in second.stdout and "0 runs" in second.stdout
    shown = json.loads(bp("runs", "show", ref, "--json", "--data", d).stdout)
    assert shown["comparisonKey"] is not None and shown["unresolved"] == []
    assert bp("ingest", "manifest", tmp_path / "whole.json", "--data", d).stdout.startswith(
        "nothing new"
    )
    assert bp("verify", "--data", d).returncode == 0


def test_init_never_replaces_the_keys_of_a_log(bp: Runner, tmp_path: Path) -> None:
    d = tmp_path / "d"
    assert bp("init", "--data", d).returncode == 0
    log_key = d / "keys" / "log.key"
    saved = log_key.read_bytes()
    log_key.unlink()
    missing = bp("init", "--data", d)
    assert missing.returncode == 2 and "is missing" in missing.stderr
    assert not log_key.exists()
    other = tmp_path / "other"
    bp("init", "--data", other)
    log_key.write_bytes((other / "keys" / "log.key").read_bytes())
    log_key.chmod(0o600)
    wrong = bp("ingest", "manifest", shared_file("seed-manifest.json"), "--data", d)
    assert wrong.returncode == 2 and "not this log's current log key" in wrong.stderr
    log_key.write_bytes(saved)
    assert bp("ingest", "manifest", shared_file("seed-manifest.json"), "--data", d).returncode == 0
    assert bp("verify", "--data", d).returncode == 0
    bad = bp("init", "--origin", "bad origin", "--data", tmp_path / "bad")
    assert bad.returncode == 2 and "invalid origin" in bad.stderr
    assert not (tmp_path / "bad").exists()


def test_log_positions_out_of_range_exit_2(bp: Runner, tmp_path: Path) -> None:
    d = tmp_path / "d"
    bp("init", "--data", d)
    for args in (
        ("log", "entries", "--start", "99999999999999999999999"),
        ("log", "entries", "--start", "-1"),
        ("log", "entries", "--start", "2", "--end", "1"),
        ("log", "entries", "--end", "x"),
        ("log", "proof", "inclusion", "99999999999999999999"),
        ("log", "proof", "consistency", "1", "-3"),
    ):
        out = bp(*args, "--data", d)
        assert out.returncode == 2, (args, out.stderr)
        assert "Traceback" not in out.stderr and len(out.stderr.strip().splitlines()) == 1, args
