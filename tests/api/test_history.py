"""The history of a record over HTTP: ``GET /v1/runs/{ref}/history`` and its page list every
entry that touched a run, in log order (its ingest, attestations and their withdrawal or hiding,
a report and its resolution, a rerun requested, claimed and answered, rank and leader changes
that other runs' entries made in its group, its supersession), each with its signer and a link
to an inclusion proof that verifies against the signed checkpoint of the size answered;
``asOf`` cuts it."""

from __future__ import annotations

import base64
from dataclasses import dataclass
from typing import Any

import msgspec
import pytest

from events.merkle import leaf_hash, verify_inclusion
from events.types import AttestationWithdrawn, RunRetracted, RunSuperseded
from keys import SigningKey, open_note
from service.commands.keys import signed_event
from tests.api.test_keys import World, problem, register, world
from tests.api.test_moderation import attest, bearer, check_log
from tests.api.test_reruns import answer, claim, request, rerunner
from tests.builders import bundle, ingest_event

__all__ = ["world"]  # the fixture, shared with test_keys

# The run's reported value is 200 ns: these samples match it within the tolerance.
SAMPLES = [196.0, 198.0, 200.0, 202.0, 204.0]
ROW = "synthetic-row-1"


@dataclass
class Story:
    run: str  # the run whose history is told
    successor: str  # the run that supersedes it
    newcomer: str  # a better run of its group, which takes the lead
    retracted: str  # the group's first leader, retracted
    attester: SigningKey
    rerunner: SigningKey
    at: dict[str, int]  # the position of each step


def _ingest(world: World, author: int, value: int) -> tuple[str, int]:
    parts = bundle(group=1, author=author, value=value, raw_evidence=True)
    event = msgspec.structs.replace(ingest_event(parts), rowKey=ROW)
    at = world.size()
    world.ledger.append([(event, parts["run"].digest)])
    return parts["run"].digest, at


@pytest.fixture
def story(world: World) -> Story:
    """World's runs 0 (100 ns, the leader) and 1 (200 ns), then run X (200 ns) of the same
    group and source row, and everything that happens to it."""
    token = _token(world)
    at: dict[str, int] = {}
    run, at["ingest"] = _ingest(world, 300, 200)
    attester = SigningKey.generate()
    register(world, attester, "attester")
    at["attested"] = world.size()
    first = attest(world, attester, run)
    at["noted"] = world.size()
    second = attest(world, attester, run, kind="environment-note")
    withdrawal = signed_event(AttestationWithdrawn(attestationId=first, reason="wrong"), attester)
    at["withdrawn"] = world.size()
    r = world.client.post(f"/v1/attestations/{first}/withdrawal", content=withdrawal)
    assert r.status_code == 201, r.text
    at["hidden"] = world.size()
    r = world.client.post(
        f"/v1/attestations/{second}/hidden", json={"reason": "spam"}, headers=bearer(token)
    )
    assert r.status_code == 201, r.text
    at["reported"] = world.size()
    r = world.client.post(f"/v1/runs/{run}/reports", json={"reason": "other", "text": "odd"})
    assert r.status_code == 201, r.text
    at["resolved"] = world.size()
    r = world.client.post(
        f"/v1/reports/{r.json()['id']}/resolution",
        json={"resolution": "resolved", "note": "checked"},
        headers=bearer(token),
    )
    assert r.status_code == 201, r.text
    key = rerunner(world)
    at["requested"] = world.size()
    request_id = request(world, token, run, reason="check it")
    at["claimed"] = world.size()
    claim(world, request_id, key, run=run)
    at["answered"] = world.size()
    answer(world, request_id, key, SAMPLES, run=run)
    # Another run of its group beats every value: the lead moves and the run drops a rank.
    newcomer, at["newcomer"] = _ingest(world, 301, 50)
    # The first leader is retracted: one better value fewer.
    at["retracted"] = world.size()
    world.ledger.append([(RunRetracted(runDigest=world.runs[0], reason="bad data"), world.runs[0])])
    # A correction of its source row supersedes it (as an import does: one batch).
    parts = bundle(group=1, author=302, value=150, raw_evidence=True)
    successor = parts["run"].digest
    at["successor"] = world.size()
    world.ledger.append(
        [
            (msgspec.structs.replace(ingest_event(parts), rowKey=ROW), successor),
            (RunSuperseded(runDigest=run, supersededBy=successor, reason="row corrected"), run),
        ]
    )
    at["superseded"] = at["successor"] + 1
    return Story(run, successor, newcomer, world.runs[0], attester, key, at)


