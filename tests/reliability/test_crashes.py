"""Issue 18, Deliver 2 (crashes): SIGKILL at random moments, then nothing acknowledged is lost.

- ``benchproof serve`` under mixed write traffic (``traffic.Traffic``: every write path, from
  key registrations to rerun claims and results, grants, revocations and report resolutions),
  killed (its whole process group) at a random moment, restarted, again and again: after each
  restart the latest signed checkpoint covers every entry, ``benchproof verify`` and ``benchproof
  replay`` pass, every write that was acknowledged is in the log exactly once (at the index its
  answer named), those whose answer was lost are there at most once, every ingest batch is
  whole, and nothing else was appended.
- ``benchproof ingest`` of the first 1,200 rows of Liger-Kernel's main benchmark CSV (1,200 runs
  in one transaction, whose commit writes about 14 MB of WAL in some tens of milliseconds),
  killed while it plans or while it commits (once its WAL has grown by a random amount): the log holds none of the batch or all of it, verifies, and
  the same import run again completes (and, run once more, appends nothing). At least a quarter
  of the kills must land mid-commit (WAL written, batch absent).
- ``benchproof replay`` of that log, killed mid-way (at a random moment, or while it rebuilds
  into its scratch folder): the data directory still verifies and serves, and a new replay
  passes with the same projection digests as before (and removes what the killed one left
  behind).
- ``benchproof rerun-worker``, killed before, during or after its harness: the lease runs out,
  another rerunner's worker is refused until then and takes the request afterwards, exactly one
  result is recorded per request, and the log verifies.

FULL runs 20 rounds of each; FAST one.

(``tests/integration/test_crash.py`` kills an in-process appender; these kill the real
commands.)"""

from __future__ import annotations

import base64
import contextlib
import json
import os
import random
import re
import shutil
import signal
import sqlite3
import subprocess
import sys
import time
from collections import Counter
from pathlib import Path

import httpx
import pytest

from keys import generate_key_file
from service.harness.environment import detect
from tests.corpora import corpus
from tests.reliability.conftest import prepare
from tests.reliability.report import (
    FULL,
    record_note,
    record_rounds,
    record_server_errors,
    record_writes,
    scale,
)
from tests.reliability.traffic import (
    WRITE_KINDS,
    Server,
    Traffic,
    audit,
    checkpoint_covers,
    cpu_bundle,
    grant_rerunner,
    log_size,
    register_key,
)
from tests.servers import SCRIPT, run_cli

SERVER_ROUNDS = scale(1, 20)
INGEST_ROUNDS = scale(1, 20)
REPLAY_ROUNDS = scale(1, 20)
WORKER_ROUNDS = scale(1, 20)
_DIGEST_LINE = re.compile(r"^\s+(p_\w+)\s+([0-9a-f]{64})$", re.M)


def _cli_ok(*args: object) -> str:
    done = run_cli(*args)
    assert done.returncode == 0, f"benchproof {args[0]}: {done.stdout}{done.stderr}"
    return done.stdout


def _digests(replay_output: str) -> dict[str, str]:
    found = dict(_DIGEST_LINE.findall(replay_output))
    assert found, replay_output
    return found


def _healthy(url: str, db: Path) -> list[str]:
    """What is wrong with a freshly started server over ``db``: its checkpoint and tree size
    must be the log's, and the latest checkpoint must cover every entry."""
    problems = []
    size = log_size(db)
    health = httpx.get(f"{url}/healthz", timeout=30).json()
    note = httpx.get(f"{url}/v1/log/checkpoint", timeout=30).text.splitlines()
    if health["treeSize"] != size or int(note[1]) != size:
        problems.append(f"served size {health['treeSize']}, checkpoint {note[1]}, log {size}")
    covered = checkpoint_covers(db)
    if covered is not None:
        problems.append(covered)
    return problems


