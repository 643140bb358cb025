"""The witness's add-checkpoint (C2SP tlog-witness v1), on a real SQLite file: every refusal
with the spec's status and body, cosigning only what is consistent with what it cosigned
before, across reopening the folder too."""

from __future__ import annotations

import base64
import functools
from pathlib import Path

import pytest

from events.checkpoints import checkpoint_body
from events.merkle import consistency_proof, leaf_hash, node_hash, root_from_leaf_hashes
from keys import NoteSigner, SigningKey, sign_note
from keys.cosignatures import cosignatures
from service.witness.core import SIZE_TYPE, Witness, WitnessError, init_witness, proof_lines

ORIGIN = "log.test/benchproof"
LOG = NoteSigner(ORIGIN, SigningKey.from_seed(b"\x11" * 32))


class Tree:
    """A Merkle tree of leaves ``prefix-i``: its roots, proofs and signed checkpoints."""

    def __init__(self, prefix: str = "leaf", signer: NoteSigner = LOG) -> None:
        self.prefix, self.signer = prefix, signer

    def leaves(self, n: int) -> list[bytes]:
        return [leaf_hash(f"{self.prefix}-{i}".encode()) for i in range(n)]

    def root(self, n: int) -> bytes:
        return root_from_leaf_hashes(self.leaves(n))

    def proof(self, old: int, new: int) -> list[bytes]:
        hashes = self.leaves(new)

        @functools.cache
        def read(level: int, index: int) -> bytes:
            if level == 0:
                return hashes[index]
            return node_hash(read(level - 1, 2 * index), read(level - 1, 2 * index + 1))

        return consistency_proof(old, new, read)

    def note(self, n: int) -> bytes:
        return sign_note(checkpoint_body(ORIGIN, n, self.root(n)), [self.signer])

    def request(self, old: int, new: int, proof: list[bytes] | None = None) -> bytes:
        if proof is None:
            proof = self.proof(old, new) if 0 < old < new else []
        return f"old {old}\n".encode() + proof_lines(proof) + b"\n" + self.note(new)


@pytest.fixture
def witness(tmp_path: Path) -> Witness:
    init_witness(tmp_path / "w", "witness.test/w1", seed=b"\x22" * 32)
    w = Witness(tmp_path / "w", clock=lambda: 1_700_000_000)
    w.add_log(LOG.vkey)
    return w


def _cosigned(w: Witness, tree: Tree, n: int, answer_body: bytes) -> int:
    note = tree.note(n) + answer_body
    found = cosignatures(note, [w.signer.verifier])
    return found["witness.test/w1"].timestamp


def test_a_log_is_cosigned_from_zero_then_as_it_grows(witness: Witness) -> None:
    tree = Tree()
    first = witness.add_checkpoint(tree.request(0, 5))
    assert first.status == 200, first.body
    assert _cosigned(witness, tree, 5, first.body) == 1_700_000_000
    for old, new in ((5, 8), (8, 8), (8, 13)):
        answer = witness.add_checkpoint(tree.request(old, new))
        assert answer.status == 200, (old, new, answer.body)
        _cosigned(witness, tree, new, answer.body)
    assert witness.latest(ORIGIN) == (13, tree.root(13))


def test_a_stale_old_size_is_409_with_the_size_it_holds(witness: Witness) -> None:
    tree = Tree()
    assert witness.add_checkpoint(tree.request(0, 7)).status == 200
    answer = witness.add_checkpoint(tree.request(0, 9))
    assert (answer.status, answer.body, answer.content_type) == (409, b"7\n", SIZE_TYPE)
    # A smaller tree after a larger one: its old size cannot be the one the witness holds.
    smaller = witness.add_checkpoint(tree.request(7, 5))
    assert smaller.status == 400
    assert witness.latest(ORIGIN) == (7, tree.root(7))


