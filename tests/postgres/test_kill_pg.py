"""Issue 19: a writer killed mid-batch on PostgreSQL leaves no half batch, and a killed API
process loses nothing the others or it acknowledged.

- ``benchproof ingest`` of the first 2,000 rows of Liger-Kernel's benchmark CSV (2,000 runs in
  one transaction) into a data directory on a fresh PostgreSQL schema, SIGKILLed at a random
  moment, once it holds the writers' lock, or once its transaction has written rows (seen in
  ``pg_stat_activity`` and ``pg_locks`` through the ingest's own ``application_name``): once
  the server has ended the killed session, the store holds none of the batch or all of it,
  ``benchproof verify`` passes, the latest checkpoint covers every entry, the same import run
  again completes, and once more appends nothing.
- Four ``benchproof serve`` processes over one PostgreSQL store under write traffic
  (``loadpg.SpreadTraffic``); one of them is SIGKILLed while the other three go on, then
  started again, round after round: every acknowledged write is in the store exactly once,
  those whose answer was lost at most once, every process then serves the store's size, and
  ``benchproof verify`` and ``benchproof replay`` pass.

FAST: 5 ingest rounds, 2 server rounds; FULL (``BENCHPROOF_RELIABILITY=full``): 20 and 8.
"""

from __future__ import annotations

import os
import random
import signal
import subprocess
import time
from collections import Counter
from pathlib import Path

import httpx
import psycopg

from tests.corpora import corpus
from tests.postgres.loadpg import (
    SpreadTraffic,
    cli_ok,
    prepare_pg,
    serve_errors,
    serving,
    store_copy,
    store_entries,
)
from tests.reliability.report import (
    FULL,
    record_note,
    record_rounds,
    record_server_errors,
    record_writes,
    scale,
)
from tests.reliability.traffic import audit, checkpoint_covers, log_size
from tests.servers import SCRIPT, run_cli
from tests.stores import drop_pg_schema, fresh_pg_url

INGEST_ROUNDS = scale(5, 20)
SERVER_ROUNDS = scale(2, 8)
ROWS = 2000
MODES = ("once it writes", "at a random moment", "once it writes", "once it holds the lock")

_SESSION = """
    SELECT count(*), coalesce(bool_or(a.backend_xid IS NOT NULL), false),
           coalesce(bool_or(EXISTS (SELECT 1 FROM pg_locks l WHERE l.pid = a.pid
                                    AND l.locktype = 'advisory' AND l.granted)), false)
    FROM pg_stat_activity a WHERE a.application_name = %s"""
"""The killed command's sessions (by ``application_name``): how many, whether one has written
rows in an open transaction, whether one holds an advisory lock (the writers' lock)."""


def _liger(folder: Path) -> Path:
    """The first ``ROWS`` rows of Liger-Kernel's main benchmark CSV, written into ``folder``."""
    path = folder / "liger-head.csv"
    with corpus("liger-kernel-bench", "all_benchmark_data.csv").open(encoding="utf-8") as src:
        head = [line for _, line in zip(range(ROWS + 1), src, strict=False)]
    path.write_text("".join(head), encoding="utf-8")
    return path


def _killed_ingest(
    monitor: psycopg.Connection[tuple[object, ...]],
    data: Path,
    path: Path,
    app: str,
    mode: str,
    rng: random.Random,
) -> tuple[str, bool]:
    """Run ``benchproof ingest liger`` as the PostgreSQL application ``app`` and SIGKILL it as
    ``mode`` says; wait until the server has ended its sessions. Say when it was killed, and
    whether its transaction had written rows by then (False also when it finished first)."""
    proc = subprocess.Popen(
        [str(SCRIPT), "ingest", "liger", str(path), "--data", str(data)],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        start_new_session=True,
        env={**os.environ, "PGAPPNAME": app},
    )
    started = time.monotonic()
    moment = rng.uniform(0.05, 1.6)
    wrote_at: float | None = None
    delay = rng.uniform(0.0, 0.4)  # its transaction writes for about half a second
    wrote = False
    while proc.poll() is None:
        row = monitor.execute(_SESSION, (app,)).fetchone()
        assert row is not None
        wrote, locked = bool(row[1]), bool(row[2])
        now = time.monotonic()
        if wrote and wrote_at is None:
            wrote_at = now
        due = {
            "at a random moment": now - started > moment,
            "once it holds the lock": locked,
            "once it writes": wrote_at is not None and now - wrote_at >= delay,
        }[mode]
        if due:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()
            break
        time.sleep(0.002)
    else:
        return f"finished before the kill (exit {proc.returncode})", False
    elapsed = time.monotonic() - started
    deadline = time.monotonic() + 120
    while True:  # the killed sessions roll back and end once the server sees the socket close
        row = monitor.execute(_SESSION, (app,)).fetchone()
        if row is None or row[0] == 0:
            break
        assert time.monotonic() < deadline, f"the killed ingest's sessions stay: {row}"
        time.sleep(0.01)
    return f"killed {mode} after {elapsed:.2f} s", wrote


