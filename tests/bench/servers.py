"""Issue 27: the HTTP server, chosen by figures. The same app (``service.web.app``'s factory, the
same data directory, rate limits off) under uvicorn (uvloop, httptools) and under granian
(ASGI, uvloop), one process each, side by side in one run: requests/s and p99 of
``GET /v1/runs/{digest}`` (1,000 runs rotating, warmed) and of durable attestation posts (16
connections, each body posted once). Rounds alternate which server goes first; medians.

No target: the figures choose the server (see docs/benchmarks.md for the choice)."""

from __future__ import annotations

import os
import shutil
import socket
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

import httpx
import msgspec

from events.entries import INTOTO_PAYLOAD_TYPE
from keys import SigningKey, encode_envelope, sign_envelope
from service.app.ingest import ingest
from service.commands.attest import statement
from service.core.config import Settings
from service.core.init import init_data_dir
from service.shared.limits import Limits
from service.web.app import SETTINGS_VARIABLE
from tests.bench.attest import CLIENTS, _post_all
from tests.bench.common import line, record
from tests.bench.http import _wait, _wrk
from tests.builders import key_registration, signed_event
from tests.corpora import CATALOG, corpus

ROOT = Path(__file__).resolve().parents[2]
ROUNDS = int(os.environ.get("BENCH_SERVERS_ROUNDS", "3"))
BODIES = int(os.environ.get("BENCH_SERVERS_BODIES", "12000"))
FACTORY = "service.web.app:app_from_environment"


def _port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _command(server: str, port: int) -> list[str]:
    if server == "uvicorn":
        return [
            *(sys.executable, "-m", "uvicorn", FACTORY, "--factory", "--port", str(port)),
            *("--loop", "uvloop", "--http", "httptools", "--log-level", "warning"),
            "--no-access-log",
        ]
    return [
        *(sys.executable, "-m", "granian", FACTORY, "--factory", "--interface", "asgi"),
        *("--port", str(port), "--loop", "uvloop", "--workers", "1", "--log-level", "warning"),
        "--no-ws",
    ]


class Server:
    """One server process over the data directory, started and stopped around a block."""

    def __init__(self, server: str, data: Path) -> None:
        self.server, self.data = server, data

    def __enter__(self) -> str:
        port = _port()
        settings = Settings(
            data=self.data,
            port=port,
            limits=Limits(key_hour=0, key_day=0, address_hour=0, address_day=0),
        )
        env = {
            **os.environ,
            "PYTHONPATH": str(ROOT),
            SETTINGS_VARIABLE: msgspec.json.encode(settings, enc_hook=str).decode(),
        }
        self.proc = subprocess.Popen(
            _command(self.server, port),
            cwd=ROOT,
            env=env,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        url = f"http://127.0.0.1:{port}"
        _wait(url + "/healthz", self.proc)
        return url

    def __exit__(self, *_exc: object) -> None:
        self.proc.terminate()
        try:
            self.proc.wait(20)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()


def _bodies(run: str, keys: list[SigningKey], n: int, tag: str) -> list[bytes]:
    out = []
    for i in range(n):
        payload = statement(run, {"kind": "environment-note", "note": f"{tag} note {i}"})
        out.append(
            encode_envelope(sign_envelope(INTOTO_PAYLOAD_TYPE, payload, keys[i % len(keys)]))
        )
    return out


def main() -> None:
    if shutil.which("wrk") is None:
        print("servers (issue 27): skipped: wrk is not installed (apt-get install wrk)")
        return
    print(
        f"servers (issue 27): uvicorn (uvloop, httptools) beside granian (asgi, uvloop), one"
        f" process each, the same app and data; {ROUNDS} rounds alternating, medians"
    )
    keys = [SigningKey.generate() for _ in range(CLIENTS)]
    figures: dict[str, dict[str, list[tuple[float, float]]]] = {
        s: {"run": [], "post": []} for s in ("uvicorn", "granian")
    }
    with tempfile.TemporaryDirectory() as tmp:
        data = Path(tmp) / "data"
        ledger, _ = init_data_dir(data)
        with ledger:
            ingest(ledger, "kernelindex-catalog", [corpus(*CATALOG)])
            digests = [
                r[0]
                for r in ledger.store.session.execute(
                    "SELECT run_digest FROM p_runs WHERE valid_to IS NULL ORDER BY run_digest LIMIT 1000"
                )
            ]
            ledger.append_pending(
                [signed_event(key_registration(k, "community"), k.key_id, k) for k in keys]
            )
        paths = [f"/v1/runs/{d}" for d in digests]
        for r in range(ROUNDS):
            order = ("uvicorn", "granian") if r % 2 == 0 else ("granian", "uvicorn")
            for server in order:
                bodies = _bodies(digests[0], keys, BODIES, f"{server}-{r}")
                with Server(server, data) as url:
                    with httpx.Client(base_url=url) as warm:
                        for p in paths:
                            warm.get(p).raise_for_status()
                    _wrk(url, paths, Path(tmp))  # unmeasured: warm under load
                    figures[server]["run"].append(_wrk(url, paths, Path(tmp)))
                    figures[server]["post"].append(
                        _post_all(url, f"/v1/runs/{digests[0]}/attestations", bodies, Path(tmp))
                    )
    medians = {
        s: {
            k: (statistics.median(v[0] for v in rows), statistics.median(v[1] for v in rows))
            for k, rows in f.items()
        }
        for s, f in figures.items()
    }
    for server, f in medians.items():
        line(
            f"{server}: GET /v1/runs/{{digest}}", f["run"][0], "req/s", f"p99 {f['run'][1]:.1f} ms"
        )
        line(f"{server}: POST attestations", f["post"][0], "req/s", f"p99 {f['post'][1]:.1f} ms")
    for kind, what in (("run", "GET /v1/runs/{digest}"), ("post", "attestation posts")):
        ratio = medians["granian"][kind][0] / medians["uvicorn"][kind][0]
        line(f"  granian / uvicorn, {what}", ratio, "x")
        record(
            f"server_{kind}_granian_to_uvicorn",
            ratio,
            "x",
            f"{what}: granian's requests/s over uvicorn's, one process each",
            **{
                f"{s}_{m}": round(medians[s][kind][i], 2)
                for s in medians
                for i, m in enumerate(("rps", "p99_ms"))
            },
        )
