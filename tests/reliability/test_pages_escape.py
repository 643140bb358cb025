"""Issue 18, part 5: every user-supplied string is escaped on the pages, under the site's
Content-Security-Policy, and the pages' own scripts still work under it.

Script tags, attribute breakers, ``javascript:`` URLs, quotes, backticks and right-to-left
overrides go into a key's name, attestation notes, evidence URLs and environments, withdrawal
and moderation reasons, report texts and resolution notes (the public API and the operator's),
and manifest titles, hardware names and source ids (an operator ingest). Headless Chromium then
opens every page that shows them and checks the rendered DOM: the strings are text, no element
or event handler was injected, no dialog opened, no link leads to ``javascript:``, and the CSP
reported no violation. The run page's copy buttons and the API docs (Scalar, at ``/schema``)
work under the same policy with no violation."""

from __future__ import annotations

import base64
import re
import urllib.parse
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx
import msgspec
import pytest

from events import check_manifest
from events.entries import EVENT_PAYLOAD_TYPE, INTOTO_PAYLOAD_TYPE
from events.types import EVENT_ENCODER, AttestationWithdrawn, KeyRegistered
from keys import SigningKey, encode_envelope, sign_envelope
from tests import builders
from tests.reliability.conftest import Site
from tests.reliability.report import record_attack, record_note, scale
from tests.reliability.test_security import security_site

SEED = "sha256:5195388fd7c6a80d3089edc96ddebce288cc1703b1bfb949d3c9ca2c2c6fd74b"
SHORT = SEED[7:19]
ATTESTATION = "https://benchproof.dev/attestation/v1"
__all__ = ["security_site"]  # the served site, shared with test_security

# Every vector in one string (the fast size), then each alone (the full size adds them).
ALL = (
    "<script>alert(1)</script>\"><img src=x onerror=alert(2)>'><svg onload=alert(3)>"
    "`${alert(4)}` javascript:alert(5) \u202egnp.exe"
)
VECTORS = [
    "<script>alert(1)</script>",
    '"><img src=x onerror=alert(2)>',
    "' onmouseover='alert(3)' x='",
    "`${alert(4)}`</textarea></title><script>alert(5)</script>",
    "javascript:alert(6)",
    "\u202e<b>rtl</b>\u202c",
]
PAYLOADS = scale([ALL], [ALL, *VECTORS])

# Recorded in every page before its own scripts run: CSP violations and whether an injected
# handler ran (the payloads call alert(), which Playwright sees as a dialog).
WATCH = """
window.__violations = [];
document.addEventListener("securitypolicyviolation", (e) => {
  window.__violations.push(e.violatedDirective + " " + e.blockedURI + " " + e.sourceFile);
});
"""

# What the rendered DOM holds that a payload could have injected.
INSPECT = """() => {
  const origin = location.origin;
  const handlers = [];
  for (const el of document.querySelectorAll("*")) {
    for (const a of el.attributes) {
      if (a.name.startsWith("on")) handlers.push(el.tagName + " " + a.name);
    }
  }
  const scripts = [...document.scripts]
    .filter((s) => !(s.src.startsWith(origin + "/static/") || (s.id === "api-reference" && !s.text.trim())))
    .map((s) => s.outerHTML.slice(0, 80));
  const links = [...document.querySelectorAll("[href],[src],[action],[formaction]")]
    .map((el) => el.href || el.src || el.action || el.getAttribute("formaction") || "")
    .filter((u) => /^\\s*(javascript|data|vbscript):/i.test(u));
  return {
    handlers, scripts, links,
    images: document.querySelectorAll("img[src='x'], svg[onload]").length
      + [...document.querySelectorAll("b")].filter((b) => b.textContent === "rtl").length,
    text: document.body.innerText,
    violations: window.__violations,
  };
}"""


@dataclass
class Planted:
    site: Site
    runs: list[str] = field(default_factory=list)
    keys: list[str] = field(default_factory=list)
    refused: list[str] = field(default_factory=list)
    written: int = 0


def _titled(manifest: dict[str, Any], title: str) -> dict[str, Any]:
    manifest["metadata"]["title"] = title
    return manifest


