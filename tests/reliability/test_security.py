"""Issue 18, part 5: who may write what, and what the service lets out.

Against one real ``benchproof serve`` (its stdout and stderr captured in ``serve.log``): every
operator route refuses a missing, malformed or wrong token and appends nothing; no key signs for
another or acts above its role; tokens, private keys and registration challenges never reach the
request or error log, nor the console script's error output; key files are made 0600 and refused
when wider; every answer (pages, API, static files, errors, 404s) carries the security headers.
Each attack is recorded with ``record_attack`` and asserted."""

from __future__ import annotations

import base64
import hashlib
import hmac
import inspect
import json
import os
import re
import secrets
import stat
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx
import msgspec
import pytest

from events.entries import EVENT_PAYLOAD_TYPE, INTOTO_PAYLOAD_TYPE
from events.types import (
    EVENT_ENCODER,
    AttestationHidden,
    AttestationWithdrawn,
    KeyGranted,
    KeyRegistered,
    KeyRevoked,
    RerunClaimedV2,
)
from keys import SigningKey, encode_envelope, sign_envelope
from service.web import auth, guards
from tests.reliability.conftest import Site, open_site
from tests.reliability.report import record_attack, record_inputs, record_note, scale
from tests.servers import run_cli

SEED = "sha256:5195388fd7c6a80d3089edc96ddebce288cc1703b1bfb949d3c9ca2c2c6fd74b"
SHORT = SEED[7:19]
ATTESTATION = "https://benchproof.dev/attestation/v1"
RERUN_V2 = "https://benchproof.dev/rerun/v2"
GPU = {"kind": "gpu", "model": "NVIDIA B200", "architecture": "sm_100"}


# --- The world: one server, two community keys, an attestation, a report, a rerun request ----


@dataclass
class World:
    site: Site
    http: httpx.Client
    alice: SigningKey
    bob: SigningKey
    bob_attestation: str = ""
    report: str = ""
    rerun: str = ""
    challenges: list[str] = field(default_factory=list)
    # Well-formed tokens the server never issued: made with the world, so that a test that
    # sends them does not depend on another having run before it (on its xdist worker).
    wrong_tokens: list[str] = field(
        default_factory=lambda: [
            auth.PREFIX + secrets.token_urlsafe(32) for _ in range(scale(2, 12))
        ]
    )

    @property
    def log(self) -> Path:
        return self.site.data.parent / "serve.log"

    def size(self) -> int:
        size: int = self.http.get("/healthz").json()["treeSize"]
        return size

    def operator(self) -> dict[str, str]:
        return {"authorization": f"Bearer {self.site.token}"}


def _event_envelope(event: Any, key: SigningKey) -> bytes:
    return encode_envelope(sign_envelope(EVENT_PAYLOAD_TYPE, EVENT_ENCODER.encode(event), key))


def _statement(predicate_type: str, predicate: dict[str, Any], key: SigningKey) -> bytes:
    hex_digest = SEED.removeprefix("sha256:")
    body = {
        "_type": "https://in-toto.io/Statement/v1",
        "subject": [{"name": f"/runs/{SEED}", "digest": {"sha256": hex_digest}}],
        "predicateType": predicate_type,
        "predicate": predicate,
    }
    return encode_envelope(sign_envelope(INTOTO_PAYLOAD_TYPE, msgspec.json.encode(body), key))


def _challenge(world: World, key_id: str) -> str:
    r = world.http.post("/v1/keys/challenges", json={"keyId": key_id})
    assert r.status_code == 201, r.text
    value: str = r.json()["challenge"]
    world.challenges.append(value)
    return value


def _registration(key: SigningKey, name: str, challenge: str, signer: SigningKey) -> bytes:
    event = KeyRegistered(
        keyId=key.key_id,
        publicKey=base64.b64encode(key.public.raw).decode(),
        role="community",
        name=name,
        challenge=challenge,
    )
    return _event_envelope(event, signer)


