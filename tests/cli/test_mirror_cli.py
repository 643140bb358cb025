"""``benchproof export`` and ``benchproof import-log`` as the console script runs them: a mirror
made from an exported segment and one made from a real ``benchproof serve`` of the origin hold
and serve the same bytes and views, and pass ``verify`` and ``replay``; a tampered segment is
refused with exit 1 and nothing taken; bad input exits 2; a mirror refuses local writes."""

from __future__ import annotations

import hashlib
import json
import shutil
import urllib.request
from collections.abc import Callable
from pathlib import Path

import pytest

from events.merkle import leaf_hash
from events.tiles import decode_bundle, encode_bundle
from keys import NoteSigner, SigningKey, sign_note
from tests.cli.conftest import Runner
from tests.corpora import corpus, shared_file
from tests.mirrors import ORIGIN, Origin, build_origin, grow, log_bytes
from tests.servers import closed_port, served

PUBLIC = "https://bench.example"


@pytest.fixture(scope="module")
def origin(tmp_path_factory: pytest.TempPathFactory) -> Origin:
    return build_origin(tmp_path_factory.mktemp("origin") / "data")


@pytest.fixture(scope="module")
def work(origin: Origin, tmp_path_factory: pytest.TempPathFactory, bp: Runner) -> Path:
    """The origin's vkey in a file and a whole export of it."""
    folder = tmp_path_factory.mktemp("work")
    key = bp("log", "key", "--data", origin.root)
    assert key.returncode == 0, key.stderr
    (folder / "origin.vkey").write_text(key.stdout)
    done = bp("export", folder / "segment", "--data", origin.root, "--json")
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout)["treeSize"] == log_bytes(origin.root).size
    return folder


def _import(bp: Runner, work: Path, data: Path, *source: object) -> tuple[int, str, str]:
    r = bp("import-log", *source, "--log-key", work / "origin.vkey", "--data", data, "--json")
    return r.returncode, r.stdout, r.stderr


def _get(base: str, path: str) -> bytes:
    with urllib.request.urlopen(base + path, timeout=10) as response:
        body: bytes = response.read()
        return body


def test_two_mirrors_serve_what_the_origin_serves(
    origin: Origin, work: Path, bp: Runner, tmp_path: Path
) -> None:
    by_export, by_server = tmp_path / "by-export", tmp_path / "by-server"
    code, out, err = _import(bp, work, by_export, work / "segment")
    assert code == 0, err
    summary = json.loads(out)
    assert summary["created"] and summary["appended"] == summary["size"] > 256
    with served(origin.root) as url:
        code, out, err = _import(bp, work, by_server, "--server", url)
    assert code == 0, err
    assert json.loads(out)["rootBase64"] == summary["rootBase64"]

    # The same leaves, checkpoint note, tiles and bundles as each other and as the origin.
    theirs = log_bytes(origin.root)
    assert log_bytes(by_export) == log_bytes(by_server) == theirs
    for data in (by_export, by_server):
        verified = bp("verify", "--data", data)
        assert verified.returncode == 0, verified.stderr
        assert f"{theirs.size} entries verified" in verified.stdout
        replayed = bp("replay", "--data", data)
        assert replayed.returncode == 0, replayed.stderr

    # Served alike: the checkpoint, tiles and bundles byte for byte, the views equal.
    paths = ["/checkpoint", "/tile/0/000", f"/tile/0/001.p/{theirs.size - 256}", "/tile/1/000.p/1"]
    paths += ["/tile/entries/000", "/v1/log/checkpoint"]
    views = [f"/v1/runs/{origin.runs[3]}", f"/v1/runs/{origin.runs[-1]}"]
    answers = []
    for data in (origin.root, by_export, by_server):
        with served(data, "--public-url", PUBLIC) as url:
            answers.append(
                (
                    [_get(url, p) for p in paths],
                    [_get(url, v) for v in views],
                )
            )
    assert answers[1] == answers[0] and answers[2] == answers[0]


def test_a_mirror_takes_the_new_entries_and_refuses_local_writes(
    origin: Origin, work: Path, bp: Runner, tmp_path: Path
) -> None:
    source = tmp_path / "origin"
    shutil.copytree(origin.root, source)
    mirror = tmp_path / "mirror"
    assert _import(bp, work, mirror, work / "segment")[0] == 0
    held = log_bytes(mirror).size

    size = grow(source, 1000, 20)
    assert bp("export", tmp_path / "segment", "--start", held, "--data", source).returncode == 0
    code, out, err = _import(bp, work, mirror, tmp_path / "segment")
    assert code == 0, err
    summary = json.loads(out)
    assert (summary["previousSize"], summary["appended"], summary["size"]) == (held, 20, size)
    assert log_bytes(mirror) == log_bytes(source)

    # No local writes: ingest, init, a receipt; the log stays as it was.
    before = log_bytes(mirror)
    examples = corpus("kernelindex-manifests", "examples")  # manifests the mirror lacks
    ingested = bp("ingest", "manifest", *sorted(examples.glob("*.yaml")), "--data", mirror)
    assert ingested.returncode == 2
    assert "mirror of mirror.test/log" in ingested.stderr
    # What the mirror holds already is no write: that import answers "nothing new".
    held_again = bp("ingest", "manifest", shared_file("seed-manifest.json"), "--data", mirror)
    assert held_again.returncode == 0, held_again.stderr
    assert "nothing new" in held_again.stdout + held_again.stderr
    initialised = bp("init", "--data", mirror)
    assert initialised.returncode == 2 and "mirror" in initialised.stderr
    receipt = bp("cite", origin.runs[0], "--format", "receipt", "--data", mirror)
    assert receipt.returncode == 2 and "no log key" in receipt.stderr
    assert log_bytes(mirror) == before
    assert bp("log", "checkpoint", "--data", mirror).stdout.encode() == before.latest_note


