"""``GET /v1/runs/{ref}/citation?format=…`` over the real app: every format names the digest
permalink (built from the digest, whatever reference was asked), the digest, the access date and
the evidence level; the receipt verifies offline with the log's vkey alone; a bad format is 400
and an unknown run 404."""

from __future__ import annotations

import base64

import msgspec
import pytest

from events.merkle import verify_consistency
from events.types import RunSuperseded
from keys.notekeys import parse_vkey
from tests.api.test_keys import World, problem, world
from verifier.receipts import verify_receipt

__all__ = ["world"]

MEDIA = {
    "text": "text/plain",
    "bibtex": "application/x-bibtex",
    "biblatex": "application/x-bibtex",
    "csl-json": "application/vnd.citationstyles.csl+json",
    "receipt": "text/plain",
}


@pytest.mark.parametrize("fmt", list(MEDIA))
def test_every_format_names_the_exact_version(world: World, fmt: str) -> None:
    digest = world.runs[0]
    short = digest[7:19]
    r = world.client.get(f"/v1/runs/{short}/citation", params={"format": fmt})
    assert r.status_code == 200, r.text
    assert r.headers["content-type"].startswith(MEDIA[fmt])
    assert r.headers["cache-control"] == "no-store"
    body = r.content.decode()
    assert f"/runs/{digest}" in body  # the digest form, not the short id asked for
    if fmt == "csl-json":
        (item,) = msgspec.json.decode(r.content)
        assert item["URL"].endswith(f"/runs/{digest}")
        assert item["accessed"]["date-parts"] == [[2026, 3, 1]]
    elif fmt == "receipt":
        verified = verify_receipt(r.content, parse_vkey(world.ledger.signers.vkey))
        assert verified.statement.runDigest == digest
        assert verified.statement.evidenceLevel == "reproducible"
    else:
        assert digest in body and "2026-03-01" in body and "reproducible" in body


def test_a_bad_format_is_400_and_an_unknown_run_404(world: World) -> None:
    problem(world.client.get(f"/v1/runs/{world.runs[0]}/citation?format=mla"), 400, "bad-request")
    problem(world.client.get("/v1/runs/" + "ab" * 6 + "/citation"), 404, "unknown-run")


def test_a_plain_citation_is_checked(world: World) -> None:
    """Was the cited digest a version of the cited record on the access day? With its entry
    and inclusion proof; a day before the run was recorded, or another record, is not."""
    digest, other = world.runs
    url = "/v1/citations/check"
    held = world.client.get(
        url, params={"run": digest[7:19], "digest": digest, "accessed": "2026-03-01"}
    )
    assert held.status_code == 200, held.text
    body = held.json()
    assert body["valid"] is True and body["entryIndex"] >= 0 and body["inclusionProof"] is not None
    early = world.client.get(
        url, params={"run": digest, "digest": digest, "accessed": "2026-02-28"}
    )
    assert early.json()["valid"] is False and "no such version" in early.json()["reason"]
    elsewhere = world.client.get(
        url, params={"run": other, "digest": digest, "accessed": "2026-03-01"}
    )
    assert elsewhere.json()["valid"] is False and "another record" in elsewhere.json()["reason"]
    problem(
        world.client.get(url, params={"run": digest, "digest": "md5:x", "accessed": "2026-03-01"}),
        400,
        "bad-request",
    )
    problem(
        world.client.get(url, params={"run": digest, "digest": digest, "accessed": "yesterday"}),
        400,
        "bad-request",
    )


def test_online_verification_proves_consistency_and_names_the_successor(world: World) -> None:
    old, new = world.runs
    receipt = world.client.get(f"/v1/runs/{old}/citation", params={"format": "receipt"}).content
    cited_at = world.size()
    world.ledger.append([(RunSuperseded(runDigest=old, supersededBy=new, reason="fixed"), old)])
    r = world.client.post("/v1/citations/verify", content=receipt)
    assert r.status_code == 200, r.text
    body = r.json()
    assert (body["oldSize"], body["newSize"]) == (cited_at, world.size())
    proof = [base64.b64decode(h) for h in body["consistencyProof"]]
    verify_consistency(cited_at, world.size(), _root(receipt), _root_of(body["checkpoint"]), proof)
    since = body["since"]
    assert since["supersededBy"].endswith(f"/runs/{new}")
    assert (since["evidenceLevelThen"], since["evidenceLevelNow"]) == ("reproducible", "superseded")
    tampered = receipt.replace(b"evidence: reproducible", b"evidence: verified")
    problem(world.client.post("/v1/citations/verify", content=tampered), 422, "receipt-invalid")


def _root(receipt: bytes) -> bytes:
    statement = next(x for x in receipt.split(b"\n") if x.startswith(b"statement "))
    return base64.b64decode(msgspec.json.decode(base64.b64decode(statement[10:]))["root"])


def _root_of(note: str) -> bytes:
    return base64.b64decode(note.split("\n")[2])


def test_a_host_that_makes_no_permalink_is_400(world: World) -> None:
    r = world.client.get(
        f"/v1/runs/{world.runs[0]}/citation", params={"format": "text"}, headers={"host": "[::1"}
    )
    problem(r, 400, "bad-request")


def test_the_run_page_names_the_public_url_in_its_permalink_and_citations(world: World) -> None:
    """Behind a proxy (``--public-url``), the page's permalink and citations name the public
    address, as the API's citations do, not the address the request came to."""
    from litestar.testing import TestClient

    from service.core.config import Settings
    from service.web.app import create_app

    public = "https://index.example"
    app = create_app(Settings(data=world.ledger.data.root, public_url=public), ledger=world.ledger)
    with TestClient(app=app) as client:
        page = client.get(f"/runs/{world.runs[0]}")
    assert page.status_code == 200
    assert f"{public}/runs/{world.runs[0]}" in page.text
    assert "testserver" not in page.text
