"""The behaviour every store of the log must show (``events.port.LogStore``), written against the
port alone and run against each adapter: the SQLite one always, and the PostgreSQL one when a
server is named (``BENCHPROOF_TEST_PG``: ``make test-postgres``), unchanged.

Append-only, idempotent appends, atomic batches and transactions, checkpoints that cover every
entry, proofs for any sizes, ranged reads that agree with each other, and mirrored leaves (the
same bytes at the same positions, checked before they are taken).
"""

from __future__ import annotations

import contextlib
import itertools
from collections.abc import Callable, Iterator, Sequence
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest

from events.checkpoints import checkpoint_body, parse_checkpoint_body
from events.entries import StoredEntry, decode_leaf, payload_digest
from events.errors import LogCorrupted, LogError
from events.merkle import (
    EMPTY_ROOT,
    CompactRange,
    leaf_hash,
    subtree_hash,
    verify_consistency,
    verify_inclusion,
)
from events.port import LogStore, SignedCheckpoint
from events.stores.postgres import PgLog
from events.stores.sqlite import SqliteLog
from events.types import ReportFiled
from keys import SigningKey, open_note
from service.core.ledger import pending_of
from service.core.signing import Signers
from tests.stores import fresh_pg_url, pg_base

RUN = "sha256:" + "cd" * 32
T0 = datetime(2026, 11, 1, 12, 0, tzinfo=UTC)

Factory = Callable[[Path, str], LogStore[Any]]
"""Opens (creating if needed) the store kept at a path, with an origin."""


def _sqlite(path: Path, origin: str) -> LogStore[Any]:
    path.mkdir(parents=True, exist_ok=True)
    return SqliteLog.open(path / "log.db", origin=origin, create=True)


_PG_URLS: dict[Path, str] = {}  # the schema each path stands for: one store per path


def _postgres(path: Path, origin: str) -> LogStore[Any]:
    base = pg_base()
    assert base is not None
    if path not in _PG_URLS:
        _PG_URLS[path] = fresh_pg_url(base)
    return PgLog.open(_PG_URLS[path], origin=origin, create=True)


ADAPTERS: dict[str, Factory] = {"sqlite": _sqlite}
if pg_base() is not None:  # `make test-postgres`: the same tests on a PostgreSQL server
    ADAPTERS["postgresql"] = _postgres


@pytest.fixture(params=sorted(ADAPTERS))
def factory(request: pytest.FixtureRequest) -> Factory:
    return ADAPTERS[request.param]


@pytest.fixture(scope="module")
def signers() -> Iterator[Signers]:
    out = Signers(SigningKey.generate(), SigningKey.generate(), "contract.example/log")
    yield out
    out.close()


@pytest.fixture
def store(factory: Factory, tmp_path: Path) -> Iterator[LogStore[Any]]:
    opened = factory(tmp_path / "a", "contract.example/log")
    yield opened
    opened.close()


def _reports(n: int, start: int = 0) -> list[Any]:
    return [
        pending_of(ReportFiled(runDigest=RUN, category="note", text=f"report {i}"), RUN)
        for i in range(start, start + n)
    ]


def _append(
    store: LogStore[Any],
    signers: Signers,
    pending: Sequence[Any],
    *,
    now: datetime = T0,
    project: Callable[[Any, Sequence[StoredEntry]], None] | None = None,
) -> list[Any]:
    signed = [p.__class__(**{**_fields(p), "signer": signers.index.key_id}) for p in pending]
    return store.append(
        signed,
        sign=signers.sign_chunks,
        sign_checkpoint=signers.sign_checkpoint,
        now=now,
        project=project,
    )


def _fields(p: Any) -> dict[str, Any]:
    return {f: getattr(p, f) for f in p.__struct_fields__}


def _explode(_session: Any, _entries: Sequence[StoredEntry]) -> None:
    raise RuntimeError("projection failed")


def _snapshot(store: LogStore[Any]) -> tuple[int, list[tuple[int, bytes]], SignedCheckpoint | None]:
    return store.refresh(), list(store.leaves()), store.latest_checkpoint()


# --- reading back what was appended -----------------------------------------------------------


def test_an_empty_store_has_nothing(store: LogStore[Any]) -> None:
    assert store.size == store.refresh() == 0
    assert store.root() == EMPTY_ROOT
    assert list(store.leaves()) == [] and list(store.rows()) == [] and list(store.nodes()) == []
    assert store.latest_checkpoint() is None and list(store.checkpoints()) == []
    assert store.leaf(0) is None and store.find(["sha256:00"]) == {}


