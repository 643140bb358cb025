"""Issue 6: requests/s and p99 for the run JSON and the dossier page, served by ``benchproof
serve`` over the whole catalog, against a litestar hello-world served the same way (uvicorn,
one worker) in the same run. Load: ``wrk`` on loopback (Debian package), rotating over 1,000
runs (each warmed once: the server caches encoded dossiers by log size, so this measures a
warm server, as in production).

Target: run JSON >= 0.5 x hello-world throughput, p99 <= 20 ms."""

from __future__ import annotations

import json
import os
import re
import shutil
import socket
import statistics
import subprocess
import sys
import tempfile
import time
import urllib.request
from pathlib import Path

import httpx

from service.app.ingest import ingest
from service.core.init import init_data_dir
from tests.bench.common import line, record
from tests.corpora import CATALOG, corpus, shared_file
from tests.servers import served

ROOT = Path(__file__).resolve().parents[2]
DURATION = os.environ.get("BENCH_HTTP_SECONDS", "5")
ROUNDS = int(os.environ.get("BENCH_HTTP_ROUNDS", "3"))
CONNECTIONS = os.environ.get("BENCH_HTTP_CONNECTIONS", "16")


def _port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _wait(url: str, proc: subprocess.Popen[bytes]) -> None:
    for _ in range(300):
        try:
            urllib.request.urlopen(url, timeout=1).read()
            return
        except OSError:
            if proc.poll() is not None:
                raise RuntimeError(f"server exited with {proc.returncode}") from None
            time.sleep(0.1)
    raise RuntimeError(f"{url} did not answer")