def _token(world: World) -> str:
    from service.web.auth import TokenStore

    return TokenStore(world.ledger.data.tokens).create("operator")


def history(world: World, ref: str, as_of: int | str | None = None) -> dict[str, Any]:
    url = f"/v1/runs/{ref}/history" + ("" if as_of is None else f"?asOf={as_of}")
    r = world.client.get(url)
    assert r.status_code == 200, r.text
    body: dict[str, Any] = r.json()
    return body


def names(world: World) -> dict[str, str]:
    """Every key's name by key id, as the API lists them."""
    return {k["keyId"]: k["name"] for k in world.client.get("/v1/keys").json()["items"]}


def test_every_entry_that_touched_the_run_in_log_order(world: World, story: Story) -> None:
    body = history(world, story.run)
    assert set(body) == {"runDigest", "asOf", "entries"}
    assert body["runDigest"] == story.run and body["asOf"] == world.size()
    entries = body["entries"]
    at = story.at
    assert [(e["position"], e["kinds"]) for e in entries] == [
        (at["ingest"], ["ingest", "evidence", "rank"]),
        (at["attested"], ["attestation"]),
        (at["noted"], ["attestation"]),
        (at["withdrawn"], ["withdrawal"]),
        (at["hidden"], ["hiding"]),
        (at["reported"], ["report"]),
        (at["resolved"], ["resolution"]),
        (at["requested"], ["rerun-request"]),
        (at["claimed"], ["rerun-claim"]),
        (at["answered"], ["rerun-result", "evidence"]),
        (at["newcomer"], ["rank", "leader"]),
        (at["retracted"], ["rank"]),
        (at["successor"], ["rank"]),
        (at["superseded"], ["supersession", "evidence", "rank"]),
    ]
    by = {e["position"]: e for e in entries}
    short = story.run[7:19]
    assert by[at["ingest"]]["event"] == "ingested; evidence: reproducible; ranked #2 in its group"
    assert by[at["ingest"]]["type"] == "run.ingested.v1"
    assert by[at["attested"]]["event"] == "attested (community): reproduced"
    assert by[at["noted"]]["event"] == "attested (community): environment-note"
    assert by[at["withdrawn"]]["event"] == "attestation withdrawn by its author: wrong"
    assert by[at["hidden"]]["event"] == "attestation hidden by the index: spam"
    assert by[at["reported"]]["event"] == "report filed: other"
    assert by[at["resolved"]]["event"] == "report resolved: checked"
    assert by[at["requested"]]["event"] == "rerun requested: check it"
    rerunner_name = names(world)[story.rerunner.key_id]
    assert by[at["claimed"]]["event"] == f"rerun claimed by {rerunner_name}"
    assert by[at["answered"]]["event"] == (
        f"rerun result by {rerunner_name}: within the tolerance; evidence: reproducible → verified"
    )
    assert by[at["answered"]]["evidenceLevel"] == "verified"
    leader, newcomer = story.retracted[7:19], story.newcomer[7:19]
    assert by[at["newcomer"]]["event"] == (
        f"rank #2 → #3 in its group; group leader {leader} → {newcomer} (run {newcomer} ingested)"
    )
    assert by[at["newcomer"]]["rank"] == {"before": 2, "after": 3}
    assert "evidenceLevel" not in by[at["newcomer"]]
    assert by[at["retracted"]]["event"] == f"rank #3 → #2 in its group (run {leader} retracted)"
    assert by[at["retracted"]]["type"] == "run.retracted.v1"
    assert by[at["successor"]]["rank"] == {"before": 2, "after": 3}
    assert by[at["superseded"]]["event"] == (
        f"superseded by {story.successor[7:19]}: row corrected;"
        " evidence: verified → superseded; left its group's ranking (was #3)"
    )
    assert by[at["superseded"]]["evidenceLevel"] == "superseded"
    assert by[at["superseded"]]["subject"] == story.run

    # Each entry names the key that signed its envelope, by name and id.
    keys = names(world)
    index = next(k for k, name in keys.items() if name == keys[entries[0]["signer"]["keyId"]])
    signers = {e["position"]: e["signer"] for e in entries}
    for step in ("attested", "noted", "withdrawn"):
        assert signers[at[step]] == {"keyId": story.attester.key_id, "name": "attester"}
    for step in ("claimed", "answered"):
        assert signers[at[step]] == {"keyId": story.rerunner.key_id, "name": rerunner_name}
    for step in ("ingest", "hidden", "reported", "resolved", "requested", "superseded"):
        assert signers[at[step]] == {"keyId": index, "name": keys[index]}
    for e in entries:
        assert e["links"]["signer"] == f"/v1/keys/{e['signer']['keyId']}"
        assert e["links"]["run"] == f"/v1/runs/{story.run}?asOf={e['position'] + 1}"
        assert e["recordedAt"].startswith("2026-03-01T12:00:00")
    assert short in history(world, short)["runDigest"]  # any reference names it
    check_log(world)


