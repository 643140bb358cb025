"""Run references holding ``/`` through a real ``benchproof serve`` (uvicorn decodes the path
before the app routes it, so only a real server shows what a client sees): the reference is one
path segment with its ``/`` sent as ``%2F``; an old link with a raw ``/`` gets the same answer
(status, body, ETag, tree size; each signed over its own target); an encoded ``/`` stays inside
the reference; the service's own links encode it."""

from __future__ import annotations

import http.client
from collections.abc import Iterator
from typing import NamedTuple
from urllib.parse import urlsplit

import pytest

from keys import NoteVerifier, parse_vkey
from service.core.init import init_data_dir
from tests.builders import bundle, ingest_event
from tests.servers import served
from verifier.answers import verify_answer

SLASHED = "synthetic:submission/777"
AMBIGUOUS = "synthetic:pair/1"
FORM = {"content-type": "application/x-www-form-urlencoded"}


class Answer(NamedTuple):
    status: int
    headers: dict[str, str]
    body: bytes


class Server(NamedTuple):
    base: str
    digest: str  # the run SLASHED names
    size: int  # the log's size once that run was ingested

    def ask(
        self,
        method: str,
        path: str,
        body: bytes | None = None,
        headers: dict[str, str] | None = None,
    ) -> Answer:
        """``method path`` exactly as written (no client normalises it)."""
        where = urlsplit(self.base)
        connection = http.client.HTTPConnection(where.hostname or "", where.port, timeout=30)
        try:
            connection.request(method, path, body=body, headers=headers or {})
            response = connection.getresponse()
            content = response.read()
            return Answer(
                response.status, {k.lower(): v for k, v in response.getheaders()}, content
            )
        finally:
            connection.close()


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Server]:
    root = tmp_path_factory.mktemp("refs") / "data"
    ledger, _ = init_data_dir(root)
    digests, sizes = [], []
    with ledger:
        for i, (value, aliases) in enumerate(
            [(300, (SLASHED,)), (100, (AMBIGUOUS,)), (200, (AMBIGUOUS,))]
        ):
            parts = bundle(
                group=3, author=value + i, value=value, observed=f"2026-02-0{i + 1}T00:00:00Z"
            )
            event = ingest_event(parts, aliases=(f"synthetic:{value}-{i}", *aliases))
            ledger.append([(event, parts["run"].digest)])
            digests.append(parts["run"].digest)
            sizes.append(ledger.store.size)
    with served(root, "--public-url", "http://bench.example") as base:
        yield Server(base, digests[0], sizes[0])


@pytest.fixture(scope="module")
def vkey(server: Server) -> NoteVerifier:
    return parse_vkey(server.ask("GET", "/v1/log/key").body.decode().strip())


def _encoded(ref: str) -> str:
    return ref.replace("/", "%2F")


@pytest.mark.parametrize(
    ("path", "pinned"),
    [("", False), ("/manifest", False), ("/history", False), ("", True), ("/history", True)],
)
def test_an_old_link_with_a_raw_slash_answers_as_the_encoded_one(
    server: Server, vkey: NoteVerifier, path: str, pinned: bool
) -> None:
    query = f"?asOf={server.size}" if pinned else ""
    raw = server.ask("GET", f"/v1/runs/{SLASHED}{path}{query}")
    encoded = server.ask("GET", f"/v1/runs/{_encoded(SLASHED)}{path}{query}")
    by_digest = server.ask("GET", f"/v1/runs/{server.digest}{path}{query}")
    assert raw.status == encoded.status == 200, raw.body[:300]
    assert raw.body == encoded.body == by_digest.body
    for name in ("etag", "cache-control", "content-type", "benchproof-tree-size"):
        assert raw.headers[name] == encoded.headers[name], name
    # Each is signed over the target as it was sent.
    size = int(raw.headers["benchproof-tree-size"])
    for target, answer in (
        (f"/v1/runs/{SLASHED}{path}{query}", raw),
        (f"/v1/runs/{_encoded(SLASHED)}{path}{query}", encoded),
    ):
        verify_answer(vkey, size, target, answer.body, answer.headers["benchproof-signature"])


