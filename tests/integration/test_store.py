"""The log store on a real SQLite file: idempotent appends, atomic batches, append-only
tables, checkpoints that cover every entry, and proofs for any sizes."""

from __future__ import annotations

import base64
from pathlib import Path

import pytest

from events.checkpoints import parse_checkpoint_body
from events.merkle import leaf_hash, verify_consistency, verify_inclusion
from events.port import Session
from events.stores.faults import StatementFailed
from events.types import ReportFiled
from keys import open_note
from service.core.ledger import Ledger
from verifier.log import verify_log

RUN = "sha256:" + "ab" * 32


def _reports(n: int, start: int = 0) -> list[tuple[ReportFiled, str]]:
    return [
        (ReportFiled(runDigest=RUN, category="note", text=f"report {i}"), RUN)
        for i in range(start, start + n)
    ]


def test_genesis_registers_index_then_log_key(ledger: Ledger) -> None:
    types = [t for (t,) in ledger.store.session.execute("SELECT type FROM entries ORDER BY seq")]
    assert types == ["key.registered.v1", "key.registered.v1", "policy.changed.v1"]
    assert verify_log(ledger.data.db).ok


def test_appending_the_same_statement_twice_returns_the_existing_entry(ledger: Ledger) -> None:
    first = ledger.append(_reports(3))
    again = ledger.append(_reports(3))
    assert [a.new for a in first] == [True, True, True]
    assert [a.new for a in again] == [False, False, False]
    assert [a.seq for a in again] == [a.seq for a in first]
    assert ledger.store.size == 6


def test_duplicates_within_one_batch_are_appended_once(ledger: Ledger) -> None:
    batch = _reports(2) + _reports(1)
    out = ledger.append(batch)
    assert [a.new for a in out] == [True, True, False]
    assert out[0].seq == out[2].seq
    assert ledger.store.size == 5


def test_a_failing_batch_appends_nothing(ledger: Ledger) -> None:
    size, checkpoint = ledger.store.size, ledger.store.latest_checkpoint()

    def explode(_conn: Session, _entries: object) -> None:
        raise RuntimeError("projection failed")

    with pytest.raises(RuntimeError):
        ledger.store.append(
            [ledger_pending(e, s) for e, s in _reports(50)],
            sign=ledger.signers.sign_chunks,
            sign_checkpoint=ledger.signers.sign_checkpoint,
            now=ledger.clock(),
            project=explode,
        )
    assert ledger.store.size == size
    assert ledger.store.refresh() == size
    assert ledger.store.latest_checkpoint() == checkpoint
    ledger.append(_reports(2))  # the store still works afterwards
    assert verify_log(ledger.data.db).ok


def test_a_commit_that_fails_leaves_nothing_and_the_store_carries_on(ledger: Ledger) -> None:
    """SQLite checks a deferred foreign key at COMMIT, fails it and keeps the transaction open:
    the store must roll it back and forget the entries it had counted."""
    conn = ledger.store.session
    conn.execute("CREATE TABLE parent (id INTEGER PRIMARY KEY)")
    conn.execute(
        "CREATE TABLE child (p INTEGER REFERENCES parent (id) DEFERRABLE INITIALLY DEFERRED)"
    )
    size, checkpoint = ledger.store.size, ledger.store.latest_checkpoint()

    def violate_at_commit(session: Session, _entries: object) -> None:
        session.execute("INSERT INTO child VALUES (42)")

    with pytest.raises(StatementFailed, match="FOREIGN KEY"):
        ledger.store.append(
            [ledger_pending(e, s) for e, s in _reports(5)],
            sign=ledger.signers.sign_chunks,
            sign_checkpoint=ledger.signers.sign_checkpoint,
            now=ledger.clock(),
            project=violate_at_commit,
        )
    assert not conn.in_transaction
    assert ledger.store.size == size  # before any refresh: the edge was re-read
    assert ledger.store.latest_checkpoint() == checkpoint
    assert [a.seq for a in ledger.append(_reports(2))] == [size, size + 1]
    assert verify_log(ledger.data.db).ok


def ledger_pending(event: ReportFiled, subject: str):
    import msgspec

    from service.core.ledger import pending_of

    return msgspec.structs.replace(pending_of(event, subject), signer="k" * 64)


@pytest.mark.parametrize(
    "statement",
    [
        "UPDATE entries SET subject = 'x' WHERE seq = 0",
        "DELETE FROM entries WHERE seq = 1",
        "UPDATE tree_nodes SET hash = x'00'",
        "DELETE FROM checkpoints",
    ],
)
def test_log_tables_are_append_only(ledger: Ledger, statement: str) -> None:
    ledger.append(_reports(4))
    with pytest.raises(StatementFailed, match="append-only"):
        ledger.store.session.execute(statement)


def test_latest_checkpoint_covers_every_entry_and_verifies(ledger: Ledger) -> None:
    for k in range(5):
        ledger.append(_reports(7, start=10 * k))
        latest = ledger.store.latest_checkpoint()
        size, note = (latest.size, latest.note) if latest else (0, b"")
        assert size == ledger.store.size
        text = open_note(note, [ledger.signers.log_verifier]).text
        body = parse_checkpoint_body(text)
        assert (body.origin, body.size) == (ledger.store.origin, size)
        assert body.root == ledger.store.root()


def test_proofs_for_any_sizes(ledger: Ledger) -> None:
    for k in range(6):
        ledger.append(_reports(k + 1, start=100 * k))
    size = ledger.store.size
    leaves = dict(ledger.store.leaves())
    roots = {n: ledger.store.root(n) for n in range(1, size + 1)}
    for n in range(1, size + 1):
        for i in range(n):
            verify_inclusion(
                i, n, leaf_hash(leaves[i]), ledger.store.inclusion_proof(i, n), roots[n]
            )
        for m in range(1, n + 1):
            verify_consistency(m, n, roots[m], roots[n], ledger.store.consistency_proof(m, n))


def test_reopen_continues_the_same_tree(ledger: Ledger, tmp_path: Path) -> None:
    ledger.append(_reports(5))
    root = ledger.store.root()
    reopened = Ledger.open(tmp_path / "data")
    try:
        assert reopened.store.root() == root
        reopened.append(_reports(5, start=50))
        assert verify_log(reopened.data.db).ok
    finally:
        reopened.close()


def test_entries_are_the_exact_leaf_bytes(ledger: Ledger) -> None:
    ledger.append(_reports(3))
    for seq, leaf in ledger.store.leaves():
        row = ledger.store.session.execute(
            "SELECT leaf_hash FROM entries WHERE seq = ?", (seq,)
        ).fetchone()
        assert bytes(row[0]) == leaf_hash(leaf)
        assert leaf.startswith(b'{"seq":%d,"recordedAt":"' % seq)
        assert base64.b64encode(leaf)  # stored as bytes, returned as bytes
