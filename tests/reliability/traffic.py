"""Mixed traffic against a real ``benchproof serve``, and the audit that proves what it wrote.

:class:`Traffic` drives N concurrent clients (asyncio, one keep-alive connection each) that mix
reads (run dossiers, the home and run pages, log entries, inclusion proofs, the checkpoint,
tiles, attestation lists) with every public and operator write: key registrations (challenge,
then the registration signed by the key itself), attestations signed by many registered keys,
withdrawals by their attesters, reports and their resolutions by the operator, operator hides,
operator ingests of small batches of new runs, operator rerun requests, rerunner grants (the
operator gives a freshly registered key the rerunner role), claims of pending requests by those
rerunner keys and their results, and key revocations (by the key itself, or by the operator).
Every write carries a unique marker (``bpw-…``) in what it signs or sends (the note, the text,
the reason, the key's name, each run's external id, a result's correctness detail), so that
:func:`audit` finds it in the log afterwards by its content, whatever the server answered. The
two writes whose events hold no free text are found by what is unique in them instead: a grant
by its key id (each key is granted once), a claim by its request and worker (each request is
claimed once).

A write is *acknowledged* when it got a 2xx, *refused* when its first attempt got a 4xx, and
*unknown* otherwise (no answer: a timeout, a reset, a killed server; a 429/503; a 5xx; a 4xx to
a retry, which the first attempt may have caused). Only idempotent writes are retried, with the
same bytes (attestations, reports, ingests); the others are sent once. :func:`audit` then proves:
every acknowledged write is in the log exactly once (at the index its answer named), every
unknown one at most once, every refused one not at all, every batch whole, and nothing else
was appended.

:class:`Server` is a ``benchproof serve`` this module starts in its own process group, so that a
test can SIGKILL it (and its workers) at any moment.
"""

from __future__ import annotations

import asyncio
import base64
import itertools
import json
import math
import os
import random
import re
import signal
import sqlite3
import subprocess
import time
from collections import Counter, defaultdict
from collections.abc import Callable, Coroutine, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any, TypeVar

import httpx

from events import check_manifest
from events.entries import INTOTO_PAYLOAD_TYPE, format_instant
from events.types import (
    RERUN_PREDICATE_V2,
    AttestationWithdrawn,
    KeyRegistered,
    KeyRevoked,
    RerunClaimedV2,
)
from keys import SigningKey, encode_envelope, sign_envelope
from service.commands.attest import statement
from service.commands.keys import signed_event
from tests import builders
from tests.reliability.conftest import NO_LIMITS
from tests.servers import serve_command, wait_served

T = TypeVar("T")

__all__ = [
    "WRITE_KINDS",
    "Audit",
    "Server",
    "Traffic",
    "Write",
    "audit",
    "checkpoint_covers",
    "cpu_bundle",
    "grant_rerunner",
    "log_size",
    "percentile",
    "register_key",
]

MARK = re.compile(rb"bpw-[0-9a-f]{8}-[0-9]+(?:r[0-9]+)?(?![0-9r])")
"""A write's marker (and, ``…rN``, the N-th run of an ingest batch) in a log entry's payload."""

EXTRA_TYPES = frozenset({"manifest.recorded.v1", "source.registered.v1"})
"""Entries an ingest may append beside its runs, which carry no marker of their own."""

WRITE_KINDS = (
    "registration",
    "attestation",
    "withdrawal",
    "hide",
    "report",
    "resolution",
    "ingest",
    "rerun",
    "grant",
    "claim",
    "result",
    "revocation-self",
    "revocation-operator",
)
"""Every kind of write :class:`Traffic` sends: one per write path of the service."""

GPU = {"kind": "gpu", "model": "NVIDIA B200", "architecture": "sm_100"}
"""The environment of the runs ``Traffic`` ingests (``tests.builders.bundle``), as a rerunner's
claim and result declare it."""

RETRIES = 2
KINDS = ("reproduced", "could-not-reproduce", "environment-note", "regression-observed")
REASONS = ("incorrect-result", "weak-correctness-check", "duplicate", "other")
_JSON = {"content-type": "application/json"}


def run_loop(coro: Coroutine[Any, Any, T]) -> T:
    """``asyncio.run(coro)`` on a thread of its own: the session's main thread may have an event
    loop running already (Playwright's sync API, kept open for the tests that show pages)."""
    with ThreadPoolExecutor(1) as pool:
        return pool.submit(asyncio.run, coro).result()


