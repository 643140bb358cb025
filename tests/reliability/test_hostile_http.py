"""Issue 18, point 4 over HTTP: hostile input against a real ``benchproof serve``.

Two halves. schemathesis reads the served OpenAPI document and sends generated requests to
every operation, valid and invalid ones, then chains the operations its links connect (the
stateful phase); every answer must be under 500, every 4xx RFC 9457 problem+json, and an
invalid request must never grow the log. Then hand-made attacks on every POST endpoint, each
built from a body the endpoint takes (checked last: it is acknowledged) with one hostile
change: oversized bodies, deep nesting, huge and non-finite numbers, invalid UTF-8, duplicate
members, NUL in strings, headers and paths. Signed endpoints are attacked twice: in the
envelope, and inside the payload, signed properly by a registered key."""

from __future__ import annotations

import base64
import contextlib
import json
import socket
from collections import Counter
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from typing import Any
from urllib.parse import urlsplit

import httpx
import msgspec
import pytest
import schemathesis
from hypothesis import given, settings
from hypothesis.errors import Unsatisfiable
from hypothesis.stateful import run_state_machine_as_test
from hypothesis.strategies import SearchStrategy
from schemathesis import Case, GenerationMode

from events.entries import EVENT_PAYLOAD_TYPE, INTOTO_PAYLOAD_TYPE
from events.types import EVENT_ENCODER, AttestationWithdrawn, KeyRegistered, RerunClaimedV2
from keys.dsse import encode_envelope, sign_envelope
from keys.ed25519 import SigningKey
from service.app.attest import statement_of
from tests.corpora import shared_file
from tests.reliability.conftest import Site, open_site
from tests.reliability.report import fuzzing, record_attack, record_inputs, record_note, scale

SEED = "sha256:5195388fd7c6a80d3089edc96ddebce288cc1703b1bfb949d3c9ca2c2c6fd74b"
RERUN_V2 = "https://benchproof.dev/rerun/v2"
MAX_BODY = 64 * 1024 * 1024
HOLE = "@@hostile@@"  # stands for the attacked value until the body is serialised


@pytest.fixture(scope="module")
def site(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Site]:
    with open_site(tmp_path_factory.mktemp("hostile-http") / "data") as served:
        yield served


def tree_size(client: httpx.Client) -> int:
    size: int = client.get("/healthz").json()["treeSize"]
    return size


def problem_fault(response: httpx.Response) -> str | None:
    """What is wrong with a 4xx answer that should be RFC 9457 problem+json, or None."""
    kind = response.headers.get("content-type", "")
    if not kind.startswith("application/problem+json"):
        return f"{response.status_code} as {kind!r}, not problem+json"
    try:
        body = response.json()
    except ValueError:
        return f"{response.status_code}: problem+json that is not JSON"
    if not isinstance(body, dict):
        return f"{response.status_code}: problem+json that is not an object"
    if body.get("status") != response.status_code or not body.get("title"):
        return f"{response.status_code}: problem without a matching status and a title: {body}"
    if not isinstance(body.get("type", "about:blank"), str) or not isinstance(
        body.get("detail", ""), str
    ):
        return f"{response.status_code}: problem whose type or detail is not a string"
    return None


# --- schemathesis -------------------------------------------------------------------------


@dataclass
class Tally:
    """What the generated requests got, per operation."""

    tried: Counter[str] = field(default_factory=Counter)
    server_errors: Counter[str] = field(default_factory=Counter)
    appends: Counter[str] = field(default_factory=Counter)
    acknowledged: Counter[str] = field(default_factory=Counter)
    faults: list[str] = field(default_factory=list)

    def check(self, label: str, case: Case, response: httpx.Response, grew: int) -> None:
        negative = case.meta is not None and case.meta.generation.mode is GenerationMode.NEGATIVE
        self.tried[label] += 1
        status = response.status_code
        where = f"{label} ({'negative' if negative else 'positive'}) {case.path_parameters}"
        if status >= 500:
            self.server_errors[label] += 1
            self.faults.append(f"{where}: {status} {response.text[:300]}")
        elif 400 <= status < 500:
            fault = problem_fault(response)
            if fault is not None:
                self.faults.append(f"{where}: {fault}")
        if grew and negative:
            self.appends[label] += 1
            self.faults.append(f"{where}: invalid data appended {grew} entries ({status})")
        elif grew:
            self.acknowledged[label] += 1