def test_appended_entries_read_back_alike_through_every_read(
    store: LogStore[Any], signers: Signers
) -> None:
    out = _append(store, signers, _reports(6))
    assert [(a.seq, a.new) for a in out] == [(i, True) for i in range(6)]
    assert store.size == 6
    leaves = list(store.leaves())
    assert [seq for seq, _ in leaves] == list(range(6))
    rows = list(store.rows())
    headers = list(store.headers())
    for (seq, leaf), row, header in zip(leaves, rows, headers, strict=True):
        entry = decode_leaf(leaf, position=seq)
        assert entry.seq == seq == row.seq == header.seq
        assert row.leaf == leaf == store.leaf(seq)
        assert row.leaf_hash == leaf_hash(leaf) == store.read_node(0, seq)
        assert (row.recorded_at, row.type, row.subject) == (
            entry.recordedAt,
            entry.type,
            entry.subject,
        )
        assert (header.type, header.subject, header.recorded_at) == (
            row.type,
            row.subject,
            row.recorded_at,
        )
    assert [r.payload_digest for r in rows] == [a.payloadDigest for a in out]
    assert list(store.leaves(2, 4)) == leaves[2:4]
    assert list(store.headers(4)) == headers[4:]
    assert store.headers_at([5, 1, 99]) == {5: headers[5], 1: headers[1]}
    assert store.find([out[3].payloadDigest, "sha256:00"]) == {out[3].payloadDigest: 3}


def test_stored_nodes_are_the_perfect_subtrees(store: LogStore[Any], signers: Signers) -> None:
    _append(store, signers, _reports(11))
    nodes = list(store.nodes())
    assert nodes, "a tree of 11 leaves has perfect subtrees above its leaves"
    for level, index, h in nodes:
        assert h == subtree_hash(index << level, (index + 1) << level, store.read_node)
    with pytest.raises(LogError):
        store.read_node(3, 5)


# --- append-only and idempotent ---------------------------------------------------------------


def test_the_same_statement_twice_is_one_entry(store: LogStore[Any], signers: Signers) -> None:
    first = _append(store, signers, _reports(3))
    checkpoint = store.latest_checkpoint()
    again = _append(store, signers, _reports(3) + _reports(1, start=3) + _reports(1, start=3))
    assert [a.new for a in again] == [False, False, False, True, False]
    assert [a.seq for a in again[:3]] == [a.seq for a in first]
    assert again[3].seq == again[4].seq == 3
    assert store.size == 4
    assert store.latest_checkpoint() != checkpoint  # the new entry has its checkpoint
    assert [a.new for a in _append(store, signers, _reports(4))] == [False] * 4
    assert _checkpoint(store, 4) == store.latest_checkpoint()


def test_appending_never_changes_what_was_there(store: LogStore[Any], signers: Signers) -> None:
    _append(store, signers, _reports(5))
    before, root5 = list(store.leaves()), store.root()
    for k in range(3):
        _append(store, signers, _reports(4, start=10 * (k + 1)))
    assert list(store.leaves(0, 5)) == before
    assert store.root(5) == root5
    assert _checkpoint(store, 5).root == root5


def test_recording_times_never_go_back(store: LogStore[Any], signers: Signers) -> None:
    _append(store, signers, _reports(2), now=T0)
    _append(store, signers, _reports(2, start=2), now=T0 - timedelta(hours=1))  # a clock step back
    _append(store, signers, _reports(2, start=4), now=T0 + timedelta(hours=1))
    times = [h.recorded_at for h in store.headers()]
    assert times == sorted(times)
    assert store.size_at_instant("2026-11-01T11:59:59.999Z") == 0
    assert store.size_at_instant("2026-11-01T12:00:00.000Z") == 4
    assert store.size_at_instant("2026-11-01T12:30:00.000Z") == 4
    assert store.size_at_instant("2099-01-01T00:00:00.000Z") == 6


# --- atomicity ---------------------------------------------------------------------------------


def test_a_batch_whose_projection_fails_leaves_nothing(
    store: LogStore[Any], signers: Signers
) -> None:
    _append(store, signers, _reports(3))
    before = _snapshot(store)
    with pytest.raises(RuntimeError, match="projection failed"):
        _append(store, signers, _reports(2000, start=100), project=_explode)
    assert _snapshot(store) == before
    out = _append(store, signers, _reports(2, start=100))  # the store carries on from there
    assert [a.seq for a in out] == [3, 4] and store.size == 5