@dataclass
class Write:
    """One write a client attempted: its kind, its marker, the markers the log must then hold
    (one per run for an ingest), and what came of it."""

    kind: str
    marker: str
    parts: tuple[str, ...]
    route: str = ""
    outcome: str = "unsent"  # acked | refused | unknown
    status: int | None = None
    index: int | None = None
    attempts: int = 0


@dataclass
class Audit:
    """What :func:`audit` found: writes attempted, acknowledged, and acknowledged ones found
    exactly once where their answers said; unknown ones that landed; every problem, in words."""

    attempted: int
    acknowledged: int
    found: int
    unknown: int
    unknown_landed: int
    entries: int
    problems: list[str] = field(default_factory=list)


def percentile(values: Sequence[float], p: float) -> float:
    """The nearest-rank ``p``-th percentile (0 < p <= 100) of ``values`` (sorted or not)."""
    ordered = sorted(values)
    rank = max(1, math.ceil(p / 100 * len(ordered)))
    return ordered[rank - 1]


def _tile_index(n: int) -> str:
    """A tile index as tlog-tiles writes it: groups of three digits, all but the last x-ed."""
    digits = f"{n:03d}"
    digits = "0" * (-len(digits) % 3) + digits
    groups = [digits[i : i + 3] for i in range(0, len(digits), 3)]
    return "/".join([*(f"x{g}" for g in groups[:-1]), groups[-1]])


def tile_path(size: int, n: int) -> str:
    """The level-0 tile ``n`` of a tree of ``size`` entries: full, or partial at the edge."""
    full, width = divmod(size, 256)
    if n < full or width == 0:
        return f"/tile/0/{_tile_index(min(n, max(full - 1, 0)))}"
    return f"/tile/0/{_tile_index(n)}.p/{width}"


def cpu_bundle(external: str, environment: dict[str, str], value: int) -> dict[str, Any]:
    """A bundle (``{role: manifest}``) of a run on this machine's CPU (``environment``, as
    ``service.harness.environment.detect`` gives it), which a rerun worker here can claim."""
    api = builders.API
    vendor = "".join(c for c in environment.get("vendor", "") if c.isalnum()).lower()
    env = check_manifest(
        {
            "apiVersion": api,
            "kind": "ExecutionEnvironment",
            "metadata": {"name": "reliability-cpu"},
            "spec": {
                "hardware": {
                    "vendor": vendor or "unknown",
                    "product": environment["model"],
                    "architecture": environment["architecture"],
                },
                "software": {"driver": "none"},
            },
        },
        source="reliability",
    )
    op = check_manifest(builders.operation(1), source="reliability")
    wl = check_manifest(builders.workload(1, 1024, op.digest), source="reliability")
    pr = check_manifest(builders.protocol(), source="reliability")
    impl = check_manifest(builders.implementation(1, op.digest), source="reliability")
    run = {
        "apiVersion": api,
        "kind": "BenchmarkRun",
        "metadata": {"name": f"cpu-{external}"},
        "spec": {
            "implementationDigest": impl.digest,
            "workloadDigest": wl.digest,
            "protocolDigest": pr.digest,
            "environmentDigest": env.digest,
            "status": "passed",
            "timing": {"primaryStatistic": "median", "latencyNs": {"median": value}},
            "observedAt": "2026-01-01T00:00:00Z",
            "sourceNative": {"source": "reliability", "externalId": external},
        },
    }
    return {
        "run": run,
        "protocol": pr.manifest,
        "environment": env.manifest,
        "workload": wl.manifest,
        "implementation": impl.manifest,
        "operation": op.manifest,
    }


def register_key(url: str, key: SigningKey, name: str) -> int:
    """Register ``key`` as a community key over HTTP (challenge, then the registration signed
    by the key itself); return its entry's index."""
    with httpx.Client(base_url=url, timeout=30) as http:
        issued = http.post("/v1/keys/challenges", json={"keyId": key.key_id})
        assert issued.status_code == 201, issued.text
        event = KeyRegistered(
            keyId=key.key_id,
            publicKey=base64.b64encode(key.public.raw).decode("ascii"),
            role="community",
            name=name,
            challenge=issued.json()["challenge"],
        )
        done = http.post("/v1/keys", content=signed_event(event, key), headers=_JSON)
        assert done.status_code == 201, done.text
        return int(done.json()["index"])


