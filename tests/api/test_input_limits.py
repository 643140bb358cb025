"""Issue 30, point 7: inputs no one should be able to post are refused with a problem naming the
field, and change nothing: a key name over 64 characters, an attested value that is negative,
zero for a duration or without a unit, a blank report text. The limits are in the OpenAPI
document and the predicate's schema; a long name that a log already holds is cut on the pages,
whole on hover."""

from __future__ import annotations

import json
from typing import Any

import pytest

from keys import SigningKey
from tests.api.test_attestations import path, signed, statement
from tests.api.test_keys import World, challenge, register, registration, world
from tests.api.test_moderation import attest

__all__ = ["world"]  # the fixture, used by name


def _refused(world: World, response: Any, field: str) -> dict[str, Any]:
    assert response.status_code == 400, response.text
    assert response.headers["content-type"].startswith("application/problem+json")
    body: dict[str, Any] = response.json()
    assert body.get("field") == field, body
    return body


def test_a_key_name_over_64_characters_is_refused(world: World) -> None:
    before = world.size()
    key = SigningKey.generate()
    long = "n" * 65
    r = world.client.post("/v1/keys", content=registration(key, long, challenge(world, key)))
    body = _refused(world, r, "name")
    assert "65 characters" in body["detail"] and "64" in body["detail"]
    assert world.size() == before
    register(world, key, "n" * 64)  # the limit itself is taken


@pytest.mark.parametrize(
    ("predicate", "field", "says"),
    [
        ({"kind": "reproduced", "value": -3.0, "unit": "ns"}, "predicate.value", "0 or more"),
        ({"kind": "reproduced", "value": 0, "unit": "ns"}, "predicate.value", "duration"),
        ({"kind": "reproduced", "value": 0.0, "unit": "ms"}, "predicate.value", "duration"),
        ({"kind": "reproduced", "value": 812}, "predicate.unit", "unit"),
    ],
)
def test_a_value_no_one_measured_is_refused(
    world: World, predicate: dict[str, Any], field: str, says: str
) -> None:
    key = SigningKey.generate()
    register(world, key, "measurer")
    run = world.runs[0]
    before = world.size()
    r = world.client.post(path(run), content=signed(statement(run, predicate), key))
    assert says in _refused(world, r, field)["detail"]
    assert world.size() == before
    # What stays allowed: a value of 0 that is no duration (a count), a positive duration.
    for fine in ({"value": 0, "unit": "errors"}, {"value": 812, "unit": "ns"}):
        ok = world.client.post(
            path(run), content=signed(statement(run, {"kind": "reproduced", **fine}), key)
        )
        assert ok.status_code in (200, 201), ok.text


@pytest.mark.parametrize("text", ["", "   ", "\n\t"])
def test_a_blank_report_is_refused(world: World, text: str) -> None:
    before = world.size()
    r = world.client.post(
        f"/v1/runs/{world.runs[0]}/reports", json={"reason": "other", "text": text}
    )
    _refused(world, r, "text")
    assert world.size() == before


def test_the_limits_are_in_the_openapi_document_and_the_schema(world: World) -> None:
    document = world.client.get("/schema/openapi.json").json()
    report = document["paths"]["/v1/runs/{ref}/reports"]["post"]
    text = json.dumps(report["requestBody"])
    assert '"minLength": 1' in text and "4096 bytes" in text
    registering = document["paths"]["/v1/keys"]["post"]
    assert "1 to 64" in registering["description"]
    schema = world.client.get("/schemas/attestation/v1").json()
    assert schema["properties"]["value"]["minimum"] == 0
    assert schema["dependentRequired"] == {"value": ["unit"]}


def test_a_long_name_is_cut_on_the_pages_and_whole_on_hover(world: World) -> None:
    key = SigningKey.generate()
    name = "a-name-that-someone-chose-and-that-goes-on-for-sixty-charss"
    assert 48 < len(name) <= 64
    register(world, key, name)
    run = world.runs[0]
    attest(world, key, run)
    for url in (f"/runs/{run}", f"/runs/{run}/history", f"/keys/{key.key_id}"):
        page = world.client.get(url).text
        assert f'<span class="cut" title="{name}">{name[:48]}…</span>' in page, url
