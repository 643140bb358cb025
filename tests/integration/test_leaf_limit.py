"""An entry bundle (C2SP tlog-tiles) prefixes each leaf with a 16-bit length, so the log takes
no leaf over 65,535 bytes: the store refuses the whole batch (``LeafTooLarge``, naming the
entry and its size), an ingest over HTTP is a 413 problem, ``benchproof ingest`` exits 2 with
one line, an attestation whose entry would not fit is refused alike; the log is unchanged."""

from __future__ import annotations

import json
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import msgspec
import pytest

from events.entries import INTOTO_PAYLOAD_TYPE
from events.stores.sqlite import SqliteLog
from events.tiles import MAX_LEAF, LeafTooLarge, decode_bundle, encode_bundle
from events.types import ReportFiled
from keys import SigningKey, encode_envelope, sign_envelope
from service.app.attest import MAX_STATEMENT_BYTES
from service.app.ingest import ingest
from service.core.ledger import Ledger, pending_of
from service.core.signing import Signers
from service.web.auth import TokenStore
from tests.api.test_attestations import path, statement
from tests.api.test_keys import World, problem, register, world
from tests.corpora import shared_file
from tests.servers import run_cli

__all__ = ["world"]  # the fixture, shared with tests/api/test_keys.py

RUN = "sha256:" + "ef" * 32
T0 = datetime(2026, 11, 1, 12, 0, tzinfo=UTC)


def _state(ledger: Ledger) -> tuple[int, bytes, bytes | None]:
    store = ledger.store
    latest = store.latest_checkpoint()
    return store.refresh(), store.root(), None if latest is None else latest.note


def _big_manifest(folder: Path) -> Path:
    """The seed run with labels enough that its ingest entry is about 87 KB."""
    manifest = json.loads(shared_file("seed-manifest.json").read_text())
    manifest["run"]["metadata"]["labels"] = {f"l{i}": "v" * 200 for i in range(300)}
    out = folder / "big-run.json"
    out.write_text(json.dumps(manifest))
    return out


# --- the store ---------------------------------------------------------------------------------


def test_the_store_refuses_the_whole_batch(tmp_path: Path) -> None:
    signers = Signers(SigningKey.generate(), SigningKey.generate(), "limit.example/log")
    store = SqliteLog.open(tmp_path / "log.db", origin="limit.example/log", create=True)

    def append(texts: list[str]) -> Any:
        pending = [
            msgspec.structs.replace(
                pending_of(ReportFiled(runDigest=RUN, category="note", text=t), RUN),
                signer=signers.index.key_id,
            )
            for t in texts
        ]
        return store.append(
            pending, sign=signers.sign_chunks, sign_checkpoint=signers.sign_checkpoint, now=T0
        )

    try:
        append(["first", "x" * 47_000])  # base64 in the envelope: about 63 KB, it fits
        leaves = [leaf for _, leaf in store.leaves()]
        assert 60_000 < len(leaves[1]) <= MAX_LEAF
        assert decode_bundle(encode_bundle(leaves)) == leaves
        before = (store.size, store.root(), store.latest_checkpoint())
        with pytest.raises(LeafTooLarge) as refused:
            append(["fine", "y" * 50_000, "also fine"])
        assert refused.value.details["entryType"] == "report.filed.v1"
        assert refused.value.details["subject"] == RUN
        assert int(str(refused.value.details["size"])) > MAX_LEAF
        assert "65,535" in refused.value.detail
        assert (store.refresh(), store.root(), store.latest_checkpoint()) == before
        append(["after"])  # the store goes on
        assert store.size == 3
    finally:
        store.close()
        signers.close()


def test_a_mirror_refuses_a_leaf_too_large(tmp_path: Path) -> None:
    signers = Signers(SigningKey.generate(), SigningKey.generate(), "limit.example/log")
    source = SqliteLog.open(tmp_path / "a.db", origin="limit.example/log", create=True)
    mirror = SqliteLog.open(tmp_path / "b.db", origin="limit.example/log", create=True)
    try:
        pending = pending_of(ReportFiled(runDigest=RUN, category="note", text="t"), RUN)
        source.append(
            [msgspec.structs.replace(pending, signer=signers.index.key_id)],
            sign=signers.sign_chunks,
            sign_checkpoint=signers.sign_checkpoint,
            now=T0,
        )
        checkpoint = source.latest_checkpoint()
        assert checkpoint is not None
        with pytest.raises(LeafTooLarge):
            mirror.append_leaves(0, [b"{" + b" " * MAX_LEAF + b"}"], checkpoint)
        assert mirror.refresh() == 0 and mirror.latest_checkpoint() is None
    finally:
        source.close()
        mirror.close()
        signers.close()