def grant_rerunner(url: str, token: str, key_id: str) -> None:
    """Give the registered key ``key_id`` the rerunner role (operator token)."""
    done = httpx.post(
        f"{url}/v1/keys/{key_id}/grants",
        json={"role": "rerunner"},
        headers={"authorization": f"Bearer {token}"},
        timeout=30,
    )
    assert done.status_code in (200, 201), done.text


class Traffic:
    """Concurrent clients mixing reads and writes (see the module's docstring). One object may
    drive several rounds (``run``) against several servers over the same data directory: the
    keys, runs and attestations it learnt carry over, and so do its writes, which
    :func:`audit` checks all together."""

    READS = (
        "GET /v1/runs/{ref}",
        "GET /runs/{ref}",
        "GET /",
        "GET /v1/log/entries",
        "GET /v1/log/proof/inclusion",
        "GET /v1/log/checkpoint",
        "GET /tile/0/{n}",
        "GET /v1/attestations",
    )

    def __init__(
        self,
        token: str,
        *,
        seed: int,
        timeout: float = 30.0,
        write_share: float = 0.5,
    ) -> None:
        self.token = token
        self.seed = seed
        self.timeout = timeout
        self.session = f"{random.Random(seed).getrandbits(32):08x}"
        self._numbers = itertools.count()
        self._revocations = itertools.count()  # alternates self and operator revocations
        self.writes: list[Write] = []
        self.keys: list[SigningKey] = []
        self.runs: list[str] = []  # run digests the log holds (acknowledged)
        self.ingested: list[str] = []  # those this traffic ingested (rerunnable)
        self.attestations: list[tuple[str, SigningKey]] = []  # acknowledged, still shown
        self.reports: list[str] = []  # acknowledged, not yet resolved
        self.rerunners: list[SigningKey] = []  # granted the rerunner role (acknowledged)
        self.open_requests: list[tuple[str, str]] = []  # (request id, run digest): acked, unclaimed
        self.claimed: list[tuple[str, str, SigningKey]] = []  # acked claims, not yet answered
        self.latency: dict[str, list[float]] = defaultdict(list)
        self.statuses: dict[str, Counter[int]] = defaultdict(Counter)
        self.failures: dict[str, Counter[str]] = defaultdict(Counter)
        self.unexpected: list[str] = []
        self.size = 0
        self.rounds = 0
        self.since: int | None = None
        self._stop: asyncio.Event | None = None
        shares = {
            self._read: 1 - write_share,
            self._attest: write_share * 0.36,
            self._report: write_share * 0.10,
            self._ingest: write_share * 0.10,
            self._withdraw: write_share * 0.07,
            self._hide: write_share * 0.05,
            self._register: write_share * 0.05,
            self._rerun: write_share * 0.06,
            self._claim: write_share * 0.05,
            self._result: write_share * 0.05,
            self._resolve: write_share * 0.05,
            self._grant: write_share * 0.03,
            self._revoke: write_share * 0.03,
        }
        self._ops = list(shares)
        self._weights = list(shares.values())

    # --- set-up and rounds -------------------------------------------------------------------

    def setup(self, url: str, *, keys: int, rerunners: int = 0) -> int:
        """Learn the seed run and the log's size, register ``keys`` community keys and
        ``rerunners`` keys the operator grants the rerunner role (writes too, audited as the
        others); return the log's size before any of this traffic's writes (what
        :func:`audit` starts from)."""
        return run_loop(self._setup(url, keys, rerunners))

    async def _setup(self, url: str, keys: int, rerunners: int) -> int:
        async with httpx.AsyncClient(base_url=url, timeout=self.timeout) as http:
            health = await http.get("/healthz")
            assert health.status_code == 200, health.text
            since = int(health.json()["treeSize"])
            if self.since is None:
                self.since = since
            self.size = max(self.size, since)
            seed = await http.get("/v1/runs/sol-execbench:165")
            assert seed.status_code == 200, seed.text
            if seed.json()["runDigest"] not in self.runs:
                self.runs.append(seed.json()["runDigest"])
            gate = asyncio.Semaphore(8)

            async def one() -> None:
                async with gate:
                    await self._register(http, random.Random())

            async def rerunner() -> None:
                async with gate:
                    await self._grant(http, random.Random())

            await asyncio.gather(*(one() for _ in range(keys)))
            await asyncio.gather(*(rerunner() for _ in range(rerunners)))
        assert len(self.keys) >= keys, self.unexpected[:5]
        assert len(self.rerunners) >= rerunners, self.unexpected[:5]
        return self.since

    def run(
        self,
        url: str,
        *,
        clients: int,
        seconds: float,
        kill: Callable[[], None] | None = None,
        kill_after: float = 0.0,
    ) -> float:
        """``clients`` concurrent clients for ``seconds`` (or until ``kill``, called after
        ``kill_after`` seconds, has killed the server: the clients then stop, and what was in
        flight is unknown); return the seconds it took."""
        return run_loop(self._run(url, clients, seconds, kill, kill_after))

    async def _run(
        self,
        url: str,
        clients: int,
        seconds: float,
        kill: Callable[[], None] | None,
        kill_after: float,
    ) -> float:
        self.rounds += 1
        self._stop = stop = asyncio.Event()
        started = time.monotonic()
        until = started + seconds
        handle = None
        if kill is not None:

            def killed() -> None:
                kill()
                stop.set()

            handle = asyncio.get_running_loop().call_later(kill_after, killed)
        await asyncio.gather(*(self._client(n, url, until, stop) for n in range(clients)))
        if handle is not None:
            handle.cancel()
        return time.monotonic() - started

    async def _client(self, n: int, url: str, until: float, stop: asyncio.Event) -> None:
        rng = random.Random(f"{self.seed}-{self.rounds}-{n}")
        limits = httpx.Limits(max_connections=1, max_keepalive_connections=1)
        async with httpx.AsyncClient(base_url=url, timeout=self.timeout, limits=limits) as http:
            while not stop.is_set() and time.monotonic() < until:
                op = rng.choices(self._ops, self._weights)[0]
                await op(http, rng)

    # --- requests ----------------------------------------------------------------------------

    async def _send(
        self,
        http: httpx.AsyncClient,
        route: str,
        method: str,
        path: str,
        *,
        content: bytes | None = None,
        headers: dict[str, str] | None = None,
    ) -> httpx.Response | None:
        started = time.perf_counter()
        try:
            response = await http.request(method, path, content=content, headers=headers)
        except httpx.HTTPError as exc:
            self.failures[route][type(exc).__name__] += 1
            return None
        self.latency[route].append(time.perf_counter() - started)
        self.statuses[route][response.status_code] += 1
        return response

    def _new(self, kind: str, runs: int = 0, *, needle: str | None = None) -> Write:
        """A new write with its own marker (``needle``: what identifies the entry of a write
        whose event holds no free text, see :func:`_needles`)."""
        marker = needle or f"bpw-{self.session}-{next(self._numbers)}"
        parts = tuple(f"{marker}r{i}" for i in range(runs)) if runs else (marker,)
        write = Write(kind, marker, parts)
        self.writes.append(write)
        return write

    def _seen(self, size: int) -> None:
        self.size = max(self.size, size)

    async def _post(
        self,
        http: httpx.AsyncClient,
        write: Write,
        route: str,
        path: str,
        body: bytes,
        *,
        operator: bool = False,
        retry: bool = True,
    ) -> dict[str, Any] | None:
        """Send ``write`` (retried with the same bytes if ``retry``); its answer on a 2xx."""
        write.route = route
        headers = dict(_JSON)
        if operator:
            headers["authorization"] = f"Bearer {self.token}"
        for attempt in range(1 + (RETRIES if retry else 0)):
            if attempt and self._stop is not None and self._stop.is_set():
                break
            if attempt:
                await asyncio.sleep(0.05 * 2**attempt)
            write.attempts += 1
            response = await self._send(http, route, "POST", path, content=body, headers=headers)
            if response is None or response.status_code in (429, 503):
                continue
            write.status = response.status_code
            if response.status_code in (200, 201):
                write.outcome = "acked"
                answer: dict[str, Any] = response.json()
                index = answer.get("index")
                write.index = index if isinstance(index, int) else None
                if write.index is not None:
                    self._seen(write.index + 1)
                return answer
            write.outcome = "refused" if attempt == 0 and response.status_code < 500 else "unknown"
            self.unexpected.append(f"{route}: {response.status_code} {response.text[:300]}")
            return None
        write.outcome = "unknown"
        return None

    async def _read(self, http: httpx.AsyncClient, rng: random.Random) -> None:
        route = rng.choice(self.READS)
        size = max(self.size, 1)
        run = rng.choice(self.runs)
        if route == "GET /v1/runs/{ref}":
            path = f"/v1/runs/{run}"
        elif route == "GET /runs/{ref}":
            path = f"/runs/{run}"
        elif route == "GET /":
            path = "/"
        elif route == "GET /v1/log/entries":
            start = rng.randrange(size)
            path = f"/v1/log/entries?start={start}&end={min(size, start + 20)}"
        elif route == "GET /v1/log/proof/inclusion":
            path = f"/v1/log/proof/inclusion?index={rng.randrange(size)}&size={size}"
        elif route == "GET /v1/log/checkpoint":
            path = "/v1/log/checkpoint"
        elif route == "GET /tile/0/{n}":
            path = tile_path(size, rng.randrange(size // 256 + 1))
        else:
            path = f"/v1/attestations?subject={run}"
        response = await self._send(http, route, "GET", path)
        if response is None:
            return
        if response.status_code != 200:
            self.unexpected.append(f"GET {path}: {response.status_code} {response.text[:300]}")
        elif route == "GET /v1/log/checkpoint":
            self._seen(int(response.text.splitlines()[1]))

    async def _attest(self, http: httpx.AsyncClient, rng: random.Random) -> None:
        if not self.keys:
            await self._read(http, rng)
            return
        key = rng.choice(self.keys)
        run = rng.choice(self.runs)
        write = self._new("attestation")
        kind = rng.choice(KINDS)
        predicate: dict[str, Any] = {"kind": kind, "note": f"load {write.marker}"}
        if kind in ("reproduced", "regression-observed"):
            predicate |= {"value": rng.randint(500, 2_000_000), "unit": "ns", "statistic": "mean"}
        body = encode_envelope(sign_envelope(INTOTO_PAYLOAD_TYPE, statement(run, predicate), key))
        answer = await self._post(
            http, write, "POST /v1/runs/{ref}/attestations", f"/v1/runs/{run}/attestations", body
        )
        if answer is not None:
            self.attestations.append((answer["id"], key))

    async def _report(self, http: httpx.AsyncClient, rng: random.Random) -> None:
        run = rng.choice(self.runs)
        write = self._new("report")
        body = {"reason": rng.choice(REASONS), "text": f"load report {write.marker}"}
        answer = await self._post(
            http,
            write,
            "POST /v1/runs/{ref}/reports",
            f"/v1/runs/{run}/reports",
            json.dumps(body).encode(),
        )
        if answer is not None:
            self.reports.append(answer["id"])

    async def _ingest(self, http: httpx.AsyncClient, rng: random.Random) -> None:
        write = self._new("ingest", runs=rng.randint(1, 4))
        bundles = [
            builders.bundle(
                group=rng.randrange(14),
                author=rng.randrange(40),
                value=rng.randint(10_000, 10_000_000),
                external=part,
            )
            for part in write.parts
        ]
        body = json.dumps([{r: c.manifest for r, c in b.items()} for b in bundles]).encode()
        answer = await self._post(
            http,
            write,
            "POST /v1/ingest/{source}",
            "/v1/ingest/manifest?filename=batch.json",
            body,
            operator=True,
        )
        if answer is not None:
            self._seen(int(answer["size"]))
            digests = [b["run"].digest for b in bundles]
            self.runs.extend(digests)
            self.ingested.extend(digests)

    async def _withdraw(self, http: httpx.AsyncClient, rng: random.Random) -> None:
        if not self.attestations:
            await self._attest(http, rng)
            return
        attestation, key = self.attestations.pop(rng.randrange(len(self.attestations)))
        write = self._new("withdrawal")
        body = signed_event(
            AttestationWithdrawn(attestationId=attestation, reason=write.marker), key
        )
        await self._post(
            http,
            write,
            "POST /v1/attestations/{id}/withdrawal",
            f"/v1/attestations/{attestation}/withdrawal",
            body,
            retry=False,  # a second withdrawal of the same one is 409, not its first answer
        )

    async def _hide(self, http: httpx.AsyncClient, rng: random.Random) -> None:
        if not self.attestations:
            await self._attest(http, rng)
            return
        attestation, _ = self.attestations.pop(rng.randrange(len(self.attestations)))
        write = self._new("hide")
        await self._post(
            http,
            write,
            "POST /v1/attestations/{id}/hidden",
            f"/v1/attestations/{attestation}/hidden",
            json.dumps({"reason": f"load {write.marker}"}).encode(),
            operator=True,
            retry=False,
        )

    async def _register(self, http: httpx.AsyncClient, rng: random.Random) -> None:
        key = await self._registered(http)
        if key is not None:
            self.keys.append(key)

    async def _registered(self, http: httpx.AsyncClient) -> SigningKey | None:
        """A new community key, registered (challenge, then its own signed registration), or
        None when that was refused or got no answer."""
        key = SigningKey.generate()
        issued = await self._send(
            http,
            "POST /v1/keys/challenges",
            "POST",
            "/v1/keys/challenges",
            content=json.dumps({"keyId": key.key_id}).encode(),
            headers=_JSON,
        )
        if issued is None:
            return None
        if issued.status_code != 201:
            self.unexpected.append(f"POST /v1/keys/challenges: {issued.status_code} {issued.text}")
            return None
        write = self._new("registration")
        event = KeyRegistered(
            keyId=key.key_id,
            publicKey=base64.b64encode(key.public.raw).decode("ascii"),
            role="community",
            name=write.marker,
            challenge=issued.json()["challenge"],
        )
        answer = await self._post(
            http, write, "POST /v1/keys", "/v1/keys", signed_event(event, key), retry=False
        )
        return None if answer is None else key

    async def _rerun(self, http: httpx.AsyncClient, rng: random.Random) -> None:
        if not self.ingested:
            await self._ingest(http, rng)
            return
        run = rng.choice(self.ingested)
        write = self._new("rerun")
        answer = await self._post(
            http,
            write,
            "POST /v1/runs/{ref}/reruns",
            f"/v1/runs/{run}/reruns",
            json.dumps({"reason": f"load {write.marker}"}).encode(),
            operator=True,
            retry=False,  # the same request in another millisecond is another request
        )
        if answer is not None:
            self.open_requests.append((answer["id"], run))

    async def _grant(self, http: httpx.AsyncClient, rng: random.Random) -> None:
        """Register a new key, then the operator grants it the rerunner role."""
        key = await self._registered(http)
        if key is None:
            return
        write = self._new("grant", needle=f"grant-{key.key_id}")
        answer = await self._post(
            http,
            write,
            "POST /v1/keys/{id}/grants",
            f"/v1/keys/{key.key_id}/grants",
            json.dumps({"role": "rerunner"}).encode(),
            operator=True,
            retry=False,  # a second grant is 409: the key is a rerunner already
        )
        if answer is not None:
            self.rerunners.append(key)

    async def _claim(self, http: httpx.AsyncClient, rng: random.Random) -> None:
        """A rerunner claims a pending request (its own, so no other client claims it too) for
        half an hour."""
        if not self.rerunners:
            await self._grant(http, rng)
            return
        if not self.open_requests:
            await self._rerun(http, rng)
            return
        request, run = self.open_requests.pop(rng.randrange(len(self.open_requests)))
        key = rng.choice(self.rerunners)
        write = self._new("claim", needle=f"claim-{request}-{key.key_id}")
        event = RerunClaimedV2(
            runDigest=run,
            requestId=request,
            worker=key.key_id,
            leaseUntil=format_instant(datetime.now(UTC) + timedelta(minutes=30)),
            environment=GPU,
        )
        answer = await self._post(
            http,
            write,
            "POST /v1/reruns/{id}/claim",
            f"/v1/reruns/{request}/claim",
            signed_event(event, key),  # the same claim again is its entry (200)
        )
        if answer is not None:
            self.claimed.append((request, run, key))

    async def _result(self, http: httpx.AsyncClient, rng: random.Random) -> None:
        """The claimer posts what it measured for a request it holds."""
        if not self.claimed:
            await self._claim(http, rng)
            return
        request, run, key = self.claimed.pop(rng.randrange(len(self.claimed)))
        write = self._new("result")
        body = {
            "_type": "https://in-toto.io/Statement/v1",
            "subject": [{"name": run, "digest": {"sha256": run.removeprefix("sha256:")}}],
            "predicateType": RERUN_PREDICATE_V2,
            "predicate": {
                "requestId": request,
                "samples": [float(rng.randint(10_000, 10_000_000)) for _ in range(8)],
                "correctness": {"passed": True, "detail": f"load {write.marker}"},
                "environment": GPU,
                "harness": {"name": "reliability-traffic", "version": "1"},
            },
        }
        payload = json.dumps(body).encode()
        await self._post(
            http,
            write,
            "POST /v1/reruns/{id}/result",
            f"/v1/reruns/{request}/result",
            encode_envelope(sign_envelope(INTOTO_PAYLOAD_TYPE, payload, key)),
        )

    async def _resolve(self, http: httpx.AsyncClient, rng: random.Random) -> None:
        """The operator resolves or dismisses an open report."""
        if not self.reports:
            await self._report(http, rng)
            return
        report = self.reports.pop(rng.randrange(len(self.reports)))
        write = self._new("resolution")
        body = {"resolution": rng.choice(("resolved", "dismissed")), "note": write.marker}
        await self._post(
            http,
            write,
            "POST /v1/reports/{id}/resolution",
            f"/v1/reports/{report}/resolution",
            json.dumps(body).encode(),
            operator=True,
            retry=False,  # a second resolution is 409
        )

    async def _revoke(self, http: httpx.AsyncClient, rng: random.Random) -> None:
        """Register a new key, then revoke it: half the time by itself (its own signed
        ``key.revoked.v1``), else by the operator (the index signs), in turn, so that a short
        round has both whatever its timing (a coin left 9 in a row to the operator once). A key
        of its own, so that no other client's write is signed by a key revoked under it."""
        key = await self._registered(http)
        if key is None:
            return
        route, path = "POST /v1/keys/{id}/revocation", f"/v1/keys/{key.key_id}/revocation"
        if next(self._revocations) % 2 == 0:
            write = self._new("revocation-self")
            body = signed_event(KeyRevoked(keyId=key.key_id, reason=write.marker), key)
            await self._post(http, write, route, path, body, retry=False)
        else:
            write = self._new("revocation-operator")
            body = json.dumps({"reason": write.marker}).encode()
            await self._post(http, write, route, path, body, operator=True, retry=False)

    # --- figures -----------------------------------------------------------------------------

    def acknowledged(self, start: int = 0) -> Counter[str]:
        """Acknowledged writes by kind (from the ``start``-th write on)."""
        return Counter(w.kind for w in self.writes[start:] if w.outcome == "acked")

    def server_errors(self) -> int:
        """5xx answers, every route."""
        return sum(n for c in self.statuses.values() for s, n in c.items() if s >= 500)

    def requests(self) -> int:
        """Requests answered (any status)."""
        return sum(sum(c.values()) for c in self.statuses.values())

    def client_failures(self) -> int:
        """Requests that got no answer (timeouts, resets, refused connections)."""
        return sum(sum(c.values()) for c in self.failures.values())

    def latency_rows(self) -> list[list[str]]:
        """Per route: requests, p50, p99, p99.9 and max latency in ms, statuses."""
        rows = []
        for route in sorted(self.latency):
            values = self.latency[route]
            statuses = " ".join(f"{s}:{n}" for s, n in sorted(self.statuses[route].items()))
            rows.append(
                [
                    route,
                    str(len(values)),
                    *(f"{percentile(values, p) * 1000:.1f}" for p in (50, 99, 99.9)),
                    f"{max(values) * 1000:.1f}",
                    statuses,
                ]
            )
        return rows


def _entries(db: Path, since: int) -> list[tuple[int, str, str, bytes]]:
    """(seq, type, subject, payload) of every entry from ``since`` on, read-only."""
    conn = sqlite3.connect(f"file:{db}?mode=ro", uri=True)
    try:
        rows = conn.execute(
            "SELECT seq, type, subject, leaf FROM entries WHERE seq >= ? ORDER BY seq", (since,)
        ).fetchall()
    finally:
        conn.close()
    out = []
    for seq, kind, subject, leaf in rows:
        envelope = json.loads(leaf)["envelope"]
        out.append((seq, kind, subject, base64.b64decode(envelope["payload"])))
    return out


def log_size(db: Path) -> int:
    """The number of entries the log at ``db`` holds (read-only)."""
    conn = sqlite3.connect(f"file:{db}?mode=ro", uri=True)
    try:
        return int(conn.execute("SELECT count(*) FROM entries").fetchone()[0])
    finally:
        conn.close()


def checkpoint_covers(db: Path) -> str | None:
    """None when the latest signed checkpoint covers every entry (and the entries are 0…n-1
    without a gap), else what is wrong."""
    conn = sqlite3.connect(f"file:{db}?mode=ro", uri=True)
    try:
        count, top = conn.execute("SELECT count(*), coalesce(max(seq), -1) FROM entries").fetchone()
        (latest,) = conn.execute("SELECT coalesce(max(size), 0) FROM checkpoints").fetchone()
    finally:
        conn.close()
    if top != count - 1:
        return f"entries are not 0..{count - 1} (the last is {top})"
    if latest != count:
        return f"the latest checkpoint covers {latest} entries, the log holds {count}"
    return None


def _needles(kind: str, payload: bytes) -> set[str]:
    """What identifies an entry whose event holds no free text for a marker: a rerunner grant
    by its key, a claim by its request and worker (``Traffic`` grants each key once and claims
    each request once)."""
    if kind.startswith("key.granted"):
        return {f"grant-{json.loads(payload)['keyId']}"}
    if kind.startswith("rerun.claimed"):
        event = json.loads(payload)
        return {f"claim-{event['requestId']}-{event['worker']}"}
    return set()


def audit(db: Path, writes: Sequence[Write], since: int) -> Audit:
    """Check ``writes`` against the log at ``db`` from entry ``since`` on (see the module's
    docstring): every problem is named in the result."""
    where: dict[str, list[int]] = defaultdict(list)
    problems: list[str] = []
    ingested: Counter[str] = Counter()
    entries = _entries(db, since)
    for seq, kind, subject, payload in entries:
        if kind.startswith("run.ingested"):
            ingested[subject] += 1
        marks = {m.decode() for m in MARK.findall(payload)} or _needles(kind, payload)
        if not marks and kind not in EXTRA_TYPES:
            problems.append(f"entry {seq} ({kind}) was appended by no write of this traffic")
        for mark in marks:
            where[mark].append(seq)
    problems += [f"run {d} was ingested {n} times" for d, n in ingested.items() if n > 1]
    acknowledged = found = unknown = landed = 0
    for write in writes:
        seqs = [where.pop(part, []) for part in write.parts]
        counts = {len(s) for s in seqs}
        what = f"{write.kind} {write.marker} ({write.outcome}, HTTP {write.status})"
        if write.outcome == "acked":
            acknowledged += 1
            if counts != {1}:
                problems.append(f"{what} is in the log {sorted(map(len, seqs))} times")
            elif write.index is not None and seqs[0][0] != write.index:
                problems.append(f"{what} is entry {seqs[0][0]}, its answer said {write.index}")
            else:
                found += 1
        elif write.outcome == "unknown":
            unknown += 1
            if len(counts) != 1 or max(counts) > 1:
                problems.append(f"{what}: its runs are in the log {[len(s) for s in seqs]} times")
            elif counts == {1}:
                landed += 1
        elif counts != {0}:
            problems.append(f"{what} was refused but is in the log at {seqs}")
    problems += [f"marker {m} at {s} belongs to no write" for m, s in sorted(where.items())]
    return Audit(len(writes), acknowledged, found, unknown, landed, len(entries), problems)


class Server:
    """``benchproof serve`` over ``data`` in its own process group (write limits off), started
    and stopped (or killed) by the test; its output is appended to ``log``."""

    def __init__(self, data: Path, *options: object, log: Path) -> None:
        self.data = data
        self.options = options
        self.log = log
        self.proc: subprocess.Popen[bytes] | None = None
        self.url = ""

    def start(self, timeout: float = 30.0) -> str:
        """Start it and wait until ``/healthz`` answers; return its base URL."""
        since = self.log.stat().st_size if self.log.exists() else 0
        with self.log.open("ab") as out:
            self.proc = subprocess.Popen(
                serve_command(self.data, *NO_LIMITS, *self.options),
                stdout=out,
                stderr=subprocess.STDOUT,
                start_new_session=True,
            )
        self.url = wait_served(self.proc, self.log, since=since, timeout=timeout)
        return self.url

    def _tail(self) -> str:
        return self.log.read_text(errors="replace")[-2000:]

    def kill(self) -> None:
        """SIGKILL the server's whole process group now (no wait: callable from an event
        loop); ``reap`` waits for it."""
        assert self.proc is not None
        os.killpg(self.proc.pid, signal.SIGKILL)

    def reap(self) -> int:
        """Wait for the killed or stopped server; its exit status."""
        assert self.proc is not None
        code = self.proc.wait(timeout=30)
        self.proc = None
        return code

    def stop(self) -> None:
        """SIGTERM, then SIGKILL after 10 s; no-op when not running."""
        if self.proc is None:
            return
        os.killpg(self.proc.pid, signal.SIGTERM)
        try:
            self.proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            os.killpg(self.proc.pid, signal.SIGKILL)
            self.proc.wait()
        self.proc = None