def _register(world: World, key: SigningKey, name: str) -> None:
    body = _registration(key, name, _challenge(world, key.key_id), key)
    r = world.http.post("/v1/keys", content=body)
    assert r.status_code == 201, r.text


@pytest.fixture(scope="session")
def security_site(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Site]:
    """One served data directory for this file and ``test_pages_escape`` (which imports this
    fixture): setting a site up is most of their cost."""
    data = tmp_path_factory.mktemp("security") / "data"
    with open_site(data) as site:
        yield site


@pytest.fixture(scope="module")
def world(security_site: Site) -> Iterator[World]:
    site = security_site
    with httpx.Client(base_url=site.url, timeout=30) as http:
        w = World(site, http, SigningKey.generate(), SigningKey.generate())
        _register(w, w.alice, "alice")
        _register(w, w.bob, "bob")
        r = http.post(
            f"/v1/runs/{SEED}/attestations",
            content=_statement(ATTESTATION, {"kind": "reproduced", "note": "bob's"}, w.bob),
        )
        assert r.status_code == 201, r.text
        w.bob_attestation = r.json()["id"]
        r = http.post(f"/v1/runs/{SEED}/reports", json={"reason": "other", "text": "odd"})
        assert r.status_code == 201, r.text
        w.report = r.json()["id"]
        r = http.post(f"/v1/runs/{SEED}/reruns", json={"reason": "spot"}, headers=w.operator())
        assert r.status_code == 201, r.text
        w.rerun = r.json()["id"]
        yield w


def _problem(r: httpx.Response) -> str:
    """``"401 <title>"`` of a problem+json answer (asserting that it is one)."""
    assert r.headers["content-type"].startswith("application/problem+json"), r.text
    title = r.json().get("title", "")
    return f"{r.status_code} {title}"


# --- Operator routes: no valid token, no write ---------------------------------------------


def _operator_routes(world: World) -> list[tuple[str, str, dict[str, Any]]]:
    """Every POST the OpenAPI document marks with the operator token, as (template, path, body)
    with its parameters filled in so that, with a valid token, the request would append."""
    document = world.http.get("/schema/openapi.json").json()
    values = {
        "source": "manifest",
        "key_id": world.alice.key_id,
        "attestation_id": world.bob_attestation,
        "report_id": world.report,
        "ref": SEED,
    }
    bodies = {
        "/v1/ingest/{source}": {"apiVersion": "kernelindex.dev/v1alpha1"},
        "/v1/keys/{key_id}/revocation": {"reason": "attack"},
        "/v1/keys/{key_id}/grants": {"role": "rerunner"},
        "/v1/attestations/{attestation_id}/hidden": {"reason": "attack"},
        "/v1/reports/{report_id}/resolution": {"resolution": "dismissed", "note": "attack"},
        "/v1/runs/{ref}/reruns": {"reason": "attack"},
    }
    routes = []
    for template, item in document["paths"].items():
        operation = item.get("post")
        if not operation or {"operatorToken": []} not in (operation.get("security") or []):
            continue
        path = re.sub(r"\{(\w+)\}", lambda m: values[m.group(1)], template)
        routes.append((template, path, bodies[template]))
    assert len(routes) >= len(bodies), routes  # every operator route is found and attacked
    return routes


def _bad_authorizations(world: World) -> list[tuple[str, dict[str, str]]]:
    token = world.site.token
    wrong = world.wrong_tokens
    cases: list[tuple[str, dict[str, str]]] = [
        ("no Authorization", {}),
        ("empty Authorization", {"authorization": ""}),
        ("Bearer with no token", {"authorization": "Bearer "}),
        ("Basic scheme", {"authorization": "Basic " + base64.b64encode(b"op:x").decode()}),
        ("token without scheme", {"authorization": token}),
        ("token, one character short", {"authorization": f"Bearer {token[:-1]}"}),
        ("token plus a character", {"authorization": f"Bearer {token}x"}),
        ("token in another case", {"authorization": f"Bearer {token.swapcase()}"}),
        ("token's hash as token", {"authorization": f"Bearer {auth._hash(token)}"}),
        ("token in X-Api-Key", {"x-api-key": token}),
        ("Bearer with NUL", {"authorization": "Bearer \x00"}),
    ]
    cases += [(f"random token {i}", {"authorization": f"Bearer {w}"}) for i, w in enumerate(wrong)]
    return cases


