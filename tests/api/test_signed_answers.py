"""Signed answers over HTTP: every JSON view answer under /v1 says its tree size and carries the
log key's signature (checked with the vkey the server publishes); errors, pages, text and 304s
carry none; asOf answers are signed at the asOf size; an answer is signed once; a read of "now"
that the log outgrew while it was made goes out unsigned."""

from __future__ import annotations

import hashlib
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any
from urllib.parse import quote

import msgspec
import pytest
from litestar import Litestar
from litestar.testing import TestClient

from keys import NoteVerifier, parse_vkey
from service.app.answers import verify_saved
from service.app.ingest import ingest
from service.app.mirror import import_log
from service.app.segment import export
from service.core.config import Settings
from service.core.init import init_data_dir
from service.core.ledger import Ledger, open_log
from service.errors import UsageError
from service.web.app import BenchproofApp, create_app
from service.web.replay import replay
from tests.api.conftest import Data
from tests.builders import bundle, ingest_event
from tests.corpora import shared_file
from tests.mirrors import ORIGIN, build_origin
from verifier.answers import AnswerInvalid, saved, verify_answer

Client = TestClient[Litestar]
SEED = "sha256:5195388fd7c6a80d3089edc96ddebce288cc1703b1bfb949d3c9ca2c2c6fd74b"


@pytest.fixture
def vkey(client: Client) -> NoteVerifier:
    return parse_vkey(client.get("/v1/log/key").text.strip())


def _target(response: Any) -> str:
    return str(response.request.url.raw_path.decode())


def _verified(response: Any, key: NoteVerifier) -> int:
    """The tree size a 200 JSON answer says, after checking its signature."""
    assert response.status_code == 200, response.text
    assert response.headers["content-type"] == "application/json"
    size = int(response.headers["benchproof-tree-size"])
    verify_answer(
        key, size, _target(response), response.content, response.headers["benchproof-signature"]
    )
    return size


def _reads(data: Data, client: Client) -> list[str]:
    run = client.get(f"/v1/runs/{data.digests[0]}").json()
    key = run["comparisonKey"]
    return [
        "/v1/runs",
        "/v1/runs?limit=2&source=synthetic",
        f"/v1/runs/{SEED}",
        "/v1/runs/sol-execbench:165",
        f"/v1/runs/{SEED}/manifest",
        f"/v1/groups/{key}",
        f"/v1/groups/{key}/history",
        f"/v1/compare?runs={data.digests[0]},{data.digests[1]}",
        "/v1/keys",
        "/v1/log/entries?start=0&end=3",
        "/v1/log/proof/inclusion?index=1",
        "/v1/attestations",
        "/v1/reruns",
        f"/v1/citations/check?run={SEED}&digest={SEED}&accessed=2999-01-01",
    ]


def test_json_view_answers_are_signed_by_the_log_key(
    client: Client, data: Data, vkey: NoteVerifier
) -> None:
    size = client.get("/healthz").json()["treeSize"]
    for path in _reads(data, client):
        assert _verified(client.get(path), vkey) == size, path


def test_the_size_is_the_one_the_body_states(client: Client, vkey: NoteVerifier) -> None:
    for path in ("/v1/runs", f"/v1/runs/{SEED}", "/v1/log/entries?start=0&end=1"):
        response = client.get(path)
        body = response.json()
        assert _verified(response, vkey) == body.get("asOf", body.get("treeSize")), path


def test_as_of_answers_are_signed_at_the_as_of_size(client: Client, vkey: NoteVerifier) -> None:
    position = client.get(f"/v1/runs/{SEED}").json()["ingestPosition"]
    for at in (position + 1, position + 2):
        response = client.get(f"/v1/runs/{SEED}?asOf={at}")
        assert _verified(response, vkey) == at == response.json()["asOf"]
    # An instant names a size too: the answer is signed at that size.
    response = client.get("/v1/runs?asOf=2999-01-01T00:00:00Z")
    assert _verified(response, vkey) == response.json()["asOf"]