def _tamper_leaf(segment: Path) -> None:
    path = segment / "tile/entries/000"
    data = bytearray(path.read_bytes())
    data[100] ^= 0x01
    path.write_bytes(bytes(data))


def _tamper_leaf_and_tile(segment: Path) -> None:
    # A consistent bundle and level-0 tile, but not the tree the checkpoint signs.
    path = segment / "tile/entries/000"
    leaves = decode_bundle(path.read_bytes())
    at = leaves[7].index(b'"sig":"') + len(b'"sig":"')
    swapped = b"B" if leaves[7][at : at + 1] == b"A" else b"A"
    leaves[7] = leaves[7][:at] + swapped + leaves[7][at + 1 :]
    path.write_bytes(encode_bundle(leaves))
    (segment / "tile/0/000").write_bytes(b"".join(leaf_hash(leaf) for leaf in leaves))


def _tamper_tile(segment: Path) -> None:
    path = segment / "tile/0/000"
    data = bytearray(path.read_bytes())
    data[0] ^= 0x80
    path.write_bytes(bytes(data))


def _tamper_upper_tile(segment: Path) -> None:
    (segment / "tile/1/000.p/1").write_bytes(hashlib.sha256(b"another tree").digest())


def _checkpoint_by_another_key(segment: Path) -> None:
    note = (segment / "checkpoint").read_bytes()
    body = note.split(b"\n\n", 1)[0].decode() + "\n"
    stranger = NoteSigner(ORIGIN, SigningKey.generate())
    (segment / "checkpoint").write_bytes(sign_note(body, [stranger]))


def _drop_bundle(segment: Path) -> None:
    (segment / "tile/entries/000").unlink()


def _segment_of_another_tree(segment: Path) -> None:
    path = segment / "segment.json"
    description = json.loads(path.read_text())
    description["treeSize"] = description["end"] = description["treeSize"] - 1
    path.write_text(json.dumps(description))


TAMPERS: dict[str, Callable[[Path], None]] = {
    "leaf": _tamper_leaf,
    "leaf-and-tile": _tamper_leaf_and_tile,
    "tile": _tamper_tile,
    "upper-tile": _tamper_upper_tile,
    "checkpoint-key": _checkpoint_by_another_key,
    "bundle-dropped": _drop_bundle,
    "segment-json": _segment_of_another_tree,
}


@pytest.mark.parametrize("tamper", list(TAMPERS))
def test_a_tampered_segment_is_refused_and_nothing_taken(
    tamper: str, work: Path, bp: Runner, tmp_path: Path
) -> None:
    segment = tmp_path / "segment"
    shutil.copytree(work / "segment", segment)
    TAMPERS[tamper](segment)
    data = tmp_path / "mirror"
    code, out, err = _import(bp, work, data, segment)
    assert code == 1, (out, err)
    assert "import refused, nothing taken" in err
    assert json.loads(out)["ok"] is False
    assert not data.exists()
    assert [p.name for p in tmp_path.iterdir()] == ["segment"]  # no staging folder left


def test_a_tampered_update_leaves_the_mirror_as_it_was(
    origin: Origin, work: Path, bp: Runner, tmp_path: Path
) -> None:
    source = tmp_path / "origin"
    shutil.copytree(origin.root, source)
    mirror = tmp_path / "mirror"
    assert _import(bp, work, mirror, work / "segment")[0] == 0
    before = log_bytes(mirror)
    grow(source, 3000, 10)
    assert bp("export", tmp_path / "segment", "--data", source).returncode == 0
    _tamper_upper_tile(tmp_path / "segment")
    code, _, err = _import(bp, work, mirror, tmp_path / "segment")
    assert code == 1, err
    assert "tile/1/000.p/1" in err
    assert log_bytes(mirror) == before
    assert bp("verify", "--data", mirror).returncode == 0


def test_bad_input_exits_2_and_takes_nothing(work: Path, bp: Runner, tmp_path: Path) -> None:
    data = tmp_path / "mirror"
    garbage = tmp_path / "garbage.vkey"
    garbage.write_text("not a vkey\n")
    r = bp("import-log", work / "segment", "--log-key", garbage, "--data", data)
    assert r.returncode == 2 and "not a vkey" in r.stderr
    r = bp("import-log", tmp_path, "--log-key", work / "origin.vkey", "--data", data)
    assert r.returncode == 2 and "not a segment export" in r.stderr
    with closed_port() as port:
        unreachable = f"http://127.0.0.1:{port}"
        r = bp(
            "import-log", "--server", unreachable, "--log-key", work / "origin.vkey", "--data", data
        )
    assert r.returncode == 2 and "cannot read" in r.stderr
    r = bp("import-log", "--log-key", work / "origin.vkey", "--data", data)
    assert r.returncode == 2
    full = tmp_path / "full"
    full.mkdir()
    (full / "notes.txt").write_text("mine")
    r = bp("import-log", work / "segment", "--log-key", work / "origin.vkey", "--data", full)
    assert r.returncode == 2 and "neither a mirror nor an empty folder" in r.stderr
    assert not data.exists()
    assert [p.name for p in full.iterdir()] == ["notes.txt"]


def test_export_refuses_a_size_without_a_checkpoint(
    origin: Origin, bp: Runner, tmp_path: Path
) -> None:
    r = bp("export", tmp_path / "out", "--end", 100, "--data", origin.root)
    assert r.returncode == 2 and "no signed checkpoint of size 100" in r.stderr
    assert not (tmp_path / "out").exists()