def test_operator_routes_refuse_missing_malformed_and_wrong_tokens(world: World) -> None:
    routes = _operator_routes(world)
    cases = _bad_authorizations(world)
    size = world.size()
    tried = 0
    for template, path, body in routes:
        got: dict[int, int] = {}
        for label, headers in cases:
            try:
                r = world.http.post(path, json=body, headers=headers)
            except httpx.LocalProtocolError:  # a header httpx itself refuses to send
                continue
            tried += 1
            got[r.status_code] = got.get(r.status_code, 0) + 1
            _problem(r)
            # The revocation route without any Authorization is the key's own revocation,
            # which needs the key's envelope: 400, not 401.
            self_revocation = path.endswith("/revocation") and "authorization" not in headers
            ok = r.status_code == 401 or (self_revocation and r.status_code == 400)
            if r.status_code == 401:
                assert r.headers["www-authenticate"].startswith("Bearer")
            assert ok, (path, label, r.status_code, r.text)
        answers = ", ".join(f"{n}× {status}" for status, n in sorted(got.items()))
        record_attack(f"POST {template} with no valid token", answers, ok=True)
    assert world.size() == size, "an operator route appended without a valid token"
    record_inputs("operator routes: bad tokens", tried=tried, server_errors=0, appends=0)
    # The valid token does pass (the guard is not simply closed): a grant of alice.
    r = world.http.post(
        f"/v1/keys/{world.alice.key_id}/grants", json={"role": "rerunner"}, headers=world.operator()
    )
    assert r.status_code == 201, r.text
    assert world.size() == size + 1


