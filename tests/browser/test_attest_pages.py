"""The run page's "Replications and notes", "Add a reproduction or note" and "Report an issue"
sections, the report form and the key pages.

In headless Chromium against a real ``benchproof serve`` over the seed run: a key made,
registered and used by the console script, the attestation on the run page and the key page,
the report form submitted in the browser. Over litestar's TestClient (the ``world`` of the API
tests: two runs whose primary figure is a median in ns): every refusal of the form, withdrawn,
hidden, revoked and rotated states, escaping and paging."""

from __future__ import annotations

import base64
import json
import subprocess
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from events.entries import EVENT_PAYLOAD_TYPE, Pending
from events.types import EVENT_ENCODER, AttestationHidden, AttestationWithdrawn, KeyRevoked
from events.types.keys import KeyRotated
from keys import SigningKey, encode_envelope, sign_envelope
from projections.queries import Attestation
from service.readmodel.dossier import Primary
from service.web import community
from service.web.pages import keys as key_pages
from tests.api.test_attestations import path, signed, statement
from tests.api.test_keys import World, register, world
from tests.browser.conftest import Server, serving
from tests.corpora import shared_file
from tests.servers import run_cli

__all__ = ["world"]  # the fixture, shared with the API tests

SEED = "sha256:5195388fd7c6a80d3089edc96ddebce288cc1703b1bfb949d3c9ca2c2c6fd74b"
SHORT = SEED[7:19]
HTML = "text/html; charset=utf-8"
HOST = "http://testserver.local"  # the TestClient's base URL


def _cli(*args: object, ok: bool = True) -> subprocess.CompletedProcess[str]:
    done = run_cli(*args, timeout=300)
    if ok:
        assert done.returncode == 0, (args, done.stderr)
    return done


def _size(server: Server) -> int:
    size: int = server.json("/healthz")["treeSize"]
    return size


@pytest.fixture(scope="module")
def seed_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Server]:
    """A server over a fresh log holding the seed run only: these tests write to it."""
    data = tmp_path_factory.mktemp("attest-pages") / "data"
    _cli("init", "--data", data)
    _cli("ingest", "manifest", shared_file("seed-manifest.json"), "--data", data)
    with serving(data) as served:
        yield served