def test_sigkill_of_the_server_under_write_traffic(tmp_path: Path) -> None:
    data = tmp_path / "data"
    db = data / "benchproof.db"
    token = prepare(data)
    server = Server(data, log=tmp_path / "serve.log")
    traffic = Traffic(token, seed=1802, timeout=10, write_share=0.8)
    rng = random.Random(1802)
    failed: list[str] = []
    survived = 0
    try:
        url = server.start()
        since = traffic.setup(url, keys=scale(4, 8), rerunners=2)
        for round_ in range(SERVER_ROUNDS):
            kill_after = rng.uniform(0.05, scale(1.0, 1.5))
            traffic.run(
                url, clients=8, seconds=kill_after + 5, kill=server.kill, kill_after=kill_after
            )
            server.reap()
            covered = checkpoint_covers(db)  # as the kill left it, before any restart
            url = server.start()
            problems = ([covered] if covered else []) + _healthy(url, db)
            for command in ("verify", "replay"):
                done = run_cli(command, "--data", data)
                if done.returncode != 0:
                    problems.append(f"{command}: {done.stdout[-500:]}{done.stderr[-500:]}")
            found = audit(db, traffic.writes, since)
            problems += found.problems
            if problems:
                failed.append(f"round {round_} (killed after {kill_after:.2f} s): {problems[:5]}")
            else:
                survived += 1
    finally:
        server.stop()
    found = audit(db, traffic.writes, since)
    outcomes = {o: sum(1 for w in traffic.writes if w.outcome == o) for o in ("acked", "unknown")}
    record_rounds(
        "crashes: SIGKILL of serve under write traffic", rounds=SERVER_ROUNDS, survived=survived
    )
    record_writes(
        "crashes: serve killed under traffic",
        attempted=found.attempted,
        acknowledged=found.acknowledged,
        found=found.found,
    )
    record_server_errors("crashes: serve killed under traffic", traffic.server_errors())
    by_kind = traffic.acknowledged()
    record_note(
        "crashes",
        f"serve killed {SERVER_ROUNDS} times: {outcomes['acked']} writes acknowledged ("
        + ", ".join(f"{n} {k}" for k, n in sorted(by_kind.items()))
        + f"), {outcomes['unknown']} lost their answer to the kill ({found.unknown_landed} of "
        f"them had landed, once each); the log grew to {log_size(db)} entries",
    )
    assert not failed, failed
    assert traffic.server_errors() == 0, traffic.latency_rows()
    assert found.found == found.acknowledged > 0
    assert not found.problems, found.problems[:10]
    if FULL:  # FAST's one short round need not reach every path
        missing = set(WRITE_KINDS) - set(by_kind)
        assert not missing, f"no acknowledged {sorted(missing)} in the kill rounds: {by_kind}"


def _children(pid: int) -> list[tuple[int, list[bytes]]]:
    """The live child processes of ``pid``: each pid and its command line."""
    found = []
    for proc in Path("/proc").iterdir():
        try:
            stat = (proc / "stat").read_text().rsplit(")", 1)[1].split()
            args = (proc / "cmdline").read_bytes().split(b"\0")
        except (OSError, IndexError):
            continue
        if int(stat[1]) == pid and stat[0] != "Z":
            found.append((int(proc.name), args))
    return found


def _processes(server: Server) -> tuple[list[int], list[int]]:
    """The writer and the HTTP workers of ``serve --workers N`` (not multiprocessing's own
    resource tracker)."""
    assert server.proc is not None
    children = _children(server.proc.pid)
    writers = [pid for pid, args in children if b"service.commands.writer" in args]
    workers = [pid for pid, args in children if any(b"multiprocessing.spawn" in a for a in args)]
    return writers, workers


def _one_process(server: Server, rng: random.Random, killed: list[str]) -> None:
    """SIGKILL one process of ``serve --workers 2``: the writer or one HTTP worker, at random."""
    writers, workers = _processes(server)
    assert writers and workers, (writers, workers)
    kind = rng.choice(["writer", "worker"])
    os.kill(rng.choice(writers if kind == "writer" else workers), signal.SIGKILL)
    killed.append(kind)


def _answers(url: str) -> bool:
    try:
        return httpx.get(f"{url}/healthz", timeout=10).status_code == 200
    except httpx.HTTPError:
        return False


def _recovered(server: Server, url: str) -> None:
    """Wait until the server's writer and workers are all back (a write goes through)."""
    assert server.proc is not None
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        writers, workers = _processes(server)
        if (len(writers), len(workers)) == (1, 2) and _answers(url):
            return
        time.sleep(0.1)
    raise AssertionError(f"serve did not recover: {server._tail()}")