def test_a_fork_is_never_cosigned(witness: Witness) -> None:
    tree, fork = Tree(), Tree("forked")
    assert witness.add_checkpoint(tree.request(0, 6)).status == 200
    # The fork's tree from 6 to 10 with its own proof: it does not extend what was cosigned.
    answer = witness.add_checkpoint(fork.request(6, 10))
    assert answer.status == 422, answer.body
    same_size = witness.add_checkpoint(fork.request(6, 6))
    assert same_size.status == 409 and same_size.content_type != SIZE_TYPE
    assert witness.latest(ORIGIN) == (6, tree.root(6))
    assert [r[2] for r in witness.refusals()] == [422, 409]


def test_unknown_logs_bad_signatures_and_malformed_bodies(witness: Witness) -> None:
    stranger = NoteSigner("other.test/log", SigningKey.from_seed(b"\x33" * 32))
    body = b"old 0\n\n" + sign_note(checkpoint_body("other.test/log", 1, b"\x00" * 32), [stranger])
    assert witness.add_checkpoint(body).status == 404
    impostor = Tree(signer=NoteSigner(ORIGIN, SigningKey.from_seed(b"\x44" * 32)))
    assert witness.add_checkpoint(impostor.request(0, 3)).status == 403
    good = Tree().request(0, 3)
    for bad in (
        b"",
        good.replace(b"old 0", b"old 00"),
        good.replace(b"old 0", b"new 0"),
        b"old 0\n" + base64.b64encode(b"short") + b"\n\n" + Tree().note(3),
        b"old 1\n"
        + b"".join(base64.b64encode(b"\x00" * 32) + b"\n" for _ in range(64))
        + b"\n"
        + Tree().note(3),
    ):
        assert witness.add_checkpoint(bad).status == 400, bad[:40]
    assert witness.latest(ORIGIN) is None


def test_a_witness_reopened_keeps_its_state(tmp_path: Path, witness: Witness) -> None:
    tree = Tree()
    assert witness.add_checkpoint(tree.request(0, 4)).status == 200
    witness.close()
    reopened = Witness(tmp_path / "w")
    assert reopened.add_checkpoint(tree.request(0, 6)).body == b"4\n"
    assert reopened.add_checkpoint(tree.request(4, 6)).status == 200
    assert reopened.signer.vkey == (tmp_path / "w" / "witness.vkey").read_text().strip()


def test_init_refuses_a_folder_that_holds_a_witness(tmp_path: Path, witness: Witness) -> None:
    with pytest.raises(WitnessError):
        init_witness(tmp_path / "w", "witness.test/w2")
    assert (tmp_path / "w" / "witness.key").stat().st_mode & 0o077 == 0


def test_cosignatures_are_kept_with_their_checkpoint_once_per_witness(tmp_path: Path) -> None:
    """A log's stored checkpoint gains each witness's cosignature line once; what readers of
    the note get is the log's note with those lines, and the log's key still verifies it."""
    from keys import open_note
    from service.core.init import init_data_dir
    from tests.builders import bundle, ingest_event

    ledger, _ = init_data_dir(tmp_path / "log")
    with ledger:
        parts = bundle(group=1, author=1, value=10)
        ledger.append([(ingest_event(parts), parts["run"].digest)])
        store = ledger.store
        latest = store.latest_checkpoint()
        assert latest is not None
        w1 = init_witness(tmp_path / "w1", "witness.test/w1", seed=b"\x01" * 32)
        w2 = init_witness(tmp_path / "w2", "witness.test/w2", seed=b"\x02" * 32)
        body = latest.note[: latest.note.rfind(b"\n\n") + 1]
        store.add_cosignatures(latest.size, [w1.cosign(body, 5), w2.cosign(body, 6)])
        note = store.add_cosignatures(latest.size, [w1.cosign(body, 7)])
        assert note is not None and note == store.latest_checkpoint().note  # type: ignore[union-attr]
        found = cosignatures(note, [w1.verifier, w2.verifier])
        assert {n: c.timestamp for n, c in found.items()} == {
            "witness.test/w1": 5,
            "witness.test/w2": 6,
        }
        assert note.startswith(latest.note)
        assert open_note(note, [ledger.log_verifier]).text == body.decode()
        assert store.add_cosignatures(latest.size + 99, [w1.cosign(body, 8)]) is None
