"""``benchproof witness init|add-log|serve`` as a user runs them: a real witness process on
loopback, answering add-checkpoint as the spec says, and keeping its state across a restart."""

from __future__ import annotations

import re
import subprocess
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import httpx

from tests.servers import SCRIPT, run_cli
from tests.witness.test_core import LOG, Tree

SERVING = re.compile(r"^benchproof witness: serving \S+ on (http://\S+)", re.M)


@contextmanager
def witness_served(folder: Path) -> Iterator[str]:
    log_path = folder.parent / f"{folder.name}.log"
    with log_path.open("w") as log:
        proc = subprocess.Popen(
            [str(SCRIPT), "witness", "serve", "--data", str(folder), "--port", "0"],
            stdout=log,
            stderr=subprocess.STDOUT,
        )
        try:
            deadline = time.monotonic() + 30
            while not (found := SERVING.search(log_path.read_text())):
                assert proc.poll() is None and time.monotonic() < deadline, log_path.read_text()
                time.sleep(0.05)
            yield found.group(1)
        finally:
            proc.terminate()
            proc.wait(10)


def test_a_witness_from_the_command_line(tmp_path: Path) -> None:
    folder = tmp_path / "w"
    made = run_cli("witness", "init", "--data", folder, "--name", "witness.test/w1")
    assert made.returncode == 0, made.stderr
    vkey = (folder / "witness.vkey").read_text().strip()
    assert made.stdout.strip() == vkey and vkey.startswith("witness.test/w1+")
    (tmp_path / "log.vkey").write_text(LOG.vkey + "\n")
    added = run_cli("witness", "add-log", tmp_path / "log.vkey", "--data", folder)
    assert added.returncode == 0, added.stderr
    again = run_cli("witness", "init", "--data", folder, "--name", "witness.test/w1")
    assert again.returncode == 2 and again.stderr.count("\n") == 1, again.stderr
    tree = Tree()
    with witness_served(folder) as url:
        about = httpx.get(url + "/").json()
        assert about["vkey"] == vkey and about["logs"][0]["origin"] == LOG.name
        first = httpx.post(url + "/add-checkpoint", content=tree.request(0, 3))
        assert first.status_code == 200 and first.text.startswith("\u2014 witness.test/w1 ")
    # Restarted between two checkpoints: it still holds size 3.
    with witness_served(folder) as url:
        stale = httpx.post(url + "/add-checkpoint", content=tree.request(0, 5))
        assert stale.status_code == 409 and stale.text == "3\n"
        assert stale.headers["content-type"].split(";")[0] == "text/x.tlog.size"
        moved = httpx.post(url + "/add-checkpoint", content=tree.request(3, 5))
        assert moved.status_code == 200, moved.text
        fork = httpx.post(url + "/add-checkpoint", content=Tree("fork").request(5, 9))
        assert fork.status_code == 422


def test_a_log_directory_is_not_a_witness_folder(tmp_path: Path) -> None:
    data = tmp_path / "log"
    assert run_cli("init", "--data", data).returncode == 0
    refused = run_cli("witness", "init", "--data", data, "--name", "w")
    assert refused.returncode == 2 and "log's data directory" in refused.stderr
