"""``benchproof verify``: check the whole log from its bytes, read-only, through the log port.

For every position, in order: (1) the entry is there and says its own position; (2) its stored
columns agree with its leaf bytes, and the stored leaf hash with ``SHA-256(0x00 || leaf)``; (3)
the payload decodes as the type the entry names; (4) the envelope is signed by a key that was
valid at that position with a role allowed to write that type (the key lifecycle is replayed
from the log itself: the genesis entry registers the index key and is signed by it); (5) the
tree recomputed from the leaves matches every stored tree node and every checkpoint; (6) every
checkpoint note verifies with the log key, and the latest covers every entry. Signatures are
checked on two threads (Ed25519 in ``cryptography`` releases the GIL).

It reads only what ``events.port.LogReader`` gives (the stored rows, tree nodes and checkpoints
and the origin), so the same checks apply to any store, or to leaves fetched from a server.
"""

from __future__ import annotations

import base64
import binascii
from collections.abc import Mapping, Sequence
from concurrent.futures import Future, ThreadPoolExecutor
from pathlib import Path

import msgspec

from events.bulk import paused_gc
from events.checkpoints import parse_checkpoint_body
from events.entries import EVENT_PAYLOAD_TYPE, INTOTO_PAYLOAD_TYPE, Entry, payload_digest
from events.errors import EventError, LogCorrupted, LogError
from events.keyring import KeyView, fold_keys
from events.merkle import CompactRange, leaf_hash, node_hash
from events.port import LogReader, SignedCheckpoint
from events.stores.sqlite import SqliteLog
from events.types import EVENT_DECODER, KeyRegistered, KeyRevoked, KeyRotated
from keys import KeyringError, NoteVerifier, VerifyingKey, open_note, pae

__all__ = ["Finding", "VerifyReport", "verify_log"]

CHUNK = 2048

# Which roles may sign which entry types.
_INDEX = frozenset({"index"})
ALLOWED: dict[str, frozenset[str]] = {
    # Attesters sign their own statements: the index key signs only the index's own events.
    "attestation.posted.v1": frozenset({"community", "rerunner"}),
    "attestation.withdrawn.v1": frozenset({"community", "rerunner"}),
    "rerun.claimed.v1": frozenset({"rerunner"}),
    "rerun.claimed.v2": frozenset({"rerunner"}),
    "rerun.completed.v1": frozenset({"rerunner"}),
    "rerun.completed.v2": frozenset({"rerunner"}),
}


class Finding(msgspec.Struct, frozen=True, order=True):
    """One thing wrong with the log; ``position`` is the entry to blame, if one is."""

    position: int
    reason: str


class VerifyReport(msgspec.Struct):
    entries: int = 0
    root: str = ""
    checkpoint_size: int | None = None
    checkpoints: int = 0
    findings: list[Finding] = []

    @property
    def ok(self) -> bool:
        return not self.findings


class _TypeOnly(msgspec.Struct):
    type: str


_TYPE = msgspec.json.Decoder(_TypeOnly)
_ENTRY = msgspec.json.Decoder(Entry)
_NO_POSITION = 2**62


Task = tuple[int, VerifyingKey | None, str, str, str, str, str, str, bytes, bytes]
"""(position, key or None when the entry is already refused, signature b64, payload b64,
payload type, entry type, stored digest, signer, leaf, stored leaf hash)"""


def _check_entries(
    part: Sequence[Task], columns: bool = True
) -> tuple[list[tuple[int, str]], list[bytes]]:
    """The per-entry checks that need no state, on the pool's threads (the Ed25519 check
    releases the GIL) so they overlap with the sequential reading; and each leaf's hash, for
    the tree the caller grows in order."""
    failed = []
    hashes = []
    for seq, public, sig64, payload64, ptype, etype, digest, signer, leaf, stored in part:
        lh = leaf_hash(leaf)
        hashes.append(lh)
        if stored != lh:
            failed.append((seq, f"entry {seq}: the stored leaf hash does not match the leaf bytes"))
        if public is None:
            continue
        try:
            payload = binascii.a2b_base64(payload64, strict_mode=True)
            sig = binascii.a2b_base64(sig64, strict_mode=True)
        except binascii.Error:
            failed.append((seq, f"entry {seq}: the payload or signature is not base64"))
            continue
        if columns and payload_digest(payload, ptype, signer) != digest:
            failed.append(
                (seq, f"entry {seq}: the stored payload digest does not match the payload")
            )
        reason = _payload_problem(seq, ptype, etype, payload)
        if reason is not None:
            failed.append((seq, reason))
            continue
        try:
            public.verify(sig, pae(ptype, payload))
        except KeyringError:
            failed.append((seq, f"entry {seq}: the signature does not verify"))
    return failed, hashes


