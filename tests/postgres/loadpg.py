"""The reliability suite's traffic (``tests/reliability/traffic.py``) spread over several API
processes on one PostgreSQL store, and its audit read from that store.

:class:`SpreadTraffic` is ``traffic.Traffic`` whose clients each hold one keep-alive connection
to every process and send their operations round-robin over them. On top of its write mix it
proves what must be shared through the store: every key registration goes to another process
than the one that issued its challenge, and a *contest* op has a second rerunner claim, on
another process, a request whose lease a first rerunner holds (it must be refused, 409). A
process may be killed mid-round (:meth:`SpreadTraffic.run_spread` with ``kill``): the clients
then leave it out and go on with the others.

:func:`store_copy` copies the log's entries and checkpoint sizes, from one snapshot of the
PostgreSQL store, into a scratch SQLite file with the columns ``traffic.audit``,
``traffic.checkpoint_covers`` and ``traffic.log_size`` read; so the same audit runs on what the
PostgreSQL store holds (the data directory has no SQLite log of its own to read).
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import random
import sqlite3
import ssl
import time
from collections import Counter
from collections.abc import Callable, Iterator, Sequence
from concurrent.futures import ThreadPoolExecutor
from datetime import UTC, datetime, timedelta
from pathlib import Path

import httpx

from events.entries import format_instant
from events.stores import open_reader
from events.types import RerunClaimedV2
from service.commands.keys import signed_event
from tests.corpora import shared_file
from tests.reliability.traffic import GPU, Server, Traffic, run_loop
from tests.servers import run_cli

__all__ = [
    "SpreadTraffic",
    "cli_ok",
    "prepare_pg",
    "serve_errors",
    "serving",
    "store_copy",
    "store_entries",
]

_JSON = {"content-type": "application/json"}


def cli_ok(*args: object) -> str:
    """``benchproof ARGS…``, which must exit 0; its standard output."""
    done = run_cli(*args)
    assert done.returncode == 0, f"benchproof {args[0]}: {done.stdout[-2000:]}{done.stderr[-2000:]}"
    return done.stdout


def prepare_pg(data: Path, url: str) -> str:
    """``init`` ``data`` on the PostgreSQL store ``url`` (the data directory records it, so
    every later command and ``serve`` finds it without a flag), ingest the seed manifest, create
    an operator token; return the token."""
    cli_ok("init", "--data", data, "--store", url)
    cli_ok("ingest", "manifest", shared_file("seed-manifest.json"), "--data", data)
    return cli_ok("token", "create", "reliability-pg", "--data", data).strip().splitlines()[-1]


@contextlib.contextmanager
def serving(data: Path, count: int, *options: object, logs: Path) -> Iterator[list[Server]]:
    """``count`` ``benchproof serve --data data`` processes (``options`` after the suite's
    no-limit options: a later option wins), started together, each on its own port with its
    own log ``logs/serve-N.log``; stopped when the block ends."""
    logs.mkdir(parents=True, exist_ok=True)
    servers = [Server(data, *options, log=logs / f"serve-{n}.log") for n in range(count)]
    try:
        with ThreadPoolExecutor(count) as pool:
            list(pool.map(lambda s: s.start(60.0), servers))
        yield servers
    finally:
        for server in servers:
            server.stop()


def serve_errors(logs: Path) -> str:
    """The tracebacks the serve logs ``logs/serve-*.log`` hold (each from its first line on,
    cut at 4,000 characters), or the empty string: what to show the lead after a 5xx."""
    found = []
    for log in sorted(logs.glob("serve-*.log")):
        text = log.read_text(errors="replace")
        if "Traceback" in text:
            found.append(f"--- {log.name}\n{text[text.index('Traceback') :][:4000]}")
    return "\n".join(found)


def store_entries(url: str, since: int = 0) -> list[tuple[int, str]]:
    """``(seq, type)`` of every entry the store at ``url`` holds from ``since`` on."""
    reader = open_reader(url)
    try:
        return [(h.seq, h.type) for h in reader.headers(since, reader.refresh())]
    finally:
        reader.close()


def store_copy(url: str, path: Path) -> Path:
    """Copy ``(seq, type, subject, leaf)`` of every entry and the size of every checkpoint of
    the store at ``url``, read in one snapshot, into a new SQLite file at ``path`` (tables
    ``entries`` and ``checkpoints``, the columns the reliability audit reads); return ``path``."""
    reader = open_reader(url)
    try:
        with reader.snapshot() as session:
            entries = session.execute(
                "SELECT seq, type, subject, leaf FROM entries ORDER BY seq"
            ).fetchall()
            sizes = session.execute("SELECT size FROM checkpoints").fetchall()
    finally:
        reader.close()
    path.unlink(missing_ok=True)
    conn = sqlite3.connect(path)
    try:
        conn.execute("CREATE TABLE entries (seq INTEGER, type TEXT, subject TEXT, leaf BLOB)")
        conn.execute("CREATE TABLE checkpoints (size INTEGER)")
        conn.executemany(
            "INSERT INTO entries VALUES (?, ?, ?, ?)",
            [(int(s), t, subject, bytes(leaf)) for s, t, subject, leaf in entries],
        )
        conn.executemany("INSERT INTO checkpoints VALUES (?)", [(int(s),) for (s,) in sizes])
        conn.commit()
    finally:
        conn.close()
    return path


class SpreadTraffic(Traffic):
    """``Traffic`` over several API processes of one store (see the module's docstring)."""

    def __init__(
        self, token: str, *, seed: int, timeout: float = 30.0, write_share: float = 0.5
    ) -> None:
        super().__init__(token, seed=seed, timeout=timeout, write_share=write_share)
        self._ops.append(self._contest)
        self._weights.append(write_share * 0.04)
        self._ring: dict[int, list[httpx.AsyncClient]] = {}  # id(client) -> all, from it on
        self._dead: set[str] = set()  # base URLs of the processes killed this round
        self.per_server: Counter[str] = Counter()  # answered requests, by base URL
        self.acked_per_server: Counter[str] = Counter()  # 2xx to a POST, by base URL
        self.acked_after_kill = 0  # 2xx to a POST after this round's kill
        self.crossed = 0  # registrations acknowledged by another process than the challenge's
        self.contests: Counter[int] = Counter()  # status of each contested claim
        self.contest_problems: list[str] = []
        # One TLS context for every client (never used on plain http): httpx makes one per
        # client otherwise, some 30 ms each, which stalled the start of every round.
        self._tls = ssl.create_default_context()

    # --- the ring of processes ---------------------------------------------------------------

    def _join(self, clients: Sequence[httpx.AsyncClient]) -> None:
        for n, client in enumerate(clients):
            self._ring[id(client)] = [*clients[n:], *clients[:n]]

    def _peer(self, http: httpx.AsyncClient) -> httpx.AsyncClient:
        """The next live process after ``http``'s in the ring (``http`` itself when alone)."""
        ring = self._ring.get(id(http), [http])
        for other in ring[1:]:
            if str(other.base_url) not in self._dead:
                return other
        return http

    def _live(self, clients: Sequence[httpx.AsyncClient], turn: int) -> httpx.AsyncClient | None:
        alive = [c for c in clients if str(c.base_url) not in self._dead]
        return alive[turn % len(alive)] if alive else None

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
        """``Traffic._send``, but a key registration goes to the next process after the one
        its challenge came from (the challenge must be in the store, not in that process)."""
        target = self._peer(http) if route == "POST /v1/keys" else http
        response = await super()._send(
            target, route, method, path, content=content, headers=headers
        )
        if response is not None:
            where = str(target.base_url)
            self.per_server[where] += 1
            if method == "POST" and response.status_code in (200, 201):
                self.acked_per_server[where] += 1
                self.acked_after_kill += bool(self._dead)
                if route == "POST /v1/keys" and target is not http:
                    self.crossed += 1
        return response

    # --- set-up and rounds -------------------------------------------------------------------

    def setup_spread(self, urls: Sequence[str], *, keys: int, rerunners: int) -> int:
        """``Traffic.setup`` over every process of ``urls`` in turn; return the log's size
        before any of this traffic's writes."""
        return run_loop(self._setup_spread(list(urls), keys, rerunners))

    async def _setup_spread(self, urls: list[str], keys: int, rerunners: int) -> int:
        async with contextlib.AsyncExitStack() as stack:
            clients = [
                await stack.enter_async_context(
                    httpx.AsyncClient(base_url=u, timeout=self.timeout, verify=self._tls)
                )
                for u in urls
            ]
            self._join(clients)
            health = await clients[0].get("/healthz")
            assert health.status_code == 200, health.text
            since = int(health.json()["treeSize"])
            if self.since is None:
                self.since = since
            self.size = max(self.size, since)
            seed = await clients[-1].get("/v1/runs/sol-execbench:165")
            assert seed.status_code == 200, seed.text
            if seed.json()["runDigest"] not in self.runs:
                self.runs.append(seed.json()["runDigest"])
            gate = asyncio.Semaphore(8)

            async def one(n: int, grant: bool) -> None:
                async with gate:
                    http = clients[n % len(clients)]
                    await (self._grant if grant else self._register)(http, random.Random(n))

            await asyncio.gather(*(one(n, False) for n in range(keys)))
            await asyncio.gather(*(one(n, True) for n in range(rerunners)))
        assert len(self.keys) >= keys, self.unexpected[:5]
        assert len(self.rerunners) >= rerunners, self.unexpected[:5]
        return self.since

    def run_spread(
        self,
        urls: Sequence[str],
        *,
        clients: int,
        seconds: float,
        kill: Callable[[], None] | None = None,
        kill_after: float = 0.0,
        victim: str = "",
    ) -> float:
        """``clients`` concurrent clients over every process of ``urls`` for ``seconds``; with
        ``kill``, that is called after ``kill_after`` seconds and the process at ``victim`` is
        left out from then on (what was in flight there is unknown). The seconds it took."""
        self._dead.clear()
        self.acked_after_kill = 0
        return run_loop(self._run_spread(list(urls), clients, seconds, kill, kill_after, victim))

    async def _run_spread(
        self,
        urls: list[str],
        clients: int,
        seconds: float,
        kill: Callable[[], None] | None,
        kill_after: float,
        victim: str,
    ) -> float:
        self.rounds += 1
        self._stop = stop = asyncio.Event()
        started = time.monotonic()
        handle = None
        if kill is not None:

            def killed() -> None:
                kill()
                self._dead.add(victim)

            handle = asyncio.get_running_loop().call_later(kill_after, killed)
        until = started + seconds
        await asyncio.gather(*(self._spread_client(n, urls, until, stop) for n in range(clients)))
        if handle is not None:
            handle.cancel()
        return time.monotonic() - started

    async def _spread_client(
        self, n: int, urls: list[str], until: float, stop: asyncio.Event
    ) -> None:
        rng = random.Random(f"{self.seed}-{self.rounds}-{n}")
        limits = httpx.Limits(max_connections=1, max_keepalive_connections=1)
        async with contextlib.AsyncExitStack() as stack:
            mine = [
                await stack.enter_async_context(
                    httpx.AsyncClient(
                        base_url=u, timeout=self.timeout, limits=limits, verify=self._tls
                    )
                )
                for u in urls
            ]
            self._join(mine)
            turn = n  # client n starts on process n, then takes them in turn
            while not stop.is_set() and time.monotonic() < until:
                http = self._live(mine, turn)
                if http is None:
                    return
                turn += 1
                op = rng.choices(self._ops, self._weights)[0]
                await op(http, rng)

    # --- the contest of a held lease ---------------------------------------------------------

    async def _contest(self, http: httpx.AsyncClient, rng: random.Random) -> None:
        """Another rerunner claims, on another process, a request a first rerunner holds (its
        claim acknowledged, its lease half an hour): refused (409), nothing appended. The
        request is out of ``claimed`` meanwhile, so that no result closes it under the test."""
        holders = len({k.key_id for k in self.rerunners})
        if not self.claimed or holders < 2:
            await self._claim(http, rng)
            return
        held = self.claimed.pop(rng.randrange(len(self.claimed)))
        request, run, key = held
        other = rng.choice([k for k in self.rerunners if k.key_id != key.key_id])
        write = self._new("contest", needle=f"claim-{request}-{other.key_id}")
        write.route = "POST /v1/reruns/{id}/claim (contested)"
        event = RerunClaimedV2(
            runDigest=run,
            requestId=request,
            worker=other.key_id,
            leaseUntil=format_instant(datetime.now(UTC) + timedelta(minutes=30)),
            environment=GPU,
        )
        write.attempts = 1
        answer = await self._send(
            self._peer(http),
            write.route,
            "POST",
            f"/v1/reruns/{request}/claim",
            content=signed_event(event, other),
            headers=_JSON,
        )
        self.claimed.append(held)
        if answer is None:
            write.outcome = "unknown"
            return
        write.status = answer.status_code
        self.contests[answer.status_code] += 1
        write.outcome = "acked" if answer.status_code in (200, 201) else "refused"
        kind = answer.headers.get("content-type", "")
        if "json" in kind and answer.status_code >= 400:
            kind = str(answer.json().get("type", ""))
        if answer.status_code != 409 or not kind.endswith("/rerun-leased"):
            self.contest_problems.append(
                f"a claim of {request} held by {key.key_id[:12]}… by {other.key_id[:12]}… got "
                f"{answer.status_code}: {answer.text[:300]}"
            )

    # --- figures -----------------------------------------------------------------------------

    def figures(self) -> str:
        """One line of what this traffic did, for ``pytest -s``."""
        outcomes = Counter(w.outcome for w in self.writes)
        per = ", ".join(f"{u.rsplit(':', 1)[-1]}: {n}" for u, n in sorted(self.per_server.items()))
        return (
            f"{self.requests()} requests ({per}), {len(self.writes)} writes attempted, "
            f"{outcomes['acked']} acknowledged, {outcomes['refused']} refused, "
            f"{outcomes['unknown']} unknown; {self.server_errors()} 5xx, "
            f"{self.client_failures()} without an answer; {self.crossed} registrations on "
            f"another process than their challenge's; contested claims: {dict(self.contests)}; "
            f"acknowledged by kind: {json.dumps(dict(sorted(self.acknowledged().items())))}"
        )