def _checked(world: World, entry: dict[str, Any], size: int) -> None:
    """The entry's proof link answers a proof from its leaf to the root that the log key signed
    for ``size`` entries."""
    proof = world.client.get(entry["links"]["proof"]).json()
    assert (proof["index"], proof["treeSize"]) == (entry["position"], size)
    leaves = world.client.get(entry["links"]["entry"]).json()["entries"]
    assert [x["index"] for x in leaves] == [entry["position"]]
    leaf = base64.b64decode(leaves[0]["leaf"])
    assert msgspec.json.decode(leaf)["type"] == entry["type"]
    note = world.client.get(f"/v1/log/checkpoint?asOf={size}").content
    opened = open_note(note, [world.ledger.signers.log_verifier])
    _origin, signed_size, root = opened.text.split("\n")[:3]
    assert int(signed_size) == size
    hashes = [base64.b64decode(h) for h in proof["hashes"]]
    verify_inclusion(entry["position"], size, leaf_hash(leaf), hashes, base64.b64decode(root))


def test_every_proof_link_verifies_against_the_signed_checkpoint(
    world: World, story: Story
) -> None:
    body = history(world, story.run)
    for entry in body["entries"]:
        assert entry["links"]["proof"] == (
            f"/v1/log/proof/inclusion?index={entry['position']}&size={body['asOf']}"
        )
        _checked(world, entry, body["asOf"])


def test_as_of_cuts_the_history(world: World, story: Story) -> None:
    size = story.at["hidden"] + 1  # up to the hiding
    body = history(world, story.run, size)
    assert body["asOf"] == size
    entries = body["entries"]
    assert [e["position"] for e in entries] == [
        story.at[s] for s in ("ingest", "attested", "noted", "withdrawn", "hidden")
    ]
    for entry in entries:
        assert entry["links"]["proof"].endswith(f"&size={size}")
        _checked(world, entry, size)
    # An instant means the log's own recording time: every entry so far was recorded at once.
    everything = history(world, story.run)
    assert history(world, story.run, "2026-03-01T12:00:00Z") == everything
    # The successor's history, before and after the supersession.
    before = history(world, story.successor, story.at["superseded"])["entries"]
    assert [e["kinds"] for e in before] == [["ingest", "evidence", "rank"]]
    after = history(world, story.successor)["entries"]
    assert after[-1]["position"] == story.at["superseded"]
    # Its rank stays: the run it supersedes ranked below it.
    assert after[-1]["kinds"] == ["supersedes"]
    assert after[-1]["event"] == f"supersedes {story.run[7:19]}"


def test_ranks_and_leaders_agree_with_the_dossier_as_of_each_entry(
    world: World, story: Story
) -> None:
    for run in (story.run, story.retracted, story.newcomer, story.successor, world.runs[1]):
        for entry in history(world, run)["entries"]:
            then = world.client.get(entry["links"]["run"]).json()
            rank = then.get("rank")
            if "rank" in entry:
                assert entry["rank"]["after"] == (rank["rank"] if rank else None), entry
            if "leader" in entry["kinds"] and rank is not None:
                leader = rank["leader"]
                named = "became group leader" if leader == run else leader[7:19]
                assert named in entry["event"], entry