def _send(site: Site, client: httpx.Client, case: Case, token: bool) -> tuple[httpx.Response, int]:
    """Send ``case`` (with the operator token when ``token``) as schemathesis built it; the
    answer and how much the log grew meanwhile."""
    headers = {"authorization": f"Bearer {site.token}"} if token else {}
    before = tree_size(client)
    response = _as_httpx(case.call(base_url=site.url, headers=headers, timeout=60))
    return response, tree_size(client) - before


def _explore(
    site: Site,
    client: httpx.Client,
    strategy: SearchStrategy[Case],
    label: str,
    examples: int,
    tally: Tally,
) -> None:
    """Send ``examples`` cases of ``strategy`` and tally what they got."""
    flip = iter(range(10**9))

    @fuzzing(examples)
    @given(case=strategy)
    def run(case: Case) -> None:
        # Every other request carries the operator token, so the operator endpoints read
        # their bodies too.
        response, grew = _send(site, client, case, token=next(flip) % 2 == 0)
        tally.check(label, case, response, grew)

    with contextlib.suppress(Unsatisfiable):  # e.g. an operation with nothing to make invalid
        run()


def test_schemathesis_every_operation_answers_4xx_problems_and_never_appends_bad_data(
    site: Site,
) -> None:
    schema = schemathesis.openapi.from_url(site.url + "/schema/openapi.json")
    operations = [result.ok() for result in schema.get_all_operations()]
    assert len(operations) >= 35, [op.label for op in operations]
    tally = Tally()
    examples = scale(3, 25)
    with httpx.Client(base_url=site.url, timeout=60) as client:
        for operation in operations:
            variants: list[tuple[GenerationMode, dict[str, Any]]] = [
                (GenerationMode.POSITIVE, {}),
                (GenerationMode.NEGATIVE, {}),
            ]
            if "ref" in operation.path:  # also aim at a run that exists
                variants.append((GenerationMode.POSITIVE, {"ref": SEED}))
            for mode, path_parameters in variants:
                strategy = operation.as_strategy(mode, path_parameters=path_parameters or None)
                _explore(site, client, strategy, operation.label, examples, tally)
    _record(tally, "schemathesis")
    record_note(
        "hostile http",
        f"schemathesis: {sum(tally.tried.values())} generated requests over "
        f"{len(operations)} operations; {sum(tally.acknowledged.values())} valid ones appended "
        f"({', '.join(f'{k} {v}' for k, v in sorted(tally.acknowledged.items())) or 'none'})",
    )
    assert not tally.faults, "\n".join(tally.faults[:20])


def _record(tally: Tally, prefix: str) -> None:
    """The tally's inputs per operation, for the summary."""
    for label in sorted(tally.tried):
        record_inputs(
            f"{prefix} {label}",
            tried=tally.tried[label],
            server_errors=tally.server_errors[label],
            appends=tally.appends[label],
        )


def test_schemathesis_stateful_links_hold_the_same_checks(site: Site) -> None:
    schema = schemathesis.openapi.from_url(site.url + "/schema/openapi.json")
    base = schema.as_state_machine()
    assert base.bundles, "schemathesis found no links between the operations"
    tally = Tally()
    client = httpx.Client(base_url=site.url, timeout=60)

    class Machine(base):  # type: ignore[misc,valid-type]
        def call(self, case: Case, **kwargs: Any) -> Any:
            before = tree_size(client)
            response = case.call(
                base_url=site.url, headers={"authorization": f"Bearer {site.token}"}
            )
            grew = tree_size(client) - before
            tally.check(case.operation.label, case, _as_httpx(response), grew)
            return response

        def validate_response(self, response: Any, case: Case, **kwargs: Any) -> None:
            return None  # the checks are the tally's

    with client:
        run_state_machine_as_test(
            Machine,
            settings=settings(fuzzing(scale(4, 40)), stateful_step_count=scale(6, 12)),
        )
    _record(tally, "schemathesis stateful")
    assert sum(tally.tried.values()) > 0
    assert not tally.faults, "\n".join(tally.faults[:20])


def _as_httpx(response: Any) -> httpx.Response:
    """schemathesis' response as an httpx one, for the shared checks."""
    headers = [
        (name, value)
        for name, values in response.headers.items()
        for value in (values if isinstance(values, list) else [values])
    ]
    return httpx.Response(response.status_code, headers=headers, content=response.content)


# --- hand-made attacks on every POST endpoint ----------------------------------------------