@pytest.mark.parametrize("tail", ["", "/history"])
def test_old_page_links_with_a_raw_slash_answer_as_the_encoded_ones(
    server: Server, tail: str
) -> None:
    raw = server.ask("GET", f"/runs/{SLASHED}{tail}")
    encoded = server.ask("GET", f"/runs/{_encoded(SLASHED)}{tail}")
    assert raw.status == encoded.status == 200
    assert raw.body == encoded.body
    assert raw.headers["etag"] == encoded.headers["etag"]


def test_a_citation_and_a_head_by_a_raw_slash(server: Server) -> None:
    raw = server.ask("GET", f"/v1/runs/{SLASHED}/citation?format=bibtex")
    encoded = server.ask("GET", f"/v1/runs/{_encoded(SLASHED)}/citation?format=bibtex")
    assert raw.status == encoded.status == 200 and raw.body == encoded.body
    assert raw.headers["content-type"].startswith("application/x-bibtex")
    head = server.ask("HEAD", f"/v1/runs/{SLASHED}/history")
    got = server.ask("GET", f"/v1/runs/{SLASHED}/history")
    assert head.status == 200 and head.body == b""
    assert head.headers["benchproof-signature"] == got.headers["benchproof-signature"]


def test_an_ambiguous_reference_with_a_slash_lists_its_candidates(server: Server) -> None:
    for ref in (AMBIGUOUS, _encoded(AMBIGUOUS)):
        api = server.ask("GET", f"/v1/runs/{ref}")
        assert api.status == 300 and api.headers["content-type"] == "application/problem+json"
        page = server.ask("GET", f"/runs/{ref}/history")
        assert page.status == 300 and page.headers["content-type"] == "text/html; charset=utf-8"
        assert b"names several runs" in page.body


def test_an_encoded_slash_stays_inside_the_reference(server: Server) -> None:
    # "%2F" is part of the reference, never a path separator: this asks for a run whose
    # reference is "<digest>/history", which no digest is.
    assert server.ask("GET", f"/v1/runs/{server.digest}%2Fhistory").status == 400
    assert server.ask("GET", f"/v1/runs/{_encoded(SLASHED)}%2Fhistory").status == 404


def test_posts_to_no_resource_are_404_with_or_without_a_slash(server: Server) -> None:
    answers = [
        server.ask("POST", f"/v1/runs/{ref}{tail}", b"{}", {"content-type": "application/json"})
        for ref in (SLASHED, _encoded(SLASHED))
        for tail in ("", "/likes", "/history")
    ]
    assert {a.status for a in answers} == {404}
    assert len({a.body for a in answers}) == 1
    assert b"takes \xe2\x80\xa6/attestations" in answers[0].body
    page = server.ask("POST", f"/runs/{SLASHED}", b"reason=other&text=x", FORM)
    assert page.status == 404 and page.headers["content-type"].startswith("text/html")


def test_a_report_form_by_a_raw_slash_links_back_encoded(server: Server) -> None:
    for ref in (SLASHED, _encoded(SLASHED)):
        filed = server.ask("POST", f"/runs/{ref}/reports", b"reason=other&text=slash", FORM)
        assert filed.status == 303
        assert filed.headers["location"] == f"/runs/{_encoded(SLASHED)}#report"
    page = server.ask("GET", filed.headers["location"].partition("#")[0])
    assert page.status == 200


def test_a_get_of_a_resource_only_posted_to_is_405_naming_post(server: Server) -> None:
    """Issue 30, point 9: not "not a run reference" (the name read as part of the reference)."""
    for tail in ("attestations", "reports", "reruns"):
        answer = server.ask("GET", f"/v1/runs/{server.digest}/{tail}")
        assert answer.status == 405, (tail, answer.body[:200])
        assert "POST" in answer.headers["allow"] and answer.headers["content-type"].startswith(
            "application/problem+json"
        )
    page = server.ask("GET", f"/runs/{server.digest}/reports")
    assert page.status == 405 and "POST" in page.headers["allow"]
    assert page.headers["content-type"].startswith("text/html")
    # A reference with a raw "/" still ends in a resource of the method asked.
    assert server.ask("GET", f"/v1/runs/{SLASHED}/history").status == 200