def test_a_transaction_commits_whole_or_not_at_all(store: LogStore[Any], signers: Signers) -> None:
    _append(store, signers, _reports(2))
    before = _snapshot(store)

    def two_batches_then_a_change_of_mind() -> None:
        with store.transaction():
            _append(store, signers, _reports(3, start=10))  # inner: part of the outer one
            _append(store, signers, _reports(3, start=20))
            raise RuntimeError("the caller changed its mind")

    with pytest.raises(RuntimeError):
        two_batches_then_a_change_of_mind()
    assert _snapshot(store) == before
    checkpoints = len(list(store.checkpoints()))
    with store.transaction():
        _append(store, signers, _reports(3, start=10))
        _append(store, signers, _reports(3, start=20))
    assert store.refresh() == 8
    # One checkpoint, signed as the transaction commits, covers both batches.
    assert len(list(store.checkpoints())) == checkpoints + 1
    assert _checkpoint(store, 8) == store.latest_checkpoint()


def test_an_inner_block_that_failed_dooms_the_transaction(
    store: LogStore[Any], signers: Signers
) -> None:
    _append(store, signers, _reports(2))
    before = _snapshot(store)

    def caught_inner_failure() -> None:
        with store.transaction():
            _append(store, signers, _reports(3, start=10))
            with contextlib.suppress(RuntimeError):  # the caller swallows the inner failure
                _append(store, signers, _reports(2000, start=100), project=_explode)

    with pytest.raises(LogError, match="nothing of it is committed"):
        caught_inner_failure()
    assert _snapshot(store) == before
    assert [a.seq for a in _append(store, signers, _reports(1, start=10))] == [2]


def test_a_snapshot_does_not_see_later_appends(
    factory: Factory, tmp_path: Path, signers: Signers
) -> None:
    a = factory(tmp_path / "shared", "contract.example/log")
    b = factory(tmp_path / "shared", "contract.example/log")
    try:
        _append(a, signers, _reports(2))
        with b.snapshot():
            first = list(b.leaves())
            _append(a, signers, _reports(3, start=5))  # another writer, not blocked
            assert list(b.leaves()) == first
        assert b.refresh() == 5
    finally:
        a.close()
        b.close()


# --- checkpoints and proofs --------------------------------------------------------------------


def test_the_latest_checkpoint_covers_every_entry(store: LogStore[Any], signers: Signers) -> None:
    sizes = []
    for k in range(4):
        _append(store, signers, _reports(k + 2, start=10 * k))
        latest = store.latest_checkpoint()
        assert latest is not None and latest.size == store.size
        body = parse_checkpoint_body(open_note(latest.note, [signers.log_verifier]).text)
        assert (body.origin, body.size, body.root) == (store.origin, store.size, store.root())
        assert latest.root == store.root() and store.checkpoint(store.size) == latest
        sizes.append(store.size)
    assert [c.size for c in store.checkpoints()] == sizes
    assert store.checkpoint_at_or_below(sizes[2] - 1) == store.checkpoint(sizes[1])
    assert store.checkpoint_at_or_below(sizes[0] - 1) is None
    assert store.publish_checkpoint(signers.sign_checkpoint, T0) == store.latest_checkpoint()


def test_the_checkpoint_a_reader_could_hold_at_an_instant(
    store: LogStore[Any], signers: Signers
) -> None:
    for k in range(3):
        _append(store, signers, _reports(2, start=10 * k), now=T0 + timedelta(hours=k))
    assert store.checkpoint_at_instant("2026-11-01T11:59:59.999Z") is None
    assert store.checkpoint_at_instant("2026-11-01T12:00:00.000Z") == _checkpoint(store, 2)
    assert store.checkpoint_at_instant("2026-11-01T13:59:59.000Z") == _checkpoint(store, 4)
    assert store.checkpoint_at_instant("2099-01-01T00:00:00.000Z") == store.latest_checkpoint()


def test_publishing_signs_a_checkpoint_only_when_behind(
    store: LogStore[Any], signers: Signers
) -> None:
    assert store.latest_checkpoint() is None
    empty = store.publish_checkpoint(signers.sign_checkpoint, T0)
    assert (empty.size, empty.root) == (0, EMPTY_ROOT)
    _append(store, signers, _reports(3))
    assert store.publish_checkpoint(signers.sign_checkpoint, T0).size == 3
    assert len(list(store.checkpoints())) == 2