# Each replaces the attacked value (HOLE, a string) in a body's JSON text; ``orig`` is the
# value it stood for, JSON-encoded.
DEPTH = 100_000
VALUE_ATTACKS: dict[str, Callable[[bytes, bytes], bytes]] = {
    "huge integer 10**400": lambda orig, name: b"1" + b"0" * 400,
    "huge float 1e999": lambda orig, name: b"1e999",
    "NaN literal": lambda orig, name: b"NaN",
    "Infinity literal": lambda orig, name: b"-Infinity",
    "deep JSON nesting": lambda orig, name: b"[" * DEPTH + b"]" * DEPTH,
    "invalid UTF-8": lambda orig, name: orig[:2] + b"\xff\xfe\xc3" + orig[2:],
    "lone surrogate": lambda orig, name: orig[:2] + b"\\ud800" + orig[2:],
    "duplicate JSON key": lambda orig, name: orig + b',"' + name + b'":' + orig[:-1] + b'-twin"',
    "NUL escaped in a string": lambda orig, name: orig[:2] + b"\\u0000" + orig[2:],
    "raw NUL byte in a string": lambda orig, name: orig[:2] + b"\x00" + orig[2:],
}


def _json(value: Any) -> bytes:
    return json.dumps(value, ensure_ascii=False, separators=(",", ":")).encode()


def _hostile(template: Any, name: str, orig: str, attack: str) -> bytes:
    """``template`` (whose attacked field ``name`` holds HOLE) with ``attack`` in that place."""
    text = _json(template)
    assert text.count(_json(HOLE)) == 1
    if attack == "":
        return text.replace(_json(HOLE), _json(orig))
    return text.replace(_json(HOLE), VALUE_ATTACKS[attack](_json(orig), name.encode()))


@dataclass
class Target:
    """One POST endpoint: its path, whether it needs the operator token, and the body it
    takes with one field open to attack (``build(attack)``: "" is the valid body)."""

    route: str
    path: str
    build: Callable[[str], bytes]
    token: bool = False
    expect: tuple[int, ...] = (200, 201)
    content_type: str = "application/json"
    control: bool = True  # send the valid body after the attacks


@dataclass
class World:
    """The keys and records the attacks aim at, made through the API itself."""

    site: Site
    client: httpx.Client
    members: dict[str, Any] = field(default_factory=dict)

    def post(self, path: str, body: bytes, *, token: bool = False) -> httpx.Response:
        headers = {"content-type": "application/json"}
        if token:
            headers["authorization"] = f"Bearer {self.site.token}"
        return self.client.post(path, content=body, headers=headers)

    def register(self, key: SigningKey, name: str) -> None:
        answer = self.post("/v1/keys/challenges", _json({"keyId": key.key_id}))
        assert answer.status_code == 201, answer.text
        event = registration(key, name, answer.json()["challenge"])
        answer = self.post(
            "/v1/keys", envelope(EVENT_PAYLOAD_TYPE, EVENT_ENCODER.encode(event), key)
        )
        assert answer.status_code == 201, answer.text


def registration(key: SigningKey, name: str, challenge: str) -> KeyRegistered:
    return KeyRegistered(
        keyId=key.key_id,
        publicKey=base64.b64encode(key.public.raw).decode(),
        role="community",
        name=name,
        challenge=challenge,
    )


def envelope(payload_type: str, payload: bytes, key: SigningKey) -> bytes:
    return encode_envelope(sign_envelope(payload_type, payload, key))


def event_template(event: Any, name: str) -> tuple[dict[str, Any], str]:
    """The event's JSON as a dict in its field order, with ``name`` opened to attack."""
    value: dict[str, Any] = msgspec.json.decode(EVENT_ENCODER.encode(event))
    orig = value[name]
    value[name] = HOLE
    return value, orig


def signed_targets(
    route: str, path: str, payload_type: str, template: Any, name: str, orig: str, key: SigningKey
) -> list[Target]:
    """A signed endpoint attacked in its envelope (``payloadType``) and inside its payload."""

    def inner(attack: str) -> bytes:
        return envelope(payload_type, _hostile(template, name, orig, attack), key)

    def outer(attack: str) -> bytes:
        good = json.loads(inner(""))
        wanted = good["payloadType"]
        good["payloadType"] = HOLE
        return _hostile(good, "payloadType", wanted, attack)

    return [
        Target(f"{route} (envelope)", path, outer, control=False),
        Target(f"{route} (signed payload)", path, inner),
    ]


