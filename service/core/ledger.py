"""The ledger: a log of its own, with its signing keys: the log store, the keys and the
projections, wired together (``OpenedLog``, with what appends and signs).

Everything that writes to the log goes through ``Ledger.append``: events are encoded once,
signed by the index key (two threads), committed in one transaction with their tree nodes, the
projections and a signed checkpoint.

A data directory that holds ``mirror.json`` is a mirror of another log, opened as a ``Mirror``
(``service.core.mirror``), which has no keys and no appends; ``open_log`` opens either, and a
path that writes asks it for its ledger (``OpenedLog.writer``).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from datetime import datetime
from pathlib import Path
from typing import Protocol

import msgspec

from events.decoding import decoded_event
from events.entries import Pending
from events.port import Appended, Session
from events.stores import open_store
from events.stores.faults import StorageFault
from events.stores.sqlbase import SqlLog
from events.stores.sqlite_schema import WriterBusy
from events.types import EVENT_ENCODER, Event, event_tag
from keys import KeyFileError, NoteSigner, NoteVerifier, load_private_key
from projections.queries import keyring
from service.core.config import DataDir
from service.core.groupcommit import GroupCommit, Request
from service.core.logs import Clock, OpenedLog, utcnow
from service.core.mirror import Mirror, MirrorInfo, mirror_refusal, read_mirror
from service.core.signing import Signers, envelope_signer
from service.core.statechecks import StateCheck, bind
from service.errors import NotInitialised

__all__ = [
    "CHECK_NEUTRAL",
    "Check",
    "Clock",
    "Ledger",
    "RemoteWriter",
    "open_log",
    "pending_of",
    "utcnow",
]

Check = StateCheck | Callable[[Session], None]
"""What runs in the append's transaction before a request's entries: a ``StateCheck`` (a value
that can travel to a writer process), or, in process only, any function of the session."""


class RemoteWriter(Protocol):
    """The log's single writer in another process (``service.core.writer.WriterClient``)."""

    def submit(self, pending: Sequence[Pending], check: StateCheck | None) -> list[Appended]: ...

    async def submit_async(
        self, pending: Sequence[Pending], check: StateCheck | None
    ) -> list[Appended]: ...

    def close(self) -> None: ...


def pending_of(event: Event, subject: str) -> Pending:
    """An event on its way into the log, encoded once."""
    return Pending(
        type=event_tag(event), subject=subject, payload=EVENT_ENCODER.encode(event), decoded=event
    )


# Entry types that change nothing a request's check reads (checks read the keyring, whether an
# attestation was withdrawn or hidden, whether a report is open): the group commit holds the
# requests that bring only these and appends them together, just before the next request that
# brings anything else runs its check. Their own checks still run in order.
PRESIGN_MAX = 64
"""The most envelopes a request's caller signs while it waits for the group commit's turn; a
larger batch (an import) is signed by the store, in chunks, on the signing threads."""

CHECK_NEUTRAL = frozenset({"attestation.posted.v1", "report.filed.v1"})


def open_log(root: Path, *, clock: Clock = utcnow, store: str | None = None) -> OpenedLog:
    """Open the log of an initialised data directory, its log in ``store`` (a URL; default: the
    directory's, ``DataDir.store``): a ``Mirror`` if it holds ``mirror.json``, else a
    ``Ledger``.

    Raises:
        NotInitialised: there is no log there (run ``benchproof init``).
        KeyFileError: a key file is missing, malformed or readable by others.
        UsageError: a malformed mirror marker, or one naming another log.
    """
    data = _initialised(root, store)
    mirror = read_mirror(data.root)
    if mirror is not None:
        return Mirror(data, open_store(data.store), mirror, clock)
    return Ledger.of(data, clock)


def _travelling(check: Check | None) -> StateCheck | None:
    if check is None or isinstance(check, StateCheck):
        return check
    raise TypeError("only a StateCheck travels to the writer process, not a function")


def _initialised(root: Path, store: str | None) -> DataDir:
    data = DataDir(root, store)
    if not data.exists():
        raise NotInitialised(f"no log in {root} (run `benchproof init --data {root}`)")
    return data