@pytest.mark.corpus
@pytest.mark.slow
def test_attest_report_and_key_page_in_a_browser(
    browser: Any, seed_server: Server, page: Any, tmp_path: Path
) -> None:
    base = seed_server.base
    key = tmp_path / "me.key"
    key_id = _cli("keygen", key, "--name", "alice").stdout.splitlines()[0]
    _cli("keys", "register", "--key", key, "--name", "alice", "--server", base)
    attest = ("attest", SHORT, "--kind", "reproduced", "--value", "1.1", "--unit", "ms")
    note = ("--note", "<script>document.title='owned'</script>", "--key", key, "--server", base)
    receipt = json.loads(_cli(*attest, *note).stdout)
    size = _size(seed_server)
    assert json.loads(_cli(*attest, *note).stdout)["index"] == receipt["index"]
    assert _size(seed_server) == size  # the same statement again: no duplicate

    assert page.goto(f"{base}/runs/{SHORT}").status == 200
    items = page.locator("section#replications li")
    assert items.count() == 1
    text = items.first.inner_text()
    assert "reproduced · measured 1.1 ms mean (the run reports 1.094 ms mean)" in text
    assert "by alice (self-named), key " + key_id[:12] in text
    assert "<script>document.title='owned'</script>" in text  # shown as text, never run
    assert page.title() != "owned"
    position = items.first.get_by_role("link", name=str(receipt["index"]), exact=True)
    assert position.get_attribute("href") == f"/v1/log/proof/inclusion?index={receipt['index']}"
    commands = page.locator("section#add-note pre.commands").inner_text()
    assert f"benchproof keys register --key me.key --name NAME --server {base}" in commands
    assert f"benchproof attest {SHORT} --kind reproduced --value VALUE --unit ns" in commands

    # The report form, with no JavaScript needed: 303 back to the page's reports.
    assert page.locator("#under-review").count() == 0
    page.select_option("#report-reason", "suspected-reward-hack")
    page.fill("#report-text", "the timer <b>skips</b> the warmup")
    with page.expect_navigation():
        page.locator("section#report button[type=submit]").click()
    assert page.url == f"{base}/runs/{SEED}#report"
    report = page.locator("section#report ul.reports li")
    assert report.count() == 1
    assert "suspected-reward-hack" in report.inner_text() and "open" in report.inner_text()
    assert "the timer <b>skips</b> the warmup" in report.inner_text()
    assert "Under review." in page.locator("#under-review").inner_text()
    assert _size(seed_server) == size + 1

    # The attester's key page lists the attestation, linking to its run.
    with page.expect_navigation():
        items.first.get_by_role("link", name=key_id[:12]).click()
    assert page.url == f"{base}/keys/{key_id}"
    assert page.locator("h1").inner_text() == "Key alice (self-named)"
    listed = page.locator("section#attestations li")
    assert listed.count() == 1 and "measured 1.1 ms mean" in listed.inner_text()
    with page.expect_navigation():
        listed.get_by_role("link", name=SHORT).click()
    assert page.locator("h1").inner_text() == f"Run {SHORT}"

    # Withdrawn by its author, one hidden by the index, the report resolved: all on the page.
    _cli("withdraw", receipt["id"], "--reason", "wrong GPU", "--key", key, "--server", base)
    note = ("--note", "spam", "--key", key, "--server", base)
    spam = json.loads(_cli("attest", SHORT, "--kind", "environment-note", *note).stdout)
    token = _cli("token", "create", "moderator", "--data", seed_server.data).stdout.strip()
    _cli("hide", spam["id"], "--reason", "spam", "--token", token, "--server", base)
    report_id = seed_server.json(f"/v1/runs/{SEED}")["reports"][0]["id"]
    resolve = ("--resolution", "dismissed", "--note", "the warmup is there")
    _cli("resolve", report_id, *resolve, "--token", token, "--server", base)
    page.reload()
    shown = page.locator("section#replications li")
    assert shown.count() == 1
    assert "withdrawn by its author: wrong GPU" in shown.inner_text()
    assert page.locator("#hidden-count").inner_text() == "1 hidden by moderation."
    assert page.locator("#under-review").count() == 0
    assert (
        "resolved (dismissed): the warmup is there"
        in page.locator("section#report li").inner_text()
    )


def _attest(world: World, key: SigningKey, run: str, predicate: dict[str, Any]) -> dict[str, Any]:
    r = world.client.post(path(run), content=signed(statement(run, predicate), key))
    assert r.status_code == 201, r.text
    body: dict[str, Any] = r.json()
    return body


def _section(html: str, section: str) -> str:
    start = html.index(f'<section id="{section}"')
    return html[start : html.index("</section>", start)]


def test_the_run_page_lists_attestations_with_their_attesters(world: World) -> None:
    key = SigningKey.generate()
    register(world, key, "bob&co")
    run = world.runs[0]
    predicate = {
        "kind": "reproduced",
        "value": 0.15,
        "unit": "us",
        "note": "<script>alert(1)</script>",
        "evidenceUrls": ["https://example.org/log?a=1&b=2"],
        "environment": {"gpu": "<b>B200</b>"},
    }
    posted = _attest(world, key, run, predicate)
    html = _section(world.client.get(f"/runs/{run}").text, "replications")
    assert 'measured <span class="measured">0.15 us median</span>' in html
    assert "(the run reports 0.1 us median)" in html
    assert (
        '<span class="attester">bob&amp;co</span> <span class="self-named">(self-named)</span>'
        in html
    )
    assert (
        f'<a href="/keys/{key.key_id}" title="{key.key_id}"><code>{key.key_id[:12]}</code></a>'
        in html
    )
    index = posted["index"]
    assert f'href="/v1/log/proof/inclusion?index={index}">{index}</a>' in html
    assert f'<a href="/v1/attestations/{posted["id"]}">signed statement</a>' in html
    assert "&lt;script&gt;alert(1)&lt;/script&gt;" in html and "<script>" not in html
    assert '<a href="https://example.org/log?a=1&amp;b=2" rel="nofollow noopener">' in html
    assert "&lt;b&gt;B200&lt;/b&gt;" in html and "<b>" not in html
    assert "withdrawn" not in html