def targets(world: World) -> Iterator[Target]:
    """Every POST endpoint, in an order where each valid body (sent last, as the control)
    prepares the next: a key registered, granted, attesting; its attestation withdrawn…"""
    site, client = world.site, world.client
    alice, bob = SigningKey.generate(), SigningKey.generate()
    world.register(alice, "hostile-alice")

    yield Target(
        "POST /v1/keys/challenges",
        "/v1/keys/challenges",
        lambda a: _hostile({"keyId": HOLE}, "keyId", bob.key_id, a),
        expect=(201,),
    )
    challenge = world.members["challenge"]
    event, orig = event_template(registration(bob, "hostile-bob", challenge), "name")
    yield from signed_targets(
        "POST /v1/keys", "/v1/keys", EVENT_PAYLOAD_TYPE, event, "name", orig, bob
    )
    yield Target(
        "POST /v1/keys/{id}/grants",
        f"/v1/keys/{bob.key_id}/grants",
        lambda a: _hostile({"role": HOLE}, "role", "rerunner", a),
        token=True,
    )
    permalink_statement = statement_of(SEED, {"kind": "environment-note", "note": HOLE})
    yield from signed_targets(
        "POST /v1/runs/{ref}/attestations",
        f"/v1/runs/{SEED}/attestations",
        INTOTO_PAYLOAD_TYPE,
        permalink_statement,
        "note",
        "checked on a laptop",
        alice,
    )
    attestation = world.members["id"]
    event, orig = event_template(
        AttestationWithdrawn(attestationId=attestation, reason="mistaken"), "reason"
    )
    yield from signed_targets(
        "POST /v1/attestations/{id}/withdrawal",
        f"/v1/attestations/{attestation}/withdrawal",
        EVENT_PAYLOAD_TYPE,
        event,
        "reason",
        orig,
        alice,
    )
    second = world.post(
        f"/v1/runs/{SEED}/attestations",
        envelope(
            INTOTO_PAYLOAD_TYPE,
            _json(statement_of(SEED, {"kind": "environment-note", "note": "second"})),
            alice,
        ),
    )
    assert second.status_code == 201, second.text
    yield Target(
        "POST /v1/attestations/{id}/hidden",
        f"/v1/attestations/{second.json()['id']}/hidden",
        lambda a: _hostile({"reason": HOLE}, "reason", "spam", a),
        token=True,
    )
    yield Target(
        "POST /v1/runs/{ref}/reports",
        f"/v1/runs/{SEED}/reports",
        lambda a: _hostile({"reason": "other", "text": HOLE}, "text", "numbers look off", a),
    )
    report = world.members["id"]
    yield Target(
        "POST /v1/reports/{id}/resolution",
        f"/v1/reports/{report}/resolution",
        lambda a: _hostile({"resolution": "resolved", "note": HOLE}, "note", "rechecked", a),
        token=True,
    )
    yield Target(
        "POST /v1/runs/{ref}/reruns",
        f"/v1/runs/{SEED}/reruns",
        lambda a: _hostile({"reason": HOLE}, "reason", "suspicious", a),
        token=True,
    )
    request = world.members["id"]
    claim = RerunClaimedV2(
        runDigest=SEED,
        requestId=request,
        worker=bob.key_id,
        leaseUntil=(datetime.now(UTC) + timedelta(minutes=30)).strftime("%Y-%m-%dT%H:%M:%S.000Z"),
        environment={"kind": "gpu", "model": "NVIDIA B200", "architecture": "sm_100"},
    )
    event, orig = event_template(claim, "leaseUntil")
    yield from signed_targets(
        "POST /v1/reruns/{id}/claim",
        f"/v1/reruns/{request}/claim",
        EVENT_PAYLOAD_TYPE,
        event,
        "leaseUntil",
        orig,
        bob,
    )
    result = {
        "_type": "https://in-toto.io/Statement/v1",
        "subject": [{"name": SEED, "digest": {"sha256": SEED[7:]}}],
        "predicateType": RERUN_V2,
        "predicate": {
            "requestId": request,
            "samples": [1000.0, 1001.0, 999.0, 1000.5, 1000.25],
            "correctness": {"passed": True, "detail": HOLE},
            "environment": {"kind": "gpu", "model": "NVIDIA B200", "architecture": "sm_100"},
            "harness": {"name": "hostile", "version": "1"},
        },
    }
    yield from signed_targets(
        "POST /v1/reruns/{id}/result",
        f"/v1/reruns/{request}/result",
        INTOTO_PAYLOAD_TYPE,
        result,
        "detail",
        "max abs error 1e-7",
        bob,
    )
    yield Target(
        "POST /v1/keys/{id}/revocation",
        f"/v1/keys/{alice.key_id}/revocation",
        lambda a: _hostile({"reason": HOLE}, "reason", "lost laptop", a),
        token=True,
    )
    manifest: dict[str, Any] = json.loads(shared_file("seed-manifest.json").read_text())
    manifest["run"]["metadata"]["title"] = HOLE
    manifest["run"]["spec"]["observedAt"] = "2026-04-15T00:00:00.000Z"  # a new run
    yield Target(
        "POST /v1/ingest/{source}",
        "/v1/ingest/manifest?filename=run.json",
        lambda a: _hostile(manifest, "title", "a new title", a),
        token=True,
    )
    receipt = client.get(f"/v1/runs/{SEED}/citation", params={"format": "receipt"})
    yield Target(
        "POST /v1/citations/verify",
        "/v1/citations/verify",
        lambda a: _receipt_attack(receipt.content, a),
        expect=(200,),
        content_type="text/plain",
    )
    _ = site