def test_sigkill_of_one_process_of_serve_workers(tmp_path: Path) -> None:
    """``serve --workers 2`` (the new write path: two HTTP workers, one writer process) under
    write traffic; one of its processes, the writer or an HTTP worker, SIGKILLed at a random
    moment, round after round, without restarting the server: it starts the process again, and
    every acknowledged write is in the log exactly once."""
    data = tmp_path / "data"
    db = data / "benchproof.db"
    token = prepare(data)
    server = Server(data, "--workers", 2, log=tmp_path / "serve.log")
    traffic = Traffic(token, seed=2701, timeout=10, write_share=0.8)
    rng = random.Random(2701)
    killed: list[str] = []
    try:
        url = server.start()
        since = traffic.setup(url, keys=scale(4, 8), rerunners=2)
        for _ in range(SERVER_ROUNDS):
            kill_after = rng.uniform(0.05, scale(1.0, 1.5))
            traffic.run(
                url,
                clients=8,
                seconds=kill_after + 5,
                kill=lambda: _one_process(server, rng, killed),
                kill_after=kill_after,
            )
            _recovered(server, url)
        traffic.run(url, clients=4, seconds=1.0)  # and it serves writes again
    finally:
        server.stop()
    for command in ("verify", "replay"):
        done = run_cli(command, "--data", data)
        assert done.returncode == 0, done.stdout[-500:] + done.stderr[-500:]
    found = audit(db, traffic.writes, since)
    record_rounds(
        "crashes: SIGKILL of one process of serve --workers 2 (" + ", ".join(killed) + ")",
        rounds=SERVER_ROUNDS,
        survived=SERVER_ROUNDS if not found.problems else 0,
    )
    record_writes(
        "crashes: one process of serve --workers 2 killed",
        attempted=found.attempted,
        acknowledged=found.acknowledged,
        found=found.found,
    )
    # A write in flight when its worker or the writer died is answered 503 (nothing recorded
    # that was acknowledged) or not at all; no other 5xx.
    others = sum(
        n for c in traffic.statuses.values() for s, n in c.items() if s >= 500 and s != 503
    )
    assert others == 0, traffic.latency_rows()
    assert found.found == found.acknowledged > 0
    assert not found.problems, found.problems[:10]


def _killed_ingest(
    data: Path, source: str, path: Path, rng: random.Random, *, mid_write: bool
) -> tuple[str, int]:
    """Start ``benchproof ingest``, SIGKILL it (while it writes: once its WAL has grown by a
    random amount; else at a random moment); say when, and by how many bytes the WAL had grown
    (-1: it finished before the kill)."""
    wal = data / "benchproof.db-wal"
    start_wal = wal.stat().st_size if wal.exists() else 0
    proc = subprocess.Popen(
        [str(SCRIPT), "ingest", source, str(path), "--data", str(data)],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        start_new_session=True,
    )
    started = time.monotonic()
    # The commit writes about 14 MB of WAL in some tens of milliseconds: a threshold in that
    # range, polled every 2 ms, kills it mid-commit most of the time.
    threshold = rng.uniform(64 * 1024, 12 * 1024 * 1024)
    moment = rng.uniform(0.1, 1.0)
    while proc.poll() is None:
        elapsed = time.monotonic() - started
        grown = (wal.stat().st_size if wal.exists() else 0) - start_wal
        if (mid_write and grown > threshold) or (not mid_write and elapsed > moment):
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()
            return f"killed after {elapsed:.2f} s, WAL +{grown / 1e6:.1f} MB", max(grown, 0)
        time.sleep(0.002)
    return f"finished before the kill (exit {proc.returncode})", -1


