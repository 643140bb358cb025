"""``benchproof verify``: check the whole log from its bytes, read-only, through the log port.

For every position, in order: (1) the entry is there and says its own position; (2) its stored
columns agree with its leaf bytes, and the stored leaf hash with ``SHA-256(0x00 || leaf)``; (3)
the payload decodes as the type the entry names; (4) the envelope is signed by a key the
authority (``events.authority``) lets sign that entry at that position: valid there, with a role
that may write its type, the attester for a withdrawal, the worker for a claim (the key
lifecycle is replayed from the log itself: the genesis entry registers the index key and is
signed by it); (5) the tree recomputed from the leaves matches every stored tree node and every
checkpoint (``verifier.tree``); (6) every checkpoint note verifies with the log key, and the
latest covers every entry. The checks that need no state (the leaf hash, the payload digest and
type, the signature: ``verifier.entries``) run beside the reading, a chunk at a time: on two
threads for a small log, in a process per core from ``PROCESSES_FROM`` entries (on threads,
their own Python holds the GIL that the reading needs). Memory is that of a few chunks.

It reads only what ``events.port.LogReader`` gives (the stored rows, tree nodes and checkpoints
and the origin), so the same checks apply to any store, or to leaves fetched from a server.
"""

from __future__ import annotations

import base64
import binascii
import gc
import multiprocessing
from collections.abc import Mapping, Sequence
from concurrent.futures import Executor, Future, ProcessPoolExecutor, ThreadPoolExecutor
from pathlib import Path

import msgspec

from events.authority import EVENT_RULES, refusal
from events.bulk import cores, paused_gc
from events.entries import EVENT_PAYLOAD_TYPE, Entry, payload_digest
from events.errors import LogCorrupted, LogError
from events.keyring import KeyView, fold_keys
from events.port import LogReader
from events.stores.sqlite import SqliteLog
from events.types import EVENT_DECODER, AnyEvent, AttestationWithdrawn
from keys import KeyringError, VerifyingKey
from keys.dsse import Signature
from verifier.entries import Task, check_entries, payload_problem
from verifier.findings import Finding, VerifyReport
from verifier.tree import TreeCheck

__all__ = ["Finding", "VerifyReport", "verify_log"]

CHUNK = 2048
PROCESSES_FROM = 20_000
"""From this many entries on, the signatures are checked in processes (below, on threads:
starting the processes costs more than they save)."""


_ENTRY = msgspec.json.Decoder(Entry)


class _EnvelopeHead(msgspec.Struct, frozen=True):
    payloadType: str
    signatures: list[Signature]


class _EntryHead(msgspec.Struct, frozen=True):
    """An entry without its payload, which most checks in order do not read."""

    seq: int
    recordedAt: str
    type: str
    subject: str
    envelope: _EnvelopeHead


_HEAD = msgspec.json.Decoder(_EntryHead)
_Checked = Future[tuple[list[tuple[int, str]], list[bytes]]]


def _event(payload: bytes) -> AnyEvent | None:
    try:
        return EVENT_DECODER.decode(payload)
    except msgspec.DecodeError:
        return None


