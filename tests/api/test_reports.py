"""Reports over HTTP: anonymous, appended by the index as ``report.filed.v1``; a run with an
open report is under review (dossier and page), and its evidence level does not change."""

from __future__ import annotations

import msgspec

from service.app.replay import replay
from service.app.report import REASONS
from tests.api.test_keys import World, problem, refused, world
from verifier.log import verify_log

__all__ = ["world"]  # the fixture, shared with test_keys


def path(ref: str) -> str:
    return f"/v1/runs/{ref}/reports"


def test_a_report_puts_the_run_under_review(world: World) -> None:
    run = world.runs[0]
    dossier = world.client.get(f"/v1/runs/{run}").json()
    assert dossier["underReview"] is False
    assert "Under review" not in world.client.get(f"/runs/{run}").text
    before = world.size()
    r = world.client.post(path(run), json={"reason": "incorrect-result", "text": "off by 10x"})
    assert r.status_code == 201, r.text
    filed = r.json()
    assert filed["index"] == before and filed["id"].startswith("sha256:")
    dossier = world.client.get(f"/v1/runs/{run}").json()
    assert dossier["underReview"] is True
    assert [(x["id"], x["category"], x["text"]) for x in dossier["reports"]] == [
        (filed["id"], "incorrect-result", "off by 10x")
    ]
    assert "Under review" in world.client.get(f"/runs/{run}").text
    assert world.client.get(f"/v1/runs/{world.runs[1]}").json()["underReview"] is False
    again = world.client.post(path(run), json={"reason": "incorrect-result", "text": "off by 10x"})
    assert again.status_code == 200 and again.json() == filed
    assert world.size() == before + 1


def test_reports_never_change_the_evidence_level(world: World) -> None:
    run = world.runs[1]
    level = world.client.get(f"/v1/runs/{run}").json()["evidenceLevel"]
    assert level == "reproducible"
    for reason in REASONS:
        r = world.client.post(path(run[7:19]), json={"reason": reason, "text": f"{reason}!"})
        assert r.status_code == 201, r.text
        assert world.client.get(f"/v1/runs/{run}").json()["evidenceLevel"] == level, reason
    assert len(world.client.get(f"/v1/runs/{run}").json()["reports"]) == len(REASONS)
    assert verify_log(world.ledger.store).ok
    assert replay(world.ledger).ok


def test_bad_reports_are_refused(world: World) -> None:
    run = world.runs[0]
    enc = msgspec.json.encode
    for body in (
        b"not json",
        enc({"reason": "boring", "text": "x"}),
        enc({"reason": "other"}),
        enc({"reason": "other", "text": "x", "email": "a@b"}),
        enc({"reason": "other", "text": "é" * 2049}),  # 4098 bytes
    ):
        refused(world, path(run), body, 400, "invalid-report")
    refused(world, path("nope:x"), enc({"reason": "other", "text": "x"}), 404, "unknown-run")
    refused(world, path("nope"), enc({"reason": "other", "text": "x"}), 400, "bad-request")
    problem(world.client.post(f"/v1/runs/{run}/likes", json={}), 404, "not-found")
    fits = world.client.post(path(run), json={"reason": "other", "text": "é" * 2048})
    assert fits.status_code == 201, fits.text