@pytest.fixture(scope="module")
def ingested(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A data directory the ingest test leaves behind: the corpus ingested in full."""
    return tmp_path_factory.mktemp("ingest-kill")


ROWS = 1200


def _corpus(folder: Path) -> tuple[str, Path]:
    """The first ``ROWS`` rows of Liger-Kernel's main benchmark CSV (one run each), written into
    ``folder``: a batch ingested in under a second whose commit still takes tens of milliseconds
    (the whole KernelIndex catalog, 8,718 entries, took ten times as long per round and found
    nothing more)."""
    path = folder / "liger-head.csv"
    if not path.exists():
        full = corpus("liger-kernel-bench", "all_benchmark_data.csv")
        with full.open(encoding="utf-8") as src:
            head = [line for _, line in zip(range(ROWS + 1), src, strict=False)]
        path.write_text("".join(head), encoding="utf-8")
    return "liger", path


def test_sigkill_of_ingest_leaves_whole_batches(ingested: Path) -> None:
    source, path = _corpus(ingested)
    rng = random.Random(1803)
    failed: list[str] = []
    survived = 0
    full_size: int | None = None
    kills: Counter[str] = Counter()
    template = ingested / "template"
    _cli_ok("init", "--data", template)
    before = log_size(template / "benchproof.db")
    data = template
    for round_ in range(INGEST_ROUNDS):
        data = ingested / f"data-{round_}"
        shutil.copytree(template, data)  # a fresh, initialised log (no server has it open)
        db = data / "benchproof.db"
        when, grown = _killed_ingest(data, source, path, rng, mid_write=round_ % 4 != 3)
        problems = []
        after_kill = log_size(db)
        if grown < 0:
            kills["finished"] += 1
        elif after_kill != before:
            kills["after the commit"] += 1
        elif grown > 0:
            kills["mid-commit"] += 1
        else:
            kills["before writing"] += 1
        done = run_cli("verify", "--data", data)
        if done.returncode != 0:
            problems.append(f"verify after the kill: {done.stdout[-400:]}")
        covered = checkpoint_covers(db)
        if covered is not None:
            problems.append(covered)
        again = run_cli("ingest", source, path, "--data", data)
        if again.returncode != 0:
            problems.append(f"the ingest again: {again.stderr[-400:]}")
        complete = log_size(db)
        full_size = complete if full_size is None else full_size
        if complete != full_size:
            problems.append(f"the completed import holds {complete} entries, not {full_size}")
        if after_kill not in (before, complete):
            problems.append(f"half a batch: {after_kill} entries after the kill ({when})")
        if round_ % 5 == 0:  # the same import once more appends nothing
            third = run_cli("ingest", source, path, "--data", data)
            if third.returncode or "nothing new" not in third.stdout or log_size(db) != complete:
                problems.append(f"a third import appended: {third.stdout[-300:]}")
        if problems:
            failed.append(f"round {round_} ({when}): {problems}")
        else:
            survived += 1
        if round_ < INGEST_ROUNDS - 1:
            shutil.rmtree(data)
    os.replace(data, ingested / "data")
    record_rounds(f"crashes: SIGKILL of ingest {source}", rounds=INGEST_ROUNDS, survived=survived)
    record_note(
        "crashes",
        f"ingest {source} ({ROWS} runs in one batch) killed {INGEST_ROUNDS} times: "
        + ", ".join(f"{n} {k}" for k, n in sorted(kills.items())),
    )
    assert not failed, failed
    if FULL:  # the kills must test the commit itself, not only the planning before it
        assert kills["mid-commit"] * 4 >= INGEST_ROUNDS, dict(kills)
    started = time.monotonic()
    replay = run_cli("replay", "--data", ingested / "data")
    assert replay.returncode == 0, replay.stdout[-1000:]
    _REFERENCE.append((_digests(replay.stdout), time.monotonic() - started))


_REFERENCE: list[tuple[dict[str, str], float]] = []
"""The projection digests of the ingest test's data directory as its last replay gave them,
and the seconds that replay took."""


def test_sigkill_of_replay_changes_nothing(ingested: Path) -> None:
    data = ingested / "data"
    if not data.exists():  # the ingest test did not run (-k): a small log of the corpus
        source, path = _corpus(ingested)
        _cli_ok("init", "--data", data)
        _cli_ok("ingest", source, path, "--data", data)
    if not _REFERENCE:
        started = time.monotonic()
        _REFERENCE.append((_digests(_cli_ok("replay", "--data", data)), time.monotonic() - started))
    reference, took = _REFERENCE[-1]
    rng = random.Random(1804)
    failed: list[str] = []
    survived = 0
    mid_rebuild = 0
    for round_ in range(REPLAY_ROUNDS):
        proc = subprocess.Popen(
            [str(SCRIPT), "replay", "--data", str(data)],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
            start_new_session=True,
        )
        started = time.monotonic()
        if round_ % 2:  # at a random moment of the whole command (its start-up too)
            moment = rng.uniform(0.2, 0.95) * took
            time.sleep(moment)
        else:  # while it rebuilds: once its scratch folder exists, a little later
            while proc.poll() is None and not any(data.glob(".scratch-*")):
                time.sleep(0.002)
            time.sleep(rng.uniform(0.0, 0.3) * took)
            moment = time.monotonic() - started
        finished = proc.poll() is not None
        if not finished:
            os.killpg(proc.pid, signal.SIGKILL)  # the replay and any rebuild workers it forked
        proc.wait()
        left = sorted(p.name for p in data.glob(".scratch-*"))
        mid_rebuild += bool(left)
        problems = []
        done = run_cli("verify", "--data", data)
        if done.returncode != 0:
            problems.append(f"verify: {done.stdout[-400:]}")
        if round_ % 4 == 0:  # and it serves (a server start costs a second: every 4th round)
            server = Server(data, log=ingested / "serve.log")
            try:
                url = server.start()
                problems += _healthy(url, data / "benchproof.db")
                runs = httpx.get(f"{url}/v1/runs?limit=5", timeout=30)
                if runs.status_code != 200 or not runs.json()["items"]:
                    problems.append(f"GET /v1/runs: {runs.status_code}")
            finally:
                server.stop()
        replay = run_cli("replay", "--data", data)
        if replay.returncode != 0:
            problems.append(f"replay: {replay.stdout[-400:]}")
        elif _digests(replay.stdout) != reference:
            problems.append("the projection digests changed")
        if list(data.glob(".scratch-*")):
            problems.append(f"scratch folders stay: {list(data.glob('.scratch-*'))}")
        what = f"round {round_}: {'finished' if finished else f'killed at {moment:.2f} s'}"
        what += f", left {left}" if left else ""
        if problems:
            failed.append(f"{what}: {problems}")
        else:
            survived += 1
    record_rounds("crashes: SIGKILL of replay", rounds=REPLAY_ROUNDS, survived=survived)
    record_note(
        "crashes",
        f"replay ({took:.1f} s) killed {REPLAY_ROUNDS} times, {mid_rebuild} of them while it "
        "rebuilt into its scratch folder",
    )
    assert not failed, failed
    if FULL:
        assert mid_rebuild * 4 >= REPLAY_ROUNDS, f"only {mid_rebuild} kills mid-rebuild"


_HARNESS = """
import json, os, sys, time
from service.harness.environment import detect
bundle = json.load(sys.stdin)
with open(sys.argv[2], "w") as out:
    out.write(str(os.getpid()))
time.sleep(float(sys.argv[1]))
reported = bundle["manifests"]["run"]["spec"]["timing"]["latencyNs"]["median"]
print(json.dumps({
    "contract": "benchproof-harness/v1",
    "samplesNs": [reported] * max(20, bundle["minSamples"]),
    "correctness": {"passed": True, "detail": "reliability harness"},
    "environment": detect(),
    "harness": {"name": "reliability", "version": "1"},
}))
"""


def _worker(url: str, key: Path, harness: str, *, lease: float) -> subprocess.Popen[bytes]:
    options = {
        "--server": url,
        "--key": key,
        "--lease": lease,
        "--poll": 0.2,
        "--time-limit": 60,
        "--harness": harness,
    }
    command = [SCRIPT, "rerun-worker", "--once", *(x for kv in options.items() for x in kv)]
    return subprocess.Popen(
        [str(c) for c in command],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        start_new_session=True,
    )


def _state(url: str, request: str) -> str:
    for state in ("pending", "claimed", "completed"):
        items = httpx.get(f"{url}/v1/reruns?state={state}&limit=1000", timeout=30).json()["items"]
        if any(item["requestId"] == request for item in items):
            return state
    return "unknown"


def _results(db: Path, request: str) -> int:
    conn = sqlite3.connect(f"file:{db}?mode=ro", uri=True)
    try:
        rows = conn.execute(
            "SELECT leaf FROM entries WHERE type LIKE 'rerun.completed%'"
        ).fetchall()
    finally:
        conn.close()
    return sum(
        1
        for (leaf,) in rows
        if request.encode() in base64.b64decode(json.loads(leaf)["envelope"]["payload"])
    )


def test_sigkill_of_the_rerun_worker(tmp_path: Path) -> None:
    data = tmp_path / "data"
    token = prepare(data)
    bundle = cpu_bundle("reliability-cpu-1", detect(), 250_000)
    bundle_file = tmp_path / "cpu.json"
    bundle_file.write_text(json.dumps(bundle))
    _cli_ok("ingest", "manifest", bundle_file, "--data", data)
    script = tmp_path / "harness.py"
    script.write_text(_HARNESS)
    # Seconds: what a killed worker's claim holds the request for; long enough that the second
    # worker, started on a loaded machine (two xdist workers), asks while the claim holds.
    lease = 5.0
    seen: Counter[str] = Counter()
    rng = random.Random(1805)
    server = Server(data, log=tmp_path / "serve.log")
    failed: list[str] = []
    survived = 0
    try:
        url = server.start()
        run = httpx.get(f"{url}/v1/runs/reliability:reliability-cpu-1", timeout=30).json()
        keys = []
        for name in ("killed-worker", "second-worker"):
            path = tmp_path / f"{name}.key"
            key = generate_key_file(path)
            register_key(url, key, name)
            grant_rerunner(url, token, key.key_id)
            keys.append(path)
        for round_ in range(WORKER_ROUNDS):
            asked = httpx.post(
                f"{url}/v1/runs/{run['runDigest']}/reruns",
                json={"reason": f"reliability round {round_}"},
                headers={"authorization": f"Bearer {token}"},
                timeout=30,
            )
            assert asked.status_code == 201, asked.text
            request = asked.json()["id"]
            pidfile = tmp_path / f"harness-{round_}.pid"
            phase = ("in the harness", "before the harness", "after the harness")[round_ % 3]
            sleep = 0.1 if phase == "after the harness" else 20.0
            harness = f"{sys.executable} {script} {sleep} {pidfile}"
            worker = _worker(url, keys[0], harness, lease=lease)
            if phase == "before the harness":
                time.sleep(rng.uniform(0.0, 0.5))
            else:
                deadline = time.monotonic() + 30
                while not pidfile.exists() and time.monotonic() < deadline:
                    time.sleep(0.01)
                time.sleep(rng.uniform(0.0, 0.3) if phase == "in the harness" else 0.3)
            os.killpg(worker.pid, signal.SIGKILL)
            worker.communicate()
            if pidfile.exists():  # the harness runs in its own group, as the worker started it
                pid = pidfile.read_text()
                if pid:
                    with contextlib.suppress(ProcessLookupError):
                        os.kill(int(pid), signal.SIGKILL)
            problems = []
            state = _state(url, request)
            size = log_size(data / "benchproof.db")
            if state == "claimed":  # the killed worker's lease holds it: another is refused
                early = _worker(url, keys[1], f"{sys.executable} {script} 0 {pidfile}", lease=30)
                _, err = early.communicate(timeout=120)  # it sees nothing pending
                if log_size(data / "benchproof.db") != size or _state(url, request) != "claimed":
                    problems.append(f"a second worker took a leased request: {err[-300:]!r}")
                deadline = time.monotonic() + lease + 10
                while _state(url, request) == "claimed" and time.monotonic() < deadline:
                    time.sleep(0.2)
            state_after = _state(url, request)
            if state_after == "pending":
                finish = _worker(url, keys[1], f"{sys.executable} {script} 0 {pidfile}", lease=30)
                _, err = finish.communicate(timeout=120)
                if finish.returncode != 0:
                    problems.append(f"the second worker failed: {err[-300:]!r}")
            elif state_after != "completed":
                problems.append(f"the request is {state_after} after the lease ran out")
            if round_ % 4 == 3:  # a worker started afterwards finds nothing left to do
                again = _worker(url, keys[1], f"{sys.executable} {script} 0 {pidfile}", lease=30)
                again.communicate(timeout=120)
            results = _results(data / "benchproof.db", request)
            if _state(url, request) != "completed" or results != 1:
                problems.append(f"{results} results recorded for the request")
            problems += _healthy(url, data / "benchproof.db")
            verify = run_cli("verify", "--data", data)
            if verify.returncode != 0:
                problems.append(f"verify: {verify.stdout[-400:]}")
            seen[f"{phase} ({state})"] += 1
            what = f"round {round_}: killed {phase}, the request was {state}"
            if problems:
                failed.append(f"{what}: {problems}")
            else:
                survived += 1
    finally:
        server.stop()
    replay = run_cli("replay", "--data", data)
    record_rounds("crashes: SIGKILL of the rerun worker", rounds=WORKER_ROUNDS, survived=survived)
    record_note(
        "crashes",
        f"rerun worker killed {WORKER_ROUNDS} times, the request then: "
        + ", ".join(f"{n} {k}" for k, n in sorted(seen.items())),
    )
    assert not failed, failed
    assert replay.returncode == 0, replay.stdout[-1000:]
