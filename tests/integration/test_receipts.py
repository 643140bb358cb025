"""Citation receipts (issue 15): cite a run, then verify the receipt offline in a fresh process
whose working folder holds only the receipt and the log's vkey; any change to any byte of the
receipt is caught and named; another log's key fails; a run superseded later still verifies."""

from __future__ import annotations

import base64
import os
import subprocess
from pathlib import Path

import pytest

from events.types import RunSuperseded
from keys.notekeys import parse_vkey
from service.app.cite import citation_receipt
from service.app.ingest import ingest
from service.core.init import init_data_dir
from service.core.ledger import Ledger
from tests.builders import bundle, ingest_event
from tests.corpora import CATALOG, corpus, shared_file
from tests.servers import SCRIPT
from verifier.receipts import ReceiptInvalid, verify_receipt

DEMO = Path(__file__).resolve().parents[2] / "service" / "demo" / "data"
CHECKS = {"format", "statement", "signature", "checkpoint", "origin", "inclusion", "entry"}
CHECKS |= {"digest", "accessed", "permalink", "bytes"}


@pytest.fixture(scope="module")
def log(tmp_path_factory: pytest.TempPathFactory) -> Ledger:
    """A log with runs of every source we import: the KernelIndex catalog (KernelBot,
    FlashInfer-Bench, MLPerf, SOL-ExecBench rows: test material only), KernelIndex manifests,
    Liger-Kernel's CSV, a seed."""
    ledger, _ = init_data_dir(tmp_path_factory.mktemp("cite") / "data")
    ingest(ledger, "manifest", [shared_file("seed-manifest.json")])
    ingest(ledger, "manifest", [DEMO / "kernelindex-examples"])
    ingest(ledger, "liger", [DEMO / "liger" / "all_benchmark_data.csv"])
    ingest(ledger, "kernelindex-catalog", [corpus(*CATALOG)])
    return ledger


def _receipt(ledger: Ledger, ref: str) -> bytes:
    store = ledger.store
    return citation_receipt(ledger, store.session, store, ref, base="https://bench.example")


def _one_run_per_source(ledger: Ledger) -> dict[str, str]:
    rows = ledger.store.session.execute(
        "SELECT source, min(run_digest) FROM p_runs GROUP BY source"
    ).fetchall()
    return dict(rows)


def test_every_source_round_trips_offline_in_a_fresh_process(log: Ledger, tmp_path: Path) -> None:
    runs = _one_run_per_source(log)
    assert len(runs) >= 5, runs  # the catalog's sources, Liger-Kernel, the manifests
    for source, digest in runs.items():
        folder = tmp_path / source
        folder.mkdir()
        (folder / "receipt.txt").write_bytes(_receipt(log, digest))
        (folder / "log.vkey").write_text(log.signers.vkey + "\n")
        done = subprocess.run(
            [str(SCRIPT), "verify-citation", "receipt.txt", "--log-key", "log.vkey"],
            cwd=folder,
            capture_output=True,
            text=True,
            env={"PATH": os.environ.get("PATH", ""), "HOME": str(folder)},  # no data directory
            timeout=120,
            check=False,
        )
        assert done.returncode == 0, (source, done.stderr)
        assert digest in done.stdout and "offline" in done.stdout


def _lines(receipt: bytes) -> list[str]:
    return receipt.decode().split("\n")