def test_withdrawn_attestations_are_marked_and_hidden_ones_left_out(world: World) -> None:
    key = SigningKey.generate()
    register(world, key, "carol")
    run = world.runs[0]
    kept = _attest(world, key, run, {"kind": "environment-note", "note": "kept"})
    gone = _attest(world, key, run, {"kind": "environment-note", "note": "spam-note"})
    payload = EVENT_ENCODER.encode(AttestationWithdrawn(attestationId=kept["id"], reason="typo"))
    envelope = encode_envelope(sign_envelope(EVENT_PAYLOAD_TYPE, payload, key))
    pending = Pending("attestation.withdrawn.v1", kept["id"], payload, envelope=envelope)
    world.ledger.append_pending([pending])
    world.ledger.append([(AttestationHidden(attestationId=gone["id"], reason="spam"), gone["id"])])
    html = _section(world.client.get(f"/runs/{run}").text, "replications")
    assert html.count("<li") == 1 and "kept" in html and "spam-note" not in html
    assert '<p class="muted" id="hidden-count">1 hidden by moderation.</p>' in html
    assert '<li class="withdrawn"' in html
    assert "<strong>withdrawn by its author</strong>: typo" in html
    key_page = _section(world.client.get(f"/keys/{key.key_id}").text, "attestations")
    assert key_page.count("<li") == 1 and "withdrawn by its author</strong>: typo" in key_page


def test_figures_beside_the_run_s_primary_value() -> None:
    primary = Primary("latency", "mean", "ns", 1093964)

    def shown(predicate: dict[str, Any], run: Primary | None = primary) -> tuple[Any, ...]:
        a = Attestation("sha256:" + "0" * 64, SEED, "k" * 64, "p", predicate, 7, "2026-01-01")
        n = community.note(a, run, None)
        return n.measured, n.reported

    assert shown({"kind": "reproduced", "value": 1.1, "unit": "ms"}) == (
        "1.1 ms mean",
        "1.094 ms mean",
    )
    assert shown({"kind": "reproduced", "value": 1090000, "unit": "ns", "statistic": "p50"}) == (
        "1,090,000 ns p50",
        "1,093,964 ns mean",
    )
    assert shown({"kind": "reproduced", "value": 9, "unit": "tokens_s"}) == (
        "9 tokens_s mean",
        "1,093,964 ns mean",
    )
    assert shown({"kind": "reproduced", "value": 1090000}) == (
        "1,090,000 mean",
        "1,093,964 ns mean",
    )
    assert shown({"kind": "reproduced", "value": 2, "unit": "s"}, None) == ("2 s", None)
    assert shown({"kind": "could-not-reproduce", "note": "x"}) == (None, None)


def _form(world: World, ref: str, fields: dict[str, str], **headers: str) -> Any:
    return world.client.post(
        f"/runs/{ref}/reports", data=fields, headers=headers, follow_redirects=False
    )


def test_the_report_form_files_a_report_and_returns_to_the_page(world: World) -> None:
    run = world.runs[0]
    before = world.size()
    r = _form(world, run[7:19], {"reason": "license", "text": "<i>not</i> theirs"}, origin=HOST)
    assert r.status_code == 303, r.text
    assert r.headers["location"] == f"/runs/{run[7:19]}#report"
    assert world.size() == before + 1
    page = world.client.get(r.headers["location"]).text
    assert 'id="under-review"' in page
    reports = _section(page, "report")
    assert "<strong>license</strong>" in reports and "<strong>open</strong>" in reports
    assert "&lt;i&gt;not&lt;/i&gt; theirs" in reports
    assert world.client.get(f"/v1/runs/{run}").json()["underReview"] is True
    # No cookie: nothing of the reporter is kept between requests.
    assert "set-cookie" not in r.headers


@pytest.mark.parametrize(
    ("fields", "status"),
    [
        ({"reason": "boring", "text": "x"}, 400),
        ({"reason": "other", "text": "é" * 2049}, 400),
        ({"reason": "other"}, 400),
        ({"text": "x"}, 400),
    ],
)
def test_a_bad_form_is_an_html_400_and_appends_nothing(
    world: World, fields: dict[str, str], status: int
) -> None:
    before = world.size()
    r = _form(world, world.runs[0], fields)
    assert r.status_code == status, r.text
    assert r.headers["content-type"] == HTML and "<h1>" in r.text
    assert world.size() == before