def test_token_comparison_is_constant_time_over_hashes(
    world: World, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The check hashes the presented token and compares digests with ``hmac.compare_digest``
    (never ``==`` on the token): shown by the calls it makes, not by timing."""
    calls: list[tuple[str, str]] = []
    real = hmac.compare_digest

    def spy(a: Any, b: Any) -> bool:
        calls.append((a, b))
        return real(a, b)

    monkeypatch.setattr(auth.hmac, "compare_digest", spy)
    store = auth.TokenStore(world.site.data / "tokens.json")
    if not store.path.exists():
        candidates = [p for p in world.site.data.rglob("*token*") if p.is_file()]
        assert candidates, "no token store in the data directory"
        store = auth.TokenStore(candidates[0])
    assert store.check(world.site.token) == "reliability"
    wrong = auth.PREFIX + secrets.token_urlsafe(32)
    assert store.check(wrong) is None
    assert store.check("") is None and store.check(None) is None
    assert len(calls) >= 2
    for a, b in calls:
        assert re.fullmatch("[0-9a-f]{64}", a) and re.fullmatch("[0-9a-f]{64}", b)
        assert world.site.token not in (a, b) and wrong not in (a, b)
    assert hashlib.sha256(wrong.encode()).hexdigest() in {b for _, b in calls}
    source = inspect.getsource(auth.TokenStore.check)
    assert "compare_digest" in source and "== wanted" not in source
    # The route guard goes through that check (and nothing else decides).
    assert "tokens.check(" in inspect.getsource(guards.operator_only)
    # The token store on disk holds hashes only, and is private.
    assert world.site.token not in store.path.read_text()
    assert stat.S_IMODE(store.path.stat().st_mode) == 0o600
    record_attack("token compared with ==", "hmac.compare_digest over SHA-256 digests", ok=True)


# --- No key signs for another or acts above its role -----------------------------------------


def _attack(world: World, name: str, method_path: str, body: bytes | dict[str, Any]) -> None:
    size = world.size()
    path = method_path.split(" ", 1)[1]
    if isinstance(body, dict):
        r = world.http.post(path, json=body)
    else:
        r = world.http.post(path, content=body)
    got = _problem(r)
    ok = 400 <= r.status_code < 500 and world.size() == size
    record_attack(name, got, ok=ok)
    assert ok, (name, r.status_code, r.text)


def test_no_key_signs_for_another_or_above_its_role(world: World) -> None:
    alice, bob = world.alice, world.bob
    # An attestation signed by alice whose envelope names bob's key id.
    env = json.loads(_statement(ATTESTATION, {"kind": "reproduced"}, alice))
    env["signatures"][0]["keyid"] = bob.key_id
    _attack(
        world,
        "attestation signed by A as B",
        f"POST /v1/runs/{SEED}/attestations",
        json.dumps(env).encode(),
    )
    # Alice withdraws bob's attestation.
    withdrawal = AttestationWithdrawn(attestationId=world.bob_attestation, reason="mine now")
    _attack(
        world,
        "A withdraws B's attestation",
        f"POST /v1/attestations/{world.bob_attestation}/withdrawal",
        _event_envelope(withdrawal, alice),
    )
    # A registration of a new key, proved by alice's signature (with its own challenge).
    carol = SigningKey.generate()
    challenge = _challenge(world, carol.key_id)
    _attack(
        world,
        "registration of C signed by A",
        "POST /v1/keys",
        _registration(carol, "carol", challenge, alice),
    )
    env = json.loads(_registration(carol, "carol", challenge, alice))
    env["signatures"][0]["keyid"] = carol.key_id
    _attack(
        world, "registration of C signed by A, named C", "POST /v1/keys", json.dumps(env).encode()
    )
    # Alice registers with the challenge issued for carol.
    dave = SigningKey.generate()
    _attack(
        world,
        "registration with another key's challenge",
        "POST /v1/keys",
        _registration(dave, "dave", challenge, dave),
    )
    # Alice revokes bob, with her own envelope.
    _attack(
        world,
        "A revokes B",
        f"POST /v1/keys/{bob.key_id}/revocation",
        _event_envelope(KeyRevoked(keyId=bob.key_id, reason="x"), alice),
    )
    # A community key (bob; alice may be a rerunner by now) claims and completes a rerun.
    lease = "2099-01-01T00:00:00.000Z"
    claim = RerunClaimedV2(
        runDigest=SEED, requestId=world.rerun, worker=bob.key_id, leaseUntil=lease, environment=GPU
    )
    _attack(
        world,
        "community key claims a rerun",
        f"POST /v1/reruns/{world.rerun}/claim",
        _event_envelope(claim, bob),
    )
    predicate = {
        "requestId": world.rerun,
        "samples": [1_000_000.0] * 5,
        "correctness": {"passed": True, "detail": "fine"},
        "environment": GPU,
        "harness": {"name": "h", "version": "1"},
    }
    _attack(
        world,
        "community key posts a rerun result",
        f"POST /v1/reruns/{world.rerun}/result",
        _statement(RERUN_V2, predicate, bob),
    )
    claim_as_alice = RerunClaimedV2(
        runDigest=SEED,
        requestId=world.rerun,
        worker=alice.key_id,
        leaseUntil=lease,
        environment=GPU,
    )
    _attack(
        world,
        "claim for A's worker signed by B",
        f"POST /v1/reruns/{world.rerun}/claim",
        _event_envelope(claim_as_alice, bob),
    )
    # A key's signature in place of the operator token: hiding, granting, resolving.
    hidden = AttestationHidden(attestationId=world.bob_attestation, reason="x")
    _attack(
        world,
        "key hides an attestation (no token)",
        f"POST /v1/attestations/{world.bob_attestation}/hidden",
        _event_envelope(hidden, bob),
    )
    _attack(
        world,
        "key grants itself rerunner (no token)",
        f"POST /v1/keys/{bob.key_id}/grants",
        _event_envelope(KeyGranted(keyId=bob.key_id, role="rerunner"), bob),
    )
    _attack(
        world,
        "key resolves a report (no token)",
        f"POST /v1/reports/{world.report}/resolution",
        {"resolution": "dismissed", "note": "x"},
    )
    _attack(
        world, "key asks for a rerun (no token)", f"POST /v1/runs/{SEED}/reruns", {"reason": "x"}
    )


# --- Secrets never reach the logs ------------------------------------------------------------


def _wait_for(log: Path, marker: str) -> str:
    deadline = time.monotonic() + 10
    while True:
        text = log.read_text(errors="replace")
        if marker in text or time.monotonic() > deadline:
            return text
        time.sleep(0.1)


def test_secrets_never_reach_the_logs_or_the_cli_errors(world: World, tmp_path: Path) -> None:
    http = world.http
    key_file = tmp_path / "eve.key"
    made = run_cli("keygen", key_file, "--name", "eve")
    assert made.returncode == 0, made.stderr
    pem = key_file.read_text()
    from keys import load_private_key

    eve = load_private_key(key_file)
    secrets_: dict[str, str] = {
        "operator token": world.site.token,
        "private key PEM": pem.strip().splitlines()[1],
        "raw private key (hex)": eve.seed.hex(),
        "raw private key (base64)": base64.b64encode(eve.seed).decode(),
    }
    for i, wrong in enumerate(world.wrong_tokens[:2]):
        secrets_[f"wrong token {i}"] = wrong
    # Requests that carry the secrets: a good ingest, bad tokens, a private key as a body, a
    # registration and failing ones, errors of every kind.
    ingest = http.post("/v1/ingest/manifest", content=b"{", headers=world.operator())
    assert ingest.status_code in (400, 422), ingest.text
    for wrong in world.wrong_tokens[:2]:
        http.post("/v1/runs/x/reruns", json={"reason": "r"}, headers={"authorization": wrong})
        http.post(
            f"/v1/runs/{SEED}/reruns",
            json={"reason": "r"},
            headers={"authorization": f"Bearer {wrong}"},
        )
    for body in (pem.encode(), eve.seed, json.dumps({"privateKey": pem}).encode()):
        for path in ("/v1/keys", f"/v1/runs/{SEED}/attestations", "/v1/ingest/manifest"):
            r = http.post(path, content=body, headers=world.operator())
            assert 400 <= r.status_code < 500, (path, r.status_code)
    http.post("/v1/keys/challenges", json={"keyId": pem})
    challenge = _challenge(world, eve.key_id)
    good = _registration(eve, "eve", challenge, eve)
    assert http.post("/v1/keys", content=good).status_code == 201
    assert http.post("/v1/keys", content=good).status_code in (409, 410)  # replayed
    stranger = SigningKey.generate()
    other = _challenge(world, stranger.key_id)
    r = http.post("/v1/keys", content=_registration(stranger, "eve", other, stranger))
    assert r.status_code == 409  # the name is taken: a failing registration
    http.post("/v1/keys", content=_registration(stranger, "s", other, eve))
    http.post("/v1/keys", content=_registration(stranger, "s", "not-a-challenge", stranger))
    http.get("/nope", headers={"authorization": f"Bearer {world.site.token}"})
    http.get(f"/v1/runs/{'0' * 12}", headers={"authorization": f"Bearer {world.site.token}"})
    for i, value in enumerate(world.challenges):
        secrets_[f"challenge {i}"] = value
    # The console script's error output, with the same secrets.
    cli_errors = []
    commands: list[tuple[object, ...]] = [
        ("hide", world.bob_attestation, "--reason", "r", "--token", world.wrong_tokens[0]),
        ("keys", "grant", world.bob.key_id, "--role", "rerunner", "--token", world.wrong_tokens[0]),
        ("rerun", "request", SHORT, "--reason", "r", "--token", world.wrong_tokens[0]),
        ("keys", "register", "--key", key_file, "--name", "eve"),  # taken: a refusal
        ("attest", "nosuchrun000", "--kind", "reproduced", "--key", key_file),
    ]
    for args in scale(commands[::3], commands):
        done = run_cli(*args, "--server", world.site.url)
        assert done.returncode != 0, args
        cli_errors.append(done.stdout + done.stderr)
    marker = "end-of-secrets-" + secrets.token_hex(4)
    http.get("/healthz", headers={"x-request-id": marker})
    log = _wait_for(world.log, marker)
    assert marker in log, "the server's request log was not written"
    lines = [line for line in log.splitlines() if line.startswith("{")]
    assert lines and all(json.loads(line) for line in lines)  # structlog JSON lines
    found = [name for name, value in secrets_.items() if value in log]
    record_attack(
        "secrets in the request/error log",
        f"{len(secrets_)} secrets, {len(lines)} lines: found {found or 'none'}",
        ok=not found,
    )
    assert not found, found
    in_cli = [n for n, v in secrets_.items() for out in cli_errors if v in out]
    record_attack(
        "secrets in the CLI's error output",
        f"{len(cli_errors)} refusals: found {in_cli or 'none'}",
        ok=not in_cli,
    )
    assert not in_cli, (in_cli, cli_errors)
    record_note("security", f"log grep: {len(secrets_)} secrets over {len(lines)} log lines")


# --- Key files ---------------------------------------------------------------------------------


def test_key_files_are_made_0600_and_refused_when_wider(world: World, tmp_path: Path) -> None:
    key_file = tmp_path / "k.key"
    assert run_cli("keygen", key_file).returncode == 0
    assert stat.S_IMODE(key_file.stat().st_mode) == 0o600
    data_keys = [p for p in (world.site.data / "keys").iterdir() if p.suffix == ".key"]
    assert {p.name for p in data_keys} >= {"index.key", "log.key"}
    for p in data_keys:
        assert stat.S_IMODE(p.stat().st_mode) == 0o600, p
    assert stat.S_IMODE((world.site.data / "keys").stat().st_mode) == 0o700
    server = ("--server", world.site.url)
    uses: list[tuple[str, tuple[object, ...]]] = [
        ("keys register", ("keys", "register", "--key", key_file, "--name", "k", *server)),
        ("attest", ("attest", SHORT, "--kind", "reproduced", "--key", key_file, *server)),
        ("withdraw", ("withdraw", world.bob_attestation, "--key", key_file, *server)),
        ("keys revoke", ("keys", "revoke", world.bob.key_id, "--key", key_file, *server)),
        ("rerun-worker", ("rerun-worker", "--key", key_file, "--once", *server)),
    ]
    index_key = world.site.data / "keys" / "index.key"
    size = world.size()
    modes = scale((0o644,), (0o640, 0o644, 0o604, 0o660))
    refusals: dict[str, list[str]] = {}
    for mode in modes:
        os.chmod(key_file, mode)
        for name, args in scale(uses[:2], uses):
            done = run_cli(*args)
            lines = done.stderr.strip().splitlines()
            ok = done.returncode == 2 and len(lines) == 1 and f"(mode {mode:04o})" in lines[0]
            assert ok, (name, oct(mode), done.returncode, done.stderr)
            assert key_file.read_text() not in done.stderr
            refusals.setdefault(name, []).append(f"{mode:04o}")
        os.chmod(index_key, mode)
        try:
            done = run_cli("ingest", "manifest", "/dev/null", "--data", world.site.data)
        finally:
            os.chmod(index_key, 0o600)
        lines = done.stderr.strip().splitlines()
        ok = done.returncode == 2 and len(lines) == 1 and "index.key" in lines[0]
        assert ok, (oct(mode), done.returncode, done.stderr)
        refusals.setdefault("ingest (the index key)", []).append(f"{mode:04o}")
    for name, refused in refusals.items():
        record_attack(
            f"{name} with a key file group/others may read",
            f"exit 2, one line ('readable by group/others… chmod 600') for {', '.join(refused)}",
            ok=True,
        )
    assert world.size() == size


# --- Security headers on every answer ----------------------------------------------------------


def _directives(policy: str) -> dict[str, list[str]]:
    out = {}
    for part in policy.split(";"):
        words = part.split()
        if words:
            out[words[0]] = words[1:]
    return out


def test_security_headers_on_every_answer(world: World) -> None:
    http = world.http
    key = world.alice.key_id
    requests: list[tuple[str, str, dict[str, Any]]] = [
        ("GET", "/", {}),
        ("GET", f"/runs/{SHORT}", {}),
        ("GET", "/log", {}),
        ("GET", f"/keys/{key}", {}),
        ("GET", "/compare", {}),
        ("GET", "/schema", {}),
        ("GET", "/schema/openapi.json", {}),
        ("GET", "/schema/nope", {"headers": {"accept": "text/html"}}),
        ("GET", "/static/style.css", {}),
        ("GET", "/static/copy.js", {}),
        ("GET", "/v1/runs", {}),
        ("GET", f"/v1/runs/{SEED}", {}),
        ("GET", "/v1/log/checkpoint", {}),
        ("GET", "/checkpoint", {}),
        ("GET", "/healthz", {}),
        ("HEAD", f"/runs/{SHORT}", {}),
        ("GET", "/v1/runs?limit=nope", {}),  # 400
        ("GET", "/runs/!!", {}),  # 400 page
        ("GET", "/no/such/page", {}),  # 404 page
        ("GET", "/v1/no/such", {}),  # 404 problem
        ("GET", "/static/nope.js", {}),
        ("DELETE", "/v1/runs", {}),  # 405
        ("POST", "/v1/ingest/manifest", {"content": b"{}"}),  # 401
        (
            "POST",  # 403: a foreign Origin
            f"/runs/{SHORT}/reports",
            {"data": {"reason": "other", "text": "x"}, "headers": {"origin": "https://e.example"}},
        ),
    ]
    statuses = set()
    for method, path, extra in requests:
        r = http.request(method, path, **extra)
        statuses.add(r.status_code)
        where = f"{method} {path} ({r.status_code})"
        assert r.status_code < 500, where
        assert r.headers.get("x-content-type-options") == "nosniff", where
        assert r.headers.get("referrer-policy") == "strict-origin-when-cross-origin", where
        policy = _directives(r.headers.get("content-security-policy", ""))
        assert policy.get("script-src") == ["'self'"], where
        assert policy.get("object-src") == ["'none'"], where
        assert policy.get("frame-ancestors") == ["'none'"], where
        assert policy.get("base-uri") == ["'none'"], where
        assert "'unsafe-inline'" not in policy.get("default-src", []), where
        if not path.startswith("/schema"):
            assert policy.get("style-src") == ["'self'"], where
    assert {200, 400, 401, 403, 404, 405} <= statuses, statuses
    record_attack(
        "answers without security headers",
        f"{len(requests)} answers ({sorted(statuses)}): CSP, nosniff, Referrer-Policy on all",
        ok=True,
    )
    # The pages hold no inline script and no event-handler attribute (the CSP would block
    # them): every script is one of the site's static files.
    for path in ("/", f"/runs/{SHORT}", "/log", f"/keys/{key}", "/schema", "/compare"):
        page = http.get(path).text
        scripts = re.findall(r"(<script\b[^>]*>)(.*?)</script>", page, re.S)
        assert len(scripts) == page.count("<script"), path
        for tag, content in scripts:  # a static file, or (Scalar's mount point) nothing
            assert re.search(r'\bsrc="/static/', tag) or not content.strip(), (path, tag)
        assert not re.search(r"<[^>]+\son[a-z]+\s*=", page), path
        assert not re.search(r"<style\b|\sstyle=", page), path
