"""``events.tiles`` against the examples of C2SP ``tlog-tiles.md``: the path encoding of a tile
index, which tiles a tree of a given size has, strict path parsing, and the entry bundle codec
(each leaf prefixed with its big-endian 16-bit length)."""

from __future__ import annotations

import hashlib

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from events.tiles import (
    MAX_LEAF,
    Tile,
    TileError,
    bundle_hashes,
    decode_bundle,
    encode_bundle,
    encode_index,
    parse_path,
    tiles_for,
)

# --- the spec's examples ----------------------------------------------------------------------


def test_index_1234067_is_written_in_groups_of_three() -> None:
    assert encode_index(1234067) == "x001/x234/067"
    assert parse_path("tile/0/x001/x234/067") == (Tile(0, 1234067), False)
    assert parse_path("/tile/entries/x001/x234/067") == (Tile(0, 1234067), True)


@pytest.mark.parametrize(
    ("index", "text"),
    [(0, "000"), (7, "007"), (999, "999"), (1000, "x001/000"), (1_000_000, "x001/x000/000")],
)
def test_small_and_boundary_indexes(index: int, text: str) -> None:
    assert encode_index(index) == text


def test_a_tree_of_70000_entries() -> None:
    tiles = list(tiles_for(70_000))
    level0 = [t for t in tiles if t.level == 0]
    assert [t for t in level0 if not t.partial] == [Tile(0, n) for n in range(273)]
    assert [t for t in level0 if t.partial] == [Tile(0, 273, 112)]
    assert [t for t in tiles if t.level == 1] == [Tile(1, 0), Tile(1, 1, 17)]
    assert [t for t in tiles if t.level == 2] == [Tile(2, 0, 1)]
    assert max(t.level for t in tiles) == 2
    assert len(tiles) == 273 + 1 + 1 + 1 + 1
    assert Tile(0, 273, 112).path() == "tile/0/273.p/112"
    assert Tile(0, 273, 112).entries_path() == "tile/entries/273.p/112"
    assert Tile(1, 1, 17).path() == "tile/1/001.p/17"
    assert Tile(2, 0, 1).path() == "tile/2/000.p/1"


def test_a_tree_of_256_entries() -> None:
    assert list(tiles_for(256)) == [Tile(0, 0), Tile(1, 0, 1)]
    assert list(tiles_for(255)) == [Tile(0, 0, 255)]
    assert list(tiles_for(0)) == []


