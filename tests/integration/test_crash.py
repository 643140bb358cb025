"""A child process appending batches is killed with SIGKILL at random points, 8 times (the
reliability suite kills serve, ingest, replay and the rerun worker 20 times each); each
time the log verifies, the projections stand exactly at the log's size, and only whole batches
are there."""

from __future__ import annotations

import os
import random
import signal
import subprocess
import sys
import time
from pathlib import Path

from service.core.init import init_data_dir
from service.core.ledger import Ledger
from tests.integration.crash_child import BATCH
from verifier.log import verify_log

ROOT = Path(__file__).resolve().parents[2]
ROUNDS = 8


def test_sigkill_leaves_only_whole_batches(tmp_path: Path) -> None:
    data = tmp_path / "data"
    ledger, _ = init_data_dir(data)
    ledger.close()
    rng = random.Random(20261130)
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    kills = 0
    for _ in range(ROUNDS):
        child = subprocess.Popen(
            [sys.executable, "-m", "tests.integration.crash_child", str(data)],
            stdout=subprocess.PIPE,
            cwd=ROOT,
            env=env,
        )
        assert child.stdout is not None
        assert child.stdout.readline().strip() == b"ready"
        time.sleep(rng.uniform(0.0, 0.25))
        child.send_signal(signal.SIGKILL)
        child.wait()
        child.stdout.close()
        kills += 1
        report = verify_log(data / "benchproof.db")
        assert report.ok, report.findings[:3]
        with Ledger.open(data) as reopened:
            conn = reopened.store.session
            counts = conn.execute(
                "SELECT subject, count(*) FROM entries WHERE subject LIKE 'batch-%' GROUP BY subject"
            ).fetchall()
            assert all(c == BATCH for _, c in counts), counts
            assert reopened.projections.position() == reopened.store.size
            assert reopened.store.latest_checkpoint()[0] == reopened.store.size  # type: ignore[index]
    assert kills == ROUNDS
    with Ledger.open(data) as final:
        batches = final.store.session.execute(
            "SELECT count(DISTINCT subject) FROM entries WHERE subject LIKE 'batch-%'"
        ).fetchone()[0]
    assert batches > 0
