"""Golden answers: every JSON answer and page of a fixed log, as digests, to prove that a
refactor changes nothing users see (issue 26).

``build`` makes a deterministic data directory: the index and log keys from fixed seeds, a clock
that the build sets step by step (never read from the machine), the whole KernelIndex catalog
export, then what the catalog lacks, each write at its own fixed instant: a corrected export
(one run superseded, one retracted), the seed manifest (a run with an unresolved reference),
community keys (registered, granted the rerunner role, revoked by themselves or by the
operator), attestations (posted, withdrawn, hidden), reports (filed, resolved, dismissed, one
through the HTML form) and reruns (verified, replicated, disputed, pending, claimed).

``plan`` lists what a client can ask of it (``Ask``: a method, a URL, headers, a body), found by
reading the API's own answers (keyset cursors, ids), and ``crawl`` asks each in a fixed order
and keeps a fingerprint per answer: the status, a digest of the headers users see, a digest of
the body bytes as sent. ``full=False`` asks a deterministic sample of the same list (every kind
of URL, a few hundred runs).

The golden file (``GOLDEN``) holds the fingerprints of the full list, as written by
``python -m tests.golden.answers --write`` from the code before the refactor; the tests of
``test_answers_unchanged.py`` compare against it. ``python -m tests.golden.answers --check
[--fast] [--jobs N]`` does the same from the command line.

Left out, because they cannot be made the same twice or are not answers of this log:

- a registration challenge (``POST /v1/keys/challenges`` answers a random one, and the
  registration names it): the community keys are appended as ``POST /v1/keys`` appends them,
  with a fixed challenge, straight through the ledger; a refused challenge request is asked;
- the order of the methods in ``Allow`` (a 405), which litestar takes from a set: the
  fingerprint sorts them (``_normal``);
- what depends on the server's settings or kind: ``--public-url`` (every permalink here names
  the test client's ``http://testserver.local``), a mirror's unsigned answers, the PostgreSQL
  store, rate limits reached, storage faults;
- entries nothing in the API appends (``key.rotated``, ``policy.changed`` after genesis,
  ``citation.notarized``), the demo's CPU run (measured on the machine) and the other importers'
  corpora;
- the vendored API viewer's own files under ``/static/openapi/<version>/`` (``/schema``, its
  page, and ``docs.js`` are asked), and the CLI.
"""

from __future__ import annotations

import argparse
import base64
import collections
import concurrent.futures
import contextlib
import copy
import gzip
import hashlib
import json
import logging
import multiprocessing
import os
import re
import sys
import tempfile
import time
from collections.abc import Callable, Iterable, Iterator, Mapping
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any
from urllib.parse import quote, urlencode, urlsplit

import msgspec
from litestar import Litestar
from litestar.testing import TestClient

from events.entries import EVENT_PAYLOAD_TYPE, INTOTO_PAYLOAD_TYPE
from events.types import EVENT_ENCODER, AttestationWithdrawn, KeyRegistered, KeyRevoked
from events.types import RerunClaimedV2 as RerunClaimed
from keys import SigningKey, encode_envelope, sign_envelope, write_private_key

# Our service, through its entry points only (issue 26 moved these modules; nothing else here
# names a module of ``service``).
from service.app.ingest import ingest
from service.core.config import Settings
from service.core.init import init_data_dir
from service.core.ledger import Ledger
from service.web.app import create_app
from service.web.logs import configure_logging
from tests.builders import signed_event
from tests.corpora import CATALOG, catalog_tables, corpus, shared_file

__all__ = [
    "GOLDEN",
    "Ask",
    "Difference",
    "World",
    "build",
    "collect",
    "compare",
    "crawl",
    "load",
    "plan",
    "write",
]

GOLDEN = Path(__file__).with_name("answers-catalog.json.gz")
FORMAT = "benchproof golden answers v1"

Client = TestClient[Litestar]

# --- Fixed inputs ------------------------------------------------------------------------------

GENESIS = datetime(2026, 8, 16, 6, 0, tzinfo=UTC)
CATALOG_AT = datetime(2026, 8, 16, 7, 0, tzinfo=UTC)
COMMUNITY_AT = datetime(2026, 8, 17, 9, 0, tzinfo=UTC)  # the first write after the catalog
STEP = timedelta(minutes=1)  # between two writes of the community part
SERVED_AFTER = timedelta(minutes=30)  # the crawl's clock, after the last write (a claim)
LEASE = timedelta(minutes=59)

TOKEN = "bp_golden-operator-token-not-a-secret"  # a fixed token of a throwaway data directory
BEARER = {"authorization": f"Bearer {TOKEN}"}
CHALLENGE = "golden-fixed-challenge-no-server-issued-it"
CITATION_FORMATS = ("text", "bibtex", "biblatex", "csl-json", "receipt")
COMMUNITY = ("alice", "bob", "carol", "dave", "eve", "frank")
# The runs of one comparison group that the community part is about, best first.
ROLES = ("leader", "second", "third", "fourth", "fifth", "sixth", "seventh")

# Answer headers that vary per request (or per machine), left out of the fingerprint.
VARYING_HEADERS = frozenset({"date", "x-request-id", "server-timing", "server"})
# A static file's validators are its file's modification time in the checkout (litestar's
# static files), which a clone or a checkout sets, not the code.
FILE_HEADERS = frozenset({"last-modified", "etag"})

_CONDITIONAL_RUN = "sha256:b7465fd62c307e4206d49fc48687c772e978633250666c7143101169aa20c0b8"
_CONDITIONAL_KEY = "6cb7989d1e0b9a20abfaacb71f2e0a6bdf42b0c4ca0cea97dd92e84637e8f9ed"
CHANGED_ON_PURPOSE = {
    "/schemas/attestation/v1": "issue 30: the predicate's schema says a value is not negative"
    " and needs its unit",
    # The home page's ETag and length, which the evidence control changes; its body is compared
    # as it was (``_as_before``), and these only carry the headers.
    "HEAD /": "issue 30: the home page's search form has an evidence control",
    "GET / [if-none-match]": "issue 30: the home page's ETag changed with its form",
    "GET / [if-none-match weak, listed]": "issue 30: the home page's ETag changed with its form",
    # A run page's ETag and length, which the receipt's file name in its text changes; its
    # body is compared as it was (``_as_before``), and these only carry the headers.
    f"HEAD /runs/{_CONDITIONAL_RUN}": "issue 30: the run page names the receipt's file",
    f"GET /runs/{_CONDITIONAL_RUN} [if-none-match]": "issue 30: the run page's ETag changed",
    f"GET /runs/{_CONDITIONAL_RUN} [if-none-match weak, listed]": "issue 30: the run page's"
    " ETag changed",
    f"HEAD /keys/{_CONDITIONAL_KEY}": "issue 30: a key's page links the index of keys",
    f"GET /keys/{_CONDITIONAL_KEY} [if-none-match]": "issue 30: the key page's ETag changed",
    f"GET /keys/{_CONDITIONAL_KEY} [if-none-match weak, listed]": "issue 30: the key page's"
    " ETag changed",
    "/schema/openapi.json": "issue 26: the OpenAPI document comes from the routes (each run "
    "resource its own path, corrected response types and descriptions)",
}
"""Answers that a change asked for by its issue makes differ from the golden file's (not
compared; listed with why)."""