def test_a_partial_tile_at_level_l_has_size_over_256_to_the_l_mod_256_hashes() -> None:
    size = 5 * 256**3 + 3 * 256**2 + 200 * 256 + 17
    partial = {t.level: t.width for t in tiles_for(size) if t.partial}
    assert partial == {level: (size // 256**level) % 256 for level in range(4)}


def test_start_and_end_indexes_of_a_tile() -> None:
    # tile n at level l spans D[n * 256**(l+1) : (n+1) * 256**(l+1)]
    assert (Tile(0, 3).start, Tile(0, 3).end) == (768, 1024)
    assert (Tile(1, 2).start, Tile(1, 2).end) == (2 * 65_536, 3 * 65_536)
    assert (Tile(1, 1, 17).start, Tile(1, 1, 17).end) == (65_536, 65_536 + 17 * 256)
    assert Tile(2, 0, 1).first == 0 and Tile(1, 1).first == 256


# --- strict paths ---------------------------------------------------------------------------


@pytest.mark.parametrize(
    "path",
    [
        "tile/0/000.p/256",  # a partial tile holds 1 to 255 hashes
        "tile/0/000.p/0",
        "tile/0/000.p/07",  # no leading zeros in the width
        "tile/0/000.p/",
        "tile/0/000.p",
        "tile/01/000",  # nor in the level
        "tile/64/000",  # levels are 0 to 63
        "tile/-1/000",
        "tile/0/x000/001",  # 1 has one encoding: 001
        "tile/0/001/234",  # all but the last group begin with x
        "tile/0/x001",  # the last does not
        "tile/0/1",  # three digits a group
        "tile/0/0001",
        "tile/0/x1/234",
        "tile/0/000/",
        "tile/0/",
        "tile/0",
        "tile/entries",
        "tiles/0/000",
        "tile/x/000",
        "tile/0/\u0660\u0660\u0661",  # Arabic-Indic digits are not ASCII digits
        "tile/entries/000.p/1/2",
        "tile/0/x001/.p/3",
    ],
)
def test_paths_outside_the_spec_are_refused(path: str) -> None:
    with pytest.raises(TileError):
        parse_path(path)


def test_paths_of_the_spec_parse() -> None:
    assert parse_path("tile/63/000") == (Tile(63, 0), False)
    assert parse_path("tile/0/000.p/255") == (Tile(0, 0, 255), False)
    assert parse_path("tile/entries/x001/000.p/1") == (Tile(0, 1000, 1), True)
    assert parse_path("tile/2/000.p/1") == (Tile(2, 0, 1), False)


def test_only_a_level_0_tile_has_a_bundle() -> None:
    with pytest.raises(TileError):
        Tile(1, 0).entries_path()
    with pytest.raises(TileError):
        encode_index(-1)
    with pytest.raises(TileError):
        Tile(0, 0, 0).path()


# --- entry bundles --------------------------------------------------------------------------


def test_a_bundle_prefixes_each_entry_with_its_16_bit_length() -> None:
    leaves = [b"", b"a", b"hello", b"x" * 300]
    bundle = encode_bundle(leaves)
    assert bundle[:2] == b"\x00\x00"
    assert bundle[2:5] == b"\x00\x01a"
    assert bundle[5:12] == b"\x00\x05hello"
    assert bundle[12:14] == b"\x01\x2c" and len(bundle) == 14 + 300
    assert decode_bundle(bundle) == leaves
    assert decode_bundle(bundle, 4) == leaves


def test_the_longest_leaf_is_65535_bytes() -> None:
    assert MAX_LEAF == 65_535
    big = b"\xff" * MAX_LEAF
    assert decode_bundle(encode_bundle([big])) == [big]
    assert encode_bundle([big])[:2] == b"\xff\xff"
    with pytest.raises(TileError):
        encode_bundle([big + b"!"])


@pytest.mark.parametrize("cut", [1, 3, 7, 13])
def test_a_truncated_bundle_is_refused(cut: int) -> None:
    bundle = encode_bundle([b"abc", b"defgh", b"ij"])
    with pytest.raises(TileError):
        decode_bundle(bundle[:-cut] if cut != 13 else bundle[:1])


def test_a_bundle_with_another_count_is_refused() -> None:
    bundle = encode_bundle([b"abc", b"de"])
    with pytest.raises(TileError):
        decode_bundle(bundle, 3)
    with pytest.raises(TileError):
        decode_bundle(bundle + b"\x00\x00", 2)  # one more, empty, entry


def test_a_bundle_hashes_to_its_level_0_tile() -> None:
    leaves = [b"one", b"two"]
    expected = b"".join(hashlib.sha256(b"\x00" + leaf).digest() for leaf in leaves)
    assert bundle_hashes(leaves) == expected


# --- properties -----------------------------------------------------------------------------


@settings(max_examples=300, deadline=None)
@given(st.integers(0, 10**30))
def test_an_index_round_trips_through_its_path(index: int) -> None:
    text = encode_index(index)
    groups = text.split("/")
    assert all(len(g) == 4 and g[0] == "x" for g in groups[:-1])
    assert len(groups[-1]) == 3 and groups[-1].isdigit()
    assert parse_path(f"tile/0/{text}") == (Tile(0, index), False)


@settings(max_examples=300, deadline=None)
@given(st.integers(0, 63), st.integers(0, 10**12), st.integers(1, 256), st.booleans())
def test_a_tile_round_trips_through_its_path(
    level: int, index: int, width: int, entries: bool
) -> None:
    tile = Tile(level, index, width)
    assert parse_path(tile.path()) == (tile, False)
    if entries:
        base = Tile(0, index, width)
        assert parse_path(base.entries_path()) == (base, True)


@settings(max_examples=200, deadline=None)
@given(st.lists(st.binary(max_size=600), max_size=40))
def test_bundles_round_trip(leaves: list[bytes]) -> None:
    bundle = encode_bundle(leaves)
    assert len(bundle) == sum(2 + len(leaf) for leaf in leaves)
    assert decode_bundle(bundle, len(leaves)) == leaves


@settings(max_examples=200, deadline=None)
@given(st.lists(st.binary(min_size=1, max_size=50), min_size=1, max_size=20), st.data())
def test_a_bundle_cut_anywhere_inside_is_refused(leaves: list[bytes], data: st.DataObject) -> None:
    bundle = encode_bundle(leaves)
    ends = {sum(2 + len(leaf) for leaf in leaves[:k]) for k in range(len(leaves) + 1)}
    cut = data.draw(st.integers(1, len(bundle) - 1).filter(lambda c: c not in ends))
    with pytest.raises(TileError):
        decode_bundle(bundle[:cut])


@settings(max_examples=200, deadline=None)
@given(st.integers(0, 2**64 - 1), st.integers(0, 63))
def test_the_tiles_of_a_level_hold_each_of_its_hashes_once(size: int, level: int) -> None:
    hashes = size >> (8 * level)
    if hashes > 300 * 256:  # keep the walk short: start at a level with few tiles
        level = next(lv for lv in range(level, 64) if size >> (8 * lv) <= 300 * 256)
        hashes = size >> (8 * level)
    tiles = list(tiles_for(size, level))
    assert [t.index for t in tiles] == list(range(len(tiles)))
    assert all(t.level == level for t in tiles)
    assert sum(t.width for t in tiles) == hashes
    assert all(not t.partial for t in tiles[:-1])
    top = max((lv for lv in range(64) if size >> (8 * lv)), default=-1)
    assert list(tiles_for(size, top + 1)) == []


@settings(max_examples=100, deadline=None)
@given(st.integers(0, 2**22))
def test_the_tiles_of_a_tree_are_those_of_its_levels(size: int) -> None:
    every = list(tiles_for(size))
    assert every == [t for level in range(64) for t in tiles_for(size, level)]
