"""Mirrors in process: an exported segment taken into a mirror holds the origin's leaves, notes,
tiles and views; the mirror is a read-only type (no appends, no signers) and every path that
would write on it is refused; an import takes
only what verifies (and nothing at all otherwise), only the new entries after the origin grew,
and a segment only onto the entries before it."""

from __future__ import annotations

import shutil
from collections.abc import Iterator
from pathlib import Path

import msgspec
import pytest
from litestar.testing import TestClient

from events.stores.sqlite import SqliteLog
from keys import NoteSigner, SigningKey, encode_envelope, sign_envelope
from keys.notekeys import parse_vkey
from service.app.mirror import Imported, ImportRefused, import_log
from service.app.replay import replay
from service.app.segment import export
from service.core.config import Settings
from service.core.init import init_data_dir
from service.core.ledger import Ledger, open_log
from service.core.mirror import Mirror, read_mirror
from service.errors import MirrorReadOnly, UsageError
from service.web.app import create_app
from service.web.auth import TokenStore
from tests.builders import attestation, bundle, ingest_event
from tests.mirrors import ORIGIN, Origin, build_origin, grow, log_bytes
from verifier.log import verify_log
from verifier.tiles import SourceInvalid

PUBLIC = "https://bench.example"


@pytest.fixture(scope="module")
def origin(tmp_path_factory: pytest.TempPathFactory) -> Origin:
    return build_origin(tmp_path_factory.mktemp("origin") / "data")