class _Checker:
    def __init__(
        self, log: LogReader, report: VerifyReport, node_stride: int = 1, columns: bool = True
    ) -> None:
        self.log = log
        self.columns = columns
        self.report = report
        self.keys: Mapping[str, KeyView] = {}
        self.publics: dict[str, VerifyingKey] = {}
        self.attesters: dict[str, str] = {}  # attestation id -> the key that posted it
        self.tree = TreeCheck(log, self.bad, node_stride)
        self.last_recorded = ""
        # A large log's checks go to processes (one per core): on threads, the checks' own
        # Python (hashes, base64, the payload's type) holds the GIL the reading needs.
        self.processes = log.size >= PROCESSES_FROM and cores() > 1
        self.pool: Executor
        if self.processes:
            spawn = multiprocessing.get_context("spawn")  # no fork of a threaded reader
            self.pool = ProcessPoolExecutor(cores(), mp_context=spawn)
        else:
            self.pool = ThreadPoolExecutor(2, thread_name_prefix="verify")
        self.pending: list[_Checked] = []

    def bad(self, position: int, reason: str) -> None:
        self.report.findings.append(Finding(position, reason))

    # (1)-(4) per entry; signatures are gathered and checked a chunk at a time.
    def run(self) -> None:
        expected = 0
        chunk: list[Task] = []
        for seq, recorded_at, type_, subject, digest, stored_hash, leaf in self.log.rows():
            if seq != expected:
                self.bad(expected, f"entry {expected} is missing (the next stored entry is {seq})")
                break

            expected += 1
            public, named = self._entry(seq, leaf, (recorded_at, type_, subject, digest))
            # Refused already (no key): only its leaf hash is still to check.
            chunk.append((seq, public, named, digest, leaf, stored_hash))
            if len(chunk) >= CHUNK:
                self._signatures(chunk)
                chunk = []
                # The collector is paused (its full passes would stall the signature
                # threads); the young garbage of a chunk (cycles a reader may leave, as an HTTP
                # client's answers do) is collected here, so memory stays that of a chunk.
                gc.collect(1)
        self._signatures(chunk)
        self.finish()
        self.report.entries = expected

    def _entry(
        self, seq: int, leaf: bytes, columns: tuple[str, str, str, str]
    ) -> tuple[VerifyingKey | None, str]:
        """(1)-(4) that need the log's state, in order: the key the signature must verify
        with (None: refused already), and the type the leaf names."""
        try:
            head = _HEAD.decode(leaf)  # the payload is skipped, not copied
        except msgspec.DecodeError as exc:
            self.bad(seq, f"entry {seq}: the leaf is not a well-formed entry ({exc})")
            return None, ""
        if head.seq != seq:
            self.bad(seq, f"entry {seq}: the leaf says it is entry {head.seq} (moved or reordered)")
        recorded_at, type_, subject, _ = columns
        if self.columns and (head.recordedAt, head.type, head.subject) != (
            recorded_at,
            type_,
            subject,
        ):
            self.bad(seq, f"entry {seq}: the stored columns disagree with the leaf")
        if head.recordedAt < self.last_recorded:
            self.bad(seq, f"entry {seq}: recorded before the entry that precedes it")
        self.last_recorded = max(self.last_recorded, head.recordedAt)
        if not head.envelope.signatures:
            self.bad(seq, f"entry {seq}: the envelope has no signature")
            return None, head.type
        keyid = head.envelope.signatures[0].keyid
        if seq == 0 or head.type.startswith("key."):
            entry = self._whole(seq, leaf)
            if entry is None or not self._key_entry(seq, entry, keyid):
                return None, head.type
        elif not self._authorized(seq, head.type, keyid, leaf):
            return None, head.type
        return self.publics.get(keyid), head.type

    def _whole(self, seq: int, leaf: bytes) -> Entry | None:
        try:
            return _ENTRY.decode(leaf)
        except msgspec.DecodeError as exc:
            self.bad(seq, f"entry {seq}: the leaf is not a well-formed entry ({exc})")
            return None

    def _authorized(self, seq: int, type_: str, keyid: str, leaf: bytes) -> bool:
        """(4) for an entry that changes no key; its event is read only for the types whose rule
        reads it (a payload that does not decode is the payload checks' to report)."""
        payload = None
        event = None
        ptype = ""
        if type_ in EVENT_RULES or type_ == "attestation.posted.v1":
            entry = self._whole(seq, leaf)
            if entry is None:
                return False
            env = entry.envelope
            ptype = env.payloadType
            try:
                payload = binascii.a2b_base64(env.payload, strict_mode=True)
            except binascii.Error:
                payload = None
            if payload is not None and type_ in EVENT_RULES:
                event = _event(payload) if env.payloadType == EVENT_PAYLOAD_TYPE else None
        attester = None
        if isinstance(event, AttestationWithdrawn):
            attester = self.attesters.get(event.attestationId)
        refused = refusal(type_, keyid, self.keys, seq, event, attester=attester)
        if refused is not None:
            self.bad(seq, f"entry {seq}: {refused.reason}")
            return False
        if payload is not None and type_ == "attestation.posted.v1":
            self.attesters[payload_digest(payload, ptype, keyid)] = keyid
        return True

    def _key_entry(self, seq: int, entry: Entry, keyid: str) -> bool:
        """The genesis entry and key events: checked here, in order, because every later
        signature depends on them."""
        try:
            payload = binascii.a2b_base64(entry.envelope.payload, strict_mode=True)
        except binascii.Error:
            self.bad(seq, f"entry {seq}: the payload is not base64")
            return False
        problem = payload_problem(seq, entry.envelope.payloadType, entry.type, payload)
        if problem is not None:
            self.bad(seq, problem)
            return False
        event = _event(payload)
        refused = refusal(entry.type, keyid, self.keys, seq, event)
        if refused is not None:
            self.bad(seq, f"entry {seq}: {refused.reason}")
            return False
        if event is None:
            self.bad(seq, f"entry {seq}: the key event does not decode")
            return True
        self._apply_key_event(seq, event, keyid)
        return True

    def _apply_key_event(self, seq: int, event: AnyEvent, keyid: str) -> None:
        self.keys = fold_keys(self.keys, event, seq, keyid)
        for key_id in (getattr(event, "keyId", None), getattr(event, "newKeyId", None)):
            view = self.keys.get(key_id) if key_id else None
            if view is not None and key_id not in self.publics:
                try:
                    raw = base64.b64decode(view.publicKey, validate=True)
                    public = VerifyingKey.from_raw(raw)
                except (binascii.Error, KeyringError):
                    self.bad(seq, f"entry {seq}: the registered public key is malformed")
                    continue
                if public.key_id != key_id:
                    self.bad(seq, f"entry {seq}: the key id is not the SHA-256 of the public key")
                    continue
                self.publics[key_id] = public

    def _signatures(self, tasks: Sequence[Task]) -> None:
        """Hand a chunk of signature checks to the pool and go on reading: the checks (which
        release the GIL) overlap with the sequential work. At most a few chunks are in flight."""
        if not tasks:
            return
        half = (len(tasks) + 1) // 2
        for part in (tasks[:half], tasks[half:]):
            if self.processes:
                raw: list[Task] = [
                    (t[0], t[1].raw if isinstance(t[1], VerifyingKey) else t[1], *t[2:])
                    for t in part
                ]
                self.pending.append(self.pool.submit(check_entries, raw, self.columns))
            else:
                self.pending.append(self.pool.submit(check_entries, part, self.columns))
        while len(self.pending) > 4:
            self._collect(self.pending.pop(0))

    def _collect(self, future: _Checked) -> None:
        failed, hashes = future.result()
        for seq, reason in failed:
            self.bad(seq, reason)
        for lh in hashes:
            self.tree.grow(lh)

    def finish(self) -> None:
        """Wait for every signature check still in flight."""
        while self.pending:
            self._collect(self.pending.pop(0))

    def checkpoints(self, origin: str) -> None:
        self.tree.checkpoints(self.report, origin, self.keys, self.publics)