# The fast tier: how many runs (besides the build's own), groups and pages of each listing.
FAST_RUNS = 150
FAST_PAGES = 2
AS_OF_RUNS = 50
FAST_AS_OF_RUNS = 10


def seeded_key(name: str) -> SigningKey:
    return SigningKey.from_seed(hashlib.sha256(f"benchproof golden key: {name}".encode()).digest())


class Clock:
    """The build's clock: the instant the build last set."""

    def __init__(self, now: datetime) -> None:
        self.now = now

    def __call__(self) -> datetime:
        return self.now


# --- Asking ------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Ask:
    """One request. ``subject`` (a run digest or a group key) is where the golden file files it
    (its URL with the subject written ``{s}``); ``note`` tells apart requests of one URL."""

    kind: str
    url: str
    method: str = "GET"
    headers: tuple[tuple[str, str], ...] = ()
    body: bytes | None = None
    subject: str = ""
    note: str = ""

    @property
    def name(self) -> str:
        """The request as the golden file names it: the URL of a plain GET, else the method,
        the URL and the note."""
        if self.method == "GET" and not self.note:
            return self.url
        return f"{self.method} {self.url}" + (f" [{self.note}]" if self.note else "")

    @property
    def template(self) -> str:
        return self.name.replace(self.subject, "{s}") if self.subject else self.name


def _normal(name: str, value: str) -> str:
    """A header's value as the fingerprint takes it. ``Allow`` lists its methods in their
    sorted order: litestar lists them from a set, in an order that changes from one process to
    the next (string hashing), so today's code cannot pin it."""
    if name == "allow":
        return ", ".join(sorted(m.strip() for m in value.split(",")))
    return value


def fingerprint(
    status: int, headers: Iterable[tuple[str, str]], body: bytes, *, file: bool = False
) -> str:
    """``<status>:<8 hex of the headers' SHA-256>:<16 hex of the body's>``; the headers are those
    users see (not ``VARYING_HEADERS``), by name, in their order within one name."""
    kept = sorted(
        (
            (k.lower(), v)
            for k, v in headers
            if k.lower() not in VARYING_HEADERS and not (file and k.lower() in FILE_HEADERS)
        ),
        key=lambda kv: kv[0],
    )
    head = "".join(f"{k}: {_normal(k, v)}\n" for k, v in kept).encode("utf-8", "surrogateescape")
    return (
        f"{status}:{hashlib.sha256(head).hexdigest()[:8]}:{hashlib.sha256(body).hexdigest()[:16]}"
    )


@dataclass
class Answer:
    status: int
    headers: list[tuple[str, str]]
    body: bytes

    @property
    def fingerprint(self) -> str:
        return fingerprint(self.status, self.headers, self.body)

    def json(self) -> Any:
        return msgspec.json.decode(self.body)


def send(client: Client, ask: Ask) -> Answer:
    """Ask, and take the answer as sent: the body's bytes before any decoding (a tile bundle
    stays gzipped), no redirect followed."""
    with client.stream(
        ask.method,
        ask.url,
        headers=dict(ask.headers),
        content=ask.body,
        follow_redirects=False,
    ) as response:
        body = b"".join(response.iter_raw())
        return Answer(response.status_code, list(response.headers.multi_items()), body)


@dataclass
class Recorded:
    """What the golden file keeps of one ask (the kind is for reports, not stored)."""

    ask: Ask
    fingerprint: str


# Issue 30 added the evidence control to the home page's search form (one line): the golden
# file's home pages are those of before, so the line is taken out of a home page (and its
# length and ETag made those of what is left) before it is compared. The results are compared
# as they were.
_EVIDENCE_FIELD = re.compile(rb'    <div class="field" id="evidence-field">[^\n]*\n')


# Issue 30: a receipt downloads under a name that carries its run and day, and the run page
# says so; compared as they were.
_RECEIPT_NAME = re.compile(
    r'attachment; filename="benchproof-receipt-[0-9a-f]{12}-[0-9-]{10}\.txt"'
)
_RECEIPT_SENTENCE = re.compile(
    rb"benchproof verify-citation benchproof-receipt-[0-9a-f]{12}-YYYY-MM-DD\.txt --log-key"
    rb" log\.vkey</code> \(the file is named after the run and the day you downloaded it\)"
)
_RECEIPT_BEFORE = b"benchproof verify-citation citation-receipt.txt --log-key log.vkey</code>"


# Issue 30: a key's page links the index of keys (``/keys``); compared as it was.
_ALL_KEYS = b'  <p class="muted" id="all-keys"><a href="/keys">All signing keys</a></p>\n'


def _as_before(ask: Ask, answer: Answer) -> Answer:
    if answer.status == 200 and urlsplit(ask.url).path.startswith("/keys/"):
        body = answer.body.replace(_ALL_KEYS, b"", 1)
        if body != answer.body:
            return _rebodied(answer, body)
    if answer.status == 200 and any(_RECEIPT_NAME.fullmatch(v) for _, v in answer.headers):
        headers = [
            (k, 'attachment; filename="citation-receipt.txt"' if _RECEIPT_NAME.fullmatch(v) else v)
            for k, v in answer.headers
        ]
        return Answer(answer.status, headers, answer.body)
    if answer.status == 200 and urlsplit(ask.url).path.startswith("/runs/"):
        body = _RECEIPT_SENTENCE.sub(_RECEIPT_BEFORE, answer.body, count=1)
        if body != answer.body:
            return _rebodied(answer, body)
    if urlsplit(ask.url).path != "/" or answer.status != 200:
        return answer
    body = _EVIDENCE_FIELD.sub(b"", answer.body, count=1)
    if body == answer.body:
        return answer
    return _rebodied(answer, body)


def _rebodied(answer: Answer, body: bytes) -> Answer:
    """``answer`` with the body it had before, its length and ETag with it."""
    from service.web.caching import etag_of

    def header(name: str, value: str) -> str:
        if name.lower() == "content-length":
            return str(len(body))
        return etag_of(body) if name.lower() == "etag" else value

    headers = [(k, header(k, v)) for k, v in answer.headers]
    return Answer(answer.status, headers, body)


def record(client: Client, ask: Ask, out: list[Recorded]) -> Answer:
    answer = send(client, ask)
    static = ask.url.startswith("/static/")
    seen = _as_before(ask, answer)
    out.append(Recorded(ask, fingerprint(seen.status, seen.headers, seen.body, file=static)))
    return answer


