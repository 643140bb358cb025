"""``benchproof keys revoke``, ``keys grant``, ``withdraw``, ``hide`` and ``resolve``: the real
console script against a real ``benchproof serve`` process on loopback (started with the rate
limit and trusted proxy options); refusals are one line and exit 2, and change nothing."""

from __future__ import annotations

import json
import subprocess
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from tests.cli.conftest import Runner, seeded_server
from tests.cli.test_attest_cli import SEED, Server, _one_line_error, _register

MODERATION_OPTIONS = (
    "--limit-address-hour",
    0,
    "--limit-key-day",
    50,
    "--trusted-proxy",
    "10.0.0.1",
)


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory, bp: Runner) -> Iterator[Server]:
    data = tmp_path_factory.mktemp("moderationcli") / "data"
    with seeded_server(bp, data, *MODERATION_OPTIONS) as url:
        yield Server(url, data)


def _token(bp: Runner, server: Server, name: str) -> str:
    out = bp("token", "create", name, "--data", server.data)
    assert out.returncode == 0, out.stderr
    return out.stdout.strip()


def _ok(out: subprocess.CompletedProcess[str]) -> dict[str, object]:
    assert out.returncode == 0, out.stderr
    answer: dict[str, object] = json.loads(out.stdout)
    return answer


def _attest(bp: Runner, server: Server, key: Path, kind: str) -> str:
    out = bp("attest", SEED, "--kind", kind, "--key", key, "--server", server.url)
    return str(_ok(out)["id"])


def test_withdraw_hide_and_resolve(bp: Runner, server: Server, tmp_path: Path) -> None:
    key, other = tmp_path / "a.key", tmp_path / "b.key"
    _register(bp, server, key, "alice")
    _register(bp, server, other, "bob")
    token = _token(bp, server, "mod")
    withdrawn = _attest(bp, server, key, "reproduced")
    hidden = _attest(bp, server, key, "environment-note")
    url = ("--server", server.url)

    before = server.size()
    # The id and its attester are checked before anything is signed or posted.
    refused = bp("withdraw", withdrawn, "--key", other, *url)
    said = _one_line_error(refused)
    assert "only the key that posted it withdraws it" in said and server.size() == before
    assert refused.returncode == 2
    for wrong in ("nope", withdrawn[7:19], withdrawn.upper()):
        malformed = bp("withdraw", wrong, "--key", key, *url)
        said = _one_line_error(malformed)
        assert malformed.returncode == 2 and "is not an attestation id" in said
        assert "regex" not in said and "\\Z" not in said and server.size() == before
    unknown = bp("withdraw", "sha256:" + "0" * 64, "--key", key, *url)
    assert "attestation" in _one_line_error(unknown, 3) and server.size() == before
    _ok(bp("withdraw", withdrawn, "--reason", "wrong clocks", "--key", key, *url))
    refused = bp("hide", hidden, "--reason", "spam", "--token", "bp_wrong", *url)
    assert "HTTP 401" in _one_line_error(refused) and server.size() == before + 1
    _ok(bp("hide", hidden, "--reason", "spam", "--token", token, *url))
    dossier = server.run(SEED)
    assert dossier["hiddenByModeration"] == 1
    listed = dossier["attestations"]
    assert isinstance(listed, list)
    [shown] = listed
    assert (shown["id"], shown["withdrawn"], shown["withdrawalReason"]) == (
        withdrawn,
        True,
        "wrong clocks",
    )
    # Its attester may still take back one the index hid (not shown, kept in the log).
    size = server.size()
    _ok(bp("withdraw", hidden, "--reason", "mine", "--key", key, *url))
    assert server.size() == size + 1

    report = _ok(bp("report", SEED, "--reason", "other", "--text", "odd", *url))
    assert server.run(SEED)["underReview"] is True
    resolve = ("resolve", str(report["id"]), "--resolution", "dismissed", "--note", "fine")
    _ok(bp(*resolve, "--token", token, *url))
    assert server.run(SEED)["underReview"] is False
    assert "HTTP 409" in _one_line_error(bp(*resolve, "--token", token, *url))


def test_grant_and_revoke(bp: Runner, server: Server, tmp_path: Path) -> None:
    key, other = tmp_path / "c.key", tmp_path / "d.key"
    key_id = _register(bp, server, key, "carol")
    other_id = _register(bp, server, other, "dave")
    token = _token(bp, server, "ops")
    url = ("--server", server.url)

    # A short id (the first 12 hex digits, as pages show a key) names the key as its full id.
    _ok(bp("keys", "grant", key_id[:12], "--role", "rerunner", "--token", token, *url))
    assert httpx.get(f"{server.url}/v1/keys/{key_id}").json()["role"] == "rerunner"
    before = server.size()
    again = bp("keys", "grant", key_id, "--role", "rerunner", "--token", token, *url)
    assert "Not a community key" in _one_line_error(again) and server.size() == before

    wrong = bp("keys", "revoke", key_id, "--key", other, *url)
    assert other_id in _one_line_error(wrong) and server.size() == before
    _ok(bp("keys", "revoke", key_id[:12], "--key", key, "--reason", "retired", *url))
    _ok(bp("keys", "revoke", other_id[:12], "--token", token, "--reason", "spam", *url))
    for key_file, kid in ((key, key_id), (other, other_id)):
        assert "revoked" in httpx.get(f"{server.url}/v1/keys/{kid}").json()
        size = server.size()
        out = bp("attest", SEED, "--kind", "reproduced", "--key", key_file, *url)
        assert "HTTP 403" in _one_line_error(out) and server.size() == size


def test_serve_refuses_bad_limit_options(bp: Runner, tmp_path: Path) -> None:
    for option in (("--limit-key-hour", "-1"), ("--trusted-proxy", "proxy.local")):
        out = bp("serve", "--data", tmp_path, *option)
        assert out.returncode == 2 and out.stderr.count("\n") == 1, out.stderr
