"""A C2SP ``tlog-witness`` (v1): the logs it follows, the latest checkpoint it cosigned of
each, and ``add-checkpoint``, the one call that moves them.

A witness shares no state with any log: its own key (``witness.key``, ``witness.vkey``) and its
own SQLite file (``witness.db``) in its own folder. For each log (its vkey names its origin) it
keeps the size and root of the latest checkpoint it cosigned. ``add_checkpoint`` checks a
request in the order the spec gives and answers with the spec's status for each refusal:

- 400: a malformed body, or an old size above the checkpoint's;
- 404: a checkpoint of an origin it does not follow;
- 403: no signature by the log's key verifies;
- 409: the old size is not the size it last cosigned (the body is that size, ``text/x.tlog.size``),
  or the same size with another root (a fork);
- 422: the consistency proof does not verify.

Only then does it record the new checkpoint and cosign it. The check of the old size and the
write are one ``BEGIN IMMEDIATE`` transaction, committed with ``synchronous=FULL`` before the
cosignature leaves: two requests racing on one log cannot both move it, and a witness
restarted at any point never cosigns a smaller tree after a larger one, nor two inconsistent
trees. Refusals of a known log with a valid signature are kept (``refusals``): a refused
consistency proof may be evidence that the log forked.
"""

from __future__ import annotations

import base64
import binascii
import sqlite3
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from events.checkpoints import Checkpoint, parse_checkpoint_body
from events.errors import LogError, ProofError
from events.merkle import verify_consistency
from keys import (
    KeyringError,
    MalformedNote,
    NoteVerifier,
    UnknownKey,
    VerificationError,
    open_note,
    parse_vkey,
)
from keys.cosignatures import WitnessSigner, parse_witness_skey

__all__ = [
    "MAX_PROOF",
    "Answer",
    "Witness",
    "WitnessError",
    "init_witness",
]

MAX_PROOF = 63
"""The most consistency proof lines a request may hold (the spec's bound)."""
MAX_BODY = 64 * 1024
KEY_FILE, VKEY_FILE, DB_FILE = "witness.key", "witness.vkey", "witness.db"
SIZE_TYPE = "text/x.tlog.size"

_SCHEMA = (
    "CREATE TABLE IF NOT EXISTS logs (origin TEXT PRIMARY KEY, vkey TEXT NOT NULL,"
    " added_at INTEGER NOT NULL)",
    "CREATE TABLE IF NOT EXISTS latest (origin TEXT PRIMARY KEY REFERENCES logs(origin),"
    " size INTEGER NOT NULL, root BLOB NOT NULL, note BLOB NOT NULL, cosigned_at INTEGER NOT NULL)",
    "CREATE TABLE IF NOT EXISTS refusals (at INTEGER NOT NULL, origin TEXT NOT NULL,"
    " status INTEGER NOT NULL, reason TEXT NOT NULL, old_size INTEGER NOT NULL,"
    " size INTEGER NOT NULL, body BLOB NOT NULL)",
)


class WitnessError(Exception):
    """A witness folder that cannot be used (no key, another file there, a bad log vkey)."""


@dataclass(frozen=True, slots=True)
class Answer:
    """What ``add-checkpoint`` answers: a status, a content type and a body."""

    status: int
    body: bytes
    content_type: str = "text/plain"


def _connect(path: Path) -> sqlite3.Connection:
    conn = sqlite3.connect(path, isolation_level=None, check_same_thread=False)
    conn.execute("PRAGMA journal_mode=WAL")
    conn.execute("PRAGMA synchronous=FULL")
    conn.execute("PRAGMA foreign_keys=ON")
    conn.execute("PRAGMA busy_timeout=10000")
    for ddl in _SCHEMA:
        conn.execute(ddl)
    return conn


def init_witness(folder: Path, name: str, *, seed: bytes | None = None) -> WitnessSigner:
    """Make a witness in ``folder``: its key (``witness.key``, 0600), its vkey
    (``witness.vkey``) and its database. Returns the signer.

    Raises:
        WitnessError: the folder already holds a witness key.
        KeyringError: ``name`` is not a valid key name.
    """
    from keys import SigningKey

    signer = WitnessSigner(name, SigningKey.from_seed(seed) if seed else SigningKey.generate())
    folder.mkdir(parents=True, exist_ok=True)
    key = folder / KEY_FILE
    if key.exists():
        raise WitnessError(f"{key} exists: this folder already holds a witness")
    partial = key.with_name(KEY_FILE + ".partial")
    partial.touch(mode=0o600)
    partial.write_text(signer.skey + "\n")
    partial.replace(key)
    (folder / VKEY_FILE).write_text(signer.vkey + "\n")
    _connect(folder / DB_FILE).close()
    return signer


