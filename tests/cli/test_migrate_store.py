"""``benchproof migrate-store SRC DST`` between two SQLite stores, and ``verify --json`` and
``replay --json``, which tell whether two stores hold the same log: the copy has SRC's leaves,
root and checkpoints, byte for byte, and the same projections; an interrupted copy goes on; a
DST that holds another log is refused and left as it was; a source that does not verify is
refused before DST is made."""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path
from typing import Any

import pytest

from events.port import SignedCheckpoint
from events.stores import open_reader, open_store
from events.types import RerunRequested
from keys import SigningKey
from service.core.init import init_data_dir
from service.core.ledger import Ledger
from tests.builders import (
    attestation,
    bundle,
    ingest_event,
    key_registration,
    rerun_claim,
    rerun_v2,
)
from tests.cli.conftest import Runner


@pytest.fixture(autouse=True)
def _no_store_from_the_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    """Each command names its stores: a caller's ``$BENCHPROOF_STORE`` would override them."""
    monkeypatch.delenv("BENCHPROOF_STORE", raising=False)


def build_log(data: Path, *, runs: int = 6, seed: int = 0) -> str:
    """A data directory whose log holds runs in three batches, a rerunner's key, a rerun
    (request, claim, samples) and an attestation: one checkpoint per batch. Returns its store
    URL. ``seed`` varies the runs (another log of the same origin)."""
    ledger, _ = init_data_dir(data)
    with ledger:
        parts = [
            bundle(group=g % 3, author=g + seed, value=100 + g, raw_evidence=True)
            for g in range(runs)
        ]
        third = max(runs // 3, 1)
        for batch in (parts[:third], parts[third : 2 * third], parts[2 * third :]):
            if batch:
                ledger.append([(ingest_event(p), p["run"].digest) for p in batch])
        digest = parts[0]["run"].digest
        worker, member = SigningKey.generate(), SigningKey.generate()
        ledger.append(
            [
                (key_registration(worker, "rerunner"), worker.key_id),
                (key_registration(member, "community"), member.key_id),
            ]
        )
        request = ledger.append([(RerunRequested(runDigest=digest, reason="copy"), digest)])[0]
        ledger.append_pending([rerun_claim(digest, request.payloadDigest, worker)])
        samples = [101.0, 99.0, 100.0, 100.5, 99.5]
        ledger.append_pending([rerun_v2(digest, worker, samples, request_id=request.payloadDigest)])
        ledger.append_pending([attestation(parts[-1]["run"].digest, member)])
    return f"sqlite://{(data / 'benchproof.db').resolve()}"


def contents(url: str) -> tuple[list[tuple[int, bytes]], list[SignedCheckpoint], bytes]:
    """Every leaf, every checkpoint and the root of the log at ``url``."""
    log = open_reader(url)
    try:
        return list(log.leaves()), list(log.checkpoints()), log.root()
    finally:
        log.close()


def rows(url: str, table: str) -> list[tuple[Any, ...]]:
    """Every row of a projection table in the SQLite store ``url``, in order."""
    with sqlite3.connect(url.removeprefix("sqlite://")) as conn:
        return sorted(conn.execute(f"SELECT * FROM {table}"))


def state(bp: Runner, data: Path, store: str) -> tuple[dict[str, Any], dict[str, Any]]:
    """``verify --json`` and ``replay --json`` of the log in ``store``, with the keys of
    ``data``; both must pass and print nothing but their JSON."""
    verified = bp("verify", "--json", "--data", data, "--store", store)
    assert verified.returncode == 0, verified.stderr
    replayed = bp("replay", "--json", "--data", data, "--store", store)
    assert replayed.returncode == 0, replayed.stderr
    assert verified.stderr == replayed.stderr == ""
    return json.loads(verified.stdout), json.loads(replayed.stdout)


def migrate(bp: Runner, src: str, dst: str) -> dict[str, Any]:
    """``migrate-store SRC DST --json``, which must pass and print one JSON object only."""
    done = bp("migrate-store", src, dst, "--json")
    assert done.returncode == 0, done.stderr
    assert done.stderr == ""
    assert done.stdout.count("\n") == 1
    answer: dict[str, Any] = json.loads(done.stdout)
    return answer


def test_a_log_is_copied_leaf_for_leaf_with_its_checkpoints_and_views(
    bp: Runner, tmp_path: Path
) -> None:
    data = tmp_path / "data"
    src = build_log(data)
    dst = f"sqlite://{tmp_path}/elsewhere/copy.db"  # its folder is made
    leaves, checkpoints, root = contents(src)
    assert len(checkpoints) >= 5

    answer = migrate(bp, src, dst)
    assert answer == {
        "src": src,
        "dst": dst,
        "origin": "benchproof.local/log",
        "size": len(leaves),
        "root": root.hex(),
        "checkpoints": len(checkpoints),
        "previousSize": 0,
        "appended": len(leaves),
        "rebuilt": True,
    }
    assert contents(dst) == (leaves, checkpoints, root)
    # The views were folded on arrival, not left for the first command to do.
    assert rows(dst, "p_reruns") == rows(src, "p_reruns") != []
    assert rows(dst, "p_state") == rows(src, "p_state")

    verified, replayed = state(bp, data, src)
    assert state(bp, data, dst) == (verified, replayed)
    assert verified == {
        "ok": True,
        "entries": len(leaves),
        "root": root.hex(),
        "checkpoints": len(checkpoints),
        "checkpointSize": len(leaves),
        "findings": [],
    }
    assert replayed["ok"] is True and replayed["differences"] == []
    assert replayed["entries"] == len(leaves)
    assert "p_reruns" in replayed["digests"] and "p_attestations" in replayed["digests"]

    # Back the other way, into a new store: the same log again.
    back = f"sqlite://{tmp_path}/back.db"
    assert migrate(bp, dst, back)["root"] == root.hex()
    assert state(bp, data, back) == (verified, replayed)
    # Once more is nothing to do.
    again = migrate(bp, src, dst)
    assert (again["previousSize"], again["appended"], again["rebuilt"]) == (len(leaves), 0, False)


def test_the_plain_output_is_one_line(bp: Runner, tmp_path: Path) -> None:
    src = build_log(tmp_path / "data", runs=3)
    done = bp("migrate-store", src, f"sqlite://{tmp_path}/copy.db")
    assert done.returncode == 0, done.stderr
    assert done.stdout.count("\n") == 1
    assert "copied entries 0.." in done.stdout and "projections rebuilt" in done.stdout


def test_an_interrupted_copy_goes_on_from_where_it_stopped(bp: Runner, tmp_path: Path) -> None:
    src = build_log(tmp_path / "data")
    leaves, checkpoints, root = contents(src)
    dst = f"sqlite://{tmp_path}/copy.db"
    # A copy that stopped after its third checkpoint: what a killed migrate-store leaves.
    reader = open_reader(src)
    store = open_store(dst, origin=reader.origin, create=True)
    try:
        for checkpoint in checkpoints[:3]:
            start = store.size
            store.append_leaves(
                start, [b for _, b in reader.leaves(start, checkpoint.size)], checkpoint
            )
    finally:
        reader.close()
        store.close()
    held = checkpoints[2].size

    answer = migrate(bp, src, dst)
    assert (answer["previousSize"], answer["appended"]) == (held, len(leaves) - held)
    assert contents(dst) == (leaves, checkpoints, root)
    verified, replayed = state(bp, tmp_path / "data", src)
    assert state(bp, tmp_path / "data", dst) == (verified, replayed)


def test_a_store_that_holds_another_log_is_refused_and_left_as_it_was(
    bp: Runner, tmp_path: Path
) -> None:
    data = tmp_path / "data"
    src = build_log(data)
    other = build_log(tmp_path / "other", seed=100)  # same origin, other keys and entries
    named = tmp_path / "named"
    init_data_dir(named, origin="another.example/log")[0].close()
    # The same log, further on: SRC is a beginning of it, not the other way round.
    early = tmp_path / "early.db"
    with sqlite3.connect(src.removeprefix("sqlite://")) as live, sqlite3.connect(early) as copy:
        live.backup(copy)
    with Ledger.open(data) as ledger:
        parts = bundle(group=5, author=50, value=500)
        ledger.append([(ingest_event(parts), parts["run"].digest)])

    for dst, said in (
        (other, "entry 0 differs"),
        (f"sqlite://{named.resolve()}/benchproof.db", "origin is 'another.example/log'"),
        (src, "it holds"),
    ):
        source = f"sqlite://{early}" if dst == src else src
        before = contents(dst)
        refused = bp("migrate-store", source, dst, "--json")
        assert refused.returncode == 2, (dst, refused.stdout, refused.stderr)
        assert refused.stdout == ""
        assert refused.stderr.count("\n") == 1, refused.stderr
        assert said in refused.stderr
        assert contents(dst) == before
    assert "nothing was written" in bp("migrate-store", src, other).stderr


def test_a_source_that_does_not_verify_is_refused_before_dst_is_made(
    bp: Runner, tmp_path: Path
) -> None:
    src = build_log(tmp_path / "data")
    with sqlite3.connect(src.removeprefix("sqlite://"), isolation_level=None) as conn:
        for (name,) in conn.execute("SELECT name FROM sqlite_master WHERE type = 'trigger'"):
            conn.execute(f'DROP TRIGGER "{name}"')
        leaf = bytearray(conn.execute("SELECT leaf FROM entries WHERE seq = 3").fetchone()[0])
        leaf[-5] ^= 1
        conn.execute("UPDATE entries SET leaf = ? WHERE seq = 3", (bytes(leaf),))

    verified = bp("verify", "--json", "--data", tmp_path / "data")
    assert verified.returncode == 1
    answer = json.loads(verified.stdout)
    assert answer["ok"] is False and answer["findings"][0]["position"] == 3
    assert verified.stderr.startswith("benchproof: verify failed at position 3")

    dst = tmp_path / "copy.db"
    refused = bp("migrate-store", src, f"sqlite://{dst}", "--json")
    assert refused.returncode == 1
    assert json.loads(refused.stdout)["ok"] is False
    assert "does not verify, nothing was copied" in refused.stderr
    assert not dst.exists()


def test_replay_json_names_the_table_that_differs(bp: Runner, tmp_path: Path) -> None:
    data = tmp_path / "data"
    src = build_log(data)
    with sqlite3.connect(src.removeprefix("sqlite://")) as conn:
        conn.execute("UPDATE p_runs SET evidence_level = 'verified'")
    differs = bp("replay", "--json", "--data", data)
    assert differs.returncode == 1
    answer = json.loads(differs.stdout)
    assert answer["ok"] is False
    assert [d["table"] for d in answer["differences"]] == ["p_runs"]
    assert "replay differs in table p_runs" in differs.stderr
    repaired = bp("replay", "--json", "--data", data)
    assert repaired.returncode == 0
    assert json.loads(repaired.stdout)["digests"] == answer["digests"]


@pytest.mark.parametrize(
    ("src", "dst", "said"),
    [
        ("mysql://localhost/x", "sqlite:///tmp/x.db", "not a store URL"),
        ("sqlite://host/x.db", "sqlite:///tmp/x.db", "has no host"),
        ("sqlite:///tmp/", "sqlite:///tmp/x.db", "names no SQLite file"),
        ("SAME", "SAME", "the same store"),
        ("sqlite:///nowhere/no.db", "NEW", "no log at /nowhere/no.db"),
    ],
)
def test_bad_urls_are_exit_2(bp: Runner, tmp_path: Path, src: str, dst: str, said: str) -> None:
    log = build_log(tmp_path / "data", runs=1) if "SAME" in (src, dst) else ""
    new = tmp_path / "new.db"
    src, dst = (log if u == "SAME" else f"sqlite://{new}" if u == "NEW" else u for u in (src, dst))
    done = bp("migrate-store", src, dst, "--json")
    assert done.returncode == 2, done.stderr
    assert said in done.stderr and done.stderr.count("\n") == 1
    assert done.stdout == ""
    assert not new.exists()


def test_a_store_named_for_the_command_is_not_taken_for_a_copy_being_made(tmp_path: Path) -> None:
    """``--store`` (or ``$BENCHPROOF_STORE``) names the directory's log, not the log of a copy a
    command makes: a backup under it writes its own file, not the store over itself."""
    from tests.servers import run_cli

    data = tmp_path / "data"
    assert run_cli("init", "--data", data).returncode == 0
    env = {"BENCHPROOF_STORE": f"sqlite://{(data / 'benchproof.db').resolve()}"}
    done = run_cli("backup", "--data", data, tmp_path / "out", env=env)
    assert done.returncode == 0, done.stderr
    assert (tmp_path / "out" / "benchproof.db").exists()
    assert run_cli("verify", "--data", tmp_path / "out").returncode == 0
