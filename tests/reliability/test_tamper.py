"""Tampering with a real served log (issue 18: ``make reliability`` fails on any undetected
tampering). A real ``benchproof serve`` takes attestations from a registered key, reports and
operator ingests; then, each on its own copy of the data directory, one tampering: a flipped
byte, an edited payload, a forged signature, a dropped entry, two entries swapped, a forged or
re-signed checkpoint, a changed tree node, an older database put in place, an edited
projection row. The natural detector of each (``benchproof verify``, ``replay``, ``serve``,
``audit --server``) must exit non-zero and name the problem; an untouched copy passes them all.
The small-scale cases of ``tests/cli/test_tamper.py`` are reused, not repeated."""

from __future__ import annotations

import base64
import hashlib
import json
import re
import shutil
import sqlite3
import subprocess
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from events.checkpoints import checkpoint_body
from events.entries import encode_leaf, payload_digest
from events.merkle import leaf_hash
from keys import NoteSigner, SigningKey, load_private_key, sign_note
from service.app.backup import backup
from tests.cli.test_tamper import _copy, delete_a_row, flip_a_byte, reorder_two_rows
from tests.reliability.conftest import open_site
from tests.reliability.report import record_attack, scale
from tests.reliability.test_faults import Writer
from tests.servers import run_cli, served


@dataclass(frozen=True)
class Log:
    """The untouched data directory, an older copy of its database (``older``: a backup
    taken midway, with fewer entries), its size and where its attestations and reports are."""

    data: Path
    older: Path
    size: int
    attestations: list[int]


def _entry_types(db: Path) -> list[tuple[int, str]]:
    conn = sqlite3.connect(f"{db.resolve().as_uri()}?mode=ro", uri=True)
    try:
        return [(int(s), str(t)) for s, t in conn.execute("SELECT seq, type FROM entries")]
    finally:
        conn.close()


@pytest.fixture(scope="module")
def log(tmp_path_factory: pytest.TempPathFactory) -> Log:
    root = tmp_path_factory.mktemp("tamper")
    data = root / "site" / "data"
    data.parent.mkdir()
    kinds = ("attestation", "report", "ingest")
    per_half = scale(6, 60)
    with open_site(data) as site:
        writer = Writer(site)
        try:
            for half in range(2):
                for i in range(per_half):
                    r = writer.write(kinds[i % 3], pad=100)
                    assert r.status_code in (200, 201), r.text
                if half == 0:  # the older database: a consistent copy taken midway
                    older = backup(data, root / "older", keys=False).path
        finally:
            writer.close()
    types = _entry_types(data / "benchproof.db")
    attestations = [seq for seq, t in types if t.startswith("attestation")]
    assert len(attestations) >= 2, types
    return Log(data, Path(older), len(types), attestations)


# --- the tamperings: each changes a copy and names the command that must catch it ----------


@dataclass(frozen=True)
class Tampering:
    what: str
    command: str  # verify, replay, serve or audit
    expect: str  # a regular expression the detector's first line of complaint must match
    apply: Callable[[Log, Path, sqlite3.Connection], None]


def _leaf(conn: sqlite3.Connection, seq: int) -> dict[str, Any]:
    row = conn.execute("SELECT leaf FROM entries WHERE seq = ?", (seq,)).fetchone()
    out: dict[str, Any] = json.loads(bytes(row[0]))
    return out


def _rewrite(conn: sqlite3.Connection, seq: int, leaf: dict[str, Any]) -> None:
    """Store ``leaf`` at ``seq`` as a careful forger would: the leaf bytes well formed, its
    leaf-hash and payload-digest columns recomputed (the tree nodes and checkpoints are left
    as they were: the signature is what must give it away)."""
    envelope = leaf["envelope"]
    raw = encode_leaf(
        seq, leaf["recordedAt"], leaf["type"], leaf["subject"], json.dumps(envelope).encode()
    )
    digest = payload_digest(
        base64.b64decode(envelope["payload"]),
        envelope["payloadType"],
        envelope["signatures"][0]["keyid"],
    )
    conn.execute(
        "UPDATE entries SET leaf = ?, leaf_hash = ?, payload_digest = ? WHERE seq = ?",
        (raw, leaf_hash(raw), digest, seq),
    )


