"""Rate limits on the public writes over HTTP: over a limit is 429 problem+json with
``Retry-After`` and appends nothing; signed writes count against their key, every write against
the client address; two apps on one data directory share the counts; ``X-Forwarded-For`` names
the client only behind a trusted proxy."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager

from litestar import Litestar
from litestar.testing import TestClient

from keys import SigningKey
from service.core.config import Settings
from service.shared.limits import Limits
from service.web.app import create_app
from tests.api.test_attestations import path, signed, statement
from tests.api.test_keys import World, problem, register, world

__all__ = ["world"]  # the fixture, shared with test_keys

NONE = Limits(key_hour=0, key_day=0, address_hour=0, address_day=0)


@contextmanager
def app(
    world: World, limits: Limits, proxies: tuple[str, ...] = ()
) -> Iterator[TestClient[Litestar]]:
    settings = Settings(data=world.ledger.data.root, limits=limits, trusted_proxies=proxies)
    with TestClient(app=create_app(settings, ledger=world.ledger)) as client:
        yield client


def report(client: TestClient[Litestar], run: str, text: str, **headers: str) -> int:
    r = client.post(
        f"/v1/runs/{run}/reports", json={"reason": "other", "text": text}, headers=headers
    )
    return r.status_code


def test_over_the_address_limit_is_429_with_retry_after(world: World) -> None:
    limits = Limits(address_hour=2, address_day=0, key_hour=0, key_day=0)
    with app(world, limits) as client:
        assert report(client, world.runs[0], "one") == 201
        assert report(client, world.runs[0], "two") == 201
        before = world.size()
        r = client.post(f"/v1/runs/{world.runs[0]}/reports", json={"reason": "other", "text": "3"})
        body = problem(r, 429, "rate-limited")
        assert body["retry_after"] == 3600 and r.headers["retry-after"] == "3600"
        assert world.size() == before
        problem(client.post("/v1/keys/challenges", json={"keyId": "a" * 64}), 429, "rate-limited")
        world.clock.now = world.clock.now.replace(minute=59, second=30)
        assert client.post("/v1/runs/x/reports").headers["retry-after"] == "30"
        world.clock.now = world.clock.now.replace(hour=13, minute=0)
        assert report(client, world.runs[0], "three") == 201


def test_signed_writes_count_against_their_key(world: World) -> None:
    key, other = SigningKey.generate(), SigningKey.generate()
    register(world, key, "attester")
    register(world, other, "other")
    run = world.runs[0]
    # The registration counted already: one write is left to each key this hour.
    limits = Limits(key_hour=2, key_day=0, address_hour=0, address_day=0)
    with app(world, limits) as client:
        first = signed(statement(run, {"kind": "reproduced"}), key)
        assert client.post(path(run), content=first).status_code == 201
        before = world.size()
        second = signed(statement(run, {"kind": "environment-note"}), key)
        r = client.post(path(run), content=second)
        problem(r, 429, "rate-limited")
        assert int(r.headers["retry-after"]) > 0 and world.size() == before
        # A signature that does not verify counts against nobody: the key it names still has
        # its one write.
        genuine = signed(statement(run, {"kind": "reproduced"}), other)
        forged = genuine.replace(b'"sig":"', b'"sig":"AAAA', 1)
        problem(client.post(path(run), content=forged), 403, "bad-signature")
        assert client.post(path(run), content=genuine).status_code == 201


def test_two_apps_on_one_data_directory_share_the_counts(world: World) -> None:
    limits = Limits(address_hour=2, address_day=0, key_hour=0, key_day=0)
    with app(world, limits) as one, app(world, limits) as two:
        assert report(one, world.runs[0], "one") == 201
        assert report(two, world.runs[0], "two") == 201
        before = world.size()
        assert report(one, world.runs[0], "three") == 429
        assert report(two, world.runs[0], "three") == 429
        assert world.size() == before


def test_a_forwarded_address_counts_only_behind_a_trusted_proxy(world: World) -> None:
    limits = Limits(address_hour=1, address_day=0, key_hour=0, key_day=0)
    # The TestClient's peer is "testclient": as a trusted proxy, each forwarded client counts
    # on its own (the rightmost address that is not a trusted proxy).
    with app(world, limits, proxies=("testclient", "10.0.0.1")) as client:
        hop = {"x-forwarded-for": "203.0.113.7, 10.0.0.1"}
        assert report(client, world.runs[0], "a", **hop) == 201
        assert report(client, world.runs[0], "b", **hop) == 429
        spoofed = {"x-forwarded-for": "203.0.113.7, 198.51.100.9, 10.0.0.1"}
        assert report(client, world.runs[0], "c", **spoofed) == 201  # 198.51.100.9 is the client
        assert report(client, world.runs[0], "d", **{"x-forwarded-for": "2001:db8::1"}) == 201
    with app(world, limits) as client:  # no trusted proxy: the header is the client's word
        assert report(client, world.runs[1], "e", **{"x-forwarded-for": "192.0.2.1"}) == 201
        assert report(client, world.runs[1], "f", **{"x-forwarded-for": "192.0.2.2"}) == 429


def test_no_limits_when_every_limit_is_zero(world: World) -> None:
    with app(world, NONE) as client:
        assert all(report(client, world.runs[0], str(i)) == 201 for i in range(70))


def test_the_report_form_counts_against_the_address_too(world: World) -> None:
    limits = Limits(address_hour=1, address_day=0, key_hour=0, key_day=0)
    with app(world, limits) as client:
        assert report(client, world.runs[0], "by the API") == 201
        before = world.size()
        r = client.post(
            f"/runs/{world.runs[0]}/reports",
            data={"reason": "other", "text": "by the form"},
            follow_redirects=False,
        )
        assert r.status_code == 429
        assert r.headers["retry-after"].isdigit()
        assert "text/html" in r.headers["content-type"]
        assert world.size() == before
