"""The C2SP tlog-tiles read API (``/checkpoint``, ``/tile/…``) on a real log of a few hundred
entries (full and partial tiles at level 0, a partial one at level 1).

The reader below is written from ``tlog-tiles.md``, ``tlog-checkpoint.md``, ``signed-note.md``
and RFC 6962 §2.1 and shares no code with the server: its own path encoder, SHA-256 hashing
(hashlib), bundle parser and note verification (``cryptography`` directly)."""

from __future__ import annotations

import base64
import gzip
import hashlib
import re
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PublicKey
from litestar import Litestar
from litestar.testing import TestClient

from events.tiles import Tile, tile_of
from events.types import ReportFiled
from service.app.tiles import Tiles
from service.core.config import Settings
from service.core.init import init_data_dir
from service.core.ledger import Ledger
from service.web.api.tiles import accepts_gzip
from service.web.app import create_app

RUN = "sha256:" + "ab" * 32
ENTRIES = 600  # + 3 genesis entries: tiles 000, 001 full, 002.p/91; level 1: 000.p/2

Client = TestClient[Litestar]


def _reports(start: int, count: int) -> list[tuple[Any, str]]:
    return [
        (
            ReportFiled(runDigest=RUN, category="note", text=f"report {i} " + "x" * (i * 7 % 900)),
            RUN,
        )
        for i in range(start, start + count)
    ]


@pytest.fixture(scope="module")
def root(tmp_path_factory: pytest.TempPathFactory) -> Path:
    data = tmp_path_factory.mktemp("tiles") / "data"
    ledger, _ = init_data_dir(data)
    with ledger:
        ledger.append(_reports(0, ENTRIES))
    return data


@pytest.fixture(scope="module")
def client(root: Path) -> Iterator[Client]:
    ledger = Ledger.open(root)
    try:
        with TestClient(app=create_app(Settings(data=root), ledger=ledger)) as test_client:
            yield test_client
    finally:
        ledger.close()


# --- an independent reader, from the specs ----------------------------------------------------


def sha256(data: bytes) -> bytes:
    return hashlib.sha256(data).digest()


def index_path(n: int) -> str:
    """``N`` as zero-padded three-digit elements, all but the last prefixed with ``x``."""
    digits = str(n)
    digits = "0" * (-len(digits) % 3) + digits
    groups = [digits[i : i + 3] for i in range(0, len(digits), 3)]
    return "/".join(["x" + g for g in groups[:-1]] + [groups[-1]])


def tile_url(level: int | str, n: int, width: int) -> str:
    return f"/tile/{level}/{index_path(n)}" + (f".p/{width}" if width < 256 else "")


def parse_bundle(data: bytes) -> list[bytes]:
    entries, at = [], 0
    while at < len(data):
        assert at + 2 <= len(data), "a bundle ends inside a length"
        length = int.from_bytes(data[at : at + 2], "big")
        assert at + 2 + length <= len(data), "a bundle ends inside an entry"
        entries.append(data[at + 2 : at + 2 + length])
        at += 2 + length
    return entries


def verify_checkpoint(note: bytes, vkey: str) -> tuple[str, int, bytes]:
    """signed-note: ``text\\n\\n`` then lines ``— <name> base64(keyhash(4) || signature)``;
    the vkey is ``<name>+<hex keyhash>+base64(0x01 || Ed25519 public key)``; the key hash is
    the first 4 bytes of SHA-256(name || "\\n" || 0x01 || public key)."""
    name, key_hash, key_b64 = vkey.strip().split("+", 2)
    key = base64.b64decode(key_b64)
    assert key[0] == 0x01 and len(key) == 33
    assert sha256(name.encode() + b"\n" + key)[:4].hex() == key_hash
    text, sep, signatures = note.partition(b"\n\n")
    assert sep, "a signed note has a blank line before its signatures"
    body = text + b"\n"
    found = 0
    for line in signatures.decode().splitlines():
        match = re.fullmatch(r"\u2014 (\S+) ([A-Za-z0-9+/=]+)", line)
        assert match, line
        raw = base64.b64decode(match[2])
        if match[1] == name and raw[:4].hex() == key_hash:
            Ed25519PublicKey.from_public_bytes(key[1:]).verify(raw[4:], body)
            found += 1
    assert found == 1, "the checkpoint carries the log key's signature"
    origin, size, root_b64, rest = body.decode().split("\n", 3)
    assert rest == ""  # no extension lines
    return origin, int(size), base64.b64decode(root_b64)