def test_the_leader_and_its_losses(world: World, story: Story) -> None:
    entries = history(world, story.retracted)["entries"]
    first = entries[0]
    assert first["kinds"] == ["ingest", "evidence", "rank", "leader"]
    assert first["event"].endswith("ranked #1 in its group; became group leader")
    lost = next(e for e in entries if e["position"] == story.at["newcomer"])
    assert lost["event"] == (
        f"rank #1 → #2 in its group; lost the group lead to {story.newcomer[7:19]}"
        f" (run {story.newcomer[7:19]} ingested)"
    )
    assert entries[-1]["kinds"] == ["retraction", "evidence", "rank"]
    assert entries[-1]["evidenceLevel"] == "retracted"


def test_unknown_runs_and_malformed_as_of(world: World, story: Story) -> None:
    problem(world.client.get("/v1/runs/sha256:" + "0" * 64 + "/history"), 404, "unknown-run")
    problem(world.client.get("/v1/runs/nonsense/history"), 400, "bad-request")
    # Before its ingest the run was not in the log.
    problem(
        world.client.get(f"/v1/runs/{story.run}/history?asOf={story.at['ingest']}"),
        404,
        "unknown-run",
    )
    for bad in ("yesterday", "-1", str(world.size() + 1)):
        problem(world.client.get(f"/v1/runs/{story.run}/history?asOf={bad}"), 400, "bad-request")


def test_the_history_page(world: World, story: Story) -> None:
    r = world.client.get(f"/runs/{story.run}/history")
    assert r.status_code == 200, r.text
    assert r.headers["content-type"].startswith("text/html")
    page = r.text
    for entry in history(world, story.run)["entries"]:
        assert f'id="entry-{entry["position"]}"' in page
        assert entry["links"]["proof"].replace("&", "&amp;") in page
        assert f'href="/keys/{entry["signer"]["keyId"]}"' in page
    assert "attestation withdrawn by its author: wrong" in page
    assert "rank #2 → #3 in its group" in page
    assert f'href="/runs/{story.run}">← Back to the run' in page
    pinned = world.client.get(f"/runs/{story.run}/history?asOf={story.at['hidden'] + 1}")
    assert pinned.status_code == 200
    assert "report filed" not in pinned.text and "attestation hidden by the index" in pinned.text
    # The run page links to it.
    run_page = world.client.get(f"/runs/{story.run}").text
    assert f'href="/runs/{story.run}/history"' in run_page
    assert world.client.get("/runs/sha256:" + "0" * 64 + "/history").status_code == 404


def test_the_openapi_schema_documents_the_answer(world: World) -> None:
    schema = world.client.get("/schema/openapi.json").json()
    answer_ = schema["paths"]["/v1/runs/{ref}/history"]["get"]["responses"]["200"]
    shape = answer_["content"]["application/json"]["schema"]
    assert shape == {"$ref": "#/components/schemas/RunHistory"}
    history_shape = schema["components"]["schemas"]["RunHistory"]
    assert set(history_shape["properties"]) == {"runDigest", "asOf", "entries"}


def test_a_signer_is_named_by_the_role_it_held_at_its_entry(world: World) -> None:
    """Issue 30, point 4: a community key granted the rerunner role later attested as
    community, and its history says so (now, and as of a size before the grant or after)."""
    token = _token(world)
    run, _ = _ingest(world, 310, 250)
    member = SigningKey.generate()
    register(world, member, "member")
    attested = world.size()
    attest(world, member, run)
    granted = world.size()
    r = world.client.post(
        f"/v1/keys/{member.key_id}/grants", json={"role": "rerunner"}, headers=bearer(token)
    )
    assert r.status_code == 201, r.text
    assert world.client.get(f"/v1/keys/{member.key_id}").json()["role"] == "rerunner"
    for as_of in (None, granted, world.size()):
        by = {e["position"]: e for e in history(world, run, as_of)["entries"]}
        assert by[attested]["event"] == "attested (community): reproduced", as_of
    page = world.client.get(f"/runs/{run}/history")
    assert "attested (community): reproduced" in page.text
    assert "attested (rerunner)" not in page.text
