"""The offline verifier page (issue 29): ``benchproof verifier OUT.html`` writes one
self-contained file that checks citation receipts and saved signed answers in the browser, and
``GET /verify`` serves the same page under the site's Content-Security-Policy.

One corpus, built here from a real log: good receipts and answers, and edited, spliced,
re-signed, wrong-key, stale-checkpoint, missing-cosignature, stranger's-cosignature and
bad-cosignature ones. Each case is checked by the console scripts (``verify-citation``,
``verify-answer``) and by the page in headless Chromium opened from ``file://`` with every
other request refused, with WebCrypto's Ed25519 and with the bundled noble-ed25519; the
verdicts (pass, fail naming the check, or bad input) are the expected ones, case by case.
"""

from __future__ import annotations

import base64
import hashlib
import json
import re
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import msgspec
import pytest

from keys import NoteSigner, SigningKey
from keys.cosignatures import WitnessSigner
from keys.notes import sign_note
from service.app.cite import citation_receipt
from service.core.init import init_data_dir
from service.verifierpage.page import NOBLE, VENDOR, page_hashes, page_html
from tests.browser.conftest import DESKTOP, SCREENSHOTS, Server, serving
from tests.builders import bundle, ingest_event
from tests.servers import run_cli
from verifier.answers import saved, sign_answer
from verifier.receipts import SIGNING_CONTEXT, Receipt, parse, render

CHECKS = {"format", "statement", "signature", "checkpoint", "origin", "inclusion", "entry"}
CHECKS |= {"digest", "accessed", "permalink", "bytes", "body", "witnesses"}
TIME = 1_767_225_600  # the witnesses' cosigning time, 2026-01-01
Verdict = tuple[str, str | None]  # ("pass", None), ("fail", check) or ("error", None)


@dataclass
class Case:
    """One file to check, the keys to check it with, and the verdict both verifiers must give."""

    kind: str  # "citation" or "answer"
    data: bytes
    expect: Verdict
    log_key: str = ""
    witnesses: list[str] = field(default_factory=list)
    quorum: int | None = None
    paste: bool = False  # the page gets it pasted, not as a file
    path: Path = Path()


@dataclass
class Corpus:
    data: Path  # the log's data directory
    folder: Path
    cases: dict[str, Case]


# ---------------------------------------------------------------------------------------------
# Building the corpus


