"""Cosignatures travel with their checkpoint (issue 29, Deliver 2): a log whose checkpoint two
witnesses cosigned keeps them through every way the log leaves its store. ``cite --data``
writes them into the receipt; ``export`` writes them into the segment's checkpoint;
``import-log`` (a mirror) and ``migrate-store`` (another store) hold them after the copy."""

from __future__ import annotations

from pathlib import Path

import pytest

from events.stores import open_reader
from keys.cosignatures import cosignatures
from service.core.init import init_data_dir
from service.witness.core import init_witness
from tests.builders import bundle, ingest_event
from tests.servers import run_cli


@pytest.fixture(autouse=True)
def _no_store_from_the_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("BENCHPROOF_STORE", raising=False)


class Cosigned:
    """A log of three runs whose latest checkpoint two (in-process) witnesses cosigned."""

    def __init__(self, root: Path) -> None:
        self.data = root / "log"
        ledger, _ = init_data_dir(self.data)
        witnesses = [
            init_witness(root / f"w{n}", f"witness.test/w{n}", seed=bytes([n]) * 32) for n in (1, 2)
        ]
        self.verifiers = [w.verifier for w in witnesses]
        self.witness_keys = []
        for n, w in enumerate(witnesses, 1):
            path = root / f"w{n}.vkey"
            path.write_text(w.vkey + "\n")
            self.witness_keys.append(path)
        self.log_key = root / "log.vkey"
        with ledger:
            self.log_key.write_text(ledger.log_verifier.vkey + "\n")
            parts = [bundle(group=1, author=a, value=10 + a) for a in range(3)]
            ledger.append([(ingest_event(p), p["run"].digest) for p in parts])
            self.digest = parts[0]["run"].digest
            latest = ledger.store.latest_checkpoint()
            assert latest is not None
            body = latest.note[: latest.note.rfind(b"\n\n") + 1]
            ledger.store.add_cosignatures(
                latest.size, [w.cosign(body, 1_700_000_000 + i) for i, w in enumerate(witnesses)]
            )
            self.size = latest.size

    def witnessed(self, note: bytes) -> set[str]:
        return set(cosignatures(note, self.verifiers))

    def receipt_meets_the_quorum(self, out: Path) -> None:
        cited = run_cli("cite", self.digest, "--data", self.data, "--format", "receipt")
        assert cited.returncode == 0, cited.stderr
        out.write_text(cited.stdout)
        keys = [o for k in self.witness_keys for o in ("--witness-key", k)]
        done = run_cli("verify-citation", out, "--log-key", self.log_key, *keys, "--quorum", "2")
        assert done.returncode == 0 and "2 of the 2 witness(es)" in done.stdout, (
            done.stdout + done.stderr
        )


def test_cosignatures_reach_receipts_exports_mirrors_and_migrated_stores(tmp_path: Path) -> None:
    log = Cosigned(tmp_path)
    both = {"witness.test/w1", "witness.test/w2"}
    log.receipt_meets_the_quorum(tmp_path / "receipt")

    # An exported segment's checkpoint holds them.
    segment = tmp_path / "segment"
    exported = run_cli("export", segment, "--data", log.data)
    assert exported.returncode == 0, exported.stderr
    assert log.witnessed((segment / "checkpoint").read_bytes()) == both

    # A mirror made from the segment holds them (and serves them: it signs no receipts).
    mirror = tmp_path / "mirror"
    imported = run_cli("import-log", segment, "--data", mirror, "--log-key", log.log_key)
    assert imported.returncode == 0, imported.stderr
    reads = open_reader(f"sqlite:///{mirror / 'benchproof.db'}")
    try:
        mirrored = reads.latest_checkpoint()
    finally:
        reads.close()
    assert mirrored is not None and mirrored.size == log.size
    assert log.witnessed(mirrored.note) == both

    # A store migrated to another file holds them, checkpoint for checkpoint.
    source = f"sqlite:///{log.data / 'benchproof.db'}"
    copy = f"sqlite:///{tmp_path / 'copy.sqlite'}"
    migrated = run_cli("migrate-store", source, copy, "--data", log.data)
    assert migrated.returncode == 0, migrated.stderr
    a, b = open_reader(source), open_reader(copy)
    try:
        assert [c.note for c in b.checkpoints()] == [c.note for c in a.checkpoints()]
        latest = b.latest_checkpoint()
    finally:
        a.close()
        b.close()
    assert latest is not None and log.witnessed(latest.note) == both