def _middle(log: Log) -> int:
    return log.size // 2


def flipped_byte(log: Log, data: Path, conn: sqlite3.Connection) -> None:
    flip_a_byte(conn, _middle(log))


def edited_payload(log: Log, data: Path, conn: sqlite3.Connection) -> None:
    """An attestation's statement says something else; its signature is the original."""
    seq = log.attestations[len(log.attestations) // 2]
    leaf = _leaf(conn, seq)
    envelope = leaf["envelope"]
    original = base64.b64decode(envelope["payload"])
    payload = original.replace(b"yyyy", b"zzzz", 1)
    assert payload != original
    envelope["payload"] = base64.b64encode(payload).decode()
    _rewrite(conn, seq, leaf)


def forged_signature(log: Log, data: Path, conn: sqlite3.Connection) -> None:
    """An attestation's signature replaced by another key's over the same bytes, under the
    attester's key id."""
    seq = log.attestations[len(log.attestations) // 2]
    leaf = _leaf(conn, seq)
    envelope = leaf["envelope"]
    other = SigningKey.generate()
    envelope["signatures"][0]["sig"] = base64.b64encode(other.sign(b"forged")).decode()
    _rewrite(conn, seq, leaf)


def dropped_entry(log: Log, data: Path, conn: sqlite3.Connection) -> None:
    delete_a_row(conn, _middle(log))


def swapped_entries(log: Log, data: Path, conn: sqlite3.Connection) -> None:
    reorder_two_rows(conn, _middle(log))


def _latest(conn: sqlite3.Connection) -> tuple[int, bytes]:
    size, note = conn.execute("SELECT size, note FROM checkpoints ORDER BY size DESC").fetchone()
    return int(size), bytes(note)


def resigned_checkpoint(log: Log, data: Path, conn: sqlite3.Connection) -> None:
    """The latest checkpoint's body, signed by a stranger's key under the log's name."""
    size, note = _latest(conn)
    body = note.split(b"\n\n", 1)[0].decode() + "\n"
    origin = body.split("\n", 1)[0]
    forged = sign_note(body, [NoteSigner(origin, SigningKey.generate())])
    conn.execute("UPDATE checkpoints SET note = ? WHERE size = ?", (forged, size))


def wrong_root(log: Log, data: Path, conn: sqlite3.Connection) -> None:
    """The latest checkpoint names another root, and is signed with the log's own key (a
    thief of the key file): its root column agrees, only the tree disagrees."""
    size, note = _latest(conn)
    origin = note.split(b"\n", 1)[0].decode()
    root = hashlib.sha256(b"another tree").digest()
    body = checkpoint_body(origin, size, root)
    key = load_private_key(data / "keys" / "log.key")
    forged = sign_note(body, [NoteSigner(origin, key)])
    conn.execute("UPDATE checkpoints SET note = ?, root = ? WHERE size = ?", (forged, root, size))


def changed_tree_node(log: Log, data: Path, conn: sqlite3.Connection) -> None:
    level, index = 1, _middle(log) // 2
    node = level << 40 | index
    changed = conn.execute(
        "UPDATE tree_nodes SET hash = ? WHERE id = ?", (hashlib.sha256(b"x").digest(), node)
    )
    assert changed.rowcount == 1


def older_database(log: Log, data: Path, conn: sqlite3.Connection) -> None:
    """The database (and its WAL) replaced by a copy taken earlier: the ``-committed`` mark
    beside it still says how far the commits reached."""
    conn.close()
    for suffix in ("", "-wal", "-shm"):
        (data / f"benchproof.db{suffix}").unlink(missing_ok=True)
    shutil.copy2(log.older / "benchproof.db", data / "benchproof.db")


def _edit_attestation_row(conn: sqlite3.Connection) -> None:
    row = conn.execute("SELECT id, predicate FROM p_attestations ORDER BY id").fetchone()
    predicate = bytes(row[1]).replace(b"yyyy", b"<b>trusted</b>", 1)
    assert predicate != bytes(row[1])
    conn.execute("UPDATE p_attestations SET predicate = ? WHERE id = ?", (predicate, row[0]))


def edited_projection(log: Log, data: Path, conn: sqlite3.Connection) -> None:
    _edit_attestation_row(conn)


TAMPERINGS = [
    Tampering("a byte flipped in a leaf", "verify", r"(entry|position) {middle}\b", flipped_byte),
    Tampering("an attestation's payload edited", "verify", r"(entry|position) {attested}\b",
              edited_payload),
    Tampering("an attestation's signature forged", "verify", r"(entry|position) {attested}\b",
              forged_signature),
    Tampering("an entry dropped from the middle", "verify", r"(entry|position) {middle}\b",
              dropped_entry),
    Tampering("two entries swapped", "verify", r"(entry|position) {middle}\b", swapped_entries),
    Tampering("a checkpoint re-signed by another key", "verify", r"checkpoint",
              resigned_checkpoint),
    Tampering("a checkpoint with a wrong root, signed by the log key", "verify",
              r"checkpoint.*root|root.*checkpoint", wrong_root),
    Tampering("a tree node changed", "verify", r"tree node \(1, {half}\)", changed_tree_node),
    Tampering("the database replaced by an older copy", "verify", r"-committed|commits reached",
              older_database),
    Tampering("the database replaced by an older copy (serve)", "serve",
              r"-committed|commits reached", older_database),
    Tampering("an attestation's projection row edited", "replay", r"p_attestations",
              edited_projection),
    *scale([], [  # a served copy and a remote audit: at full size only
        Tampering("an attestation's projection row edited (audit --server)", "audit",
                  r"- views: .*attestation", edited_projection),
    ]),
]  # fmt: skip


def _detect(command: str, data: Path, tmp_path: Path) -> subprocess.CompletedProcess[str]:
    if command in ("verify", "replay"):
        return run_cli(command, "--data", data, timeout=300)
    if command == "serve":
        return run_cli("serve", "--data", data, "--port", 0, timeout=60)
    vkey = tmp_path / "log.vkey"
    key = run_cli("log", "key", "--data", data)
    assert key.returncode == 0, key.stderr
    vkey.write_text(key.stdout)
    with served(data) as url:
        return run_cli("audit", "--server", url, "--log-key", vkey, "--data", tmp_path / "audit")


def _complaint(done: subprocess.CompletedProcess[str]) -> str:
    """The line that says what is wrong: an audit's first failure, else the first line of
    stderr, else of stdout."""
    failures = [x.strip() for x in done.stdout.splitlines() if x.startswith("  - ")]
    for line in (*failures, *done.stderr.splitlines(), *done.stdout.splitlines()):
        if line.strip():
            return line.strip()
    return ""


@pytest.mark.parametrize("tampering", TAMPERINGS, ids=lambda t: t.what)
def test_tampering_is_detected(log: Log, tmp_path: Path, tampering: Tampering) -> None:
    data, conn = _copy(log.data, tmp_path)
    try:
        tampering.apply(log, data, conn)
    finally:
        conn.close()
    done = _detect(tampering.command, data, tmp_path)
    line = _complaint(done).removeprefix("benchproof: ").replace(str(data), "DATA")
    attested = log.attestations[len(log.attestations) // 2]
    expect = tampering.expect.format(middle=_middle(log), attested=attested, half=_middle(log) // 2)
    detected = done.returncode != 0 and re.search(expect, done.stderr + done.stdout) is not None
    record_attack(f"tamper: {tampering.what}", f"exit {done.returncode}: {line[:90]}", ok=detected)
    assert "Traceback" not in done.stderr, done.stderr
    assert detected, (tampering.command, done.returncode, done.stdout[-2000:], done.stderr[-2000:])


def test_the_untouched_log_passes_every_detector(log: Log, tmp_path: Path) -> None:
    """The control: a copy nobody changed verifies, replays with no difference and passes an
    audit, so each detection above is the tampering's."""
    data, conn = _copy(log.data, tmp_path)
    conn.close()
    for command in scale(("verify", "replay"), ("verify", "replay", "audit")):
        done = _detect(command, data, tmp_path)
        assert done.returncode == 0, (command, done.stdout[-2000:], done.stderr[-2000:])
    verified = run_cli("verify", "--data", data)
    assert f"{log.size} entries" in verified.stdout, verified.stdout
