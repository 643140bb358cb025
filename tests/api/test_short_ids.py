"""Issue 30, point 9: a key's or a group's short id (the first 12 hex digits pages show) works
wherever its full id does on a read: the key and group pages and their JSON (``keys grant`` and
``keys revoke`` resolve one through that read, then post the full id; a write through the API
names the full id). A prefix that
names several keys is a 400 listing them; ``/keys`` lists every key, a page at a time."""

from __future__ import annotations

import re

from keys import SigningKey
from projections import queries
from tests.api.test_keys import World, register, world
from tests.api.test_moderation import bearer, post, token

__all__ = ["token", "world"]  # the fixtures, used by name


def _group(world: World) -> str:
    view = queries.run_view(world.ledger.store.session, world.runs[0])
    assert view is not None and view.comparisonKey is not None
    return view.comparisonKey


def test_a_short_key_id_names_the_key_on_its_page_and_in_json(world: World) -> None:
    key = SigningKey.generate()
    register(world, key, "shorty")
    short = key.key_id[:12]
    shown = world.client.get(f"/v1/keys/{short}")
    assert shown.status_code == 200, shown.text
    assert shown.json() == world.client.get(f"/v1/keys/{key.key_id}").json()
    entries = world.client.get(f"/v1/keys/{short}/entries")
    assert entries.status_code == 200 and entries.json()["items"]
    page = world.client.get(f"/keys/{short}")
    assert page.status_code == 200 and key.key_id in page.text and "shorty" in page.text
    # Shorter than a short id, or no key's: not found, as before.
    assert world.client.get(f"/keys/{key.key_id[:11]}").status_code == 404
    assert world.client.get("/v1/keys/" + "f" * 12).status_code == 404


def test_a_short_group_key_names_the_group(world: World) -> None:
    group = _group(world)
    digits = group.removeprefix("sha256:")
    full = world.client.get(f"/v1/groups/{group}").json()
    for short in (digits[:12], "sha256:" + digits[:12]):
        assert world.client.get(f"/v1/groups/{short}").json() == full
        history = world.client.get(f"/v1/groups/{short}/history")
        assert history.status_code == 200 and history.json()
        page = world.client.get(f"/groups/{short}")
        assert page.status_code == 200 and group in page.text
    assert world.client.get("/groups/" + "0" * 12).status_code == 404


def test_a_write_names_the_full_key_id(world: World, token: str) -> None:
    """A grant or a revocation names the whole id: 48 bits of a short id can be ground for, so
    the server never resolves one for a write (``keys grant`` and ``keys revoke`` resolve it
    first, through the read, and name the full id they post and say)."""
    key = SigningKey.generate()
    register(world, key, "granted")
    short = key.key_id[:12]
    post(world, f"/v1/keys/{short}/grants", 404, "unknown-key-id", json={"role": "rerunner"},
         headers=bearer(token))  # fmt: skip
    post(world, f"/v1/keys/{short}/revocation", 404, "unknown-key-id", json={"reason": "x"},
         headers=bearer(token))  # fmt: skip
    post(world, f"/v1/keys/{key.key_id}/grants", 201, json={"role": "rerunner"},
         headers=bearer(token))  # fmt: skip
    assert world.client.get(f"/v1/keys/{short}").json()["role"] == "rerunner"


def test_a_prefix_finds_every_key_it_starts(world: World) -> None:
    """The prefix search ``resolve_key`` reads (a short id that names several keys is then a
    400 listing them; two keys sharing 12 hex digits cannot be made to show it)."""
    made = [SigningKey.generate() for _ in range(3)]
    for i, key in enumerate(made):
        register(world, key, f"k{i}")
    conn = world.ledger.store.session
    every = set(queries.keyring(conn))
    for key in made:
        for n in (1, 2, 12, 64):
            found = queries.matching_keys(conn, key.key_id[:n].upper(), limit=100)
            assert found == sorted(k for k in every if k.startswith(key.key_id[:n]))
    assert queries.matching_keys(conn, "not hex") == []


def test_the_keys_index_lists_every_key_linking_each(world: World) -> None:
    key = SigningKey.generate()
    register(world, key, "listed")
    page = world.client.get("/keys")
    assert page.status_code == 200 and page.headers["content-type"].startswith("text/html")
    listed = set(re.findall(r'href="/keys/([0-9a-f]{64})"', page.text))
    known = {k["keyId"] for k in world.client.get("/v1/keys").json()["items"]}
    assert key.key_id in listed and listed == known
    assert ">listed<" in page.text or "listed" in page.text
    key_page = world.client.get(f"/keys/{key.key_id}")
    assert 'href="/keys"' in key_page.text