def _hostile_bundle(payload: str, n: int) -> dict[str, Any]:
    """A schema-valid bundle whose free-text fields (titles, source id) and URLs hold
    ``payload`` or a ``javascript:`` URL (names are patterned, so they cannot)."""
    op = check_manifest(_titled(builders.operation(70 + n), payload), source="t")
    wl = check_manifest(_titled(builders.workload(70 + n, 64, op.digest), payload), source="t")
    pr = check_manifest(_titled(builders.protocol(), payload), source="t")
    env = check_manifest(_titled(builders.environment(), payload), source="t")
    impl_m = _titled(builders.implementation(700 + n, op.digest), payload)
    impl_m["spec"]["projectRevision"]["repository"] = "javascript:alert(7)"
    impl = check_manifest(impl_m, source="t")
    spec = {
        "implementationDigest": impl.digest,
        "workloadDigest": wl.digest,
        "protocolDigest": pr.digest,
        "environmentDigest": env.digest,
        "status": "passed",
        "timing": {"primaryStatistic": "median", "latencyNs": {"median": 1000 + n}},
        "observedAt": "2026-01-01T00:00:00Z",
        "sourceNative": {"source": "synthetic", "externalId": f"{payload}/{n}"},
        "evidence": {"rawSamples": {"uri": "javascript:alert(8)", "digest": "sha256:" + "0" * 64}},
    }
    run_m = _titled(builders._m("BenchmarkRun", f"hostile-{n}", spec), payload)
    run = check_manifest(run_m, source="t")
    parts = {"run": run, "protocol": pr, "environment": env, "workload": wl}
    parts |= {"implementation": impl, "operation": op}
    return {role: c.manifest for role, c in parts.items()}


def _key_name(payload: str, n: int) -> str:
    """``payload`` as a key name (which takes no spaces and no ``+``, and at most 48 characters
    show whole on a page, of the 64 a name may have): ``/`` separates the attributes of an HTML
    tag as well as a space does."""
    return payload.replace(" ", "/").replace("+", "")[:44] + f"-{n}"


def _envelope(payload_type: str, body: bytes, key: SigningKey) -> bytes:
    return encode_envelope(sign_envelope(payload_type, body, key))


def _attestation(payload: str, key: SigningKey, kind: str, urls: list[str]) -> bytes:
    """An attestation of the seed run whose note and environment hold ``payload``."""
    body = {
        "_type": "https://in-toto.io/Statement/v1",
        "subject": [{"name": f"/runs/{SEED}", "digest": {"sha256": SEED[7:]}}],
        "predicateType": ATTESTATION,
        "predicate": {
            "kind": kind,
            "note": payload,
            "evidenceUrls": urls,
            "environment": {"gpu": payload, payload: "x"},
        },
    }
    return _envelope(INTOTO_PAYLOAD_TYPE, msgspec.json.encode(body), key)


def _plant(site: Site, http: httpx.Client) -> Planted:
    """Post every payload through every write that takes free text; return where they are."""
    out = Planted(site)
    operator = {"authorization": f"Bearer {site.token}"}

    def post(what: str, path: str, ok: tuple[int, ...] = (200, 201), **kw: Any) -> Any:
        r = http.post(path, **kw)
        assert r.status_code < 500, (what, r.status_code, r.text)
        if r.status_code in ok:
            out.written += 1
            return r.json()
        # A refusal is fine (the string never reaches a page) if it is a problem+json 4xx.
        assert r.headers["content-type"].startswith("application/problem+json"), r.text
        out.refused.append(f"{what}: {r.status_code} {r.json().get('detail', '')[:120]}")
        return None

    for n, payload in enumerate(PAYLOADS):
        answer = post(
            "manifest", "/v1/ingest/manifest", json=_hostile_bundle(payload, n), headers=operator
        )
        assert answer and answer["runsAppended"] == 1, answer
        key = SigningKey.generate()
        challenge = post("challenge", "/v1/keys/challenges", json={"keyId": key.key_id})
        event = KeyRegistered(
            keyId=key.key_id,
            publicKey=base64.b64encode(key.public.raw).decode(),
            role="community",
            name=_key_name(payload, n),
            challenge=challenge["challenge"],
        )
        body = _envelope(EVENT_PAYLOAD_TYPE, EVENT_ENCODER.encode(event), key)
        if post("key name", "/v1/keys", content=body) is not None:
            out.keys.append(key.key_id)
        r = http.post(
            f"/v1/runs/{SEED}/attestations",
            content=_attestation(payload, key, "reproduced", ["javascript:alert(9)"]),
        )
        ok = r.status_code == 400 and r.headers["content-type"].startswith("application/problem")
        if n == 0:
            got = f"{r.status_code} {r.json().get('title')}"
            record_attack("javascript: evidence URL in an attestation", got, ok=ok)
        assert ok, r.text
        ids = []
        for kind in ("reproduced", "environment-note", "could-not-reproduce"):
            urls = [
                f"https://example.invalid/{urllib.parse.quote(payload)}",
                f"https://x/{payload}",
            ]
            posted = post(
                "attestation",
                f"/v1/runs/{SEED}/attestations",
                content=_attestation(payload, key, kind, urls),
            )
            if posted is not None:
                ids.append(posted["id"])
        if len(ids) >= 2:
            withdrawal = AttestationWithdrawn(attestationId=ids[0], reason=payload)
            post(
                "withdrawal reason",
                f"/v1/attestations/{ids[0]}/withdrawal",
                content=_envelope(EVENT_PAYLOAD_TYPE, EVENT_ENCODER.encode(withdrawal), key),
            )
            post(
                "hide reason",
                f"/v1/attestations/{ids[1]}/hidden",
                json={"reason": payload},
                headers=operator,
            )
        report = post(
            "report text", f"/v1/runs/{SEED}/reports", json={"reason": "other", "text": payload}
        )
        post("report text", f"/v1/runs/{SEED}/reports", json={"reason": "other", "text": payload})
        if report is not None:
            post(
                "resolution note",
                f"/v1/reports/{report['id']}/resolution",
                json={"resolution": "dismissed", "note": payload},
                headers=operator,
            )
        form = {"reason": "other", "text": f"form {payload}"}
        r = http.post(f"/runs/{SHORT}/reports", data=form, headers={"origin": site.url})
        assert r.status_code == 303, r.text
    runs = http.get("/v1/runs", params={"source": "synthetic", "limit": 100}).json()["items"]
    out.runs = [item["runDigest"] for item in runs]
    assert len(out.runs) == len(PAYLOADS)
    return out