class Ledger(OpenedLog):
    """The log of one data directory, open for reading and appending, with its keys."""

    def __init__(self, data: DataDir, store: SqlLog, signers: Signers, clock: Clock) -> None:
        super().__init__(data, store, clock)
        self.signers = signers
        self.group: GroupCommit[Pending, Session, Appended] = GroupCommit(
            # A busy writer or a failed disk is the group's fault: trying each request alone
            # would only meet it again.
            self._commit_group,
            whole=(WriterBusy, StorageFault),
        )
        # Set by the server's worker processes (``serve --workers N``): their appends go to the
        # writer process, which commits them with everyone's in log order.
        self.remote: RemoteWriter | None = None
        self._catch_up()
        if store.size > 0:
            self._check_keys()

    @property
    def mirror(self) -> MirrorInfo | None:
        return None

    @property
    def vkey(self) -> str:
        return self.signers.vkey

    @property
    def log_verifier(self) -> NoteVerifier:
        return self.signers.log_verifier

    @property
    def note_signer(self) -> NoteSigner | None:
        return self.signers.note_signer

    def writer(self, why: str | None = None) -> Ledger:
        return self

    def _check_keys(self) -> None:
        """The key files must hold the keys the log registered, still valid: the index key
        (role ``index``) and the log key (role ``log``, named as the origin).

        Raises:
            KeyFileError: a key file holds another key, or one the log has revoked.
        """
        registered = keyring(self.store.session)
        size = self.store.size
        for path, key, role in (
            (self.data.index_key, self.signers.index, "index"),
            (self.data.log_key, self.signers.log, "log"),
        ):
            view = registered.get(key.key_id)
            if view is None or view.role != role or not view.valid_at(size):
                self.close()
                raise KeyFileError(
                    f"{path} holds key {key.key_id[:16]}…, which is not this log's current "
                    f"{role} key: restore the key file the log registered"
                )

    @classmethod
    def open(cls, root: Path, *, clock: Clock = utcnow, store: str | None = None) -> Ledger:
        """Open an initialised data directory that is a log of its own, its log in ``store``
        (a URL; default: the directory's, ``DataDir.store``). ``open_log`` opens a mirror too.

        Raises:
            NotInitialised: there is no log there (run ``benchproof init``).
            KeyFileError: a key file is missing, malformed or readable by others.
            MirrorReadOnly: the directory is a mirror (it has no keys to write with).
            UsageError: a malformed mirror marker.
        """
        data = _initialised(root, store)
        mirror = read_mirror(data.root)
        if mirror is not None:
            raise mirror_refusal(mirror.origin)
        return cls.of(data, clock)

    @classmethod
    def of(cls, data: DataDir, clock: Clock) -> Ledger:
        """The ledger of ``data``, known to be initialised and not a mirror: its store and the
        keys in its key files."""
        opened = open_store(data.store)
        try:
            signers = Signers(
                load_private_key(data.index_key), load_private_key(data.log_key), opened.origin
            )
        except BaseException:
            opened.close()
            raise
        return cls(data, opened, signers, clock)

    def close(self) -> None:
        if self.remote is not None:
            self.remote.close()
        self.group.close()
        self.signers.close()
        self.store.close()

    def append(
        self,
        events: Sequence[tuple[Event, str]],
        *,
        progress: Callable[[int], None] | None = None,
        now: datetime | None = None,
    ) -> list[Appended]:
        """Append ``(event, subject)`` pairs as one batch (signed by the index key);
        ``progress`` hears of each chunk written. ``now`` (with ``progress`` only: a batch
        committed on its own) is the instant to record them at, instead of the clock's: the
        slices of one import share one."""
        pending = [pending_of(e, s) for e, s in events]
        return self.append_pending(pending, progress=progress, now=now)

    def append_pending(
        self,
        pending: Sequence[Pending],
        *,
        progress: Callable[[int], None] | None = None,
        check: Check | None = None,
        now: datetime | None = None,
    ) -> list[Appended]:
        """Append pendings (some may carry an actor's own envelope) as one batch, committed
        together with the batches other threads append meanwhile (group commit: one fsync for
        all of them). ``check`` runs inside that transaction just before the append, on the
        session the projections read (raise to refuse this batch alone). ``progress`` hears of
        each chunk written (such a batch is committed on its own, in this process). With a
        ``remote`` writer, the batch and its check go to it, and its answer or refusal comes
        back."""
        if progress is None and self.remote is not None:
            return self.remote.submit(pending, _travelling(check))
        if progress is not None:
            with self.store.transaction() as session:
                self._catch_up_if_needed()
                bound = self._bound(check)
                if bound is not None:
                    bound(session)
                return self._append(self._signed(pending), progress, now)
        return self.group.submit(self._prepared(pending), self._bound(check))

    async def append_pending_async(
        self,
        pending: Sequence[Pending],
        *,
        check: Check | None = None,
    ) -> list[Appended]:
        """``append_pending`` for a handler on an event loop: the loop serves other requests
        while the group commit's writer thread (or the remote writer) commits this batch with
        those queued meanwhile."""
        if self.remote is not None:
            return await self.remote.submit_async(pending, _travelling(check))
        return await self.group.submit_async(self._prepared(pending), self._bound(check))

    def _bound(self, check: Check | None) -> Callable[[Session], None] | None:
        """``check`` as the group commit runs it (a ``StateCheck`` bound to this ledger)."""
        return bind(self, check) if isinstance(check, StateCheck) else check

    def _signed(self, pending: Sequence[Pending]) -> list[Pending]:
        """Each pending with the key id that signs it: the actor's, from its own envelope, or
        the index key's."""
        index = self.signers.index.key_id
        return [
            msgspec.structs.replace(
                p, signer=envelope_signer(p.envelope) if p.envelope is not None else index
            )
            for p in pending
        ]

    def _prepared(self, pending: Sequence[Pending]) -> list[Pending]:
        """``_signed``, and whatever else of a group commit's request needs nothing of the
        log's state, done by the caller before the request waits for its turn: its event
        decoded for the projections, and a small batch's envelopes signed by the index key.
        The group commit's writer thread is then left with the work that reads or writes the
        log (state checks, leaves, tree nodes, rows, projections, the sync), and this runs
        while it syncs the group before (issue 27: batch N+1 prepared while batch N syncs)."""
        signed = self._signed(pending)
        unsigned = [i for i, p in enumerate(signed) if p.envelope is None]
        envelopes = (
            self.signers.sign_chunk([signed[i] for i in unsigned])
            if 0 < len(unsigned) <= PRESIGN_MAX
            else []
        )
        for i, envelope in zip(unsigned, envelopes, strict=False):
            signed[i] = msgspec.structs.replace(signed[i], envelope=envelope)
        return [
            p if p.decoded is not None else msgspec.structs.replace(p, decoded=decoded_event(p))
            for p in signed
        ]

    def _append(
        self,
        signed: Sequence[Pending],
        progress: Callable[[int], None] | None = None,
        now: datetime | None = None,
    ) -> list[Appended]:
        return self.store.append(
            signed,
            sign=self.signers.sign_chunks,
            sign_checkpoint=self.signers.sign_checkpoint,
            now=self.clock() if now is None else now,
            project=self.projections,
            progress=progress,
        )

    def _commit_group(self, batch: list[Request[Pending, Session, Appended]]) -> None:
        """Commit the requests of one group in one transaction (``GroupCommit``), in order: each
        request's check runs after the requests before it were appended and projected, so it
        judges its entry at the position the entry takes and sees what the group changed (a
        revocation, a name taken); one fsync still serves them all. Requests that bring only
        ``CHECK_NEUTRAL`` entries are appended together (their checks cannot tell the
        difference: nothing they append changes what a check reads)."""
        with self.store.transaction() as session:
            self._catch_up_if_needed()
            held: list[Request[Pending, Session, Appended]] = []
            for request in batch:
                neutral = all(p.type in CHECK_NEUTRAL for p in request.items)
                if not neutral:
                    self._append_held(held)
                if request.check is not None:
                    try:
                        request.check(session)
                    except Exception as exc:  # noqa: BLE001 - this request's refusal, kept for it
                        request.error = exc
                        continue
                if neutral:
                    held.append(request)
                else:
                    request.result = self._append(request.items) if request.items else []
            self._append_held(held)

    def _append_held(self, held: list[Request[Pending, Session, Appended]]) -> None:
        """Append the items of the ``held`` requests in one batch (one statement per table, not
        one per request), and hand each request its own answers."""
        items = [p for request in held for p in request.items]
        appended = self._append(items) if items else []
        start = 0
        for request in held:
            request.result = appended[start : start + len(request.items)]
            start += len(request.items)
        held.clear()