def test_a_proof_of_a_given_size_asked_as_of_a_size_is_signed_at_that_size(
    client: Client, vkey: NoteVerifier
) -> None:
    size = client.get("/v1/log/entries?start=0&end=1").json()["treeSize"]
    for path in (
        f"/v1/log/proof/inclusion?index=1&size=2&asOf={size - 1}",
        f"/v1/log/proof/consistency?old=1&new=2&asOf={size - 1}",
    ):
        assert _verified(client.get(path), vkey) == size - 1, path


def test_head_carries_the_get_signature(client: Client) -> None:
    got = client.get(f"/v1/runs/{SEED}")
    head = client.head(f"/v1/runs/{SEED}")
    assert head.status_code == 200 and head.content == b""
    for name in ("benchproof-tree-size", "benchproof-signature"):
        assert head.headers[name] == got.headers[name]


def test_errors_pages_text_and_not_modified_carry_no_signature(client: Client, data: Data) -> None:
    etag = client.get(f"/v1/runs/{SEED}").headers["etag"]
    for response in (
        client.get("/v1/runs/sha256:" + "0" * 64),  # 404 problem+json
        client.get("/v1/runs?asOf=not-a-size"),  # 400 problem+json
        client.get(f"/runs/{SEED}"),  # an HTML page
        client.get("/v1/log/checkpoint"),  # text/plain (a signed note already)
        client.get("/v1/log/key"),
        client.get(f"/v1/runs/{SEED}", headers={"if-none-match": etag}),  # 304
        client.get(f"/v1/runs/{SEED}/citation?format=csl-json"),  # a citation, not a view
        client.get("/healthz"),
    ):
        assert "benchproof-signature" not in response.headers, response.request.url
        assert "benchproof-tree-size" not in response.headers, response.request.url


def test_a_changed_body_path_size_or_origin_fails(client: Client, vkey: NoteVerifier) -> None:
    response = client.get(f"/v1/runs/{SEED}")
    size = _verified(response, vkey)
    header = response.headers["benchproof-signature"]
    body = response.content
    lied = body.replace(b'"reported"', b'"verified"')
    assert lied != body
    for args, origin in (
        ((size, f"/v1/runs/{SEED}", lied), None),
        ((size, f"/v1/runs/{SEED}/manifest", body), None),
        ((size - 1, f"/v1/runs/{SEED}", body), None),
        ((size, f"/v1/runs/{SEED}", body), "another.example/log"),
    ):
        with pytest.raises(AnswerInvalid, match="did not sign"):
            verify_answer(vkey, *args, header, origin=origin)


def test_the_same_answer_is_signed_once(client: Client) -> None:
    app = client.app
    assert isinstance(app, BenchproofApp) and app.answers is not None
    signer = app.answers.signer
    assert signer is not None
    path = f"/v1/runs/{SEED}?asOf=4"
    first = client.get(path).headers["benchproof-signature"]
    made = signer.signed
    for _ in range(3):
        assert client.get(path).headers["benchproof-signature"] == first
    assert signer.signed == made
    client.get(f"/v1/runs/{SEED}?asOf=5")  # another size is another statement
    assert signer.signed == made + 1


@pytest.fixture
def growing(tmp_path: Path) -> Iterator[tuple[Client, Ledger]]:
    root = tmp_path / "data"
    ledger, _ = init_data_dir(root)
    with ledger:
        ingest(ledger, "manifest", [shared_file("seed-manifest.json")])
    ledger = Ledger.open(root)
    try:
        with TestClient(app=create_app(Settings(data=root), ledger=ledger)) as test_client:
            yield test_client, ledger
    finally:
        ledger.close()