@pytest.fixture(scope="module")
def planted(security_site: Site) -> Iterator[Planted]:
    with httpx.Client(base_url=security_site.url, timeout=30) as http:
        yield _plant(security_site, http)


@dataclass
class Seen:
    dialogs: list[str]
    console: list[str]
    dom: dict[str, Any]
    status: int


def _open(browser: Any, url: str, *, clipboard: bool = False) -> tuple[Any, Any, Seen]:
    context = browser.new_context()
    if clipboard:
        origin = urllib.parse.urlsplit(url)
        context.grant_permissions(
            ["clipboard-read", "clipboard-write"], origin=f"{origin.scheme}://{origin.netloc}"
        )
    page = context.new_page()
    page.add_init_script(WATCH)
    seen = Seen([], [], {}, 0)

    def on_dialog(dialog: Any) -> None:
        seen.dialogs.append(dialog.message)
        dialog.dismiss()

    page.on("dialog", on_dialog)
    page.on("console", lambda m: seen.console.append(f"{m.type}: {m.text}"))
    page.on("pageerror", lambda e: seen.console.append(f"pageerror: {e}"))
    response = page.goto(url, wait_until="load")
    seen.status = response.status if response is not None else 0
    return context, page, seen


def _check(page: Any, url: str, *, expect: list[str]) -> Seen:
    """Open ``url`` in ``page`` (which runs ``WATCH``), hover and wait a little (so handlers
    would fire), inspect the DOM."""
    seen = Seen([], [], {}, 0)

    def on_dialog(dialog: Any) -> None:
        seen.dialogs.append(dialog.message)
        dialog.dismiss()

    def on_console(message: Any) -> None:
        seen.console.append(f"{message.type}: {message.text}")

    page.on("dialog", on_dialog)
    page.on("console", on_console)
    try:
        response = page.goto(url, wait_until="load")
        seen.status = response.status if response is not None else 0
        page.mouse.move(200, 200)
        page.wait_for_timeout(50)
        seen.dom = page.evaluate(INSPECT)
    finally:
        page.remove_listener("dialog", on_dialog)
        page.remove_listener("console", on_console)
    dom = seen.dom
    refused = [m for m in seen.console if "Content Security Policy" in m or "Refused" in m]
    problems = {
        "dialogs": seen.dialogs,
        "handlers": dom["handlers"],
        "scripts": dom["scripts"],
        "javascript links": dom["links"],
        "injected elements": dom["images"],
        "violations": dom["violations"] + refused,
        "missing text": [s for s in expect if s not in dom["text"]],
    }
    bad = {k: v for k, v in problems.items() if v}
    got = f"{seen.status}, text shown" + (f", {sorted(bad)}" if bad else ", nothing injected")
    if bad:
        record_attack(f"hostile strings shown on {_label(url)}", got, ok=False)
    assert not bad, (url, bad)
    return seen


def _label(url: str) -> str:
    """A page's kind, for the summary: ``/runs/{ref}``, ``/keys/{id}``, ``/?q=``…"""
    parts = urllib.parse.urlsplit(url)
    path = re.sub(r"/(runs|keys|groups|no)/[^/]+", r"/\1/{…}", parts.path)
    return path + ("?q=…" if "q=" in parts.query else "?runs=…" if "runs=" in parts.query else "")


def _visible(payload: str) -> str:
    """How ``payload`` reads in ``innerText`` (the page shows it whole; the RTL override and
    its pop are invisible characters innerText keeps)."""
    return payload.strip()