@pytest.fixture(scope="module")
def mirror(origin: Origin, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A mirror made from a whole export of the origin."""
    work = tmp_path_factory.mktemp("mirror")
    export(origin.root, work / "segment")
    root = work / "data"
    done = import_log(root, verifier=parse_vkey(origin.vkey), folder=work / "segment")
    assert done.created and done.appended == done.size
    return root


def _import(root: Path, origin: Origin, folder: Path) -> Imported:
    return import_log(root, verifier=parse_vkey(origin.vkey), folder=folder)


def _client(root: Path) -> Iterator[TestClient]:  # type: ignore[type-arg]
    ledger = open_log(root)
    try:
        with TestClient(app=create_app(Settings(data=root, public_url=PUBLIC), ledger=ledger)) as c:
            yield c
    finally:
        ledger.close()


@pytest.fixture(scope="module")
def origin_client(origin: Origin) -> Iterator[TestClient]:  # type: ignore[type-arg]
    yield from _client(origin.root)


@pytest.fixture(scope="module")
def mirror_client(mirror: Path) -> Iterator[TestClient]:  # type: ignore[type-arg]
    yield from _client(mirror)


def _size(root: Path) -> int:
    store = SqliteLog.open_readonly(root / "benchproof.db")
    try:
        return store.size
    finally:
        store.close()


# --- the same log -----------------------------------------------------------------------------


def test_the_mirror_holds_the_origins_leaves_notes_and_tiles(origin: Origin, mirror: Path) -> None:
    ours, theirs = log_bytes(mirror), log_bytes(origin.root)
    assert ours.size == theirs.size > 256  # a full and a partial level-0 tile
    assert ours.leaves == theirs.leaves
    assert ours.latest_note == theirs.latest_note
    assert "tile/1/000.p/1" in ours.tiles
    assert ours.tiles == theirs.tiles
    marker = read_mirror(mirror)
    assert marker is not None and (marker.origin, marker.vkey) == (ORIGIN, origin.vkey)
    assert not (mirror / "keys").exists()  # a mirror holds no keys


def test_verify_and_replay_pass_on_the_mirror(mirror: Path) -> None:
    report = verify_log(mirror / "benchproof.db")
    assert report.ok, report.findings
    with Mirror.open(mirror) as opened:
        assert replay(opened).ok


def test_the_mirror_serves_the_same_checkpoint_tiles_and_views(
    origin: Origin,
    origin_client: TestClient,  # type: ignore[type-arg]
    mirror_client: TestClient,  # type: ignore[type-arg]
) -> None:
    for path in ("/checkpoint", "/v1/log/checkpoint", "/tile/0/000", "/tile/0/001.p/50"):
        theirs, ours = origin_client.get(path), mirror_client.get(path)
        assert theirs.status_code == ours.status_code == 200, (path, ours.text)
        assert ours.content == theirs.content, path
    key = mirror_client.get("/v1/log/key")
    assert key.status_code == 200 and key.text.strip() == origin.vkey
    for digest in (origin.runs[0], origin.runs[-1]):
        theirs, ours = (
            origin_client.get(f"/v1/runs/{digest}"),
            mirror_client.get(f"/v1/runs/{digest}"),
        )
        assert ours.status_code == theirs.status_code == 200, ours.text
        assert ours.json() == theirs.json()


# --- no local writes ------------------------------------------------------------------------


def test_the_mirror_is_read_only_and_refuses_a_writer_and_init(
    mirror: Path, origin: Origin
) -> None:
    before = _size(mirror)
    parts = bundle(group=9, author=9, value=9)
    with open_log(mirror) as opened:
        assert isinstance(opened, Mirror) and not isinstance(opened, Ledger)
        assert opened.mirror is not None and opened.note_signer is None
        assert opened.vkey == origin.vkey == opened.log_verifier.vkey
        # Nothing on it appends or signs: a path that writes asks for the ledger, refused.
        for absent in ("append", "append_pending", "append_pending_async", "signers", "group"):
            assert not hasattr(opened, absent), absent
        with pytest.raises(MirrorReadOnly, match=r"mirror of mirror\.test/log: it takes no"):
            opened.writer().append([(ingest_event(parts), parts["run"].digest)])
    with pytest.raises(MirrorReadOnly, match=r"mirror of mirror\.test/log: it takes no"):
        Ledger.open(mirror)
    with pytest.raises(MirrorReadOnly, match="benchproof init"):
        init_data_dir(mirror)
    assert _size(mirror) == before
    assert not (mirror / "keys").exists()


def _problem(response: object, status: int, kind: str) -> dict[str, object]:
    r = response
    assert r.status_code == status, r.text  # type: ignore[attr-defined]
    body: dict[str, object] = r.json()  # type: ignore[attr-defined]
    assert body["type"] == f"https://benchproof.dev/problems/{kind}", body
    return body


def test_the_mirror_refuses_attestations_ingests_and_receipts_over_http(
    origin: Origin,
    mirror: Path,
    mirror_client: TestClient,  # type: ignore[type-arg]
) -> None:
    before = _size(mirror)
    run = origin.runs[1]
    hexd = run.removeprefix("sha256:")
    body = {
        "_type": "https://in-toto.io/Statement/v1",
        "subject": [{"name": f"/runs/{run}", "digest": {"sha256": hexd}}],
        "predicateType": "https://benchproof.dev/attestation/v1",
        "predicate": {"kind": "reproduced", "value": 101, "unit": "ns"},
    }
    envelope = encode_envelope(
        sign_envelope("application/vnd.in-toto+json", msgspec.json.encode(body), origin.attester)
    )
    answer = _problem(
        mirror_client.post(f"/v1/runs/{run}/attestations", content=envelope),
        403,
        "mirror-read-only",
    )
    assert "write to the origin log" in str(answer["detail"])

    token = TokenStore(mirror / "tokens.json").create("ops")
    try:
        parts = bundle(group=8, author=8, value=8)  # manifests the mirror does not hold
        upload = msgspec.json.encode([p.manifest for p in parts.values()])
        _problem(
            mirror_client.post(
                "/v1/ingest/manifest",
                content=upload,
                headers={"Authorization": f"Bearer {token}"},
            ),
            403,
            "mirror-read-only",
        )
    finally:
        (mirror / "tokens.json").unlink()

    receipt = mirror_client.get(f"/v1/runs/{run}/citation", params={"format": "receipt"})
    assert "no log key" in str(_problem(receipt, 403, "mirror-read-only")["detail"])
    text = mirror_client.get(f"/v1/runs/{run}/citation", params={"format": "text"})
    assert text.status_code == 200, text.text
    assert _size(mirror) == before


# --- what an import takes -------------------------------------------------------------------


def test_an_update_takes_only_the_new_entries_and_a_segment_lands_on_its_start(
    origin: Origin, tmp_path: Path
) -> None:
    source = tmp_path / "origin"
    shutil.copytree(origin.root, source)
    first = tmp_path / "first"
    export(source, first)
    root = tmp_path / "mirror"
    held = _import(root, origin, first).size

    grown = grow(source, 1000, 40)
    whole = tmp_path / "whole"
    export(source, whole)
    done = _import(root, origin, whole)
    assert (done.created, done.previousSize, done.appended, done.size) == (False, held, 40, grown)
    assert log_bytes(root) == log_bytes(source)
    assert _import(root, origin, whole).appended == 0  # up to date

    grown = grow(source, 2000, 30)
    segment = tmp_path / "segment"
    done_export = export(source, segment, start=grown - 30)
    assert not (segment / "tile/entries/000").exists()  # only the bundles it needs
    with pytest.raises(UsageError, match=f"holds entries from {grown - 30} on"):
        _import(tmp_path / "fresh", origin, segment)
    assert not (tmp_path / "fresh").exists()
    done = _import(root, origin, segment)
    assert (done.previousSize, done.size) == (grown - 30, done_export.treeSize)
    assert log_bytes(root) == log_bytes(source)
    assert verify_log(root / "benchproof.db").ok
    with open_log(root) as opened:
        assert replay(opened).ok


def test_a_fork_is_refused_naming_both_trees(origin: Origin, tmp_path: Path) -> None:
    # Two logs with the same key and a common past, then different entries: a fork.
    one, two = tmp_path / "one", tmp_path / "two"
    shutil.copytree(origin.root, one)
    shutil.copytree(origin.root, two)
    grow(one, 5000, 3)
    grow(two, 6000, 5)
    export(one, tmp_path / "seg-one")
    export(two, tmp_path / "seg-two")
    root = tmp_path / "mirror"
    held = _import(root, origin, tmp_path / "seg-one").size
    before = log_bytes(root)
    with pytest.raises(ImportRefused, match=rf"does not extend this mirror's log \(size {held}"):
        _import(root, origin, tmp_path / "seg-two")
    assert log_bytes(root) == before
    assert verify_log(root / "benchproof.db").ok


def test_entries_that_do_not_verify_are_not_taken(tmp_path: Path) -> None:
    # An origin whose tree and checkpoint are sound, but whose entry is signed by a key the log
    # never registered: the tiles check out, ``benchproof verify``'s checks do not.
    bad = build_origin(tmp_path / "bad", runs=10)
    with Ledger.open(bad.root) as ledger:
        ledger.append_pending([attestation(bad.runs[0], SigningKey.generate())])
    export(bad.root, tmp_path / "segment")
    with pytest.raises(ImportRefused, match="not valid at this position"):
        _import(tmp_path / "mirror", bad, tmp_path / "segment")
    assert not (tmp_path / "mirror").exists()
    assert not list(tmp_path.glob(".mirror.*"))  # no staging folder left behind


def test_a_tampered_bundle_is_refused_before_anything_is_written(
    origin: Origin, mirror: Path, tmp_path: Path
) -> None:
    segment = tmp_path / "segment"
    export(origin.root, segment)
    bundle_path = segment / "tile/entries/001.p" / str(log_bytes(origin.root).size - 256)
    data = bytearray(bundle_path.read_bytes())
    data[40] ^= 1
    bundle_path.write_bytes(bytes(data))
    empty = tmp_path / "empty"
    empty.mkdir()
    with pytest.raises(SourceInvalid, match="does not hash to the hash its level-0 tile holds"):
        _import(empty, origin, segment)
    assert list(empty.iterdir()) == []


def test_a_data_directory_that_is_not_empty_nor_a_mirror_is_refused(
    origin: Origin, mirror: Path, tmp_path: Path
) -> None:
    segment = tmp_path / "segment"
    export(origin.root, segment)
    with pytest.raises(UsageError, match="neither a mirror nor an empty folder"):
        _import(origin.root, origin, segment)
    stranger = NoteSigner(ORIGIN, SigningKey.generate()).verifier
    with pytest.raises(UsageError, match="another key"):
        import_log(mirror, verifier=stranger, folder=segment)


def test_export_needs_a_checkpointed_size_and_an_empty_destination(
    origin: Origin, tmp_path: Path
) -> None:
    store = SqliteLog.open_readonly(origin.root / "benchproof.db")
    sizes = [c.size for c in store.checkpoints()]
    store.close()
    size = sizes[-1]
    below, above = max(s for s in sizes if s < 100), min(s for s in sizes if s > 100)
    with pytest.raises(
        UsageError,
        match=f"no signed checkpoint of size 100; the nearest checkpointed sizes are {below} and {above}",
    ):
        export(origin.root, tmp_path / "a", end=100)
    with pytest.raises(UsageError, match="beyond"):
        export(origin.root, tmp_path / "a", start=size + 1)
    (tmp_path / "b").mkdir()
    (tmp_path / "b" / "x").write_text("x")
    with pytest.raises(UsageError, match="not empty"):
        export(origin.root, tmp_path / "b")
    done = export(origin.root, tmp_path / "c", end=above)
    assert (done.start, done.end, done.treeSize) == (0, above, above)
    note = (tmp_path / "c" / "checkpoint").read_bytes()
    assert note.split(b"\n")[:3] == [ORIGIN.encode(), str(above).encode(), done.rootBase64.encode()]
    assert not list(tmp_path.glob(".c.*"))  # the staging folder was moved into place