def _receipt_attack(receipt: bytes, attack: str) -> bytes:
    """A citation receipt is text, not JSON: each attack lands in its first line."""
    if attack == "":
        return receipt
    head, _, rest = receipt.partition(b"\n")
    hostile = VALUE_ATTACKS[attack](b'"' + head + b'"', b"x")[1:-1]
    return hostile + b"\n" + rest


@dataclass
class Seen:
    """What one attack class got back, over every endpoint."""

    statuses: Counter[int] = field(default_factory=Counter)
    faults: list[str] = field(default_factory=list)

    def summary(self) -> str:
        return ", ".join(f"{n}x {s}" for s, n in sorted(self.statuses.items()))


def _attack(world: World, target: Target, attack: str, body: bytes, seen: Seen) -> tuple[int, int]:
    """Send one hostile body; (5xx answers, entries appended)."""
    headers = {"content-type": target.content_type}
    if target.token:
        headers["authorization"] = f"Bearer {world.site.token}"
    before = tree_size(world.client)
    try:
        response = world.client.post(target.path, content=body, headers=headers)
    except httpx.TransportError as exc:  # the server may close early on an oversized body
        seen.statuses[0] += 1
        seen.faults.append(f"{target.route} {attack}: no answer ({exc!r})")
        return 0, 0
    grew = tree_size(world.client) - before
    seen.statuses[response.status_code] += 1
    errors = int(response.status_code >= 500)
    if not 400 <= response.status_code < 500:
        seen.faults.append(f"{target.route} {attack}: {response.status_code} {response.text[:200]}")
    else:
        fault = problem_fault(response)
        if fault:
            seen.faults.append(f"{target.route} {attack}: {fault}")
    if grew:
        seen.faults.append(f"{target.route} {attack}: appended {grew} entries")
    return errors, grew


def test_hostile_bodies_on_every_post_endpoint_are_refused_without_an_append(site: Site) -> None:
    oversized_everywhere = scale(False, True)
    seen: dict[str, Seen] = {}
    controls: list[str] = []
    with httpx.Client(base_url=site.url, timeout=120) as client:
        world = World(site, client)
        routes = 0
        for target in targets(world):
            routes += 1
            tried = errors = appends = 0
            attacks = [(name, target.build(name)) for name in VALUE_ATTACKS]
            attacks.append(("deep JSON nesting (whole body)", b"[" * 200_000 + b"]" * 200_000))
            if oversized_everywhere or routes <= 2:
                attacks.append(("body just over 64 MiB", b" " * (MAX_BODY + 1)))
            for name, body in attacks:
                e, a = _attack(world, target, name, body, seen.setdefault(name, Seen()))
                tried, errors, appends = tried + 1, errors + e, appends + a
            record_inputs(target.route, tried=tried, server_errors=errors, appends=appends)
            # The control: the same body with nothing hostile in it is taken.
            if not target.control:
                continue
            headers = {"content-type": target.content_type}
            if target.token:
                headers["authorization"] = f"Bearer {site.token}"
            answer = client.post(target.path, content=target.build(""), headers=headers)
            if answer.status_code not in target.expect:
                controls.append(f"{target.route}: {answer.status_code} {answer.text[:300]}")
            elif answer.headers.get("content-type", "").startswith("application/json"):
                world.members.update(answer.json())
        assert routes >= 19
    for name, what in seen.items():
        record_attack(f"{name} (POST bodies)", what.summary(), ok=not what.faults)
    faults = [f for what in seen.values() for f in what.faults]
    assert not faults, "\n".join(faults[:30])
    assert not controls, "a valid body was refused, so its attacks prove nothing:\n" + "\n".join(
        controls
    )