def verify_log(
    log: LogReader | Path,
    origin_hint: str | None = None,
    *,
    node_stride: int = 1,
    stored_columns: bool = True,
) -> VerifyReport:
    """Verify the log ``log`` reads, or the log database at a path (opened read-only), without
    changing it. ``origin_hint`` names the log when the store does not. ``node_stride``: the
    reader holds the perfect subtrees of every level that is a multiple of it (1: every level;
    8: the levels of C2SP hash tiles, for a log read through them), and only those are checked.
    ``stored_columns=False``: the rows' columns (and payload digest) are not stored apart from
    the leaf (a leaf fetched from a server), so there is nothing to compare them with.

    Raises:
        LogError: there is no database at the path.
    """
    if not isinstance(log, Path):
        return _verify(log, origin_hint, node_stride, stored_columns)
    if not log.exists():
        raise LogError(f"no log at {log}")
    try:
        opened = SqliteLog.open_readonly(log)
    except LogError as exc:  # "<path>: the database cannot be read: ..."
        return VerifyReport(findings=[Finding(0, exc.detail.removeprefix(f"{log}: "))])
    try:
        return _verify(opened, origin_hint)
    finally:
        opened.close()


def _verify(
    log: LogReader, origin_hint: str | None, node_stride: int = 1, columns: bool = True
) -> VerifyReport:
    report = VerifyReport()
    try:
        origin = log.origin or origin_hint or ""
        checker = _Checker(log, report, node_stride, columns)
        try:
            with paused_gc():  # its pauses would also stall the signature threads
                checker.run()
            checker.checkpoints(origin)
        finally:
            checker.pool.shutdown()
    except LogCorrupted as exc:  # a store that cannot read its own records (a damaged file)
        report.findings.append(Finding(0, exc.detail))
    # By position; at one position, in the order found: the entry's own checks (columns, leaf,
    # signature) come before what they break further on (the tree nodes above it).
    report.findings.sort(key=lambda f: f.position)
    return report