def test_hostile_strings_render_as_text(browser: Any, planted: Planted) -> None:
    base = planted.site.url
    expect = [_visible(p) for p in PAYLOADS]
    quoted = urllib.parse.quote(PAYLOADS[0], safe="")
    pages: list[tuple[str, list[str]]] = [
        (f"/runs/{SHORT}", expect),  # notes, evidence, environments, reports, resolutions
        (f"/runs/{SHORT}/history", []),
        ("/", []),
        ("/?" + urllib.parse.urlencode({"q": PAYLOADS[0]}), []),  # the search, echoed
        ("/log", []),
        (f"/runs/{quoted}", []),  # a 400 page naming the reference
        (f"/no/{quoted}", []),  # a 404 page
    ]
    # Key names on key pages; manifest titles and source ids on the hostile runs' pages.
    pages += [
        (f"/keys/{key_id}", [_visible(_key_name(payload, n))])
        for n, (key_id, payload) in enumerate(zip(planted.keys, PAYLOADS, strict=True))
    ]
    pages += [(f"/runs/{digest}", []) for digest in planted.runs]
    pages.append(("/compare?" + urllib.parse.urlencode({"runs": ",".join(planted.runs)}), []))
    dossier = httpx.get(f"{base}/v1/runs/{planted.runs[0]}").json()
    group = (dossier.get("links") or {}).get("group") or ""
    if group:
        pages.append((group.removeprefix(base) if group.startswith(base) else group, []))
    shown: dict[str, int] = {}
    context = browser.new_context()
    try:
        tab = context.new_page()
        tab.add_init_script(WATCH)
        for path, texts in pages:
            seen = _check(tab, base + path, expect=texts)
            shown[_label(path)] = shown.get(_label(path), 0) + 1
            if path == f"/runs/{planted.runs[0]}":
                assert any(_visible(p) in seen.dom["text"] for p in PAYLOADS)
    finally:
        context.close()
    for label, count in shown.items():
        record_attack(
            f"hostile strings shown on {label}",
            f"{count} page(s): text only; no element, handler, dialog, javascript: link or CSP "
            "violation",
            ok=True,
        )
    record_note(
        "security",
        f"escaping: {planted.written} writes of {len(PAYLOADS)} hostile strings, "
        f"{sum(shown.values())} pages checked in Chromium",
    )


def test_copy_buttons_and_api_docs_work_under_the_policy(browser: Any, planted: Planted) -> None:
    base = planted.site.url
    context, page, seen = _open(browser, f"{base}/runs/{SHORT}", clipboard=True)
    try:
        buttons = page.locator("button.copy[data-copy]")
        assert buttons.count() >= 1
        button = buttons.first
        assert button.is_visible()  # copy.js ran: the buttons are shown only where it does
        source = page.locator("#" + str(button.get_attribute("data-copy"))).text_content()
        button.click()
        page.wait_for_function("b => b.textContent === 'copied'", arg=button.element_handle())
        assert page.evaluate("navigator.clipboard.readText()") == source
        # The report form still posts under the policy (its Origin is sent: 303 back).
        page.select_option("#report-reason", "other")
        page.fill("#report-text", "posted under the policy")
        with page.expect_navigation():
            page.locator("section#report button[type=submit]").click()
        assert page.url.endswith("#report"), page.url
        assert "posted under the policy" in page.locator("section#report").inner_text()
        violations = page.evaluate("window.__violations")
    finally:
        context.close()
    assert not violations and not seen.dialogs, violations
    record_attack("copy buttons and report form under the CSP", "work, no violation", ok=True)

    context, page, seen = _open(browser, f"{base}/schema")
    try:
        page.get_by_text("Healthz").first.wait_for(timeout=15000)
        assert page.locator("script[src*='/static/openapi/scalar-']").count() == 1
        violations = page.evaluate("window.__violations")
    finally:
        context.close()
    errors = [m for m in seen.console if m.startswith(("error", "pageerror"))]
    errors = [m for m in errors if "favicon" not in m and "404" not in m]
    assert not violations and not errors, (violations, errors)
    record_attack("API docs (/schema) under the CSP", "rendered, no violation", ok=True)


def test_written_payloads_were_stored(planted: Planted) -> None:
    """The attacks were real: the hostile strings went in (a refusal would test nothing)."""
    listed = httpx.get(f"{planted.site.url}/v1/attestations", params={"subject": SEED}).json()
    notes = {item["predicate"].get("note") for item in listed["items"]}
    assert PAYLOADS[0] in notes, (notes, planted.refused)
    assert planted.keys, planted.refused
    assert Path(planted.site.data).exists()
