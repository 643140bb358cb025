"""``LogReader.node_range`` (what a C2SP tile holds) on every store adapter, and the tiles and
entry bundles ``events.tiles`` reads through it, checked against hashes computed here from the
leaves (RFC 6962 §2.1, with hashlib) rather than against the store's own tree."""

from __future__ import annotations

import hashlib
from collections.abc import Iterator
from typing import Any

import pytest

from events.errors import LogError
from events.port import LogStore
from events.tiles import (
    Tile,
    TileError,
    bundle_of,
    decode_bundle,
    tile_of,
    tiles_for,
)
from keys import SigningKey
from service.core.signing import Signers
from tests.contract.test_store import ADAPTERS, Factory, _append, _reports

SIZE = 600  # two full level-0 tiles, a partial one of 88, a partial level-1 tile of 2


def _mth(hashes: list[bytes]) -> bytes:
    """MTH over leaf hashes (RFC 6962 §2.1), for a power-of-two count."""
    while len(hashes) > 1:
        hashes = [
            hashlib.sha256(b"\x01" + hashes[i] + hashes[i + 1]).digest()
            for i in range(0, len(hashes), 2)
        ]
    return hashes[0]


@pytest.fixture(scope="module", params=sorted(ADAPTERS))
def grown(
    request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[tuple[LogStore[Any], list[bytes]]]:
    factory: Factory = ADAPTERS[request.param]
    signers = Signers(SigningKey.generate(), SigningKey.generate(), "contract.example/log")
    store = factory(tmp_path_factory.mktemp("tiles"), "contract.example/log")
    for start in range(0, SIZE, 150):  # several batches: nodes across commits
        _append(store, signers, _reports(150, start))
    leaf_hashes = [hashlib.sha256(b"\x00" + leaf).digest() for _, leaf in store.leaves()]
    yield store, leaf_hashes
    store.close()
    signers.close()


def test_level_0_is_the_leaf_hashes(grown: tuple[LogStore[Any], list[bytes]]) -> None:
    store, leaf_hashes = grown
    assert store.node_range(0, 0, SIZE) == leaf_hashes
    assert store.node_range(0, 250, 260) == leaf_hashes[250:260]
    assert store.node_range(0, 7, 7) == []


def test_higher_levels_are_the_perfect_subtrees(grown: tuple[LogStore[Any], list[bytes]]) -> None:
    store, leaf_hashes = grown
    for level in (1, 3, 8, 9):
        width = 1 << level
        count = SIZE // width
        expected = [_mth(leaf_hashes[i * width : (i + 1) * width]) for i in range(count)]
        assert store.node_range(level, 0, count) == expected
        assert store.node_range(level, 1, count) == expected[1:]


def test_a_range_beyond_the_tree_is_refused(grown: tuple[LogStore[Any], list[bytes]]) -> None:
    store, _ = grown
    with pytest.raises(LogError):
        store.node_range(0, SIZE - 1, SIZE + 1)
    with pytest.raises(LogError):
        store.node_range(8, 0, 3)  # 600 leaves hold two perfect subtrees of 256


def test_tiles_and_bundles_read_back(grown: tuple[LogStore[Any], list[bytes]]) -> None:
    store, leaf_hashes = grown
    tiles = list(tiles_for(SIZE))
    assert tiles == [Tile(0, 0), Tile(0, 1), Tile(0, 2, 88), Tile(1, 0, 2)]
    leaves = [leaf for _, leaf in store.leaves()]
    for tile in tiles[:3]:
        assert tile_of(store, tile) == b"".join(leaf_hashes[tile.start : tile.end])
        assert decode_bundle(bundle_of(store, tile), tile.width) == leaves[tile.start : tile.end]
    level1 = [_mth(leaf_hashes[0:256]), _mth(leaf_hashes[256:512])]
    assert tile_of(store, Tile(1, 0, 2)) == b"".join(level1)


def test_a_tile_is_one_of_the_tree_of_its_size(grown: tuple[LogStore[Any], list[bytes]]) -> None:
    store, leaf_hashes = grown
    # Of the tree of 300 entries, the partial level-0 tile is 001.p/44; of 600, 002.p/88.
    assert tile_of(store, Tile(0, 1, 44), 300) == b"".join(leaf_hashes[256:300])
    for tile, size in [
        (Tile(0, 1, 44), SIZE),  # the tree of 600 has the full tile there
        (Tile(0, 2, 10), SIZE),  # and 88 hashes, not 10, in tile 2
        (Tile(0, 2, 100), SIZE),
        (Tile(0, 3), SIZE),
        (Tile(1, 0), SIZE),
        (Tile(1, 0, 1), SIZE),
        (Tile(2, 0, 1), SIZE),
        (Tile(0, 1), 300),
    ]:
        with pytest.raises(TileError):
            tile_of(store, tile, size)
    with pytest.raises(TileError):
        bundle_of(store, Tile(1, 0, 2))