def test_a_form_posted_from_another_site_is_refused(world: World) -> None:
    before = world.size()
    fields = {"reason": "other", "text": "x"}
    for origin in ("https://evil.example", "null"):
        r = _form(world, world.runs[0], fields, origin=origin)
        assert r.status_code == 403 and r.headers["content-type"] == HTML, r.text
    assert world.size() == before
    assert _form(world, world.runs[0], fields).status_code == 303  # no Origin: a direct client


def test_form_paths_that_name_no_run_or_no_form_are_404(world: World) -> None:
    before = world.size()
    fields = {"reason": "other", "text": "x"}
    assert _form(world, "0000deadbeef", fields).status_code == 404
    r = world.client.post(f"/runs/{world.runs[0]}/other", data=fields)
    assert r.status_code == 404 and r.headers["content-type"] == HTML
    assert world.size() == before


def test_a_page_pinned_to_a_size_has_no_form(world: World) -> None:
    size = world.size()
    page = world.client.get(f"/runs/{world.runs[0]}?asOf={size}").text
    assert "<form" not in _section(page, "report")
    assert f'href="/runs/{world.runs[0][7:19]}#report"' in page


def test_unknown_keys_are_an_html_404(world: World) -> None:
    for key_id in ("0" * 64, "not-a-key", "A" * 64):
        r = world.client.get(f"/keys/{key_id}")
        assert r.status_code == 404 and r.headers["content-type"] == HTML, key_id


def test_revoked_and_rotated_keys(world: World) -> None:
    old, new, gone = SigningKey.generate(), SigningKey.generate(), SigningKey.generate()
    register(world, old, "dave")
    register(world, gone, "erin")
    public = base64.b64encode(new.public.raw).decode()
    rotation = KeyRotated(keyId=old.key_id, newKeyId=new.key_id, newPublicKey=public)
    payload = EVENT_ENCODER.encode(rotation)
    envelope = encode_envelope(sign_envelope(EVENT_PAYLOAD_TYPE, payload, old))
    world.ledger.append_pending([Pending("key.rotated.v1", old.key_id, payload, envelope=envelope)])
    revoked = world.ledger.append(
        [(KeyRevoked(keyId=gone.key_id, reason="lost <laptop>"), gone.key_id)]
    )
    page = world.client.get(f"/keys/{old.key_id}").text
    assert "<strong>Rotated</strong>" in page and f'href="/keys/{new.key_id}"' in page
    successor = world.client.get(f"/keys/{new.key_id}").text
    assert '<h1>Key <span class="mono">dave</span>' in successor
    assert f'href="/keys/{old.key_id}"' in successor and "<dd>valid</dd>" in successor
    page = world.client.get(f"/keys/{gone.key_id}").text
    index = revoked[0].seq
    assert (
        f'<strong>Revoked</strong> by entry <a href="/v1/log/proof/inclusion?index={index}">'
        in page
    )
    assert "lost &lt;laptop&gt;" in page and "<dd>revoked</dd>" in page


def test_the_key_page_lists_attestations_in_pages(
    world: World, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(key_pages, "PAGE_SIZE", 1)
    key = SigningKey.generate()
    register(world, key, "frank")
    first = _attest(world, key, world.runs[0], {"kind": "reproduced", "value": 101, "unit": "ns"})
    _attest(world, key, world.runs[1], {"kind": "regression-observed", "value": 300, "unit": "ns"})
    page = _section(world.client.get(f"/keys/{key.key_id}").text, "attestations")
    assert page.count("<li") == 1 and "measured 101 ns" in page
    assert f'href="/runs/{world.runs[0]}"' in page
    nxt = f"/keys/{key.key_id}?after={first['index']}"
    assert f'<a href="{nxt}">Next page →</a>' in page
    second = _section(world.client.get(nxt).text, "attestations")
    assert second.count("<li") == 1 and "regression-observed" in second
    assert "Next page" not in second and f'<a href="/keys/{key.key_id}">← First page</a>' in second