# --- The data directory ------------------------------------------------------------------------


@dataclass
class World:
    """The built data directory and what the build knows of it."""

    root: Path
    served_at: datetime
    sizes: dict[str, int] = field(default_factory=dict)  # after each phase
    instants: dict[str, str] = field(default_factory=dict)  # each phase's recording time
    runs: dict[str, str] = field(default_factory=dict)  # role -> run digest
    aliases: dict[str, str] = field(default_factory=dict)  # role -> kernelindex:<row id>
    group: str = ""  # the comparison group the community part is about
    keys: dict[str, str] = field(default_factory=dict)  # name -> key id
    attestations: dict[str, str] = field(default_factory=dict)
    reports: dict[str, str] = field(default_factory=dict)
    reruns: dict[str, str] = field(default_factory=dict)
    writes: list[Recorded] = field(default_factory=list)  # the answers to the build's writes


def _instant(moment: datetime) -> str:
    return moment.strftime("%Y-%m-%dT%H:%M:%SZ")


def _write_secrets(root: Path) -> None:
    """The index and log keys from fixed seeds (the files ``init`` loads when they exist) and
    the operator token's hash, as ``benchproof token create`` keeps it."""
    folder = root / "keys"
    folder.mkdir(parents=True, mode=0o700)
    write_private_key(folder / "index.key", seeded_key("index"))
    write_private_key(folder / "log.key", seeded_key("log"))
    tokens = root / "tokens.json"
    fd = os.open(tokens, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    with os.fdopen(fd, "w") as fh:
        json.dump({hashlib.sha256(TOKEN.encode()).hexdigest(): "golden"}, fh)


def _pick(tables: Mapping[str, list[dict[str, Any]]]) -> tuple[str, list[dict[str, Any]]]:
    """The comparison group the community part is about: the first (by key) whose best seven
    passed latency runs in ns on named hardware have seven distinct values; its rows, best first."""
    groups: dict[str, list[dict[str, Any]]] = collections.defaultdict(list)
    for row in tables["benchmark_runs"]:
        if (
            row["status"] == "passed"
            and row["primaryMetric"] == "latency"
            and row["primaryUnit"] == "ns"
            and row["hardwareModel"]
            and row["primaryValue"]
            and not row["supersedesId"]
            and not row["retractedAt"]
        ):
            groups[row["comparisonKey"]].append(row)
    for key in sorted(groups):
        rows = sorted(groups[key], key=lambda r: (r["primaryValue"], r["runDigest"]))
        if len({r["primaryValue"] for r in rows[: len(ROLES)]}) == len(ROLES):
            return key, rows
    raise AssertionError("no comparison group of the catalog fits the community part")


def _corrections(
    tables: Mapping[str, list[dict[str, Any]]], leader: dict[str, Any], gone: dict[str, Any]
) -> bytes:
    """A later export of the catalog: the leader's row corrected (its latency three times what
    it was: a new run, superseding it) and another row retracted."""
    corrected = copy.deepcopy(leader)
    timing = corrected["manifest"]["run"]["spec"]["timing"]
    statistic = timing["primaryStatistic"]
    timing["latencyNs"][statistic] = timing["latencyNs"][statistic] * 3
    corrected["primaryValue"] = timing["latencyNs"][statistic]
    retracted = copy.deepcopy(gone)
    retracted["retractedAt"] = "2026-08-16T12:00:00.000Z"
    retracted["retractionReason"] = "withdrawn by its submitter"
    lines = [{"table": "sources", "row": row} for row in tables["sources"]]
    lines += [{"table": "benchmark_runs", "row": row} for row in (corrected, retracted)]
    return b"".join(msgspec.json.encode(line) + b"\n" for line in lines)


def _signed(payload_type: str, payload: bytes, key: SigningKey) -> bytes:
    return encode_envelope(sign_envelope(payload_type, payload, key))


def _event(event: Any, key: SigningKey) -> bytes:
    return _signed(EVENT_PAYLOAD_TYPE, EVENT_ENCODER.encode(event), key)


def _statement(run: str, predicate_type: str, predicate: dict[str, Any], key: SigningKey) -> bytes:
    hex_digest = run.removeprefix("sha256:")
    body = {
        "_type": "https://in-toto.io/Statement/v1",
        "subject": [{"name": f"/runs/{run}", "digest": {"sha256": hex_digest}}],
        "predicateType": predicate_type,
        "predicate": predicate,
    }
    return _signed(INTOTO_PAYLOAD_TYPE, msgspec.json.encode(body), key)


def _register(ledger: Ledger, clock: Clock, name: str) -> SigningKey:
    """A community key registers itself. Appended as ``POST /v1/keys`` appends it, with a fixed
    challenge: the server issues random ones, which would make the log differ each time."""
    key = seeded_key(name)
    event = KeyRegistered(
        keyId=key.key_id,
        publicKey=base64.b64encode(key.public.raw).decode(),
        role="community",
        name=name,
        challenge=CHALLENGE,
    )
    clock.now += STEP
    ledger.append_pending([signed_event(event, key.key_id, key)])
    return key


class _Writer:
    """The build's writes over HTTP, each at its own instant; their answers are recorded."""

    def __init__(self, client: Client, clock: Clock, world: World) -> None:
        self.client = client
        self.clock = clock
        self.world = world

    def post(
        self,
        kind: str,
        url: str,
        body: bytes,
        *,
        operator: bool = False,
        form: bool = False,
        note: str = "",
        expect: int = 201,
    ) -> Any:
        self.clock.now += STEP
        headers = dict(BEARER) if operator else {}
        headers["content-type"] = (
            "application/x-www-form-urlencoded" if form else "application/json"
        )
        # Each write is named by its place among the build's writes too: two writes of one URL
        # (two attestations of a run) are two answers of the golden file, not one.
        note = f"write {len(self.world.writes) + 1}" + (f": {note}" if note else "")
        ask = Ask(f"write: {kind}", url, "POST", tuple(sorted(headers.items())), body, note=note)
        answer = record(self.client, ask, self.world.writes)
        if answer.status != expect:
            raise AssertionError(f"{ask.name}: {answer.status} {answer.body[:300]!r}")
        return answer.json() if not form else None

    def json(self, kind: str, url: str, value: Any, **kw: Any) -> Any:
        return self.post(kind, url, msgspec.json.encode(value), **kw)

    def get(self, url: str) -> Any:
        answer = send(self.client, Ask("build read", url))
        if answer.status != 200:
            raise AssertionError(f"{url}: {answer.status} {answer.body[:300]!r}")
        return answer.json()


def _community(w: _Writer, keys: dict[str, SigningKey], rows: list[dict[str, Any]]) -> None:
    world, runs = w.world, w.world.runs
    w.post(
        "ingest",
        "/v1/ingest/kernelindex-catalog?filename=kernelindex-corrections.jsonl",
        _corrections(catalog_tables(), rows[0], rows[5]),
        operator=True,
        expect=200,
    )
    w.post(
        "ingest",
        "/v1/ingest/manifest?filename=seed-manifest.json",
        shared_file("seed-manifest.json").read_bytes(),
        operator=True,
        expect=200,
    )
    listed = w.get(f"/v1/runs?comparisonKey={world.group}&limit=1000")["items"]
    known = {r["runDigest"] for r in rows}
    (runs["corrected"],) = [i["runDigest"] for i in listed if i["runDigest"] not in known]
    for name in ("carol", "dave"):
        w.json("grant", f"/v1/keys/{keys[name].key_id}/grants", {"role": "rerunner"}, operator=True)

    attest = "https://benchproof.dev/attestation/v1"
    value = rows[1]["primaryValue"]
    for label, run, author, predicate in (
        (
            "reproduced",
            "second",
            "alice",
            {"kind": "reproduced", "value": value * 1.01, "unit": "ns"},
        ),
        ("note", "second", "bob", {"kind": "environment-note", "note": "driver 580 on the B200"}),
        ("could-not", "third", "alice", {"kind": "could-not-reproduce", "note": "2x slower here"}),
        (
            "regression",
            "third",
            "bob",
            {
                "kind": "regression-observed",
                "statistic": "median",
                "value": value * 2,
                "unit": "ns",
            },
        ),
    ):
        body = _statement(runs[run], attest, predicate, keys[author])
        world.attestations[label] = w.post(
            "attestation", f"/v1/runs/{runs[run]}/attestations", body
        )["id"]
    withdrawal = AttestationWithdrawn(
        attestationId=world.attestations["could-not"], reason="my machine was throttled"
    )
    w.post(
        "withdrawal",
        f"/v1/attestations/{world.attestations['could-not']}/withdrawal",
        _event(withdrawal, keys["alice"]),
    )
    w.json(
        "hiding",
        f"/v1/attestations/{world.attestations['regression']}/hidden",
        {"reason": "off-topic"},
        operator=True,
    )

    for label, run, reason in (
        ("open", "second", "incorrect-result"),
        ("resolved", "third", "weak-correctness-check"),
        ("dismissed", "fifth", "duplicate"),
    ):
        text = f"golden report: {label}"
        filed = w.json("report", f"/v1/runs/{runs[run]}/reports", {"reason": reason, "text": text})
        world.reports[label] = filed["id"]
    form = urlencode({"reason": "other", "text": "filed through the page's form"}).encode()
    w.post("report form", f"/runs/{runs['fourth']}/reports", form, form=True, expect=303)
    for label, resolution in (("resolved", "resolved"), ("dismissed", "dismissed")):
        w.json(
            "resolution",
            f"/v1/reports/{world.reports[label]}/resolution",
            {"resolution": resolution, "note": f"golden: {resolution}"},
            operator=True,
        )

    eve, frank = keys["eve"], keys["frank"]
    w.post(
        "revocation",
        f"/v1/keys/{eve.key_id}/revocation",
        _event(KeyRevoked(keyId=eve.key_id, reason="lost the laptop"), eve),
    )
    w.json(
        "revocation",
        f"/v1/keys/{frank.key_id}/revocation",
        {"reason": "impersonation"},
        operator=True,
    )

    # Reruns: verified then replicated (two rerunners), disputed, one left pending, and one
    # claimed last, whose lease still runs when the crawl asks.
    for label, run, worker, factor in (
        ("second verified", "second", "carol", 1.0),
        ("second replicated", "second", "dave", 1.01),
        ("third disputed", "third", "carol", 2.0),
        ("fifth verified", "fifth", "dave", 0.995),
        ("fourth pending", "fourth", None, None),
        ("seventh claimed", "seventh", "dave", None),
    ):
        digest = runs[run]
        request_id = w.json(
            "rerun request",
            f"/v1/runs/{digest}/reruns",
            {"reason": f"golden: {label}"},
            operator=True,
        )["id"]
        world.reruns[label] = request_id
        if worker is None:
            continue
        (item,) = [i for i in w.get("/v1/reruns")["items"] if i["requestId"] == request_id]
        environment = {k: item["needs"][k] for k in ("kind", "model", "architecture")}
        claim = RerunClaimed(
            runDigest=digest,
            requestId=request_id,
            worker=keys[worker].key_id,
            leaseUntil=(w.clock.now + STEP + LEASE).strftime("%Y-%m-%dT%H:%M:%S.000Z"),
            environment=environment,
        )
        w.post("rerun claim", f"/v1/reruns/{request_id}/claim", _event(claim, keys[worker]))
        if factor is None:
            continue
        reported = next(r["primaryValue"] for r in rows if r["runDigest"] == digest)
        predicate = {
            "requestId": request_id,
            "samples": [reported * factor * s for s in (0.98, 0.99, 1.0, 1.01, 1.02)],
            "correctness": {"passed": True, "detail": "max abs error 1e-3 against fp32"},
            "environment": environment,
            "harness": {"name": "golden-harness", "version": "1"},
        }
        body = _statement(digest, "https://benchproof.dev/rerun/v2", predicate, keys[worker])
        w.post("rerun result", f"/v1/reruns/{request_id}/result", body)


def build(root: Path) -> World:
    """Make the data directory ``root`` (absent) and return what the crawl needs of it."""
    configure_logging(logging.WARNING)  # no line per request (the crawl makes 100,000)
    logging.getLogger("httpx").setLevel(logging.WARNING)
    _write_secrets(root)
    clock = Clock(GENESIS)
    world = World(root, served_at=GENESIS)
    ledger, _ = init_data_dir(root, clock=clock)
    try:
        world.sizes["genesis"] = ledger.store.size
        world.instants["genesis"] = _instant(GENESIS)
        clock.now = CATALOG_AT
        result, rejected = ingest(ledger, "kernelindex-catalog", [corpus(*CATALOG)])
        if rejected or result.runs_appended != 7857 + 722:
            raise AssertionError(f"the catalog did not import whole: {result}, {rejected[:3]}")
        world.sizes["catalog"] = ledger.store.size
        world.instants["catalog"] = _instant(CATALOG_AT)
        tables = catalog_tables()
        world.group, rows = _pick(tables)
        for role, row in zip(ROLES, rows[: len(ROLES)], strict=True):
            world.runs[role] = row["runDigest"]
            world.aliases[role] = f"kernelindex:{row['id']}"
        world.runs["seed"] = (
            "sha256:5195388fd7c6a80d3089edc96ddebce288cc1703b1bfb949d3c9ca2c2c6fd74b"
        )
        clock.now = COMMUNITY_AT
        world.instants["community"] = _instant(COMMUNITY_AT)
        keys = {name: _register(ledger, clock, name) for name in COMMUNITY}
        world.keys = {name: key.key_id for name, key in keys.items()}
        world.keys["index"] = seeded_key("index").key_id
        world.keys["log"] = seeded_key("log").key_id
        world.sizes["registered"] = ledger.store.size
        app = create_app(Settings(data=root), ledger=ledger)
        with TestClient(app=app) as client:
            writer = _Writer(client, clock, world)
            # The log holds the keys of the fixed seeds (``init`` loaded the files), no others.
            registered = {k["keyId"] for k in writer.get("/v1/keys")["items"]}
            if registered != set(world.keys.values()):
                raise AssertionError(f"the log's keys are not the seeded ones: {registered}")
            _community(writer, keys, rows)
        world.sizes["final"] = ledger.store.size
        world.instants["middle"] = _instant(COMMUNITY_AT + 20 * STEP)
        world.served_at = clock.now + SERVED_AFTER
    finally:
        ledger.close()
    return world


# --- Serving and planning ----------------------------------------------------------------------


@contextlib.contextmanager
def serve(world: World) -> Iterator[Client]:
    """The app over the built directory, as a fresh server opens it, on the crawl's clock."""
    ledger = Ledger.open(world.root, clock=lambda: world.served_at)
    try:
        with TestClient(app=create_app(Settings(data=world.root), ledger=ledger)) as client:
            yield client
    finally:
        ledger.close()


def _spread(values: Iterable[str]) -> list[str]:
    """``values`` in a fixed order that is no order of theirs (by SHA-256): a sample's start."""
    return sorted(values, key=lambda v: hashlib.sha256(v.encode()).hexdigest())


def tile_index(n: int) -> str:
    """``n`` as C2SP tlog-tiles writes a tile index: zero-padded groups of three digits, all but
    the last prefixed with ``x``."""
    groups = []
    while True:
        groups.append(f"{n % 1000:03d}")
        n //= 1000
        if n == 0:
            break
    groups.reverse()
    return "/".join([*(f"x{g}" for g in groups[:-1]), groups[-1]])


def _q(value: str) -> str:
    return quote(value, safe="")


SEARCHES = ("softmax", "gemm", "attention", "GQA", "llama", "b200", "no-such-run-anywhere")
LEVELS = (
    "reported",
    "reproducible",
    "verified",
    "replicated",
    "disputed",
    "retracted",
    "superseded",
)
ERRORS = (
    "/v1/runs/sha256:" + "0" * 64,
    "/v1/runs/nope",
    "/v1/runs/unknown-source:1",
    "/v1/runs?evidenceLevel=great",
    "/v1/runs?source=no-such-source",
    "/v1/runs?after=not-a-cursor",
    "/v1/runs?limit=0",
    "/v1/runs?asOf=2026-08-16",
    "/v1/runs?asOf=99999999",
    "/v1/groups/sha256:" + "0" * 64,
    "/v1/compare?runs=nope",
    "/v1/keys/" + "0" * 64,
    "/v1/keys/zzz",
    "/v1/attestations?kind=liked",
    "/v1/attestations?subject=nope",
    "/v1/attestations/sha256:" + "0" * 64,
    "/v1/reruns?state=asleep",
    "/v1/reruns/sha256:" + "0" * 64 + "/bundle",
    "/v1/log/entries?start=99999999",
    "/v1/log/proof/inclusion?index=99999999",
    "/v1/log/proof/consistency?old=5&new=2",
    "/v1/citations/check?run=nope&digest=x&accessed=yesterday",
    "/v1/nothing-here",
    "/runs/sha256:" + "0" * 64,
    "/runs/nope",
    "/groups/sha256:" + "0" * 64,
    "/keys/" + "0" * 64,
    "/log?before=0",
    "/log?asOf=soon",
    "/?after=not-a-cursor",
    "/no-such-page",
    "/schema/no-such-doc",
    "/tile/0/x000/001",
    "/tile/0/01",
    "/tile/0/000.p/0",
    "/tile/9/999",
    "/static/no-such-file.css",
)
STATIC = (
    "/healthz",
    "/schema",
    "/schema/openapi.json",
    "/schemas/attestation/v1",
    "/static/style.css",
    "/static/copy.js",
    "/static/openapi/docs.js",
)


class _Planner:
    def __init__(self, client: Client, world: World, full: bool) -> None:
        self.client = client
        self.world = world
        self.full = full
        self.asks: dict[str, Ask] = {}

    def add(self, kind: str, url: str, **kw: Any) -> Ask:
        ask = Ask(kind, url, **kw)
        self.asks.setdefault(ask.name, ask)
        return ask

    def read(self, url: str) -> Answer:
        answer = send(self.client, Ask("plan", url))
        if answer.status != 200:
            raise AssertionError(f"{url}: {answer.status} {answer.body[:300]!r}")
        return answer

    def follow(
        self, kind: str, first: str, link: Callable[[Any], str | None], pages: int | None
    ) -> list[Any]:
        """Ask ``first`` and the pages its answers link to (``link``: the next URL, or None),
        at most ``pages`` of them (None: every one); return the answers read."""
        read: list[Any] = []
        url: str | None = first
        while url is not None and (pages is None or len(read) < pages):
            self.add(kind, url)
            read.append(self.read(url).json())
            url = link(read[-1])
        return read

    def pages(self, fast: int) -> int | None:
        return None if self.full else fast


def _after(base: str) -> Callable[[Any], str | None]:
    joiner = "&" if "?" in base else "?"
    return lambda page: f"{base}{joiner}after={_q(page['next'])}" if page.get("next") else None


def plan(client: Client, world: World, *, full: bool) -> list[Ask]:
    """Every request of the crawl (``full``), or its sample, in the order they are asked."""
    p = _Planner(client, world, full)
    runs = world.runs
    size = world.sizes["final"]
    second, group = runs["second"], world.group

    # Every run, from the API's own listing (the build's runs among them).
    items = [
        item
        for page in p.follow(
            "runs: listing by 1000", "/v1/runs?limit=1000", _after("/v1/runs?limit=1000"), None
        )
        for item in page["items"]
    ]
    by_digest = {item["runDigest"]: item for item in items}
    special = [d for d in runs.values() if d in by_digest]
    others = [d for d in _spread(by_digest) if d not in set(special)]
    chosen = special + (others if full else others[:FAST_RUNS])
    for digest in chosen:
        for kind, template in (
            ("run: dossier", "/v1/runs/{s}"),
            ("run: page", "/runs/{s}"),
            ("run: history", "/v1/runs/{s}/history"),
            ("run: history page", "/runs/{s}/history"),
            ("run: manifest", "/v1/runs/{s}/manifest"),
            *(
                (f"run: citation {f}", f"/v1/runs/{{s}}/citation?format={f}")
                for f in CITATION_FORMATS
            ),
        ):
            p.add(kind, template.replace("{s}", digest), subject=digest)
    # The other spellings of a reference, for the build's runs.
    for role, digest in runs.items():
        item = by_digest[digest]
        refs = [
            item["shortId"],
            f"{item['source']}:{item['externalId']}" if item.get("externalId") else None,
            world.aliases.get(role),
        ]
        # A reference holding "/" (``<source>:submission/7``), also sent percent-encoded.
        refs += [quote(r, safe=":") for r in filter(None, refs) if "/" in r]
        for ref in filter(None, refs):
            p.add("run: dossier by reference", f"/v1/runs/{ref}", subject=digest)
            p.add("run: page by reference", f"/runs/{ref}", subject=digest)
        p.add("run: citation (default format)", f"/v1/runs/{digest}/citation", subject=digest)
        p.add("run: history by reference", f"/v1/runs/{item['shortId']}/history", subject=digest)

    # Groups: every comparison group and serving cohort (of the runs chosen).
    keys = sorted(
        {
            k
            for d in chosen
            for k in (by_digest[d].get("comparisonKey"), by_digest[d].get("cohortKey"))
            if k
        }
    )
    for key in keys:
        p.add("group: JSON", f"/v1/groups/{key}", subject=key)
        p.add("group: page", f"/groups/{key}", subject=key)
        p.add("group: history", f"/v1/groups/{key}/history", subject=key)

    # The search: the default listing and the home page, every keyset page; queries, filters.
    p.follow("runs: listing", "/v1/runs", _after("/v1/runs"), p.pages(FAST_PAGES + 1))
    by_fifty = p.follow(
        "runs: listing by 50",
        "/v1/runs?limit=50",
        _after("/v1/runs?limit=50"),
        p.pages(FAST_PAGES + 1),
    )
    p.add("home page", "/")
    for page in by_fifty[:-1]:
        p.add("home page", f"/?after={_q(page['next'])}")
    sources = sorted({i["source"] for i in items})
    hardware = sorted({i["hardware"] for i in items if i.get("hardware")})
    for q in SEARCHES:
        p.add("runs: search", "/v1/runs?" + urlencode({"q": q}))
        p.add("home page: search", "/?" + urlencode({"q": q}))
    for source in sources:
        p.add("runs: by source", "/v1/runs?" + urlencode({"source": source}))
        p.add("home page: by source", "/?" + urlencode({"source": source}))
    for name in hardware:
        p.add("runs: by hardware", "/v1/runs?" + urlencode({"hardware": name}))
        p.add("home page: by hardware", "/?" + urlencode({"hardware": name}))
    for level in LEVELS:
        p.add("runs: by evidence", f"/v1/runs?evidenceLevel={level}")
    p.add("runs: by group", f"/v1/runs?comparisonKey={group}")
    p.add(
        "runs: search",
        "/v1/runs?" + urlencode({"q": "attention", "hardware": hardware[0], "limit": 5}),
    )
    p.add(
        "home page: search",
        "/?" + urlencode({"q": "attention", "source": sources[0], "hardware": hardware[0]}),
    )
    p.follow("runs: listing by 1", "/v1/runs?limit=1", _after("/v1/runs?limit=1"), 3)

    # Compare.
    short = {role: by_digest[d]["shortId"] for role, d in runs.items()}
    for names in (
        ("second", "third"),
        ("leader", "corrected"),
        ("second", "seed"),
        ("second", "third", "fourth", "corrected"),
    ):
        joined = ",".join(short[n] for n in names)
        p.add("compare: JSON", f"/v1/compare?runs={joined}")
        p.add("compare: page", f"/compare?runs={joined}")
    p.add("compare: JSON", f"/v1/compare?runs={runs['second']},{runs['fifth']}")
    p.add("compare: page", "/compare")

    # The log: key, checkpoints, entries, proofs, its pages, tiles.
    for url in (
        "/v1/log/key",
        "/v1/log/checkpoint",
        "/checkpoint",
        f"/v1/log/entries?start={size - 5}",
    ):
        p.add("log", url)
    p.follow("log: entries", "/v1/log/entries", lambda page: page.get("next"), p.pages(FAST_PAGES))
    indices = sorted({*range(0, size, 61), size - 1})
    for index in indices if full else indices[::16]:
        p.add("log: inclusion proof", f"/v1/log/proof/inclusion?index={index}&size={size}")
    for index in (0, world.sizes["catalog"] - 1, size - 1):
        p.add("log: inclusion proof", f"/v1/log/proof/inclusion?index={index}")
        p.add("log: inclusion proof", f"/v1/log/proof/inclusion?index={index}&size={index + 1}")
    for old in (
        1,
        world.sizes["genesis"],
        4000,
        world.sizes["catalog"],
        world.sizes["registered"],
        size - 1,
    ):
        p.add("log: consistency proof", f"/v1/log/proof/consistency?old={old}&new={size}")
        p.add("log: consistency proof", f"/v1/log/proof/consistency?old={old}")
    befores = list(range(size - 20, 0, -20))
    p.add("log page", "/log")
    for before in befores if full else [*befores[:FAST_PAGES], befores[-1]]:
        p.add("log page", f"/log?before={before}")
    full_tiles, width = divmod(size, 256)
    for n in range(full_tiles) if full else range(min(full_tiles, FAST_PAGES)):
        p.add("tile", f"/tile/0/{tile_index(n)}")
        p.add("tile: entries", f"/tile/entries/{tile_index(n)}")
    if width:
        p.add("tile", f"/tile/0/{tile_index(full_tiles)}.p/{width}")
        p.add("tile: entries", f"/tile/entries/{tile_index(full_tiles)}.p/{width}")
    p.add("tile", f"/tile/1/000.p/{full_tiles}")
    p.add("tile", "/tile/0/000.p/1")
    p.add("tile", "/tile/0/000.p/255")
    p.add("tile: entries", "/tile/entries/000.p/7")
    p.add(
        "tile: entries",
        "/tile/entries/000",
        headers=(("accept-encoding", "identity"),),
        note="identity",
    )

    # Keys, attestations, reports (in the dossiers), reruns, citations.
    p.add("keys", "/v1/keys")
    for _name, key_id in sorted(world.keys.items()):
        p.add("key: JSON", f"/v1/keys/{key_id}")
        p.add("key: page", f"/keys/{key_id}")
        base = f"/v1/keys/{key_id}/entries"
        p.follow("key: entries", base, _after(base), p.pages(FAST_PAGES))
    p.add("attestations", "/v1/attestations")
    p.add("attestations", f"/v1/attestations?subject={second}")
    p.add("attestations", "/v1/attestations?kind=reproduced")
    p.add("attestations", f"/v1/attestations?attester={world.keys['alice']}")
    p.follow("attestations", "/v1/attestations?limit=1", _after("/v1/attestations?limit=1"), None)
    for attestation in world.attestations.values():
        p.add("attestation", f"/v1/attestations/{attestation}")
    p.add("reruns", "/v1/reruns")
    for state in ("pending", "claimed", "completed"):
        p.add("reruns", f"/v1/reruns?state={state}")
    for request_id in world.reruns.values():
        p.add("rerun: bundle", f"/v1/reruns/{request_id}/bundle")
    day = world.served_at.date().isoformat()
    for run, digest, accessed in (
        (world.aliases["leader"], runs["leader"], day),
        (world.aliases["leader"], runs["corrected"], day),
        (short["second"], second, day),
        (short["second"], runs["third"], day),
        (short["second"], second, "2026-08-01"),
    ):
        p.add(
            "citation check",
            "/v1/citations/check?"
            + urlencode({"run": run, "digest": digest, "accessed": accessed}),
        )
    for role in ("second", "leader"):
        receipt = p.read(f"/v1/runs/{runs[role]}/citation?format=receipt").body
        p.add(
            "citation verify",
            "/v1/citations/verify",
            method="POST",
            body=receipt,
            note=f"receipt of {role}",
        )
    tampered = receipt.replace(b"evidence: ", b"evidence: x", 1)
    p.add("citation verify", "/v1/citations/verify", method="POST", body=tampered, note="tampered")

    # Writes refused for what they say (nothing appended; a challenge is left out: its value
    # is random).
    json_type = (("content-type", "application/json"),)
    for url, body, note in (
        (f"/v1/runs/{second}/attestations", b"not json", "not an envelope"),
        (f"/v1/runs/{second}/reports", b'{"reason": "boring", "text": "x"}', "unknown reason"),
        (f"/v1/runs/{second}/reports", b'{"reason": "other", "reason": "x"}', "repeated member"),
        (f"/v1/runs/{second}/likes", b"{}", "no such resource"),
        ("/v1/ingest/manifest?filename=x.json", b"{}", "no token"),
        (f"/v1/runs/{second}/reruns", b'{"reason": "x"}', "no token"),
        ("/v1/keys/challenges", b'{"keyId": "ABC"}', "malformed key id"),
        (f"/v1/reruns/{world.reruns['second verified']}/claim", b"{}", "not an envelope"),
        (
            f"/v1/attestations/{world.attestations['could-not']}/withdrawal",
            b"{}",
            "not an envelope",
        ),
    ):
        p.add("refused write", url, method="POST", headers=json_type, body=body, note=note)

    # asOf: sizes and instants, on a sample of runs and on the views around them.
    as_ofs = [
        str(world.sizes["genesis"]),
        "4000",
        str(world.sizes["catalog"]),
        str(world.sizes["registered"]),
        str(size),
        "2026-08-16T06:30:00Z",
        world.instants["middle"],
    ]
    sample = (special + others[:AS_OF_RUNS]) if full else (special + others[:FAST_AS_OF_RUNS])
    for at in as_ofs:
        for digest in sample:
            p.add("asOf: dossier", f"/v1/runs/{digest}?asOf={at}", subject=digest)
            p.add("asOf: page", f"/runs/{digest}?asOf={at}", subject=digest)
            p.add("asOf: history", f"/v1/runs/{digest}/history?asOf={at}", subject=digest)
        for kind, url in (
            ("asOf: listing", f"/v1/runs?asOf={at}"),
            ("asOf: home page", f"/?asOf={at}"),
            ("asOf: log page", f"/log?asOf={at}"),
            ("asOf: checkpoint", f"/v1/log/checkpoint?asOf={at}"),
            ("asOf: group", f"/v1/groups/{group}?asOf={at}"),
            ("asOf: group page", f"/groups/{group}?asOf={at}"),
            ("asOf: group history", f"/v1/groups/{group}/history?asOf={at}"),
            ("asOf: attestations", f"/v1/attestations?asOf={at}"),
            ("asOf: compare", f"/v1/compare?runs={short['second']},{short['third']}&asOf={at}"),
            ("asOf: log entries", f"/v1/log/entries?start=0&end=3&asOf={at}"),
        ):
            p.add(kind, url)

    for url in STATIC:
        p.add("service", url)
    for url in ERRORS:
        p.add("error", url)
    p.add("error", "/v1/runs", method="DELETE", note="method not allowed")
    p.add("error", "/log", method="POST", note="method not allowed")

    # HEAD, and conditional GETs (304), on a few of each kind.
    for url in (
        f"/v1/runs/{second}",
        f"/runs/{second}",
        f"/v1/runs/{second}/manifest",
        f"/v1/groups/{group}",
        "/",
        "/v1/runs",
        "/v1/log/checkpoint",
        "/checkpoint",
        "/tile/0/000",
        "/tile/entries/000",
        f"/keys/{world.keys['alice']}",
    ):
        p.add("HEAD", url, method="HEAD")
        answer = p.read(url)
        etag = dict((k.lower(), v) for k, v in answer.headers)["etag"]
        p.add("conditional GET", url, headers=(("if-none-match", etag),), note="if-none-match")
        p.add(
            "conditional GET",
            url,
            headers=(("if-none-match", f'"other", W/{etag}'),),
            note="if-none-match weak, listed",
        )
    p.add("conditional GET", "/v1/runs", headers=(("if-none-match", "*"),), note="if-none-match *")
    p.add(
        "conditional GET",
        "/v1/runs",
        headers=(("if-none-match", '"other"'),),
        note="if-none-match other",
    )

    return sorted(p.asks.values(), key=lambda a: a.name)


def crawl(client: Client, asks: Iterable[Ask]) -> list[Recorded]:
    out: list[Recorded] = []
    for ask in asks:
        record(client, ask, out)
    return out


@dataclass
class Collected:
    records: list[Recorded]
    build_seconds: float
    crawl_seconds: float
    size: int


def collect(parent: Path, *, full: bool, jobs: int = 1) -> Collected:
    """Build the data directory in ``parent`` (a new folder), plan and crawl it. With ``jobs``
    over 1, that many processes each build their own (the same) data directory and crawl every
    ``jobs``-th request of the plan; their answers to the build's writes must agree."""
    if jobs > 1:
        return _collect_in(parent, full, jobs)
    started = time.perf_counter()
    world = build(parent / "data")
    built = time.perf_counter()
    with serve(world) as client:
        records = crawl(client, plan(client, world, full=full))
    return Collected(
        [*world.writes, *records],
        built - started,
        time.perf_counter() - built,
        world.sizes["final"],
    )


def _shard(parent: str, full: bool, shard: int, shards: int) -> tuple[Collected, list[Recorded]]:
    """One process's part of ``collect``: its own build, every ``shards``-th request."""
    started = time.perf_counter()
    world = build(Path(parent) / f"data-{shard}")
    built = time.perf_counter()
    with serve(world) as client:
        records = crawl(client, plan(client, world, full=full)[shard::shards])
    took = Collected(records, built - started, time.perf_counter() - built, world.sizes["final"])
    return took, world.writes


def _collect_in(parent: Path, full: bool, jobs: int) -> Collected:
    started = time.perf_counter()
    # Spawned, not forked: a fork would copy this process's threads and open databases.
    context = multiprocessing.get_context("spawn")
    with concurrent.futures.ProcessPoolExecutor(jobs, mp_context=context) as pool:
        futures = [pool.submit(_shard, str(parent), full, n, jobs) for n in range(jobs)]
        parts = [future.result() for future in futures]
    writes = [[(r.ask.name, r.fingerprint) for r in w] for _, w in parts]
    if any(w != writes[0] for w in writes):
        raise AssertionError("the processes' builds answered their writes differently")
    records = [r for part, _ in parts for r in part.records]
    records.sort(key=lambda r: r.ask.name)
    build_seconds = max(part.build_seconds for part, _ in parts)
    return Collected(
        [*parts[0][1], *records],
        build_seconds,
        time.perf_counter() - started - build_seconds,
        parts[0][0].size,
    )


# --- The golden file ---------------------------------------------------------------------------


def _named_once(records: Iterable[Recorded]) -> None:
    """Each answer is filed under its request's name: two requests of one name would be one."""
    names = collections.Counter(r.ask.name for r in records)
    if twice := sorted(name for name, n in names.items() if n > 1):
        raise AssertionError(f"requests asked twice under one name: {twice[:5]}")


def document(collected: Collected) -> dict[str, Any]:
    """The golden file's content: each answer's fingerprint, under its subject's templates or
    by its name, and how many of each kind."""
    answers: dict[str, str] = {}
    subjects: dict[str, dict[str, str]] = collections.defaultdict(dict)
    counts: collections.Counter[str] = collections.Counter()
    _named_once(collected.records)
    for r in collected.records:
        counts[r.ask.kind] += 1
        if r.ask.subject:
            subjects[r.ask.subject][r.ask.template] = r.fingerprint
        else:
            answers[r.ask.name] = r.fingerprint
    return {
        "format": FORMAT,
        "written by": "python -m tests.golden.answers --write",
        "treeSize": collected.size,
        "counts": dict(sorted(counts.items())),
        "answers": answers,
        "subjects": subjects,
    }


def write(collected: Collected, path: Path = GOLDEN) -> bytes:
    data = json.dumps(document(collected), sort_keys=True, separators=(",", ":")).encode()
    packed = gzip.compress(data + b"\n", compresslevel=9, mtime=0)
    path.write_bytes(packed)
    return packed


def load(path: Path = GOLDEN) -> dict[str, Any]:
    doc: dict[str, Any] = json.loads(gzip.decompress(path.read_bytes()))
    if doc.get("format") != FORMAT:
        raise ValueError(f"{path} is not a {FORMAT} file")
    return doc


def flatten(doc: Mapping[str, Any]) -> dict[str, str]:
    """Every answer's fingerprint by its request's name."""
    flat = dict(doc["answers"])
    for subject, templates in doc["subjects"].items():
        for template, value in templates.items():
            flat[template.replace("{s}", subject)] = value
    return flat


@dataclass(frozen=True)
class Difference:
    kind: str
    name: str
    golden: str | None
    now: str | None

    def __str__(self) -> str:
        if self.golden is None:
            return f"{self.kind}: {self.name}: not in the golden file (now {self.now})"
        if self.now is None:
            return f"{self.kind}: {self.name}: in the golden file ({self.golden}), not asked now"
        was, now = self.golden.split(":"), self.now.split(":")
        parts = [
            f"{label} {'differs' if label != 'status' else f'{was[0]} -> {now[0]}'}"
            for label, a, b in zip(("status", "headers", "body"), was, now, strict=True)
            if a != b
        ]
        return f"{self.kind}: {self.name}: " + ", ".join(parts)


def compare(
    golden: Mapping[str, Any], records: Iterable[Recorded], *, whole: bool
) -> list[Difference]:
    """The answers that differ from the golden file's, in the order asked; with ``whole``, also
    the requests the golden file holds that were not asked."""
    records = list(records)
    _named_once(records)
    flat = flatten(golden)
    found, asked = [], set()
    for r in records:
        asked.add(r.ask.name)
        if r.ask.name in CHANGED_ON_PURPOSE:
            continue
        expected = flat.get(r.ask.name)
        if expected != r.fingerprint:
            found.append(Difference(r.ask.kind, r.ask.name, expected, r.fingerprint))
    if whole:
        found += [Difference("?", n, v, None) for n, v in sorted(flat.items()) if n not in asked]
    return found


def report(differences: list[Difference], shown: int = 10) -> str:
    kinds = collections.Counter(d.kind for d in differences)
    lines = [f"{len(differences)} answers differ from the golden file ({GOLDEN.name}):"]
    if any(d.name == "/checkpoint" for d in differences):
        lines.append(
            "  the log itself differs (its checkpoint): every signed answer differs with it; "
            "look first at what the build appends"
        )
    lines += [f"  {d}" for d in differences[:shown]]
    if len(differences) > shown:
        lines.append(f"  … and {len(differences) - shown} more")
    lines.append("  by kind: " + ", ".join(f"{k} {n}" for k, n in sorted(kinds.items())))
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m tests.golden.answers", description=__doc__.split("\n\n")[0]
    )
    action = parser.add_mutually_exclusive_group(required=True)
    action.add_argument(
        "--write", action="store_true", help="crawl everything, write the golden file"
    )
    action.add_argument("--check", action="store_true", help="crawl, compare with the golden file")
    parser.add_argument("--fast", action="store_true", help="with --check: the sample only")
    parser.add_argument(
        "--jobs", type=int, default=1, help="processes that crawl (default: %(default)s)"
    )
    parser.add_argument(
        "--out", type=Path, default=GOLDEN, help="with --write: where (default: %(default)s)"
    )
    args = parser.parse_args(argv)
    full = args.write or not args.fast
    with tempfile.TemporaryDirectory(prefix="golden-") as tmp:
        collected = collect(Path(tmp), full=full, jobs=args.jobs)
    counts = collections.Counter(r.ask.kind for r in collected.records)
    for kind, n in sorted(counts.items()):
        print(f"{n:7d}  {kind}")
    print(f"{len(collected.records):7d}  answers; log of {collected.size} entries")
    print(f"build {collected.build_seconds:.1f} s, plan and crawl {collected.crawl_seconds:.1f} s")
    if args.write:
        packed = write(collected, args.out)
        print(
            f"wrote {args.out} ({len(packed):,} bytes, sha256 {hashlib.sha256(packed).hexdigest()[:16]})"
        )
        return 0
    differences = compare(load(), collected.records, whole=full)
    if differences:
        print(report(differences))
        return 1
    print("every answer is as the golden file holds it")
    return 0


if __name__ == "__main__":
    sys.exit(main())