def test_proofs_verify_for_every_size(store: LogStore[Any], signers: Signers) -> None:
    for k in range(5):
        _append(store, signers, _reports(3, start=10 * k))
    n = store.size
    roots = {size: store.root(size) for size in range(1, n + 1)}
    for size in range(1, n + 1):
        for index in range(size):
            proof = store.inclusion_proof(index, size)
            verify_inclusion(index, size, store.read_node(0, index), proof, roots[size])
    for old, new in itertools.combinations_with_replacement(range(1, n + 1), 2):
        verify_consistency(old, new, roots[old], roots[new], store.consistency_proof(old, new))
    with pytest.raises(LogError):
        store.inclusion_proof(0, n + 1)


# --- mirrors -----------------------------------------------------------------------------------


@pytest.fixture
def source(factory: Factory, tmp_path: Path, signers: Signers) -> Iterator[LogStore[Any]]:
    opened = factory(tmp_path / "source", "contract.example/log")
    for k in range(3):
        _append(opened, signers, _reports(7, start=10 * k), now=T0 + timedelta(minutes=k))
    yield opened
    opened.close()


def _leaves(log: LogStore[Any], start: int, end: int) -> list[bytes]:
    return [leaf for _, leaf in log.leaves(start, end)]


def _checkpoint(log: LogStore[Any], size: int) -> SignedCheckpoint:
    found = log.checkpoint(size)
    assert found is not None
    return found


def test_a_mirror_holds_the_same_bytes_at_the_same_positions(
    source: LogStore[Any], store: LogStore[Any]
) -> None:
    seen: list[int] = []
    out = store.append_leaves(
        0,
        _leaves(source, 0, 14),
        _checkpoint(source, 14),
        check=lambda entries: seen.extend(e.seq for e in entries),
        project=lambda _s, entries: seen.extend(e.seq for e in entries),
    )
    assert (out.appended, out.size) == (14, 14)
    assert seen == list(range(14)) * 2  # checked, then projected
    # Overlapping leaves that are byte-equal are fine; only the new ones are taken.
    out = store.append_leaves(7, _leaves(source, 7, 21), _checkpoint(source, 21))
    assert (out.appended, out.size) == (7, 21)
    assert list(store.leaves()) == list(source.leaves())
    assert list(store.rows()) == list(source.rows())
    assert sorted(store.nodes()) == sorted(source.nodes())
    assert store.root() == source.root()
    assert store.latest_checkpoint() == source.latest_checkpoint()
    assert store.append_leaves(0, _leaves(source, 0, 21), _checkpoint(source, 21)).appended == 0


def _refused(
    store: LogStore[Any], error: type[Exception], match: str, *args: Any, **kw: Any
) -> None:
    before = _snapshot(store)
    with pytest.raises(error, match=match):
        store.append_leaves(*args, **kw)
    assert _snapshot(store) == before


def test_a_mirror_refuses_what_is_not_the_log(source: LogStore[Any], store: LogStore[Any]) -> None:
    store.append_leaves(0, _leaves(source, 0, 7), _checkpoint(source, 7))
    leaves, checkpoint = _leaves(source, 7, 14), _checkpoint(source, 14)
    _refused(store, LogError, "gap", 8, leaves[1:], checkpoint)
    _refused(store, LogCorrupted, "says it is entry", 7, [leaves[1], *leaves[1:]], checkpoint)
    wrong_root = checkpoint._replace(root=bytes(32))
    _refused(store, LogError, "root", 7, leaves, wrong_root)
    _refused(store, LogError, "size", 7, leaves[:-1], checkpoint)
    _refused(store, LogCorrupted, "malformed", 7, [b"not a leaf", *leaves[1:]], checkpoint)

    def refuse(entries: Sequence[StoredEntry]) -> None:
        raise ValueError(f"signature of entry {entries[0].seq} does not verify")

    _refused(store, ValueError, "entry 7", 7, leaves, checkpoint, check=refuse)
    _refused(store, RuntimeError, "projection", 7, leaves, checkpoint, project=_explode)
    # The note must sign what the fields say: another size's note, another log's note.
    _refused(
        store,
        LogError,
        "note signs",
        7,
        leaves,
        checkpoint._replace(note=_checkpoint(source, 7).note),
    )
    _refused(store, LogError, "start at position -1", -1, leaves, checkpoint)
    # A held leaf that differs: the logs have forked.
    other = bytearray(_leaves(source, 3, 4)[0])
    other[other.index(b"report")] = ord("R")
    _refused(store, LogError, "forked", 3, [bytes(other), *_leaves(source, 4, 14)], checkpoint)
    assert store.append_leaves(7, leaves, checkpoint).size == 14  # the right leaves still go in