def _payload_problem(seq: int, ptype: str, etype: str, payload: bytes) -> str | None:
    """Why the payload cannot be what the entry says it is, if it cannot."""
    if ptype == EVENT_PAYLOAD_TYPE:
        try:
            tag = _TYPE.decode(payload).type
        except msgspec.DecodeError:
            return f"entry {seq}: the payload is not an event"
        return (
            None
            if tag == etype
            else f"entry {seq}: the entry says {etype} but the payload is {tag}"
        )
    if ptype == INTOTO_PAYLOAD_TYPE and etype in ALLOWED:
        return None
    return f"entry {seq}: payload type {ptype!r} cannot carry {etype}"


class _Checker:
    def __init__(
        self, log: LogReader, report: VerifyReport, node_stride: int = 1, columns: bool = True
    ) -> None:
        self.log = log
        self.stride_mask = node_stride - 1
        self.columns = columns
        self.report = report
        self.keys: Mapping[str, KeyView] = {}
        self.publics: dict[str, VerifyingKey] = {}
        self.size = 0
        self.edge: list[bytes] = []  # the compact range's nodes, largest subtree first
        self.nodes = {(level, index): h for level, index, h in log.nodes()}
        self.stored_checkpoints: list[SignedCheckpoint] = list(log.checkpoints())
        self.checkpoint_roots = {c.size: c.root for c in self.stored_checkpoints}
        self.roots: dict[int, bytes] = {}
        self.last_recorded = ""
        self.pool = ThreadPoolExecutor(2, thread_name_prefix="verify")
        self.pending: list[Future[tuple[list[tuple[int, str]], list[bytes]]]] = []

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
            task = self._entry(seq, leaf, (recorded_at, type_, subject, digest))
            if task is None:  # refused already: only its leaf hash is still to check
                task = (seq, None, "", "", "", "", "", "", b"", b"")
            chunk.append((*task[:8], leaf, stored_hash))
            if len(chunk) >= CHUNK:
                self._signatures(chunk)
                chunk = []
        self._signatures(chunk)
        self.finish()
        self.report.entries = expected

    def _entry(self, seq: int, leaf: bytes, columns: tuple[str, str, str, str]) -> Task | None:
        try:
            entry = _ENTRY.decode(leaf)
        except msgspec.DecodeError as exc:
            self.bad(seq, f"entry {seq}: the leaf is not a well-formed entry ({exc})")
            return None
        if entry.seq != seq:
            self.bad(
                seq, f"entry {seq}: the leaf says it is entry {entry.seq} (moved or reordered)"
            )
        recorded_at, type_, subject, digest = columns
        if self.columns and (entry.recordedAt, entry.type, entry.subject) != (
            recorded_at,
            type_,
            subject,
        ):
            self.bad(seq, f"entry {seq}: the stored columns disagree with the leaf")
        if entry.recordedAt < self.last_recorded:
            self.bad(seq, f"entry {seq}: recorded before the entry that precedes it")
        self.last_recorded = max(self.last_recorded, entry.recordedAt)
        env = entry.envelope
        if not env.signatures:
            self.bad(seq, f"entry {seq}: the envelope has no signature")
            return None
        keyid = env.signatures[0].keyid
        if seq == 0 or entry.type.startswith("key."):
            if not self._key_entry(seq, entry, keyid):
                return None
        else:
            key = self.keys.get(keyid)
            if key is None or not key.valid_at(seq):
                reason = f"signed by key {keyid[:16]}…, which is not valid at this position"
                self.bad(seq, f"entry {seq}: {reason}")
                return None
            if key.role not in ALLOWED.get(entry.type, _INDEX):
                self.bad(seq, f"entry {seq}: a {key.role} key may not write {entry.type}")
                return None
        public = self.publics.get(keyid)
        if public is None:
            return None
        sig = env.signatures[0].sig
        return (seq, public, sig, env.payload, env.payloadType, entry.type, digest, keyid, b"", b"")

    def _key_entry(self, seq: int, entry: Entry, keyid: str) -> bool:
        """The genesis entry and key events: checked here, in order, because every later
        signature depends on them."""
        try:
            payload = binascii.a2b_base64(entry.envelope.payload, strict_mode=True)
        except binascii.Error:
            self.bad(seq, f"entry {seq}: the payload is not base64")
            return False
        problem = _payload_problem(seq, entry.envelope.payloadType, entry.type, payload)
        if problem is not None:
            self.bad(seq, problem)
            return False
        key = self.keys.get(keyid)
        if seq == 0:
            if self._genesis(entry, payload) is None:
                return False
        elif self._self_registration(entry, payload, keyid):
            pass  # proof of possession: the new community key signs its own registration
        elif key is None or not key.valid_at(seq):
            reason = f"signed by key {keyid[:16]}…, which is not valid at this position"
            self.bad(seq, f"entry {seq}: {reason}")
            return False
        elif key.role not in ALLOWED.get(entry.type, _INDEX) and not self._own_key_event(
            entry, payload, keyid
        ):
            self.bad(seq, f"entry {seq}: a {key.role} key may not write {entry.type}")
            return False
        self._apply_key_event(seq, entry, payload)
        return True

    def _genesis(self, entry: Entry, payload: bytes) -> KeyView | None:
        try:
            event = EVENT_DECODER.decode(payload)
        except msgspec.DecodeError:
            event = None
        if not isinstance(event, KeyRegistered) or event.role != "index":
            self.bad(0, "entry 0: the genesis entry must register the index key")
            return None
        if event.keyId != entry.envelope.signatures[0].keyid:
            self.bad(0, "entry 0: the genesis entry must be signed by the key it registers")
            return None
        return KeyView(event.keyId, "index", event.name, event.publicKey, 0)

    def _self_registration(self, entry: Entry, payload: bytes, keyid: str) -> bool:
        """A community key registering itself (signed by the key it registers, new to the log)."""
        if entry.type != "key.registered.v1" or keyid in self.keys:
            return False
        event = EVENT_DECODER.decode(payload)
        return (
            isinstance(event, KeyRegistered) and event.role == "community" and event.keyId == keyid
        )

    def _own_key_event(self, entry: Entry, payload: bytes, keyid: str) -> bool:
        """A key revoking itself, or rotating itself to a successor."""
        if entry.type not in ("key.revoked.v1", "key.rotated.v1"):
            return False
        event = EVENT_DECODER.decode(payload)
        return isinstance(event, KeyRevoked | KeyRotated) and event.keyId == keyid

    def _apply_key_event(self, seq: int, entry: Entry, payload: bytes) -> None:
        if not entry.type.startswith("key."):
            if seq == 0:
                return
            return
        try:
            event = EVENT_DECODER.decode(payload)
        except msgspec.DecodeError:
            self.bad(seq, f"entry {seq}: the key event does not decode")
            return
        self.keys = fold_keys(self.keys, event, seq, entry.envelope.signatures[0].keyid)
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
            self.pending.append(self.pool.submit(_check_entries, part, self.columns))
        while len(self.pending) > 4:
            self._collect(self.pending.pop(0))

    def _collect(self, future: Future[tuple[list[tuple[int, str]], list[bytes]]]) -> None:
        failed, hashes = future.result()
        for seq, reason in failed:
            self.bad(seq, reason)
        for lh in hashes:
            self._grow(lh)

    def finish(self) -> None:
        """Wait for every signature check still in flight."""
        while self.pending:
            self._collect(self.pending.pop(0))

    # (5) the tree, grown leaf by leaf and compared with the stored nodes and checkpoints.
    def _grow(self, lh: bytes) -> None:
        """Append one leaf hash to the compact range (RFC 9162 §2.1.1), checking each perfect
        node it completes against the stored one. Written out here rather than through
        ``CompactRange.append``: this runs once per entry on the thread that holds the GIL."""
        seq = index = self.size
        edge, nodes = self.edge, self.nodes
        node, level = lh, 0
        while index >> level & 1:
            node = node_hash(edge.pop(), node)
            level += 1
            if level & self.stride_mask == 0 and nodes.get((level, index >> level)) != node:
                self.bad(
                    seq,
                    f"entry {seq}: stored tree node ({level}, {index >> level}) is wrong or missing",
                )
        edge.append(node)
        self.size = size = index + 1
        if size in self.checkpoint_roots:
            self.roots[size] = self.root()

    def root(self) -> bytes:
        return CompactRange(self.size, self.edge).root()

    # (6) checkpoints.
    def checkpoints(self, origin: str) -> None:
        report = self.report
        report.root = self.root().hex()
        log_keys = [k for k in self.keys.values() if k.role == "log" and k.name == origin]
        verifiers = [
            NoteVerifier.for_key(origin, self.publics[k.keyId])
            for k in log_keys
            if k.keyId in self.publics
        ]
        rows = self.stored_checkpoints
        report.checkpoints = len(rows)
        if not rows:
            self.bad(_NO_POSITION, "the log has no checkpoint")
            return
        if not verifiers:
            self.bad(_NO_POSITION, f"the log registers no log key named {origin!r}")
            return
        for size, note, stored_root, _ in rows:
            where = min(size, max(report.entries - 1, 0))
            try:
                text = open_note(note, verifiers).text
                body = parse_checkpoint_body(text)
            except (KeyringError, EventError) as exc:
                self.bad(where, f"checkpoint at size {size}: {exc}")
                continue
            if body.origin != origin or body.size != size:
                self.bad(
                    where,
                    f"checkpoint at size {size}: its body names {body.origin} size {body.size}",
                )
            elif size > report.entries:
                self.bad(
                    report.entries,
                    f"entry {report.entries} is missing: the checkpoint at size {size} covers it",
                )
            elif body.root != self.roots.get(size, self.root() if size == report.entries else b""):
                self.bad(
                    where,
                    f"checkpoint at size {size}: its root is not the root of the log's first {size} entries",
                )
            elif stored_root != body.root:
                self.bad(where, f"checkpoint at size {size}: the stored root is not the signed one")
        latest = rows[-1].size
        report.checkpoint_size = latest
        if latest < report.entries:
            self.bad(latest, f"entries from {latest} on are not covered by any checkpoint")


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