class Witness:
    """An opened witness folder: its signer and its database (one connection, used under the
    writer's lock of SQLite: ``BEGIN IMMEDIATE``)."""

    def __init__(self, folder: Path, *, clock: Callable[[], float] = time.time) -> None:
        """Raises :class:`WitnessError` when the folder holds no witness key."""
        key = folder / KEY_FILE
        if not key.is_file():
            raise WitnessError(f"no witness in {folder} (no {KEY_FILE}): run `witness init`")
        try:
            self.signer = parse_witness_skey(key.read_text())
        except KeyringError as exc:
            raise WitnessError(f"{key}: {exc}") from None
        self.folder = folder
        self.clock = clock
        self.conn = _connect(folder / DB_FILE)

    def close(self) -> None:
        self.conn.close()

    def __enter__(self) -> Witness:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # --- the logs it follows -----------------------------------------------------------------

    def add_log(self, vkey_text: str) -> NoteVerifier:
        """Follow the log whose vkey is ``vkey_text`` (its key name is its origin).

        Raises:
            WitnessError: not a log vkey, or another key already follows that origin.
        """
        try:
            verifier = parse_vkey(vkey_text.strip())
        except KeyringError as exc:
            raise WitnessError(f"not a log's vkey: {exc}") from None
        row = self.conn.execute(
            "SELECT vkey FROM logs WHERE origin = ?", (verifier.name,)
        ).fetchone()
        if row is not None and row[0] != verifier.vkey:
            raise WitnessError(f"another key already follows the log {verifier.name}")
        self.conn.execute(
            "INSERT INTO logs VALUES (?, ?, ?) ON CONFLICT (origin) DO NOTHING",
            (verifier.name, verifier.vkey, int(self.clock())),
        )
        return verifier

    def logs(self) -> list[tuple[str, int | None]]:
        """Each log followed and the size it last cosigned (None: never)."""
        rows = self.conn.execute(
            "SELECT logs.origin, latest.size FROM logs LEFT JOIN latest USING (origin)"
            " ORDER BY logs.origin"
        )
        return [(str(origin), size) for origin, size in rows]

    def latest(self, origin: str) -> tuple[int, bytes] | None:
        """The size and root this witness last cosigned of ``origin``."""
        row = self.conn.execute(
            "SELECT size, root FROM latest WHERE origin = ?", (origin,)
        ).fetchone()
        return None if row is None else (int(row[0]), bytes(row[1]))

    # --- add-checkpoint ----------------------------------------------------------------------

    def add_checkpoint(self, body: bytes) -> Answer:
        """Check and cosign a request of ``POST /add-checkpoint`` (see the module's text)."""
        try:
            old, proof, note = _parse_request(body)
        except ValueError as exc:
            return Answer(400, f"{exc}\n".encode())
        try:
            origin = _origin_of(note)
        except ValueError as exc:
            return Answer(400, f"{exc}\n".encode())
        row = self.conn.execute("SELECT vkey FROM logs WHERE origin = ?", (origin,)).fetchone()
        if row is None:
            return Answer(404, f"this witness does not follow the log {origin}\n".encode())
        verifier = parse_vkey(row[0])
        try:
            opened = open_note(note, [verifier])
        except (UnknownKey, VerificationError):
            return Answer(403, f"no valid signature by the key of {origin}\n".encode())
        except (MalformedNote, KeyringError) as exc:
            return Answer(400, f"malformed checkpoint: {exc}\n".encode())
        try:
            checkpoint = parse_checkpoint_body(opened.text)
        except LogError as exc:
            return Answer(400, f"{exc}\n".encode())
        if old > checkpoint.size:
            return Answer(
                400, f"old size {old} is above the checkpoint's {checkpoint.size}\n".encode()
            )
        if old == 0 and proof:
            return Answer(400, b"a request from old size 0 carries no proof\n")
        self.conn.execute("BEGIN IMMEDIATE")
        try:
            answer = self._check_and_record(origin, old, proof, note, checkpoint, body)
        except BaseException:
            self.conn.execute("ROLLBACK")
            raise
        self.conn.execute("COMMIT")
        return answer

    def _check_and_record(
        self,
        origin: str,
        old: int,
        proof: list[bytes],
        note: bytes,
        checkpoint: Checkpoint,
        body: bytes,
    ) -> Answer:
        held = self.latest(origin)
        size, root = held if held is not None else (0, b"")
        if old != size:
            self._refused(origin, 409, "stale old size", old, checkpoint.size, body)
            return Answer(409, f"{size}\n".encode(), SIZE_TYPE)
        if size == checkpoint.size and size > 0:
            if root != checkpoint.root:
                self._refused(origin, 409, "same size, another root", old, size, body)
                return Answer(409, b"this size was cosigned with another root hash\n")
        elif size > 0:
            try:
                verify_consistency(size, checkpoint.size, root, checkpoint.root, proof)
            except ProofError as exc:
                self._refused(origin, 422, str(exc), old, checkpoint.size, body)
                return Answer(422, f"the consistency proof does not verify: {exc}\n".encode())
        now = int(self.clock())
        self.conn.execute(
            "INSERT INTO latest VALUES (?, ?, ?, ?, ?) ON CONFLICT (origin) DO UPDATE SET"
            " size = excluded.size, root = excluded.root, note = excluded.note,"
            " cosigned_at = excluded.cosigned_at",
            (origin, checkpoint.size, checkpoint.root, note, now),
        )
        text = note[: note.rfind(b"\n\n") + 1]
        return Answer(200, self.signer.cosign(text, now).encode())

    def _refused(
        self, origin: str, status: int, reason: str, old: int, size: int, body: bytes
    ) -> None:
        self.conn.execute(
            "INSERT INTO refusals VALUES (?, ?, ?, ?, ?, ?, ?)",
            (int(self.clock()), origin, status, reason, old, size, body),
        )

    def refusals(self) -> list[tuple[int, str, int, str]]:
        """The requests refused of logs it follows (a signature that verified): when, which
        log, the status and why, oldest first."""
        rows = self.conn.execute("SELECT at, origin, status, reason FROM refusals ORDER BY rowid")
        return [(int(a), str(o), int(s), str(r)) for a, o, s, r in rows]