def test_a_read_of_now_the_log_outgrew_goes_out_unsigned(
    growing: tuple[Client, Ledger],
) -> None:
    client, ledger = growing
    app = client.app
    assert isinstance(app, BenchproofApp) and app.answers is not None
    reader = app.answers.reader
    before = client.get("/v1/runs")
    size = int(before.headers["benchproof-tree-size"])
    assert "benchproof-signature" in before.headers
    parts = bundle(group=1, author=1, value=10)
    ledger.append([(ingest_event(parts), parts["run"].digest)])
    # The reader still holds the size it read a moment ago (as within FRESH of a write).
    reader._size_at = time.monotonic() + 60
    stale = client.get("/v1/runs")
    assert stale.status_code == 200 and stale.json()["asOf"] == size
    assert stale.headers["benchproof-tree-size"] == str(size)
    assert "benchproof-signature" not in stale.headers
    # The reader reads the size afresh after that, and the next answer is signed again.
    fresh = client.get("/v1/runs")
    key = parse_vkey(client.get("/v1/log/key").text.strip())
    assert _verified(fresh, key) == size + 1 == fresh.json()["asOf"]
    assert parts["run"].digest in {r["runDigest"] for r in fresh.json()["items"]}
    # An asOf answer is exact whatever the log does meanwhile: signed.
    reader._size_at = time.monotonic() + 60
    assert _verified(client.get(f"/v1/runs?asOf={size}"), key) == size


def test_an_alias_with_a_slash_is_signed_as_sent(client: Client, vkey: NoteVerifier) -> None:
    response = client.get("/v1/runs/" + quote("synthetic:submission/777", safe=":"))
    assert "%2F" in _target(response)
    _verified(response, vkey)


def test_a_mirror_answers_unsigned_and_replays_the_origins_answers(tmp_path: Path) -> None:
    origin = build_origin(tmp_path / "origin", runs=5)
    export(origin.root, tmp_path / "segment")
    mirror = tmp_path / "mirror"
    import_log(mirror, verifier=parse_vkey(origin.vkey), folder=tmp_path / "segment")
    path = f"/v1/runs/{origin.runs[0]}"
    key = parse_vkey(origin.vkey)
    answers: dict[str, Any] = {}
    for name, root in (("origin", origin.root), ("mirror", mirror)):
        ledger = open_log(root)
        try:
            with TestClient(app=create_app(Settings(data=root), ledger=ledger)) as test_client:
                answers[name] = test_client.get(path)
        finally:
            ledger.close()
    on_mirror, on_origin = answers["mirror"], answers["origin"]
    assert on_mirror.status_code == 200 and "benchproof-signature" not in on_mirror.headers
    assert on_mirror.headers["benchproof-tree-size"] == on_origin.headers["benchproof-tree-size"]
    # The origin's signed answer, checked against the mirror's copy of the log.
    kept = saved(
        "http://origin.example",
        ORIGIN,
        _verified(on_origin, key),
        _target(on_origin),
        on_origin.content,
        on_origin.headers["benchproof-signature"],
    )
    assert verify_saved(kept, key, replay(mirror)).replayed
    lie = on_origin.content.replace(b'"passed"', b'"failed"')
    assert lie != on_origin.content
    forged = msgspec.structs.replace(
        kept, body=lie.decode(), bodySha256=hashlib.sha256(lie).hexdigest()
    )
    with pytest.raises(AnswerInvalid, match=r"signature: .*status = \"passed\""):
        verify_saved(forged, key, replay(mirror))


def test_a_route_without_as_of_is_recomputed_only_at_its_size(
    growing: tuple[Client, Ledger],
) -> None:
    client, ledger = growing
    key = parse_vkey(client.get("/v1/log/key").text.strip())
    response = client.get("/v1/keys")
    size = _verified(response, key)
    kept = saved(
        "http://testserver.local",
        ledger.store.origin,
        size,
        _target(response),
        response.content,
        response.headers["benchproof-signature"],
    )
    assert verify_saved(kept, key, replay(ledger.data.root)).replayed
    parts = bundle(group=1, author=2, value=20)
    ledger.append([(ingest_event(parts), parts["run"].digest)])
    with pytest.raises(UsageError, match="takes no asOf"):
        verify_saved(kept, key, replay(ledger.data.root))
    assert not verify_saved(kept, key).replayed  # offline, the signature still holds