def _flip(text: str) -> str:
    """The same base64 field with one decoded byte changed (still canonical)."""
    data = bytearray(base64.b64decode(text))
    data[len(data) // 2] ^= 0x01
    return base64.b64encode(bytes(data)).decode()


def _non_canonical(line: str) -> str:
    """A base64 line spelt with a padding bit set: the same bytes, not their one spelling."""
    alphabet = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/"
    text = line.rstrip("=")
    assert len(text) < len(line), "a 32-byte hash is padded"
    return text[:-1] + alphabet[alphabet.index(text[-1]) | 1] + line[len(text) :]


def _edit_line(receipt: bytes, prefix: str, change: Any) -> bytes:
    lines = receipt.decode().split("\n")
    at = next(i for i, line in enumerate(lines) if line.startswith(prefix))
    lines[at] = change(lines[at])
    return "\n".join(lines).encode()


def _parts(receipt: bytes) -> Receipt:
    return parse(receipt)[1]


def _replace(receipt: bytes, **changes: Any) -> bytes:
    return render(msgspec.structs.replace(_parts(receipt), **changes))


def _body(note: bytes) -> bytes:
    return note[: note.rfind(b"\n\n") + 1]


def _cosigned(note: bytes, *signers: WitnessSigner) -> bytes:
    return note + "".join(w.cosign(_body(note), TIME) for w in signers).encode()


def _bad_cosignature(note: bytes, witness: WitnessSigner) -> bytes:
    """``witness``'s line with its timestamp changed after signing: its signature no longer
    covers what the line says."""
    line = witness.cosign(_body(note), TIME)
    prefix, encoded = line.rstrip("\n").rsplit(" ", 1)
    raw = bytearray(base64.b64decode(encoded))
    raw[4:12] = (TIME + 1).to_bytes(8, "big")
    return note + f"{prefix} {base64.b64encode(bytes(raw)).decode()}\n".encode()


def _answer(
    signer: NoteSigner, origin: str, size: int, body: bytes, checkpoint: bytes | None = None
) -> dict[str, Any]:
    target = "/v1/runs/" + hashlib.sha256(body).hexdigest()[:12]
    signature = sign_answer(signer, origin, size, target, body)
    kept = saved("https://bench.example", origin, size, target, body, signature)
    answer: dict[str, Any] = msgspec.to_builtins(kept)
    answer.pop("checkpoint", None)  # an answer saved without one has no such member
    if checkpoint is not None:
        answer["checkpoint"] = checkpoint.decode()
    return answer


def _json(answer: dict[str, Any]) -> bytes:
    return json.dumps(answer, indent=2, ensure_ascii=False).encode() + b"\n"


def fail(check: str) -> Verdict:
    """The verdict of a case that fails ``check``."""
    return ("fail", check)


def _build(root: Path) -> Corpus:
    folder = root / "corpus"
    folder.mkdir()
    other_log, _ = init_data_dir(root / "other")
    with other_log:
        stranger_log = other_log.signers.vkey
    w1 = WitnessSigner("witness.example/w1", SigningKey.generate())
    w2 = WitnessSigner("witness.example/w2", SigningKey.generate())
    impostor = WitnessSigner("witness.example/w1", SigningKey.generate())  # w1's name, not its key
    ledger, _ = init_data_dir(root / "data")
    with ledger:
        runs = []
        for author in range(3):
            parts = bundle(author=author, value=100 + author)
            ledger.append([(ingest_event(parts), parts["run"].digest)])
            runs.append(parts["run"].digest)
        store = ledger.store
        origin, vkey, signer = store.origin, ledger.signers.vkey, ledger.signers.note_signer
        good = citation_receipt(ledger, store.session, store, runs[0], base="https://bench.example")
        second = citation_receipt(
            ledger, store.session, store, runs[1], base="https://bench.example"
        )
        latest = store.latest_checkpoint()
        assert latest is not None
        stale = next(c for c in store.checkpoints() if c.size < latest.size)
    note = _parts(good).checkpoint
    statement = _parts(good).statement
    forger = SigningKey.generate()
    forged_note = sign_note(_body(note).decode(), [NoteSigner(origin, forger)])
    body = json.dumps({"run": runs[0], "title": "Grüße, ünïcode", "value": 100}).encode()
    answer = _answer(signer, origin, latest.size, body)
    both, only_w1 = _cosigned(note, w1, w2), _cosigned(note, w1)
    keys = [w1.vkey, w2.vkey]
    ok: Verdict = ("pass", None)
    cases = {
        # Receipts.
        "receipt-good": Case("citation", good, ok),
        "receipt-good-pasted": Case("citation", good, ok, paste=True),
        "receipt-cosigned": Case("citation", _replace(good, checkpoint=both), ok, witnesses=keys),
        "receipt-cosigned-no-witness-keys": Case("citation", _replace(good, checkpoint=both), ok),
        "receipt-quorum-one-of-two": Case(
            "citation", _replace(good, checkpoint=only_w1), ok, witnesses=keys, quorum=1
        ),
        "receipt-edited-header": Case(
            "citation",
            _edit_line(good, "evidence: ", lambda _: "evidence: reproduced"),
            fail("bytes"),
        ),
        "receipt-edited-signature-byte": Case(
            "citation",
            _edit_line(good, "signature ", lambda line: "signature " + _flip(line[10:])),
            fail("signature"),
        ),
        "receipt-edited-entry-byte": Case(
            "citation",
            _edit_line(good, "entry ", lambda line: "entry " + _flip(line[6:])),
            fail("inclusion"),
        ),
        "receipt-edited-checkpoint-byte": Case(
            "citation",
            _edit_line(good, "checkpoint ", lambda line: "checkpoint " + _flip(line[11:])),
            fail("checkpoint"),
        ),
        "receipt-non-canonical-base64": Case(
            "citation",
            _edit_line(good, "proof ", _non_canonical),
            fail("format"),
        ),
        "receipt-spliced": Case(
            "citation",
            _replace(good, entry=_parts(second).entry, proof=_parts(second).proof),
            fail("inclusion"),
        ),
        "receipt-re-signed": Case(
            "citation",
            _replace(
                good, signature=forger.sign(SIGNING_CONTEXT + statement), checkpoint=forged_note
            ),
            fail("signature"),
        ),
        "receipt-wrong-key": Case("citation", good, fail("signature"), log_key=stranger_log),
        "receipt-stale-checkpoint": Case(
            "citation", _replace(good, checkpoint=stale.note), fail("checkpoint")
        ),
        "receipt-missing-cosignature": Case(
            "citation", _replace(good, checkpoint=only_w1), fail("witnesses"), witnesses=keys
        ),
        "receipt-stranger-cosignature": Case(
            "citation",
            _replace(good, checkpoint=_cosigned(note, impostor)),
            fail("witnesses"),
            witnesses=[w1.vkey],
        ),
        "receipt-bad-cosignature": Case(
            "citation",
            _replace(good, checkpoint=_bad_cosignature(note, w1)),
            fail("witnesses"),
            witnesses=[w1.vkey],
        ),
        "receipt-unreadable-log-key": Case("citation", good, ("error", None), log_key="not a vkey"),
        # Saved answers.
        "answer-good": Case("answer", _json(answer), ok),
        "answer-good-pasted": Case("answer", _json(answer), ok, paste=True),
        "answer-with-cosigned-checkpoint": Case(
            "answer", _json(_answer(signer, origin, latest.size, body, both)), ok, witnesses=keys
        ),
        "answer-edited-body": Case(
            "answer", _json({**answer, "body": answer["body"].replace("100", "99")}), fail("body")
        ),
        "answer-edited-tree-size": Case(
            "answer", _json({**answer, "treeSize": answer["treeSize"] - 1}), fail("signature")
        ),
        "answer-edited-signature-byte": Case(
            "answer",
            _json({**answer, "signature": f"{origin} {_flip(answer['signature'].split()[1])}"}),
            fail("signature"),
        ),
        "answer-re-signed": Case(
            "answer",
            _json(_answer(NoteSigner(origin, forger), origin, latest.size, body)),
            fail("signature"),
        ),
        "answer-wrong-key": Case("answer", _json(answer), fail("signature"), log_key=stranger_log),
        "answer-stale-checkpoint": Case(
            "answer",
            _json(_answer(signer, origin, latest.size, body, stale.note)),
            fail("witnesses"),  # the CLI checks the saved checkpoint under this name
        ),
        "answer-missing-cosignature": Case(
            "answer",
            _json(_answer(signer, origin, latest.size, body, only_w1)),
            fail("witnesses"),
            witnesses=keys,
        ),
        "answer-no-checkpoint-for-witnesses": Case(
            "answer", _json(answer), fail("witnesses"), witnesses=[w1.vkey]
        ),
    }
    for name, case in cases.items():
        case.log_key = case.log_key or vkey
        case.path = folder / (name + (".txt" if case.kind == "citation" else ".json"))
        case.path.write_bytes(case.data)
    return Corpus(root / "data", folder, cases)


CASES = [
    *(f"receipt-{n}" for n in ("good", "good-pasted", "cosigned", "cosigned-no-witness-keys")),
    *(f"receipt-{n}" for n in ("quorum-one-of-two", "edited-header", "edited-signature-byte")),
    *(f"receipt-{n}" for n in ("edited-entry-byte", "edited-checkpoint-byte", "spliced")),
    *(f"receipt-{n}" for n in ("non-canonical-base64", "re-signed", "wrong-key")),
    *(f"receipt-{n}" for n in ("stale-checkpoint", "missing-cosignature")),
    *(f"receipt-{n}" for n in ("stranger-cosignature", "bad-cosignature", "unreadable-log-key")),
    *(f"answer-{n}" for n in ("good", "good-pasted", "with-cosigned-checkpoint", "edited-body")),
    *(f"answer-{n}" for n in ("edited-tree-size", "edited-signature-byte", "re-signed")),
    *(f"answer-{n}" for n in ("wrong-key", "stale-checkpoint", "missing-cosignature")),
    "answer-no-checkpoint-for-witnesses",
]


@pytest.fixture(scope="module")
def corpus(tmp_path_factory: pytest.TempPathFactory) -> Corpus:
    built = _build(tmp_path_factory.mktemp("verifier"))
    assert sorted(built.cases) == sorted(CASES)
    return built


# ---------------------------------------------------------------------------------------------
# The two verifiers


def _cli_verdict(case: Case, folder: Path) -> tuple[Verdict, str]:
    """The console script's verdict: exit 0 passes, 1 fails (its last line names the check),
    2 is bad input."""
    key = folder / (case.path.stem + ".log.vkey")
    key.write_text(case.log_key + "\n")
    args: list[object] = [
        "verify-citation" if case.kind == "citation" else "verify-answer",
        case.path,
        "--log-key",
        key,
    ]
    for i, witness in enumerate(case.witnesses):
        path = folder / f"{case.path.stem}.witness{i}.vkey"
        path.write_text(witness + "\n")
        args += ["--witness-key", path]
    if case.quorum is not None:
        args += ["--quorum", case.quorum]
    done = run_cli(*args, timeout=120)
    said = (done.stderr.strip() or done.stdout.strip()).splitlines() or [""]
    if done.returncode == 0:
        return ("pass", None), said[-1]
    if done.returncode == 2:
        return ("error", None), said[-1]
    named = re.search(r"does not verify: ([a-z]+)\b", said[-1])
    check = (
        named[1]
        if named
        else next((w for w in re.findall(r"[a-z]+", said[-1]) if w in CHECKS), "?")
    )
    return ("fail", check), said[-1]


def _page_verdict(tab: Any, url: str, case: Case) -> tuple[Verdict, str]:
    tab.goto("about:blank")  # a fresh page each time (the same URL again may not reload)
    tab.goto(url)
    # Locators, not wait_for_function: the page's policy refuses the eval that one needs.
    tab.locator("body[data-engine]").wait_for(state="attached")
    if case.paste:
        tab.fill("#subject", case.data.decode())
    else:
        tab.set_input_files("#subject-file", str(case.path))
        tab.locator("#subject-name", has_text=case.path.name).wait_for()
    tab.fill("#logkey", case.log_key)
    tab.fill("#witnesses", "\n".join(case.witnesses))
    tab.fill("#quorum", "" if case.quorum is None else str(case.quorum))
    tab.click("#check")
    tab.locator(
        "#verdict:is([data-verdict=pass], [data-verdict=fail], [data-verdict=error])"
    ).wait_for()
    verdict = tab.locator("#verdict")
    state = verdict.get_attribute("data-verdict")
    check = verdict.get_attribute("data-check") or None
    return (state, check), verdict.inner_text()


@pytest.fixture(scope="module")
def page_file(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The page as ``benchproof verifier`` writes it."""
    out = tmp_path_factory.mktemp("page") / "verifier.html"
    done = run_cli("verifier", out)
    assert done.returncode == 0, done.stderr
    assert str(out) in done.stdout and len(done.stdout.strip().splitlines()) == 1
    return out


class Offline:
    """A Chromium tab showing the page from ``file://``: its context's proxy leads nowhere,
    every request but the page itself is refused, and every request is recorded."""

    def __init__(self, browser: Any, url: str) -> None:
        self.url = url
        self.context = browser.new_context(viewport=DESKTOP, proxy={"server": "http://127.0.0.1:9"})
        self.requests: list[str] = []
        self.errors: list[str] = []
        self.context.on("request", lambda request: self.requests.append(request.url))
        self.context.route("**/*", self._only_the_page)
        self.tab = self.context.new_page()
        self.tab.on("pageerror", lambda exc: self.errors.append(str(exc)))
        self.tab.on(
            "console",
            lambda m: self.errors.append(m.text) if m.type in ("error", "warning") else None,
        )

    def _only_the_page(self, route: Any) -> None:
        if route.request.url.split("#")[0] == self.url.split("#")[0]:
            route.continue_()
        else:
            route.abort()

    def elsewhere(self) -> list[str]:
        page = self.url.split("#")[0]
        return [u for u in self.requests if u.split("#")[0] not in (page, "about:blank")]


@pytest.fixture(scope="module", params=["webcrypto", "noble"])
def offline(request: pytest.FixtureRequest, browser: Any, page_file: Path) -> Iterator[Offline]:
    """The page offline, checking signatures with WebCrypto, or with noble-ed25519 (forced)."""
    url = page_file.as_uri() + ("#engine=noble" if request.param == "noble" else "")
    tab = Offline(browser, url)
    tab.engine = request.param  # type: ignore[attr-defined]
    yield tab
    tab.context.close()


# ---------------------------------------------------------------------------------------------
# The tests


@pytest.mark.parametrize("name", CASES)
def test_the_cli_gives_each_cases_verdict(corpus: Corpus, name: str) -> None:
    case = corpus.cases[name]
    got, said = _cli_verdict(case, corpus.folder)
    assert got == case.expect, f"{name}: the CLI said {said!r}"


@pytest.mark.parametrize("name", CASES)
def test_the_page_offline_gives_each_cases_verdict(
    corpus: Corpus, offline: Offline, name: str
) -> None:
    case = corpus.cases[name]
    got, said = _page_verdict(offline.tab, offline.url, case)
    assert offline.tab.locator("body").get_attribute("data-engine") == offline.engine  # type: ignore[attr-defined]
    assert got == case.expect, f"{name}: the page said {said!r}"
    assert offline.elsewhere() == [], f"the page asked for {offline.elsewhere()}"
    assert offline.errors == []


def test_the_page_and_the_cli_agree_case_by_case(
    corpus: Corpus, browser: Any, page_file: Path
) -> None:
    tab = Offline(browser, page_file.as_uri())
    try:
        differ = {}
        for name in CASES:
            case = corpus.cases[name]
            (cli, cli_said), (page, page_said) = (
                _cli_verdict(case, corpus.folder),
                _page_verdict(tab.tab, tab.url, case),
            )
            if cli != page:
                differ[name] = (cli, cli_said, page, page_said)
        assert tab.elsewhere() == []
    finally:
        tab.context.close()
    assert differ == {}


def test_a_passing_and_a_failing_check_in_words(corpus: Corpus, offline: Offline) -> None:
    tab = offline.tab
    _page_verdict(tab, offline.url, corpus.cases["receipt-cosigned"])
    steps = tab.locator("#steps li").all_inner_texts()
    assert any(s.startswith("The log's key signed this statement: passed") for s in steps), steps
    assert any("2 of 2 witness(es) cosigned it" in s for s in steps), steps
    assert tab.locator("#verdict").inner_text().startswith("Verified.")
    if offline.engine == "webcrypto":  # type: ignore[attr-defined]
        SCREENSHOTS.mkdir(exist_ok=True)
        tab.screenshot(path=str(SCREENSHOTS / "verifier-pass-desktop.png"), full_page=True)
    _page_verdict(tab, offline.url, corpus.cases["receipt-missing-cosignature"])
    failed = tab.locator("#steps li.failed").all_inner_texts()
    assert len(failed) == 1 and "Enough witnesses cosigned that checkpoint: failed" in failed[0]
    assert "witness.example/w2" in failed[0]
    assert tab.locator("#steps li.skipped").count() > 0  # what follows is not checked
    assert 'fails the check "witnesses"' in tab.locator("#verdict").inner_text()


@pytest.fixture(scope="module")
def server(corpus: Corpus) -> Iterator[Server]:
    with serving(corpus.data) as served:
        yield served


def test_the_served_page_works_under_the_sites_policy(
    corpus: Corpus, server: Server, browser: Any
) -> None:
    context = browser.new_context(viewport=DESKTOP)
    tab = context.new_page()
    problems: list[str] = []
    elsewhere: list[str] = []
    tab.on("pageerror", lambda exc: problems.append(str(exc)))
    tab.on("console", lambda m: problems.append(m.text) if m.type in ("error", "warning") else None)
    tab.on(
        "request",
        lambda r: None if r.url.startswith(server.base + "/verify") else elsewhere.append(r.url),
    )
    try:
        response = tab.goto(server.base + "/verify")
        assert response is not None and response.status == 200
        assert response.body() == page_html()
        policy = response.headers["content-security-policy"]
        script, style = page_hashes()
        assert f"script-src 'self' {script}" in policy and f"style-src 'self' {style}" in policy
        assert "unsafe-inline" not in policy and "http" not in policy and "*" not in policy
        for name in ("receipt-cosigned", "receipt-spliced", "answer-edited-body"):
            case = corpus.cases[name]
            got, said = _page_verdict(tab, server.base + "/verify", case)
            assert got == case.expect, f"{name}: {said}"
    finally:
        context.close()
    assert problems == [], problems  # a refused script or style would be reported here
    assert elsewhere == []


def test_the_vendored_noble_is_the_pinned_one() -> None:
    pinned = {}
    for line in (VENDOR / "SHA256SUMS").read_text().splitlines():
        digest, _, name = line.partition("  ")
        pinned[name] = digest
    assert set(pinned) == {NOBLE, "LICENSE.noble-ed25519"}
    for name, digest in pinned.items():
        assert hashlib.sha256((VENDOR / name).read_bytes()).hexdigest() == digest, name
    assert "MIT License" in (VENDOR / "LICENSE.noble-ed25519").read_text()


def test_the_page_names_no_other_resource() -> None:
    page = page_html().decode()
    markup = re.sub(r"<(script|style)>.*?</\1>", "", page, flags=re.DOTALL)
    assert not re.search(r"\b(src|href|action|srcset|poster|data)\s*=", markup, re.IGNORECASE)
    assert not re.search(r"<(link|img|iframe|object|embed|base|form)\b", markup, re.IGNORECASE)
    style = re.search(r"<style>(.*?)</style>", page, re.DOTALL)
    assert style is not None and "url(" not in style[1] and "@import" not in style[1]
    script = re.search(r"<script>(.*?)</script>", page, re.DOTALL)
    assert script is not None
    assert not re.search(r"\b(fetch|XMLHttpRequest|WebSocket|EventSource|sendBeacon)\b", script[1])
    assert not re.search(r"\bimport\s*\(|\beval\s*\(|new Function\b", script[1])
    # The page's own policy: nothing but its inline script and style.
    policy = re.search(r'http-equiv="Content-Security-Policy" content="([^"]*)"', page)
    assert policy is not None and policy[1].startswith("default-src 'none'; ")
    script_hash, style_hash = page_hashes()
    assert f"script-src {script_hash};" in policy[1] and f"style-src {style_hash};" in policy[1]


def test_the_verifier_command_says_where_or_why_not(tmp_path: Path) -> None:
    out = tmp_path / "v.html"
    done = run_cli("verifier", out)
    assert done.returncode == 0 and out.read_bytes() == page_html()
    refused = run_cli("verifier", tmp_path / "missing" / "v.html")
    assert refused.returncode == 2
    assert len(refused.stderr.strip().splitlines()) == 1 and "missing" in refused.stderr