def run_wrk(url: str, script: Path, connections: str = CONNECTIONS) -> tuple[float, float]:
    """Requests/s and p99 latency (ms) of ``wrk`` driving ``url`` with the Lua ``script`` for
    ``DURATION`` seconds.

    Raises:
        RuntimeError: any answer was not 2xx or 3xx.
    """
    out = subprocess.run(
        ["wrk", "-t1", f"-c{connections}", f"-d{DURATION}s", "--latency", "-s", str(script), url],
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    rps = float(re.search(r"Requests/sec:\s+([\d.]+)", out).group(1))  # type: ignore[union-attr]
    p99_text = re.search(r"99%\s+([\d.]+)(us|ms|s)", out)
    assert p99_text is not None, out
    scale = {"us": 0.001, "ms": 1.0, "s": 1000.0}[p99_text.group(2)]
    non2xx = re.search(r"Non-2xx or 3xx responses: (\d+)", out)
    if non2xx:
        raise RuntimeError(f"{non2xx.group(1)} failed responses:\n{out}")
    return rps, float(p99_text.group(1)) * scale


def _wrk(url: str, paths: list[str], script_dir: Path) -> tuple[float, float]:
    script = script_dir / "paths.lua"
    lua_paths = ",".join(json.dumps(p) for p in paths)
    script.write_text(
        "local paths = {" + lua_paths + "}\nlocal i = 0\n"
        "request = function()\n  i = i + 1\n  return wrk.format('GET', paths[(i % #paths) + 1])\nend\n"
    )
    return run_wrk(url, script)


def main() -> None:
    if shutil.which("wrk") is None:
        print("http (issue 6): skipped: wrk is not installed (apt-get install wrk)")
        return
    catalog = corpus(*CATALOG)
    print(
        f"http (issue 6): wrk -t1 -c{CONNECTIONS} -d{DURATION}s on loopback, one uvicorn worker each"
    )
    with tempfile.TemporaryDirectory() as tmp:
        data = Path(tmp) / "data"
        ledger, _ = init_data_dir(data)
        with ledger:
            ingest(ledger, "kernelindex-catalog", [catalog])
            ingest(ledger, "manifest", [shared_file("seed-manifest.json")])
            digests = [
                r[0]
                for r in ledger.store.session.execute(
                    "SELECT run_digest FROM p_runs WHERE valid_to IS NULL ORDER BY run_digest LIMIT 1000"
                )
            ]
        hello = _port()
        env = {**os.environ, "PYTHONPATH": str(ROOT)}
        peer = subprocess.Popen(
            [
                sys.executable,
                "-m",
                "uvicorn",
                "tests.bench.hello_app:app",
                "--port",
                str(hello),
                "--log-level",
                "warning",
                "--no-access-log",
            ],
            cwd=ROOT,
            env=env,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        with served(data, "--workers", 1) as base:
            try:
                _wait(f"http://127.0.0.1:{hello}/", peer)
                # A warm server: each run's JSON and page are built once before the clock starts
                # (a first request builds and caches the dossier; steady state is what is measured).
                with httpx.Client(base_url=base) as warm:
                    for d in digests:
                        warm.get(f"/v1/runs/{d}").raise_for_status()
                        warm.get(f"/runs/{d[7:19]}").raise_for_status()
                # One unmeasured pass of load on each server first, so neither's first round pays
                # for its allocator and caches warming up under concurrency.
                _wrk(f"http://127.0.0.1:{hello}", ["/"], Path(tmp))
                _wrk(base, [f"/v1/runs/{d}" for d in digests], Path(tmp))
                # Rounds alternate the peer and ours, so a drift of the machine's speed (a shared
                # VM's CPUs are noisy) falls on both; the medians of the rounds are reported.
                rounds: dict[str, list[tuple[float, float]]] = {
                    "hello": [],
                    "run": [],
                    "page": [],
                    "hot": [],
                }
                for _ in range(ROUNDS):
                    rounds["hello"].append(_wrk(f"http://127.0.0.1:{hello}", ["/"], Path(tmp)))
                    rounds["run"].append(_wrk(base, [f"/v1/runs/{d}" for d in digests], Path(tmp)))
                    rounds["page"].append(
                        _wrk(base, [f"/runs/{d[7:19]}" for d in digests], Path(tmp))
                    )
                    rounds["hot"].append(_wrk(base, [f"/v1/runs/{digests[0]}"], Path(tmp)))
            finally:
                peer.terminate()
                peer.wait(10)
    (hello_rps, hello_p99), (run_rps, run_p99) = _median(rounds["hello"]), _median(rounds["run"])
    (page_rps, page_p99), (hot_rps, hot_p99) = _median(rounds["page"]), _median(rounds["hot"])
    line("litestar hello-world (peer)", hello_rps, "req/s", f"p99 {hello_p99:.1f} ms")
    line(
        "GET /v1/runs/{digest}, 1,000 runs rotating",
        run_rps,
        "req/s",
        f"p99 {run_p99:.1f} ms (target <= 20)",
    )
    _ratio(
        "http_run_ratio_to_hello",
        rounds["run"],
        rounds["hello"],
        0.5,
        "GET /v1/runs/{digest} (1,000 runs rotating) over a litestar hello-world, one process each",
        run_rps=round(run_rps, 1),
        run_p99_ms=round(run_p99, 2),
        hello_rps=round(hello_rps, 1),
    )
    line(
        "GET /runs/{shortId} dossier page, 1,000 runs", page_rps, "req/s", f"p99 {page_p99:.1f} ms"
    )
    _ratio(
        "page_ratio_to_hello",
        rounds["page"],
        rounds["hello"],
        0.3,
        "GET /runs/{shortId} dossier pages (1,000 runs rotating) over a litestar hello-world,"
        " one process each",
        page_rps=round(page_rps, 1),
        page_p99_ms=round(page_p99, 2),
        hello_rps=round(hello_rps, 1),
    )
    line("GET /v1/runs/{digest}, one hot run", hot_rps, "req/s", f"p99 {hot_p99:.1f} ms")


def _ratio(
    name: str,
    ours: list[tuple[float, float]],
    hello: list[tuple[float, float]],
    target: float,
    about: str,
    **parts: object,
) -> None:
    """Print and record the median over rounds of our requests/s over hello-world's."""
    ratios = [o[0] / h[0] for o, h in zip(ours, hello, strict=True)]
    line(
        f"  ratio to hello-world, median of rounds (target >= {target})",
        statistics.median(ratios),
        "x",
        "rounds: " + ", ".join(f"{r:.2f}" for r in ratios),
    )
    record(name, statistics.median(ratios), "x", about, **parts)


def _median(samples: list[tuple[float, float]]) -> tuple[float, float]:
    return statistics.median(s[0] for s in samples), statistics.median(s[1] for s in samples)