class Reader:
    """Reads a tiled log at a checkpoint: every tile and bundle of its tree, checked."""

    def __init__(self, get: Callable[[str], bytes], size: int) -> None:
        self.get = get
        self.size = size
        self.hashes: dict[int, list[bytes]] = {}  # tree level 8 L -> every hash of that level
        self.leaves: list[bytes] = []

    def read(self) -> bytes:
        level = 0
        while self.size >> (8 * level):
            count = self.size >> (8 * level)
            hashes: list[bytes] = []
            for n in range((count + 255) // 256):
                width = min(256, count - 256 * n)
                data = self.get(tile_url(level, n, width))
                assert len(data) == 32 * width
                hashes += [data[i : i + 32] for i in range(0, len(data), 32)]
                if level == 0:
                    bundle = parse_bundle(self.get(tile_url("entries", n, width)))
                    assert len(bundle) == width
                    assert [sha256(b"\x00" + e) for e in bundle] == hashes[256 * n :]
                    self.leaves += bundle
            if level:  # each hash is the MTH of a full tile below
                below = self.hashes[level - 1]
                for m, h in enumerate(hashes):
                    assert h == self.perfect(below[256 * m : 256 * m + 256])
            self.hashes[level] = hashes
            level += 1
        return self.root()

    @staticmethod
    def perfect(hashes: list[bytes]) -> bytes:
        while len(hashes) > 1:
            hashes = [
                sha256(b"\x01" + a + b) for a, b in zip(hashes[::2], hashes[1::2], strict=True)
            ]
        return hashes[0]

    def subtree(self, k: int, i: int) -> bytes:
        """The perfect subtree of 2**k entries, the i-th, from the tile level at or below."""
        level, r = divmod(k, 8)
        return self.perfect(self.hashes[level][i << r : (i + 1) << r])

    def root(self) -> bytes:
        """RFC 6962 MTH: the perfect subtrees along the size's bits, hashed right to left."""
        parts, offset = [], 0
        for k in reversed(range(self.size.bit_length())):
            if self.size >> k & 1:
                parts.append(self.subtree(k, offset >> k))
                offset += 1 << k
        acc = parts[-1]
        for part in reversed(parts[:-1]):
            acc = sha256(b"\x01" + part + acc)
        return acc


def _getter(client: Client) -> Callable[[str], bytes]:
    def get(path: str) -> bytes:
        response = client.get(path, headers={"Accept-Encoding": "gzip, identity"})
        assert response.status_code == 200, (path, response.text)
        assert response.headers["content-type"] == "application/octet-stream"
        return response.content

    return get


# --- the tests ---------------------------------------------------------------------------------


def test_an_independent_reader_reads_the_tiles_back_into_the_leaves(
    client: Client, root: Path
) -> None:
    note = client.get("/checkpoint")
    assert note.headers["content-type"] == "text/plain; charset=utf-8"
    vkey = client.get("/v1/log/key").text
    origin, size, tree_root = verify_checkpoint(note.content, vkey)
    assert size == ENTRIES + 3 and origin == vkey.split("+")[0]
    reader = Reader(_getter(client), size)
    assert reader.read() == tree_root
    assert len(reader.hashes[0]) == size and len(reader.hashes[1]) == 2
    entries = client.get("/v1/log/entries", params={"start": 0, "end": size}).json()["entries"]
    assert reader.leaves == [base64.b64decode(e["leaf"]) for e in entries]
    with Ledger.open(root) as ledger:
        assert reader.leaves == [leaf for _, leaf in ledger.store.leaves(0, size)]


def test_checkpoint_is_the_signed_note_of_the_json_api(client: Client) -> None:
    assert client.get("/checkpoint").content == client.get("/v1/log/checkpoint").content


def test_cache_headers(client: Client) -> None:
    immutable = "public, max-age=31536000, immutable"
    for path in ("/tile/0/000", "/tile/0/001", "/tile/entries/001"):
        assert client.get(path).headers["cache-control"] == immutable
    for path in ("/tile/0/002.p/91", "/tile/1/000.p/2", "/tile/entries/002.p/91", "/checkpoint"):
        cache = client.get(path).headers["cache-control"]
        max_age = int(re.search(r"max-age=(\d+)", cache)[1])  # type: ignore[index]
        assert "immutable" not in cache and max_age <= (5 if path == "/checkpoint" else 300)


@pytest.mark.parametrize(
    "path",
    [
        "/tile/0/x000/002",
        "/tile/0/2",
        "/tile/00/000",
        "/tile/64/000",
        "/tile/0/000.p/0",
        "/tile/0/000.p/256",
        "/tile/0/000.p/007",
        "/tile/entries/x001",
        "/tile/entries",
        "/tile/abc/000",
        # The router would merge slashes and decode %XX: a tile has one spelling only.
        "/tile/0/000/",
        "/tile/0//000",
        "/tile//0/000",
        "/tile/0/%30%30%30",
    ],
)
def test_a_path_outside_the_spec_is_a_400_problem(client: Client, path: str) -> None:
    response = client.get(path)
    assert response.status_code == 400
    assert response.headers["content-type"] == "application/problem+json"
    assert response.json()["type"].endswith("/bad-tile-path")


def test_a_write_is_a_405_problem(client: Client) -> None:
    for path in ("/checkpoint", "/tile/0/000"):
        response = client.post(path, content=b"")
        assert response.status_code == 405
        assert response.headers["content-type"] == "application/problem+json"


@pytest.mark.parametrize(
    "path",
    [
        "/tile/0/003",
        "/tile/0/002",  # only 91 hashes there yet
        "/tile/0/002.p/92",
        "/tile/1/000",
        "/tile/1/000.p/3",
        "/tile/2/000.p/1",
        "/tile/entries/003",
        "/tile/entries/002.p/200",
        "/tile/0/x001/000",
    ],
)
def test_a_tile_beyond_the_tree_is_a_404_problem(client: Client, path: str) -> None:
    response = client.get(path)
    assert response.status_code == 404
    assert response.headers["content-type"] == "application/problem+json"
    assert response.json()["type"].endswith("/no-such-tile")


def test_a_partial_tile_is_served_for_every_width_the_tree_reached(client: Client) -> None:
    full = client.get("/tile/0/001").content
    assert client.get("/tile/0/001.p/3").content == full[: 3 * 32]
    assert client.get("/tile/0/002.p/90").content == client.get("/tile/0/002.p/91").content[:-32]
    assert client.get("/tile/1/000.p/1").content == client.get("/tile/1/000.p/2").content[:32]
    bundle = parse_bundle(client.get("/tile/entries/000").content)
    assert parse_bundle(client.get("/tile/entries/000.p/5").content) == bundle[:5]


def test_bundles_are_gzipped_for_clients_that_accept_it(client: Client) -> None:
    zipped = client.get("/tile/entries/000", headers={"Accept-Encoding": "gzip"})
    plain = client.get("/tile/entries/000", headers={"Accept-Encoding": "identity"})
    refused = client.get("/tile/entries/000", headers={"Accept-Encoding": "gzip;q=0, br"})
    assert zipped.headers["content-encoding"] == "gzip"
    assert "content-encoding" not in plain.headers and "content-encoding" not in refused.headers
    assert int(zipped.headers["content-length"]) < int(plain.headers["content-length"])
    assert zipped.content == plain.content == refused.content  # httpx unzips
    assert int(plain.headers["content-length"]) == len(plain.content)
    assert zipped.headers["vary"] == plain.headers["vary"] == "accept-encoding"
    assert zipped.headers["etag"] != plain.headers["etag"]  # two representations
    tile = client.get("/tile/0/000", headers={"Accept-Encoding": "gzip"})
    assert "content-encoding" not in tile.headers  # hashes do not compress


def test_etags_answer_304_and_head_answers_without_a_body(client: Client) -> None:
    for path in ("/tile/0/000", "/tile/entries/002.p/91", "/checkpoint"):
        first = client.get(path)
        again = client.get(path, headers={"If-None-Match": first.headers["etag"]})
        assert again.status_code == 304 and again.content == b""
        head = client.head(path)
        assert head.status_code == 200 and head.content == b""
        assert head.headers["content-length"] == first.headers["content-length"]
        assert head.headers["etag"] == first.headers["etag"]


def test_the_openapi_schema_documents_the_routes(client: Client) -> None:
    paths = client.get("/schema/openapi.json").json()["paths"]
    assert "/checkpoint" in paths and "/tile/{rest}" in paths
    assert {"400", "404"} <= set(paths["/tile/{rest}"]["get"]["responses"])


@pytest.mark.parametrize(
    ("header", "gzip_ok"),
    [
        (None, False),
        ("", False),
        ("gzip", True),
        ("GZIP;q=0.5", True),
        ("gzip;q=0", False),
        ("deflate, br", False),
        ("*", True),
        ("*;q=0", False),
        ("gzip;q=0, *", False),
        ("identity, x-gzip", True),
        ("gzip;q=bad", False),
    ],
)
def test_accept_encoding(header: str | None, gzip_ok: bool) -> None:
    assert accepts_gzip(header) is gzip_ok


# --- a log that grows ---------------------------------------------------------------------------


def test_tiles_stay_right_as_the_log_grows(tmp_path: Path) -> None:
    ledger, _ = init_data_dir(tmp_path / "data")
    with ledger, TestClient(app=create_app(Settings(data=tmp_path / "data"), ledger=ledger)) as c:
        ledger.append(_reports(0, 97))  # 100 entries
        store = ledger.store
        first = c.get("/tile/0/000.p/100").content
        bundle = c.get("/tile/entries/000.p/100").content
        assert c.get("/tile/0/000.p/101").status_code == 404
        ledger.append(_reports(97, 200))  # 300 entries
        assert c.get("/tile/0/000.p/100").content == first  # cached, and still right
        assert first == tile_of(store, Tile(0, 0, 100), 100)
        assert c.get("/tile/entries/000.p/100").content == bundle
        assert c.get("/tile/0/000").content == tile_of(store, Tile(0, 0), 300)
        assert c.get("/tile/0/001.p/44").content == tile_of(store, Tile(0, 1, 44), 300)
        assert c.get("/tile/1/000.p/1").content == tile_of(store, Tile(1, 0, 1), 300)
        _, size, root = verify_checkpoint(c.get("/checkpoint").content, c.get("/v1/log/key").text)
        assert size == 300 and Reader(_getter(c), size).read() == root


def test_the_cache_is_bounded(root: Path) -> None:
    with Ledger.open(root) as ledger:
        tiles = Tiles(budget=20_000)  # two full tiles and their bookkeeping
        for path in ("tile/0/000", "tile/0/001", "tile/0/002.p/91", "tile/1/000.p/2"):
            tiles.read(ledger.store, path, gzip_ok=True)
            assert tiles.cached_bytes <= 20_000
        assert tiles.cached("tile/0/000", gzip_ok=True) is None  # the least recent went first
        assert tiles.cached("tile/1/000.p/2", gzip_ok=True) is not None
        bundle = tiles.read(ledger.store, "tile/entries/000", gzip_ok=False)
        assert len(parse_bundle(bundle.body)) == 256 and not bundle.gzipped and bundle.full
        zipped = tiles.read(ledger.store, "tile/entries/000", gzip_ok=True)
        assert zipped.gzipped and gzip.decompress(zipped.body) == bundle.body
        assert tiles.cached_bytes <= 20_000