def test_a_whole_log_taken_in_pieces_is_the_log(
    source: LogStore[Any], store: LogStore[Any]
) -> None:
    """``append_leaf_pieces``: the same store as one ``append_leaves``, one piece in memory."""
    leaves = _leaves(source, 0, 21)
    pieces = (leaves[i : i + 4] for i in range(0, 21, 4))
    out = store.append_leaf_pieces(0, pieces, _checkpoint(source, 21))
    assert (out.appended, out.size) == (21, 21)
    assert list(store.rows()) == list(source.rows())
    assert sorted(store.nodes()) == sorted(source.nodes())
    assert store.latest_checkpoint() == source.latest_checkpoint()


def _refused_pieces(store: LogStore[Any], error: type[Exception], match: str, *args: Any) -> None:
    before = _snapshot(store)
    with pytest.raises(error, match=match):
        store.append_leaf_pieces(*args)
    assert _snapshot(store) == before


def test_a_log_in_pieces_is_refused_whole(source: LogStore[Any], store: LogStore[Any]) -> None:
    """A fault in any piece, or a last piece that does not make the checkpoint, and nothing of
    the pieces before it stays."""
    leaves, checkpoint = _leaves(source, 0, 21), _checkpoint(source, 21)
    _refused_pieces(store, LogError, "must start there", 3, [leaves[3:]], checkpoint)
    broken = [leaves[:7], [b"not a leaf", *leaves[8:14]], leaves[14:]]
    _refused_pieces(store, LogCorrupted, "malformed", 0, broken, checkpoint)
    reordered = [leaves[:7], leaves[8:14], leaves[7:8], leaves[14:]]
    _refused_pieces(store, LogCorrupted, "says it is entry", 0, reordered, checkpoint)
    _refused_pieces(store, LogError, "size", 0, [leaves[:7], leaves[7:20]], checkpoint)
    wrong_root = checkpoint._replace(root=bytes(32))
    _refused_pieces(store, LogError, "root", 0, [leaves[:7], leaves[7:]], wrong_root)
    assert store.append_leaf_pieces(0, [leaves[:7], leaves[7:]], checkpoint).size == 21


def test_a_mirror_refuses_a_statement_twice(
    factory: Factory, tmp_path: Path, source: LogStore[Any], signers: Signers
) -> None:
    """Another log that holds one statement twice (which no store of ours writes) is refused:
    a store keeps each statement once."""
    other = factory(tmp_path / "other", "contract.example/log")
    mirror = factory(tmp_path / "mirror", "contract.example/log")
    try:
        _append(other, signers, _reports(1))
        twice = [_leaves(other, 0, 1)[0], _leaves(other, 0, 1)[0].replace(b'"seq":0', b'"seq":1')]
        edge_root = _root_of(twice)
        forged = signers.sign_checkpoint(checkpoint_body(other.origin, 2, edge_root))
        checkpoint = SignedCheckpoint(2, forged, edge_root, "2026-11-01T12:00:00.000Z")
        _refused(
            mirror, LogCorrupted, "entry 1: the same statement as entry 0", 0, twice, checkpoint
        )
        # In two pieces: the second's statement is found in what the first wrote.
        _refused_pieces(
            mirror,
            LogCorrupted,
            "entry 1: the same statement as entry 0",
            0,
            [twice[:1], twice[1:]],
            checkpoint,
        )
        mirror.append_leaves(0, twice[:1], _checkpoint(other, 1))
        _refused(mirror, LogCorrupted, "same statement", 1, twice[1:], checkpoint)
    finally:
        other.close()
        mirror.close()


def _root_of(leaves: Sequence[bytes]) -> bytes:
    edge = CompactRange()
    for leaf in leaves:
        edge.append(leaf_hash(leaf))
    return edge.root()


def test_mirrored_entries_carry_their_payload_digest(
    source: LogStore[Any], store: LogStore[Any]
) -> None:
    taken: list[StoredEntry] = []
    store.append_leaves(0, _leaves(source, 0, 7), _checkpoint(source, 7), check=taken.extend)
    for entry, row in zip(taken, source.rows(0, 7), strict=True):
        assert entry.payload_digest == row.payload_digest
        assert entry.payload_digest == payload_digest(
            entry.payload, entry.payload_type, entry.signer
        )