def test_sigkill_of_ingest_leaves_whole_batches(tmp_path: Path, pg_base_url: str) -> None:
    path = _liger(tmp_path)
    rng = random.Random(1903)
    failed: list[str] = []
    kills: Counter[str] = Counter()
    survived = 0
    added_in_full: set[int] = set()
    with psycopg.connect(pg_base_url, autocommit=True) as monitor:
        for round_ in range(INGEST_ROUNDS):
            url = fresh_pg_url(pg_base_url)
            try:
                data = tmp_path / f"data-{round_}"
                cli_ok("init", "--data", data, "--store", url)
                before = len(store_entries(url))
                mode = MODES[round_ % len(MODES)]
                when, wrote = _killed_ingest(monitor, data, path, f"bp-kill-{round_}", mode, rng)
                landed = store_entries(url, before)
                runs = sum(1 for _, kind in landed if kind.startswith("run.ingested"))
                if when.startswith("finished"):
                    kills["finished"] += 1
                elif landed:
                    kills["after the commit"] += 1
                elif wrote:
                    kills["mid-write"] += 1
                else:
                    kills["before writing"] += 1
                problems = []
                if runs not in (0, ROWS):
                    problems.append(f"half a batch: {runs} of {ROWS} runs after the kill")
                done = run_cli("verify", "--data", data)
                if done.returncode != 0:
                    problems.append(f"verify after the kill: {done.stdout[-400:]}{done.stderr}")
                covered = checkpoint_covers(store_copy(url, tmp_path / f"copy-{round_}.db"))
                if covered is not None:
                    problems.append(covered)
                again = run_cli("ingest", "liger", path, "--data", data)
                if again.returncode != 0:
                    problems.append(f"the ingest again: {again.stderr[-400:]}")
                complete = store_entries(url, before)
                added_in_full.add(len(complete))
                whole = sum(1 for _, kind in complete if kind.startswith("run.ingested"))
                if whole != ROWS:
                    problems.append(f"the completed import holds {whole} runs, not {ROWS}")
                if landed and len(landed) != len(complete):
                    problems.append(f"{len(landed)} entries after the kill, {len(complete)} whole")
                third = run_cli("ingest", "liger", path, "--data", data)
                if third.returncode or "nothing new" not in third.stdout:
                    problems.append(f"a third import: {third.stdout[-300:]}{third.stderr[-300:]}")
                if len(store_entries(url, before)) != len(complete):
                    problems.append("a third import appended entries")
                done = run_cli("verify", "--data", data)
                covered = checkpoint_covers(store_copy(url, tmp_path / f"copy-{round_}.db"))
                if done.returncode != 0 or covered is not None:
                    problems.append(f"at the end: {done.stdout[-400:]} {covered}")
                if problems:
                    failed.append(f"round {round_} ({when}): {problems}")
                else:
                    survived += 1
                print(f"\ningest round {round_}: {when}; {runs} runs landed; {problems or 'ok'}")
            finally:
                drop_pg_schema(url)
    record_rounds("postgres: SIGKILL of ingest", rounds=INGEST_ROUNDS, survived=survived)
    note = f"ingest liger ({ROWS} runs, one batch) on PostgreSQL killed {INGEST_ROUNDS} times: " + (
        ", ".join(f"{n} {k}" for k, n in sorted(kills.items()))
    )
    record_note("postgres", note)
    print(f"\n{note}")
    assert not failed, failed
    assert len(added_in_full) == 1, f"the whole import appended {added_in_full} entries"
    # The kills must test the transaction itself, rows written and not committed: at least
    # once in the fast run, a quarter of the rounds in the full one.
    assert kills["mid-write"] >= (INGEST_ROUNDS // 4 if FULL else 1), dict(kills)


def test_sigkill_of_one_process_while_three_go_on(tmp_path: Path, pg_url: str) -> None:
    data = tmp_path / "data"
    token = prepare_pg(data, pg_url)
    traffic = SpreadTraffic(token, seed=1904, timeout=10, write_share=0.8)
    rng = random.Random(1904)
    failed: list[str] = []
    survived = 0
    after_kill: list[int] = []
    with serving(data, 4, "--workers", 1, logs=tmp_path) as servers:
        since = traffic.setup_spread([s.url for s in servers], keys=scale(4, 8), rerunners=2)
        for round_ in range(SERVER_ROUNDS):
            victim = servers[round_ % len(servers)]
            kill_after = rng.uniform(0.3, scale(1.5, 3.0))
            acked = sum(traffic.acked_per_server.values())
            traffic.run_spread(
                [s.url for s in servers],
                clients=8,
                seconds=kill_after + scale(3.0, 6.0),
                kill=victim.kill,
                kill_after=kill_after,
                victim=victim.url,
            )
            victim.reap()
            what = f"round {round_} (killed {victim.url} after {kill_after:.2f} s)"
            after_kill.append(traffic.acked_after_kill)
            copy = store_copy(pg_url, tmp_path / "audit.db")
            problems = audit(copy, traffic.writes, since).problems
            covered = checkpoint_covers(copy)
            problems += [covered] if covered else []
            victim.start(60.0)
            size = log_size(copy)
            for server in servers:
                health = httpx.get(f"{server.url}/healthz", timeout=30).json()
                if health["treeSize"] != size:
                    problems.append(f"{server.url} serves {health['treeSize']}, the store {size}")
            if traffic.acked_after_kill == 0:
                problems.append("the other processes acknowledged nothing after the kill")
            print(
                f"\nserve round {round_}: {what}, "
                f"{sum(traffic.acked_per_server.values()) - acked} writes acknowledged, "
                f"{traffic.acked_after_kill} of them after the kill; {problems[:3] or 'ok'}"
            )
            if problems:
                failed.append(f"{what}: {problems[:5]}")
            else:
                survived += 1
    found = audit(store_copy(pg_url, tmp_path / "audit.db"), traffic.writes, since)
    verify = run_cli("verify", "--data", data)
    replay = run_cli("replay", "--data", data)
    errors = serve_errors(tmp_path)
    record_rounds(
        "postgres: SIGKILL of one of four processes", rounds=SERVER_ROUNDS, survived=survived
    )
    record_writes(
        "postgres: one of four processes killed",
        attempted=found.attempted,
        acknowledged=found.acknowledged,
        found=found.found,
    )
    record_server_errors("postgres: one of four processes killed", traffic.server_errors())
    summary = (
        f"one of four processes killed {SERVER_ROUNDS} times: {traffic.figures()}; audit: "
        f"{found.acknowledged} acknowledged, {found.found} found once, {found.unknown} lost "
        f"their answer ({found.unknown_landed} of them landed, once each)"
    )
    record_note("postgres", summary)
    print(f"\n{summary}")
    assert not failed, failed
    assert traffic.server_errors() == 0, f"{traffic.latency_rows()}\n{errors}"
    assert not errors, errors
    assert not found.problems, found.problems[:10]
    assert found.found == found.acknowledged > 0
    assert verify.returncode == 0, verify.stdout[-2000:] + verify.stderr[-2000:]
    assert replay.returncode == 0, replay.stdout[-2000:] + replay.stderr[-2000:]
    assert not traffic.contest_problems, traffic.contest_problems[:5]