# --- NUL and friends in headers, paths and the form ----------------------------------------


def raw_request(url: str, request: bytes) -> bytes:
    """Send ``request`` byte for byte (httpx refuses NUL in a header); the answer's head."""
    where = urlsplit(url)
    assert where.hostname is not None and where.port is not None
    with socket.create_connection((where.hostname, where.port), timeout=10) as conn:
        conn.sendall(request)
        answer = b""
        while b"\r\n\r\n" not in answer:
            chunk = conn.recv(65536)
            if not chunk:
                break
            answer += chunk
    return answer


def _status(head: bytes) -> str:
    return head.split(b" ", 2)[1].decode() if head.startswith(b"HTTP/1.1 ") else "no answer"


def test_nul_in_headers_and_paths_and_the_report_form(site: Site) -> None:
    faults: list[str] = []
    tried = 0
    with httpx.Client(base_url=site.url, timeout=30) as client:
        before = tree_size(client)
        # A percent-encoded NUL reaches the application: a 4xx problem.
        statuses = []
        for path in (
            "/v1/runs/%00/reports",
            f"/v1/runs/{SEED}%00/reports",
            "/v1/attestations/sha256:%00/withdrawal",
            "/v1/reruns/%00/claim",
            "/v1/keys/%00/grants",
            "/v1/ingest/manifest%00",
            "/v1/ingest/manifest?filename=..%2F..%2Fetc%2Fpasswd%00.json",
            "/v1/ingest/manifest?filename=" + "a" * 300 + ".json",
        ):
            tried += 1
            answer = client.post(
                path,
                content=b'{"reason":"other","text":"t"}',
                headers={"authorization": f"Bearer {site.token}"},
            )
            statuses.append(str(answer.status_code))
            if not 400 <= answer.status_code < 500 or problem_fault(answer):
                faults.append(f"POST {path}: {answer.status_code} {answer.text[:200]}")
        record_attack(
            "NUL (%00) in a path or ?filename=, overlong ?filename=",
            ", ".join(statuses),
            ok=not faults,
        )
        # NUL in a header or a raw path: refused by the HTTP layer itself (uvicorn's h11
        # answers 400 before the application sees the request, in plain text: only the status
        # is checked).
        host = urlsplit(site.url).netloc.encode()
        body = b'{"reason":"other","text":"t"}'
        heads = []
        for header in (
            b"X-Request-ID: a\x00b",
            b"Authorization: Bearer \x00" + site.token.encode(),
            b"Content-Type: application/json\x00",
        ):
            tried += 1
            request = (
                b"POST /v1/runs/" + SEED.encode() + b"/reports HTTP/1.1\r\nHost: " + host
                + b"\r\n" + header + b"\r\nContent-Length: " + str(len(body)).encode()
                + b"\r\nConnection: close\r\n\r\n" + body
            )  # fmt: skip
            heads.append(_status(raw_request(site.url, request)))
        tried += 1
        heads.append(
            _status(
                raw_request(
                    site.url,
                    b"GET /v1/runs/\x00 HTTP/1.1\r\nHost: "
                    + host
                    + b"\r\nConnection: close\r\n\r\n",
                )
            )
        )
        refused = all(h.startswith("4") for h in heads)
        if not refused:
            faults.append(f"NUL in a header or a raw path got {heads}")
        record_attack("NUL in a header or a raw path (HTTP layer)", ", ".join(heads), ok=refused)
        # The report form (HTML, form-encoded): the same refusals as the JSON API.
        form = f"/runs/{SEED}/reports"
        for name, text in (
            ("NUL in the form text", b"reason=other&text=a%00b"),
            ("invalid UTF-8 in the form text", b"reason=other&text=a%FF%FEb"),
            ("repeated form field", b"reason=other&text=a&reason=duplicate"),
        ):
            tried += 1
            answer = client.post(
                form, content=text, headers={"content-type": "application/x-www-form-urlencoded"}
            )
            ok = 400 <= answer.status_code < 500
            if not ok:
                faults.append(f"{name}: {answer.status_code} {answer.text[:200]}")
            record_attack(f"{name} (POST /runs/{{ref}}/reports)", str(answer.status_code), ok=ok)
        grew = tree_size(client) - before
    if grew:
        faults.append(f"the log grew by {grew}")
    record_inputs("headers, paths and the report form", tried=tried, appends=grew)
    assert not faults, "\n".join(faults)