# --- ingest: the use case, the CLI, HTTP ---------------------------------------------------


@pytest.mark.corpus
def test_an_ingest_whose_entry_is_too_large_changes_nothing(ledger: Ledger, tmp_path: Path) -> None:
    before = _state(ledger)
    with pytest.raises(LeafTooLarge) as refused:
        ingest(ledger, "manifest", [_big_manifest(tmp_path)])
    assert refused.value.details["entryType"] == "run.ingested.v1"
    assert str(refused.value.details["subject"]).startswith("sha256:5195388f")
    assert _state(ledger) == before
    ingest(ledger, "manifest", [shared_file("seed-manifest.json")])  # the same run, smaller
    assert ledger.store.refresh() == before[0] + 1


@pytest.mark.corpus
def test_benchproof_ingest_exits_2_with_one_line(tmp_path: Path) -> None:
    data = tmp_path / "data"
    assert run_cli("init", "--data", data).returncode == 0
    with Ledger.open(data) as ledger:
        before = _state(ledger)
    done = run_cli("ingest", "manifest", _big_manifest(tmp_path), "--data", data)
    assert done.returncode == 2, done.stderr
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("benchproof: error: the entry run.ingested.v1")
    assert "65,535 bytes" in lines[0]
    with Ledger.open(data) as ledger:
        assert _state(ledger) == before


@pytest.mark.corpus
def test_an_http_ingest_whose_entry_is_too_large_is_413(world: World, tmp_path: Path) -> None:
    token = TokenStore(world.ledger.data.tokens).create("limit")
    before = _state(world.ledger)
    response = world.client.post(
        "/v1/ingest/manifest",
        content=_big_manifest(tmp_path).read_bytes(),
        headers={"Authorization": f"Bearer {token}", "Content-Type": "application/json"},
    )
    body = problem(response, 413, "entry-too-large")
    assert body["size"] > MAX_LEAF and body["limit"] == MAX_LEAF
    assert "run.ingested.v1" in body["detail"]
    assert _state(world.ledger) == before


# --- attestations --------------------------------------------------------------------------


def _envelope(world: World, key: SigningKey, size: int, *, padding: int = 0) -> bytes:
    """An attestation whose statement is ``size`` bytes (its environment filled up), in an
    envelope with ``padding`` spaces after its first ``{``."""
    run = world.runs[0]
    body = statement(run, {"kind": "reproduced", "environment": {"fill": ""}})
    body["predicate"]["environment"]["fill"] = "z" * (size - len(msgspec.json.encode(body)))
    payload = msgspec.json.encode(body)
    assert len(payload) == size
    envelope = encode_envelope(sign_envelope(INTOTO_PAYLOAD_TYPE, payload, key))
    return b"{" + b" " * padding + envelope[1:]


def test_the_largest_statement_an_attestation_takes_fits_an_entry(world: World) -> None:
    key = SigningKey.generate()
    register(world, key, "big")
    run = world.runs[0]
    before = _state(world.ledger)
    too_big = _envelope(world, key, MAX_STATEMENT_BYTES + 1)
    problem(world.client.post(path(run), content=too_big), 400, "invalid-statement")
    assert _state(world.ledger) == before
    largest = _envelope(world, key, MAX_STATEMENT_BYTES)
    posted = world.client.post(path(run), content=largest)
    assert posted.status_code == 201, posted.text
    leaf = world.ledger.store.leaf(posted.json()["index"])
    assert leaf is not None and len(leaf) <= MAX_LEAF


def test_an_attestation_whose_entry_is_too_large_is_413(world: World) -> None:
    key = SigningKey.generate()
    register(world, key, "padded")
    before = _state(world.ledger)
    padded = _envelope(world, key, MAX_STATEMENT_BYTES, padding=4000)  # spaces count too
    response = world.client.post(path(world.runs[0]), content=padded)
    body = problem(response, 413, "entry-too-large")
    assert body["type"].endswith("/entry-too-large") and body["size"] > MAX_LEAF
    assert _state(world.ledger) == before