def _flip_base64(line: str) -> str:
    """The same field with one decoded byte changed (still canonical base64)."""
    name, text = line.split(" ", 1)
    data = bytearray(base64.b64decode(text))
    data[len(data) // 2] ^= 0x01
    return f"{name} {base64.b64encode(bytes(data)).decode()}"


def test_every_change_is_caught_and_named(log: Ledger) -> None:
    digest = next(iter(_one_run_per_source(log).values()))
    receipt = _receipt(log, digest)
    key = parse_vkey(log.signers.vkey)
    verify_receipt(receipt, key)  # the untouched receipt verifies
    lines = _lines(receipt)
    cases: dict[str, list[str]] = {}
    for i, line in enumerate(lines):
        if not line:
            continue
        if " " in line and line.split(" ", 1)[0] in {
            "statement",
            "signature",
            "checkpoint",
            "entry",
            "proof",
        }:
            changed = [*lines]
            changed[i] = _flip_base64(line)
            cases[f"line {i} ({line.split(' ', 1)[0]})"] = changed
        changed = [*lines]
        changed[i] = line[:-1] + ("x" if line[-1] != "x" else "y")  # the last character
        cases[f"line {i}, last character"] = changed
    # A non-canonical base64 spelling of the same bytes: the padding's unused bits set.
    statement = next(i for i, line in enumerate(lines) if line.startswith("statement "))
    text = lines[statement].split(" ", 1)[1]
    if text.endswith("="):
        alphabet = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/"
        last = text.rstrip("=")[-1]
        odd = (
            text.rstrip("=")[:-1]
            + alphabet[alphabet.index(last) | 1]
            + text[len(text.rstrip("=")) :]
        )
        if odd != text:
            cases["non-canonical base64"] = [
                *lines[:statement],
                f"statement {odd}",
                *lines[statement + 1 :],
            ]
    cases["a line added"] = [*lines[:-1], "proof " + base64.b64encode(b"\0" * 32).decode(), ""]
    cases["a proof line dropped"] = [*lines[:-2], ""]
    for name, changed in cases.items():
        with pytest.raises(ReceiptInvalid) as refused:
            verify_receipt("\n".join(changed).encode(), key)
        assert refused.value.check in CHECKS, (name, refused.value.check)


def test_another_logs_key_fails(log: Ledger, tmp_path: Path) -> None:
    digest = next(iter(_one_run_per_source(log).values()))
    other, _ = init_data_dir(tmp_path / "other")
    with other, pytest.raises(ReceiptInvalid) as refused:
        verify_receipt(_receipt(log, digest), parse_vkey(other.signers.vkey))
    assert refused.value.check in {"signature", "checkpoint", "origin"}


def test_a_run_superseded_later_still_verifies(tmp_path: Path) -> None:
    ledger, _ = init_data_dir(tmp_path / "data")
    with ledger:
        old, new = bundle(value=100, author=1), bundle(value=90, author=2)
        ledger.append([(ingest_event(old), old["run"].digest)])
        receipt = _receipt(ledger, old["run"].digest)
        ledger.append([(ingest_event(new), new["run"].digest)])
        superseded = RunSuperseded(
            runDigest=old["run"].digest, supersededBy=new["run"].digest, reason="fixed"
        )
        ledger.append([(superseded, old["run"].digest)])
        verified = verify_receipt(receipt, parse_vkey(ledger.signers.vkey))
        assert verified.statement.runDigest == old["run"].digest
        later = verify_receipt(_receipt(ledger, old["run"].digest), parse_vkey(ledger.signers.vkey))
        assert later.statement.evidenceLevel == "superseded"


def test_a_checkpoint_with_a_second_log_signature_or_a_malformed_line_is_refused(
    log: Ledger,
) -> None:
    """The note carries exactly one signature by the log's key, and every other line is a well
    formed signature line (a witness's cosignature, counted as seen unless its key is given)."""
    digest = next(iter(_one_run_per_source(log).values()))
    key = parse_vkey(log.signers.vkey)
    lines = _lines(_receipt(log, digest))
    at = next(i for i, line in enumerate(lines) if line.startswith("checkpoint "))
    note = base64.b64decode(lines[at].split(" ", 1)[1])
    extra = "\u2014 other.example/log " + base64.b64encode(b"\1\2\3\4" + b"\0" * 64).decode() + "\n"
    own_line = note[note.rfind("\n\u2014".encode()) + 1 :]  # the log's own signature again
    forged = [*lines]
    forged[at] = "checkpoint " + base64.b64encode(note + extra.encode()).decode()
    seen = verify_receipt("\n".join(forged).encode(), key)
    assert seen.witnessed is not None and seen.witnessed.seen == 1
    for changed in (note + own_line, note + "\u2014 not a line\n".encode()):
        forged = [*lines]
        forged[at] = "checkpoint " + base64.b64encode(changed).decode()
        with pytest.raises(ReceiptInvalid) as refused:
            verify_receipt("\n".join(forged).encode(), key)
        assert refused.value.check == "checkpoint"


def test_non_ascii_in_a_base64_field_is_a_format_error(log: Ledger) -> None:
    digest = next(iter(_one_run_per_source(log).values()))
    receipt = _receipt(log, digest).decode().replace("\nproof ", "\nproof é", 1)
    with pytest.raises(ReceiptInvalid) as refused:
        verify_receipt(receipt.encode(), parse_vkey(log.signers.vkey))
    assert refused.value.check == "format"


def test_a_permalink_that_is_not_one_is_never_signed(log: Ledger) -> None:
    digest = next(iter(_one_run_per_source(log).values()))
    store = log.store
    with pytest.raises(ValueError, match="permalink"):
        citation_receipt(log, store.session, store, digest, base="http://[::1")