def _parse_request(body: bytes) -> tuple[int, list[bytes], bytes]:
    """The old size, the proof hashes and the checkpoint note of a request body.

    Raises:
        ValueError: the body is not the spec's.
    """
    if len(body) > MAX_BODY:
        raise ValueError(f"a request body is at most {MAX_BODY} bytes")
    head, sep, note = body.partition(b"\n\n")
    if not sep:
        raise ValueError("want an old size line, proof lines, a blank line, then the checkpoint")
    lines = head.split(b"\n")
    first = lines[0]
    if not first.startswith(b"old "):
        raise ValueError("the first line is `old <size>`")
    digits = first[4:]
    if not digits.isdigit() or (digits.startswith(b"0") and digits != b"0"):
        raise ValueError("the old size is a decimal with no leading zeroes")
    if len(lines) - 1 > MAX_PROOF:
        raise ValueError(f"at most {MAX_PROOF} consistency proof lines")
    proof = []
    for line in lines[1:]:
        try:
            hashed = binascii.a2b_base64(line, strict_mode=True)
        except (binascii.Error, ValueError):
            raise ValueError("a proof line is one base64 hash") from None
        if len(hashed) != 32:
            raise ValueError("a proof hash is 32 bytes")
        proof.append(hashed)
    return int(digits), proof, note


def _origin_of(note: bytes) -> str:
    first, sep, _ = note.partition(b"\n")
    if not sep or not first:
        raise ValueError("the checkpoint has no origin line")
    try:
        return first.decode()
    except UnicodeDecodeError:
        raise ValueError("the checkpoint's origin is not UTF-8") from None


def proof_lines(proof: list[bytes]) -> bytes:
    """Proof hashes as the request's lines (each with its newline)."""
    return b"".join(base64.b64encode(h) + b"\n" for h in proof)
